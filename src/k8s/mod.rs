//! `agentprof k8s`: node-local discovery of Go pprof endpoints in pods, scheduled and
//! resource-triggered captures. So far: the rules of `conf.d/profile.yaml` and label
//! selectors.

pub mod config;
pub mod selector;
