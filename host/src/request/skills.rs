//! The skills extension's requests that reach into a plugin: a file of a
//! skill the plugin makes, read through its `skills` export (a `SKILL.md`
//! it makes is held again to the rules it was listed under), and the
//! folders of such a skill, listed from the files it says it has now.
//! Skills from a plugin's skills folder are answered from the catalog.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};

use super::results;
use crate::call::{CallError, CallScope};
use crate::catalog::skills::{Child, SkillEntry, children};
use crate::contract::bindings::types;
use crate::plugin::contents_bytes;
use crate::principal::{Principal, may_use};
use crate::protocol::RpcError;
pub(super) use crate::skills::EXTENSION;
use crate::skills::{SCHEME, SKILL_MD, check_skill_md, mime_type};

/// The JSON-RPC error of a failed call into a plugin's skills.
fn call_error(error: CallError, uri: &str) -> RpcError {
    match error {
        CallError::Refused(types::Error::NotFound(_)) => RpcError::resource_not_found(uri),
        CallError::Refused(types::Error::InvalidParams(why)) => RpcError::invalid_params(why),
        other => RpcError::internal(other.to_string()),
    }
}

/// `resources/read` of `uri`, file `file` of the made skill `skill`.
pub(super) async fn read_made_file(
    skill: &SkillEntry,
    file: &str,
    uri: &str,
    scope: Arc<CallScope>,
) -> Result<Value, RpcError> {
    if file.is_empty() {
        return Err(RpcError::resource_not_found(uri));
    }
    let mut contents = skill
        .plugin
        .read_skill_file(scope, &skill.path, file)
        .await
        .map_err(|e| call_error(e, uri))?;
    if file == SKILL_MD {
        let name = skill.path.rsplit('/').next().unwrap_or(&skill.path);
        check_skill_md(&contents_bytes(&contents.body), name).map_err(|why| {
            RpcError::internal(format!(
                "plugin {} made a {SKILL_MD} for {uri} that breaks a rule: {why}",
                skill.plugin.name
            ))
        })?;
    }
    contents.uri = uri.to_owned();
    results::resource_contents(vec![contents], &skill.plugin)
}

/// The direct children of `uri`, the made skill `skill`'s folder or a
/// folder in it, from the files it has now, that `principal` may see;
/// `None` when there are none.
pub(super) async fn made_directory(
    skill: &SkillEntry,
    uri: &str,
    scope: Arc<CallScope>,
    principal: Option<&Principal>,
) -> Result<Option<BTreeMap<String, Child>>, RpcError> {
    if !may_use(principal, &skill.scopes) {
        return Ok(None);
    }
    let files = skill
        .plugin
        .list_skill_files(scope, &skill.path)
        .await
        .map_err(|e| call_error(e, uri))?;
    let uris: Vec<String> = files
        .iter()
        .map(|file| format!("{SCHEME}{}/{file}", skill.path))
        .collect();
    let listed = uris.iter().map(|file| {
        let listing = json!({ "uri": file, "mimeType": mime_type(file) });
        (file.as_str(), listing, skill.scopes.clone())
    });
    Ok(children(&format!("{uri}/"), listed, principal))
}
