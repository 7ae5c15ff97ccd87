//! What `check` reads from a component's binary, without running it: its
//! top-level imports, what each gives the plugin, and the language runtime
//! it was built with, whose imports say nothing of what the plugin's own
//! code uses.

/// A component's imports and the libraries linked into it.
pub struct Component {
    /// The names of its top-level imports (`wasi:cli/environment@0.2.6`, ...), sorted.
    pub imports: Vec<String>,
    /// The names of its top-level exports (`wasm-mcp:plugin/tools@0.1.0`, ...), sorted.
    pub exports: Vec<String>,
    /// The names its core modules are linked under (`libpython3.14.so`, ...).
    linked: Vec<String>,
}

/// A language runtime compiled into every component built with it, which
/// imports some capabilities whether or not the plugin's code uses them.
pub struct LanguageRuntime {
    /// The tool that builds such components.
    pub tool: &'static str,
    /// How the runtime's library, linked into the component, is named.
    library: &'static str,
    pub language: &'static str,
    /// The import prefixes it always has: they do not say the plugin uses them.
    pub carries: &'static [&'static str],
}

/// The runtimes known to import capabilities whatever the plugin does.
/// componentize-js is not one: its plugins are built with every WASI feature
/// it can leave out disabled.
const RUNTIMES: &[LanguageRuntime] = &[LanguageRuntime {
    tool: "componentize-py",
    library: "libpython3",
    language: "Python",
    carries: &["wasi:filesystem/", "wasi:sockets/"],
}];

impl Component {
    /// Reads the component in `bytes`; the error says why it is not one.
    pub fn read(bytes: &[u8]) -> Result<Component, String> {
        let mut component = Component {
            imports: Vec::new(),
            exports: Vec::new(),
            linked: Vec::new(),
        };
        component.parse(bytes)?;
        for names in [&mut component.imports, &mut component.exports] {
            names.sort();
            names.dedup();
        }
        Ok(component)
    }

    /// The language runtime the component was built with, when it is one
    /// that imports capabilities whatever the plugin's code uses.
    pub fn runtime(&self) -> Option<&'static LanguageRuntime> {
        RUNTIMES
            .iter()
            .find(|runtime| self.linked.iter().any(|name| name.starts_with(runtime.library)))
    }

    /// Whether the component imports an interface whose name starts with `prefix`.
    pub fn imports_any(&self, prefix: &str) -> bool {
        self.imports.iter().any(|i| i.starts_with(prefix))
    }

    /// Whether the imports under `prefix` may be only the language runtime's
    /// (see [`LanguageRuntime::carries`]).
    pub fn carried_by_runtime(&self, prefix: &str) -> bool {
        self.runtime().is_some_and(|runtime| runtime.carries.contains(&prefix))
    }

    fn parse(&mut self, bytes: &[u8]) -> Result<(), String> {
        use wasmparser::{Instance, Parser, Payload};
        let mut depth = 0usize;
        let mut is_component = false;
        if !bytes.starts_with(b"\0asm") {
            return Err("not a WebAssembly binary (no \\0asm header)".into());
        }
        for payload in Parser::new(0).parse_all(bytes) {
            let payload =
                payload.map_err(|e| format!("not a valid component: {} (at offset {:#x})", e.message(), e.offset()))?;
            match payload {
                Payload::Version { encoding, .. } => {
                    if depth == 0 {
                        is_component = encoding == wasmparser::Encoding::Component;
                    }
                    depth += 1;
                }
                Payload::End(_) => depth = depth.saturating_sub(1),
                Payload::ComponentImportSection(reader) if depth == 1 => {
                    for import in reader {
                        let import = import.map_err(|e| format!("a malformed import: {}", e.message()))?;
                        self.imports.push(import.name.name.to_string());
                    }
                }
                Payload::ComponentExportSection(reader) if depth == 1 => {
                    for export in reader {
                        let export = export.map_err(|e| format!("a malformed export: {}", e.message()))?;
                        self.exports.push(export.name.name.to_string());
                    }
                }
                // The core instances it links: a runtime's shared libraries among them.
                Payload::InstanceSection(reader) if depth == 1 => {
                    for instance in reader.into_iter().flatten() {
                        if let Instance::Instantiate { args, .. } = instance {
                            self.linked.extend(args.iter().map(|arg| arg.name.to_owned()));
                        }
                    }
                }
                _ => {}
            }
        }
        if !is_component {
            return Err("a core WebAssembly module, not a component".into());
        }
        Ok(())
    }
}

/// What an imported interface gives the plugin, and whether a grant governs it.
pub fn describe_import(import: &str) -> &'static str {
    let interface = import.split('@').next().unwrap_or(import);
    match interface {
        "wasm-mcp:plugin/host" => "the host API (logging, progress, sampling, elicitation, roots)",
        "wasm-mcp:plugin/types" => "the contract's types",
        "wasi:filesystem/preopens" => "files: the directories granted by [[directories]]",
        "wasi:filesystem/types" => "files: operations on granted directories",
        "wasi:cli/environment" => "environment variables granted by [env] (arguments are always empty)",
        "wasi:cli/stdin" => "stdin (always empty)",
        "wasi:cli/stdout" | "wasi:cli/stderr" => "captured and forwarded as log messages, never the protocol stream",
        "wasi:cli/exit" => "exit (ends the call with an error)",
        "wasi:sockets/network" | "wasi:sockets/instance-network" => "network: addresses granted by [network]",
        "wasi:sockets/tcp" | "wasi:sockets/tcp-create-socket" => "TCP: connections to addresses granted by [network]",
        "wasi:sockets/udp" | "wasi:sockets/udp-create-socket" => "UDP: datagrams to addresses granted by [network]",
        "wasi:sockets/ip-name-lookup" => "DNS: only names granted by [network]",
        "wasi:clocks/wall-clock" | "wasi:clocks/monotonic-clock" => "clocks (always available)",
        "wasi:random/random" | "wasi:random/insecure" | "wasi:random/insecure-seed" => {
            "random numbers (always available)"
        }
        "wasi:io/error" | "wasi:io/poll" | "wasi:io/streams" => "I/O plumbing (always available)",
        i if i.starts_with("wasi:cli/terminal") => "terminal queries (never a terminal)",
        "wasi:http/outgoing-handler" => {
            "HTTP requests: plain http:// to hosts and ports granted by [network] (not by https:// rules); \
             https:// to any of them, TLS verified by the host"
        }
        "wasi:http/types" => "HTTP requests and responses (plumbing for outgoing-handler)",
        "wasi:keyvalue/store" | "wasi:keyvalue/atomics" | "wasi:keyvalue/batch" => {
            "plugin state: the buckets granted by [keyvalue], in the host's state store"
        }
        i if i.starts_with("wasi:http/") => "NOT PROVIDED by this host",
        _ => "",
    }
}
