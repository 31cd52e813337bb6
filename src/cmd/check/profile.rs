//! `check --profile`: how often to sample, more runs of a built-in too short to sample, and
//! what the profile section shows.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::checks::{CheckKind, LoadedCheck, Runner};
use crate::profile::CallProfile;
use crate::profile::call_top;
use crate::progress::Progress;
use crate::render::pstats::PstatsView;
use crate::render::{ProfileSummary, ProfileView, PythonSampled};

use super::{CheckOptions, MIN_PROFILE_SAMPLES};

/// A built-in whose measured runs gave fewer samples than this is repeated (sampled, not
/// measured) until the profile holds this many, or for at most `REPEAT_BUDGET`.
const REPEAT_FOR_SAMPLES: u64 = 200;
const REPEAT_BUDGET: Duration = Duration::from_secs(3);

/// How often to sample the check's calls: `--profile`'s frequency, unless the check is an
/// exec plugin (it runs outside agentprof: its cost is measured, its calls are not sampled).
pub(super) fn sampling(opts: &CheckOptions, loaded: &LoadedCheck) -> Option<u32> {
    if loaded.kind == CheckKind::Exec && opts.profile {
        eprintln!(
            "agentprof: warning: --profile: {} is an exec plugin; its cost is measured, its calls are not sampled",
            loaded.name
        );
        return None;
    }
    opts.profile.then_some(opts.frequency_for(loaded.kind))
}

/// The sampled profile of the runs, said when samples were lost.
pub(super) fn finished_profile(runner: &mut Runner) -> Option<CallProfile> {
    runner.finish_profile().map(|(profile, dropped)| {
        if dropped > 0 {
            eprintln!(
                "agentprof: warning: {dropped} samples were lost because one run filled the sample buffer"
            );
        }
        profile
    })
}

/// What `--profile` shows: pstats' table for a Python check, else the sampled profile's
/// top calls with how many samples it holds and how many runs would give enough.
pub(super) fn profile_view(
    opts: &CheckOptions,
    records: &[crate::profile::RunRecord],
    profile: Option<&CallProfile>,
    repeated: u32,
    python_host: Option<&Arc<Mutex<crate::checks::PythonHost>>>,
    warmed: bool,
) -> Option<ProfileView> {
    if let (Some(host), true, false) = (python_host, opts.profile, opts.cprofile) {
        return python_sampled(&crate::sync::lock(host), opts.top, warmed).map(ProfileView::Python);
    }
    if let (Some(host), true) = (python_host, opts.profile) {
        return match crate::sync::lock(host).pstats(opts.top, opts.flamegraph.is_some()) {
            Ok(report) => Some(ProfileView::Pstats(PstatsView {
                report,
                top: opts.top,
                warm_up: warmed,
            })),
            Err(e) => {
                eprintln!("agentprof: warning: --profile: no cProfile statistics: {e}");
                None
            }
        };
    }
    let cpu: Vec<f64> = records
        .iter()
        .filter(|r| r.error.is_none())
        .filter_map(|r| r.cost.cpu_s())
        .collect();
    let cpu_per_run = (!cpu.is_empty()).then(|| cpu.iter().sum::<f64>() / cpu.len() as f64);
    profile.map(|p| {
        ProfileView::Cpu(ProfileSummary {
            frequency_hz: p.frequency_hz,
            period_ns: p.period_ns,
            samples: p.total_samples(),
            min_samples: MIN_PROFILE_SAMPLES,
            suggested_times: ProfileSummary::suggest_times(
                MIN_PROFILE_SAMPLES,
                p.period_ns,
                records.len() as u64,
                cpu_per_run,
                p.total_samples(),
            ),
            repeated,
            top: call_top(p, opts.top),
        })
    })
}

/// With `--profile` on a built-in whose measured runs gave too few samples, repeats its
/// first instance whose runs all succeeded (one that failed or timed out is not run again)
/// until the profile is worth a table; when a repetition fails, says why and goes on with the
/// next such instance, within the same budget. How many repetitions ran.
pub(super) fn repeat_for_profile(
    runner: &mut Runner,
    records: &[crate::profile::RunRecord],
    sampled: bool,
) -> u32 {
    if !sampled {
        return 0;
    }
    // The profile will be named from agentprof's line tables: read them now, beside the
    // sampled repetitions, rather than after them (the measured runs are over).
    crate::profile::prefetch_line_tables();
    let failed = |i: usize| records.iter().any(|r| r.instance == i && r.error.is_some());
    let candidates: Vec<usize> = (0..runner.instance_count())
        .filter(|&pos| !failed(runner.instance_index(pos)))
        .collect();
    let mut progress = Progress::new(REPEAT_FOR_SAMPLES, "sampling more runs:");
    // Topped up to REPEAT_FOR_SAMPLES whenever the measured runs gave fewer: at 4999 Hz
    // that is 40 ms of repetitions, and 20 samples make a thin table.
    let goal = (REPEAT_FOR_SAMPLES, REPEAT_FOR_SAMPLES);
    let started = std::time::Instant::now();
    let mut total = 0;
    for pos in candidates {
        let Some(budget) = REPEAT_BUDGET.checked_sub(started.elapsed()) else {
            break;
        };
        let (n, error) = runner.repeat_for_profile(pos, goal, budget, |have| {
            progress.set(have.min(REPEAT_FOR_SAMPLES))
        });
        total += n;
        let Some(e) = error else { break };
        progress.println(&format!(
            "agentprof: warning: --profile: a sampled repetition of instance {} failed (after {n} that ran): {e}",
            runner.instance_index(pos)
        ));
    }
    progress.finish();
    total
}

/// A Python check's sampled profile: its top `top` functions by cumulative wall time.
fn python_sampled(
    host: &crate::checks::PythonHost,
    top: usize,
    warmed: bool,
) -> Option<PythonSampled> {
    let s = host.samples()?;
    let total = s.total();
    let (rows, functions) = s.top(top);
    Some(PythonSampled {
        method: s.method.clone(),
        frequency_hz: s.frequency_hz,
        samples: total.count,
        wall_ns: total.wall_ns,
        cpu_ns: total.cpu_ns,
        runs: s.runs,
        partial_runs: s.partial_runs,
        torn: s.torn,
        sampler_cpu_ns: s.sampler_cpu_ns,
        warm_up: warmed,
        functions,
        rows,
    })
}
