//! The crate's one error type: what went wrong on the cluster's side, by kind, so a caller
//! matches a variant (a setting is the user's to change; a kubelet round or a Lease call
//! failed at run time) instead of reading a message.

use std::time::Duration;

/// What went wrong talking to the cluster, or what it would refuse.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A setting that cannot be used, and why: a flag (`--kubeconfig`, `--context`) or a
    /// kubelet setting (`kubelet_url`, `kubelet_client_ca`, `kubelet_token_file`,
    /// `$NODE_IP`), named as the user wrote it. The user's to change.
    #[error("{setting}: {message}")]
    Setting { setting: String, message: String },
    /// The node's pods could not be listed.
    #[error("{0}")]
    Discover(String),
    /// The kubelet did not answer within a round's deadline.
    #[error(
        "{kubelet}: no answer within {} (the shortest monitor_interval, at most 10 s)",
        agentprof_checks::duration::human(*.after)
    )]
    KubeletTimeout { kubelet: String, after: Duration },
    /// The kubelet did not answer: a connection, TLS or credentials problem, or an HTTP
    /// status (`code`).
    #[error("{message}")]
    KubeletRequest { code: Option<u16>, message: String },
    /// An answer that is not a stats summary; `kubelet` is where it came from, when known.
    #[error("{}not a kubelet stats summary: {source}", .kubelet.as_deref().map(|k| format!("{k}: ")).unwrap_or_default())]
    NotASummary {
        kubelet: Option<String>,
        #[source]
        source: serde_json::Error,
    },
    /// A call on the node's Lease failed.
    #[error("{}", describe(.source, .verb, "leases"))]
    Lease {
        verb: &'static str,
        #[source]
        source: kube::Error,
    },
    /// A call on the node's Lease got no answer in time.
    #[error("no answer within {} s from the API server", .0.as_secs())]
    LeaseTimeout(Duration),
    // A label selector, key or value the API server would refuse, and why:
    #[error("an empty requirement (two commas, or a comma at an end)")]
    EmptyRequirement,
    #[error("a `)` without its `(` at character {0}")]
    UnopenedParenthesis(usize),
    #[error("a `(` is not closed")]
    UnclosedParenthesis,
    #[error("{part:?}: `{op}` takes a list in parentheses: {key} {op} (a,b)")]
    ListWithoutParentheses {
        part: String,
        op: &'static str,
        key: String,
    },
    #[error("{0:?}: the list is empty")]
    EmptyList(String),
    #[error(
        "{0:?}: expected `key=value`, `key!=value`, `key in (…)`, `key notin (…)`, `key` or `!key`"
    )]
    Unrecognised(String),
    #[error(
        "label key {0:?}: the prefix must be a DNS subdomain (lowercase, at most 253 characters)"
    )]
    KeyPrefix(String),
    #[error(
        "label key {0:?}: the name must be 1 to 63 characters, alphanumeric at both ends, with `-`, `_`, `.` inside"
    )]
    KeyName(String),
    #[error(
        "label value {0:?}: at most 63 characters, alphanumeric at both ends, with `-`, `_`, `.` inside"
    )]
    Value(String),
}

impl Error {
    pub(crate) fn setting(setting: &str, message: impl std::fmt::Display) -> Error {
        Error::Setting {
            setting: setting.to_string(),
            message: message.to_string(),
        }
    }

    pub(crate) fn request(message: impl Into<String>) -> Error {
        Error::KubeletRequest {
            code: None,
            message: message.into(),
        }
    }
}

/// A kube error in words a user can act on (RBAC, credentials, reachability), for the
/// request that failed: `verb` on `resource` (as RBAC names them: `list` `pods`, `update`
/// `leases`), every cause in the chain kept.
pub fn describe(e: &kube::Error, verb: &str, resource: &str) -> String {
    match e {
        kube::Error::Api(s) if s.code == 401 => format!(
            "the API server refused the credentials to {verb} {resource} (401 {}): check the \
             token or the kubeconfig user",
            s.message
        ),
        kube::Error::Api(s) if s.code == 403 => format!(
            "forbidden to {verb} {resource} (403): {} — agentprof's ServiceAccount needs \
             `{verb}` on `{resource}` (deploy/kubernetes/10-rbac.yaml grants it)",
            s.message
        ),
        kube::Error::Api(s) => format!(
            "{verb} {resource}: the API server answered {} {}: {}",
            s.code, s.reason, s.message
        ),
        other => format!("{verb} {resource}: {}", chain(other)),
    }
}

/// An error and every cause under it, each said once.
pub fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut cur = e;
    while let Some(next) = cur.source() {
        let t = next.to_string();
        if !text.contains(&t) {
            text = format!("{text}: {t}");
        }
        cur = next;
    }
    text
}
