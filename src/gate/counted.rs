//! What counting instructions yields and needs, whichever way it counts (`instructions.rs`
//! by a hardware counter, `valgrind.rs` under callgrind): the counts, their error, the warm-up
//! runs, the time a counted process may take, the scratch directory of callgrind's files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::callgrind::{CacheHits, FunctionCost};

/// Runs counted and thrown away before the counted ones: a check's first runs import, fill
/// caches and grow the allocator's pools, and count differently from the next ones.
pub(super) const WARM_UPS: u32 = 3;

/// How long a counted process may take, runs and start included: under callgrind code runs
/// 20 to 100 times slower than natively.
pub(super) const COUNT_TIMEOUT: Duration = Duration::from_secs(600);

/// A directory of callgrind's files for one count, removed with it.
pub struct ScratchDir(PathBuf);

impl ScratchDir {
    pub fn new() -> std::io::Result<ScratchDir> {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("agentprof-count-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir)?;
        Ok(ScratchDir(dir))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Why instructions could not be counted.
#[derive(Debug, thiserror::Error)]
pub enum CountError {
    /// A run, the worker or valgrind failed for this check.
    #[error("{check}: {what}")]
    Check { check: String, what: String },
    /// What counting needs of the system: a scratch directory, agentprof's own path, the
    /// counter, callgrind's files.
    #[error("{what}: {error}")]
    Io { what: String, error: std::io::Error },
    /// callgrind's files do not hold the counts asked for.
    #[error("{0}")]
    Files(String),
}

impl CountError {
    pub(super) fn check(check: &str, what: impl Into<String>) -> CountError {
        CountError::Check {
            check: check.to_string(),
            what: what.into(),
        }
    }

    /// Run `run` of `check` failed: a warm-up (the first [`WARM_UPS`]) or a counted one.
    pub(super) fn run_failed(check: &str, run: u32, why: &dyn std::fmt::Display) -> CountError {
        let which = if run <= WARM_UPS {
            format!("warm-up run {run}")
        } else {
            format!("counted run {}", run - WARM_UPS)
        };
        CountError::check(check, format!("{which} failed: {why}"))
    }

    pub(super) fn io(what: &str, error: std::io::Error) -> CountError {
        CountError::Io {
            what: what.to_string(),
            error,
        }
    }
}

/// What counting found: each counted run's instructions, and (callgrind only) each
/// function's mean instructions per counted run.
pub struct Counted {
    pub per_run: Vec<f64>,
    pub by_function: BTreeMap<String, FunctionCost>,
    /// Counted by callgrind: each counted run's cache hits (its cache simulation).
    pub cache_per_run: Vec<CacheHits>,
    /// Counted by callgrind: the counted runs' call graph folded into stacks, instructions
    /// per run (`callgrind::fold`).
    pub stacks: Vec<String>,
}
