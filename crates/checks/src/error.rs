//! Errors a user acts on: a usage or configuration problem (agentprof exits with status 2 on
//! one), and the shape of a folder's error that is a message.

use std::path::PathBuf;

/// A usage or configuration problem: the user must change a flag, a file or an environment value.
#[derive(Debug, thiserror::Error)]
pub enum UsageError {
    #[error("unknown check `{name}`{suggestion}")]
    UnknownCheck { name: String, suggestion: String },
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
    /// A check that cannot be imported or constructed: the Python error's `file:line` and last line.
    #[error("{0}")]
    CheckLoad(String),
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
        let path = path.into();
        // serde_yaml_ng appends " at line L column C" to its message; keep the text before it.
        let text = err.to_string();
        let message = users_words(match text.find(" at line ") {
            Some(i) => &text[..i],
            None => &text,
        });
        match err.location() {
            Some(loc) => UsageError::ConfigAt {
                path,
                line: loc.line(),
                column: loc.column(),
                message,
            },
            None => UsageError::Config { path, message },
        }
    }
}

/// serde's type names in the words of someone writing YAML: "a number", not "f64".
fn users_words(message: &str) -> String {
    let mut m = message.to_string();
    for (rust, user) in [
        ("expected f64", "expected a number"),
        ("expected f32", "expected a number"),
        ("expected u64", "expected a whole number, 0 or more"),
        ("expected u32", "expected a whole number, 0 or more"),
        ("expected u16", "expected a whole number, 0 or more"),
        ("expected u8", "expected a whole number, 0 or more"),
        ("expected usize", "expected a whole number, 0 or more"),
        ("expected i64", "expected a whole number"),
        ("expected i32", "expected a whole number"),
        ("expected a sequence", "expected a list"),
        ("expected a map", "expected a mapping"),
        ("invalid type: sequence", "invalid type: a list"),
        ("invalid type: map", "invalid type: a mapping"),
    ] {
        m = m.replace(rust, user);
    }
    m
}

/// A folder's error that is a message (what is wrong, said where it was found): a type of
/// its own, so that a signature says whose error it is; made from the message by `?` or
/// `.into()`.
#[macro_export]
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
pub use message_error;
