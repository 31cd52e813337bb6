//! Thin binary: parse arguments, call the library, map the outcome to one exit-code policy.

use std::process::ExitCode;

fn main() -> ExitCode {
    agentprof::cmd::main()
}
