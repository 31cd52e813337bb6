//! Pyroscope's push API, `POST /push.v1.PusherService/Push` (Connect over HTTP, protobuf or
//! JSON, gzip or not), as the SDKs built on pyroscope-rs send it (pyroscope-io for Python):
//! series of labels and raw pprof profiles.

use serde::Deserialize;

use super::super::form::{Reject, UploadLimits};
use super::{charge, decode, inflated, otel_tag_name, stem_of, tag, unique};
use crate::budget::Reservation;
use crate::pull::upload::Upload;

#[derive(Clone, PartialEq, prost::Message, Deserialize)]
#[serde(default)]
struct PushRequest {
    #[prost(message, repeated, tag = "1")]
    series: Vec<RawProfileSeries>,
}

#[derive(Clone, PartialEq, prost::Message, Deserialize)]
#[serde(default)]
struct RawProfileSeries {
    #[prost(message, repeated, tag = "1")]
    labels: Vec<LabelPair>,
    #[prost(message, repeated, tag = "2")]
    samples: Vec<RawSample>,
}

#[derive(Clone, PartialEq, prost::Message, Deserialize)]
#[serde(default)]
struct LabelPair {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(string, tag = "2")]
    value: String,
}

#[derive(Clone, PartialEq, prost::Message, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct RawSample {
    #[prost(bytes = "vec", tag = "1")]
    #[serde(deserialize_with = "base64")]
    raw_profile: Vec<u8>,
    #[prost(string, tag = "2")]
    #[serde(rename = "ID")]
    id: String,
}

fn base64<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
    use base64::Engine;
    let s = String::deserialize(d)?;
    base64::engine::general_purpose::STANDARD
        .decode(s.trim())
        .map_err(|e| serde::de::Error::custom(format!("rawProfile is not base64: {e}")))
}

/// The stem a series' `__name__` gives its profiles (`process_cpu` → `cpu`).
fn push_stem(name: &str) -> Option<&'static str> {
    Some(match name {
        "process_cpu" | "cpu" => "cpu",
        "memory" | "alloc" | "heap" => "heap",
        "goroutine" | "goroutines" => "goroutine",
        "mutex" => "mutex",
        "block" => "block",
        "wall" => "wall",
        _ => return None,
    })
}

/// A push request as uploads: one per series, its labels as tags (`service_name` the
/// service), each raw profile an attachment stored as sent. `Ok((uploads, json))`: `json`
/// when the request was JSON (the answer is written in kind).
pub(crate) fn push(
    content_type: &str,
    gzip: bool,
    body: &[u8],
    limits: &UploadLimits,
    received: jiff::Timestamp,
    held: &mut Reservation,
) -> Result<(Vec<Upload>, bool), Reject> {
    let json = content_type.starts_with("application/json");
    let mut buf = Vec::new();
    let body = inflated(body, gzip, limits, held, &mut buf)?;
    let parse = if json { 32 } else { 2 };
    charge(
        held,
        parse * body.len() as u64 + 4096,
        "parsing the push request",
    )?;
    let req: PushRequest = if json {
        serde_json::from_slice(body).map_err(|e| Reject::Invalid(format!("push (JSON): {e}")))?
    } else {
        use prost::Message;
        PushRequest::decode(body).map_err(|e| Reject::Invalid(format!("push (protobuf): {e}")))?
    };
    let mut out = Vec::new();
    for (i, series) in req.series.iter().enumerate() {
        let up = upload(i, series, limits, received, held)?;
        if !up.attachments.is_empty() {
            out.push(up);
        }
    }
    Ok((out, json))
}

/// Series `i` as an upload.
fn upload(
    i: usize,
    series: &RawProfileSeries,
    limits: &UploadLimits,
    received: jiff::Timestamp,
    held: &mut Reservation,
) -> Result<Upload, Reject> {
    let label = |n: &str| {
        series
            .labels
            .iter()
            .find(|l| l.name == n)
            .map(|l| l.value.as_str())
    };
    let service = label("service_name").unwrap_or("unknown_service");
    let mut tags = vec![tag("service", service)];
    for l in &series.labels {
        if l.name == "service_name" || (l.name.starts_with("__") && l.name.ends_with("__")) {
            continue;
        }
        let value = match (l.name.as_str(), l.value.as_str()) {
            ("process.runtime.name", "cpython") => "python",
            (_, v) => v,
        };
        tags.push(tag(otel_tag_name(&l.name), value));
    }
    tags.push("ingest:pyroscope".into());
    let family = label("process.runtime.name")
        .map(|r| if r == "cpython" { "python" } else { r })
        .unwrap_or("unknown")
        .to_string();
    let mut up = Upload {
        attachments: Vec::new(),
        tags,
        start: received,
        end: received,
        family,
    };
    for (j, smp) in series.samples.iter().enumerate() {
        let what = format!("series {i}, sample {j}");
        let p = decode(&what, &smp.raw_profile, &limits.part, held)?;
        if j == 0 && p.time_nanos > 0 {
            let start = p.time_nanos as i128;
            up.start = jiff::Timestamp::from_nanosecond(start).unwrap_or(received);
            up.end = jiff::Timestamp::from_nanosecond(start + p.duration_nanos as i128)
                .unwrap_or(up.start);
        }
        let stem = label("__name__")
            .and_then(push_stem)
            .map(String::from)
            .unwrap_or_else(|| stem_of(&p, &[]));
        let name = unique(&up.attachments, &stem);
        up.attachments.push((name, smp.raw_profile.clone()));
    }
    Ok(up)
}
