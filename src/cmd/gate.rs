//! `agentprof gate`: run a check, compare with the baseline, report, exit 0, 1 or 2.

use std::io::Write;
use std::path::Path;

use crate::checks::CheckKind;
use crate::cli::{CannotTellExit, GateArgs, GateCounter, GateFormat, GateMeasure};
use crate::config::AgentConfig;
use crate::error::UsageError;
use crate::gate::config::{GateSection, resolve};
use crate::gate::instructions::Counter;
use crate::gate::measure::{Extend, Plan, Side, load, measure, measure_ab};
use crate::gate::{GateConfig, GateStats, Measure, Mode, compare};

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
/// process alone would call that a regression. With five, the one-sided test at 0.01 needs
/// every new process slower than every baseline one, which a busy machine breaks too often
/// (docs/details.md, "Measured choices"); eight leave room for overlap.
const PROCESSES: u32 = 8;
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
    let (cfg, _) = resolve(flags(args), args.gate_config.as_deref(), None, false)?;
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
    report(args, &cfg, &base, &current, Mode::Baseline)
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
    if args.compat_base && kind != CheckKind::Python {
        return Err(UsageError::flag(
            "--compat-base",
            format!(
                "{name} is not a Python check: --compat-base is for a Python check's base class"
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
    if args.max_time.is_some() && args.against.is_none() {
        return Err(
            UsageError::flag("--max-time", "adds A/B rounds: it goes with --against").into(),
        );
    }
    if let Some(files) = &args.compare {
        return compare_files(&args, files);
    }
    let Some(name) = &args.name else {
        return Err(UsageError::flag(
            "gate",
            "give CHECK and --baseline or --against, or --compare",
        )
        .into());
    };
    let options = load_options(&args.config);
    let config = AgentConfig::load(&options)?;
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
        count: None,
        compat_base: args.compat_base,
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
    let (cfg, times) = resolve(
        flags(&args),
        args.gate_config.as_deref(),
        section,
        args.against.is_some(),
    )?;
    plan.times = times;
    fits_kind(&args, name, first.kind)?;
    if first.kind == CheckKind::Exec {
        plan.stacks = false;
    }
    let side = Side {
        config: &config,
        options: &options,
    };
    if let Some(against) = &args.against {
        // What counts instructions is found before any run, so a machine that has nothing
        // to count with costs no time.
        let counter = counter_for(&cfg, args.counter, None, None)?;
        plan.count = counter.as_ref();
        return ab(&args, &cfg, &mut plan, &side, first, against);
    }
    let Some(baseline) = &args.baseline else {
        return Err(UsageError::flag("--baseline", "give a baseline file, or --against").into());
    };
    // The baseline is read before the runs, so a missing or unusable one costs no time.
    let base = read_baseline(&args, baseline, name, &cfg)?;
    // Counted as the baseline was, where this machine can.
    let counter = counter_for(
        &cfg,
        args.counter,
        base.as_ref().and_then(|b| b.instructions_source.as_deref()),
        Some(baseline),
    )?;
    plan.count = counter.as_ref();
    // The timing test must be able to fail: enough processes for the alpha asked for.
    let base_processes = base.as_ref().map(process_count).filter(|&n| n >= 3);
    plan.processes = processes_for(cfg.alpha, base_processes).ok_or_else(|| {
        unreachable_alpha(cfg.alpha, base_processes.map(|n| (baseline.as_path(), n)))
    })?;
    let asked = plan.times;
    plan.times = plan.times.div_ceil(plan.processes) * plan.processes;
    if plan.times != asked {
        eprintln!(
            "agentprof: {} timed runs, {} in each of {} worker processes ({asked} rounded up: each process's median is one sample of the timing test)",
            plan.times,
            plan.times / plan.processes,
            plan.processes
        );
    }
    let current = measure(&side, &plan, first)?;
    let Some(base) = base else {
        write_baseline(baseline, &current)?;
        return Ok(Outcome::Success);
    };
    report(&args, &cfg, &base, &current, Mode::Baseline)
}

/// The baseline `gate` compares with (None with `--update-baseline`), refused when it was
/// made for another check or lacks what the flags ask to compare.
fn read_baseline(
    args: &GateArgs,
    baseline: &Path,
    name: &str,
    cfg: &GateConfig,
) -> anyhow::Result<Option<GateStats>> {
    if args.update_baseline {
        return Ok(None);
    }
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
    if args.memory && !base.tracemalloc {
        return Err(UsageError::flag(
            "--memory",
            format!(
                "{} has no traced allocations: make it again with --memory",
                baseline.display()
            ),
        )
        .into());
    }
    if cfg.measure == Measure::Instructions && base.instructions_per_run.is_empty() {
        return Err(UsageError::flag(
            "--measure instructions",
            format!(
                "{} has no instruction counts: make it again with --measure instructions",
                baseline.display()
            ),
        )
        .into());
    }
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
    Ok(Some(base))
}

/// `--update-baseline`: the figures written where `--baseline` names, its folder made.
fn write_baseline(baseline: &Path, current: &GateStats) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(current)?;
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
    Ok(())
}

/// What counts instructions, when they are the measure: `--counter`, else what counted the
/// baseline (`counted_by`, from `baseline`), else the best this machine has.
fn counter_for(
    cfg: &GateConfig,
    asked: Option<GateCounter>,
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
        GateCounter::Perf => (crate::gate::instructions::PERF_SOURCE, "perf"),
        GateCounter::Valgrind => ("valgrind", "valgrind"),
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

/// Rounds of the A/B mode. Each round loads both versions afresh, and a fresh process moves a
/// check's run time by several percent (its memory layout), so the rounds, not the runs in
/// each, are what narrows the ratio: ten rounds missed too many 10 % slowdowns on a busy
/// machine (docs/details.md, "Measured choices"), so 20 are the default. (The signed-rank
/// test's smallest p-value is 2^-rounds; more rounds are run for an alpha that needs them.)
const ROUNDS: u32 = 20;
/// How long A/B may add rounds for by default (`--max-time`).
const DEFAULT_MAX_TIME: &str = "60s";
/// The most rounds `--max-time` may add up to (a 1 ms check's round takes about 0.3 s).
const MAX_ROUNDS: u32 = 400;

/// `--against DIR|REV`: the baseline version's checks directory, or that directory as a git
/// revision has it, run in interleaved rounds with this one.
fn ab(
    args: &GateArgs,
    cfg: &GateConfig,
    plan: &mut Plan,
    side: &Side,
    first: crate::checks::LoadedCheck,
    against: &str,
) -> anyhow::Result<Outcome> {
    let started = std::time::Instant::now();
    let max_time = max_time(args.max_time.as_deref().unwrap_or(DEFAULT_MAX_TIME))?;
    if first.kind == CheckKind::Builtin {
        return Err(UsageError::flag(
            "--against",
            format!(
                "{} is a built-in check, part of agentprof itself: A/B compares two versions of a plugin's files; gate a built-in with --baseline, or --measure instructions",
                plan.name
            ),
        )
        .into());
    }
    if first.kind == CheckKind::Python
        && !side
            .config
            .checks_path
            .join(format!("{}.py", plan.name))
            .is_file()
    {
        return Err(UsageError::flag(
            "--against",
            format!(
                "{} is an installed integration (datadog_checks.{}), not a file in the checks directory: A/B compares two checks directories",
                plan.name, plan.name
            ),
        )
        .into());
    }
    drop(first);
    let checkout = crate::gate::against::Baseline::resolve(against, &side.config.checks_path)?;
    let mut base_config = side.config.clone();
    base_config.checks_path = checkout.checks_dir().to_path_buf();
    // A change that adds the check: the baseline version has none to compare with.
    if !crate::checks::Registry::new(&base_config).has_plugin(plan.name) {
        let verdict = crate::gate::Verdict::no_baseline(plan.name, cfg, &checkout.describe());
        return emit(args, &verdict, None);
    }
    let rounds = (ROUNDS..=64)
        .find(|&n| crate::gate::stats::smallest_paired_p(n as usize) < cfg.alpha)
        .ok_or_else(|| {
            UsageError::flag(
                "--alpha",
                format!("{} cannot be met by up to 64 A/B rounds", cfg.alpha),
            )
        })?;
    plan.processes = rounds;
    let mut base_options = side.options.clone();
    base_options.checks = Some(base_config.checks_path.clone());
    let base_side = Side {
        config: &base_config,
        options: &base_options,
    };
    eprintln!(
        "agentprof: A/B: {} from {} against this tree, {rounds} interleaved rounds",
        plan.name,
        checkout.describe()
    );
    // Timings that cannot tell yet get more rounds, within --max-time (counts are
    // deterministic: their rounds are what was planned).
    let judge = |a: &GateStats, b: &GateStats| {
        compare(a, b, cfg, Mode::Paired)
            .findings
            .first()
            .is_some_and(|f| f.status == crate::gate::Status::CannotTell)
    };
    let extend = (cfg.measure != Measure::Instructions && !max_time.is_zero()).then(|| Extend {
        until: started + max_time,
        max_rounds: MAX_ROUNDS,
        undecided: &judge,
    });
    let (a, b) = measure_ab(&base_side, side, plan, extend.as_ref())?;
    report(args, cfg, &a, &b, Mode::Paired)
}

fn report(
    args: &GateArgs,
    cfg: &GateConfig,
    base: &GateStats,
    current: &GateStats,
    mode: Mode,
) -> anyhow::Result<Outcome> {
    let verdict = compare(base, current, cfg, mode);
    let outcome = emit(args, &verdict, Some((base, current)))?;
    if let Some(path) = &args.flamegraph_diff {
        // The verdict is already out: a flamegraph that cannot be written does not hide it.
        let written = std::fs::File::create(path)
            .map_err(anyhow::Error::from)
            .and_then(|f| {
                crate::gate::write_flamegraph_diff(base, current, std::io::BufWriter::new(f))
                    .map_err(anyhow::Error::from)
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
    Ok(outcome)
}

/// The verdict in the format asked for, where asked (and in GitHub's job summary); the exit
/// it makes: 1 on a regression, 4 on CANNOT TELL with `--cannot-tell fail`, else 0.
fn emit(
    args: &GateArgs,
    verdict: &crate::gate::Verdict,
    sides: Option<(&GateStats, &GateStats)>,
) -> anyhow::Result<Outcome> {
    let text = match args.format {
        GateFormat::Table => verdict.table(),
        GateFormat::Markdown => verdict.markdown(),
        GateFormat::Junit => verdict.junit(),
        GateFormat::Json => {
            serde_json::to_string_pretty(&serde_json::json!({
                "schema": 3,
                "check": verdict.check,
                "outcome": verdict.outcome,
                "regression": verdict.regression,
                "measure": verdict.measure,
                "mode": verdict.mode,
                "source": verdict.source,
                "detectable_slowdown_pct": verdict.detectable_pct,
                "summary": verdict.summary,
                "findings": verdict.findings,
                "functions": verdict.functions,
                "baseline": sides.map(|s| s.0),
                "current": sides.map(|s| s.1),
            }))? + "\n"
        }
    };
    match &args.output {
        Some(p) => {
            std::fs::write(p, &text)
                .map_err(|e| UsageError::flag("--output", format!("{}: {e}", p.display())))?;
            // The report is in the file; the CI log still shows the verdict.
            println!("{}", verdict.summary);
        }
        None => {
            std::io::stdout().lock().write_all(text.as_bytes())?;
            if args.format != GateFormat::Table {
                eprintln!("{}", verdict.summary);
            }
        }
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
    Ok(if verdict.regression {
        Outcome::RunFailed
    } else if verdict.outcome == crate::gate::Outcome::CannotTell
        && args.cannot_tell == CannotTellExit::Fail
    {
        Outcome::Undecided
    } else {
        Outcome::Success
    })
}

/// `--max-time`: 0 (no rounds added) up to a day.
fn max_time(text: &str) -> Result<std::time::Duration, UsageError> {
    let d = crate::duration::parse(text, 1.0).map_err(|e| UsageError::flag("--max-time", e))?;
    if d > std::time::Duration::from_secs(86_400) {
        return Err(UsageError::flag(
            "--max-time",
            format!("{text}: at most 24h (0 adds no rounds)"),
        ));
    }
    Ok(d)
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
        measure: a.measure.map(|m| match m {
            GateMeasure::Cpu => Measure::Cpu,
            GateMeasure::Wall => Measure::Wall,
            GateMeasure::Instructions => Measure::Instructions,
        }),
    }
}
