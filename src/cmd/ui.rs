//! `agentprof ui`: the directories (flags, else the output directories agentprof.yaml
//! configures, else ./profiles), the address, the limits each profile is read with.

use std::path::PathBuf;

use crate::cli::{ConfdArgs, UiArgs};
use crate::config::AgentConfig;
use crate::error::UsageError;
use crate::ui::UiOptions;

use super::{Outcome, confd_options};

pub fn run(args: UiArgs) -> anyhow::Result<Outcome> {
    let agent = AgentConfig::load(&confd_options(&ConfdArgs {
        config: args.config.clone(),
        confd: None,
    }))?;
    let mut dirs = args.dirs.clone();
    if dirs.is_empty() {
        let receive = crate::receive::config::load(agent.source.as_deref())?;
        dirs.extend(receive.out_dir);
        dirs.push(agent.profile_dir.clone());
        dirs.retain(|d| d.is_dir());
        if dirs.is_empty() {
            dirs.push(PathBuf::from("profiles"));
        }
    }
    let mut roots: Vec<PathBuf> = Vec::new();
    for d in &dirs {
        let real = std::fs::canonicalize(d)
            .map_err(|e| UsageError::flag("DIR", format!("{}: {e}", d.display())))?;
        if !real.is_dir() {
            return Err(
                UsageError::flag("DIR", format!("{}: not a directory", d.display())).into(),
            );
        }
        if !roots.contains(&real) {
            roots.push(real);
        }
    }
    let mut sources = Vec::new();
    for d in &args.source_paths {
        let real = std::fs::canonicalize(d)
            .map_err(|e| UsageError::flag("--source-path", format!("{}: {e}", d.display())))?;
        if !real.is_dir() {
            return Err(UsageError::flag(
                "--source-path",
                format!("{}: not a directory", d.display()),
            )
            .into());
        }
        sources.push(real);
    }
    let listen = super::socket_addr(
        "--listen",
        args.listen.as_deref().unwrap_or("127.0.0.1:7070"),
        "127.0.0.1:7070",
    )?;
    let duration = args
        .duration
        .as_deref()
        .map(|d| crate::duration::parse(d, 1.0).map_err(|e| UsageError::flag("--duration", e)))
        .transpose()?;
    let keep_idle = crate::duration::parse(&args.keep_idle, 1.0)
        .map_err(|e| UsageError::flag("--keep-idle", e))?;
    let cache = if args.no_cache {
        None
    } else {
        args.cache_dir.clone().or_else(default_cache_dir)
    };
    let opts = UiOptions {
        keep_idle,
        cache,
        roots,
        listen,
        open: args.open,
        allow_hosts: args.allow_hosts,
        duration,
        limits: super::pprof::limits(&args.limits),
        memory: args.memory_mb << 20,
        sources,
    };
    crate::signal::install();
    let rt = crate::serve::runtime(crate::serve::Runtime::Server { blocking: 4 })?;
    Ok(rt.block_on(crate::ui::run(opts))?)
}

/// `$XDG_CACHE_HOME/agentprof/ui`, else `$HOME/.cache/agentprof/ui` (absolute paths only, as
/// the XDG base directory specification says).
fn default_cache_dir() -> Option<PathBuf> {
    let absolute = |v: std::ffi::OsString| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
    std::env::var_os("XDG_CACHE_HOME")
        .and_then(absolute)
        .or_else(|| {
            std::env::var_os("HOME")
                .and_then(absolute)
                .map(|h| h.join(".cache"))
        })
        .map(|c| c.join("agentprof").join("ui"))
}
