//! agentprof: what agent checks, plugins and Go services cost.
//!
//! The binary is a thin shell over this library; see `cmd` for the command layer and
//! ARCHITECTURE.md for how checks, run records, renderers and profiles fit together.

pub mod agent;
pub mod budget;
pub mod checks;
pub mod cli;
pub mod cmd;
pub mod config;
pub mod duration;
pub mod emit;
pub mod error;
pub mod gate;
pub mod http;
pub mod k8s;
pub mod metrics;
pub mod pprof;
pub mod procstat;
pub mod profile;
pub mod progress;
pub mod pull;
pub mod receive;
pub mod redact;
pub mod render;
pub mod retention;
pub mod serve;
pub mod signal;
pub mod sync;
pub mod ui;
