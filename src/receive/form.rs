//! An upload as dd-trace profilers send it, parsed and checked before it is acknowledged.
//!
//! Two forms, as DataKit accepts both: the current one (dd-trace-go v1.53+ and v2, ddtrace
//! for Python): a part `event` (`event.json`) with `start`, `end`, `attachments`,
//! `tags_profiler`, `family`, `version`, and one file part per attachment (`cpu.pprof`,
//! `delta-heap.pprof`, `goroutines.pprof`, `metrics.json`, `auto.pprof`, `go.trace`…); and
//! the older one: form values `tags[]`, `format`, `runtime`, `recording-start`,
//! `recording-end`, `types[i]`, with files `data[i]`. Every pprof attachment is decompressed
//! (zstd, gzip, lz4 frame or raw, sniffed) within the network limits and its protobuf
//! fields counted against the budget before anything is decoded; other files (JFR, traces,
//! metrics) are kept as sent. What an attachment will take decompressed is reserved from the
//! memory budget before it is decompressed (its stated size where the format says it), and
//! all of an upload's attachments together stay within `upload_decompressed_mb`.

use bytes::Bytes;

use super::multipart::event_too_large;
pub use super::multipart::{EVENT_LIMIT, boundary};
pub(super) use super::multipart::{Field, FieldsError, fields};
pub(super) use super::reject::busy;
pub use super::reject::{Reject, UploadLimits};
use crate::budget::{Reservation, stated_size};
use crate::pprof::{Compression, Limits};

/// Which form the client used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Form {
    Event,
    Legacy,
}

/// What an attachment holds.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A pprof profile; its type as the file name says (`cpu`, `delta-heap`, `goroutine`,
    /// `auto` …).
    Pprof,
    /// dd-trace-go's `metrics.json`: `[[name, value], …]`.
    Metrics,
    /// Anything else (JFR, execution traces, code provenance): stored as sent.
    Other,
}

#[derive(Debug, Clone)]
pub struct Attachment {
    /// The name the client gave it (`cpu.pprof`, or the older form's `data[0]`).
    pub name: String,
    /// The profile type or file stem files are named by (`cpu`, `delta-heap`, `goroutine`,
    /// `metrics`, `go.trace` …).
    pub stem: String,
    pub kind: Kind,
    /// As sent.
    pub data: Bytes,
    pub compression: Compression,
    /// Decompressed, for compressed pprof, metrics and other attachments (None: `data` is
    /// the content).
    pub raw: Option<Vec<u8>>,
}

/// A checked upload.
#[derive(Debug, Clone)]
pub struct Upload {
    pub form: Form,
    pub tags: Vec<String>,
    pub start: Option<jiff::Timestamp>,
    pub end: Option<jiff::Timestamp>,
    /// `family` of event.json, or the older form's `runtime`.
    pub family: Option<String>,
    /// The other keys of event.json (`version`, `process_tags`, `endpoint_counts`…), kept.
    pub event: Option<serde_json::Value>,
    pub attachments: Vec<Attachment>,
    /// Parts that are neither a profile, `metrics.json`, a file event.json lists, nor a field
    /// of either form: skipped, as the Datadog intake skips them (their names, for the log).
    pub skipped: Vec<String>,
}

impl Upload {
    /// The first value of tag `key` (`service:x` → `x`).
    pub fn tag(&self, key: &str) -> Option<&str> {
        self.tags
            .iter()
            .find_map(|t| t.split_once(':').filter(|(k, _)| *k == key).map(|(_, v)| v))
    }

    /// The language, resolved as DataKit does: the `language` tag, then `runtime`, then
    /// `family`; names normalised (`golang` is `go`, `jvm` is `java`).
    pub fn language(&self) -> String {
        let l = self
            .tag("language")
            .or_else(|| self.tag("runtime"))
            .or(self.family.as_deref())
            .unwrap_or("unknown")
            .to_ascii_lowercase();
        match l.as_str() {
            "golang" => "go".into(),
            "jvm" => "java".into(),
            "node" | "node.js" => "nodejs".into(),
            ".net" => "dotnet".into(),
            _ => l,
        }
    }

    /// Seconds between the recording's start and end (0 when either is missing).
    pub fn duration_s(&self) -> f64 {
        match (self.start, self.end) {
            (Some(s), Some(e)) => (e.as_nanosecond() - s.as_nanosecond()).max(0) as f64 / 1e9,
            _ => 0.0,
        }
    }
}

fn timestamp(what: &str, s: &str) -> Result<jiff::Timestamp, Reject> {
    s.parse::<jiff::Timestamp>()
        .map_err(|e| Reject::Event(format!("{what} {s:?} is not an RFC 3339 time: {e}")))
}

/// The stem files are named by: a profile's type (`cpu`, `delta-heap`; dd-trace-go's
/// `goroutines` is `goroutine`, as `pull` names it), else the name without `.pprof`.
fn stem_of(name: &str) -> String {
    let s = name.strip_suffix(".pprof").unwrap_or(name);
    match s {
        "goroutines" => "goroutine".into(),
        "metrics.json" => "metrics".into(),
        _ => s.to_string(),
    }
}

/// Parses and checks an upload kept whole (the queue's record of one acknowledged before a
/// restart), growing `held` (which holds its body already) by what its attachments take
/// decompressed: Err says why it is refused.
pub async fn parse(
    content_type: Option<&str>,
    body: Bytes,
    limits: &UploadLimits,
    held: Reservation,
) -> Result<(Upload, Reservation), Reject> {
    let b = boundary(content_type)?;
    let stream = futures_util::stream::once(async move { Ok::<_, std::io::Error>(body) });
    let parts = match fields(stream, b).await {
        Ok(p) => p,
        Err(FieldsError::Body(r)) => return Err(r),
        Err(FieldsError::Stream) => return Err(Reject::Malformed("the body was cut".into())),
    };
    checked(parts, limits, held).await
}

/// The parts read into an upload and checked, growing `held` (which holds its body already)
/// by what its attachments take decompressed: Err says why it is refused.
pub(super) async fn checked(
    parts: Vec<Field>,
    limits: &UploadLimits,
    held: Reservation,
) -> Result<(Upload, Reservation), Reject> {
    // Decompressing and checking is CPU work: on the blocking pool, so the accept loop and
    // the other requests go on meanwhile.
    let limits = *limits;
    tokio::task::spawn_blocking(move || {
        let mut held = held;
        check(parts, &limits, &mut held).map(|up| (up, held))
    })
    .await
    .map_err(|e| Reject::Malformed(format!("the check of the upload failed: {e}")))?
}

/// The parts of an upload read into it: event.json or the older form's fields, each
/// attachment decompressed and checked within the limits and `held`.
fn check(
    parts: Vec<Field>,
    limits: &UploadLimits,
    held: &mut Reservation,
) -> Result<Upload, Reject> {
    let mut up = Upload {
        form: Form::Event,
        tags: Vec::new(),
        start: None,
        end: None,
        family: None,
        event: None,
        attachments: Vec::new(),
        skipped: Vec::new(),
    };
    let mut legacy = Legacy::default();
    let mut files = Vec::new();
    for f in parts {
        if f.name == "event" {
            read_event(&f.data, &mut up, held)?;
        } else if !legacy.read(&f, &mut up)? {
            files.push(f);
        }
    }
    let listed = listed_attachments(up.event.as_ref());
    let (known, unknown): (Vec<Field>, Vec<Field>) =
        files.into_iter().partition(|f| is_known(f, &listed));
    up.skipped = unknown
        .iter()
        .map(|f| f.filename.clone().unwrap_or_else(|| f.name.clone()))
        .collect();
    let files = known;
    if up.event.is_none() && !legacy.seen {
        return Err(Reject::Event(
            "no `event` part (event.json) and none of the older form's fields".into(),
        ));
    }
    if up.event.is_none() {
        up.form = Form::Legacy;
    }
    // What the parts state they hold decompressed, all together, before any is decompressed:
    // an upload over its budget is refused at once.
    let stated: u64 = files
        .iter()
        .filter(|f| crate::pprof::sniff(&f.data) != Compression::None)
        .filter_map(|f| stated_size(&f.data))
        .map(|n| n.min(limits.part.decompressed))
        .sum();
    if stated > limits.decompressed {
        return Err(Reject::TooLarge(format!(
            "the attachments state {stated} bytes decompressed, over the upload's {} \
             (upload_decompressed_mb)",
            limits.decompressed
        )));
    }
    let body_held = held.bytes();
    let mut room = Room {
        held,
        left: limits.decompressed,
    };
    for f in files {
        up.attachments
            .push(attachment(f, &legacy, &limits.part, &mut room)?);
    }
    // What the upload holds from now on: its body and what was decompressed.
    let raw: u64 = up
        .attachments
        .iter()
        .filter_map(|a| a.raw.as_ref())
        .map(|r| r.len() as u64)
        .sum();
    room.held.shrink_to(body_held + raw);
    require_profile(&up)?;
    Ok(up)
}

/// An upload carries at least one profile (pprof or JFR); else why it is refused, with the
/// parts skipped as unknown.
fn require_profile(up: &Upload) -> Result<(), Reject> {
    let is_profile = |a: &Attachment| match a.kind {
        Kind::Pprof => true,
        Kind::Other => a.name.ends_with(".jfr") || a.stem.ends_with(".jfr"),
        Kind::Metrics => false,
    };
    if up.attachments.iter().any(is_profile) {
        return Ok(());
    }
    let skipped = if up.skipped.is_empty() {
        String::new()
    } else {
        format!("; skipped as unknown: {}", up.skipped.join(", "))
    };
    Err(Reject::Malformed(format!(
        "no profile attached (a part `*.pprof`, `*.jfr`, one event.json lists, or the older \
         form's `data[i]`){skipped}"
    )))
}

/// What parsing JSON of `len` bytes may cost in memory at most: every two bytes (`0,`) may
/// become a 32-byte value in a vector that grew by doubling.
fn parse_cost(len: usize) -> u64 {
    32 * len as u64 + 4096
}

/// The names event.json's `attachments` lists.
fn listed_attachments(event: Option<&serde_json::Value>) -> Vec<&str> {
    event
        .and_then(|e| e.get("attachments"))
        .and_then(|a| a.as_array())
        .map(|a| a.iter().filter_map(|x| x.as_str()).collect())
        .unwrap_or_default()
}

/// Whether a file part is one an upload carries: a profile (`*.pprof`, `*.jfr`, the older
/// form's `data[i]`), dd-trace-go's `metrics.json`, ddtrace's `code-provenance.json`, or a
/// file event.json lists by its part or file name.
fn is_known(f: &Field, listed: &[&str]) -> bool {
    if f.name.starts_with("data[") {
        return true;
    }
    let names = [Some(f.name.as_str()), f.filename.as_deref()];
    names.into_iter().flatten().any(|n| {
        n.ends_with(".pprof")
            || n.ends_with(".jfr")
            || matches!(n, "pprof" | "metrics.json" | "code-provenance.json")
            || listed.contains(&n)
    })
}

/// The current form's `event` part (event.json): tags, start, end, family, attachments.
/// At most [`EVENT_LIMIT`] bytes, its parse reserved from the budget before it is parsed.
fn read_event(data: &[u8], up: &mut Upload, held: &mut Reservation) -> Result<(), Reject> {
    if data.len() > EVENT_LIMIT {
        return Err(event_too_large(data.len()));
    }
    super::reject::charge(held, parse_cost(data.len()), "parsing event.json")?;
    let v: serde_json::Value =
        serde_json::from_slice(data).map_err(|e| Reject::Event(format!("not JSON: {e}")))?;
    let obj = v
        .as_object()
        .ok_or_else(|| Reject::Event("not a JSON object".into()))?;
    let s = |k: &str| obj.get(k).and_then(|x| x.as_str());
    if let Some(t) = s("tags_profiler") {
        up.tags.extend(
            t.split(',')
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(String::from),
        );
    } else if obj.contains_key("tags_profiler") {
        return Err(Reject::Event("tags_profiler is not a string".into()));
    }
    for key in ["start", "end"] {
        if obj.get(key).is_some_and(|v| !v.is_string()) {
            return Err(Reject::Event(format!(
                "{key} is {}, not an RFC 3339 time string",
                obj[key]
            )));
        }
    }
    up.start = s("start").map(|t| timestamp("start", t)).transpose()?;
    up.end = s("end").map(|t| timestamp("end", t)).transpose()?;
    up.family = s("family").map(String::from);
    if let Some(a) = obj.get("attachments")
        && !a
            .as_array()
            .is_some_and(|a| a.iter().all(|x| x.is_string()))
    {
        return Err(Reject::Event("attachments is not a list of names".into()));
    }
    up.event = Some(v);
    Ok(())
}

/// The older form's fields (`tags[]`, `format`, `runtime`, `recording-start`/`-end`,
/// `types[i]`), as they are read.
#[derive(Default)]
struct Legacy {
    seen: bool,
    types: Vec<(usize, String)>,
    format: Option<String>,
}

impl Legacy {
    /// Reads `f` when it is one of the older form's fields (true), else leaves it (false).
    fn read(&mut self, f: &Field, up: &mut Upload) -> Result<bool, Reject> {
        let text = || String::from_utf8_lossy(&f.data).into_owned();
        match f.name.as_str() {
            "tags[]" => up.tags.push(text()),
            "format" => self.format = Some(text()),
            "runtime" => up.family = Some(text()),
            "recording-start" => up.start = Some(timestamp("recording-start", &text())?),
            "recording-end" => up.end = Some(timestamp("recording-end", &text())?),
            n if n.starts_with("types[") && n.ends_with(']') => {
                let i = n[6..n.len() - 1]
                    .parse::<usize>()
                    .map_err(|_| Reject::Malformed(format!("field {n:?}")))?;
                self.types.push((i, text()));
            }
            _ => return Ok(false),
        }
        self.seen = true;
        Ok(true)
    }
}

/// One attached file: its name, the stem its stored file is named by, its kind, and (a
/// pprof) checked within the limits, decompressed where it came compressed.
/// An attachment's name, the stem its file is named by, and what kind it is: the newer
/// form names files (`cpu.pprof`, `metrics.json`), the older one numbers them (`data[i]`,
/// whose type is `types[i]` and format `format`).
fn named(f: &Field, legacy: &Legacy) -> (String, String, Kind) {
    if let Some(i) = f
        .name
        .strip_prefix("data[")
        .and_then(|r| r.strip_suffix(']'))
        .and_then(|i| i.parse::<usize>().ok())
    {
        // The older form: data[i] holds types[i]; `format` says pprof or jfr.
        let ty = legacy
            .types
            .iter()
            .find(|(j, _)| *j == i)
            .map(|(_, t)| t.clone())
            .unwrap_or_else(|| format!("data{i}"));
        let pprof = legacy.format.as_deref().is_none_or(|f| f == "pprof");
        let kind = if pprof { Kind::Pprof } else { Kind::Other };
        let stem = match kind {
            Kind::Pprof => stem_of(&ty),
            _ => format!("{ty}.{}", legacy.format.as_deref().unwrap_or("bin")),
        };
        (f.name.clone(), stem, kind)
    } else {
        let name = f.filename.clone().unwrap_or_else(|| f.name.clone());
        let kind = if name.ends_with(".pprof") || name == "pprof" {
            Kind::Pprof
        } else if name == "metrics.json" {
            Kind::Metrics
        } else {
            Kind::Other
        };
        (name.clone(), stem_of(&name), kind)
    }
}

/// What is left of an upload's decompressed bytes, and its reservation of the memory budget.
struct Room<'a> {
    held: &'a mut Reservation,
    left: u64,
}

impl Room<'_> {
    /// Decompresses `data` (attachment `name`) within the part's limits and what is left of
    /// the upload's, reserving from the budget first what it states it holds (or, when it
    /// does not say, what it may take); a part that states less than it holds gets the rest
    /// reserved when it passes its stated size.
    fn decompress(&mut self, name: &str, data: &[u8], part: &Limits) -> Result<Vec<u8>, Reject> {
        let cap = part.decompressed.min(self.left);
        let over = |limit: u64| {
            Reject::TooLarge(format!(
                "attachment {name}: more than {limit} bytes decompressed (the upload may take \
                 {} bytes decompressed in all: upload_decompressed_mb)",
                self.left
            ))
        };
        // A stated size within the part's limit is taken (a part whose size puts the upload
        // over its budget is refused before it is decompressed); one past it may be a
        // corrupt stream's, so that part is decompressed up to the limit and tells.
        let first = match stated_size(data) {
            Some(n) if n <= part.decompressed && n > self.left => return Err(over(n)),
            Some(n) if n <= part.decompressed => n.max(1),
            _ => cap.max(1),
        };
        super::reject::charge(self.held, first, "decompressing an attachment")?;
        let at = |limit: u64| Limits {
            decompressed: limit,
            ..*part
        };
        let raw = match crate::pprof::decompress(data, &at(first)) {
            Err(crate::pprof::Error::TooLargeDecompressed { .. }) if first < cap => {
                super::reject::charge(self.held, cap - first, "decompressing an attachment")?;
                crate::pprof::decompress(data, &at(cap))
            }
            other => other,
        }
        .map_err(|e| match e {
            crate::pprof::Error::TooLarge { .. }
            | crate::pprof::Error::TooLargeDecompressed { .. } => over(cap),
            e => Reject::Attachment {
                name: name.to_string(),
                why: e.to_string(),
            },
        })?;
        self.left = self.left.saturating_sub(raw.len() as u64);
        Ok(raw)
    }
}

fn attachment(
    f: Field,
    legacy: &Legacy,
    limits: &Limits,
    room: &mut Room<'_>,
) -> Result<Attachment, Reject> {
    let (name, stem, kind) = named(&f, legacy);
    let compression = crate::pprof::sniff(&f.data);
    let raw = match kind {
        // Uncompressed: checked where it is, not copied.
        Kind::Pprof if compression == Compression::None => {
            let len = f.data.len() as u64;
            if len > limits.decompressed.min(room.left) {
                return Err(Reject::TooLarge(format!(
                    "attachment {name}: {len} bytes is over the {}-byte decompressed limit \
                     (or what is left of the upload's: upload_decompressed_mb)",
                    limits.decompressed
                )));
            }
            room.left -= len;
            crate::pprof::prescan(&f.data, limits.fields).map_err(|e| Reject::Attachment {
                name: name.clone(),
                why: e.to_string(),
            })?;
            None
        }
        Kind::Pprof => {
            let raw = room.decompress(&name, &f.data, limits)?;
            crate::pprof::prescan(&raw, limits.fields).map_err(|e| Reject::Attachment {
                name: name.clone(),
                why: e.to_string(),
            })?;
            Some(raw)
        }
        Kind::Metrics => room.decompress(&name, &f.data, limits).ok(),
        // A compressed file (code provenance, traces) is stored readable when it
        // decompresses within the limits, else as sent.
        Kind::Other if compression != Compression::None => {
            room.decompress(&name, &f.data, limits).ok()
        }
        Kind::Other => None,
    };
    Ok(Attachment {
        name,
        stem,
        kind,
        data: f.data,
        compression,
        raw,
    })
}
