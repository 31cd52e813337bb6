//! What other profilers send, made into the upload dd-trace sends, so it is queued, stored,
//! listed, shown and forwarded as one: Pyroscope's ingest API (`pyroscope.rs`: `POST
//! /ingest`, pprof in a multipart form with `profile`, `prev_profile` and
//! `sample_type_config`, `folded` and `lines` text, `jfr` stored as it came), Pyroscope's
//! push API (`push.rs`: what the SDKs built on pyroscope-rs send) and OTLP profiles over HTTP
//! (`otlp.rs`: `POST /v1development/profiles`, protobuf or JSON, gzip or not). Every profile
//! is decoded within the part limits and the memory budget, as an upload's attachments are.

pub(super) mod otlp;
pub(super) mod push;
pub(super) mod pyroscope;

use pprof::proto as pp;

use super::form::{Reject, UploadLimits};
use super::reject::charge;
use crate::budget::Reservation;
use crate::pprof::Limits;

/// A tag's name or value as the upload protocol carries it: commas and newlines (and a
/// colon, in a name) become `_`.
fn tag_part(s: &str, name: bool) -> String {
    s.chars()
        .map(|c| match c {
            ',' | '\n' | '\r' => '_',
            ':' if name => '_',
            c => c,
        })
        .collect()
}

fn tag(k: &str, v: &str) -> String {
    format!("{}:{}", tag_part(k, true), tag_part(v, false))
}

/// The file stem of a pprof profile by its sample types (and Pyroscope's display names).
fn stem_of(p: &pp::Profile, display: &[String]) -> String {
    if display.iter().any(|d| d.starts_with("mutex_")) {
        return "mutex".into();
    }
    if display.iter().any(|d| d.starts_with("block_")) {
        return "block".into();
    }
    let s = |i: i64| {
        p.string_table
            .get(i as usize)
            .map(String::as_str)
            .unwrap_or("")
    };
    let types: Vec<&str> = p.sample_type.iter().map(|t| s(t.r#type)).collect();
    let has = |t: &str| types.contains(&t);
    if has("cpu") {
        "cpu".into()
    } else if has("alloc_space") || has("inuse_space") {
        "heap".into()
    } else if has("goroutine") || has("goroutines") {
        "goroutine".into()
    } else if has("contentions") && has("delay") {
        "contention".into()
    } else {
        let first = types.first().copied().unwrap_or("profile");
        let clean: String = first
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        if clean.is_empty() {
            "profile".into()
        } else {
            clean
        }
    }
}

/// Decompresses and decodes a profile within `limits`, charging `held` for it first.
fn decode(
    name: &str,
    data: &[u8],
    limits: &Limits,
    held: &mut Reservation,
) -> Result<pp::Profile, Reject> {
    let bad = |e: crate::pprof::Error| Reject::Attachment {
        name: name.to_string(),
        why: e.to_string(),
    };
    charge(
        held,
        limits.decompressed.min(64 * data.len() as u64 + 4096),
        name,
    )?;
    let raw = crate::pprof::decompress(data, limits).map_err(bad)?;
    let scan = crate::pprof::memory_estimate(&raw, limits).map_err(bad)?;
    charge(held, scan.memory, name)?;
    crate::pprof::decode_raw(&raw, limits).map_err(bad)
}

fn encode(p: &pp::Profile) -> Vec<u8> {
    use prost::Message;
    crate::pprof::gzip_fast(&p.encode_to_vec())
}

/// The tag an OTel resource or profile attribute becomes: dd-trace's name where there is
/// one (`service.name` → `service`), else its own.
fn otel_tag_name(key: &str) -> &str {
    match key {
        "service.name" => "service",
        "service.version" => "version",
        "deployment.environment.name" | "deployment.environment" => "env",
        "host.name" => "host",
        "process.runtime.name" => "runtime",
        "k8s.pod.name" => "pod_name",
        "k8s.pod.uid" => "pod_uid",
        "k8s.namespace.name" => "namespace",
        "k8s.node.name" => "node_name",
        "container.name" => "container_name",
        "k8s.cluster.name" => "cluster_name_k8s",
        k => k,
    }
}

/// A body inflated when Content-Encoding says gzip or the bytes are gzip (within
/// `upload_decompressed_mb`, charged to `held` first), else as it is.
fn inflated<'a>(
    body: &'a [u8],
    gzip: bool,
    limits: &UploadLimits,
    held: &mut Reservation,
    buf: &'a mut Vec<u8>,
) -> Result<&'a [u8], Reject> {
    let sniffed = crate::pprof::sniff(body) == crate::pprof::Compression::Gzip;
    if !gzip && !sniffed {
        return Ok(body);
    }
    charge(held, limits.decompressed, "inflating the request")?;
    let lim = Limits {
        body: body.len() as u64 + 1,
        decompressed: limits.decompressed,
        ..limits.part
    };
    *buf = crate::pprof::decompress(body, &lim).map_err(|e| match e {
        crate::pprof::Error::TooLargeDecompressed { limit } => Reject::TooLarge(format!(
            "the request is over {limit} bytes decompressed (upload_decompressed_mb)"
        )),
        e => Reject::Invalid(format!("gzip: {e}")),
    })?;
    held.shrink_to(held.bytes().saturating_sub(limits.decompressed) + buf.len() as u64);
    Ok(buf.as_slice())
}

/// `name.pprof`, or `name-2.pprof`, `name-3.pprof` … when `taken` has it.
fn unique(taken: &[(String, Vec<u8>)], stem: &str) -> String {
    let mut name = format!("{stem}.pprof");
    let mut n = 2;
    while taken.iter().any(|(a, _)| *a == name) {
        name = format!("{stem}-{n}.pprof");
        n += 1;
    }
    name
}
