//! `RunRecord`: one run of one check instance, whatever kind of check produced it.

use serde::Serialize;

use crate::Error;
use crate::metrics::{Event, Flushed, Metric, ServiceCheck};
use crate::procstat::{IoCounters, ProcessSnapshot};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Ok,
    Error,
}

/// What `peak_rss` covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PeakScope {
    /// The run's own peak (the kernel's mark, reset before the run or new with the process).
    Run,
    /// The measured process's peak since it started: the kernel would not reset the mark.
    Process,
    /// The highest mark seen while sampling a short-lived process: the run's peak is at least
    /// this and may be higher.
    Sampled,
}

/// The measured process's figures across one run. `None` means the OS cannot tell (n/a).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RunCost {
    pub wall_s: f64,
    pub cpu_user_s: Option<f64>,
    pub cpu_system_s: Option<f64>,
    /// CPU of the run from a precise clock (the process's CPU clock, or the total of an exited
    /// child's rusage); user and system are the kernel's tick-sampled split of it.
    pub cpu_total_s: Option<f64>,
    pub rss_before: Option<u64>,
    pub rss_after: Option<u64>,
    pub vms_before: Option<u64>,
    pub vms_after: Option<u64>,
    pub peak_rss: Option<u64>,
    pub peak_scope: Option<PeakScope>,
    /// I/O during the run (after minus before).
    pub io: Option<IoCounters>,
    /// Threads, open fds and TCP/UDP sockets at the end of the run.
    pub threads: Option<u64>,
    pub open_fds: Option<u64>,
    pub connections: Option<u64>,
}

fn diff(before: Option<u64>, after: Option<u64>) -> Option<i64> {
    Some(after? as i64 - before? as i64)
}

impl RunCost {
    /// The run's CPU seconds: the precise clock where there is one, else user + system.
    pub fn cpu_s(&self) -> Option<f64> {
        self.cpu_total_s
            .or_else(|| Some(self.cpu_user_s? + self.cpu_system_s?))
    }

    pub fn between(
        before: &ProcessSnapshot,
        after: &ProcessSnapshot,
        wall_s: f64,
        peak_reset: bool,
    ) -> RunCost {
        let cpu = |a: Option<f64>, b: Option<f64>| Some((a? - b?).max(0.0));
        RunCost {
            wall_s,
            cpu_user_s: cpu(after.cpu_user_s, before.cpu_user_s),
            cpu_system_s: cpu(after.cpu_system_s, before.cpu_system_s),
            cpu_total_s: cpu(after.cpu_total_s, before.cpu_total_s),
            rss_before: before.rss,
            rss_after: after.rss,
            vms_before: before.vms,
            vms_after: after.vms,
            peak_rss: after.peak_rss,
            peak_scope: after.peak_rss.map(|_| {
                if peak_reset {
                    PeakScope::Run
                } else {
                    PeakScope::Process
                }
            }),
            io: match (before.io, after.io) {
                (Some(b), Some(a)) => Some(a.since(&b)),
                _ => None,
            },
            threads: after.threads,
            open_fds: after.open_fds,
            connections: after.connections,
        }
    }

    pub fn rss_diff(&self) -> Option<i64> {
        diff(self.rss_before, self.rss_after)
    }

    pub fn vms_diff(&self) -> Option<i64> {
        diff(self.vms_before, self.vms_after)
    }
}

/// A source line and the memory a run left allocated there (tracemalloc).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AllocLine {
    pub file: String,
    pub line: u32,
    /// Bytes allocated there and still alive at the end (negative: freed).
    pub size: i64,
    /// Blocks, likewise.
    pub count: i64,
    /// With `--m-sort traceback`: the allocation's frames as `file:line`, innermost first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub traceback: Vec<String>,
}

/// `--memory` of a Python run: tracemalloc's view.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MemoryProfile {
    /// Highest traced memory during the run above what was traced at its start, bytes.
    pub traced_peak: u64,
    /// Traced memory at the end of the run minus at its start: what the run kept, bytes.
    pub traced_kept: i64,
    /// Lines holding the most new memory at the end of the run.
    pub top: Vec<AllocLine>,
    /// tracemalloc's own memory (its traces) at the end of the run, as it reports it: part of
    /// the worker's RSS that is the tracer's, not the check's.
    pub tracer_bytes: Option<u64>,
    /// Per-line heap snapshots were taken around the run; their memory is in the RSS too.
    pub snapshots: bool,
}

/// One run of one instance: what it emitted and what it cost.
#[derive(Debug, Clone)]
pub struct RunRecord {
    pub check: String,
    /// 0-based, as in `instances[N]`.
    pub instance: usize,
    /// 1-based.
    pub run: u32,
    pub status: RunStatus,
    pub error: Option<String>,
    /// Unix seconds at the start of the run.
    pub started_at: f64,
    pub cost: RunCost,
    pub metrics: Vec<Metric>,
    pub service_checks: Vec<ServiceCheck>,
    pub events: Vec<Event>,
    pub warnings: Vec<String>,
    /// The check's own log records (Python checks; `check --log-level`).
    pub logs: Vec<crate::metrics::LogLine>,
    pub awaiting_previous: u32,
    /// With `--memory`, for Python checks.
    pub memory: Option<MemoryProfile>,
}

impl RunRecord {
    /// RSS after the run without tracemalloc's own memory (`--memory`): what a leak trend
    /// reads, so the tracer's bookkeeping of the check's allocations is not the check's leak.
    pub fn rss_after_untraced(&self) -> Option<u64> {
        let tracer = self
            .memory
            .as_ref()
            .and_then(|m| m.tracer_bytes)
            .unwrap_or(0);
        self.cost.rss_after.map(|v| v.saturating_sub(tracer))
    }

    #[allow(clippy::too_many_arguments)]
    pub fn new(
        check: &str,
        instance: usize,
        run: u32,
        started_at: f64,
        result: Result<(), Error>,
        cost: RunCost,
        flushed: Flushed,
    ) -> RunRecord {
        let (status, error) = match result {
            Ok(()) => (RunStatus::Ok, None),
            Err(e) => (RunStatus::Error, Some(e.to_string())),
        };
        RunRecord {
            check: check.to_string(),
            instance,
            run,
            status,
            error,
            started_at,
            cost,
            metrics: flushed.metrics,
            service_checks: flushed.service_checks,
            events: flushed.events,
            warnings: flushed.warnings,
            logs: flushed.logs,
            awaiting_previous: flushed.awaiting_previous,
            memory: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_figures_stay_unknown() {
        let before = ProcessSnapshot {
            rss: Some(100),
            ..Default::default()
        };
        let after = ProcessSnapshot {
            rss: Some(80),
            vms: Some(1000),
            ..Default::default()
        };
        let c = RunCost::between(&before, &after, 0.5, true);
        assert_eq!(c.rss_diff(), Some(-20));
        assert_eq!(c.vms_diff(), None);
        assert_eq!(c.cpu_user_s, None);
        assert_eq!(c.io, None);
        assert_eq!(c.peak_scope, None);
    }
}
