//! The metric and the span of one request: what was asked (of which tool),
//! how long the answer took and how it ended, recorded as
//! `mcp.server.operation.duration` (see [`crate::metrics`]) and, when traces
//! are exported, on the request's span (see [`crate::telemetry`]).

use std::time::Instant;

use super::Answer;
use crate::metrics::{METRICS, Operation};
use crate::protocol::Target;
use crate::protocol::envelope::TraceContext;
use crate::protocol::{Method, RequestId};
use crate::telemetry::{self, RequestSpan, Traced};

/// A request being served.
pub struct Served {
    method: &'static str,
    /// The tool a `tools/call` names, as the client named it; a label only
    /// once the catalog is seen to have it (never a name only the client made up).
    tool: Option<String>,
    /// The tool, prompt or resource it names, for its span.
    target: Option<(Target, String)>,
    started: Instant,
    /// The request's span, when traces are exported.
    span: Option<Traced>,
}

impl Served {
    /// A request of `method`, naming `target` (see [`Method::target`]),
    /// refused before it was admitted: no span.
    pub fn new(method: &Method, target: Option<&str>) -> Self {
        let kind = method.target();
        Served {
            method: method.label(),
            tool: target.filter(|_| kind == Some(Target::Tool)).map(str::to_owned),
            target: kind
                .filter(|kind| matches!(kind, Target::Tool | Target::Prompt | Target::Resource))
                .zip(target)
                .map(|(kind, target)| (kind, target.to_owned())),
            started: Instant::now(),
            span: None,
        }
    }

    /// A request `id` of `method` admitted in protocol `version`: as
    /// [`Served::new`], with its span open (when traces are exported) under
    /// the client's `trace` context.
    pub fn start(
        method: &Method,
        target: Option<&str>,
        id: &RequestId,
        version: &'static str,
        trace: Option<&TraceContext>,
    ) -> Self {
        let mut served = Served::new(method, target);
        if telemetry::enabled() {
            let id = id.to_string();
            served.span = telemetry::request(RequestSpan {
                method: served.method,
                target: served.target.as_ref().map(|(kind, target)| (*kind, target.as_str())),
                id: &id,
                version,
                traceparent: trace.map(|t| t.traceparent.as_str()),
                tracestate: trace.and_then(|t| t.tracestate.as_deref()),
            });
        }
        served
    }

    /// The request's span, if it has one.
    pub fn span(&self) -> Option<&Traced> {
        self.span.as_ref()
    }

    /// Records how it ended, in protocol `version` (see
    /// [`Answer::error_label`]). The tool is labelled if `is_served` says
    /// the catalog served now has it: a call that arrived while the plugins
    /// were loading is labelled by its tool too.
    pub fn record(&self, version: &'static str, answer: &Answer, is_served: impl FnOnce(&str) -> bool) {
        let error = answer.error_label();
        if let (Some(span), Some(error)) = (&self.span, &error) {
            telemetry::failed(span, error);
        }
        let operation = Operation {
            method: self.method,
            tool: self.tool.as_deref().filter(|name| is_served(name)),
            version,
        };
        METRICS.operation(operation, error, self.started.elapsed());
    }
}
