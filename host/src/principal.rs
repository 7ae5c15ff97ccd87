//! Who a request acts for: the principal an HTTP request authenticated as
//! (a static token, or an OAuth access token's subject and client), with
//! the scopes it was granted. Everything stateful a principal creates (a
//! session, a task, a `requestState`) is bound to its [`Principal::id`];
//! what it may see and call is decided by [`Principal::lacks`].

use std::collections::BTreeSet;

/// Whom the requests of a server's own user act for (over stdio, and
/// `wasm-mcp call`), where state is kept per caller; no principal's id
/// looks like it.
pub const LOCAL_CALLER: &str = "local user";

/// An authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// Stable across the caller's tokens: `token:N` for the N-th static
    /// token, else the issuer, subject and client of its access tokens.
    pub id: String,
    /// The granted scopes; `None` when the credential is not scoped (a
    /// static token may do everything).
    pub scopes: Option<BTreeSet<String>>,
}

impl Principal {
    /// The holder of the `index`-th static token: unscoped.
    pub fn static_token(index: usize) -> Self {
        Self {
            id: format!("token:{index}"),
            scopes: None,
        }
    }

    /// The caller an OAuth access token was issued for: `subject` of
    /// `issuer`, through `client` (absent in some tokens), with `scopes`.
    pub fn oauth(issuer: &str, subject: &str, client: Option<&str>, scopes: BTreeSet<String>) -> Self {
        Self {
            id: format!("oauth {issuer} {subject} {}", client.unwrap_or("-")),
            scopes: Some(scopes),
        }
    }

    /// Whether `scope` is granted: itself, or a broader scope it refines
    /// (`notes` grants `notes:read` and `notes:read:drafts`).
    pub fn has(&self, scope: &str) -> bool {
        let Some(granted) = &self.scopes else {
            return true;
        };
        let mut candidate = scope;
        loop {
            if granted.contains(candidate) {
                return true;
            }
            match candidate.rsplit_once(':') {
                Some((broader, _)) => candidate = broader,
                None => return false,
            }
        }
    }

    /// Whether any of `needed` is not granted.
    pub fn lacks(&self, needed: &[String]) -> bool {
        needed.iter().any(|scope| !self.has(scope))
    }
}

/// Whether `principal` (none: the server authenticates nobody) may use an
/// entry that needs `scopes`.
pub fn may_use(principal: Option<&Principal>, scopes: &[String]) -> bool {
    principal.is_none_or(|principal| !principal.lacks(scopes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scoped(scopes: &[&str]) -> Principal {
        Principal::oauth(
            "https://as",
            "alice",
            Some("app"),
            scopes.iter().map(|s| s.to_string()).collect(),
        )
    }

    #[test]
    fn a_broader_scope_grants_the_narrower_ones() {
        let alice = scoped(&["notes", "mail:read"]);
        assert!(alice.has("notes"));
        assert!(alice.has("notes:write"));
        assert!(alice.has("notes:write:drafts"));
        assert!(alice.has("mail:read"));
        assert!(!alice.has("mail:send"));
        assert!(!alice.has("mail"));
        assert!(!alice.has("notesy"));
        assert!(alice.lacks(&["notes:read".into(), "mail:send".into()]));
        assert!(!alice.lacks(&[]));
    }

    #[test]
    fn static_tokens_and_no_authentication_may_use_everything() {
        assert!(may_use(None, &["x".into()]));
        assert!(may_use(Some(&Principal::static_token(0)), &["x".into()]));
        assert!(!may_use(Some(&scoped(&[])), &["x".into()]));
        assert_ne!(
            scoped(&[]).id,
            Principal::oauth("https://as", "alice", None, BTreeSet::new()).id
        );
    }
}
