//! What stops a gate run before its verdict: a usage or configuration problem (exit 2), or a
//! check that cannot be measured (exit 3). A check that runs and gets slower is a verdict,
//! not an error.

use crate::error::UsageError;

use super::counted::CountError;

#[derive(Debug, thiserror::Error)]
pub enum GateError {
    /// A flag, a file or a configuration the user must change.
    #[error(transparent)]
    Usage(#[from] UsageError),
    /// Instructions could not be counted.
    #[error(transparent)]
    Count(#[from] CountError),
    /// The check runner's error that is not a usage error (those are `Usage`): a check that
    /// cannot be started or run.
    #[error(transparent)]
    Checks(agentprof_checks::Error),
    /// The check's instance has no run to warm up (nothing configured to run).
    #[error("{check}: no instance to warm up")]
    NoInstance { check: String },
    /// The warm-up run, which every measurement starts with, failed: nothing after it would
    /// time the check's work.
    #[error("{check}: the warm-up run failed: {why}")]
    WarmUp { check: String, why: String },
    /// The Python worker could not reset its statistics after the warm-up.
    #[error("{check}: {why}")]
    Worker { check: String, why: String },
    /// Every run of an A/B round failed on one side.
    #[error("{check}: every run of round {round} failed on the {side} side")]
    RoundFailed {
        check: String,
        round: u32,
        side: &'static str,
    },
}

/// The check runner's usage errors are the gate's usage errors; the rest stop the gate as
/// errors of their own (exit 3).
impl From<agentprof_checks::Error> for GateError {
    fn from(e: agentprof_checks::Error) -> GateError {
        if e.is_usage() {
            GateError::Usage(e.into())
        } else {
            GateError::Checks(e)
        }
    }
}
