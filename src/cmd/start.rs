//! `agentprof start`: options from the command line, then the agent, then its summary.

use std::io::Write;

use crate::agent::{self, StartOptions};
use crate::cli::StartArgs;
use crate::config::AgentConfig;
use crate::error::UsageError;

use super::{Outcome, load_options};

pub fn run(args: StartArgs) -> anyhow::Result<Outcome> {
    let duration = args
        .duration
        .as_deref()
        .map(|d| crate::duration::parse(d, 1.0).map_err(|e| UsageError::flag("--duration", e)))
        .transpose()?;
    let config = AgentConfig::load(&load_options(&args.config))?;
    for w in &config.warnings {
        eprintln!("agentprof: warning: {w}");
    }
    let opts = StartOptions {
        developer_mode: args.profile || config.developer_mode,
        duration,
        json: args.json,
        log: args.log,
        metrics_listen: args.metrics_listen,
    };
    let report = agent::run(&config, &opts)?;
    let mut out = std::io::stdout().lock();
    if opts.json {
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else {
        out.write_all(agent::render_summary(&report).as_bytes())?;
    }
    Ok(Outcome::Success)
}
