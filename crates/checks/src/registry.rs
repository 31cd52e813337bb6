//! Which checks exist and how each is configured: plugins found in `checks_path` (an
//! executable `NAME` or `NAME.sh` is an exec plugin; `NAME.py` a Python check), integrations
//! installed in the interpreter (`datadog_checks.NAME`, as the Agent's loader finds them) and
//! the built-ins, each with its conf.d file or its default instance. A plugin with a
//! built-in's name overrides it; so does an installed integration when an interpreter was
//! chosen (with none chosen, a built-in runs without starting Python at all).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde::Serialize;

use crate::Error;
use crate::config::{AgentConfig, CheckConf, InstanceCommon};

use super::builtin::{BUILTINS, BuiltinSpec};
use super::python::PythonHost;
use super::python::installed::{self, Installed};
use super::{CheckKind, Runnable};

mod load;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", content = "path", rename_all = "snake_case")]
pub enum ConfigSource {
    File(PathBuf),
    /// Several files in `conf.d/NAME.d/` (and `NAME.yaml`), each with its own instances.
    Files(Vec<PathBuf>),
    /// No file: the check's default instance.
    Default,
}

impl ConfigSource {
    /// The source of instances read from `paths` (none: the default instance).
    pub fn of_paths(mut paths: Vec<PathBuf>) -> ConfigSource {
        match paths.len() {
            0 => ConfigSource::Default,
            1 => ConfigSource::File(paths.remove(0)),
            _ => ConfigSource::Files(paths),
        }
    }

    /// The files read, in order.
    pub fn paths(&self) -> &[PathBuf] {
        match self {
            ConfigSource::File(p) => std::slice::from_ref(p),
            ConfigSource::Files(ps) => ps,
            ConfigSource::Default => &[],
        }
    }
}

impl std::fmt::Display for ConfigSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigSource::Default => f.write_str("(default instance)"),
            source => {
                for (i, p) in source.paths().iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{}", p.display())?;
                }
                Ok(())
            }
        }
    }
}

/// A check with its instances built, ready for the runner.
pub struct LoadedCheck {
    pub name: String,
    pub kind: CheckKind,
    /// The check's version where it has one (built-ins: agentprof's).
    pub version: Option<String>,
    pub source: ConfigSource,
    pub instances: Vec<(InstanceCommon, Runnable)>,
    pub warnings: Vec<String>,
    /// The worker every instance of a Python check shares.
    pub python: Option<Arc<Mutex<PythonHost>>>,
}

impl LoadedCheck {
    /// A check of custom in-process instances, for embedding agentprof's runner (and tests).
    pub fn in_process(
        name: &str,
        instances: Vec<(InstanceCommon, Box<dyn super::Check>)>,
    ) -> LoadedCheck {
        LoadedCheck {
            name: name.to_string(),
            kind: CheckKind::Builtin,
            version: None,
            source: ConfigSource::Default,
            instances: instances
                .into_iter()
                .map(|(c, check)| (c, Runnable::InProcess(check)))
                .collect(),
            warnings: Vec::new(),
            python: None,
        }
    }
}

/// A plugin file in checks_path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Plugin {
    Exec(PathBuf),
    Python(PathBuf),
}

impl Plugin {
    pub(super) fn path(&self) -> &Path {
        match self {
            Plugin::Exec(p) | Plugin::Python(p) => p,
        }
    }
}

/// True when `program` names an executable file, directly or through $PATH.
fn interpreter_exists(program: &str) -> bool {
    if program.contains('/') {
        return is_executable(Path::new(program));
    }
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| is_executable(&d.join(program))))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

pub struct Registry<'a> {
    pub(super) config: &'a AgentConfig,
    /// Every installed integration, once asked (`list`).
    installed: std::cell::OnceCell<Vec<Installed>>,
}

/// A Python check's instances as JSON, each with its own file's `init_config` (an empty
/// mapping when absent).
fn python_config(confs: &[CheckConf]) -> (Vec<serde_json::Value>, Vec<serde_json::Value>) {
    let to_json =
        |v: &serde_yaml_ng::Value| serde_json::to_value(v).unwrap_or(serde_json::Value::Null);
    let mut inits = Vec::new();
    let mut raws = Vec::new();
    for c in confs {
        let init = match to_json(&c.init_config) {
            serde_json::Value::Null => serde_json::json!({}),
            init => init,
        };
        for inst in &c.instances {
            inits.push(init.clone());
            raws.push(to_json(inst));
        }
    }
    (inits, raws)
}

impl<'a> Registry<'a> {
    pub fn new(config: &'a AgentConfig) -> Self {
        Registry {
            config,
            installed: std::cell::OnceCell::new(),
        }
    }

    /// The integration installed as `datadog_checks.NAME` in the configured interpreter, if
    /// the interpreter can be run; a broken interpreter is a warning, not a failure, because
    /// NAME may still be a file or a built-in.
    fn installed(&self, name: &str, warnings: &mut Vec<String>) -> Option<Installed> {
        if let Some(all) = self.installed.get() {
            return all.iter().find(|i| i.name == name).cloned();
        }
        if !interpreter_exists(&self.config.python) {
            return None;
        }
        match installed::find(&self.config.python, Some(name)) {
            Ok(mut found) => found.pop(),
            Err(e) => {
                warnings.push(e.to_string());
                None
            }
        }
    }

    /// Every integration installed in the interpreter (empty when it cannot be run).
    pub(super) fn all_installed(&self) -> &[Installed] {
        self.installed.get_or_init(|| {
            if !interpreter_exists(&self.config.python) {
                return Vec::new();
            }
            installed::find(&self.config.python, None).unwrap_or_else(|e| {
                eprintln!("agentprof: warning: {e}");
                Vec::new()
            })
        })
    }

    /// Names of every check that can run: plugins and built-ins.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = BUILTINS.iter().map(|b| b.name.to_string()).collect();
        names.extend(self.plugins().into_iter().map(|(n, _)| n));
        names.sort();
        names.dedup();
        names
    }

    pub(super) fn spec(&self, name: &str) -> Option<&'static BuiltinSpec> {
        BUILTINS.iter().find(|b| b.name == name)
    }

    /// NAME is no check here. Where a configuration (or only its example) for NAME exists,
    /// the error says so: what is missing is the check's code, most often an integration
    /// installed in another interpreter than the one agentprof ran.
    fn unknown(&self, name: &str) -> Error {
        let confd = &self.config.confd_path;
        let interpreter = if self.config.python_chosen {
            format!("the interpreter `{}`", self.config.python)
        } else {
            format!(
                "`{}` (found on PATH; no --python, `python:` or $AGENTPROF_PYTHON was set)",
                self.config.python
            )
        };
        let missing = format!(
            "no check named `{name}` was found: it is not a built-in, there is no {}/{name}.py, and {interpreter} has no `datadog_checks.{name}`. {}",
            self.config.checks_path.display(),
            install_hint(name),
        );
        if let Ok(confs) = CheckConf::locate_all(confd, name)
            && let Some(conf) = confs.first()
        {
            return Error::config(conf, format!("configures `{name}`, but {missing}"));
        }
        let example = confd.join(format!("{name}.d/conf.yaml.example"));
        if example.is_file() {
            return Error::config(
                &example,
                format!(
                    "is only an example (copy it to {}/{name}.d/conf.yaml and edit it), and {missing}",
                    confd.display()
                ),
            );
        }
        Error::UnknownCheck {
            name: name.to_string(),
            suggestion: self.closest(name),
        }
    }

    /// Whether checks_path holds a plugin named NAME (`gate --against`: a check the baseline
    /// version does not have is new).
    pub fn has_plugin(&self, name: &str) -> bool {
        self.plugin(name).is_some()
    }

    /// NAME's plugin in checks_path: `NAME.py`, else an executable `NAME` or `NAME.sh`.
    fn plugin(&self, name: &str) -> Option<Plugin> {
        let dir = &self.config.checks_path;
        let py = dir.join(format!("{name}.py"));
        if py.is_file() {
            return Some(Plugin::Python(py));
        }
        [dir.join(name), dir.join(format!("{name}.sh"))]
            .into_iter()
            .find(|p| is_executable(p))
            .map(Plugin::Exec)
    }

    /// Every plugin in checks_path, by name.
    pub(super) fn plugins(&self) -> Vec<(String, Plugin)> {
        let Ok(entries) = std::fs::read_dir(&self.config.checks_path) else {
            return Vec::new();
        };
        let mut names: Vec<String> = entries
            .flatten()
            .filter_map(|e| {
                let path = e.path();
                let file = path.file_name()?.to_str()?.to_string();
                let name = match file.rsplit_once('.') {
                    Some((stem, "py" | "sh")) => stem.to_string(),
                    Some(_) => return None,
                    None => file,
                };
                (!name.is_empty() && !name.starts_with('.')).then_some(name)
            })
            .collect();
        names.sort();
        names.dedup();
        names
            .into_iter()
            .filter_map(|n| self.plugin(&n).map(|p| (n, p)))
            .collect()
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
        names.sort();
        // After `agentprof init` (its plugins are there), saying to run it leads nowhere.
        let init = if self.config.checks_path.join("http_check.py").is_file() {
            ""
        } else {
            "\n  `agentprof init` writes the plugin checks agentprof ships (directory, file_age, http_check) and example configurations"
        };
        format!(
            "{close}\n  known checks: {}\n  looked for {name}: {}\n  an integrations-core check: {}{init}",
            names.join(", "),
            self.config.check_dirs_said(),
            install_hint(name),
        )
    }

    /// Every file that configures NAME, read (see [`CheckConf::locate_all`]).
    fn confs(&self, name: &str) -> Result<Vec<CheckConf>, Error> {
        CheckConf::locate_all(&self.config.confd_path, name)?
            .iter()
            .map(|p| CheckConf::read(p))
            .collect()
    }

    /// NAME's instances as JSON, in the order the runner numbers them (a built-in without
    /// configuration runs the Agent's conf.yaml.default, an exec plugin one `{}`): what
    /// `check --instance-filter` reads.
    pub fn instance_values(&self, name: &str) -> Result<Vec<serde_json::Value>, Error> {
        let confs = self.confs(name)?;
        if confs.is_empty() {
            let default = match self.plugin(name) {
                None => self.spec(name).and_then(|s| s.default_conf()),
                Some(_) => None,
            };
            return Ok(match default {
                Some(d) => python_config(std::slice::from_ref(&d)).1,
                None => vec![serde_json::json!({})],
            });
        }
        Ok(python_config(&confs).1)
    }

    /// Loads NAME with its instances; configuration problems are usage errors (exit 2).
    ///
    /// The order: a plugin file in checks_path; a built-in when no interpreter was chosen
    /// (no Python is started for it); an integration installed in the interpreter; a
    /// built-in; else NAME is unknown (and a plugin file without its executable bit is
    /// named as such).
    pub fn load(&self, name: &str) -> Result<LoadedCheck, Error> {
        match self.plugin(name) {
            Some(Plugin::Exec(path)) => return self.load_exec(name, &path),
            Some(Plugin::Python(path)) => return self.load_python(name, Some(&path), None),
            None => {}
        }
        let spec = self.spec(name);
        if let Some(spec) = spec
            && !self.config.python_chosen
        {
            return self.load_builtin(spec);
        }
        let mut warnings = Vec::new();
        if let Some(found) = self.installed(name, &mut warnings) {
            return self.load_python(name, None, Some(found));
        }
        if let Some(spec) = spec {
            let mut loaded = self.load_builtin(spec)?;
            loaded.warnings.extend(warnings);
            return Ok(loaded);
        }
        if let Some(path) = self.not_executable(name) {
            return Err(Error::config(
                &path,
                format!(
                    "is not executable, so it is not an exec plugin (chmod +x {}); a Python check is named {name}.py",
                    path.display()
                ),
            ));
        }
        Err(self.unknown(name))
    }

    /// `checks/NAME` or `checks/NAME.sh` that exists without an executable bit.
    fn not_executable(&self, name: &str) -> Option<PathBuf> {
        let dir = &self.config.checks_path;
        [dir.join(name), dir.join(format!("{name}.sh"))]
            .into_iter()
            .find(|p| p.is_file() && !is_executable(p))
    }

    /// "NAME has no configuration…": where agentprof looked, what the Agent does (it runs no
    /// Python check without one), and the example to start from when there is one.
    fn no_conf_error(&self, name: &str, installed: Option<&Installed>) -> Error {
        let confd = self.config.confd_path.display();
        let confd_path = &self.config.confd_path;
        // `agentprof init` writes NAME.yaml.example beside the Agent's NAME.d/conf.yaml.example.
        let flat = confd_path.join(format!("{name}.yaml.example"));
        let example = [
            confd_path.join(format!("{name}.d/conf.yaml.example")),
            flat.clone(),
        ]
        .into_iter()
        .find(|p| p.is_file())
        .or_else(|| installed.and_then(|i| i.example.clone()));
        let start = match example {
            Some(example) if example == flat => format!(
                "copy {} to {confd}/{name}.yaml and edit it (`cp {} {confd}/{name}.yaml`)",
                example.display(),
                example.display()
            ),
            Some(example) => format!(
                "copy {} to {confd}/{name}.d/conf.yaml and edit it",
                example.display()
            ),
            None => format!(
                "write {confd}/{name}.d/conf.yaml with `instances: [{{}}]` to run its defaults"
            ),
        };
        Error::config(
            format!("{confd}/{name}.d/conf.yaml"),
            format!(
                "does not exist (nor {confd}/{name}.yaml, {confd}/{name}.d/*.yaml or conf.yaml.default): {name} has no configuration, and the Agent schedules no Python check without one (`agent check {name}`: no valid check found). To run it, {start}; --confd points elsewhere"
            ),
        )
    }
}

/// How an integration of integrations-core comes to run: its PyPI wheels are the Agent's
/// packaging and hold no code, so from a checkout, or in the Agent's own Python.
fn install_hint(name: &str) -> String {
    format!(
        "install it from an integrations-core checkout into a Python of your own (`VENV/bin/pip install './datadog_checks_base[deps]' ./{name}`, then --python VENV/bin/python), or run the Agent's embedded Python, which has it: --python /opt/datadog-agent/embedded/bin/python3"
    )
}

/// Each instance's common options, `run_timeout` and `service` defaulting to init_config's
/// (the Agent applies init_config's `service` to every instance; an instance's own wins).
fn commons_of(c: &CheckConf) -> Result<Vec<InstanceCommon>, Error> {
    let mut commons = c.typed_instances::<InstanceCommon>()?;
    if let Some(t) = c.init_run_timeout()? {
        for common in &mut commons {
            common.run_timeout.get_or_insert(t);
        }
    }
    if let Some(service) = c.init_service()? {
        for common in &mut commons {
            if common.service.as_deref().is_none_or(str::is_empty) {
                common.service = Some(service.clone());
            }
        }
    }
    Ok(commons)
}

/// The longest timeout or interval a configuration may ask for, in seconds (about 31 years):
/// past it a duration would overflow, and no check waits that long on purpose.
const MAX_CONFIGURED_SECS: f64 = 1e9;

fn validate_common(conf: &CheckConf, i: usize, common: &InstanceCommon) -> Result<(), Error> {
    let bad = |key: &str, msg: String| {
        let message = format!("instances[{i}].{key}: {msg}");
        match conf.key_line(key) {
            Some(line) => Error::ConfigAt {
                path: conf.path.clone(),
                line,
                column: 1,
                message,
            },
            None => Error::config(&conf.path, message),
        }
    };
    for (key, value) in [
        ("run_timeout", common.run_timeout),
        ("min_collection_interval", common.min_collection_interval),
    ] {
        if let Some(t) = value
            && !(t > 0.0 && t <= MAX_CONFIGURED_SECS)
        {
            return Err(bad(
                key,
                format!(
                    "{t} is not a number of seconds above 0 and at most {MAX_CONFIGURED_SECS:e}"
                ),
            ));
        }
    }
    for tag in &common.tags {
        if let Err(why) = crate::metrics::validate_tag(tag) {
            return Err(bad("tags", format!("`{tag}` is not a valid tag: {why}")));
        }
    }
    Ok(())
}
