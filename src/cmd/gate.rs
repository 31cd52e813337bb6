//! `agentprof gate`: run a check, compare with the baseline, report, exit 0, 1 or 2.

use std::io::Write;

use crate::cli::{CannotTellExit, GateArgs, GateCounter, GateFormat, GateMeasure};
use crate::error::UsageError;
use crate::gate::config::{GateSection, resolve};
use crate::gate::run::{Ran, Request};
use crate::gate::{GateConfig, GateStats, Measure, Mode, compare};
use crate::gate::{baseline, plan};

use super::{Outcome, load_options};

/// Exit status 0 (no regression), 1 (regression) or 2: every error of the gate itself — a
/// check that cannot run, a file that cannot be written — is a 2, so CI never reads it as a
/// regression.
pub fn run(args: GateArgs) -> anyhow::Result<Outcome> {
    gate(args).map_err(|e| {
        if super::is_usage_error(&e) {
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
    let req = Request {
        name,
        options: load_options(&args.config),
        flags: flags(&args),
        gate_config: args.gate_config.as_deref(),
        baseline: args.baseline.as_deref(),
        against: args.against.as_deref(),
        update_baseline: args.update_baseline,
        memory: args.memory,
        compat_base: args.compat_base,
        stacks: args.flamegraph_diff.is_some(),
        instance: args.instance,
        counter: counter_choice(&args),
        max_time: args.max_time.as_deref(),
    };
    match crate::gate::run::run(&req).map_err(gate_error)? {
        Ran::Measured {
            cfg,
            base,
            current,
            mode,
        } => report(&args, &cfg, &base, &current, mode),
        Ran::BaselineWritten => Ok(Outcome::Success),
        Ran::NoBaseline(verdict) => emit(&args, &verdict, None),
    }
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

/// A gate run's error as the command's: a usage or configuration error stays one (exit 2),
/// anything else stopped the measurement (exit 3).
fn gate_error(e: crate::gate::GateError) -> anyhow::Error {
    match e {
        crate::gate::GateError::Usage(u) => u.into(),
        other => other.into(),
    }
}
