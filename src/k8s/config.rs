//! The `kubernetes:` rules of `conf.d/profile.yaml` and the input-level settings in its
//! `init_config:`, with DataKit's names and defaults, each value checked; a bad one is a
//! configuration error at its file:line:column naming the rule by its index.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::UsageError;

use super::rule::{At, RawRule};
pub use super::rule::{Port, Rule, Thresholds, locate};

/// Profile types a rule may collect: those `pull` collects.
pub use crate::pull::fetch::TYPES;

/// The input-level settings and the rules.
#[derive(Debug, Clone)]
pub struct K8sConfig {
    pub max_concurrency: usize,
    pub delta_cache_mb: u64,
    pub upload_url: Option<reqwest::Url>,
    /// `otlp_url`, `otlp_headers`, `otlp_original_payload`: captures also as OTLP profiles.
    pub otlp: Option<crate::pull::otlp::OtlpTarget>,
    pub out_dir: Option<PathBuf>,
    pub kubelet_url: Option<reqwest::Url>,
    pub kubelet_tls_verify: bool,
    pub kubelet_client_ca: Option<PathBuf>,
    pub kubelet_token_file: Option<PathBuf>,
    pub cluster_name: Option<String>,
    /// What is kept under the output directory: `retention_mb` (default
    /// [`DEFAULT_RETENTION_MB`], inside the shipped DaemonSet's 1 GiB emptyDir with the
    /// upload spool beside it) and `retention_days` (default: no age bound).
    pub retention: crate::retention::Retention,
    pub rules: Vec<Rule>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawInit {
    kubernetes_max_concurrency: Option<i64>,
    kubernetes_delta_cache_mb: Option<i64>,
    upload_url: Option<String>,
    otlp_url: Option<String>,
    otlp_headers: Option<std::collections::BTreeMap<String, String>>,
    otlp_original_payload: Option<bool>,
    out_dir: Option<PathBuf>,
    kubelet_url: Option<String>,
    kubelet_tls_verify: Option<bool>,
    kubelet_client_ca: Option<PathBuf>,
    kubelet_token_file: Option<PathBuf>,
    cluster_name: Option<String>,
    retention_mb: Option<i64>,
    retention_days: Option<i64>,
}

#[derive(Debug, Deserialize)]
struct RawFile {
    #[serde(default)]
    init_config: Option<serde_yaml_ng::Value>,
    #[serde(default)]
    kubernetes: Option<Vec<RawRule>>,
}

/// The output directory's default size bound, MiB: with the 64 MiB upload spool, within
/// the 1 GiB emptyDir of deploy/kubernetes/30-daemonset.yaml.
pub const DEFAULT_RETENTION_MB: i64 = 768;

/// The delta baseline cache at most, MiB.
const MAX_DELTA_CACHE_MB: i64 = 65_536;

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
        let keys = InitKeys { path, text };
        let init_err = |key: &str, msg: String| keys.err(key, msg);
        let within = |key: &str, v, def, max| keys.within(key, v, def, max);
        let url = |key: &str, v| keys.url(key, v);
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
            max_concurrency: within(
                "kubernetes_max_concurrency",
                init.kubernetes_max_concurrency,
                2,
                super::rule::MAX_CONCURRENCY,
            )? as usize,
            delta_cache_mb: within(
                "kubernetes_delta_cache_mb",
                init.kubernetes_delta_cache_mb,
                32,
                MAX_DELTA_CACHE_MB,
            )? as u64,
            upload_url: url("upload_url", init.upload_url)?,
            otlp: otlp_target(
                init.otlp_url,
                init.otlp_headers,
                init.otlp_original_payload,
                &init_err,
            )?,
            out_dir: init.out_dir,
            kubelet_url: url("kubelet_url", init.kubelet_url)?,
            kubelet_tls_verify: init.kubelet_tls_verify.unwrap_or(true),
            kubelet_client_ca: init.kubelet_client_ca,
            kubelet_token_file: init.kubelet_token_file,
            cluster_name: init.cluster_name,
            retention: keys.retention(init.retention_mb, init.retention_days)?,
            rules,
        }))
    }
}

/// Where `init_config:`'s keys are, to say which one is wrong and on what line.
struct InitKeys<'a> {
    path: &'a Path,
    text: &'a str,
}

impl InitKeys<'_> {
    /// `init_config: KEY: msg`, at the key's line when it is found.
    fn err(&self, key: &str, msg: String) -> UsageError {
        let message = format!("init_config: {key}: {msg}");
        match crate::config::find_key_line(self.text, key) {
            Some(line) => UsageError::at(self.path, line, 1, message),
            None => UsageError::config(self.path, message),
        }
    }

    /// `v`, or `def` when it is not given; an error when it is outside 1 to `max`.
    fn within(&self, key: &str, v: Option<i64>, def: i64, max: i64) -> Result<i64, UsageError> {
        match v {
            None => Ok(def),
            Some(n) if (1..=max).contains(&n) => Ok(n),
            Some(n) => Err(self.err(key, format!("{n} is outside 1 to {max}"))),
        }
    }

    /// An http or https URL, when given.
    fn url(&self, key: &str, v: Option<String>) -> Result<Option<reqwest::Url>, UsageError> {
        v.map(|t| {
            let u =
                reqwest::Url::parse(&t).map_err(|e| self.err(key, format!("not a URL ({e})")))?;
            match u.scheme() {
                "http" | "https" => Ok(u),
                s => Err(self.err(key, format!("scheme {s}: use http or https"))),
            }
        })
        .transpose()
    }

    /// `retention_mb` (default `DEFAULT_RETENTION_MB`) and `retention_days` (1 to 3650).
    fn retention(
        &self,
        mb: Option<i64>,
        days: Option<i64>,
    ) -> Result<crate::retention::Retention, UsageError> {
        let mb = self.within("retention_mb", mb, DEFAULT_RETENTION_MB, 1 << 20)? as u64;
        let max_age = match days {
            None => None,
            Some(d) if (1..=3650).contains(&d) => {
                Some(std::time::Duration::from_secs(d as u64 * 86_400))
            }
            Some(d) => {
                return Err(self.err("retention_days", format!("{d} is outside 1 to 3650")));
            }
        };
        Ok(crate::retention::Retention {
            max_bytes: Some(mb * (1 << 20)),
            max_age,
        })
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
                        || [
                            "upload_url",
                            "out_dir",
                            "cluster_name",
                            "retention_mb",
                            "retention_days",
                        ]
                        .contains(&k)
                })
            });
            serde_yaml_ng::from_value(serde_yaml_ng::Value::Mapping(m))
                .map_err(|e| UsageError::config(path, format!("init_config: {e}")))?
        }
    })
}

/// A rule from the lines after `kubernetes:\n  - port: 6060\n`, for tests.
/// profile.yaml's `otlp_url`, `otlp_headers` and `otlp_original_payload`.
fn otlp_target(
    url: Option<String>,
    headers: Option<std::collections::BTreeMap<String, String>>,
    original_payload: Option<bool>,
    init_err: &dyn Fn(&str, String) -> UsageError,
) -> Result<Option<crate::pull::otlp::OtlpTarget>, UsageError> {
    let Some(u) = url else {
        if headers.is_some() || original_payload.is_some() {
            return Err(init_err(
                "otlp_headers",
                "otlp_headers and otlp_original_payload go with otlp_url".into(),
            ));
        }
        return Ok(None);
    };
    let url = crate::pull::otlp::endpoint(&u).map_err(|e| init_err("otlp_url", e.to_string()))?;
    let mut list = Vec::new();
    for (k, v) in headers.unwrap_or_default() {
        list.push(
            crate::pull::otlp::header(&format!("{k}={v}"))
                .map_err(|e| init_err("otlp_headers", e.to_string()))?,
        );
    }
    Ok(Some(crate::pull::otlp::OtlpTarget {
        url,
        headers: list,
        original_payload: original_payload.unwrap_or(false),
    }))
}

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
