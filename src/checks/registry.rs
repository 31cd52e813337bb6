//! Which checks exist and how each is configured: built-ins always, with their conf.d file or
//! their default instance.

use std::path::PathBuf;

use serde::Serialize;

use crate::config::{AgentConfig, CheckConf, InstanceCommon};
use crate::error::UsageError;

use super::builtin::{BUILTINS, BuiltinSpec};
use super::{Check, CheckKind};

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", content = "path", rename_all = "snake_case")]
pub enum ConfigSource {
    File(PathBuf),
    /// No file: the check's default instance.
    Default,
}

impl std::fmt::Display for ConfigSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigSource::File(p) => write!(f, "{}", p.display()),
            ConfigSource::Default => f.write_str("(default instance)"),
        }
    }
}

/// A check with its instances built, ready for the runner.
pub struct LoadedCheck {
    pub name: String,
    pub kind: CheckKind,
    pub version: String,
    pub source: ConfigSource,
    pub instances: Vec<(InstanceCommon, Box<dyn Check>)>,
    pub warnings: Vec<String>,
}

/// One row of `agentprof list`.
#[derive(Debug, Clone, Serialize)]
pub struct CheckListing {
    pub name: String,
    pub kind: CheckKind,
    pub source: ConfigSource,
    pub instances: usize,
    pub summary: String,
    /// Set when the configuration cannot be loaded.
    pub error: Option<String>,
}

pub struct Registry<'a> {
    config: &'a AgentConfig,
}

impl<'a> Registry<'a> {
    pub fn new(config: &'a AgentConfig) -> Self {
        Registry { config }
    }

    pub fn names(&self) -> Vec<&'static str> {
        BUILTINS.iter().map(|b| b.name).collect()
    }

    fn spec(&self, name: &str) -> Result<&'static BuiltinSpec, UsageError> {
        if let Some(spec) = BUILTINS.iter().find(|b| b.name == name) {
            return Ok(spec);
        }
        if let Some(plugin) = self.plugin_file(name) {
            return Err(UsageError::config(
                plugin,
                "plugin checks (Python and exec) are not supported by this agentprof version yet; \
                 it runs the built-in checks listed by `agentprof list`",
            ));
        }
        Err(UsageError::UnknownCheck {
            name: name.to_string(),
            suggestion: self.closest(name),
        })
    }

    /// A plugin file for NAME in checks_path (`NAME.py`, `NAME.sh` or `NAME`).
    fn plugin_file(&self, name: &str) -> Option<PathBuf> {
        let dir = &self.config.checks_path;
        [format!("{name}.py"), format!("{name}.sh"), name.to_string()]
            .into_iter()
            .map(|f| dir.join(f))
            .find(|p| p.is_file())
    }

    /// "; did you mean …? known checks: …", closest match first.
    fn closest(&self, name: &str) -> String {
        let mut names = self.names();
        names.sort_by(|a, b| {
            strsim::damerau_levenshtein(name, a)
                .cmp(&strsim::damerau_levenshtein(name, b))
                .then(a.cmp(b))
        });
        let close = names
            .first()
            .filter(|n| strsim::damerau_levenshtein(name, n) <= 2.max(name.len() / 3))
            .map(|n| format!("; did you mean `{n}`?"))
            .unwrap_or_default();
        format!("{close} known checks: {}", names.join(", "))
    }

    fn conf(&self, name: &str) -> Result<Option<CheckConf>, UsageError> {
        CheckConf::find(&self.config.confd_path, name)
            .map(|p| CheckConf::read(&p))
            .transpose()
    }

    /// Loads NAME with its instances; configuration problems are usage errors (exit 2).
    pub fn load(&self, name: &str) -> Result<LoadedCheck, UsageError> {
        let spec = self.spec(name)?;
        let conf = self.conf(name)?;
        let mut warnings = Vec::new();
        let (source, commons) = match &conf {
            Some(c) => {
                warnings.extend(c.unknown_key_warnings(spec.options));
                (
                    ConfigSource::File(c.path.clone()),
                    c.typed_instances::<InstanceCommon>()?,
                )
            }
            None => (ConfigSource::Default, vec![InstanceCommon::default()]),
        };
        for (i, common) in commons.iter().enumerate() {
            validate_common(conf.as_ref(), i, common)?;
        }
        let checks = (spec.build)(conf.as_ref())?;
        Ok(LoadedCheck {
            name: spec.name.to_string(),
            kind: CheckKind::Builtin,
            version: env!("CARGO_PKG_VERSION").to_string(),
            source,
            instances: commons.into_iter().zip(checks).collect(),
            warnings,
        })
    }

    /// Every check agentprof can run, with where its configuration comes from.
    pub fn list(&self) -> Vec<CheckListing> {
        BUILTINS
            .iter()
            .map(|spec| {
                let (source, instances, error) = match self.load(spec.name) {
                    Ok(l) => (l.source, l.instances.len(), None),
                    Err(e) => {
                        let source = CheckConf::find(&self.config.confd_path, spec.name)
                            .map(ConfigSource::File)
                            .unwrap_or(ConfigSource::Default);
                        (source, 0, Some(e.to_string()))
                    }
                };
                CheckListing {
                    name: spec.name.to_string(),
                    kind: CheckKind::Builtin,
                    source,
                    instances,
                    summary: spec.summary.to_string(),
                    error,
                }
            })
            .collect()
    }
}

fn validate_common(
    conf: Option<&CheckConf>,
    i: usize,
    common: &InstanceCommon,
) -> Result<(), UsageError> {
    let Some(conf) = conf else { return Ok(()) };
    let bad = |msg: String| UsageError::config(&conf.path, format!("instances[{i}].{msg}"));
    if let Some(t) = common.timeout
        && !(t > 0.0 && t.is_finite())
    {
        return Err(bad(format!(
            "timeout: {t} must be a positive number of seconds"
        )));
    }
    if let Some(t) = common.min_collection_interval
        && !(t > 0.0 && t.is_finite())
    {
        return Err(bad(format!(
            "min_collection_interval: {t} must be a positive number of seconds"
        )));
    }
    for tag in &common.tags {
        if let Err(why) = crate::metrics::validate_tag(tag) {
            return Err(bad(format!("tags: `{tag}` is not a valid tag: {why}")));
        }
    }
    Ok(())
}
