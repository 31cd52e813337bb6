//! `agentprof gate`: run a check, compare with the baseline, report, exit 0, 1 or 2.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::checks::python::PythonHost;
use crate::checks::{CheckKind, LoadedCheck, Registry, Runner};
use crate::cli::{GateArgs, GateFormat};
use crate::config::AgentConfig;
use crate::error::UsageError;
use crate::gate::config::{GateSection, resolve};
use crate::gate::{GateConfig, GateStats, compare};

use super::{Outcome, load_options};

/// A baseline is a JSON document of a few hundred KiB at most; more is not one.
const MAX_BASELINE_BYTES: u64 = 64 << 20;

fn read_stats(path: &Path) -> anyhow::Result<GateStats> {
    if !path.exists() {
        return Err(UsageError::config(
            path,
            "cannot read: no such file (make one with --update-baseline)",
        )
        .into());
    }
    let bytes = crate::config::read_limited(path, MAX_BASELINE_BYTES, "")?;
    let text = String::from_utf8(bytes)
        .map_err(|_| UsageError::config(path, "not JSON: the file is not UTF-8 text"))?;
    let doc: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| UsageError::config(path, format!("not JSON: {e}")))?;
    // An `agentprof check --json` report: its runs become the statistics.
    if doc.get("schema_version").is_some() && doc.get("runs").is_some() {
        return GateStats::from_check_json(&doc).map_err(|e| UsageError::config(path, e).into());
    }
    // A `--format json` report carries its run under "current".
    let stats = doc.get("current").cloned().unwrap_or(doc);
    let stats: GateStats = serde_json::from_value(stats)
        .map_err(|e| UsageError::config(path, format!("not a gate report: {e}")))?;
    stats.validate().map_err(|e| UsageError::config(path, e))?;
    Ok(stats)
}

/// Worker processes the timed runs are spread over: a process's memory layout shifts a
/// check's run time by tens of percent from one process to the next, so timings from one
/// process alone would call that a regression.
const PROCESSES: u32 = 5;
/// The most processes the gate runs to reach a small alpha.
const MAX_PROCESSES: u32 = 40;

/// Processes this run needs so that the timing test can reach `alpha` against a baseline of
/// `base` process medians (None: a new baseline, the same count on both sides): at least
/// `PROCESSES`; None when even `MAX_PROCESSES` cannot.
fn processes_for(alpha: f64, base: Option<usize>) -> Option<u32> {
    (PROCESSES..=MAX_PROCESSES)
        .find(|&n| crate::gate::stats::smallest_p(base.unwrap_or(n as usize), n as usize) < alpha)
}

/// How many worker processes' medians a report holds for the timing test.
fn process_count(s: &GateStats) -> usize {
    s.wall_process_medians
        .len()
        .max(s.cpu_process_medians.len())
}

/// The refusal of an alpha the timing test can never meet.
fn unreachable_alpha(alpha: f64, base: Option<(&Path, usize)>) -> UsageError {
    let (n1, made) = match base {
        Some((path, n)) => (n, format!(", against the {n} of {}", path.display())),
        None => (MAX_PROCESSES as usize, String::new()),
    };
    let p = crate::gate::stats::smallest_p(n1, MAX_PROCESSES as usize);
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

/// Sampling frequency of a built-in check's stacks for `--flamegraph-diff`; those runs are
/// extra runs after the timed ones, so the sampling costs the timings nothing.
const STACK_HZ: u32 = 4999;
const STACK_TIME: std::time::Duration = std::time::Duration::from_millis(500);

/// The machine's speed right now for code that does not wait: thread CPU seconds of a fixed
/// integer loop, the median of seven. The gate divides a check's run times by it, so a machine
/// that slowed down as a whole does not look like a slower check. (Python checks time a
/// pure-Python loop in their worker instead.)
fn calibrate_native() -> f64 {
    let cpu = || {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes the timespec it is given.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
    };
    let mut times = [0.0f64; 7];
    for t in &mut times {
        let t0 = cpu();
        let (mut x, mut acc) = (0x9E37_79B9_7F4A_7C15u64, 0u64);
        for i in 0..1_000_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            acc = acc.wrapping_add(x ^ i);
        }
        std::hint::black_box(acc);
        *t = cpu() - t0;
    }
    times.sort_by(f64::total_cmp);
    times[3]
}

type Host = Option<Arc<Mutex<PythonHost>>>;

/// What each kind of check's calibration times.
fn calibration_loop(kind: CheckKind) -> &'static str {
    match kind {
        CheckKind::Python => "python-smallint-30000",
        _ => "native-xorshift-1000000",
    }
}

fn calibrate(kind: CheckKind, host: &Host) -> Option<f64> {
    match host {
        Some(h) if kind == CheckKind::Python => {
            crate::sync::lock_unless_poisoned(h).and_then(|mut h| h.calibrate().ok())
        }
        _ => Some(calibrate_native()),
    }
}

/// `name (file.py:12)` -> `name (file.py)`: a diff of two versions of a check must not see
/// every function below an inserted line as new.
fn without_line(frame: &str) -> std::borrow::Cow<'_, str> {
    if let Some(open) = frame.rfind(" (")
        && let Some(colon) = frame[open..].rfind(':')
        && frame.ends_with(')')
        && frame[open + colon + 1..frame.len() - 1]
            .bytes()
            .all(|b| b.is_ascii_digit())
    {
        return format!("{})", &frame[..open + colon]).into();
    }
    frame.into()
}

/// Folded `stack value` lines, their values in `unit_ns` nanoseconds over `runs` runs, as
/// `stack ns-per-run` lines (frames' line numbers dropped, equal stacks merged).
fn per_run(lines: &[String], unit_ns: f64, runs: usize, strip_lines: bool) -> Vec<String> {
    let mut merged: HashMap<String, f64> = HashMap::new();
    for line in lines {
        let Some((stack, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let Ok(v) = value.parse::<f64>() else {
            continue;
        };
        let key = if strip_lines {
            stack
                .split(';')
                .map(without_line)
                .collect::<Vec<_>>()
                .join(";")
        } else {
            stack.to_string()
        };
        *merged.entry(key).or_default() += v * unit_ns / runs.max(1) as f64;
    }
    prune(&mut merged);
    let mut out: Vec<String> = merged
        .into_iter()
        .filter(|(_, ns)| *ns >= 0.5)
        .map(|(s, ns)| format!("{s} {}", ns.round() as u64))
        .collect();
    out.sort();
    out
}

/// Stacks under 1/5000 of the total go to their caller's stack (its last frame cut), until
/// none is left or they are one frame deep: the baseline stays small (cProfile's caller paths
/// fan out into thousands of tiny stacks) and every frame keeps its width.
fn prune(stacks: &mut HashMap<String, f64>) {
    let floor = stacks.values().sum::<f64>() / 5000.0;
    for _ in 0..256 {
        let small: Vec<String> = stacks
            .iter()
            .filter(|(k, v)| **v < floor && k.contains(';'))
            .map(|(k, _)| k.clone())
            .collect();
        if small.is_empty() {
            break;
        }
        for k in small {
            let Some(v) = stacks.remove(&k) else { continue };
            let parent = k.rsplit_once(';').map_or("", |(p, _)| p).to_string();
            *stacks.entry(parent).or_default() += v;
        }
    }
}

struct Plan<'a> {
    name: &'a str,
    times: u32,
    /// Worker processes the timed runs are spread over (see [`processes_for`]).
    processes: u32,
    instance: usize,
    memory: bool,
    stacks: bool,
}

fn load(config: &AgentConfig, plan: &Plan) -> anyhow::Result<LoadedCheck> {
    let loaded = Registry::new(config).load(plan.name)?;
    if plan.instance >= loaded.instances.len() {
        return Err(UsageError::flag(
            "--instance",
            format!(
                "{} has {} instance(s)",
                loaded.source,
                loaded.instances.len()
            ),
        )
        .into());
    }
    Ok(loaded)
}

/// Runs the check: `times` timed runs of one instance, spread over up to five fresh loads
/// (for Python checks, five worker processes), each after a warm-up run; the machine's speed
/// measured before and after each load's runs; with `stacks`, the stacks of the last load.
fn measure(config: &AgentConfig, plan: &Plan, first: LoadedCheck) -> anyhow::Result<GateStats> {
    let name = plan.name;
    let processes = plan.processes.min(plan.times).max(1);
    let per = plan.times.div_ceil(processes);
    let kind = first.kind;
    let kind_label = kind.label();
    let native_stacks = plan.stacks && kind == CheckKind::Builtin;
    let steps = per * processes + processes + if native_stacks { per } else { 0 };
    let mut progress = crate::progress::Progress::new(u64::from(steps), &format!("{name}:"));
    let mut records = Vec::with_capacity((per * processes) as usize);
    let mut medians = (Vec::new(), Vec::new());
    let mut slopes = Vec::new();
    let mut calibration = Vec::new();
    let mut calls: Option<(u64, usize)> = None;
    let mut top = None;
    let mut stacks = Vec::new();
    let mut next = Some(first);
    for p in 0..processes {
        let last = p + 1 == processes;
        let loaded = match next.take() {
            Some(l) => l,
            None => load(config, plan)?,
        };
        let host = loaded.python.clone();
        if let Some(h) = &host {
            crate::checks::python::load(h)?;
        }
        // Python checks run under cProfile, for call counts that do not drift with the machine.
        let profile = (kind == CheckKind::Python).then_some(1000);
        let mut runner = Runner::new(loaded, config, Some(plan.instance), profile, plan.memory)
            .without_memory_lines();
        let warm = warm_up(&mut runner, &host, name)?;
        progress.inc();
        let before = calibrate(kind, &host);
        let first_run = records.len();
        for run in 1..=per {
            records.push(runner.run(0, run));
            progress.inc();
        }
        if let (Some(a), Some(b)) = (before, calibrate(kind, &host)) {
            calibration.push((a + b) / 2.0);
        }
        let (slope, wall, cpu) = load_figures(
            name,
            kind_label,
            &warm,
            &records[first_run..],
            kind.persists(),
        );
        slopes.extend(slope);
        medians.0.extend(wall);
        medians.1.extend(cpu);
        let folded = last && plan.stacks;
        if let Some(p) = host.as_ref().and_then(|h| {
            crate::sync::lock_unless_poisoned(h).and_then(|mut h| h.pstats(20, folded).ok())
        }) {
            let c = calls.get_or_insert((0, 0));
            c.0 += p.total_calls;
            c.1 += per as usize;
            if folded {
                // cProfile's microseconds over the timed runs of this worker.
                stacks = per_run(&p.folded, 1e3, per as usize, true);
            }
            top = Some(p);
        }
        if last && native_stacks {
            stacks = sampled_stacks(config, plan, per, &mut progress)?.unwrap_or(stacks);
        }
    }
    progress.finish();
    let mut stats = GateStats::from_records(name, kind_label, &records, top.as_ref(), per as usize);
    stats.python_calls_per_run = calls.map(|(n, runs)| n as f64 / runs.max(1) as f64);
    stats.wall_process_medians = medians.0;
    stats.cpu_process_medians = medians.1;
    stats.rss_slope_per_process = slopes;
    stats.calibration_s = calibration;
    stats.calibration_loop = Some(calibration_loop(kind).to_string());
    stats.tracemalloc = plan.memory;
    stats.stacks_ns_per_run = stacks;
    Ok(stats)
}

/// One load's figures: the slope of its RSS after each run (the warm-up's first), and the
/// medians of its timed runs' wall and CPU time.
fn load_figures(
    name: &str,
    kind_label: &str,
    warm: &crate::profile::RunRecord,
    timed: &[crate::profile::RunRecord],
    persists: bool,
) -> (Option<f64>, Option<f64>, Option<f64>) {
    let mine = GateStats::from_records(name, kind_label, timed, None, 1);
    let runs: Vec<&crate::profile::RunRecord> = std::iter::once(warm).chain(timed).collect();
    let rss = crate::profile::leak::rss_series(&runs, persists);
    (
        crate::gate::stats::slope(&rss),
        crate::gate::stats::median(&mine.wall_s),
        crate::gate::stats::median(&mine.cpu_s),
    )
}

/// The warm-up run, which must succeed; then the Python host's statistics are reset, so
/// call counts and stacks are of the timed runs: the warm-up's one-time imports and caches
/// are not a cost of every run.
fn warm_up(
    runner: &mut Runner,
    host: &Option<Arc<Mutex<PythonHost>>>,
    name: &str,
) -> anyhow::Result<crate::profile::RunRecord> {
    let warm = runner.run(0, 0);
    if let Some(e) = &warm.error {
        return Err(anyhow::anyhow!("{name}: the warm-up run failed: {e}"));
    }
    if let Some(h) = host
        && let Err(e) = crate::sync::lock_unless_poisoned(h)
            .ok_or(crate::checks::python::WorkerError::Unusable)
            .and_then(|mut h| h.reset_stats())
    {
        return Err(anyhow::anyhow!("{name}: {e}"));
    }
    Ok(warm)
}

/// A built-in check's stacks per run: a fresh load sampled at STACK_HZ over at least `per`
/// runs and about half a second (built-ins run for microseconds).
fn sampled_stacks(
    config: &AgentConfig,
    plan: &Plan,
    per: u32,
    progress: &mut crate::progress::Progress,
) -> anyhow::Result<Option<Vec<String>>> {
    let mut sampled = Runner::new(
        load(config, plan)?,
        config,
        Some(plan.instance),
        Some(STACK_HZ),
        false,
    );
    let (mut ok, started) = (0, std::time::Instant::now());
    for run in 1..=100_000 {
        ok += usize::from(sampled.run(0, run).error.is_none());
        if run == per {
            (0..per).for_each(|_| progress.inc());
        }
        if run >= per && started.elapsed() > STACK_TIME {
            break;
        }
    }
    Ok(sampled.finish_profile().map(|(profile, _)| {
        let lines = crate::profile::folded(&profile);
        per_run(&lines, 1e9 / f64::from(STACK_HZ), ok, false)
    }))
}

/// A baseline and a run compare only when both traced allocations (`--memory`) or neither
/// did: tracing slows Python down, so the timings would not compare.
fn same_mode(
    base: &Path,
    base_traced: bool,
    other: &str,
    other_traced: bool,
) -> Result<(), UsageError> {
    if base_traced == other_traced {
        return Ok(());
    }
    let made = |t: bool| if t { "with" } else { "without" };
    Err(UsageError::flag(
        "--memory",
        format!(
            "{} was made {} --memory and {other} {} it; tracemalloc slows Python down, so the timings would not compare: use the same for both (or make the baseline again)",
            base.display(),
            made(base_traced),
            made(other_traced)
        ),
    ))
}

/// Exit status 0 (no regression), 1 (regression) or 2: every error of the gate itself — a
/// check that cannot run, a file that cannot be written — is a 2, so CI never reads it as a
/// regression.
pub fn run(args: GateArgs) -> anyhow::Result<Outcome> {
    gate(args).map_err(|e| {
        if crate::error::is_usage_error(&e) {
            e
        } else {
            UsageError::flag("gate", format!("{e:#}")).into()
        }
    })
}

/// `--compare BASE CURRENT`: two reports compared, nothing run.
fn compare_files(args: &GateArgs, files: &[std::path::PathBuf]) -> anyhow::Result<Outcome> {
    if args.memory {
        return Err(UsageError::flag(
            "--memory",
            "with --compare, the reports say whether they traced allocations",
        )
        .into());
    }
    let (cfg, _) = resolve(flags(args), args.gate_config.as_deref(), None)?;
    let base = read_stats(&files[0])?;
    let current = read_stats(&files[1])?;
    let (n1, n2) = (process_count(&base), process_count(&current));
    let p = crate::gate::stats::smallest_p(n1, n2);
    if n1 >= 3 && n2 >= 3 && p >= cfg.alpha {
        return Err(UsageError::flag(
            "--alpha",
            format!(
                "{} cannot be met by these reports: with {n1} and {n2} worker processes the timing test's smallest p-value is {p:.2e}; use a larger alpha, or make the reports with this one",
                cfg.alpha
            ),
        )
        .into());
    }
    same_mode(
        &files[0],
        base.tracemalloc,
        &files[1].display().to_string(),
        current.tracemalloc,
    )?;
    if args.flamegraph_diff.is_some() {
        for (path, s) in [(&files[0], &base), (&files[1], &current)] {
            if s.stacks_ns_per_run.is_empty() {
                return Err(UsageError::flag(
                    "--flamegraph-diff",
                    format!("{} has no stacks (a gate run writes them with --update-baseline or --flamegraph-diff)", path.display()),
                )
                .into());
            }
        }
    }
    report(args, &cfg, &base, &current)
}

/// `--memory` is for Python checks, `--flamegraph-diff` for checks agentprof runs itself.
fn fits_kind(args: &GateArgs, name: &str, kind: CheckKind) -> Result<(), UsageError> {
    if args.memory && kind != CheckKind::Python {
        return Err(UsageError::flag(
            "--memory",
            format!(
                "{name} is not a Python check: --memory compares Python allocations (tracemalloc); RSS is compared for every check"
            ),
        ));
    }
    if args.flamegraph_diff.is_some() && kind == CheckKind::Exec {
        return Err(UsageError::flag(
            "--flamegraph-diff",
            format!(
                "{name} is an exec plugin: it runs outside agentprof, which takes no stacks of it"
            ),
        ));
    }
    Ok(())
}

fn gate(args: GateArgs) -> anyhow::Result<Outcome> {
    if let Some(files) = &args.compare {
        return compare_files(&args, files);
    }
    let (Some(name), Some(baseline)) = (&args.name, &args.baseline) else {
        return Err(UsageError::flag("gate", "give CHECK and --baseline, or --compare").into());
    };
    let config = AgentConfig::load(&load_options(&args.config))?;
    for w in &config.warnings {
        eprintln!("agentprof: warning: {w}");
    }
    let mut plan = Plan {
        name,
        times: 0,
        processes: PROCESSES,
        instance: args.instance,
        memory: args.memory,
        stacks: args.update_baseline || args.flamegraph_diff.is_some(),
    };
    let first = load(&config, &plan)?;
    // The first of the check's files with a `gate:` section.
    let mut section = None;
    for p in first.source.paths() {
        section = GateSection::from_check_conf(p)?;
        if section.is_some() {
            break;
        }
    }
    let (cfg, times) = resolve(flags(&args), args.gate_config.as_deref(), section)?;
    plan.times = times;
    fits_kind(&args, name, first.kind)?;
    if first.kind == CheckKind::Exec {
        plan.stacks = false;
    }
    // The baseline is read before the runs, so a missing or unusable one costs no time.
    let base = if args.update_baseline {
        None
    } else {
        let base = read_stats(baseline)?;
        if base.check != *name {
            return Err(UsageError::flag(
                "--baseline",
                format!(
                    "{} is the baseline of check `{}`, not of `{name}` (make one with --update-baseline)",
                    baseline.display(),
                    crate::redact::printable(&base.check)
                ),
            )
            .into());
        }
        same_mode(baseline, base.tracemalloc, "this run", args.memory)?;
        if args.flamegraph_diff.is_some() && base.stacks_ns_per_run.is_empty() {
            return Err(UsageError::flag(
                "--flamegraph-diff",
                format!(
                    "the baseline {} has no stacks: make it again with --update-baseline",
                    baseline.display()
                ),
            )
            .into());
        }
        Some(base)
    };
    // The timing test must be able to fail: enough processes for the alpha asked for.
    let base_processes = base.as_ref().map(process_count).filter(|&n| n >= 3);
    plan.processes = processes_for(cfg.alpha, base_processes).ok_or_else(|| {
        unreachable_alpha(cfg.alpha, base_processes.map(|n| (baseline.as_path(), n)))
    })?;
    plan.times = plan.times.max(plan.processes);
    let current = measure(&config, &plan, first)?;
    let Some(base) = base else {
        let text = serde_json::to_string_pretty(&current)?;
        // docs/ci.md's `--baseline perf/x.json`: the folder is made when it is not there.
        if let Some(dir) = baseline.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| UsageError::flag("--baseline", format!("{}: {e}", dir.display())))?;
        }
        std::fs::write(baseline, text + "\n")
            .map_err(|e| UsageError::flag("--baseline", format!("{}: {e}", baseline.display())))?;
        eprintln!(
            "agentprof: wrote the baseline {} ({} runs)",
            baseline.display(),
            current.runs
        );
        return Ok(Outcome::Success);
    };
    report(&args, &cfg, &base, &current)
}

fn report(
    args: &GateArgs,
    cfg: &GateConfig,
    base: &GateStats,
    current: &GateStats,
) -> anyhow::Result<Outcome> {
    let verdict = compare(base, current, cfg);
    let text = match args.format {
        GateFormat::Table => verdict.table(),
        GateFormat::Markdown => verdict.markdown(),
        GateFormat::Junit => verdict.junit(),
        GateFormat::Json => {
            serde_json::to_string_pretty(&serde_json::json!({
                "schema": 1,
                "check": verdict.check,
                "regression": verdict.regression,
                "findings": verdict.findings,
                "baseline": base,
                "current": current,
            }))? + "\n"
        }
    };
    match &args.output {
        Some(p) => std::fs::write(p, &text)
            .map_err(|e| UsageError::flag("--output", format!("{}: {e}", p.display())))?,
        None => std::io::stdout().lock().write_all(text.as_bytes())?,
    }
    // In GitHub Actions, the markdown table goes to the job's summary too.
    if let Some(summary) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|s| !s.is_empty()) {
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&summary)
            .and_then(|mut f| f.write_all(verdict.markdown().as_bytes()));
        if let Err(e) = appended {
            eprintln!("agentprof: warning: GITHUB_STEP_SUMMARY: {e}");
        }
    }
    if let Some(path) = &args.flamegraph_diff {
        // The verdict is already out: a flamegraph that cannot be written does not hide it.
        let written = std::fs::File::create(path)
            .map_err(anyhow::Error::from)
            .and_then(|f| {
                crate::gate::write_flamegraph_diff(base, current, std::io::BufWriter::new(f))
            });
        match written {
            Ok(()) => eprintln!("agentprof: wrote {}", path.display()),
            Err(e) => {
                return Err(UsageError::flag(
                    "--flamegraph-diff",
                    format!("{}: {e:#}", path.display()),
                )
                .into());
            }
        }
    }
    Ok(if verdict.regression {
        Outcome::RunFailed
    } else {
        Outcome::Success
    })
}

/// The thresholds the flags set, as a gate section (the last to override).
fn flags(a: &GateArgs) -> GateSection {
    GateSection {
        times: a.times,
        threshold: a.threshold,
        alpha: a.alpha,
        min_slowdown_us: a.min_slowdown_us,
        rss_slope_kib: a.rss_slope_kib,
        peak_rss_pct: a.peak_rss_pct,
        calls_pct: a.calls_pct,
        alloc_pct: a.alloc_pct,
        series_pct: a.series_pct,
        strict: a.strict.then_some(true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stacks_become_nanoseconds_per_run_without_line_numbers() {
        let lines = vec![
            "<module> (work.py:3);check (work.py:10);_noop (work.py:20) 30".to_string(),
            "<module> (work.py:3);check (work.py:11);_noop (work.py:21) 10".to_string(),
            "<built-in method len> 4".to_string(),
        ];
        let out = per_run(&lines, 1e3, 2, true);
        assert_eq!(
            out,
            vec![
                "<built-in method len> 2000".to_string(),
                "<module> (work.py);check (work.py);_noop (work.py) 20000".to_string(),
            ]
        );
        assert_eq!(without_line("f (a:b.py:x)"), "f (a:b.py:x)");
        assert!(calibrate_native() > 0.0);
    }
}
