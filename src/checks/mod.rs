//! Checks: the contract every kind of check meets, the registry that finds them, the runner
//! that measures each run, and the built-in system checks.

pub mod builtin;
mod registry;
mod runner;

pub use registry::{CheckListing, ConfigSource, LoadedCheck, Registry};
pub use runner::Runner;

use serde::Serialize;

use crate::metrics::Sink;

/// One configured instance of a check, ready to run again and again (state lives across runs).
pub trait Check: Send {
    /// Runs once, submitting through `sink`. An error fails this run; the runner goes on.
    fn run(&mut self, sink: &mut Sink) -> anyhow::Result<()>;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckKind {
    /// Rust, inside agentprof: its cost is measured on agentprof's own process.
    Builtin,
}

impl CheckKind {
    pub fn label(self) -> &'static str {
        match self {
            CheckKind::Builtin => "built-in",
        }
    }
}
