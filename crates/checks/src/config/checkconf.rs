//! One check configuration file (`conf.d/NAME.yaml` or one of `conf.d/NAME.d/*.yaml`) with
//! `init_config:` and `instances:` exactly as Datadog users write them.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_yaml_ng::Value;

use crate::Error;

/// Options every instance of every check understands. `run_timeout` is agentprof's own
/// deadline for a run: a name no integration uses, so an integration's own `timeout` (an HTTP
/// or DNS timeout) stays the check's.
pub const COMMON_INSTANCE_KEYS: &[&str] = &[
    "min_collection_interval",
    "tags",
    "run_timeout",
    "service",
    "empty_default_hostname",
];

/// Instance keys the Agent itself reads for every check (besides [`COMMON_INSTANCE_KEYS`]):
/// a near miss of one of them in a plugin's instance is most likely a typo.
const AGENT_INSTANCE_KEYS: &[&str] = &["name"];

/// init_config keys read for every check: `service` (the Agent's loader), `min_collection_interval`
/// (datadog_checks_base's default for the instances), `run_timeout` (agentprof's).
const INIT_CONFIG_KEYS: &[&str] = &["service", "min_collection_interval", "run_timeout"];

/// Top-level keys of a check file besides init_config and instances that Datadog users keep there.
const OTHER_TOP_KEYS: &[&str] = &["logs", "ad_identifiers", "gate"];

/// A check's configuration file, read and parsed as YAML.
#[derive(Debug, Clone)]
pub struct CheckConf {
    pub path: PathBuf,
    text: String,
    pub init_config: Value,
    pub instances: Vec<Value>,
    /// The instances as the YAML 1.2 reader reads them (strings as written), beside
    /// `instances`: typed options take their text from here.
    instances_as_text: Vec<Value>,
}

/// The per-instance options the runner itself uses, whatever the check.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct InstanceCommon {
    pub min_collection_interval: Option<f64>,
    pub tags: Vec<String>,
    /// Seconds a run may take (the instance's, else init_config's `run_timeout`).
    pub run_timeout: Option<f64>,
    pub service: Option<String>,
    pub empty_default_hostname: bool,
}

#[derive(Deserialize)]
#[expect(dead_code, reason = "read for its located errors only")]
struct TypedFile<T> {
    #[serde(default = "Vec::new")]
    instances: Vec<Option<T>>,
}

impl CheckConf {
    /// NAME's first configuration file in `confd` (see [`Self::locate_all`]).
    pub fn find(confd: &Path, name: &str) -> Option<PathBuf> {
        Self::locate(confd, name).ok().flatten()
    }

    /// Where NAME's configuration is, or why the file that is there cannot be one (a
    /// directory, a FIFO, a device, a dangling link or a link loop): such a file is never
    /// silently passed over for the default instance. The first of [`Self::locate_all`].
    pub fn locate(confd: &Path, name: &str) -> Result<Option<PathBuf>, Error> {
        Ok(Self::locate_all(confd, name)?.into_iter().next())
    }

    /// Every file that configures NAME, as the Agent's file provider reads conf.d:
    /// `NAME.yaml` (or `.yml`) and every `*.yaml`/`*.yml` in `NAME.d/`, each with its own
    /// `init_config` and instances, in name order; `NAME.d/conf.yaml.default` only when there
    /// is none of those. `auto_conf.yaml` (an Autodiscovery template, run by the Agent only
    /// for a matching container) and `metrics.yaml` (a JMX check's metric list) are not
    /// configurations of their own.
    pub fn locate_all(confd: &Path, name: &str) -> Result<Vec<PathBuf>, Error> {
        let dir = confd.join(format!("{name}.d"));
        let mut candidates = vec![
            confd.join(format!("{name}.yaml")),
            confd.join(format!("{name}.yml")),
        ];
        if let Ok(entries) = std::fs::read_dir(&dir) {
            let mut inside: Vec<PathBuf> = entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| {
                    let file = p.file_name().and_then(|f| f.to_str()).unwrap_or("");
                    (file.ends_with(".yaml") || file.ends_with(".yml"))
                        && !file.starts_with('.')
                        && !matches!(
                            file,
                            "auto_conf.yaml" | "auto_conf.yml" | "metrics.yaml" | "metrics.yml"
                        )
                })
                .collect();
            inside.sort();
            candidates.extend(inside);
        }
        let mut found = Vec::new();
        for p in candidates {
            if let Some(p) = usable(p)? {
                found.push(p);
            }
        }
        if found.is_empty()
            && let Some(p) = usable(dir.join("conf.yaml.default"))?
        {
            found.push(p);
        }
        Ok(found)
    }

    /// Reads and parses `path`. Syntax errors carry file:line:column.
    pub fn read(path: &Path) -> Result<CheckConf, Error> {
        let text = super::read_config_text(path)?;
        Self::parse(path, text)
    }

    /// Parses a check's file as the Agent does: YAML 1.1 values (`yes` is true, `0755` is
    /// 493; see [`super::yaml11`]), syntax errors located by the YAML reader.
    pub fn parse(path: &Path, text: String) -> Result<CheckConf, Error> {
        let mut as_text: Value =
            serde_yaml_ng::from_str(&text).map_err(|e| Error::yaml(path, &e))?;
        let _ = as_text.apply_merge();
        let instances_as_text = match as_text.get("instances") {
            Some(Value::Sequence(seq)) => seq.clone(),
            _ => Vec::new(),
        };
        let value = super::yaml11::load(&text).unwrap_or(as_text);
        let Value::Mapping(map) = value else {
            return Err(Error::config(
                path,
                "expected a mapping with `init_config:` and `instances:`",
            ));
        };
        let init_config = map.get("init_config").cloned().unwrap_or(Value::Null);
        let instances = match map.get("instances") {
            Some(Value::Sequence(seq)) => seq
                .iter()
                .map(|v| match v {
                    Value::Null => Value::Mapping(Default::default()),
                    other => other.clone(),
                })
                .collect(),
            Some(Value::Null) | None => Vec::new(),
            Some(_) => {
                let line = find_key_line(&text, "instances").unwrap_or(1);
                return Err(Error::ConfigAt {
                    path: path.to_path_buf(),
                    line,
                    column: 1,
                    message: "instances: expected a list of instances (`- key: value`)".into(),
                });
            }
        };
        if instances.is_empty() {
            return Err(Error::config(
                path,
                "no instances: add at least one under `instances:` (`- {}` runs the defaults)",
            ));
        }
        for (i, inst) in instances.iter().enumerate() {
            if !inst.is_mapping() {
                return Err(Error::config(
                    path,
                    format!("instances[{i}]: expected a mapping of options"),
                ));
            }
        }
        Ok(CheckConf {
            path: path.to_path_buf(),
            text,
            init_config,
            instances,
            instances_as_text,
        })
    }

    /// Warnings for keys no one reads: unknown top-level keys and unknown instance options.
    /// The line of the first `key:` in the file, for messages about its value.
    pub fn key_line(&self, key: &str) -> Option<usize> {
        find_key_line(&self.text, key)
    }

    pub fn unknown_key_warnings(&self, check_keys: &[&str]) -> Vec<String> {
        let mut out = Vec::new();
        let top: Vec<String> = serde_yaml_ng::from_str::<Value>(&self.text)
            .ok()
            .and_then(|v| v.as_mapping().cloned())
            .map(|m| {
                m.keys()
                    .filter_map(|k| k.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let top_known = ["init_config", "instances"]
            .iter()
            .chain(OTHER_TOP_KEYS)
            .copied()
            .collect::<Vec<_>>();
        for key in &top {
            if !top_known.contains(&key.as_str()) {
                out.push(self.unknown(key, "", &top_known));
            }
        }
        for key in self.init_config_keys() {
            if !INIT_CONFIG_KEYS.contains(&key) {
                out.push(self.unknown(key, "init_config.", INIT_CONFIG_KEYS));
            }
        }
        let known: Vec<&str> = COMMON_INSTANCE_KEYS
            .iter()
            .chain(check_keys)
            .copied()
            .collect();
        for (i, inst) in self.instances.iter().enumerate() {
            if let Some(map) = inst.as_mapping() {
                // A key YAML 1.1 reads as no text is said by `yaml11_key_warnings`.
                for key in map.keys().filter_map(Value::as_str) {
                    if !known.contains(&key) {
                        out.push(self.unknown(key, &format!("instances[{i}]."), &known));
                    }
                }
            }
        }
        out
    }

    /// For a plugin, whose other keys are its own: instance and init_config keys one or two
    /// edits away from a key read for every check (`min_colection_interval`, `tgs`,
    /// `servce`), which would be silently ignored.
    pub fn near_common_key_warnings(&self) -> Vec<String> {
        let common: Vec<&str> = COMMON_INSTANCE_KEYS
            .iter()
            .chain(AGENT_INSTANCE_KEYS)
            .copied()
            .collect();
        let mut out = Vec::new();
        for key in self.init_config_keys() {
            if let Some(c) = near_miss(key, INIT_CONFIG_KEYS) {
                out.push(format!(
                    "{}: init_config.{key}: did you mean `{c}`? ({}; `{key}` only reaches the check)",
                    self.key_at(key),
                    who_reads(c)
                ));
            }
        }
        for (i, inst) in self.instances.iter().enumerate() {
            let Some(map) = inst.as_mapping() else {
                continue;
            };
            for key in map.keys().filter_map(Value::as_str) {
                if let Some(c) = near_miss(key, &common) {
                    out.push(format!(
                        "{}: instances[{i}].{key}: did you mean `{c}`? ({}; `{key}` only reaches the check)",
                        self.key_at(key),
                        who_reads(c)
                    ));
                }
            }
        }
        out
    }

    /// Instance keys YAML 1.1 reads as something other than text (`n:` is the boolean false,
    /// `0755:` the number 493), as the Agent's loader does: said with the line and the quoting
    /// that keeps them names. Every kind of check gets these.
    pub fn yaml11_key_warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (i, (v11, v12)) in self
            .instances
            .iter()
            .zip(&self.instances_as_text)
            .enumerate()
        {
            let (Some(a), Some(b)) = (v11.as_mapping(), v12.as_mapping()) else {
                continue;
            };
            for (k11, k12) in a.keys().zip(b.keys()) {
                let (Some(text), false) = (k12.as_str(), k11.is_string()) else {
                    continue;
                };
                let read = match k11 {
                    Value::Bool(b) => format!("the boolean {b}"),
                    Value::Number(n) => format!("the number {n}"),
                    Value::Null => "null".to_string(),
                    _ => "not text".to_string(),
                };
                out.push(format!(
                    "{}: instances[{i}]: the key `{text}` is read as {read}, as the Agent's YAML 1.1 loader reads it, so no option named `{text}` reaches the check; quote it ('{text}':) to keep it a name",
                    self.key_at(text)
                ));
            }
        }
        out
    }

    /// init_config's keys, in the file's order.
    fn init_config_keys(&self) -> impl Iterator<Item = &str> {
        self.init_config
            .as_mapping()
            .into_iter()
            .flat_map(|m| m.keys().filter_map(Value::as_str))
    }

    /// `path:line` of the first `key:` in the file, else the path.
    fn key_at(&self, key: &str) -> String {
        find_key_line(&self.text, key)
            .map(|l| format!("{}:{l}", self.path.display()))
            .unwrap_or_else(|| self.path.display().to_string())
    }

    fn unknown(&self, key: &str, prefix: &str, known: &[&str]) -> String {
        let at = find_key_line(&self.text, key)
            .map(|l| format!(":{l}"))
            .unwrap_or_default();
        let hint = if key == "timeout" && known.contains(&"run_timeout") {
            " (did you mean `run_timeout`, agentprof's deadline for a run?)".to_string()
        } else {
            suggest(key, known.iter().copied())
        };
        format!(
            "{}{at}: unknown option `{prefix}{key}`, ignored{hint}",
            self.path.display(),
        )
    }

    /// `init_config`'s `run_timeout`: the default of every instance that sets none; a value
    /// that is not a number is an error at its line.
    pub fn init_run_timeout(&self) -> Result<Option<f64>, Error> {
        let Some(v) = self.init_config.get("run_timeout") else {
            return Ok(None);
        };
        v.as_f64().map(Some).ok_or_else(|| Error::ConfigAt {
            path: self.path.clone(),
            line: find_key_line(&self.text, "run_timeout").unwrap_or(1),
            column: 1,
            message: "init_config.run_timeout: expected a number of seconds".into(),
        })
    }

    /// init_config's `service`, which the Agent applies to every instance without its own.
    pub fn init_service(&self) -> Result<Option<String>, Error> {
        match self.init_config.get("service") {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.is_empty() => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(Error::ConfigAt {
                path: self.path.clone(),
                line: find_key_line(&self.text, "service").unwrap_or(1),
                column: 1,
                message: "init_config.service: expected a string".into(),
            }),
        }
    }

    /// Every instance as the check's typed options, from the values the Agent would read
    /// (YAML 1.1); a wrong type names the option and its place.
    pub fn typed_instances<T: DeserializeOwned + Default>(&self) -> Result<Vec<T>, Error> {
        let mut out = Vec::with_capacity(self.instances.len());
        let empty = Value::Mapping(Default::default());
        for (i, v11) in self.instances.iter().enumerate() {
            let v12 = match self.instances_as_text.get(i) {
                Some(Value::Null) | None => &empty,
                Some(v) => v,
            };
            match <Option<T> as serde::Deserialize>::deserialize(super::yaml11::Pair { v11, v12 }) {
                Ok(t) => out.push(t.unwrap_or_default()),
                Err(e) => return Err(self.type_error::<T>(i, &e)),
            }
        }
        Ok(out)
    }

    /// Why instance `i` does not fit the check's options, at its line where the YAML reader
    /// finds the same fault; else with the YAML 1.1 reading that made it (`on` is a boolean).
    fn type_error<T: DeserializeOwned>(&self, i: usize, e: &serde_yaml_ng::Error) -> Error {
        if let Err(located) = serde_yaml_ng::from_str::<TypedFile<T>>(&self.text) {
            return Error::yaml(&self.path, &located);
        }
        Error::config(
            &self.path,
            format!(
                "instances[{i}]: {e} (the Agent reads unquoted yes/no/on/off/y/n as booleans and 0755 as an octal number, as YAML 1.1 does: quote a value meant as text)"
            ),
        )
    }
}

/// `p` when it is a file that can be read; nothing when there is nothing at `p`; an error
/// when what is there cannot be a configuration file.
fn usable(p: PathBuf) -> Result<Option<PathBuf>, Error> {
    let Ok(link) = std::fs::symlink_metadata(&p) else {
        return Ok(None);
    };
    let why = match std::fs::metadata(&p) {
        Ok(m) if m.is_file() => return Ok(Some(p)),
        Ok(m) if m.is_dir() => "is a directory, not a configuration file".to_string(),
        Ok(_) => "is not a regular file (a FIFO, socket or device)".to_string(),
        Err(e) if link.file_type().is_symlink() => {
            if e.raw_os_error() == Some(libc::ELOOP) {
                "is a symbolic link loop".to_string()
            } else {
                format!("is a symbolic link to nothing readable ({e})")
            }
        }
        Err(e) => format!("cannot be read: {e}"),
    };
    Err(Error::config(&p, why))
}

/// The key of `known` that `key` most likely misspells: one letter dropped or swapped for a
/// short key (`tgs`, `tgas`; not `names`, a check's own word), two edits for a long one.
fn near_miss<'a>(key: &str, known: &[&'a str]) -> Option<&'a str> {
    if known.contains(&key) || key.len() < 3 {
        return None;
    }
    known.iter().copied().find(|c| {
        let d = strsim::damerau_levenshtein(key, c);
        if c.len() <= 5 {
            d == 1 && key.len() <= c.len()
        } else {
            d > 0 && d <= 2
        }
    })
}

/// Who reads a key common to every check, said in a near-miss warning.
fn who_reads(key: &str) -> &'static str {
    match key {
        "tags" => {
            "agentprof adds an instance's `tags` to an exec plugin's and a built-in's submissions; a Python check reads them itself"
        }
        "run_timeout" => "agentprof reads `run_timeout` for every check",
        "min_collection_interval" => {
            "the Agent schedules every check by `min_collection_interval`, and datadog_checks_base reads init_config's as the instances' default"
        }
        _ => "the Agent reads it for every check",
    }
}

/// The 1-based line where `key:` first appears as a mapping key (also after `- `).
pub fn find_key_line(text: &str, key: &str) -> Option<usize> {
    text.lines()
        .position(|line| {
            let t = line.trim_start().trim_start_matches("- ").trim_start();
            t.strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with(':'))
                || t.strip_prefix(&format!("\"{key}\""))
                    .is_some_and(|rest| rest.trim_start().starts_with(':'))
        })
        .map(|i| i + 1)
}

/// ` (did you mean `x`?)` for the closest candidate, or nothing when none is close.
pub fn suggest<'a>(word: &str, candidates: impl Iterator<Item = &'a str>) -> String {
    let best = candidates
        .map(|c| (strsim::jaro_winkler(word, c), c))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0));
    match best {
        Some((_, c)) => format!(" (did you mean `{c}`?)"),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Default, Deserialize, PartialEq)]
    #[serde(default)]
    struct DiskLike {
        use_mount: bool,
    }

    fn conf(text: &str) -> Result<CheckConf, Error> {
        CheckConf::parse(Path::new("conf.d/disk.yaml"), text.to_string())
    }

    #[test]
    fn a_key_yaml_1_1_reads_as_a_boolean_is_said_with_its_line() {
        let c =
            conf("instances:\n  - use_mount: yes\n    n: 1\n    'y': 2\n    0755: 3\n").unwrap();
        let w = c.yaml11_key_warnings();
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(
            w[0].starts_with(
                "conf.d/disk.yaml:3: instances[0]: the key `n` is read as the boolean false"
            ),
            "{w:?}"
        );
        assert!(
            w[1].contains("the key `0755` is read as the number 493"),
            "{w:?}"
        );
        // Not also an unknown option `?`.
        let unknown = c.unknown_key_warnings(&["use_mount"]);
        assert!(
            unknown.iter().all(|w| !w.contains("instances[0].?")),
            "{unknown:?}"
        );
    }

    #[test]
    fn syntax_error_has_line_and_column() {
        let err = conf("init_config:\ninstances:\n  - use_mount: [\n").unwrap_err();
        match err {
            Error::ConfigAt { line, .. } => assert!(line >= 3),
            other => panic!("expected a located error, got {other}"),
        }
    }

    #[test]
    fn wrong_type_names_the_option() {
        let c = conf("init_config:\ninstances:\n  - use_mount: maybe\n").unwrap();
        let err = c.typed_instances::<DiskLike>().unwrap_err().to_string();
        assert!(err.contains("use_mount"), "{err}");
        assert!(err.contains("disk.yaml:3:"), "{err}");
    }

    #[test]
    fn unknown_options_warn_with_a_suggestion() {
        let c = conf("init_config:\ninstances:\n  - use_mout: true\n    tags: [a:b]\n").unwrap();
        let w = c.unknown_key_warnings(&["use_mount"]);
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("disk.yaml:3: unknown option `instances[0].use_mout`"));
        assert!(w[0].contains("did you mean `use_mount`"));
    }

    #[test]
    fn empty_instance_runs_defaults() {
        let c = conf("instances:\n  -\n").unwrap();
        assert_eq!(
            c.typed_instances::<DiskLike>().unwrap(),
            vec![DiskLike::default()]
        );
        assert!(conf("instances: []\n").is_err());
    }
}
