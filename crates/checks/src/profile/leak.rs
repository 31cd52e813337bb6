//! The leak signal: how the measured process's RSS moves across `--times N` runs. A
//! least-squares slope in bytes per run, and whether growth is steady (most steps up) rather
//! than one jump.
//!
//! Where the process lives across runs (agentprof itself for a built-in, the Python worker),
//! only what RSS gained *during* each run counts: between runs agentprof keeps each run's
//! record (its metrics and figures) and the worker builds its replies, and that is not the
//! check's. An exec plugin is a new process each run: its RSS after each run is the series.

use serde::Serialize;

use super::RunRecord;

/// Fewer runs than this say nothing about a trend.
pub const MIN_RUNS: usize = 5;

/// Fewer RSS values than this never call growth a leak: a check's first runs fill caches
/// and pools, and 4 steps out of 4 grew by chance in 2 of 4 tries of a check whose RSS was
/// flat (-163 B/run) over 50 runs. Below it, growth that would be flagged is said to need
/// more runs.
pub const LEAK_MIN_RUNS: usize = 20;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LeakTrend {
    pub runs: usize,
    /// Least-squares slope of RSS after each run, bytes per run.
    pub rss_slope_bytes_per_run: f64,
    /// Steps (from one RSS value to the next) in which RSS after the run grew.
    pub growing_steps: usize,
    pub steps: usize,
    /// RSS grew in at least 80% of the steps and by more than a page per run, in the
    /// series and in its second half, over at least [`LEAK_MIN_RUNS`] values.
    pub steady_growth: bool,
    /// The growth would be called steady but there are fewer than [`LEAK_MIN_RUNS`] values:
    /// too few runs to tell a leak from a check warming up.
    pub too_few_runs: bool,
    /// RSS values needed before growth is called a leak ([`LEAK_MIN_RUNS`]).
    pub runs_needed: usize,
    /// What the RSS values had taken out or still hold besides the check (tracemalloc).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<&'static str>,
}

const TRACER_OUT: &str = "tracemalloc's own memory taken out";
const SNAPSHOTS_IN: &str = "tracemalloc's own memory taken out, but not its per-line heap snapshots, which grow with what the check keeps: read the traced bytes kept per run";

/// The RSS series a trend reads, one value per run (successful runs, in order): with
/// `persistent` (the process lives across runs), from run to run what RSS after the run
/// moved less what it gained between runs; else RSS after each run. With `--memory`, the tracer's own memory (as tracemalloc
/// reports it) is taken out, so its bookkeeping of the check's allocations is not read as
/// the check's leak.
pub fn rss_series(records: &[&RunRecord], persistent: bool) -> Vec<f64> {
    let ok = records.iter().filter(|r| r.error.is_none());
    if !persistent {
        return ok
            .filter_map(|r| r.rss_after_untraced().map(|v| v as f64))
            .collect();
    }
    // From one run's end to the next one's: what RSS gained minus what it gained between
    // the runs (agentprof's); what it gave back between them (memory returned) counts.
    let (mut level, mut tracer_before) = (0.0, 0u64);
    let mut previous: Option<f64> = None;
    let mut out = Vec::with_capacity(records.len());
    for r in ok {
        let tracer = r.memory.as_ref().and_then(|m| m.tracer_bytes).unwrap_or(0);
        if let (Some(after), Some(before)) = (r.rss_after_untraced(), r.cost.rss_before) {
            let (after, before) = (after as f64, before.saturating_sub(tracer_before) as f64);
            if let Some(p) = previous {
                level += (after - p) - (before - p).max(0.0);
            }
            previous = Some(after);
            out.push(level);
        }
        tracer_before = tracer;
    }
    out
}

/// The trend of one instance's successful runs, in run order; `None` below `MIN_RUNS`.
/// `persistent`: the measured process lives across runs ([`rss_series`]).
pub fn trend(records: &[&RunRecord], persistent: bool) -> Option<LeakTrend> {
    let ok: Vec<&&RunRecord> = records.iter().filter(|r| r.error.is_none()).collect();
    let rss = rss_series(records, persistent);
    let mut t = trend_of(&rss, 1, rss.len())?;
    let traced = ok
        .iter()
        .filter_map(|r| r.memory.as_ref())
        .collect::<Vec<_>>();
    if traced.iter().any(|m| m.snapshots) {
        t.note = Some(SNAPSHOTS_IN);
    } else if traced.iter().any(|m| m.tracer_bytes.is_some()) {
        t.note = Some(TRACER_OUT);
    }
    Some(t)
}

/// The trend of RSS values taken every `stride` runs, out of `runs` runs in all.
pub fn trend_of(rss: &[f64], stride: usize, runs: usize) -> Option<LeakTrend> {
    if rss.len() < MIN_RUNS {
        return None;
    }
    let slope = slope_of(rss) / stride.max(1) as f64;
    let steps = rss.len() - 1;
    let growing_steps = rss.windows(2).filter(|w| w[1] > w[0]).count();
    let second_half = &rss[rss.len() / 2..];
    let grows = slope > 4096.0
        && growing_steps * 5 >= steps * 4
        && slope_of(second_half) / stride.max(1) as f64 > 4096.0;
    let enough = rss.len() >= LEAK_MIN_RUNS;
    Some(LeakTrend {
        runs,
        rss_slope_bytes_per_run: slope,
        growing_steps,
        steps,
        steady_growth: grows && enough,
        too_few_runs: grows && !enough,
        runs_needed: LEAK_MIN_RUNS * stride.max(1),
        note: None,
    })
}

/// Least-squares slope of `ys` against their index.
fn slope_of(ys: &[f64]) -> f64 {
    let n = ys.len() as f64;
    let mean_x = (n - 1.0) / 2.0;
    let mean_y = ys.iter().sum::<f64>() / n;
    let (mut sxy, mut sxx) = (0.0, 0.0);
    for (i, y) in ys.iter().enumerate() {
        let dx = i as f64 - mean_x;
        sxy += dx * (y - mean_y);
        sxx += dx * dx;
    }
    if sxx > 0.0 { sxy / sxx } else { 0.0 }
}

/// The words after a trend's figures: a leak, or too few runs to tell one.
pub fn verdict(t: &LeakTrend) -> String {
    if t.steady_growth {
        ": steady growth, a leak?".to_string()
    } else if t.too_few_runs {
        format!(
            ": growth, but too few runs to tell a leak from a check warming up ({} runs needed)",
            t.runs_needed
        )
    } else {
        String::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Flushed;
    use crate::profile::RunCost;

    fn runs(rss: &[u64]) -> Vec<RunRecord> {
        rss.iter()
            .enumerate()
            .map(|(i, &r)| {
                let cost = RunCost {
                    rss_after: Some(r),
                    ..Default::default()
                };
                RunRecord::new("x", 0, i as u32 + 1, 0.0, Ok(()), cost, Flushed::default())
            })
            .collect()
    }

    /// Under --memory the worker's RSS also holds tracemalloc's traces, which grow with every
    /// object the check keeps: that part is taken out, so 512 KiB/run reads 512 KiB/run.
    #[test]
    fn the_tracers_own_memory_is_not_the_checks_leak() {
        let mut recs = runs(&[10 << 20, 11 << 20, 12 << 20, 13 << 20, 14 << 20, 15 << 20]);
        for (i, r) in recs.iter_mut().enumerate() {
            r.memory = Some(crate::profile::MemoryProfile {
                tracer_bytes: Some((i as u64) * (512 << 10)),
                ..Default::default()
            });
        }
        let t = trend(&recs.iter().collect::<Vec<_>>(), false).unwrap();
        assert_eq!(t.rss_slope_bytes_per_run, (512 << 10) as f64);
        assert_eq!(t.note, Some(TRACER_OUT));
    }

    #[test]
    fn steady_growth_is_flagged_and_one_jump_is_not() {
        let mib: Vec<u64> = (0..20).map(|i| (100 + i) << 20).collect();
        let leak = runs(&mib);
        let t = trend(&leak.iter().collect::<Vec<_>>(), false).unwrap();
        assert_eq!(t.rss_slope_bytes_per_run, (1 << 20) as f64);
        assert!(t.steady_growth && !t.too_few_runs);
        // The same growth over 6 runs: too few to tell.
        let short = runs(&mib[..6]);
        let t = trend(&short.iter().collect::<Vec<_>>(), false).unwrap();
        assert!(!t.steady_growth && t.too_few_runs, "{t:?}");
        assert!(verdict(&t).contains("20 runs needed"), "{}", verdict(&t));
        // A check warming up: 8 runs of growth, then flat: not a leak.
        let warming: Vec<u64> = (0..20u64).map(|i| (100 + i.min(8)) << 20).collect();
        let t = trend(&runs(&warming).iter().collect::<Vec<_>>(), false).unwrap();
        assert!(!t.steady_growth && !t.too_few_runs, "{t:?}");
        let jump = runs(&[
            100 << 20,
            110 << 20,
            110 << 20,
            110 << 20,
            110 << 20,
            110 << 20,
        ]);
        assert!(
            !trend(&jump.iter().collect::<Vec<_>>(), false)
                .unwrap()
                .steady_growth
        );
        let few = runs(&[1, 2, 3]);
        assert!(trend(&few.iter().collect::<Vec<_>>(), false).is_none());
    }

    /// A process that lives across runs: growth between runs (agentprof keeping each run's
    /// record) is not the check's; growth during runs is, unless it is given back.
    #[test]
    fn only_growth_during_runs_counts_for_a_process_that_lives_across_runs() {
        let record = |before: u64, after: u64| {
            let cost = RunCost {
                rss_before: Some(before),
                rss_after: Some(after),
                ..Default::default()
            };
            RunRecord::new("x", 0, 1, 0.0, Ok(()), cost, Flushed::default())
        };
        // 24 KiB kept between runs, nothing during them.
        let kept: Vec<RunRecord> = (0..20u64)
            .map(|i| {
                record(
                    (100 << 20) + ((i * 24) << 10),
                    (100 << 20) + ((i * 24) << 10),
                )
            })
            .collect();
        let t = trend(&kept.iter().collect::<Vec<_>>(), true).unwrap();
        assert_eq!(t.rss_slope_bytes_per_run, 0.0);
        assert!(!t.steady_growth);
        let as_after = trend(&kept.iter().collect::<Vec<_>>(), false).unwrap();
        assert!(
            as_after.steady_growth,
            "read as RSS after, it looked like a leak"
        );
        // 64 KiB gained during every run: a leak.
        let leaking: Vec<RunRecord> = (0..20u64)
            .map(|i| {
                record(
                    (100 << 20) + ((i * 64) << 10),
                    (100 << 20) + (((i + 1) * 64) << 10),
                )
            })
            .collect();
        let t = trend(&leaking.iter().collect::<Vec<_>>(), true).unwrap();
        assert_eq!(t.rss_slope_bytes_per_run, (64 << 10) as f64);
        assert!(t.steady_growth);
        // 36 KiB taken during every run and given back after it: no leak.
        let transient: Vec<RunRecord> = (0..20u64)
            .map(|_| record(100 << 20, (100 << 20) + (36 << 10)))
            .collect();
        let t = trend(&transient.iter().collect::<Vec<_>>(), true).unwrap();
        assert_eq!(t.rss_slope_bytes_per_run, 0.0);
    }
}
