//! Loading one check of the registry: its files' common options per instance, and a
//! built-in, an exec plugin or a Python check made runnable with them.

use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::Error;
use crate::config::{CheckConf, InstanceCommon};

use super::super::builtin::BuiltinSpec;
use super::super::exec::{ExecCheck, ExecInstance};
use super::super::python::installed::Installed;
use super::super::python::{self, LoadSpec, PythonCheck, PythonHost};
use super::super::{CheckKind, Runnable};
use super::{
    ConfigSource, LoadedCheck, Registry, commons_of, interpreter_exists, python_config,
    validate_common,
};

impl Registry<'_> {
    /// The check's files (none: its default instance), its source, and every instance's
    /// common options, in the files' order. With `options` (a built-in's own), any other key
    /// is warned about; a plugin gets its whole instance, so its keys are its own business
    /// (`None`).
    pub(super) fn common(
        &self,
        name: &str,
        options: Option<&[&str]>,
        warnings: &mut Vec<String>,
    ) -> Result<(Vec<CheckConf>, ConfigSource, Vec<InstanceCommon>), Error> {
        let confs = self.confs(name)?;
        let mut commons = Vec::new();
        for c in &confs {
            warnings.extend(c.yaml11_key_warnings());
            match options {
                Some(options) => warnings.extend(c.unknown_key_warnings(options)),
                None => warnings.extend(c.near_common_key_warnings()),
            }
            let of_file = commons_of(c)?;
            for (i, common) in of_file.iter().enumerate() {
                validate_common(c, i, common)?;
            }
            commons.extend(of_file);
        }
        if confs.is_empty() {
            commons.push(InstanceCommon::default());
        }
        let source = ConfigSource::of_paths(confs.iter().map(|c| c.path.clone()).collect());
        Ok((confs, source, commons))
    }

    pub(super) fn load_builtin(&self, spec: &BuiltinSpec) -> Result<LoadedCheck, Error> {
        let mut warnings = Vec::new();
        let (confs, source, commons) = self.common(spec.name, Some(spec.options), &mut warnings)?;
        let mut checks = Vec::with_capacity(commons.len());
        let default = confs.is_empty().then(|| spec.default_conf()).flatten();
        if let Some(d) = &default {
            checks.extend((spec.build)(Some(d))?);
        } else if confs.is_empty() {
            let built = (spec.build)(None).map_err(|e| {
                let confd = self.config.confd_path.display();
                let name = spec.name;
                let why = e.to_string();
                let why = why.strip_prefix("(default instance): ").unwrap_or(&why);
                Error::config(
                    format!("{confd}/{name}.yaml"),
                    format!(
                        "does not exist (nor {confd}/{name}.d/*.yaml), and {name} has no default instance that can run: {why}. Write it from {confd}/{name}.yaml.example (`agentprof init` writes the examples)"
                    ),
                )
            })?;
            checks.extend(built);
        }
        for c in &confs {
            checks.extend((spec.build)(Some(c))?);
        }
        Ok(LoadedCheck {
            name: spec.name.to_string(),
            kind: CheckKind::Builtin,
            version: Some(env!("CARGO_PKG_VERSION").to_string()),
            source,
            instances: commons
                .into_iter()
                .zip(checks.into_iter().map(Runnable::InProcess))
                .collect(),
            warnings,
            python: None,
        })
    }

    pub(super) fn load_exec(&self, name: &str, path: &Path) -> Result<LoadedCheck, Error> {
        let mut warnings = Vec::new();
        let (confs, source, commons) = self.common(name, None, &mut warnings)?;
        let mut built = Vec::with_capacity(commons.len());
        if confs.is_empty() {
            let empty = serde_yaml_ng::Value::Mapping(Default::default());
            let init = serde_yaml_ng::Value::Null;
            built.push(ExecCheck::new(path, &init, &empty, ExecInstance::default()));
        }
        for c in &confs {
            for (raw, opts) in c.instances.iter().zip(c.typed_instances::<ExecInstance>()?) {
                built.push(ExecCheck::new(path, &c.init_config, raw, opts));
            }
        }
        let instances = commons
            .into_iter()
            .zip(built)
            .map(|(common, check)| (common, Runnable::External(Box::new(check))))
            .collect();
        Ok(LoadedCheck {
            name: name.to_string(),
            kind: CheckKind::Exec,
            version: None,
            source,
            instances,
            warnings,
            python: None,
        })
    }

    /// A Python check: one worker for all its instances, started at the first run. Options
    /// are the check's own business, so only the common ones are typed here.
    pub(super) fn load_python(
        &self,
        name: &str,
        path: Option<&Path>,
        installed: Option<Installed>,
    ) -> Result<LoadedCheck, Error> {
        let python = &self.config.python;
        if !interpreter_exists(python) {
            let needed_by = path.map_or_else(|| name.to_string(), |p| p.display().to_string());
            return Err(Error::flag(
                "--python",
                format!(
                    "Python interpreter `{python}` not found (needed by {needed_by}): install python3, or set --python, `python:` in agentprof.yaml or $AGENTPROF_PYTHON"
                ),
            ));
        }
        let mut warnings = Vec::new();
        let (confs, source, commons) = self.common(name, None, &mut warnings)?;
        if confs.is_empty() {
            return Err(self.no_conf_error(name, installed.as_ref()));
        }
        let (inits, raws) = python_config(&confs);
        let check_ids = raws
            .iter()
            .zip(&inits)
            .map(|(r, init)| python::check_id(name, r, init))
            .collect();
        let host = Arc::new(Mutex::new(PythonHost::new(LoadSpec {
            python: self.config.python.clone(),
            name: name.to_string(),
            path: path.map(Path::to_path_buf),
            init_configs: inits,
            instances: raws,
            check_ids,
            config: self.agent_settings(),
            state_dir: crate::config::state_dir().join("persistent_cache"),
            wrapper: Vec::new(),
            memory: Default::default(),
            breakpoint: None,
        })));
        let instances = commons
            .into_iter()
            .enumerate()
            .map(|(index, common)| {
                let check = PythonCheck {
                    host: Arc::clone(&host),
                    index,
                };
                (common, Runnable::External(Box::new(check)))
            })
            .collect();
        Ok(LoadedCheck {
            name: name.to_string(),
            kind: CheckKind::Python,
            version: installed.and_then(|i| i.version),
            source,
            instances,
            warnings,
            python: Some(host),
        })
    }

    /// The agent settings a Python check reads through `datadog_agent.get_config`.
    pub(super) fn agent_settings(&self) -> serde_json::Value {
        serde_json::json!({
            "hostname": self.config.hostname,
            "tags": self.config.tags,
            "agentprof_version": env!("CARGO_PKG_VERSION"),
            "agent_version": self.config.agent_version,
            "enable_metadata_collection": true,
            "disable_unsafe_yaml": true,
            "histogram_aggregates": self.config.histogram.aggregates,
            "histogram_percentiles": self.config.histogram.percentiles.iter().map(|p| format!("{p}")).collect::<Vec<_>>(),
        })
    }
}
