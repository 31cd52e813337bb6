//! `agentprof k8s` against a loopback API server and kubelet, with pods that are real Go
//! pprof services on their own loopback addresses.

pub mod apiserver;
pub mod collect;
mod faults;
mod helm;
pub mod kubelet;
mod manifests;
mod peers;
mod real;
pub mod realcluster;
pub mod tls;
