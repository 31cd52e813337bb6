//! Errors a user acts on. Anything of these types in an error chain exits with status 2.

pub use agentprof_checks::error::{UsageError, message_error};

/// True when `err` (or anything it wraps) is a usage or configuration error.
pub fn is_usage_error(err: &anyhow::Error) -> bool {
    err.chain()
        .any(|e| e.downcast_ref::<UsageError>().is_some())
}

/// How a command that ran to the end went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Success,
    /// At least one check run failed; everything collected was still printed.
    RunFailed,
    /// `gate --cannot-tell fail`: the gate could not tell (exit 4).
    Undecided,
}
