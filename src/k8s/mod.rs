//! `agentprof k8s`: node-local discovery of Go pprof endpoints in pods, scheduled and
//! resource-triggered captures. The rules of `conf.d/profile.yaml` (config, rule, selector),
//! the pods of this node (client, discover), what they make targets (targets, tags,
//! schedule), the kubelet's usage and the trigger window (kubelet, stats, trigger), one
//! collector per node (lease), and the loop that ties them (run, metrics).

pub mod api;
pub mod capture;
pub mod client;
pub mod collector;
pub mod config;
pub mod discover;
mod events;
pub mod kubelet;
pub mod lease;
pub mod metrics;
mod remembered;
mod rule;
pub mod run;
pub mod schedule;
pub mod selector;
pub mod stats;
pub mod tags;
pub mod targets;
pub mod trigger;
