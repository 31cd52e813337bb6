//! `agentprof gate`: run a check, compare with the baseline, report, exit 0, 1 or 2.

use std::io::Write;

use crate::checks::CheckKind;
use crate::cli::{CannotTellExit, GateArgs, GateCounter, GateFormat, GateMeasure};
use crate::config::AgentConfig;
use crate::error::UsageError;
use crate::gate::config::{GateSection, resolve};
use crate::gate::measure::{Extend, Plan, Side, load, measure, measure_ab};
use crate::gate::{GateConfig, GateStats, Measure, Mode, compare};
use crate::gate::{baseline, plan};

use super::{Outcome, load_options};

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
    let base = baseline::read(&files[0])?;
    let current = baseline::read(&files[1])?;
    plan::comparable(cfg.alpha, &base, &current)?;
    if args.flamegraph_diff.is_some() {
        for (path, s) in [(&files[0], &base), (&files[1], &current)] {
            if s.stacks_ns_per_run.is_empty() && s.instruction_stacks_per_run.is_empty() {
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

/// `--memory` is for Python checks, `--flamegraph-diff` for checks agentprof runs itself or
/// whose instructions callgrind counts.
fn fits_kind(
    args: &GateArgs,
    name: &str,
    kind: CheckKind,
    measure: Measure,
) -> Result<(), UsageError> {
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
    if args.flamegraph_diff.is_some() && kind == CheckKind::Exec && measure != Measure::Instructions
    {
        return Err(UsageError::flag(
            "--flamegraph-diff",
            format!(
                "{name} is an exec plugin: it runs outside agentprof, which takes no stacks of it (with --measure instructions, callgrind's call graph gives them)"
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
        processes: plan::PROCESSES,
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
    fits_kind(&args, name, first.kind, cfg.measure)?;
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
        let counter = plan::counter(&cfg, counter_choice(&args), None, None)?;
        plan.count = counter.as_ref();
        return ab(&args, &cfg, &mut plan, &side, first, against);
    }
    let Some(baseline) = &args.baseline else {
        return Err(UsageError::flag("--baseline", "give a baseline file, or --against").into());
    };
    // The baseline is read before the runs, so a missing or unusable one costs no time.
    let wants = baseline::Wants {
        allocations: args.memory,
        stacks: args.flamegraph_diff.is_some(),
    };
    let base = match args.update_baseline {
        true => None,
        false => Some(baseline::read_for(baseline, name, &cfg, wants)?),
    };
    // Counted as the baseline was, where this machine can.
    let counter = plan::counter(
        &cfg,
        counter_choice(&args),
        base.as_ref().and_then(|b| b.instructions_source.as_deref()),
        Some(baseline),
    )?;
    plan.count = counter.as_ref();
    // The timing test must be able to fail: enough processes for the alpha asked for.
    plan.processes = plan::processes(cfg.alpha, base.as_ref().map(|b| (baseline.as_path(), b)))?;
    plan.times = plan::timed_runs(plan.times, plan.processes);
    let current = measure(&side, &plan, first)?;
    let Some(base) = base else {
        baseline::write(baseline, &current)?;
        return Ok(Outcome::Success);
    };
    report(&args, &cfg, &base, &current, Mode::Baseline)
}

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
    let max_time = plan::max_time(args.max_time.as_deref().unwrap_or(plan::DEFAULT_MAX_TIME))?;
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
    let rounds = plan::ab_rounds(cfg.alpha)?;
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
        max_rounds: plan::MAX_ROUNDS,
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
                crate::gate::write_flamegraph_diff(
                    base,
                    current,
                    cfg.measure == Measure::Instructions,
                    std::io::BufWriter::new(f),
                )
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

/// `--counter` as the gate's plan takes it.
fn counter_choice(a: &GateArgs) -> Option<plan::CounterChoice> {
    a.counter.map(|c| match c {
        GateCounter::Perf => plan::CounterChoice::Perf,
        GateCounter::Valgrind => plan::CounterChoice::Valgrind,
    })
}
