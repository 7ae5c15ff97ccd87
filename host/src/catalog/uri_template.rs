//! Matching a URI against an RFC 6570 template, to route resources/read.

use regex::Regex;

/// A compiled template: literal parts must match exactly, expressions match
/// what their operator allows (`{var}` one path segment, `{+var}` and `{#var}`
/// anything, `{/var}`, `{.var}`, `{;var}`, `{?var}` and `{&var}` their prefixed forms).
pub struct UriTemplate(Regex);

impl UriTemplate {
    pub fn parse(template: &str) -> Result<Self, String> {
        let mut pattern = String::from("^");
        let mut rest = template;
        while let Some(open) = rest.find('{') {
            pattern.push_str(&regex::escape(&rest[..open]));
            let close = rest[open..]
                .find('}')
                .ok_or_else(|| format!("unclosed '{{' in URI template {template}"))?
                + open;
            let expression = &rest[open + 1..close];
            pattern.push_str(match expression.chars().next() {
                Some('+') | Some('#') => ".*",
                Some('/') => "(?:/[^/?#]*)*",
                Some('.') => "(?:\\.[^/?#.]*)*",
                Some(';') => "(?:;[^/?#]*)*",
                Some('?') => "(?:\\?[^#]*)?",
                Some('&') => "(?:&[^#]*)?",
                Some(_) => "[^/?#]+",
                None => return Err(format!("empty expression in URI template {template}")),
            });
            rest = &rest[close + 1..];
        }
        pattern.push_str(&regex::escape(rest));
        pattern.push('$');
        Regex::new(&pattern).map(UriTemplate).map_err(|e| e.to_string())
    }

    pub fn matches(&self, uri: &str) -> bool {
        self.0.is_match(uri)
    }
}

#[cfg(test)]
mod tests {
    use super::UriTemplate;

    #[test]
    fn simple_variables_match_one_segment() {
        let t = UriTemplate::parse("test://template/{id}/data").unwrap();
        assert!(t.matches("test://template/123/data"));
        assert!(!t.matches("test://template/1/2/data"));
        assert!(!t.matches("test://template//data"));
        assert!(!t.matches("test://other/123/data"));
    }

    #[test]
    fn operators_widen_what_matches() {
        assert!(
            UriTemplate::parse("file:///{+path}")
                .unwrap()
                .matches("file:///a/b/c.txt")
        );
        assert!(
            UriTemplate::parse("notes://search{?q,limit}")
                .unwrap()
                .matches("notes://search?q=x&limit=3")
        );
        assert!(
            UriTemplate::parse("notes://search{?q,limit}")
                .unwrap()
                .matches("notes://search")
        );
    }

    #[test]
    fn literal_parts_are_not_patterns() {
        let t = UriTemplate::parse("a.b://{x}").unwrap();
        assert!(!t.matches("aXb://y"));
        assert!(UriTemplate::parse("bad://{x").is_err());
    }
}
