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

/// Runs the check: one warm-up run, then `times` timed runs of one instance.
fn measure(args: &GateArgs, name: &str) -> anyhow::Result<GateStats> {
    let config = AgentConfig::load(&load_options(&args.config))?;
    for w in &config.warnings {
        eprintln!("agentprof: warning: {w}");
    }
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
    let host = loaded.python.clone();
    // Python checks run under cProfile, for call counts that do not drift with the machine.
    let profile = (kind == CheckKind::Python).then_some(1000);
    let mut runner = Runner::new(loaded, &config, Some(args.instance), profile, false);
    let mut progress =
        crate::progress::Progress::new(u64::from(args.times) + 1, &format!("{name}:"));
    let warm = runner.run(0, 0);
    progress.inc();
    if let Some(e) = &warm.error {
        return Err(anyhow::anyhow!("{name}: the warm-up run failed: {e}"));
    }
    let mut records = Vec::with_capacity(args.times as usize);
    for run in 1..=args.times {
        records.push(runner.run(0, run));
        progress.inc();
    }
    progress.finish();
    let pstats = host
        .as_ref()
        .and_then(|h| h.lock().ok().and_then(|mut h| h.pstats(20, false).ok()));
    Ok(GateStats::from_records(
        name,
        kind.label(),
        &records,
        pstats.as_ref(),
        args.times as usize + 1,
    ))
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
