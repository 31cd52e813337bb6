//! `agentprof k8s`: node-local discovery of Go pprof endpoints in pods, scheduled and
//! resource-triggered captures. So far: the rules of `conf.d/profile.yaml`, label selectors,
//! the kubelet's stats summary and the resource-trigger window.

pub mod client;
pub mod config;
mod rule;
pub mod schedule;
pub mod selector;
pub mod stats;
pub mod tags;
pub mod targets;
pub mod trigger;
