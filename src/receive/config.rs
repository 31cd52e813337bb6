//! The `receive:` section of agentprof.yaml: the same settings as `agentprof receive`'s
//! flags (a flag wins), in DataKit's names where it has them.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::UsageError;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReceiveFile {
    /// Address to listen on (default 127.0.0.1:9529; 0.0.0.0:9529 in a cluster).
    pub listen: Option<String>,
    /// Upload paths (DataKit's `endpoints`; default ["/profiling/v1/input"]).
    pub endpoints: Option<Vec<String>>,
    pub out_dir: Option<PathBuf>,
    pub queue_dir: Option<PathBuf>,
    /// Largest upload accepted, MiB (default 32).
    pub body_size_limit_mb: Option<u64>,
    /// Bytes acknowledged and not yet stored the queue may hold, MiB (default 256).
    pub cache_capacity_mb: Option<u64>,
    pub top: Option<usize>,
    /// Where each upload is posted on (DataKit's, an Agent's or Datadog's intake URL).
    pub forward_url: Option<String>,
    /// Where each upload's pprof profiles are also sent as OTLP profiles (an OpenTelemetry
    /// Collector; a URL without a path gets /v1development/profiles).
    pub forward_otlp_url: Option<String>,
    /// Headers of every OTLP request (credentials; never written to the spool).
    pub otlp_headers: Option<std::collections::BTreeMap<String, String>>,
    /// Attach each pprof profile to its OTLP profiles as original_payload (default false).
    pub otlp_original_payload: Option<bool>,
    pub spool_dir: Option<PathBuf>,
    /// Listen over TLS (PEM certificate chain and key).
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    /// Seconds a sender has to send an upload's body (default 60; its headers: at most 10):
    /// a slower or stalled one gets 408 and its connection is closed.
    pub read_timeout_s: Option<u64>,
    /// Seconds one forward request may take, connecting included (default 30): a target
    /// that does not answer in time is retried from the spool.
    pub forward_timeout_s: Option<u64>,
    /// MiB every upload in flight may hold together, from its first byte read until it is
    /// stored: bodies, attachments decompressed, profiles decoded (default 192); past it
    /// uploads get 503 with Retry-After.
    pub memory_limit_mb: Option<u64>,
    /// MiB one upload's attachments may take decompressed, all together (default 64).
    pub upload_decompressed_mb: Option<u64>,
    /// Connections open at once (default 256); past it a new one is closed at once.
    pub max_connections: Option<u64>,
    /// Below this many MiB free where uploads are stored or queued, uploads get 507
    /// (default 64).
    pub min_free_mb: Option<u64>,
    /// Protobuf fields and elements one profile may hold (default 8,388,608: as many as
    /// bytes in the largest profile accepted decompressed, so no profile within the size
    /// limits is refused for it; the memory budget is what protects the receiver).
    pub max_profile_fields: Option<u64>,
    /// Stored uploads kept under out_dir: the oldest are deleted past this many MiB, or
    /// this many days (default: kept).
    pub retention_mb: Option<u64>,
    pub retention_days: Option<u64>,
}

/// Each numeric key's range, as documented in agentprof.yaml.example.
pub const RANGES: &[(&str, u64, u64)] = &[
    ("body_size_limit_mb", 1, 1024),
    ("cache_capacity_mb", 1, 1 << 20),
    ("read_timeout_s", 1, 3600),
    ("forward_timeout_s", 1, 3600),
    ("memory_limit_mb", 16, 1 << 20),
    ("upload_decompressed_mb", 1, 4096),
    ("max_connections", 1, 65_536),
    ("min_free_mb", 0, 1 << 20),
    ("max_profile_fields", 1000, 1_000_000_000),
    ("retention_mb", 1, 1 << 30),
    ("retention_days", 1, 36_500),
];

impl ReceiveFile {
    fn value(&self, key: &str) -> Option<u64> {
        match key {
            "body_size_limit_mb" => self.body_size_limit_mb,
            "cache_capacity_mb" => self.cache_capacity_mb,
            "read_timeout_s" => self.read_timeout_s,
            "forward_timeout_s" => self.forward_timeout_s,
            "memory_limit_mb" => self.memory_limit_mb,
            "upload_decompressed_mb" => self.upload_decompressed_mb,
            "max_connections" => self.max_connections,
            "min_free_mb" => self.min_free_mb,
            "max_profile_fields" => self.max_profile_fields,
            "retention_mb" => self.retention_mb,
            "retention_days" => self.retention_days,
            _ => None,
        }
    }
}

#[derive(Debug, Default, Deserialize)]
struct Wrapper {
    #[serde(default)]
    receive: Option<ReceiveFile>,
}

/// The `receive:` section of the agentprof.yaml at `source` (none: all defaults).
pub fn load(source: Option<&Path>) -> Result<ReceiveFile, UsageError> {
    let Some(path) = source else {
        return Ok(ReceiveFile::default());
    };
    let text = crate::config::read_config_text(path)?;
    // Only this section is read here; the rest of the file was checked by AgentConfig.
    let value: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&text).map_err(|e| UsageError::yaml(path, &e))?;
    if value.get("receive").is_none() {
        return Ok(ReceiveFile::default());
    }
    let w: Wrapper = serde_yaml_ng::from_str(&text).map_err(|e| UsageError::yaml(path, &e))?;
    let r = w.receive.unwrap_or_default();
    let at = |key: &str, message: String| {
        UsageError::at(
            path,
            crate::config::find_key_line(&text, key).unwrap_or(1),
            1,
            message,
        )
    };
    if let Some(list) = &r.endpoints {
        endpoints(list).map_err(|m| at("endpoints", format!("receive.endpoints: {m}")))?;
    }
    for (k, min, max) in RANGES {
        if let Some(v) = r.value(k)
            && !(*min..=*max).contains(&v)
        {
            return Err(at(k, format!("receive.{k}: {v} is outside {min} to {max}")));
        }
    }
    Ok(r)
}

crate::error::message_error! {
    /// Why `receive.endpoints` cannot be served.
    EndpointError
}

/// Upload paths the router can serve: each absolute, of URL path characters only (no route
/// parameters, no wildcards), none twice, none that is the health check's.
fn endpoints(list: &[String]) -> Result<(), EndpointError> {
    let mut seen = std::collections::HashSet::new();
    for e in list {
        let ok_char = |c: char| c.is_ascii_alphanumeric() || "-._~/".contains(c);
        if !e.starts_with('/') || e.len() < 2 || !e.chars().all(ok_char) || e.contains("//") {
            return Err(format!(
                "{e:?} is not a plain path (letters, digits and -._~/ only; write /profiling/v1/input)"
            ).into());
        }
        if e == "/healthz" {
            return Err("\"/healthz\" is the receiver's health check".into());
        }
        if !seen.insert(e.trim_end_matches('/')) {
            return Err(format!("{e:?} is listed twice").into());
        }
    }
    Ok(())
}
