//! The pods of this node, from the API server: listed in pages of 50 with the server-side
//! field selector `spec.nodeName=<node>` (`limit` is a page size, not a cap), or watched by
//! kube's watcher with the same selector and page size (a `410 Gone` relists).

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};

use crate::Error;
use crate::error::describe;

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
