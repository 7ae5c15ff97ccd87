//! Matching a URI against an RFC 6570 template of simple `{var}`
//! expressions, to route a read to the template that serves it.

use crate::Arguments;

enum Part {
    Literal(String),
    Variable(String),
}

/// A parsed template; one with other expressions (`{+var}`, `{?q}`, ...)
/// is listed as usual but never matches.
pub(crate) struct UriTemplate {
    parts: Option<Vec<Part>>,
}

impl UriTemplate {
    pub(crate) fn parse(template: &str) -> Self {
        let mut parts = Vec::new();
        let mut rest = template;
        while let Some(start) = rest.find('{') {
            let Some(len) = rest[start..].find('}') else {
                return UriTemplate { parts: None };
            };
            let name = &rest[start + 1..start + len];
            let simple = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
            if !simple {
                return UriTemplate { parts: None };
            }
            if start > 0 {
                parts.push(Part::Literal(rest[..start].to_string()));
            }
            parts.push(Part::Variable(name.to_string()));
            rest = &rest[start + len + 1..];
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_string()));
        }
        UriTemplate { parts: Some(parts) }
    }

    /// The variables of `uri` if it matches. A value is a non-empty run of
    /// characters without `/`, ending where the next literal first occurs;
    /// it is returned as it appears in the URI (not percent-decoded).
    pub(crate) fn matches(&self, uri: &str) -> Option<Arguments> {
        let parts = self.parts.as_ref()?;
        let mut vars = Vec::new();
        let mut rest = uri;
        for (i, part) in parts.iter().enumerate() {
            match part {
                Part::Literal(literal) => rest = rest.strip_prefix(literal.as_str())?,
                Part::Variable(name) => {
                    let end = match parts.get(i + 1) {
                        Some(Part::Literal(next)) => rest.find(next.as_str())?,
                        _ => rest.len(),
                    };
                    let value = &rest[..end];
                    if value.is_empty() || value.contains('/') {
                        return None;
                    }
                    vars.push((name.clone(), value.to_string()));
                    rest = &rest[end..];
                }
            }
        }
        rest.is_empty().then(|| vars.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(template: &str, uri: &str) -> Option<Vec<(String, String)>> {
        let args = UriTemplate::parse(template).matches(uri)?;
        Some(args.iter().map(|(k, v)| (k.into(), v.into())).collect())
    }

    #[test]
    fn extracts_variables() {
        assert_eq!(
            vars("test://template/{id}/data", "test://template/123/data"),
            Some(vec![("id".into(), "123".into())])
        );
        assert_eq!(
            vars("notes://note/{slug}", "notes://note/hello-world"),
            Some(vec![("slug".into(), "hello-world".into())])
        );
        assert_eq!(
            vars("x://{a}/{b}.md", "x://1/2.md"),
            Some(vec![("a".into(), "1".into()), ("b".into(), "2".into())])
        );
    }

    #[test]
    fn rejects_what_does_not_fit() {
        assert_eq!(vars("test://template/{id}/data", "test://template//data"), None);
        assert_eq!(vars("test://template/{id}/data", "test://template/1/2/data"), None);
        assert_eq!(vars("test://template/{id}/data", "test://template/1/data/x"), None);
        assert_eq!(vars("notes://note/{slug}", "notes://other/x"), None);
        assert_eq!(vars("files://{+path}", "files://a"), None);
    }
}
