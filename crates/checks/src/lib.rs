//! agentprof's check runner, Agent-compatible: the contract every kind of check meets, the
//! registry that finds checks (built-ins, Python checks, exec plugins) as the Agent's conf.d
//! and checks.d lay them out, the runner that measures each run into a `RunRecord`, the
//! built-in system checks, the Python worker and exec plugins; with what they need and
//! nothing of agentprof's commands: configuration read as the Agent reads it (`config`),
//! submissions and their aggregation (`metrics`), run records and call profiles (`profile`).

#![warn(unnameable_types)]

pub mod config;
pub mod duration;
mod error;
pub mod metrics;
pub mod profile;
pub mod redact;
pub mod signal;
pub mod sync;

use ::pprof;
use ::procstat;

mod builtin;
mod child;
mod exec;
#[cfg(target_os = "linux")]
mod exec_trace;
mod filter;
#[cfg(not(target_os = "linux"))]
mod exec_trace_none {
    /// Elsewhere plugins are not traced: only their end is reported (the other variants
    /// keep the run loop the same on every platform).
    #[allow(dead_code)]
    pub enum TraceEvent {
        Spawned(std::io::Result<std::process::Child>),
        Exec(crate::procstat::ProcessSnapshot),
        Exit(crate::procstat::ProcessSnapshot, Vec<(i32, u64)>),
        Ended(std::time::Instant),
    }
}
mod listing;
mod python;
mod registry;
mod runner;

pub use child::{run_bounded, stderr_tail, stdout_of};
pub use error::Error;
pub use filter::InstanceFilter;
pub use listing::CheckListing;
pub use python::sampler::{FunctionTime, SampledFrame, Values as SampleValues};
pub use python::{
    COMPAT_BASE, CheckMetadata, FailedInstance, LoadSpec, Loaded, MemoryOptions, Profiler,
    PythonHost, Samples, failed_instances, load as start_python,
};
pub use registry::{ConfigSource, LoadedCheck, Registry};
pub use runner::{Done, Runner, execute, hostname_of, instance_tags, timeout_of};

use std::time::Duration;

use serde::Serialize;

use crate::metrics::Sink;
use crate::profile::{MemoryProfile, RunCost};

/// One configured instance of a check, ready to run again and again (state lives across runs).
pub trait Check: Send {
    /// Runs once, submitting through `sink`. An error fails this run; the runner goes on.
    fn run(&mut self, sink: &mut Sink) -> Result<(), Error>;
}

/// A check that runs in a process of its own (an exec plugin, a Python worker) and measures
/// that process's cost itself.
pub trait ExternalCheck: Send {
    /// Runs once, within `timeout`, submitting through `sink`.
    fn run(&mut self, sink: &mut Sink, timeout: Duration, opts: RunOptions) -> ExternalRun;

    /// The program a run starts, for a caller that starts it itself (under valgrind, to
    /// count its instructions); None for checks that are not one program per run.
    fn invocation(&self) -> Option<Invocation> {
        None
    }
}

/// One run of an exec plugin: the program, its arguments and what its stdin gets.
#[derive(Debug, Clone)]
pub struct Invocation {
    pub program: std::path::PathBuf,
    pub args: Vec<String>,
    pub stdin: Vec<u8>,
}

/// What to record about an external run besides its cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunOptions {
    /// The run's calls (cProfile for Python).
    pub profile: bool,
    /// The run's allocations (tracemalloc for Python).
    pub memory: bool,
    /// With `memory`, also the lines that allocated (a snapshot diff per run: about a second
    /// once the check's modules are traced); without, only the traced peak and bytes kept.
    pub memory_lines: bool,
    /// The least level of the check's log records kept with the run (Python's numbers:
    /// 10 debug, 20 info, 30 warning, 40 error; 0 is the default, warning).
    pub log_level: u8,
    /// Count the run's instructions (`gate --measure instructions`).
    pub count: Option<Counting>,
}

/// How a Python worker counts a run's instructions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counting {
    /// Under callgrind: the run bracketed by valgrind's client requests, its counts dumped.
    Valgrind,
    /// A perf_event_open counter of this event (perf_event_attr's type and config) on the
    /// worker's thread, read around the run and returned with it.
    Perf { kind: u32, config: u64 },
}

/// What an external run returns: its outcome and what it cost the process that ran it.
pub struct ExternalRun {
    pub result: Result<(), Error>,
    /// Unix seconds at the start of the run.
    pub started_at: f64,
    pub cost: RunCost,
    pub memory: Option<MemoryProfile>,
}

/// How one instance runs.
pub enum Runnable {
    /// Inside agentprof, measured on agentprof's own process.
    InProcess(Box<dyn Check>),
    /// In a process of its own, which measures itself.
    External(Box<dyn ExternalCheck>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckKind {
    /// Rust, inside agentprof: its cost is measured on agentprof's own process.
    Builtin,
    /// An executable printing DogStatsD datagrams: its cost is measured on its process.
    Exec,
    /// A Python check on the AgentCheck API, in agentprof's Python worker.
    Python,
}

impl CheckKind {
    pub fn label(self) -> &'static str {
        match self {
            CheckKind::Builtin => "built-in",
            CheckKind::Exec => "exec plugin",
            CheckKind::Python => "Python",
        }
    }

    /// Whether that process lives across runs (agentprof itself, the Python worker); an
    /// exec plugin is a new process every run.
    pub fn persists(self) -> bool {
        !matches!(self, CheckKind::Exec)
    }

    /// The process whose figures a run's cost is.
    pub fn measured_process(self) -> &'static str {
        match self {
            CheckKind::Builtin => "agentprof's own process",
            CheckKind::Exec => "the plugin's process",
            CheckKind::Python => "the Python worker process",
        }
    }
}
