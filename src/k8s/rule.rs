//! One `kubernetes:` rule checked: every field's default, its range and its relations to
//! the others (a timeout longer than the recording, a window at least one round, an emergency
//! above its normal threshold).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use agentprof_k8s::{Selector, is_dns_label};

mod figures;

use crate::error::UsageError;
use crate::pull::fetch::TYPES;
use figures::{thresholds, timings};

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
            Some((line, column)) => UsageError::at(self.path, line, column, message),
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
pub(super) fn tag_name_ok(k: &str) -> bool {
    !k.is_empty() && !k.contains([',', ':', '\n'])
}

/// A tag value the upload protocol can carry: no comma or newline (colons are fine).
pub(super) fn tag_value_ok(v: &str) -> bool {
    !v.contains([',', '\n'])
}

/// What is wrong with a Kubernetes quantity.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum QuantityError {
    #[error("{0:?} is not a quantity (e.g. 512Mi, 2G, 1500)")]
    NotANumber(String),
    #[error("{text:?}: unknown quantity suffix {suffix:?}")]
    UnknownSuffix { text: String, suffix: String },
}

/// A Kubernetes quantity in base units: `512Mi` → 536870912, `250m` → 0.25, `1.5G`.
pub fn quantity(text: &str) -> Result<f64, QuantityError> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| QuantityError::NotANumber(text.to_string()))?;
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
        other => {
            return Err(QuantityError::UnknownSuffix {
                text: text.to_string(),
                suffix: other.to_string(),
            });
        }
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

/// A rule of conf.d/profile.yaml, checked key by key (each error names its key, line and
/// column), with the defaults DataKit's input has.
pub(super) fn rule(at: &At<'_>, mut r: RawRule) -> Result<Rule, UsageError> {
    let (namespaces, selector) = placement(at, &r)?;
    let (scheme, port, path) = endpoint(at, &mut r)?;
    let tagging = tagging(at, &mut r)?;
    let s = Duration::from_secs;
    let interval = at.duration("interval", &r.interval, s(600), s(10))?;
    let scheduled_types = types(
        at,
        "scheduled_types",
        r.scheduled_types.take(),
        &["heap", "goroutine"],
    )?;
    let (normal, emergency) = thresholds(at, &mut r)?;
    let trigger_types = if normal.any() || emergency.any() {
        types(
            at,
            "trigger_types",
            r.trigger_types.take(),
            &["cpu", "heap", "goroutine"],
        )?
    } else {
        match r.trigger_types.take() {
            Some(t) if !t.is_empty() => {
                return Err(at.err(
                    "trigger_types",
                    "no threshold is set, so nothing would trigger these: set cpu_usage_base_limit, mem_usage_bytes or another threshold",
                ));
            }
            _ => Vec::new(),
        }
    };
    let cpu = scheduled_types
        .iter()
        .chain(&trigger_types)
        .any(|t| t == "cpu");
    let t = timings(at, &r, cpu)?;
    let (max_concurrency, body_size_limit_mb) = bounds(at, &r)?;
    let tls = tls(at, &mut r)?;
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
        tags: tagging.tags,
        pod_label_as_tags: tagging.labels,
        pod_annotation_as_tags: tagging.annotations,
        interval,
        scheduled_types,
        trigger_types,
        profile_duration: t.profile_duration,
        emergency_duration: t.emergency_duration,
        request_timeout: t.request_timeout,
        monitor_interval: t.monitor_interval,
        trigger_window: t.trigger_window,
        cooldown: t.cooldown,
        max_concurrency,
        normal,
        emergency,
        tls,
        body_size_limit_mb,
    })
}

/// Which pods: node-local only, namespaces, the label selector, the container.
fn placement(at: &At<'_>, r: &RawRule) -> Result<(Vec<String>, Selector), UsageError> {
    if r.node_local == Some(false) {
        return Err(at.err(
            "node_local",
            "only true is supported: each agentprof watches the pods of its own node",
        ));
    }
    let namespaces = r.namespaces.clone().unwrap_or_default();
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
    Ok((namespaces, selector))
}

/// Where the pprof endpoint is: scheme, port (number or name), path.
fn endpoint(at: &At<'_>, r: &mut RawRule) -> Result<(&'static str, Port, String), UsageError> {
    let tls_open = r.tls_open.unwrap_or(false);
    let scheme = match r.scheme.as_deref() {
        None if tls_open => "https",
        None | Some("http") => "http",
        Some("https") => "https",
        Some(s) => return Err(at.err("scheme", format!("{s:?}: use http or https"))),
    };
    let port = match r.port.take() {
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
    let path = r.path.take().unwrap_or_else(|| "/debug/pprof".into());
    if !path.starts_with('/') {
        return Err(at.err("path", format!("{path:?} must start with /")));
    }
    Ok((scheme, port, path))
}

/// The tags of a rule's captures: service/env/version, its own, and the pod labels and
/// annotations to copy.
struct Tagging {
    tags: BTreeMap<String, String>,
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
}

fn tagging(at: &At<'_>, r: &mut RawRule) -> Result<Tagging, UsageError> {
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
    let tags = r.tags.take().unwrap_or_default();
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
        ("pod_label_as_tags", r.pod_label_as_tags.take()),
        ("pod_annotation_as_tags", r.pod_annotation_as_tags.take()),
    ] {
        let m = m.unwrap_or_default();
        for (from, to) in &m {
            if key == "pod_label_as_tags" {
                agentprof_k8s::check_key(from).map_err(|e| at.err(key, e))?;
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
    let annotations = maps.pop().unwrap_or_default();
    let labels = maps.pop().unwrap_or_default();
    Ok(Tagging {
        tags,
        labels,
        annotations,
    })
}

/// Profile types under `key`, each one of [`TYPES`]; `def` when the key is absent.
fn types(
    at: &At<'_>,
    key: &str,
    v: Option<Vec<String>>,
    def: &[&str],
) -> Result<Vec<String>, UsageError> {
    let v = v.unwrap_or_else(|| def.iter().map(|t| t.to_string()).collect());
    for t in &v {
        if !TYPES.contains(&t.as_str()) {
            return Err(at.err(key, format!("{t:?} is not one of {}", TYPES.join(", "))));
        }
    }
    Ok(v)
}

/// Captures at once, per rule or per node (`kubernetes_max_concurrency`), at most.
pub const MAX_CONCURRENCY: i64 = 1024;

/// Captures at once, and the largest profile read.
fn bounds(at: &At<'_>, r: &RawRule) -> Result<(usize, u64), UsageError> {
    let max_concurrency = match r.max_concurrency {
        None => 2,
        Some(n) if (1..=MAX_CONCURRENCY).contains(&n) => n as usize,
        Some(n) => {
            return Err(at.err(
                "max_concurrency",
                format!("{n} is outside 1 to {}", MAX_CONCURRENCY),
            ));
        }
    };
    let body_size_limit_mb = match r.body_size_limit_mb {
        None => 32,
        Some(n) if (1..=1024).contains(&n) => n as u64,
        Some(n) => return Err(at.err("body_size_limit_mb", format!("{n} is outside 1 to 1024"))),
    };
    Ok((max_concurrency, body_size_limit_mb))
}

/// The endpoint's TLS: a CA, a client certificate with its key, or no verification; the
/// files read and parsed now.
fn tls(at: &At<'_>, r: &mut RawRule) -> Result<crate::pull::fetch::Tls, UsageError> {
    let tls = crate::pull::fetch::Tls {
        ca: r.tls_ca.take(),
        cert: r.tls_cert.take(),
        key: r.tls_key.take(),
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
    crate::pull::fetch::check_tls(&tls).map_err(|e| at.err(e.key(), e))?;
    Ok(tls)
}
