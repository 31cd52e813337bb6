//! `agentprof k8s`: node-local discovery of Go pprof endpoints in pods, scheduled and
//! resource-triggered captures. The rules of `conf.d/profile.yaml` (config, rule, selector),
//! the pods of this node (client, discover), what they make targets (targets, tags,
//! schedule), the kubelet's usage and the trigger window (kubelet, stats, trigger), one
//! collector per node (lease), and the loop that ties them (run, metrics).

pub(crate) mod capture;
pub(crate) mod collector;
pub mod config;
mod events;
mod lifecycle;
pub use lifecycle::K8sError;
pub(crate) mod metrics;
mod remembered;
mod rule;
pub(crate) mod run;
pub mod schedule;
pub(crate) mod tags;
pub(crate) mod targets;
pub(crate) mod trigger;
