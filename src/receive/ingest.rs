//! What other profilers send, made into the upload dd-trace sends, so it is queued, stored,
//! listed, shown and forwarded as one: Pyroscope's ingest API (`POST /ingest`: pprof in a
//! multipart form with `profile`, `prev_profile` and `sample_type_config`; `folded` and
//! `lines` text; `jfr` stored as it came) and OTLP profiles over HTTP
//! (`POST /v1development/profiles`: protobuf or JSON, gzip or not). Every profile is
//! decoded within the part limits and the memory budget, as an upload's attachments are.

use std::collections::HashMap;

use bytes::Bytes;
use pprof::proto as pp;

use super::form::{Field, Reject, UploadLimits};
use crate::budget::Reservation;
use crate::pprof::decode::Limits;
use crate::pull::upload::Upload;

/// What `runtime` a Pyroscope `spyName` is.
fn spy_runtime(spy: &str) -> &str {
    match spy {
        "gospy" | "ebpfspy-go" => "go",
        "pyspy" | "pyroscope-rs-python" => "python",
        "rbspy" => "ruby",
        "javaspy" | "grafana-agent.java" => "java",
        "dotnetspy" => "dotnet",
        "phpspy" => "php",
        "nodespy" => "nodejs",
        "" => "unknown",
        other => other,
    }
}

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

/// Profile types Pyroscope's older clients put at the end of an application name
/// (`app.cpu`), with the file stem agentprof gives each.
const NAME_TYPES: &[(&str, &str)] = &[
    ("cpu", "cpu"),
    ("itimer", "cpu"),
    ("wall", "wall"),
    ("alloc_objects", "heap"),
    ("alloc_space", "heap"),
    ("inuse_objects", "heap"),
    ("inuse_space", "heap"),
    ("goroutines", "goroutine"),
    ("mutex_count", "mutex"),
    ("mutex_duration", "mutex"),
    ("block_count", "block"),
    ("block_duration", "block"),
    ("lock_count", "lock"),
    ("lock_duration", "lock"),
];

/// `app.cpu{k=v,…}`: the application, the type its name ends with (if any), its labels.
pub(super) fn parse_name(
    name: &str,
) -> Result<(String, Option<&'static str>, Vec<(String, String)>), String> {
    let (app, labels) = match name.find('{') {
        Some(i) => {
            let rest = &name[i + 1..];
            let inner = rest
                .strip_suffix('}')
                .ok_or_else(|| format!("name {name:?}: its labels do not end with `}}`"))?;
            (&name[..i], inner)
        }
        None => (name, ""),
    };
    let app = app.trim();
    if app.is_empty() {
        return Err("`name` has no application name (app.cpu{k=v,…})".into());
    }
    let mut out = Vec::new();
    for kv in labels.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| format!("name {name:?}: label {kv:?} is not key=value"))?;
        out.push((k.trim().to_string(), v.trim().trim_matches('"').to_string()));
    }
    let (app, kind) = match app.rsplit_once('.') {
        Some((a, suffix)) => match NAME_TYPES.iter().find(|(n, _)| *n == suffix) {
            Some((_, stem)) if !a.is_empty() => (a, Some(*stem)),
            _ => (app, None),
        },
        None => (app, None),
    };
    Ok((app.to_string(), kind, out))
}

/// A time as Pyroscope clients send `from` and `until`: seconds, milliseconds,
/// microseconds or nanoseconds since the epoch, told apart by size.
pub(super) fn epoch(text: &str) -> Option<jiff::Timestamp> {
    let n: i64 = text.trim().parse().ok()?;
    let ns = match n {
        n if n >= 100_000_000_000_000_000 => n as i128,
        n if n >= 100_000_000_000_000 => n as i128 * 1_000,
        n if n >= 100_000_000_000 => n as i128 * 1_000_000,
        n => n as i128 * 1_000_000_000,
    };
    jiff::Timestamp::from_nanosecond(ns).ok()
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
    let bad = |e: crate::pprof::decode::DecodeError| Reject::Attachment {
        name: name.to_string(),
        why: e.to_string(),
    };
    if !held.grow(limits.decompressed.min(64 * data.len() as u64 + 4096)) {
        return Err(super::form::busy());
    }
    let raw = crate::pprof::decode::decompress(data, limits).map_err(bad)?;
    let scan = crate::pprof::decode::memory_estimate(&raw, limits).map_err(bad)?;
    if !held.grow(scan.memory) {
        return Err(super::form::busy());
    }
    crate::pprof::decode::decode_raw(&raw, limits).map_err(bad)
}

fn encode(p: &pp::Profile) -> Vec<u8> {
    use prost::Message;
    crate::pprof::gzip_fast(&p.encode_to_vec())
}

/// A sample's identity across two profiles: its frames (function, file, line of every
/// line of every location) and labels.
fn sample_key(p: &pp::Profile, smp: &pp::Sample) -> Vec<String> {
    let s = |i: i64| {
        p.string_table
            .get(i as usize)
            .map(String::as_str)
            .unwrap_or("")
    };
    let mut key = Vec::with_capacity(smp.location_id.len() + smp.label.len());
    for id in &smp.location_id {
        let frames = p.location.iter().find(|l| l.id == *id).map(|l| {
            l.line
                .iter()
                .map(|ln| {
                    let f = p.function.iter().find(|f| f.id == ln.function_id);
                    format!(
                        "{}@{}:{}",
                        f.map(|f| s(f.name)).unwrap_or(""),
                        f.map(|f| s(f.filename)).unwrap_or(""),
                        ln.line
                    )
                })
                .collect::<Vec<_>>()
                .join("|")
        });
        key.push(frames.unwrap_or_else(|| format!("#{:x}", id)));
    }
    for l in &smp.label {
        key.push(format!(
            "{}={}/{}{}",
            s(l.key),
            s(l.str),
            l.num,
            s(l.num_unit)
        ));
    }
    key
}

/// `profile − prev_profile` for the sample types Pyroscope's `sample_type_config` marks
/// cumulative (all of them when there is no config), sample by sample; a stack's values do
/// not go below 0.
fn subtract(p: &mut pp::Profile, prev: &pp::Profile, cumulative: &dyn Fn(&str) -> bool) {
    let s = |q: &pp::Profile, i: i64| q.string_table.get(i as usize).cloned().unwrap_or_default();
    let mut before: HashMap<Vec<String>, Vec<i64>> = HashMap::new();
    let prev_types: Vec<String> = prev.sample_type.iter().map(|t| s(prev, t.r#type)).collect();
    for smp in &prev.sample {
        let e = before
            .entry(sample_key(prev, smp))
            .or_insert_with(|| vec![0; prev_types.len()]);
        for (v, x) in e.iter_mut().zip(&smp.value) {
            *v += x;
        }
    }
    let types: Vec<(usize, Option<usize>)> = p
        .sample_type
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let name = s(p, t.r#type);
            let j = cumulative(&name)
                .then(|| prev_types.iter().position(|x| *x == name))
                .flatten();
            (i, j)
        })
        .collect();
    let keys: Vec<Vec<String>> = p.sample.iter().map(|smp| sample_key(p, smp)).collect();
    for (smp, key) in p.sample.iter_mut().zip(keys) {
        let Some(old) = before.get_mut(&key) else {
            continue;
        };
        for &(i, j) in &types {
            if let (Some(j), Some(v)) = (j, smp.value.get_mut(i)) {
                let take = old[j].min(*v).max(0);
                *v -= take;
                old[j] -= take;
            }
        }
    }
}

/// The query of a Pyroscope ingest request.
struct Query {
    name: String,
    from: Option<jiff::Timestamp>,
    until: Option<jiff::Timestamp>,
    spy: String,
    sample_rate: Option<u32>,
    units: Option<String>,
    format: Option<String>,
}

fn query(q: &str) -> Result<Query, Reject> {
    let mut out = Query {
        name: String::new(),
        from: None,
        until: None,
        spy: String::new(),
        sample_rate: None,
        units: None,
        format: None,
    };
    let bad = |k: &str, v: &str| {
        Reject::Invalid(format!(
            "query {k}={v:?}: not a time (seconds to nanoseconds since the epoch)"
        ))
    };
    for (k, v) in form_urlencoded::parse(q.as_bytes()) {
        match k.as_ref() {
            "name" => out.name = v.into_owned(),
            "from" => out.from = Some(epoch(&v).ok_or_else(|| bad("from", &v))?),
            "until" => out.until = Some(epoch(&v).ok_or_else(|| bad("until", &v))?),
            "spyName" => out.spy = v.into_owned(),
            "sampleRate" => {
                out.sample_rate = Some(v.trim().parse().map_err(|_| {
                    Reject::Invalid(format!("query sampleRate={v:?}: not a whole number"))
                })?)
            }
            "units" if !v.is_empty() => out.units = Some(v.into_owned()),
            "format" if !v.is_empty() => out.format = Some(v.into_owned()),
            _ => {}
        }
    }
    if out.name.is_empty() {
        return Err(Reject::Invalid(
            "no `name` in the query (app.cpu{k=v,…})".into(),
        ));
    }
    Ok(out)
}

/// A Pyroscope ingest request as an upload. `fields` are the parts of a multipart body
/// (None: the body is the profile itself).
pub(super) fn pyroscope(
    q: &str,
    body: &Bytes,
    fields: Option<Vec<Field>>,
    limits: &UploadLimits,
    received: jiff::Timestamp,
    held: &mut Reservation,
) -> Result<Upload, Reject> {
    let q = query(q)?;
    let (app, name_kind, labels) = parse_name(&q.name).map_err(Reject::Malformed)?;
    let runtime = spy_runtime(&q.spy).to_string();
    let mut tags = vec![tag("service", &app)];
    for (k, v) in &labels {
        tags.push(tag(k, v));
    }
    tags.push(tag("runtime", &runtime));
    if !q.spy.is_empty() {
        tags.push(tag("spy_name", &q.spy));
    }
    tags.push("ingest:pyroscope".into());
    let format = q.format.clone().unwrap_or_else(|| {
        if fields.is_some() {
            "pprof".into()
        } else {
            "folded".into()
        }
    });
    let part = |fields: &Option<Vec<Field>>, n: &str| {
        fields
            .as_ref()
            .and_then(|f| f.iter().find(|x| x.name == n).map(|x| x.data.clone()))
    };
    let attachments = match format.as_str() {
        "pprof" => {
            let profile = part(&fields, "profile")
                .or_else(|| fields.is_none().then(|| body.clone()))
                .ok_or_else(|| Reject::Invalid("format=pprof: no part `profile`".into()))?;
            let config: HashMap<String, serde_json::Value> =
                match part(&fields, "sample_type_config") {
                    Some(c) if c.len() <= super::form::EVENT_LIMIT => serde_json::from_slice(&c)
                        .map_err(|e| Reject::Invalid(format!("sample_type_config: {e}")))?,
                    Some(_) => {
                        return Err(Reject::Invalid(
                            "sample_type_config: larger than 64 KiB".into(),
                        ));
                    }
                    None => HashMap::new(),
                };
            let display: Vec<String> = config
                .values()
                .filter_map(|v| {
                    v.get("display-name")
                        .and_then(|d| d.as_str())
                        .map(String::from)
                })
                .collect();
            let mut p = decode("profile", &profile, &limits.part, held)?;
            let prev = part(&fields, "prev_profile");
            let bytes = match prev {
                Some(prev) if !prev.is_empty() => {
                    let before = decode("prev_profile", &prev, &limits.part, held)?;
                    let cumulative = |t: &str| {
                        config.is_empty()
                            || config
                                .get(t)
                                .and_then(|c| c.get("cumulative"))
                                .and_then(|c| c.as_bool())
                                .unwrap_or(false)
                    };
                    subtract(&mut p, &before, &cumulative);
                    encode(&p)
                }
                // As sent: the stored file is the client's own bytes.
                _ => profile.to_vec(),
            };
            let stem = name_kind
                .map(String::from)
                .unwrap_or_else(|| stem_of(&p, &display));
            vec![(format!("{stem}.pprof"), bytes)]
        }
        "folded" | "lines" | "trie" | "tree" if format == "folded" || format == "lines" => {
            let data = part(&fields, "profile").unwrap_or_else(|| body.clone());
            let p = folded(&data, format == "lines", name_kind, &q, limits)?;
            let stem = name_kind.unwrap_or("cpu");
            vec![(format!("{stem}.pprof"), encode(&p))]
        }
        "jfr" => {
            let data = part(&fields, "jfr").unwrap_or_else(|| body.clone());
            if let Some(l) = part(&fields, "labels").filter(|l| !l.is_empty()) {
                vec![
                    ("profile.jfr".into(), data.to_vec()),
                    ("labels.pb".into(), l.to_vec()),
                ]
            } else {
                vec![("profile.jfr".into(), data.to_vec())]
            }
        }
        other => {
            return Err(Reject::Invalid(format!(
                "format={other}: agentprof takes pprof, folded, lines and jfr"
            )));
        }
    };
    let start = q.from.unwrap_or(received);
    Ok(Upload {
        attachments,
        tags,
        start,
        end: q.until.unwrap_or(start),
        family: runtime,
    })
}

/// Folded stacks (`a;b;c 12` per line, root first) or `lines` (one stack per line, each
/// one sample) as a pprof profile of one sample type: the name's type (`cpu`) or the
/// query's `units`, counted in samples, with the period of `sampleRate`.
fn folded(
    data: &[u8],
    lines: bool,
    kind: Option<&str>,
    q: &Query,
    limits: &UploadLimits,
) -> Result<pp::Profile, Reject> {
    if data.len() as u64 > limits.part.decompressed {
        return Err(Reject::TooLarge(format!(
            "the profile is over {} bytes",
            limits.part.decompressed
        )));
    }
    let text = std::str::from_utf8(data)
        .map_err(|e| Reject::Invalid(format!("the profile is not UTF-8 text: {e}")))?;
    let mut p = pp::Profile::default();
    let mut strings: HashMap<String, i64> = HashMap::new();
    let mut intern = |p: &mut pp::Profile, s: &str| -> i64 {
        if let Some(&i) = strings.get(s) {
            return i;
        }
        let i = p.string_table.len() as i64;
        p.string_table.push(s.to_string());
        strings.insert(s.to_string(), i);
        i
    };
    intern(&mut p, "");
    let unit = q.units.as_deref().unwrap_or("samples");
    let (ty, un) = match (kind, unit) {
        (_, "bytes") => (kind.unwrap_or("space"), "bytes"),
        (_, "objects") => (kind.unwrap_or("objects"), "count"),
        (Some(k), _) => (k, "count"),
        (None, _) => ("samples", "count"),
    };
    let (t, u) = (intern(&mut p, ty), intern(&mut p, un));
    p.sample_type.push(pp::ValueType { r#type: t, unit: u });
    if let Some(rate) = q.sample_rate.filter(|r| *r > 0 && unit == "samples") {
        let (t, u) = (intern(&mut p, "cpu"), intern(&mut p, "nanoseconds"));
        p.period_type = Some(pp::ValueType { r#type: t, unit: u });
        p.period = 1_000_000_000 / rate as i64;
    }
    let mut frames: HashMap<i64, u64> = HashMap::new();
    let mut stacks: HashMap<Vec<u64>, usize> = HashMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        let (stack, count) = if lines {
            (line, 1)
        } else {
            let (s, c) = line.rsplit_once(' ').ok_or_else(|| {
                Reject::Invalid(format!("line {}: no count after the stack", n + 1))
            })?;
            let c: i64 = c
                .trim()
                .parse()
                .map_err(|_| Reject::Invalid(format!("line {}: {c:?} is not a count", n + 1)))?;
            (s, c)
        };
        let mut ids = Vec::new();
        for name in stack.split(';').rev() {
            let si = intern(&mut p, name);
            let id = match frames.get(&si) {
                Some(&id) => id,
                None => {
                    let id = p.function.len() as u64 + 1;
                    p.function.push(pp::Function {
                        id,
                        name: si,
                        system_name: si,
                        filename: 0,
                        start_line: 0,
                    });
                    p.location.push(pp::Location {
                        id,
                        mapping_id: 0,
                        address: 0,
                        line: vec![pp::Line {
                            function_id: id,
                            line: 0,
                            column: 0,
                        }],
                        is_folded: false,
                    });
                    frames.insert(si, id);
                    id
                }
            };
            ids.push(id);
        }
        if p.string_table.len() as u64 + p.sample.len() as u64 > limits.part.fields {
            return Err(Reject::TooLarge(format!(
                "more than {} frames and stacks",
                limits.part.fields
            )));
        }
        match stacks.get(&ids) {
            Some(&i) => p.sample[i].value[0] += count,
            None => {
                stacks.insert(ids.clone(), p.sample.len());
                p.sample.push(pp::Sample {
                    location_id: ids,
                    value: vec![count],
                    label: Vec::new(),
                });
            }
        }
    }
    if let (Some(from), Some(until)) = (q.from, q.until) {
        p.time_nanos = from.as_nanosecond() as i64;
        p.duration_nanos = (until.as_nanosecond() - from.as_nanosecond()).max(0) as i64;
    }
    Ok(p)
}

/// Pyroscope's push API (`push.v1.PusherService/Push`, Connect over HTTP), as its SDKs
/// built on pyroscope-rs send it: series of labels and raw pprof profiles.
mod push {
    use serde::Deserialize;

    #[derive(Clone, PartialEq, prost::Message, Deserialize)]
    #[serde(default)]
    pub struct PushRequest {
        #[prost(message, repeated, tag = "1")]
        pub series: Vec<RawProfileSeries>,
    }

    #[derive(Clone, PartialEq, prost::Message, Deserialize)]
    #[serde(default)]
    pub struct RawProfileSeries {
        #[prost(message, repeated, tag = "1")]
        pub labels: Vec<LabelPair>,
        #[prost(message, repeated, tag = "2")]
        pub samples: Vec<RawSample>,
    }

    #[derive(Clone, PartialEq, prost::Message, Deserialize)]
    #[serde(default)]
    pub struct LabelPair {
        #[prost(string, tag = "1")]
        pub name: String,
        #[prost(string, tag = "2")]
        pub value: String,
    }

    #[derive(Clone, PartialEq, prost::Message, Deserialize)]
    #[serde(default, rename_all = "camelCase")]
    pub struct RawSample {
        #[prost(bytes = "vec", tag = "1")]
        #[serde(deserialize_with = "base64")]
        pub raw_profile: Vec<u8>,
        #[prost(string, tag = "2")]
        #[serde(rename = "ID")]
        pub id: String,
    }

    fn base64<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        use base64::Engine;
        let s = String::deserialize(d)?;
        base64::engine::general_purpose::STANDARD
            .decode(s.trim())
            .map_err(|e| serde::de::Error::custom(format!("rawProfile is not base64: {e}")))
    }
}

/// The stem a push series' `__name__` gives its profiles (`process_cpu` → `cpu`).
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

/// A push request (protobuf or Connect's JSON, gzip or not) as uploads: one per series, its
/// labels as tags (`service_name` the service), each raw profile an attachment stored as
/// sent. `Ok((uploads, json))`.
pub(super) fn pyroscope_push(
    content_type: &str,
    gzip: bool,
    body: &[u8],
    limits: &UploadLimits,
    received: jiff::Timestamp,
    held: &mut Reservation,
) -> Result<(Vec<Upload>, bool), Reject> {
    let json = content_type.starts_with("application/json");
    let raw;
    let body =
        if gzip || crate::pprof::decode::sniff(body) == crate::pprof::decode::Compression::Gzip {
            if !held.grow(limits.decompressed) {
                return Err(super::form::busy());
            }
            let lim = Limits {
                body: body.len() as u64 + 1,
                decompressed: limits.decompressed,
                ..limits.part
            };
            raw = crate::pprof::decode::decompress(body, &lim)
                .map_err(|e| Reject::Invalid(format!("gzip: {e}")))?;
            raw.as_slice()
        } else {
            body
        };
    if !held.grow(2 * body.len() as u64 + if json { 32 * body.len() as u64 } else { 0 }) {
        return Err(super::form::busy());
    }
    let req: push::PushRequest = if json {
        serde_json::from_slice(body).map_err(|e| Reject::Invalid(format!("push (JSON): {e}")))?
    } else {
        use prost::Message;
        push::PushRequest::decode(body)
            .map_err(|e| Reject::Invalid(format!("push (protobuf): {e}")))?
    };
    let mut out = Vec::new();
    for (i, series) in req.series.iter().enumerate() {
        let label = |n: &str| {
            series
                .labels
                .iter()
                .find(|l| l.name == n)
                .map(|l| l.value.as_str())
        };
        let service = label("service_name")
            .or(label("__name_app__"))
            .unwrap_or("unknown_service");
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
            let p = decode(
                &format!("series {i}, sample {j}"),
                &smp.raw_profile,
                &limits.part,
                held,
            )?;
            if j == 0 && p.time_nanos > 0 {
                up.start =
                    jiff::Timestamp::from_nanosecond(p.time_nanos as i128).unwrap_or(received);
                up.end = jiff::Timestamp::from_nanosecond(
                    p.time_nanos as i128 + p.duration_nanos as i128,
                )
                .unwrap_or(up.start);
            }
            let stem = label("__name__")
                .and_then(push_stem)
                .map(String::from)
                .unwrap_or_else(|| stem_of(&p, &[]));
            let mut name = format!("{stem}.pprof");
            let mut n = 2;
            while up.attachments.iter().any(|(a, _)| *a == name) {
                name = format!("{stem}-{n}.pprof");
                n += 1;
            }
            up.attachments.push((name, smp.raw_profile.clone()));
        }
        if !up.attachments.is_empty() {
            out.push(up);
        }
    }
    Ok((out, json))
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

/// An OTLP request (`content_type` protobuf or JSON, `gzip` when Content-Encoding says so
/// or the bytes are gzip) as uploads: one per resource, one attachment per pprof profile
/// it makes, named by its type. `Ok((uploads, json))`: `json` when the request was JSON
/// (the answer is written in kind).
pub(super) fn otlp(
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
    let raw;
    let body = if gzip
        || crate::pprof::decode::sniff(body) == crate::pprof::decode::Compression::Gzip
    {
        if !held.grow(limits.decompressed) {
            return Err(super::form::busy());
        }
        let lim = Limits {
            body: body.len() as u64 + 1,
            decompressed: limits.decompressed,
            ..limits.part
        };
        raw = crate::pprof::decode::decompress(body, &lim).map_err(|e| match e {
            crate::pprof::decode::DecodeError::TooLargeDecompressed { limit } => Reject::TooLarge(
                format!("the request is over {limit} bytes decompressed (upload_decompressed_mb)"),
            ),
            e => Reject::Invalid(format!("gzip: {e}")),
        })?;
        held.shrink_to(held.bytes().saturating_sub(limits.decompressed) + raw.len() as u64);
        raw.as_slice()
    } else {
        body
    };
    let req = if json {
        if !held.grow(32 * body.len() as u64 + 4096) {
            return Err(super::form::busy());
        }
        otlp::json::from_json(body).map_err(|e| Reject::Invalid(format!("OTLP/JSON: {e}")))?
    } else {
        // Every message counted, and the memory it takes charged, before it is decoded.
        let fields = limits.part.fields;
        let scan = otlp::scan::scan(body, fields, limits.part.memory).map_err(|e| match e {
            otlp::scan::ScanError::Malformed(_) => Reject::Invalid(format!("OTLP protobuf: {e}")),
            e => Reject::TooLarge(format!("OTLP request: {e}")),
        })?;
        if !held.grow(scan.memory) {
            return Err(super::form::busy());
        }
        use prost::Message;
        otlp::proto::ExportProfilesServiceRequest::decode(body)
            .map_err(|e| Reject::Invalid(format!("OTLP protobuf: {e}")))?
    };
    let imported = otlp::import::import(&req).map_err(|e| Reject::Invalid(format!("OTLP: {e}")))?;
    // One upload per resource and scope, in the order they came.
    let mut uploads: Vec<(Vec<(String, String)>, String, Upload)> = Vec::new();
    for im in imported {
        let i = match uploads
            .iter()
            .position(|(r, s, _)| *r == im.resource && *s == im.scope)
        {
            Some(i) => i,
            None => {
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
                    jiff::Timestamp::from_nanosecond(im.profile.time_nanos as i128)
                        .unwrap_or(received)
                } else {
                    received
                };
                let end = jiff::Timestamp::from_nanosecond(
                    start.as_nanosecond() + im.profile.duration_nanos as i128,
                )
                .unwrap_or(start);
                let family = im
                    .resource
                    .iter()
                    .find(|(k, _)| k == "process.runtime.name" || k == "telemetry.sdk.language")
                    .map(|(_, v)| v.clone())
                    .unwrap_or_else(|| "unknown".into());
                uploads.push((
                    im.resource.clone(),
                    im.scope.clone(),
                    Upload {
                        attachments: Vec::new(),
                        tags,
                        start,
                        end,
                        family,
                    },
                ));
                uploads.len() - 1
            }
        };
        let up = &mut uploads[i].2;
        let stem = stem_of(&im.profile, &[]);
        let mut name = format!("{stem}.pprof");
        let mut n = 2;
        while up.attachments.iter().any(|(a, _)| *a == name) {
            name = format!("{stem}-{n}.pprof");
            n += 1;
        }
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
    Ok((uploads.into_iter().map(|(_, _, u)| u).collect(), json))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_times_and_spies_read_as_pyroscope_writes_them() {
        let (app, kind, labels) = parse_name("shop.cpu{env=prod,region=eu}").expect("name");
        assert_eq!((app.as_str(), kind), ("shop", Some("cpu")));
        assert_eq!(
            labels,
            vec![
                ("env".into(), "prod".into()),
                ("region".into(), "eu".into())
            ]
        );
        let (app, kind, labels) =
            parse_name("my.app{__session_id__=ab,otel.scope.name=com.grafana.pyroscope/go}")
                .expect("name");
        assert_eq!((app.as_str(), kind), ("my.app", None));
        assert_eq!(labels[1].1, "com.grafana.pyroscope/go");
        assert!(parse_name("{a=b}").is_err());
        assert!(parse_name("app{a}").is_err());
        assert!(parse_name("app{a=b").is_err());
        let t = |s| epoch(s).map(|t| t.as_second());
        assert_eq!(t("1700000000"), Some(1_700_000_000));
        assert_eq!(t("1700000000123"), Some(1_700_000_000));
        assert_eq!(t("1700000000123456"), Some(1_700_000_000));
        assert_eq!(t("1700000000123456789"), Some(1_700_000_000));
        assert_eq!(t("soon"), None);
        assert_eq!(spy_runtime("gospy"), "go");
        assert_eq!(spy_runtime("pyspy"), "python");
    }
}
