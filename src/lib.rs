//! agentprof: what agent checks, plugins and Go services cost.
//!
//! The binary is a thin shell over this library; see `cmd` for the command layer and
//! ARCHITECTURE.md for how checks, run records, renderers and profiles fit together.

mod agent;
mod budget;
pub mod checks;
pub mod cli;
mod cmd;
pub mod config;
mod duration;
mod emit;
mod error;
mod files;
mod gate;
mod http;
pub mod k8s;
pub mod metrics;
pub use ::pprof;
pub use ::procstat;
pub mod profile;
mod progress;
pub mod pull;
mod receive;
mod redact;
mod render;
mod retention;
mod serve;
mod signal;
mod sync;
mod ui;

/// The command line: what the binary runs, and the generated completions and man pages
/// (their test checks the committed files are current).
pub use cmd::{completion_file_name, completion_script, main, man_pages};
