//! Errors a user acts on (anything of these types in an error chain exits with status 2,
//! `cmd::is_usage_error`), and how a command that ran to the end went.

use std::path::PathBuf;

/// A usage or configuration problem: the user must change a flag, a file or an environment
/// value. The check runner's own (an unknown check, a check's configuration) are
/// `agentprof_checks::Error`s that say so with `is_usage`.
#[derive(Debug, thiserror::Error)]
pub enum UsageError {
    #[error("{flag}: {message}")]
    Flag { flag: String, message: String },
    #[error("{path}:{line}:{column}: {message}")]
    ConfigAt {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{path}: {message}")]
    Config { path: PathBuf, message: String },
    /// The check runner's: an unknown check, a check that cannot be loaded.
    #[error(transparent)]
    Checks(agentprof_checks::Error),
}

/// The check runner's usage errors, as agentprof's: a flag or a file at fault keeps its
/// variant; what is not a usage error (`agentprof_checks::Error::is_usage`) is carried as it
/// is, and `UsageError::is_usage` says so.
impl From<agentprof_checks::Error> for UsageError {
    fn from(e: agentprof_checks::Error) -> UsageError {
        use agentprof_checks::Error as E;
        match e {
            E::Flag { flag, message } => UsageError::Flag { flag, message },
            E::ConfigAt {
                path,
                line,
                column,
                message,
            } => UsageError::ConfigAt {
                path,
                line,
                column,
                message,
            },
            E::Config { path, message } => UsageError::Config { path, message },
            other => UsageError::Checks(other),
        }
    }
}

impl UsageError {
    pub fn flag(flag: impl Into<String>, message: impl std::fmt::Display) -> Self {
        UsageError::Flag {
            flag: flag.into(),
            message: message.to_string(),
        }
    }

    pub fn config(path: impl Into<PathBuf>, message: impl std::fmt::Display) -> Self {
        UsageError::Config {
            path: path.into(),
            message: message.to_string(),
        }
    }

    /// A YAML error, with its location when the parser knows it.
    pub fn yaml(path: impl Into<PathBuf>, err: &serde_yaml_ng::Error) -> Self {
        agentprof_checks::Error::yaml(path, err).into()
    }

    /// True but for a check runner's error that is not a usage error.
    pub fn is_usage(&self) -> bool {
        match self {
            UsageError::Checks(e) => e.is_usage(),
            _ => true,
        }
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
