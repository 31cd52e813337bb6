//! The `kubernetes:` rules of `conf.d/profile.yaml` and the input-level settings in its
//! `init_config:`, with DataKit's names and defaults, each value checked; a bad one is a
//! configuration error at its file:line:column naming the rule by its index.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::selector::{Selector, is_dns_label};
use crate::error::UsageError;

/// Profile types a rule may collect (as `pull` names them).
pub const TYPES: &[&str] = &[
    "cpu",
    "heap",
    "allocs",
    "goroutine",
    "mutex",
    "block",
    "threadcreate",
];

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
enum RawPort {
    Number(i64),
    Name(String),
}

/// A quantity: a number, or a Kubernetes quantity string (`512Mi`, `1.5G`, `250m`).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum RawQuantity {
    Number(f64),
    Text(String),
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    node_local: Option<bool>,
    namespaces: Option<Vec<String>>,
    selector: Option<String>,
    container: Option<String>,
    scheme: Option<String>,
    port: Option<RawPort>,
    path: Option<String>,
    service: Option<String>,
    env: Option<String>,
    version: Option<String>,
    tags: Option<BTreeMap<String, String>>,
    pod_label_as_tags: Option<BTreeMap<String, String>>,
    pod_annotation_as_tags: Option<BTreeMap<String, String>>,
    interval: Option<String>,
    scheduled_types: Option<Vec<String>>,
    trigger_types: Option<Vec<String>>,
    profile_duration: Option<String>,
    emergency_duration: Option<String>,
    request_timeout: Option<String>,
    monitor_interval: Option<String>,
    trigger_window: Option<String>,
    cooldown: Option<String>,
    max_concurrency: Option<i64>,
    cpu_usage_base_limit: Option<f64>,
    mem_usage_base_limit: Option<f64>,
    cpu_usage_millicores: Option<RawQuantity>,
    mem_usage_bytes: Option<RawQuantity>,
    cpu_emergency_base_limit: Option<f64>,
    cpu_emergency_millicores: Option<RawQuantity>,
    mem_emergency_base_limit: Option<f64>,
    mem_emergency_bytes: Option<RawQuantity>,
    tls_open: Option<bool>,
    tls_ca: Option<PathBuf>,
    tls_cert: Option<PathBuf>,
    tls_key: Option<PathBuf>,
    insecure_skip_verify: Option<bool>,
    body_size_limit_mb: Option<i64>,
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

struct At<'a> {
    path: &'a Path,
    text: &'a str,
    index: usize,
}

impl At<'_> {
    fn err(&self, key: &str, msg: impl std::fmt::Display) -> UsageError {
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

    fn duration(
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
            let shown = v.clone().unwrap_or_else(|| short(d));
            return Err(self.err(
                key,
                format!("{shown} is shorter than the least allowed, {}", short(min)),
            ));
        }
        Ok(d)
    }
}

/// A duration as a user writes it in profile.yaml: `10s`, `1m`, `500ms`.
pub fn short(d: Duration) -> String {
    let ms = d.as_millis();
    if ms >= 60_000 && ms.is_multiple_of(60_000) {
        format!("{}m", ms / 60_000)
    } else if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

/// A tag name the upload protocol can carry: no comma, colon or newline.
fn tag_name_ok(k: &str) -> bool {
    !k.is_empty() && !k.contains([',', ':', '\n'])
}

/// A tag value the upload protocol can carry: no comma or newline (colons are fine).
fn tag_value_ok(v: &str) -> bool {
    !v.contains([',', '\n'])
}

/// A Kubernetes quantity in base units: `512Mi` → 536870912, `250m` → 0.25, `1.5G`.
pub fn quantity(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("{text:?} is not a quantity (e.g. 512Mi, 2G, 1500)"))?;
    let k = match suffix {
        "" => 1.0,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "Ki" => 1024.0,
        "Mi" => 1024.0 * 1024.0,
        "Gi" => 1024.0 * 1024.0 * 1024.0,
        "Ti" => 1024.0f64.powi(4),
        other => return Err(format!("{text:?}: unknown quantity suffix {other:?}")),
    };
    Ok(n * k)
}

/// The port name rule of a container port (IANA service name).
fn port_name_ok(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 15
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b.iter().any(u8::is_ascii_lowercase)
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
        && !s.contains("--")
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
        let init: RawInit = match file.init_config {
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
        };
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
            rules.push(rule(&At { path, text, index }, raw)?);
        }
        if rules.is_empty() {
            return Err(UsageError::config(
                path,
                "kubernetes: the list of rules is empty",
            ));
        }
        if let Some(c) = &init.cluster_name
            && !tag_value_ok(c)
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

fn rule(at: &At<'_>, r: RawRule) -> Result<Rule, UsageError> {
    if r.node_local == Some(false) {
        return Err(at.err(
            "node_local",
            "only true is supported: each agentprof watches the pods of its own node",
        ));
    }
    let namespaces = r.namespaces.unwrap_or_default();
    for ns in &namespaces {
        if !is_dns_label(ns) {
            return Err(at.err(
                "namespaces",
                format!("{ns:?} is not a namespace name (a DNS label)"),
            ));
        }
    }
    let selector = match &r.selector {
        Some(s) => Selector::parse(s).map_err(|e| at.err("selector", e))?,
        None => Selector::default(),
    };
    if let Some(c) = &r.container
        && !is_dns_label(c)
    {
        return Err(at.err(
            "container",
            format!("{c:?} is not a container name (a DNS label)"),
        ));
    }
    let tls_open = r.tls_open.unwrap_or(false);
    let scheme = match r.scheme.as_deref() {
        None if tls_open => "https",
        None | Some("http") => "http",
        Some("https") => "https",
        Some(s) => return Err(at.err("scheme", format!("{s:?}: use http or https"))),
    };
    let port = match r.port {
        None => {
            return Err(at.err(
                "port",
                "required: the pprof port, by number or by the container port's name",
            ));
        }
        Some(RawPort::Number(n)) if (1..=65535).contains(&n) => Port::Number(n as u16),
        Some(RawPort::Number(n)) => {
            return Err(at.err("port", format!("{n} is outside 1 to 65535")));
        }
        Some(RawPort::Name(n)) => match n.parse::<i64>() {
            Ok(v) if (1..=65535).contains(&v) => Port::Number(v as u16),
            Ok(v) => return Err(at.err("port", format!("{v} is outside 1 to 65535"))),
            Err(_) if port_name_ok(&n) => Port::Name(n),
            Err(_) => {
                return Err(at.err(
                    "port",
                    format!("{n:?} is neither a number nor a port name (at most 15 lowercase letters, digits and dashes)"),
                ));
            }
        },
    };
    let path = r.path.unwrap_or_else(|| "/debug/pprof".into());
    if !path.starts_with('/') {
        return Err(at.err("path", format!("{path:?} must start with /")));
    }
    for (key, v) in [
        ("service", &r.service),
        ("env", &r.env),
        ("version", &r.version),
    ] {
        if let Some(v) = v
            && (v.is_empty() || !tag_value_ok(v))
        {
            return Err(at.err(
                key,
                format!("{v:?} cannot be empty or hold a comma or newline"),
            ));
        }
    }
    let tags = r.tags.unwrap_or_default();
    for (k, v) in &tags {
        if !tag_name_ok(k) || !tag_value_ok(v) {
            return Err(at.err(
                "tags",
                format!("{k}: {v:?}: a name cannot hold a comma, colon or newline, a value a comma or newline"),
            ));
        }
    }
    let mut maps = Vec::new();
    for (key, m) in [
        ("pod_label_as_tags", r.pod_label_as_tags),
        ("pod_annotation_as_tags", r.pod_annotation_as_tags),
    ] {
        let m = m.unwrap_or_default();
        for (from, to) in &m {
            if key == "pod_label_as_tags" {
                super::selector::check_key(from).map_err(|e| at.err(key, e))?;
            }
            if !tag_name_ok(to) {
                return Err(at.err(
                    key,
                    format!("{from} → {to:?}: a tag name cannot hold a comma, colon or newline"),
                ));
            }
        }
        maps.push(m);
    }
    let pod_annotation_as_tags = maps.pop().unwrap_or_default();
    let pod_label_as_tags = maps.pop().unwrap_or_default();
    let s = Duration::from_secs;
    let interval = at.duration("interval", &r.interval, s(600), s(10))?;
    let types =
        |key: &str, v: Option<Vec<String>>, def: &[&str]| -> Result<Vec<String>, UsageError> {
            let v = v.unwrap_or_else(|| def.iter().map(|t| t.to_string()).collect());
            for t in &v {
                if !TYPES.contains(&t.as_str()) {
                    return Err(at.err(key, format!("{t:?} is not one of {}", TYPES.join(", "))));
                }
            }
            Ok(v)
        };
    let scheduled_types = types("scheduled_types", r.scheduled_types, &["heap", "goroutine"])?;
    let pct = |key: &str, v: Option<f64>| -> Result<Option<f64>, UsageError> {
        match v {
            Some(p) if !(p > 0.0 && p <= 100.0) => Err(at.err(
                key,
                format!("{p} is not a percentage above 0 and at most 100"),
            )),
            other => Ok(other),
        }
    };
    let qty = |key: &str, v: Option<RawQuantity>, scale: f64| -> Result<Option<f64>, UsageError> {
        let v = match v {
            None => return Ok(None),
            Some(RawQuantity::Number(n)) => n,
            Some(RawQuantity::Text(t)) => quantity(&t).map_err(|e| at.err(key, e))? * scale,
        };
        if v > 0.0 && v.is_finite() {
            Ok(Some(v))
        } else {
            Err(at.err(key, format!("{v} must be above 0")))
        }
    };
    // A CPU quantity string is in cores (`500m` is half a core); a bare number is millicores.
    let normal = Thresholds {
        cpu_pct: pct("cpu_usage_base_limit", r.cpu_usage_base_limit)?,
        mem_pct: pct("mem_usage_base_limit", r.mem_usage_base_limit)?,
        cpu_millicores: qty("cpu_usage_millicores", r.cpu_usage_millicores, 1000.0)?,
        mem_bytes: qty("mem_usage_bytes", r.mem_usage_bytes, 1.0)?.map(|b| b as u64),
    };
    let emergency = Thresholds {
        cpu_pct: pct("cpu_emergency_base_limit", r.cpu_emergency_base_limit)?,
        mem_pct: pct("mem_emergency_base_limit", r.mem_emergency_base_limit)?,
        cpu_millicores: qty(
            "cpu_emergency_millicores",
            r.cpu_emergency_millicores,
            1000.0,
        )?,
        mem_bytes: qty("mem_emergency_bytes", r.mem_emergency_bytes, 1.0)?.map(|b| b as u64),
    };
    for (key, e, n) in [
        (
            "cpu_emergency_base_limit",
            emergency.cpu_pct,
            normal.cpu_pct,
        ),
        (
            "mem_emergency_base_limit",
            emergency.mem_pct,
            normal.mem_pct,
        ),
        (
            "cpu_emergency_millicores",
            emergency.cpu_millicores,
            normal.cpu_millicores,
        ),
        (
            "mem_emergency_bytes",
            emergency.mem_bytes.map(|b| b as f64),
            normal.mem_bytes.map(|b| b as f64),
        ),
    ] {
        if let (Some(e), Some(n)) = (e, n)
            && e < n
        {
            return Err(at.err(
                key,
                format!("{e} is below the normal threshold {n}: an emergency is the higher one"),
            ));
        }
    }
    let any_threshold = normal.any() || emergency.any();
    let trigger_types = if any_threshold {
        types(
            "trigger_types",
            r.trigger_types,
            &["cpu", "heap", "goroutine"],
        )?
    } else {
        match r.trigger_types {
            Some(t) if !t.is_empty() => {
                return Err(at.err(
                    "trigger_types",
                    "no threshold is set, so nothing would trigger these: set cpu_usage_base_limit, mem_usage_bytes or another threshold",
                ));
            }
            _ => Vec::new(),
        }
    };
    let profile_duration = at.duration("profile_duration", &r.profile_duration, s(10), s(1))?;
    let emergency_duration = at.duration(
        "emergency_duration",
        &r.emergency_duration,
        profile_duration,
        s(1),
    )?;
    let cpu = scheduled_types
        .iter()
        .chain(&trigger_types)
        .any(|t| t == "cpu");
    let longest = if cpu {
        profile_duration.max(emergency_duration)
    } else {
        Duration::ZERO
    };
    let request_timeout = at.duration(
        "request_timeout",
        &r.request_timeout,
        (longest + s(5)).max(s(15)),
        Duration::from_millis(1),
    )?;
    if request_timeout <= longest {
        return Err(at.err(
            "request_timeout",
            format!(
                "{} must exceed the longest CPU recording, {}",
                short(request_timeout),
                short(longest)
            ),
        ));
    }
    let monitor_interval = at.duration("monitor_interval", &r.monitor_interval, s(10), s(1))?;
    let trigger_window =
        at.duration("trigger_window", &r.trigger_window, s(60), monitor_interval)?;
    let cooldown = at.duration("cooldown", &r.cooldown, s(600), Duration::ZERO)?;
    let max_concurrency = match r.max_concurrency {
        None => 2,
        Some(n) if n >= 1 => n as usize,
        Some(n) => return Err(at.err("max_concurrency", format!("{n} must be at least 1"))),
    };
    let body_size_limit_mb = match r.body_size_limit_mb {
        None => 32,
        Some(n) if (1..=1024).contains(&n) => n as u64,
        Some(n) => return Err(at.err("body_size_limit_mb", format!("{n} is outside 1 to 1024"))),
    };
    let tls = crate::pull::fetch::Tls {
        ca: r.tls_ca,
        cert: r.tls_cert,
        key: r.tls_key,
        insecure_skip_verify: r.insecure_skip_verify.unwrap_or(false),
    };
    if tls.cert.is_some() != tls.key.is_some() {
        return Err(at.err(
            if tls.cert.is_some() {
                "tls_cert"
            } else {
                "tls_key"
            },
            "tls_cert and tls_key go together (a client certificate and its key)",
        ));
    }
    Ok(Rule {
        index: at.index,
        namespaces,
        selector,
        container: r.container,
        scheme,
        port,
        path,
        service: r.service,
        env: r.env,
        version: r.version,
        tags,
        pod_label_as_tags,
        pod_annotation_as_tags,
        interval,
        scheduled_types,
        trigger_types,
        profile_duration,
        emergency_duration,
        request_timeout,
        monitor_interval,
        trigger_window,
        cooldown,
        max_concurrency,
        normal,
        emergency,
        tls,
        body_size_limit_mb,
    })
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
