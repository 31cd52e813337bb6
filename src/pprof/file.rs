//! A pprof file read from disk with the limits the user allows, as `top`, `diff`,
//! `flamegraph` and `ui` read it.

use std::path::Path;

use crate::error::UsageError;

use super::decode::{Limits, decode};
use super::model::Pprof;

/// Reads and checks a profile file; what is wrong with it is a usage error naming the file.
pub fn load(path: &Path, limits: &Limits) -> anyhow::Result<Pprof> {
    let meta = std::fs::metadata(path)
        .map_err(|e| UsageError::config(path, format!("cannot read: {e}")))?;
    if meta.len() > limits.body {
        return Err(UsageError::config(
            path,
            format!(
                "{} bytes is over the {}-byte limit (raise it with --max-size-mb)",
                meta.len(),
                limits.body
            ),
        )
        .into());
    }
    let bytes = crate::config::read_limited(path, limits.body, "--max-size-mb")?;
    let hint = |e: &crate::pprof::decode::DecodeError| match e {
        crate::pprof::decode::DecodeError::TooLargeDecompressed { .. } => {
            " (raise it with --max-decompressed-mb)"
        }
        crate::pprof::decode::DecodeError::Budget { .. } => " (raise it with --max-fields)",
        crate::pprof::decode::DecodeError::Memory { .. } => " (raise it with --max-memory-mb)",
        _ => "",
    };
    let proto =
        decode(&bytes, limits).map_err(|e| UsageError::config(path, format!("{e}{}", hint(&e))))?;
    let mut p = Pprof::new(proto).map_err(|e| UsageError::config(path, e.to_string()))?;
    // Names and drop_frames as go tool pprof reads them, so the rows are the same.
    if let Some(warning) = p.prepare_for_report() {
        eprintln!("agentprof: {}: {warning}", path.display());
    }
    Ok(p)
}
