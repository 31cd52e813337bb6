//! `agentprof gate`: run a check, compare with the baseline, report, exit 0, 1 or 2.

use std::io::Write;
use std::path::Path;

use crate::checks::{CheckKind, Registry, Runner};
use crate::cli::{GateArgs, GateFormat};
use crate::config::AgentConfig;
use crate::error::UsageError;
use crate::gate::{GateConfig, GateStats, compare};

use super::{Outcome, load_options};

fn read_stats(path: &Path) -> anyhow::Result<GateStats> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        UsageError::config(
            path,
            format!("cannot read: {e} (make one with --update-baseline)"),
        )
    })?;
    let doc: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| UsageError::config(path, format!("not JSON: {e}")))?;
    // A `--format json` report carries its run under "current".
    let stats = doc.get("current").cloned().unwrap_or(doc);
    serde_json::from_value(stats)
        .map_err(|e| UsageError::config(path, format!("not a gate report: {e}")).into())
}

/// Worker processes the timed runs are spread over: a process's memory layout shifts a
/// check's run time by tens of percent from one process to the next, so timings from one
/// process alone would call that a regression.
const PROCESSES: u32 = 5;

/// Runs the check: `times` timed runs of one instance, spread over up to five fresh loads
/// (for Python checks, five worker processes), each after a warm-up run.
fn measure(args: &GateArgs, name: &str) -> anyhow::Result<GateStats> {
    let config = AgentConfig::load(&load_options(&args.config))?;
    for w in &config.warnings {
        eprintln!("agentprof: warning: {w}");
    }
    let processes = PROCESSES.min(args.times);
    let per = args.times.div_ceil(processes);
    let mut progress =
        crate::progress::Progress::new(u64::from(per * processes + processes), &format!("{name}:"));
    let mut records = Vec::with_capacity((per * processes) as usize);
    let mut medians = (Vec::new(), Vec::new());
    let mut slopes = Vec::new();
    let mut calibration = Vec::new();
    let mut calls: Option<(u64, usize)> = None;
    let mut top = None;
    let mut kind_label = "";
    for _ in 0..processes {
        let loaded = Registry::new(&config).load(name)?;
        if args.instance >= loaded.instances.len() {
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
        let kind = loaded.kind;
        kind_label = kind.label();
        let host = loaded.python.clone();
        // Python checks run under cProfile, for call counts that do not drift with the machine.
        let profile = (kind == CheckKind::Python).then_some(1000);
        let mut runner = Runner::new(loaded, &config, Some(args.instance), profile, false);
        let warm = runner.run(0, 0);
        progress.inc();
        if let Some(e) = &warm.error {
            return Err(anyhow::anyhow!("{name}: the warm-up run failed: {e}"));
        }
        let speed =
            |h: &Option<std::sync::Arc<std::sync::Mutex<crate::checks::python::PythonHost>>>| {
                h.as_ref()
                    .and_then(|h| h.lock().ok().and_then(|mut h| h.calibrate().ok()))
            };
        let before = speed(&host);
        let first = records.len();
        for run in 1..=per {
            records.push(runner.run(0, run));
            progress.inc();
        }
        if let (Some(a), Some(b)) = (before, speed(&host)) {
            calibration.push((a + b) / 2.0);
        }
        let mine = GateStats::from_records(name, kind_label, &records[first..], None, 1);
        let rss: Vec<f64> = warm
            .cost
            .rss_after
            .into_iter()
            .chain(mine.rss_after.iter().copied())
            .map(|x| x as f64)
            .collect();
        slopes.extend(crate::gate::stats::slope(&rss));
        medians.0.extend(crate::gate::stats::median(&mine.wall_s));
        medians.1.extend(crate::gate::stats::median(&mine.cpu_s));
        if let Some(p) = host
            .as_ref()
            .and_then(|h| h.lock().ok().and_then(|mut h| h.pstats(20, false).ok()))
        {
            let c = calls.get_or_insert((0, 0));
            c.0 += p.total_calls;
            c.1 += per as usize + 1;
            top = Some(p);
        }
    }
    progress.finish();
    let mut stats =
        GateStats::from_records(name, kind_label, &records, top.as_ref(), per as usize + 1);
    stats.python_calls_per_run = calls.map(|(n, runs)| n as f64 / runs.max(1) as f64);
    stats.wall_process_medians = medians.0;
    stats.cpu_process_medians = medians.1;
    stats.rss_slope_per_process = slopes;
    stats.calibration_s = calibration;
    Ok(stats)
}

pub fn run(args: GateArgs) -> anyhow::Result<Outcome> {
    let cfg = GateConfig {
        time_threshold: args.threshold / 100.0,
        alpha: args.alpha,
        rss_slope_bytes: (args.rss_slope_kib * 1024) as f64,
        strict: args.strict,
        ..GateConfig::default()
    };
    if !(0.0..1.0).contains(&cfg.alpha) || cfg.time_threshold < 0.0 {
        return Err(
            UsageError::flag("--alpha/--threshold", "alpha in (0, 1), threshold ≥ 0").into(),
        );
    }
    let (base, current) = match &args.compare {
        Some(files) => (read_stats(&files[0])?, read_stats(&files[1])?),
        None => {
            let (Some(name), Some(baseline)) = (&args.name, &args.baseline) else {
                return Err(
                    UsageError::flag("gate", "give CHECK and --baseline, or --compare").into(),
                );
            };
            let current = measure(&args, name)?;
            if args.update_baseline {
                let text = serde_json::to_string_pretty(&current)?;
                std::fs::write(baseline, text + "\n").map_err(|e| {
                    UsageError::flag("--baseline", format!("{}: {e}", baseline.display()))
                })?;
                eprintln!(
                    "agentprof: wrote the baseline {} ({} runs)",
                    baseline.display(),
                    current.runs
                );
                return Ok(Outcome::Success);
            }
            (read_stats(baseline)?, current)
        }
    };
    let verdict = compare(&base, &current, &cfg);
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
    Ok(if verdict.regression {
        Outcome::RunFailed
    } else {
        Outcome::Success
    })
}
