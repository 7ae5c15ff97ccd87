//! The README documents every setting: its flag in a table and its key in the
//! example config file. Settings are declared once (`src/settings.rs`); this
//! keeps the README from drifting from the declarations.

use wasm_mcp::settings::{Setting, auth, http, limits, registry, server};

#[test]
fn the_readme_names_every_flag_and_config_key() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap();
    let missing: Vec<String> = [limits::ALL, server::ALL, http::ALL, auth::ALL, registry::ALL]
        .concat()
        .iter()
        .flat_map(|setting: &Setting| {
            let flag = format!("`--{}", setting.flag);
            let key = format!("\n{} = ", setting.key);
            [
                (!readme.contains(&flag)).then(|| format!("the flag {flag}` (in a table)")),
                (!readme.contains(&key)).then(|| {
                    format!(
                        "the key {} under [{}] (in the example config)",
                        setting.key, setting.section
                    )
                }),
            ]
        })
        .flatten()
        .collect();
    assert!(missing.is_empty(), "README.md does not show:\n{}", missing.join("\n"));
}
