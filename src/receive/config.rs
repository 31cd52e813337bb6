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
    pub spool_dir: Option<PathBuf>,
    /// Listen over TLS (PEM certificate chain and key).
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    /// Seconds a sender has to send an upload's body (default 60; its headers: at most 10):
    /// a slower or stalled one gets 408 and its connection is closed.
    pub read_timeout_s: Option<u64>,
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
    for e in r.endpoints.iter().flatten() {
        if !e.starts_with('/') || e.contains(char::is_whitespace) {
            return Err(UsageError::config(
                path,
                format!("receive.endpoints: {e:?} is not a path (write /profiling/v1/input)"),
            ));
        }
    }
    for (k, v, max) in [
        ("body_size_limit_mb", r.body_size_limit_mb, 1024),
        ("cache_capacity_mb", r.cache_capacity_mb, 1 << 20),
        ("read_timeout_s", r.read_timeout_s, 3600),
    ] {
        if let Some(v) = v
            && !(1..=max).contains(&v)
        {
            return Err(UsageError::config(
                path,
                format!("receive.{k}: {v} is outside 1 to {max}"),
            ));
        }
    }
    Ok(r)
}
