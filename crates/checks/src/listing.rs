//! `agentprof list`: every check the registry can run, with where its configuration comes
//! from and which one a name runs when several share it.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::config::CheckConf;

use super::CheckKind;
use super::builtin::BUILTINS;
use super::registry::{ConfigSource, Plugin, Registry};

/// One row of `agentprof list`.
#[derive(Debug, Clone, Serialize)]
pub struct CheckListing {
    pub name: String,
    pub kind: CheckKind,
    /// The plugin file, for plugins; the package's directory, for installed integrations.
    pub path: Option<PathBuf>,
    /// The installed integration's version (`__about__.py`).
    pub version: Option<String>,
    /// What the name runs: `built-in`, `checks/NAME.py`, `datadog_checks.NAME`…
    pub resolves_to: String,
    /// True when this plugin replaces the built-in check of the same name.
    pub overrides_builtin: bool,
    pub source: ConfigSource,
    pub instances: usize,
    pub summary: String,
    /// Set when the configuration cannot be loaded.
    pub error: Option<String>,
    /// No file configures it and it has no default it can run (a Python check, `process`):
    /// `error` says how to write one. Not an error of a file.
    pub needs_configuration: bool,
}

impl Registry<'_> {
    /// Every check agentprof can run, with where its configuration comes from and which one
    /// a name runs when several share it.
    pub fn list(&self) -> Vec<CheckListing> {
        let plugins = self.plugins();
        let mut rows: Vec<CheckListing> = plugins
            .iter()
            .map(|(name, plugin)| {
                let (kind, summary) = match plugin {
                    Plugin::Exec(_) => (CheckKind::Exec, "exec plugin (DogStatsD on stdout)"),
                    Plugin::Python(_) => (CheckKind::Python, "Python check (AgentCheck)"),
                };
                self.listing(name, kind, Some(plugin.path()), summary)
            })
            .collect();
        for inst in self.all_installed() {
            let file = rows.iter().position(|r| r.name == inst.name);
            let builtin = self.spec(&inst.name).is_some();
            // Where the name also has a checks-directory file, the installed package is what
            // the worker imports first; the row says so.
            if let Some(i) = file {
                let r = &mut rows[i];
                if r.kind == CheckKind::Python {
                    r.resolves_to = format!("datadog_checks.{} (installed)", inst.name);
                    r.version = inst.version.clone();
                }
                continue;
            }
            let mut row = self.listing(
                &inst.name,
                CheckKind::Python,
                Some(&inst.path),
                "installed integration",
            );
            row.version = inst.version.clone();
            if builtin && !self.config.python_chosen {
                row.resolves_to = "built-in (choose an interpreter to run the integration)".into();
            } else {
                row.overrides_builtin = builtin;
            }
            rows.push(row);
        }
        for spec in BUILTINS {
            if let Some(row) = rows.iter_mut().find(|r| r.name == spec.name) {
                if row.resolves_to.starts_with("built-in") {
                    continue;
                }
                row.overrides_builtin = true;
                continue;
            }
            rows.push(self.listing(spec.name, CheckKind::Builtin, None, spec.summary));
        }
        rows.sort_by(|a, b| a.name.cmp(&b.name).then(a.kind.label().cmp(b.kind.label())));
        rows
    }

    fn listing(
        &self,
        name: &str,
        kind: CheckKind,
        path: Option<&Path>,
        summary: &str,
    ) -> CheckListing {
        let (source, instances, error, needs_configuration) = match self.load(name) {
            Ok(l) => (l.source, l.instances.len(), None, false),
            Err(e) => {
                let files =
                    CheckConf::locate_all(&self.config.confd_path, name).unwrap_or_default();
                let none = files.is_empty();
                (ConfigSource::of_paths(files), 0, Some(e.to_string()), none)
            }
        };
        let resolves_to = match (kind, path) {
            (CheckKind::Builtin, _) => "built-in".to_string(),
            (CheckKind::Python, Some(p)) if p.is_dir() => format!("datadog_checks.{name}"),
            (_, Some(p)) => p.display().to_string(),
            (_, None) => name.to_string(),
        };
        CheckListing {
            name: name.to_string(),
            kind,
            path: path.map(Path::to_path_buf),
            version: None,
            resolves_to,
            overrides_builtin: false,
            source,
            instances,
            summary: summary.to_string(),
            error,
            needs_configuration,
        }
    }
}
