//! The command layer: clap arguments become plain options here, each command runs, and one
//! exit-code policy applies — 0 ok, 1 a check run (or the gate, or a collection) failed,
//! 2 usage or configuration error, 3 agentprof could not do its job (an I/O or network failure,
//! a server that never answered); a closed pipe (`agentprof … | head`) is not an error.

mod check;
mod gate;
mod generate;
mod init;
pub mod k8s;
mod list;
pub(crate) mod pprof;
mod pull;
mod receive;
mod start;
mod ui;

pub use generate::{completion_file_name, completion_script, man_pages};

use clap::Parser;

use crate::cli::{Cli, Command, ConfdArgs, ConfigArgs};
use crate::config::LoadOptions;
use crate::error::UsageError;

pub use crate::error::Outcome;

/// The exit status of a command that could not do its job (not a usage error, not a check or
/// gate that failed).
pub const RUNTIME_ERROR: u8 = 3;
/// `gate --cannot-tell fail`'s exit status when the gate could not tell.
pub const CANNOT_TELL: u8 = 4;

/// The whole command line, run: its exit status.
pub fn main() -> u8 {
    // agentprof under valgrind, counting a built-in check's instructions for `gate`.
    if let Ok(spec) = std::env::var(crate::gate::valgrind::CHILD_ENV) {
        return crate::gate::valgrind::child(&spec);
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    let result = run(cli);
    // A check run left running past a stop's grace period keeps its worker: it ends here.
    crate::signal::end_children();
    match result {
        Ok(Outcome::Success) => 0,
        Ok(Outcome::RunFailed) => 1,
        Ok(Outcome::Undecided) => CANNOT_TELL,
        Err(e) if is_broken_pipe(&e) => 0,
        Err(e) => {
            eprintln!("agentprof: {e:#}");
            if is_usage_error(&e) { 2 } else { RUNTIME_ERROR }
        }
    }
}

/// A closed stdout (`agentprof top --json | head`): the reader has what it wanted.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            || c.downcast_ref::<serde_json::Error>()
                .is_some_and(|j| j.io_error_kind() == Some(std::io::ErrorKind::BrokenPipe))
    })
}

pub fn run(cli: Cli) -> anyhow::Result<Outcome> {
    match cli.command {
        Command::Check(args) => check::run(check::CheckOptions::from_args(args)?),
        Command::Start(args) => start::run(args),
        Command::List(args) => list::run(load_options(&args.config), args.json),
        Command::Top(args) => pprof::top(args),
        Command::Gate(args) => gate::run(*args),
        Command::Pull(args) => pull::run(*args),
        Command::K8s(args) => k8s::run(*args),
        Command::Receive(args) => receive::run(*args),
        Command::Ui(args) => ui::run(args),
        Command::Diff(args) => pprof::diff(args),
        Command::Delta(args) => pprof::delta(args),
        Command::Flamegraph(args) => pprof::flamegraph(args),
        Command::Completions(args) => generate::completions(args.shell),
        Command::Man(args) => generate::man(&args.out),
        Command::Init(args) => init::run(&args.dir, args.force),
    }
}

/// A HOST:PORT flag's address, or a usage error that shows how to write one.
fn socket_addr(flag: &str, text: &str, example: &str) -> Result<std::net::SocketAddr, UsageError> {
    text.parse().map_err(|e| {
        UsageError::flag(
            flag.to_string(),
            format!("{text:?}: {e} (write HOST:PORT, e.g. {example})"),
        )
    })
}

fn confd_options(c: &ConfdArgs) -> LoadOptions {
    LoadOptions {
        config: c.config.clone(),
        confd: c.confd.clone(),
        checks: None,
        python: None,
    }
}

fn load_options(c: &ConfigArgs) -> LoadOptions {
    LoadOptions {
        checks: c.checks.clone(),
        python: c.python.clone(),
        ..confd_options(&c.files)
    }
}

/// True when `err` (or anything it wraps) is a usage or configuration error: exit 2.
pub(crate) fn is_usage_error(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<crate::error::UsageError>()
            .is_some_and(|u| u.is_usage())
            || e.downcast_ref::<agentprof_checks::Error>()
                .is_some_and(|c| c.is_usage())
    })
}

#[cfg(test)]
mod tests {
    use super::is_usage_error;
    use crate::checks::Error;
    use crate::error::UsageError;

    #[test]
    fn usage_errors_exit_2_wherever_they_sit_in_the_chain_and_the_runners_others_do_not() {
        let unknown = || Error::UnknownCheck {
            name: "dsk".into(),
            suggestion: String::new(),
        };
        let usage = [
            anyhow::Error::new(UsageError::flag("--pause", "`x` is not a duration")),
            anyhow::Error::new(unknown()),
            anyhow::Error::new(UsageError::from(unknown())),
            anyhow::Error::new(Error::CheckLoad("conf.d/x.py:3: NameError".into()))
                .context("loading check `x`"),
            anyhow::Error::new(UsageError::at("gate.yaml", 4, 1, "gate.alpha: 2".into()))
                .context("reading the gate's configuration"),
        ];
        for e in &usage {
            assert!(is_usage_error(e), "{e:#} is a usage error");
        }
        let runtime = [
            anyhow::Error::new(Error::WorkerTimeout),
            anyhow::Error::new(UsageError::from(Error::WorkerTimeout)),
            anyhow::Error::new(Error::Run("exit status 1".into())).context("a run"),
            anyhow::anyhow!("connection refused"),
        ];
        for e in &runtime {
            assert!(!is_usage_error(e), "{e:#} is not a usage error");
        }
    }
}
