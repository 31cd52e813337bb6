//! Baseline files: reading one (a gate report, or an `agentprof check --json` report) within
//! a size limit, refusing one made for another check or without what is to be compared, and
//! writing one with `--update-baseline`.

use std::path::Path;

use crate::error::UsageError;

use super::{GateConfig, GateStats, Measure};

/// A baseline is a JSON document of a few hundred KiB at most; more is not one.
const MAX_BASELINE_BYTES: u64 = 64 << 20;

/// A report read back: a gate report's statistics (or its `current` side), or an `agentprof
/// check --json` report's runs made into them.
pub fn read(path: &Path) -> Result<GateStats, UsageError> {
    if !path.exists() {
        return Err(UsageError::config(
            path,
            "cannot read: no such file (make one with --update-baseline)",
        ));
    }
    let bytes = crate::config::read_limited(path, MAX_BASELINE_BYTES, "")?;
    let text = String::from_utf8(bytes)
        .map_err(|_| UsageError::config(path, "not JSON: the file is not UTF-8 text"))?;
    let doc: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| UsageError::config(path, format!("not JSON: {e}")))?;
    // An `agentprof check --json` report: its runs become the statistics.
    if doc.get("schema_version").is_some() && doc.get("runs").is_some() {
        return GateStats::from_check_json(&doc).map_err(|e| UsageError::config(path, e));
    }
    // A `--format json` report carries its run under "current".
    let stats = doc.get("current").cloned().unwrap_or(doc);
    let stats: GateStats = serde_json::from_value(stats)
        .map_err(|e| UsageError::config(path, format!("not a gate report: {e}")))?;
    stats.validate().map_err(|e| UsageError::config(path, e))?;
    Ok(stats)
}

/// What a run is to compare beside the timing, which the baseline must hold.
#[derive(Debug, Clone, Copy, Default)]
pub struct Wants {
    /// `--memory`: traced allocations.
    pub allocations: bool,
    /// `--flamegraph-diff`: stacks.
    pub stacks: bool,
}

/// The baseline of `name` at `path`, refused when it was made for another check or lacks what
/// `wants` and the measure ask to compare.
pub fn read_for(
    path: &Path,
    name: &str,
    cfg: &GateConfig,
    wants: Wants,
) -> Result<GateStats, UsageError> {
    let base = read(path)?;
    let refuse = |flag: &str, why: String| Err(UsageError::flag(flag, why));
    if base.check != *name {
        return refuse(
            "--baseline",
            format!(
                "{} is the baseline of check `{}`, not of `{name}` (make one with --update-baseline)",
                path.display(),
                crate::redact::printable(&base.check)
            ),
        );
    }
    if wants.allocations && !base.tracemalloc {
        return refuse(
            "--memory",
            format!(
                "{} has no traced allocations: make it again with --memory",
                path.display()
            ),
        );
    }
    if cfg.measure == Measure::Instructions && base.instructions_per_run.is_empty() {
        return refuse(
            "--measure instructions",
            format!(
                "{} has no instruction counts: make it again with --measure instructions",
                path.display()
            ),
        );
    }
    if wants.stacks
        && base.stacks_ns_per_run.is_empty()
        && base.instruction_stacks_per_run.is_empty()
    {
        return refuse(
            "--flamegraph-diff",
            format!(
                "the baseline {} has no stacks: make it again with --update-baseline",
                path.display()
            ),
        );
    }
    Ok(base)
}

/// `--update-baseline`: the figures written where `--baseline` names, its folder made.
pub fn write(path: &Path, current: &GateStats) -> Result<(), UsageError> {
    let text = serde_json::to_string_pretty(current)
        .map_err(|e| UsageError::flag("--baseline", format!("{}: {e}", path.display())))?;
    // docs/ci.md's `--baseline perf/x.json`: the folder is made when it is not there.
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| UsageError::flag("--baseline", format!("{}: {e}", dir.display())))?;
    }
    std::fs::write(path, text + "\n")
        .map_err(|e| UsageError::flag("--baseline", format!("{}: {e}", path.display())))?;
    eprintln!(
        "agentprof: wrote the baseline {} ({} runs)",
        path.display(),
        current.runs
    );
    Ok(())
}
