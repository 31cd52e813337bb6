//! Errors a user acts on (anything of these types in an error chain exits with status 2,
//! `cmd::is_usage_error`), and how a command that ran to the end went.

pub use agentprof_checks::error::{UsageError, message_error};

/// How a command that ran to the end went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Success,
    /// At least one check run failed; everything collected was still printed.
    RunFailed,
    /// `gate --cannot-tell fail`: the gate could not tell (exit 4).
    Undecided,
}
