//! The check runner's one error type. Some of its variants are usage or configuration
//! problems (`Error::is_usage`: agentprof exits with status 2 on one); the others say why a
//! run, the Python worker, a program the runner started or CPU sampling failed.

use std::path::PathBuf;

/// Everything the check runner reports as an error, said where it was found.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    // Usage and configuration: the user must change a flag, a file or an environment value.
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
    /// A built-in check's instance: the option at fault, and why.
    #[error("{option}: {message}")]
    InstanceOption {
        option: &'static str,
        message: String,
    },
    /// `--instance-filter`: what was expected, and where reading stopped.
    #[error("{0}")]
    Filter(String),

    // Values as users type them.
    #[error("empty duration")]
    DurationEmpty,
    #[error("`{0}` is not a duration (try 500ms, 2s, 1m)")]
    DurationNotANumber(String),
    #[error("`{text}`: unknown unit `{unit}` (use ns, us, ms, s, m or h)")]
    DurationUnit { text: String, unit: String },
    #[error("`{0}` is too large")]
    DurationTooLarge(String),
    #[error("`{0}` is not debug, info, warning or error")]
    LogLevel(String),
    #[error("`{0}` is not a size (e.g. 10MB)")]
    SizeNotANumber(String),
    #[error("`{text}`: unknown unit `{unit}` (use KB, MB or GB)")]
    SizeUnit { text: String, unit: String },
    #[error("`{0}` is not a usable size")]
    SizeUnusable(String),

    // One run of a check.
    /// A kernel table a built-in check reads (`/proc/stat`, `/proc/net/dev`, …).
    #[cfg(target_os = "linux")]
    #[error(transparent)]
    Proc(#[from] procfs::ProcError),
    /// Another file a built-in check reads (`/proc/mounts`, the instance's `pid_file`):
    /// which, and what is wrong with it.
    #[error("{what}: {reason}")]
    File { what: String, reason: String },
    /// Why one run of a check failed, in the words its record keeps: the check's error or
    /// exception, an exit status with the end of stderr, a timeout, a panic.
    #[error("{0}")]
    Run(String),
    /// A run over its instance's timeout (said as `duration::human` says it): the Python
    /// worker was stopped.
    #[error(
        "timed out after {after} (instance timeout); the Python worker was stopped and starts again for the next run"
    )]
    RunTimeout { after: String },

    // The Python worker.
    /// No answer before the deadline.
    #[error("the Python worker did not answer in time")]
    WorkerTimeout,
    /// The worker's end of the channel closed: it exited, with how.
    #[error("the Python worker exited{0}")]
    WorkerExited(String),
    /// Anything else: a failed write or read, a reply out of step or too large.
    #[error("{0}")]
    WorkerChannel(String),
    /// The interpreter is not there.
    #[error(
        "Python interpreter `{0}` not found: install python3, or set --python, `python:` in agentprof.yaml or $AGENTPROF_PYTHON"
    )]
    PythonNotFound(String),
    /// The worker could not be started (pipes, the process, the host program).
    #[error("{what}: {source}")]
    WorkerStart {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// The check could not be imported or constructed: the Python error's `file:line`.
    #[error("check `{check}` could not be loaded: {at}")]
    WorkerLoad { check: String, at: String },
    #[error("the Python worker is not running")]
    WorkerNotRunning,
    /// The worker answered with an error of its own (a Python exception's words).
    #[error("{0}")]
    WorkerReported(String),
    /// An answer without what it should hold.
    #[error("{0}")]
    WorkerReply(&'static str),
    /// An earlier failure left the worker's state unusable (a panic while it was held).
    #[error("the Python host is unusable after an earlier failure")]
    WorkerUnusable,

    // A program run to its end within a deadline (`run_bounded`, `stdout_of`).
    #[error("cannot start: {0}")]
    ChildStart(std::io::Error),
    /// No answer within the deadline (said as `duration::human` says it).
    #[error("no answer within {within}")]
    ChildTimeout { within: String },
    #[error("{0}")]
    ChildWait(std::io::Error),
    /// It ended with a failure: its exit status and the end of its stderr.
    #[error("{status}: {stderr}")]
    ChildFailed {
        status: std::process::ExitStatus,
        stderr: String,
    },

    // CPU sampling of a built-in check's run.
    #[error("cannot allocate the sample buffer")]
    SamplerBuffer,
    #[error("cannot read the run thread's CPU clock")]
    SamplerClock,
    #[error("cannot create the sampling timer: {0}")]
    SamplerTimer(std::io::Error),
    #[error("cannot start the sampling timer: {0}")]
    SamplerArm(std::io::Error),
    #[error("CPU sampling is supported on Linux only for now")]
    SamplerUnsupported,

    // What the runner reads besides a check's run.
    /// A DogStatsD line a check sent: what is wrong with it.
    #[error("{0}")]
    StatsdLine(String),
    /// Why the interpreter's installed integrations could not be listed.
    #[error("{0}")]
    Installed(String),
    /// Why a symbol could not be found in the Python worker's ELF files.
    #[error("{0}")]
    Symbol(String),
}

impl Error {
    /// A usage or configuration problem: the user must change a flag, a file or an
    /// environment value (agentprof exits with status 2). A value's own error (a duration, a
    /// size, a filter, an option) becomes one where its caller says whose flag or file it was.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            Error::UnknownCheck { .. }
                | Error::Flag { .. }
                | Error::ConfigAt { .. }
                | Error::Config { .. }
                | Error::CheckLoad(_)
        )
    }

    pub fn flag(flag: impl Into<String>, message: impl std::fmt::Display) -> Self {
        Error::Flag {
            flag: flag.into(),
            message: message.to_string(),
        }
    }

    pub fn config(path: impl Into<PathBuf>, message: impl std::fmt::Display) -> Self {
        Error::Config {
            path: path.into(),
            message: message.to_string(),
        }
    }

    /// A built-in check's option at fault, and why.
    pub fn option(option: &'static str, message: impl Into<String>) -> Self {
        Error::InstanceOption {
            option,
            message: message.into(),
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
            Some(loc) => Error::ConfigAt {
                path,
                line: loc.line(),
                column: loc.column(),
                message,
            },
            None => Error::Config { path, message },
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
