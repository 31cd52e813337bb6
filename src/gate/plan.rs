//! The gate's plan: how many worker processes a baseline run takes for the alpha asked for,
//! how many interleaved rounds A/B takes, how many timed runs, and what counts instructions.

use std::path::Path;

use crate::error::UsageError;

use super::instructions::Counter;
use super::{GateConfig, GateStats, Measure};

/// Worker processes the timed runs are spread over: a process's memory layout shifts a
/// check's run time by tens of percent from one process to the next, so timings from one
/// process alone would call that a regression. With five, the one-sided test at 0.01 needs
/// every new process slower than every baseline one, which a busy machine breaks too often
/// (docs/details.md, "Measured choices"); eight leave room for overlap.
pub const PROCESSES: u32 = 8;
/// The most processes the gate runs to reach a small alpha.
const MAX_PROCESSES: u32 = 40;

/// Rounds of the A/B mode. Each round loads both versions afresh, and a fresh process moves a
/// check's run time by several percent (its memory layout), so the rounds, not the runs in
/// each, are what narrows the ratio: ten rounds missed too many 10 % slowdowns on a busy
/// machine (docs/details.md, "Measured choices"), so 20 are the default. (The signed-rank
/// test's smallest p-value is 2^-rounds; more rounds are run for an alpha that needs them.)
const ROUNDS: u32 = 20;
/// How long A/B may add rounds for by default (`--max-time`).
pub const DEFAULT_MAX_TIME: &str = "60s";
/// The most rounds `--max-time` may add up to (a 1 ms check's round takes about 0.3 s).
pub const MAX_ROUNDS: u32 = 400;

/// How many worker processes' medians a report holds for the timing test.
pub fn process_count(s: &GateStats) -> usize {
    s.wall_process_medians
        .len()
        .max(s.cpu_process_medians.len())
}

/// Processes this run needs so that the timing test can reach `alpha` against `baseline`
/// (its path and its process medians; None: a new baseline, the same count on both sides):
/// at least `PROCESSES`; refused when even `MAX_PROCESSES` cannot.
pub fn processes(alpha: f64, baseline: Option<(&Path, &GateStats)>) -> Result<u32, UsageError> {
    let base = baseline
        .map(|(path, s)| (path, process_count(s)))
        .filter(|&(_, n)| n >= 3);
    (PROCESSES..=MAX_PROCESSES)
        .find(|&n| {
            super::stats::smallest_p(base.map_or(n as usize, |(_, b)| b), n as usize) < alpha
        })
        .ok_or_else(|| unreachable_alpha(alpha, base))
}

/// The refusal of an alpha the timing test can never meet.
fn unreachable_alpha(alpha: f64, base: Option<(&Path, usize)>) -> UsageError {
    let (n1, made) = match base {
        Some((path, n)) => (n, format!(", against the {n} of {}", path.display())),
        None => (MAX_PROCESSES as usize, String::new()),
    };
    let p = super::stats::smallest_p(n1, MAX_PROCESSES as usize);
    UsageError::flag(
        "--alpha",
        format!(
            "{alpha} cannot be met: with up to {MAX_PROCESSES} worker processes{made}, the timing test's smallest p-value is {p:.2e}, so no slowdown could ever be a regression; use a larger alpha{}",
            if base.is_some() {
                ", or make the baseline again with this one (it then runs enough processes)"
            } else {
                ""
            }
        ),
    )
}

/// Two reports compared (`--compare`) must let the timing test reach `alpha`.
pub fn comparable(alpha: f64, base: &GateStats, current: &GateStats) -> Result<(), UsageError> {
    let (n1, n2) = (process_count(base), process_count(current));
    let p = super::stats::smallest_p(n1, n2);
    if n1 >= 3 && n2 >= 3 && p >= alpha {
        return Err(UsageError::flag(
            "--alpha",
            format!(
                "{alpha} cannot be met by these reports: with {n1} and {n2} worker processes the timing test's smallest p-value is {p:.2e}; use a larger alpha, or make the reports with this one"
            ),
        ));
    }
    Ok(())
}

/// `times` timed runs spread evenly over `processes`: rounded up to a multiple of them (each
/// process's median is one sample of the timing test), said on stderr when it is.
pub fn timed_runs(times: u32, processes: u32) -> u32 {
    let runs = times.div_ceil(processes) * processes;
    if runs != times {
        eprintln!(
            "agentprof: {runs} timed runs, {} in each of {processes} worker processes ({times} rounded up: each process's median is one sample of the timing test)",
            runs / processes
        );
    }
    runs
}

/// The A/B rounds that let the paired test reach `alpha`: at least `ROUNDS`, at most 64.
pub fn ab_rounds(alpha: f64) -> Result<u32, UsageError> {
    (ROUNDS..=64)
        .find(|&n| super::stats::smallest_paired_p(n as usize) < alpha)
        .ok_or_else(|| {
            UsageError::flag(
                "--alpha",
                format!("{alpha} cannot be met by up to 64 A/B rounds"),
            )
        })
}

/// `--max-time`: 0 (no rounds added) up to a day.
pub fn max_time(text: &str) -> Result<std::time::Duration, UsageError> {
    let d = crate::duration::parse(text, 1.0).map_err(|e| UsageError::flag("--max-time", e))?;
    if d > std::time::Duration::from_secs(86_400) {
        return Err(UsageError::flag(
            "--max-time",
            format!("{text}: at most 24h (0 adds no rounds)"),
        ));
    }
    Ok(d)
}

/// What `--counter` asks to count instructions with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CounterChoice {
    Perf,
    Valgrind,
}

/// What counts instructions, when they are the measure: `asked` (`--counter`), else what
/// counted the baseline (`counted_by`, from `baseline`), else the best this machine has.
pub fn counter(
    cfg: &GateConfig,
    asked: Option<CounterChoice>,
    counted_by: Option<&str>,
    baseline: Option<&Path>,
) -> Result<Option<Counter>, UsageError> {
    if cfg.measure != Measure::Instructions {
        return match asked {
            Some(_) => Err(UsageError::flag(
                "--counter",
                "counts instructions: it goes with --measure instructions",
            )),
            None => Ok(None),
        };
    }
    let Some(asked) = asked else {
        return Counter::find(counted_by, "the baseline was counted by").map(Some);
    };
    let (want, flag) = match asked {
        CounterChoice::Perf => (super::instructions::PERF_SOURCE, "perf"),
        CounterChoice::Valgrind => ("valgrind", "valgrind"),
    };
    if let (Some(by), Some(path)) = (counted_by, baseline)
        && !by.starts_with(want)
    {
        return Err(UsageError::flag(
            "--counter",
            format!(
                "{} was counted by {by}, whose counts do not compare with {flag}'s: make the baseline again with --counter {flag}",
                path.display()
            ),
        ));
    }
    Counter::find(Some(want), &format!("--counter {flag} asks for")).map(Some)
}
