//! Traces for the people who run the host. With an OTLP endpoint configured
//! (`--otlp-endpoint`, or the standard `OTEL_EXPORTER_OTLP_ENDPOINT` and
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), every request is a span after the
//! OpenTelemetry semantic conventions for MCP (`{mcp.method.name} {target}`),
//! parented on the `traceparent` the client put in `_meta`, with a child span
//! for each plugin call and each round trip to the client; they leave over
//! OTLP/HTTP (protobuf) in batches, off the request path.
//!
//! The spans are made with the OpenTelemetry API itself, not through
//! `tracing`: a span is a [`Traced`] context that the work it covers runs in
//! ([`within`]), and a child is made from the context current there. Nothing
//! else is built per span (no subscriber registry, no field visitor), and the
//! log never sees them.
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

use std::borrow::Cow;
use std::future::Future;
use std::sync::OnceLock;

use anyhow::{Context as _, Result};
use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer, TracerProvider as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::{SpanExporter, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{Sampler, SdkTracer, SdkTracerProvider};

use crate::protocol::Target;

/// The tracer and which requests it traces; set once, when an exporter is built.
static TRACING: OnceLock<Tracing> = OnceLock::new();

struct Tracing {
    sampling: Sampling,
    tracer: SdkTracer,
}

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
    TRACING.get().is_some()
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

/// Starts exporting the host's spans, and returns the exporter to keep
/// while serving; none when no endpoint is configured.
///
/// # Errors
///
/// When the sampler variables say something this server does not know, or
/// the exporter cannot be set up.
pub fn exporter(flag: Option<&str>) -> Result<Option<Traces>> {
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
    // The decision is taken before a span is built (`Sampling::keeps`):
    // the exporter keeps what it is given.
    let provider = SdkTracerProvider::builder()
        .with_sampler(Sampler::AlwaysOn)
        .with_batch_exporter(exporter)
        .with_resource(resource.build())
        .build();
    let tracer = provider.tracer("wasm-mcp");
    let _ = TRACING.set(Tracing { sampling, tracer });
    Ok(Some(Traces(provider)))
}

/// A span being recorded, as the context the work it covers runs in (see
/// [`within`]); it ends when the last clone of it is dropped.
#[derive(Clone)]
pub struct Traced(Context);

/// Runs `work` inside `traced` (the spans made in it are its children), or
/// as it is when it is not traced.
pub async fn within<F: Future>(traced: Option<Traced>, work: F) -> F::Output {
    // Here only: its `with_context` is on every type, as anyhow's is on results.
    use opentelemetry::trace::FutureExt;
    match traced {
        Some(Traced(context)) => work.with_context(context).await,
        None => work.await,
    }
}

/// What names a request's span.
pub struct RequestSpan<'a> {
    pub method: &'static str,
    /// The tool, prompt or resource it is about, as the client named it.
    pub target: Option<(Target, &'a str)>,
    pub id: &'a str,
    pub version: &'static str,
    /// The client's `traceparent` and `tracestate` from `_meta`.
    pub traceparent: Option<&'a str>,
    pub tracestate: Option<&'a str>,
}

/// The client's trace context, as the W3C propagator reads it.
struct ClientTrace<'a> {
    traceparent: &'a str,
    tracestate: Option<&'a str>,
}

impl Extractor for ClientTrace<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            "traceparent" => Some(self.traceparent),
            "tracestate" => self.tracestate,
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        vec!["traceparent", "tracestate"]
    }
}

/// The span of a request: none unless traces are exported and the sampler
/// keeps it, decided first, before anything of the span is built.
pub fn request(request: RequestSpan<'_>) -> Option<Traced> {
    let tracing = TRACING.get()?;
    if !tracing.sampling.keeps(request.traceparent) {
        return None;
    }
    let name = match request.target {
        Some((_, target)) => format!("{} {target}", request.method),
        None => request.method.to_owned(),
    };
    let mut attributes = Vec::with_capacity(7);
    attributes.push(KeyValue::new("mcp.method.name", request.method));
    attributes.push(KeyValue::new("mcp.protocol.version", request.version));
    if let Some((kind, target)) = request.target {
        match kind {
            Target::Tool => {
                attributes.push(KeyValue::new("gen_ai.tool.name", target.to_owned()));
                attributes.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
            }
            Target::Prompt => attributes.push(KeyValue::new("gen_ai.prompt.name", target.to_owned())),
            Target::Resource => attributes.push(KeyValue::new("mcp.resource.uri", target.to_owned())),
            Target::Task => {}
        }
    }
    attributes.push(KeyValue::new("jsonrpc.request.id", request.id.to_owned()));
    attributes.push(KeyValue::new("network.transport", crate::metrics::METRICS.transport()));
    let parent = match request.traceparent {
        Some(traceparent) => TraceContextPropagator::new().extract_with_context(
            &Context::new(),
            &ClientTrace {
                traceparent,
                tracestate: request.tracestate,
            },
        ),
        None => Context::new(),
    };
    let span = tracing
        .tracer
        .span_builder(name)
        .with_kind(SpanKind::Server)
        .with_attributes(attributes)
        .start_with_context(&tracing.tracer, &parent);
    Some(Traced(parent.with_span(span)))
}

/// A child of the span current here, named `name`: none unless the code
/// runs inside a traced request (a child is never a root of its own).
fn child(name: Cow<'static, str>, kind: SpanKind, attributes: Vec<KeyValue>) -> Option<Traced> {
    let tracing = TRACING.get()?;
    Context::map_current(|current| {
        current.has_active_span().then(|| {
            let span = tracing
                .tracer
                .span_builder(name)
                .with_kind(kind)
                .with_attributes(attributes)
                .start_with_context(&tracing.tracer, current);
            Traced(current.with_span(span))
        })
    })
}

/// Records the `attributes` made on the span current here, and an error
/// status when `failed`; outside a traced request nothing is made.
fn record_here<A: IntoIterator<Item = KeyValue>>(attributes: impl FnOnce() -> A, failed: bool) {
    if !enabled() {
        return;
    }
    Context::map_current(|current| {
        if !current.has_active_span() {
            return;
        }
        let span = current.span();
        span.set_attributes(attributes());
        if failed {
            span.set_status(Status::error(""));
        }
    });
}

/// Marks `traced` as ended with `error` (a JSON-RPC code, or `tool_error`).
pub fn failed(traced: &Traced, error: &str) {
    let span = traced.0.span();
    span.set_attribute(KeyValue::new("error.type", error.to_owned()));
    span.set_status(Status::error(""));
}

/// The span of one call into `plugin` (the version `sha256`), a child of
/// the current one; [`plugin_call_ended`] fills in what it used.
pub fn plugin_call(plugin: &str, sha256: &str, what: &'static str) -> Option<Traced> {
    if !enabled() {
        return None;
    }
    child(
        format!("plugin {plugin} {what}").into(),
        SpanKind::Internal,
        vec![
            KeyValue::new("wasm_mcp.plugin", plugin.to_owned()),
            KeyValue::new("wasm_mcp.plugin.sha256", sha256.to_owned()),
            KeyValue::new("wasm_mcp.call", what),
        ],
    )
}

/// What the call of the current plugin-call span used, and how it ended
/// (`limit`: the limit that stopped it).
pub fn plugin_call_ended(
    fuel: u64,
    peak_memory: usize,
    wall_ms: f64,
    outcome: &'static str,
    limit: Option<&'static str>,
) {
    let used = move || {
        let limit = limit.map(|limit| KeyValue::new("wasm_mcp.limit", limit));
        [
            KeyValue::new("wasm_mcp.fuel_used", i64::try_from(fuel).unwrap_or(i64::MAX)),
            KeyValue::new(
                "wasm_mcp.peak_memory_bytes",
                i64::try_from(peak_memory).unwrap_or(i64::MAX),
            ),
            KeyValue::new("wasm_mcp.wall_ms", wall_ms),
            KeyValue::new("wasm_mcp.outcome", outcome),
        ]
        .into_iter()
        .chain(limit)
    };
    record_here(used, outcome != "ok");
}

/// The span of a task's lifetime, from its creation to its end, a child of
/// the request that created it; [`task_ended`] says how it ended.
pub fn task(id: &str) -> Option<Traced> {
    if !enabled() {
        return None;
    }
    child(
        "task".into(),
        SpanKind::Internal,
        vec![KeyValue::new("wasm_mcp.task.id", id.to_owned())],
    )
}

/// The task of the current task span ended with `status`.
pub fn task_ended(status: &'static str) {
    record_here(|| [KeyValue::new("wasm_mcp.task.status", status)], false);
}

/// The span of a request the server sends the client (sampling,
/// elicitation, roots, ping), a child of the current one.
pub fn client_round_trip(method: &str) -> Option<Traced> {
    if !enabled() {
        return None;
    }
    child(
        format!("{method} (to the client)").into(),
        SpanKind::Client,
        vec![KeyValue::new("mcp.method.name", method.to_owned())],
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
