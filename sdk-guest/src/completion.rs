//! Completion: the handlers that suggest values for a prompt argument or a
//! resource-template variable, and the shaping of their answers.

use crate::Arguments;
use crate::bindings::exports::wasm_mcp::plugin::completion::Completions;

/// The most values one answer carries (MCP's limit).
const MAX_VALUES: usize = 100;

type CompleteFn = Box<dyn Fn(&str, &Arguments) -> Vec<String>>;

/// The completion handlers of one prompt or template, by argument name.
#[derive(Default)]
pub(crate) struct Completers(Vec<(String, CompleteFn)>);

impl Completers {
    pub(crate) fn add(&mut self, argument: String, handler: CompleteFn) {
        self.0.push((argument, handler));
    }

    /// The suggestions for `argument` given the `value` typed so far; none
    /// when the argument has no handler.
    pub(crate) fn complete(&self, argument: &str, value: &str, context: &Arguments) -> Completions {
        let values = self
            .0
            .iter()
            .find(|(name, _)| name == argument)
            .map(|(_, handler)| handler(value, context))
            .unwrap_or_default();
        let total = values.len();
        Completions {
            values: values.into_iter().take(MAX_VALUES).collect(),
            total: Some(u32::try_from(total).unwrap_or(u32::MAX)),
            has_more: total > MAX_VALUES,
        }
    }
}

/// The `candidates` that start with `prefix`, ignoring ASCII case: the usual
/// body of a completion handler.
pub fn starting_with<'a>(candidates: impl IntoIterator<Item = &'a str>, prefix: &str) -> Vec<String> {
    let prefix = prefix.to_ascii_lowercase();
    candidates
        .into_iter()
        .filter(|c| c.to_ascii_lowercase().starts_with(&prefix))
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_values_and_reports_the_total() {
        let mut completers = Completers::default();
        completers.add("n".into(), Box::new(|_, _| (0..150).map(|i| i.to_string()).collect()));
        let answer = completers.complete("n", "", &Arguments::default());
        assert_eq!(answer.values.len(), 100);
        assert_eq!(answer.total, Some(150));
        assert!(answer.has_more);
        let none = completers.complete("other", "", &Arguments::default());
        assert!(none.values.is_empty() && !none.has_more);
    }

    #[test]
    fn filters_by_prefix() {
        assert_eq!(starting_with(["Alpha", "beta", "alps"], "al"), ["Alpha", "alps"]);
    }
}
