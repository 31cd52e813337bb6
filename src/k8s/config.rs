//! The `kubernetes:` rules of `conf.d/profile.yaml` and the input-level settings in its
//! `init_config:`, with DataKit's names and defaults, each value checked; a bad one is a
//! configuration error at its file:line:column naming the rule by its index.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::selector::Selector;
use crate::error::UsageError;

/// Profile types a rule may collect: those `pull` collects.
pub use crate::pull::fetch::TYPES;

/// The input-level settings and the rules.
#[derive(Debug, Clone)]
pub struct K8sConfig {
    pub max_concurrency: usize,
    pub delta_cache_mb: u64,
    pub upload_url: Option<reqwest::Url>,
    pub out_dir: Option<PathBuf>,
    pub kubelet_url: Option<reqwest::Url>,
    pub kubelet_tls_verify: bool,
    pub kubelet_client_ca: Option<PathBuf>,
    pub kubelet_token_file: Option<PathBuf>,
    pub cluster_name: Option<String>,
    pub rules: Vec<Rule>,
}

/// Where a rule's pprof endpoint is in each pod: a port number or a container port's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Port {
    Number(u16),
    Name(String),
}

/// Thresholds in the units the kubelet reports: percentages of the container's limit, or
/// absolute millicores and bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Thresholds {
    pub cpu_pct: Option<f64>,
    pub mem_pct: Option<f64>,
    pub cpu_millicores: Option<f64>,
    pub mem_bytes: Option<u64>,
}

impl Thresholds {
    pub fn any(&self) -> bool {
        self.cpu_pct.is_some()
            || self.mem_pct.is_some()
            || self.cpu_millicores.is_some()
            || self.mem_bytes.is_some()
    }
}

/// One checked rule.
#[derive(Debug, Clone)]
pub struct Rule {
    pub index: usize,
    pub namespaces: Vec<String>,
    pub selector: Selector,
    pub container: Option<String>,
    pub scheme: &'static str,
    pub port: Port,
    pub path: String,
    pub service: Option<String>,
    pub env: Option<String>,
    pub version: Option<String>,
    pub tags: BTreeMap<String, String>,
    pub pod_label_as_tags: BTreeMap<String, String>,
    pub pod_annotation_as_tags: BTreeMap<String, String>,
    pub interval: Duration,
    pub scheduled_types: Vec<String>,
    pub trigger_types: Vec<String>,
    pub profile_duration: Duration,
    pub emergency_duration: Duration,
    pub request_timeout: Duration,
    pub monitor_interval: Duration,
    pub trigger_window: Duration,
    pub cooldown: Duration,
    pub max_concurrency: usize,
    pub normal: Thresholds,
    pub emergency: Thresholds,
    pub tls: crate::pull::fetch::Tls,
    pub body_size_limit_mb: u64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawInit {
    kubernetes_max_concurrency: Option<i64>,
    kubernetes_delta_cache_mb: Option<i64>,
    upload_url: Option<String>,
    out_dir: Option<PathBuf>,
    kubelet_url: Option<String>,
    kubelet_tls_verify: Option<bool>,
    kubelet_client_ca: Option<PathBuf>,
    kubelet_token_file: Option<PathBuf>,
    cluster_name: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum RawPort {
    Number(i64),
    Name(String),
}

/// A quantity: a number, or a Kubernetes quantity string (`512Mi`, `1.5G`, `250m`).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum RawQuantity {
    Number(f64),
    Text(String),
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRule {
    pub(super) node_local: Option<bool>,
    pub(super) namespaces: Option<Vec<String>>,
    pub(super) selector: Option<String>,
    pub(super) container: Option<String>,
    pub(super) scheme: Option<String>,
    pub(super) port: Option<RawPort>,
    pub(super) path: Option<String>,
    pub(super) service: Option<String>,
    pub(super) env: Option<String>,
    pub(super) version: Option<String>,
    pub(super) tags: Option<BTreeMap<String, String>>,
    pub(super) pod_label_as_tags: Option<BTreeMap<String, String>>,
    pub(super) pod_annotation_as_tags: Option<BTreeMap<String, String>>,
    pub(super) interval: Option<String>,
    pub(super) scheduled_types: Option<Vec<String>>,
    pub(super) trigger_types: Option<Vec<String>>,
    pub(super) profile_duration: Option<String>,
    pub(super) emergency_duration: Option<String>,
    pub(super) request_timeout: Option<String>,
    pub(super) monitor_interval: Option<String>,
    pub(super) trigger_window: Option<String>,
    pub(super) cooldown: Option<String>,
    pub(super) max_concurrency: Option<i64>,
    pub(super) cpu_usage_base_limit: Option<f64>,
    pub(super) mem_usage_base_limit: Option<f64>,
    pub(super) cpu_usage_millicores: Option<RawQuantity>,
    pub(super) mem_usage_bytes: Option<RawQuantity>,
    pub(super) cpu_emergency_base_limit: Option<f64>,
    pub(super) cpu_emergency_millicores: Option<RawQuantity>,
    pub(super) mem_emergency_base_limit: Option<f64>,
    pub(super) mem_emergency_bytes: Option<RawQuantity>,
    pub(super) tls_open: Option<bool>,
    pub(super) tls_ca: Option<PathBuf>,
    pub(super) tls_cert: Option<PathBuf>,
    pub(super) tls_key: Option<PathBuf>,
    pub(super) insecure_skip_verify: Option<bool>,
    pub(super) body_size_limit_mb: Option<i64>,
}

#[derive(Debug, Deserialize)]
struct RawFile {
    #[serde(default)]
    init_config: Option<serde_yaml_ng::Value>,
    #[serde(default)]
    kubernetes: Option<Vec<RawRule>>,
}

/// Where `key` of rule `index` (0-based) is in the file, 1-based line and column: the rule's
/// block under the top-level `kubernetes:` list, in block style.
pub fn locate(text: &str, index: usize, key: Option<&str>) -> Option<(usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.iter().position(|l| l.trim_end() == "kubernetes:")?;
    let mut item = None;
    let mut seen = 0usize;
    let mut item_indent = None;
    for (n, l) in lines.iter().enumerate().skip(start + 1) {
        let trimmed = l.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let indent = l.len() - trimmed.len();
        if indent == 0 && !trimmed.starts_with('-') {
            break;
        }
        if trimmed.starts_with("- ") || trimmed == "-" {
            if item_indent.is_none() {
                item_indent = Some(indent);
            }
            if Some(indent) == item_indent {
                if seen == index {
                    item = Some(n);
                } else if item.is_some() {
                    break;
                }
                seen += 1;
                if item.is_some() && key.is_none() {
                    return Some((n + 1, indent + 1));
                }
            }
        }
        if let (Some(_), Some(key)) = (item, key) {
            let body = trimmed.strip_prefix("- ").unwrap_or(trimmed);
            if body.starts_with(&format!("{key}:")) {
                let col = l.len() - body.len();
                return Some((n + 1, col + 1));
            }
        }
    }
    item.map(|n| (n + 1, item_indent.unwrap_or(0) + 1))
}

pub(super) struct At<'a> {
    pub(super) path: &'a Path,
    pub(super) text: &'a str,
    pub(super) index: usize,
}

impl At<'_> {
    pub(super) fn err(&self, key: &str, msg: impl std::fmt::Display) -> UsageError {
        let message = format!("kubernetes[{}]: {key}: {msg}", self.index);
        match locate(self.text, self.index, Some(key)) {
            Some((line, column)) => UsageError::ConfigAt {
                path: self.path.to_path_buf(),
                line,
                column,
                message,
            },
            None => UsageError::config(self.path, message),
        }
    }

    pub(super) fn duration(
        &self,
        key: &str,
        v: &Option<String>,
        default: Duration,
        min: Duration,
    ) -> Result<Duration, UsageError> {
        let d = match v {
            Some(t) => crate::duration::parse(t, 1.0).map_err(|e| self.err(key, e))?,
            None => default,
        };
        if d < min {
            let shown = v.clone().unwrap_or_else(|| super::rule::short(d));
            return Err(self.err(
                key,
                format!(
                    "{shown} is shorter than the least allowed, {}",
                    super::rule::short(min)
                ),
            ));
        }
        Ok(d)
    }
}

impl K8sConfig {
    /// Reads `profile.yaml`'s Kubernetes part; `Ok(None)` when it has no `kubernetes:` rules.
    pub fn read(path: &Path) -> Result<Option<K8sConfig>, UsageError> {
        let text = crate::config::read_config_text(path)?;
        Self::parse(path, &text)
    }

    pub fn parse(path: &Path, text: &str) -> Result<Option<K8sConfig>, UsageError> {
        let file: RawFile =
            serde_yaml_ng::from_str(text).map_err(|e| UsageError::yaml(path, &e))?;
        let Some(raw_rules) = file.kubernetes else {
            return Ok(None);
        };
        let init = init_config(path, file.init_config)?;
        let init_err = |key: &str, msg: String| {
            let message = format!("init_config: {key}: {msg}");
            match crate::config::find_key_line(text, key) {
                Some(line) => UsageError::ConfigAt {
                    path: path.to_path_buf(),
                    line,
                    column: 1,
                    message,
                },
                None => UsageError::config(path, message),
            }
        };
        let positive = |key: &str, v: Option<i64>, def: i64| -> Result<i64, UsageError> {
            match v {
                None => Ok(def),
                Some(n) if n >= 1 => Ok(n),
                Some(n) => Err(init_err(key, format!("{n} must be at least 1"))),
            }
        };
        let url = |key: &str, v: Option<String>| -> Result<Option<reqwest::Url>, UsageError> {
            v.map(|t| {
                let u = reqwest::Url::parse(&t)
                    .map_err(|e| init_err(key, format!("not a URL ({e})")))?;
                match u.scheme() {
                    "http" | "https" => Ok(u),
                    s => Err(init_err(key, format!("scheme {s}: use http or https"))),
                }
            })
            .transpose()
        };
        let mut rules = Vec::with_capacity(raw_rules.len());
        for (index, raw) in raw_rules.into_iter().enumerate() {
            rules.push(super::rule::rule(&At { path, text, index }, raw)?);
        }
        if rules.is_empty() {
            return Err(UsageError::config(
                path,
                "kubernetes: the list of rules is empty",
            ));
        }
        if let Some(c) = &init.cluster_name
            && !super::rule::tag_value_ok(c)
        {
            return Err(init_err(
                "cluster_name",
                format!("{c:?} cannot hold a comma or newline"),
            ));
        }
        Ok(Some(K8sConfig {
            max_concurrency: positive(
                "kubernetes_max_concurrency",
                init.kubernetes_max_concurrency,
                2,
            )? as usize,
            delta_cache_mb: positive(
                "kubernetes_delta_cache_mb",
                init.kubernetes_delta_cache_mb,
                32,
            )? as u64,
            upload_url: url("upload_url", init.upload_url)?,
            out_dir: init.out_dir,
            kubelet_url: url("kubelet_url", init.kubelet_url)?,
            kubelet_tls_verify: init.kubelet_tls_verify.unwrap_or(true),
            kubelet_client_ca: init.kubelet_client_ca,
            kubelet_token_file: init.kubelet_token_file,
            cluster_name: init.cluster_name,
            rules,
        }))
    }
}

/// `init_config:`'s Kubernetes keys; those of the static `pull` instances may sit there too.
fn init_config(path: &Path, v: Option<serde_yaml_ng::Value>) -> Result<RawInit, UsageError> {
    Ok(match v {
        None | Some(serde_yaml_ng::Value::Null) => RawInit::default(),
        Some(v) => {
            // Keys of the static `pull` instances may sit here too; only the Kubernetes
            // ones are read.
            let mut m = match v {
                serde_yaml_ng::Value::Mapping(m) => m,
                _ => return Err(UsageError::config(path, "init_config: must be a mapping")),
            };
            m.retain(|k, _| {
                k.as_str().is_some_and(|k| {
                    k.starts_with("kubernetes_")
                        || k.starts_with("kubelet_")
                        || ["upload_url", "out_dir", "cluster_name"].contains(&k)
                })
            });
            serde_yaml_ng::from_value(serde_yaml_ng::Value::Mapping(m))
                .map_err(|e| UsageError::config(path, format!("init_config: {e}")))?
        }
    })
}

/// A rule from the lines after `kubernetes:\n  - port: 6060\n`, for tests.
#[cfg(test)]
pub fn test_rule(extra: &str) -> Rule {
    let text = format!("kubernetes:\n  - port: 6060\n{extra}");
    match K8sConfig::parse(Path::new("p.yaml"), &text) {
        Ok(Some(mut c)) => c.rules.remove(0),
        other => panic!("{other:?}"),
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
