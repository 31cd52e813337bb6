//! agentprof: what agent checks, plugins and Go services cost.
//!
//! The binary is a thin shell over this library; see `cmd` for the command layer and
//! ARCHITECTURE.md for how checks, run records, renderers and profiles fit together.

mod agent;
mod budget;
pub use agentprof_checks as checks;
pub mod cli;
mod cmd;
pub use agentprof_checks::config;
use agentprof_checks::duration;
mod emit;
mod error;
mod files;
mod gate;
mod http;
pub mod k8s;
pub use ::pprof;
pub use ::procstat;
pub use agentprof_checks::metrics;
pub use agentprof_checks::profile;
mod progress;
pub mod pull;
mod receive;
use agentprof_checks::redact;
mod render;
mod retention;
mod serve;
use agentprof_checks::signal;
use agentprof_checks::sync;
mod ui;

/// The command line: what the binary runs, and the generated completions and man pages
/// (their test checks the committed files are current).
pub use cmd::{completion_file_name, completion_script, main, man_pages};
