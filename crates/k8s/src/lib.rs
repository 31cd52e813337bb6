//! agentprof's side of a Kubernetes cluster, for `agentprof k8s`: the API server's client
//! (credentials from a kubeconfig or the pod's service account, re-read as the cluster
//! rotates them; every call under a deadline, Retry-After honoured and counted), the pods of
//! one node, the kubelet's stats summary (directly or through the API server's node proxy),
//! label selectors as the API server reads them, and one collector per node held by a
//! coordination.k8s.io Lease. What the collector does with them — rules, targets, triggers,
//! captures — is the main crate's.

#![warn(unnameable_types)]

mod api;
mod client;
mod discover;
mod error;
pub mod http;
mod kubelet;
mod lease;
mod selector;
mod stats;

pub use api::ApiStats;
pub use client::{Cluster, Connect, connect, credentials};
pub use discover::{list_node_pods, watcher_config};
pub use error::{Error, chain};
pub use kubelet::{Kubelet, KubeletSettings};
pub use lease::{Holding, Keeper, NodeLease};
pub use selector::{Selector, check_key, is_dns_label, is_dns_subdomain};
pub use stats::{ContainerRef, Summary, Usage};
