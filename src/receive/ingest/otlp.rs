//! OTLP profiles over HTTP, `POST /v1development/profiles` (protobuf or JSON, gzip or not):
//! one upload per resource and scope, the profiles that were one pprof profile one file
//! again.

use super::super::form::{Reject, UploadLimits};
use super::{charge, encode, inflated, otel_tag_name, stem_of, tag, unique};
use crate::budget::Reservation;
use crate::pull::upload::Upload;

/// An OTLP request (`content_type` protobuf or JSON, `gzip` when Content-Encoding says so
/// or the bytes are gzip) as uploads: one per resource and scope, one attachment per pprof
/// profile it makes, named by its type. `Ok((uploads, json))`: `json` when the request was
/// JSON (the answer is written in kind).
pub(crate) fn otlp(
    content_type: &str,
    gzip: bool,
    body: &[u8],
    limits: &UploadLimits,
    received: jiff::Timestamp,
    held: &mut Reservation,
) -> Result<(Vec<Upload>, bool), Reject> {
    let json = content_type.starts_with("application/json");
    if !json
        && !content_type.is_empty()
        && !content_type.starts_with("application/x-protobuf")
        && !content_type.starts_with("application/protobuf")
    {
        return Err(Reject::Unsupported(format!(
            "Content-Type {content_type}: OTLP/HTTP is application/x-protobuf or application/json"
        )));
    }
    let mut buf = Vec::new();
    let body = inflated(body, gzip, limits, held, &mut buf)?;
    let req = request(body, json, limits, held)?;
    let imported = otlp::import::import(&req).map_err(|e| Reject::Invalid(format!("OTLP: {e}")))?;
    let mut uploads: Vec<Grouped> = Vec::new();
    for im in imported {
        let i = match uploads
            .iter()
            .position(|g| g.resource == im.resource && g.scope == im.scope)
        {
            Some(i) => i,
            None => {
                uploads.push(Grouped {
                    resource: im.resource.clone(),
                    scope: im.scope.clone(),
                    upload: upload_of(&im, received),
                });
                uploads.len() - 1
            }
        };
        let up = &mut uploads[i].upload;
        let stem = stem_of(&im.profile, &[]);
        let name = unique(&up.attachments, &stem);
        up.attachments.push((name, encode(&im.profile)));
        if let Some((format, bytes)) = im.original.filter(|(f, _)| f != "pprof" && !f.is_empty()) {
            let ext: String = format
                .chars()
                .filter(|c| c.is_ascii_alphanumeric())
                .collect();
            up.attachments
                .push((format!("original-{stem}.{ext}"), bytes));
        }
    }
    Ok((uploads.into_iter().map(|g| g.upload).collect(), json))
}

/// The uploads of a request, by the resource and scope they came under.
struct Grouped {
    resource: Vec<(String, String)>,
    scope: String,
    upload: Upload,
}

/// The request decoded: JSON with its parse charged to `held`; protobuf with every
/// message counted against `max_profile_fields` and the memory it takes charged, before it
/// is decoded.
fn request(
    body: &[u8],
    json: bool,
    limits: &UploadLimits,
    held: &mut Reservation,
) -> Result<otlp::proto::ExportProfilesServiceRequest, Reject> {
    if json {
        charge(
            held,
            32 * body.len() as u64 + 4096,
            "parsing the OTLP/JSON request",
        )?;
        return otlp::json::from_json(body).map_err(|e| Reject::Invalid(format!("OTLP/JSON: {e}")));
    }
    let scan =
        otlp::scan::scan(body, limits.part.fields, limits.part.memory).map_err(|e| match e {
            otlp::Error::Malformed(_) | otlp::Error::Wire(_) => {
                Reject::Invalid(format!("OTLP protobuf: {e}"))
            }
            e => Reject::TooLarge(format!("OTLP request: {e}")),
        })?;
    charge(held, scan.memory, "decoding the OTLP request")?;
    use prost::Message;
    otlp::proto::ExportProfilesServiceRequest::decode(body)
        .map_err(|e| Reject::Invalid(format!("OTLP protobuf: {e}")))
}

/// The upload a resource and scope become (without attachments yet): the resource's and
/// the profile's attributes as tags, the scope as `otel.scope.name`, the profile's time.
fn upload_of(im: &otlp::import::Imported, received: jiff::Timestamp) -> Upload {
    let mut tags = Vec::new();
    for (k, v) in im.resource.iter().chain(&im.attributes) {
        let t = tag(otel_tag_name(k), v);
        if !tags.contains(&t) {
            tags.push(t);
        }
    }
    if !tags.iter().any(|t: &String| t.starts_with("service:")) {
        tags.insert(0, "service:unknown_service".into());
    }
    if !im.scope.is_empty() {
        tags.push(tag("otel.scope.name", &im.scope));
    }
    tags.push("ingest:otlp".into());
    let start = if im.profile.time_nanos > 0 {
        jiff::Timestamp::from_nanosecond(im.profile.time_nanos as i128).unwrap_or(received)
    } else {
        received
    };
    let end =
        jiff::Timestamp::from_nanosecond(start.as_nanosecond() + im.profile.duration_nanos as i128)
            .unwrap_or(start);
    let family = im
        .resource
        .iter()
        .find(|(k, _)| k == "process.runtime.name" || k == "telemetry.sdk.language")
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| "unknown".into());
    Upload {
        attachments: Vec::new(),
        tags,
        start,
        end,
        family,
    }
}
