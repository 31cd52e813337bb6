//! Errors a user acts on (anything of these types in an error chain exits with status 2,
//! `cmd::is_usage_error`), and how a command that ran to the end went.

use std::path::PathBuf;

/// A usage or configuration problem: the user must change a flag, a file or an environment
/// value. It is the check runner's error of that kind (`agentprof_checks::Error::Flag`,
/// `Config`, `ConfigAt`, `UnknownCheck`, `CheckLoad`), so a flag, a file and a check are
/// said the same way everywhere.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct UsageError(agentprof_checks::Error);

/// What the check runner returns where agentprof expects a usage error (reading a file, a
/// check's configuration, loading a check); `UsageError::is_usage` says whether it is one.
impl From<agentprof_checks::Error> for UsageError {
    fn from(e: agentprof_checks::Error) -> UsageError {
        UsageError(e)
    }
}

impl UsageError {
    pub fn flag(flag: impl Into<String>, message: impl std::fmt::Display) -> Self {
        UsageError(agentprof_checks::Error::flag(flag, message))
    }

    pub fn config(path: impl Into<PathBuf>, message: impl std::fmt::Display) -> Self {
        UsageError(agentprof_checks::Error::config(path, message))
    }

    /// A file's line and column at fault.
    pub fn at(path: impl Into<PathBuf>, line: usize, column: usize, message: String) -> Self {
        UsageError(agentprof_checks::Error::ConfigAt {
            path: path.into(),
            line,
            column,
            message,
        })
    }

    /// A YAML error, with its location when the parser knows it.
    pub fn yaml(path: impl Into<PathBuf>, err: &serde_yaml_ng::Error) -> Self {
        UsageError(agentprof_checks::Error::yaml(path, err))
    }

    /// True but for a check runner's error that is not a usage error.
    pub fn is_usage(&self) -> bool {
        self.0.is_usage()
    }
}

/// A folder's error that is a message (what is wrong, said where it was found): a type of
/// its own, so that a signature says whose error it is; made from the message by `?` or
/// `.into()`.
macro_rules! message_error {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, thiserror::Error)]
        #[error("{0}")]
        pub struct $name(pub String);

        impl From<String> for $name {
            fn from(message: String) -> $name {
                $name(message)
            }
        }

        impl From<&str> for $name {
            fn from(message: &str) -> $name {
                $name(message.to_string())
            }
        }
    };
}
pub(crate) use message_error;

/// How a command that ran to the end went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Success,
    /// At least one check run failed; everything collected was still printed.
    RunFailed,
    /// `gate --cannot-tell fail`: the gate could not tell (exit 4).
    Undecided,
}
