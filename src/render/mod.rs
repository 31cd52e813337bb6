//! Renderers of a check report: terminal tables, the JSON document, the collector.log block.
//! One file per format; all read `RunRecord`s and never know the kind of check.

pub mod collector_log;
pub mod json;
pub mod pstats;
pub mod table;
pub mod units;

use std::io::IsTerminal;

use crate::checks::{CheckKind, ConfigSource};
use crate::profile::{RunRecord, TopTable};

/// What `agentprof check` has to show.
#[derive(Debug, Clone)]
pub struct CheckReport {
    pub check: String,
    pub kind: CheckKind,
    pub version: Option<String>,
    pub source: ConfigSource,
    pub records: Vec<RunRecord>,
    pub profile: Option<ProfileView>,
    /// How the Python worker was started, for Python checks.
    pub python: Option<crate::checks::Loaded>,
    /// With `--memory` and several runs: lines that grew most from the first run to the last.
    pub memory_growth: Option<Vec<crate::profile::AllocLine>>,
    /// Configuration warnings (unknown options): printed on stderr when found, kept for JSON.
    pub config_warnings: Vec<String>,
    /// What a Python check set with `set_metadata`, as `agent check` shows it.
    pub metadata: Vec<crate::checks::CheckMetadata>,
    /// The runs' metrics, service checks and events went to a [`json::Spool`] as they came.
    pub spooled: bool,
}

/// What `--profile` found: sampled native stacks, a Python check's sampled stacks, or its
/// cProfile statistics.
#[derive(Debug, Clone)]
pub enum ProfileView {
    Cpu(ProfileSummary),
    Python(PythonSampled),
    Pstats(pstats::PstatsView),
}

/// A Python check's sampled profile, summarised for display.
#[derive(Debug, Clone)]
pub struct PythonSampled {
    /// Which sampler ran, where, and what it costs.
    pub method: String,
    pub frequency_hz: u32,
    pub samples: u64,
    pub wall_ns: u64,
    pub cpu_ns: u64,
    /// Runs sampled, and how many ended early (their samples up to then are kept).
    pub runs: u32,
    pub partial_runs: u32,
    /// Stacks dropped because they changed while read.
    pub torn: u64,
    /// The in-worker sampler's own CPU (0 when read from outside).
    pub sampler_cpu_ns: u64,
    /// A warm-up run came before and is left out.
    pub warm_up: bool,
    /// Functions seen in all; `rows` are the first `top` of them.
    pub functions: usize,
    pub rows: Vec<crate::checks::FunctionTime>,
}

/// The sampled call profile, summarised for display.
#[derive(Debug, Clone)]
pub struct ProfileSummary {
    pub frequency_hz: u32,
    pub period_ns: u64,
    pub samples: u64,
    /// Fewer samples than this is not a profile worth a table.
    pub min_samples: u64,
    /// Runs that would give about twice `min_samples`, from the CPU a run used.
    pub suggested_times: u64,
    /// Extra repetitions of the run that were sampled (not measured) because the measured
    /// runs were too short to sample.
    pub repeated: u32,
    pub top: TopTable,
}

impl ProfileSummary {
    pub fn meaningful(&self) -> bool {
        self.samples >= self.min_samples
    }

    /// How many runs give about twice `min_samples`: from the CPU seconds one run used
    /// (measured, so a run that sampled nothing still gets a real estimate), else from the
    /// samples seen so far.
    pub fn suggest_times(
        min_samples: u64,
        period_ns: u64,
        runs: u64,
        cpu_per_run_s: Option<f64>,
        samples: u64,
    ) -> u64 {
        let want = 2.0 * min_samples as f64;
        let n = match cpu_per_run_s.filter(|c| *c > 0.0) {
            Some(cpu) => want * period_ns as f64 / 1e9 / cpu,
            None => want * runs as f64 / samples.max(1) as f64,
        };
        (n.ceil() as u64).clamp(2, 1_000_000)
    }
}

/// How to draw for the terminal.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    pub color: bool,
    pub bordered: bool,
}

impl Style {
    /// Colour only on a terminal and never with NO_COLOR set.
    pub fn detect(bordered: bool) -> Style {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Style {
            color: !no_color && std::io::stdout().is_terminal(),
            bordered,
        }
    }
}

impl CheckReport {
    pub fn failed_runs(&self) -> usize {
        self.records.iter().filter(|r| r.error.is_some()).count()
    }
}
