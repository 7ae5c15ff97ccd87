//! The operator's TOML: a plugin manifest (`NAME.toml`) and the host's config
//! file. Either it is refused with an error naming the file, or every limit it
//! sets is usable (a deadline or a ttl the host accepts never overflows the
//! clock it is added to) and every scope it requires is a valid scope token.
#![no_main]

use std::path::Path;
use std::time::Instant;

use libfuzzer_sys::fuzz_target;
use wasm_mcp::fuzzing::{Channel, ConfigFile, Grants, Limits, is_scope_token};
use wasm_mcp::{Manifest, Settings};

fn usable(limits: &Limits) {
    assert!(limits.fuel > 0 && limits.memory_bytes() > 0 && limits.max_output_bytes() > 0);
    assert!(!limits.deadline().is_zero());
    assert!(
        Instant::now().checked_add(limits.deadline() * 2).is_some(),
        "deadline {:?} overflows",
        limits.deadline()
    );
}

fuzz_target!(|text: &str| {
    let path = Path::new("/nonexistent/fuzz.toml");
    match Manifest::parse(text, path) {
        Ok(manifest) => {
            // Every scope it names can be asked for in a challenge.
            assert!(manifest.scopes.named().all(is_scope_token));
            if let Ok(limits) = manifest.plugin_limits(&Limits::default()) {
                usable(&limits);
                for tool in manifest.tools.keys() {
                    if let Ok(limits) = manifest.tool_limits(tool, &limits) {
                        usable(&limits);
                    }
                }
            }
            if let Ok(grants) = Grants::from_manifest("fuzz", &manifest) {
                let network = grants.network();
                for rule in network.rules() {
                    for channel in [Channel::Plain, Channel::Tls] {
                        let _ = network.grants_name(&format!("{rule:?}"), 443, channel, None);
                    }
                }
                let _ = network.may_resolve("example.com");
            }
        }
        Err(error) => assert!(format!("{error:#}").contains("fuzz.toml"), "{error:#}"),
    }
    if let Ok(file) = toml::from_str::<ConfigFile>(text)
        && let Ok(settings) = Settings::resolve(&file, &ConfigFile::default())
    {
        usable(&settings.limits);
        let now = Instant::now();
        let server = &settings.server;
        assert!(now.checked_add(server.client_timeout()).is_some());
        assert!(now.checked_add(server.shutdown_grace()).is_some());
        assert!(now.checked_add(server.max_task_ttl()).is_some());
        assert!(server.ping_interval().is_none_or(|i| now.checked_add(i).is_some()));
        let http = &settings.http;
        assert!(now.checked_add(http.session_idle_timeout()).is_some());
        assert!(now.checked_add(http.sse_retry()).is_some());
        assert!(http.sse_poll_after().is_none_or(|i| now.checked_add(i).is_some()));
    }
});
