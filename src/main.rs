//! Thin binary: parse arguments, call the library, map the outcome to one exit-code policy.

fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(agentprof::main())
}
