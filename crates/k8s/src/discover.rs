//! The pods of this node, from the API server: listed in pages of 50 with the server-side
//! field selector `spec.nodeName=<node>` (`limit` is a page size, not a cap), or watched by
//! kube's watcher with the same selector and page size (a `410 Gone` relists).

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};

use crate::Error;

/// Pods per LIST page.
pub const PAGE: u32 = 50;

pub fn node_selector(node: &str) -> String {
    format!("spec.nodeName={node}")
}

/// Every pod on `node`, in pages.
pub async fn list_node_pods(client: &kube::Client, node: &str) -> Result<Vec<Pod>, Error> {
    let api: Api<Pod> = Api::all(client.clone());
    let mut lp = ListParams::default()
        .fields(&node_selector(node))
        .limit(PAGE);
    let mut pods = Vec::new();
    loop {
        let page = api
            .list(&lp)
            .await
            .map_err(|e| Error::Discover(describe(&e, "list", "pods")))?;
        pods.extend(page.items);
        match page.metadata.continue_ {
            Some(c) if !c.is_empty() => lp = lp.continue_token(&c),
            _ => break,
        }
    }
    Ok(pods)
}

/// The watcher's configuration: this node's pods, listed in pages of 50, with bookmarks.
pub fn watcher_config(node: &str) -> kube::runtime::watcher::Config {
    kube::runtime::watcher::Config::default()
        .fields(&node_selector(node))
        .page_size(PAGE)
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
