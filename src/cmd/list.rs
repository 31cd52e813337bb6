//! `agentprof list`: every check agentprof can run, where its configuration comes from, and
//! how many instances it has.

use std::io::Write;

use comfy_table::Table;
use comfy_table::presets::NOTHING;

use crate::checks::{CheckListing, Registry};
use crate::config::{AgentConfig, LoadOptions};

use super::Outcome;

pub fn run(opts: LoadOptions, json: bool) -> anyhow::Result<Outcome> {
    let config = AgentConfig::load(&opts)?;
    for w in &config.warnings {
        eprintln!("agentprof: warning: {w}");
    }
    let rows = Registry::new(&config).list();
    let mut out = std::io::stdout().lock();
    if json {
        serde_json::to_writer_pretty(
            &mut out,
            &serde_json::json!({
                "confd_path": config.confd_path,
                "checks_path": config.checks_path,
                "checks": rows,
            }),
        )?;
        writeln!(out)?;
        return Ok(Outcome::Success);
    }
    let mut t = Table::new();
    t.load_style(NOTHING).force_no_tty();
    t.set_header([
        "CHECK",
        "KIND",
        "CONFIG",
        "INSTANCES",
        "RUNS",
        "WHAT IT REPORTS",
    ]);
    for r in &rows {
        t.add_row(row(r));
    }
    for line in t.to_string().lines() {
        writeln!(out, "{}", line.trim_end())?;
    }
    for r in rows.iter().filter(|r| r.error.is_some()) {
        writeln!(
            out,
            "\n{}: {}",
            r.name,
            r.error.as_deref().unwrap_or_default()
        )?;
    }
    let missing = |p: &std::path::Path| if p.is_dir() { "" } else { " (does not exist)" };
    writeln!(
        out,
        "\nconf.d: {}{}   plugins: {}{}",
        config.confd_path.display(),
        missing(&config.confd_path),
        config.checks_path.display(),
        missing(&config.checks_path),
    )?;
    if !config.confd_path.is_dir() || !config.checks_path.is_dir() {
        writeln!(
            out,
            "(--confd and --checks, or confd_path and checks_path in agentprof.yaml, point elsewhere; `agentprof init` writes the example configurations and the plugin checks agentprof ships here)"
        )?;
    }
    Ok(Outcome::Success)
}

/// One check's row: name, kind, where its configuration comes from, instances (or `error`,
/// or `needs a file`),
/// what it runs as, and what it reports (its version, and the file that overrides a
/// built-in).
fn row(r: &CheckListing) -> Vec<String> {
    let instances = if r.needs_configuration {
        "needs a file".to_string()
    } else if r.error.is_some() {
        "error".to_string()
    } else {
        r.instances.to_string()
    };
    let summary = match &r.version {
        Some(v) => format!("{} {v}", r.summary),
        None => r.summary.clone(),
    };
    vec![
        r.name.clone(),
        r.kind.label().to_string(),
        if r.needs_configuration {
            "(none)".to_string()
        } else {
            r.source.to_string()
        },
        instances,
        r.resolves_to.clone(),
        match &r.path {
            Some(p) if r.overrides_builtin => {
                format!("{summary} ({}; overrides the built-in)", p.display())
            }
            Some(p) => format!("{summary} ({})", p.display()),
            None => summary,
        },
    ]
}
