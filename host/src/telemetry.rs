//! Traces for the people who run the host. With an OTLP endpoint configured
//! (`--otlp-endpoint`, or the standard `OTEL_EXPORTER_OTLP_ENDPOINT` and
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), every request is a span after the
//! OpenTelemetry semantic conventions for MCP (`{mcp.method.name} {target}`),
//! parented on the `traceparent` the client put in `_meta`, with a child span
//! for each plugin call and each round trip to the client; they leave over
//! OTLP/HTTP (protobuf) in batches, off the request path.
//!
//! Without an endpoint nothing is built and [`enabled`] is false: no span is
//! made and nothing runs. Arguments and results are never recorded.
//!
//! Sampling is decided before a request's span is built: the
//! standard `OTEL_TRACES_SAMPLER` (and `_ARG`) are read here, a request
//! under a client's `traceparent` follows its sampled flag when the sampler
//! is parent-based, and any other is kept with the configured ratio. A
//! request left out makes no span at all, and neither do its plugin calls,
//! round trips and task, so a ratio of 0.01 costs close to nothing. The
//! exporter's own sampler then keeps every span it is given.

use std::collections::HashMap;
use std::sync::OnceLock;

use anyhow::{Context, Result};
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{SpanExporter, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use tracing::Span;
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::registry::LookupSpan;

/// The log filter's directive that keeps the exporter's spans out of the
/// log (they are made under this module's target, and carry nothing a log
/// line needs).
pub const NOT_LOGGED: &str = "wasm_mcp::telemetry=off";

/// Which requests are traced; set once, when an exporter is built.
static SAMPLING: OnceLock<Sampling> = OnceLock::new();

/// Which requests get a span: those under a client's trace as its sampled
/// flag says (when `parent_based`), the others with probability `ratio`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Sampling {
    parent_based: bool,
    ratio: f64,
}

impl Sampling {
    /// The sampler `OTEL_TRACES_SAMPLER` names with `OTEL_TRACES_SAMPLER_ARG`
    /// (the specification's values; the default is `parentbased_always_on`).
    fn from_env(sampler: Option<&str>, arg: Option<&str>) -> Result<Self> {
        let ratio = || -> Result<f64> {
            match arg {
                None => Ok(1.0),
                Some(arg) => arg
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|r| (0.0..=1.0).contains(r))
                    .with_context(|| {
                        format!("OTEL_TRACES_SAMPLER_ARG is {arg:?}: give a ratio from 0 to 1, such as 0.01")
                    }),
            }
        };
        let (parent_based, ratio) = match sampler.map(str::trim).unwrap_or("parentbased_always_on") {
            "always_on" => (false, 1.0),
            "always_off" => (false, 0.0),
            "traceidratio" => (false, ratio()?),
            "" | "parentbased_always_on" => (true, 1.0),
            "parentbased_always_off" => (true, 0.0),
            "parentbased_traceidratio" => (true, ratio()?),
            other => anyhow::bail!(
                "OTEL_TRACES_SAMPLER is {other:?}, which this server does not know: use always_on, always_off, \
                 traceidratio, parentbased_always_on, parentbased_always_off or parentbased_traceidratio"
            ),
        };
        Ok(Self { parent_based, ratio })
    }

    /// Whether a request under `traceparent` (if the client sent one) is traced.
    fn keeps(&self, traceparent: Option<&str>) -> bool {
        if self.parent_based
            && let Some(flags) = traceparent.and_then(sampled_flag)
        {
            return flags;
        }
        self.ratio >= 1.0 || (self.ratio > 0.0 && fastrand::f64() < self.ratio)
    }
}

/// The sampled flag of a W3C `traceparent` (`00-TRACEID-SPANID-FLAGS`); none
/// when it is not one, and the request is then a root.
fn sampled_flag(traceparent: &str) -> Option<bool> {
    let flags = traceparent.rsplit('-').next().filter(|f| f.len() == 2)?;
    u8::from_str_radix(flags, 16).ok().map(|f| f & 1 == 1)
}

/// Whether spans are exported (an endpoint is configured).
pub fn enabled() -> bool {
    SAMPLING.get().is_some()
}

/// Whether a request under the client's `traceparent` gets a span: false
/// when no endpoint is configured or the sampler leaves it out.
fn sampled(traceparent: Option<&str>) -> bool {
    SAMPLING.get().is_some_and(|sampling| sampling.keeps(traceparent))
}

/// The exporter while it runs; dropping it sends what is still buffered.
pub struct Traces(SdkTracerProvider);

impl Drop for Traces {
    fn drop(&mut self) {
        if let Err(e) = self.0.shutdown() {
            eprintln!("wasm-mcp: the last traces could not be sent: {e}");
        }
    }
}

/// Where traces go: `--otlp-endpoint` (a collector's OTLP/HTTP base URL,
/// such as `http://127.0.0.1:4318`; `/v1/traces` is added), else the
/// standard variables; none: no traces.
fn endpoint(flag: Option<&str>) -> Option<Option<String>> {
    if let Some(base) = flag {
        let base = base.trim_end_matches('/');
        return Some(Some(if base.ends_with("/v1/traces") {
            base.to_owned()
        } else {
            format!("{base}/v1/traces")
        }));
    }
    let set = |name| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    // The exporter reads the variables itself.
    (set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") || set("OTEL_EXPORTER_OTLP_ENDPOINT")).then_some(None)
}

/// The layer that exports the host's spans, and the exporter to keep while
/// serving; none when no endpoint is configured.
pub fn exporter<S>(flag: Option<&str>) -> Result<Option<(impl Layer<S>, Traces)>>
where
    S: tracing::Subscriber + for<'span> LookupSpan<'span>,
{
    let Some(url) = endpoint(flag) else { return Ok(None) };
    let sampling = Sampling::from_env(
        std::env::var("OTEL_TRACES_SAMPLER").ok().as_deref(),
        std::env::var("OTEL_TRACES_SAMPLER_ARG").ok().as_deref(),
    )?;
    let builder = SpanExporter::builder().with_http();
    let builder = match &url {
        Some(url) => builder.with_endpoint(url.clone()),
        None => builder,
    };
    let exporter = builder.build().context("cannot set up the OTLP trace exporter")?;
    let mut resource = Resource::builder();
    if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name("wasm-mcp");
    }
    // The decision is taken before a span is built (`sampled`): the
    // exporter keeps what it is given.
    let provider = SdkTracerProvider::builder()
        .with_sampler(Sampler::AlwaysOn)
        .with_batch_exporter(exporter)
        .with_resource(resource.build())
        .build();
    // Only what the spans say themselves: no source location, thread, target
    // or busy/idle time (attributes and clock reads on every span and every
    // poll), and no OpenTelemetry context made current on entry (nothing
    // here reads it: a child finds its parent through `tracing`).
    let layer = tracing_opentelemetry::layer()
        .with_location(false)
        .with_threads(false)
        .with_target(false)
        .with_tracked_inactivity(false)
        .with_context_activation(false)
        .with_tracer(provider.tracer("wasm-mcp"))
        .with_filter(Targets::new().with_target("wasm_mcp::telemetry", tracing::Level::INFO));
    let _ = SAMPLING.set(sampling);
    Ok(Some((layer, Traces(provider))))
}

/// What names a request's span.
pub struct RequestSpan<'a> {
    pub method: &'static str,
    /// The tool, prompt or resource it is about, as the client named it.
    pub target: Option<&'a str>,
    pub id: &'a str,
    pub version: &'static str,
    /// The client's `traceparent` and `tracestate` from `_meta`.
    pub traceparent: Option<&'a str>,
    pub tracestate: Option<&'a str>,
}

/// The span of a request: none unless traces are exported and the sampler
/// keeps it, decided first, before anything of the span is built.
pub fn request(request: RequestSpan<'_>) -> Option<Span> {
    if !sampled(request.traceparent) {
        return None;
    }
    let name = match request.target {
        Some(target) => format!("{} {target}", request.method),
        None => request.method.to_owned(),
    };
    let (tool, prompt, uri) = match request.method {
        "tools/call" => (request.target, None, None),
        "prompts/get" => (None, request.target, None),
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => (None, None, request.target),
        _ => (None, None, None),
    };
    let span = tracing::info_span!(
        target: "wasm_mcp::telemetry",
        "request",
        otel.name = name,
        otel.kind = "server",
        otel.status_code = Empty,
        mcp.method.name = request.method,
        mcp.protocol.version = request.version,
        gen_ai.tool.name = tool,
        gen_ai.prompt.name = prompt,
        mcp.resource.uri = uri,
        gen_ai.operation.name = tool.map(|_| "execute_tool"),
        jsonrpc.request.id = request.id,
        network.transport = crate::metrics::METRICS.transport(),
        error.type = Empty,
    );
    if let Some(traceparent) = request.traceparent {
        let mut carrier = HashMap::from([("traceparent".to_owned(), traceparent.to_owned())]);
        if let Some(tracestate) = request.tracestate {
            carrier.insert("tracestate".to_owned(), tracestate.to_owned());
        }
        let _ = span.set_parent(TraceContextPropagator::new().extract(&carrier));
    }
    Some(span)
}

/// Whether the code running now is inside a traced request: a child span is
/// made only there, never as a root of its own.
fn traced_here() -> bool {
    enabled() && !Span::current().is_none()
}

/// Marks `span` as ended with `error` (a JSON-RPC code, or `tool_error`).
pub fn failed(span: &Span, error: &str) {
    span.record("error.type", error);
    span.record("otel.status_code", "ERROR");
}

/// The span of one call into `plugin` (the version `sha256`), a child of
/// the current one; [`plugin_call_ended`] fills in what it used.
pub fn plugin_call(plugin: &str, sha256: &str, what: &'static str) -> Span {
    if !traced_here() {
        return Span::none();
    }
    tracing::info_span!(
        target: "wasm_mcp::telemetry",
        "plugin call",
        otel.name = format!("plugin {plugin} {what}"),
        otel.status_code = Empty,
        wasm_mcp.plugin = plugin,
        wasm_mcp.plugin.sha256 = sha256,
        wasm_mcp.call = what,
        wasm_mcp.fuel_used = Empty,
        wasm_mcp.peak_memory_bytes = Empty,
        wasm_mcp.wall_ms = Empty,
        wasm_mcp.outcome = Empty,
        wasm_mcp.limit = Empty,
    )
}

/// What the call of the current plugin-call span used, and how it ended
/// (`limit`: the limit that stopped it).
pub fn plugin_call_ended(fuel: u64, peak_memory: usize, wall_ms: f64, outcome: &str, limit: Option<&str>) {
    if !enabled() {
        return;
    }
    let span = Span::current();
    span.record("wasm_mcp.fuel_used", fuel);
    span.record("wasm_mcp.peak_memory_bytes", peak_memory as u64);
    span.record("wasm_mcp.wall_ms", wall_ms);
    span.record("wasm_mcp.outcome", outcome);
    if let Some(limit) = limit {
        span.record("wasm_mcp.limit", limit);
    }
    if outcome != "ok" {
        span.record("otel.status_code", "ERROR");
    }
}

/// The span of a task's lifetime, from its creation to its end, a child of
/// the request that created it; [`task_ended`] says how it ended.
pub fn task(id: &str) -> Span {
    if !traced_here() {
        return Span::none();
    }
    tracing::info_span!(
        target: "wasm_mcp::telemetry",
        "task",
        otel.name = "task",
        wasm_mcp.task.id = id,
        wasm_mcp.task.status = Empty,
    )
}

/// The task of the current task span ended with `status`.
pub fn task_ended(status: &str) {
    if enabled() {
        Span::current().record("wasm_mcp.task.status", status);
    }
}

/// The span of a request the server sends the client (sampling,
/// elicitation, roots, ping), a child of the current one.
pub fn client_round_trip(method: &str) -> Span {
    if !traced_here() {
        return Span::none();
    }
    tracing::info_span!(
        target: "wasm_mcp::telemetry",
        "client request",
        otel.name = format!("{method} (to the client)"),
        otel.kind = "client",
        mcp.method.name = method,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_standard_samplers_are_read() {
        let read = |s, a| Sampling::from_env(s, a).unwrap();
        assert_eq!(
            read(None, None),
            Sampling {
                parent_based: true,
                ratio: 1.0
            }
        );
        assert_eq!(
            read(Some("traceidratio"), Some("0.01")),
            Sampling {
                parent_based: false,
                ratio: 0.01
            }
        );
        assert_eq!(
            read(Some("parentbased_traceidratio"), Some("0.5")),
            Sampling {
                parent_based: true,
                ratio: 0.5
            }
        );
        assert_eq!(
            read(Some("always_off"), None),
            Sampling {
                parent_based: false,
                ratio: 0.0
            }
        );
        let error = Sampling::from_env(Some("traceidratio"), Some("2"))
            .unwrap_err()
            .to_string();
        assert!(error.contains("from 0 to 1"), "{error}");
        let error = Sampling::from_env(Some("sometimes"), None).unwrap_err().to_string();
        assert!(error.contains("does not know"), "{error}");
    }

    #[test]
    fn a_parent_based_sampler_follows_the_clients_flag() {
        let parent_based_never = Sampling {
            parent_based: true,
            ratio: 0.0,
        };
        let sampled = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let not_sampled = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";
        assert!(parent_based_never.keeps(Some(sampled)));
        assert!(!parent_based_never.keeps(Some(not_sampled)));
        assert!(!parent_based_never.keeps(None));
        let ratio_only = Sampling {
            parent_based: false,
            ratio: 0.0,
        };
        assert!(!ratio_only.keeps(Some(sampled)));
        let always = Sampling {
            parent_based: true,
            ratio: 1.0,
        };
        assert!(always.keeps(None));
        assert!(always.keeps(Some("garbage")));
    }

    #[test]
    fn a_ratio_keeps_about_that_share() {
        let tenth = Sampling {
            parent_based: false,
            ratio: 0.1,
        };
        let kept = (0..100_000).filter(|_| tenth.keeps(None)).count();
        assert!((8_000..12_000).contains(&kept), "kept {kept} of 100 000 at 0.1");
    }
}
