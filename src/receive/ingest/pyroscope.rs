//! Pyroscope's ingest API, `POST /ingest`: `name=app.cpu{k=v,…}`, `from`, `until`,
//! `sampleRate`, `spyName`, `units`, `format` (pprof in a multipart form, folded, lines,
//! jfr).

use std::collections::HashMap;

use bytes::Bytes;
use pprof::proto as pp;

use super::super::form::{Field, Reject, UploadLimits};
use super::{charge, decode, encode, stem_of, tag};
use crate::budget::Reservation;
use crate::pull::upload::Upload;

crate::error::message_error! {
    /// What is wrong with a Pyroscope application name.
    AppNameError
}

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

/// What `name=app.cpu{k=v,…}` says.
#[derive(Debug, PartialEq)]
struct Name {
    app: String,
    /// The type its name ends with (`cpu`), as the file stem agentprof gives it.
    kind: Option<&'static str>,
    labels: Vec<(String, String)>,
}

/// `app.cpu{k=v,…}`: the application, the type its name ends with (if any), its labels.
fn parse_name(name: &str) -> Result<Name, AppNameError> {
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
        return Err(AppNameError(
            "`name` has no application name (app.cpu{k=v,…})".into(),
        ));
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
    Ok(Name {
        app: app.to_string(),
        kind,
        labels: out,
    })
}

/// A time as Pyroscope clients send `from` and `until`: seconds, milliseconds,
/// microseconds or nanoseconds since the epoch, told apart by size.
fn epoch(text: &str) -> Option<jiff::Timestamp> {
    let n: i64 = text.trim().parse().ok()?;
    let ns = match n {
        n if n >= 100_000_000_000_000_000 => n as i128,
        n if n >= 100_000_000_000_000 => n as i128 * 1_000,
        n if n >= 100_000_000_000 => n as i128 * 1_000_000,
        n => n as i128 * 1_000_000_000,
    };
    jiff::Timestamp::from_nanosecond(ns).ok()
}

/// Each sample's identity across two profiles: its frames (function, file and line of every
/// line of every location) and labels, as one text. Each location's frames are written once.
fn sample_keys(p: &pp::Profile) -> Vec<String> {
    let s = |i: i64| {
        p.string_table
            .get(i as usize)
            .map(String::as_str)
            .unwrap_or("")
    };
    let functions: HashMap<u64, &pp::Function> = p.function.iter().map(|f| (f.id, f)).collect();
    let locations: HashMap<u64, String> = p
        .location
        .iter()
        .map(|l| {
            let frames: Vec<String> = l
                .line
                .iter()
                .map(|ln| {
                    let f = functions.get(&ln.function_id);
                    format!(
                        "{}@{}:{}",
                        f.map(|f| s(f.name)).unwrap_or(""),
                        f.map(|f| s(f.filename)).unwrap_or(""),
                        ln.line
                    )
                })
                .collect();
            (l.id, frames.join("|"))
        })
        .collect();
    p.sample
        .iter()
        .map(|smp| {
            let mut key = String::new();
            for id in &smp.location_id {
                match locations.get(id) {
                    Some(t) => key.push_str(t),
                    None => key.push_str(&format!("#{id:x}")),
                }
                key.push('\n');
            }
            for l in &smp.label {
                key.push_str(&format!(
                    "{}={}/{}{}\n",
                    s(l.key),
                    s(l.str),
                    l.num,
                    s(l.num_unit)
                ));
            }
            key
        })
        .collect()
}

/// `profile − prev_profile` for the sample types Pyroscope's `sample_type_config` marks
/// cumulative (all of them when there is no config), sample by sample; a stack's values do
/// not go below 0.
fn subtract(p: &mut pp::Profile, prev: &pp::Profile, cumulative: &dyn Fn(&str) -> bool) {
    let s = |q: &pp::Profile, i: i64| q.string_table.get(i as usize).cloned().unwrap_or_default();
    let mut before: HashMap<String, Vec<i64>> = HashMap::new();
    let prev_types: Vec<String> = prev.sample_type.iter().map(|t| s(prev, t.r#type)).collect();
    for (smp, key) in prev.sample.iter().zip(sample_keys(prev)) {
        let e = before
            .entry(key)
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
    let keys = sample_keys(p);
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
pub(crate) fn pyroscope(
    q: &str,
    body: &Bytes,
    fields: Option<Vec<Field>>,
    limits: &UploadLimits,
    received: jiff::Timestamp,
    held: &mut Reservation,
) -> Result<Upload, Reject> {
    let q = query(q)?;
    let name = parse_name(&q.name).map_err(|e| Reject::Invalid(e.0))?;
    let runtime = spy_runtime(&q.spy).to_string();
    let mut tags = vec![tag("service", &name.app)];
    for (k, v) in &name.labels {
        tags.push(tag(k, v));
    }
    tags.push(tag("runtime", &runtime));
    if !q.spy.is_empty() {
        tags.push(tag("spy_name", &q.spy));
    }
    tags.push("ingest:pyroscope".into());
    let parts = Parts(fields);
    let format = q
        .format
        .clone()
        .unwrap_or_else(|| if parts.0.is_some() { "pprof" } else { "folded" }.into());
    let attachments = match format.as_str() {
        "pprof" => {
            let profile = parts
                .get("profile")
                .or_else(|| parts.0.is_none().then(|| body.clone()))
                .ok_or_else(|| Reject::Invalid("format=pprof: no part `profile`".into()))?;
            vec![pprof_form(&profile, &parts, name.kind, limits, held)?]
        }
        "folded" | "lines" => {
            let data = parts.get("profile").unwrap_or_else(|| body.clone());
            // The profile made of it: its strings, functions, locations and samples.
            charge(held, 8 * data.len() as u64 + 4096, "the folded profile")?;
            let p = folded(&data, format == "lines", name.kind, &q, limits)?;
            let stem = name.kind.unwrap_or("cpu");
            vec![(format!("{stem}.pprof"), encode(&p))]
        }
        "jfr" => {
            let data = parts.get("jfr").unwrap_or_else(|| body.clone());
            let mut out = vec![("profile.jfr".to_string(), data.to_vec())];
            if let Some(l) = parts.get("labels").filter(|l| !l.is_empty()) {
                out.push(("labels.pb".into(), l.to_vec()));
            }
            out
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

/// A multipart body's parts (None: the body was not multipart).
struct Parts(Option<Vec<Field>>);

impl Parts {
    fn get(&self, name: &str) -> Option<Bytes> {
        self.0
            .as_ref()
            .and_then(|f| f.iter().find(|x| x.name == name).map(|x| x.data.clone()))
    }
}

/// `format=pprof`: the profile as sent, or `profile − prev_profile` for the sample types
/// `sample_type_config` marks cumulative (all of them without a config); its attachment
/// name by the name's type, else the config's display names and its sample types.
fn pprof_form(
    profile: &Bytes,
    parts: &Parts,
    kind: Option<&'static str>,
    limits: &UploadLimits,
    held: &mut Reservation,
) -> Result<(String, Vec<u8>), Reject> {
    let config: HashMap<String, serde_json::Value> = match parts.get("sample_type_config") {
        Some(c) if c.len() <= super::super::form::EVENT_LIMIT => serde_json::from_slice(&c)
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
        .filter_map(|v| v.get("display-name")?.as_str().map(String::from))
        .collect();
    let mut p = decode("profile", profile, &limits.part, held)?;
    let bytes = match parts.get("prev_profile").filter(|b| !b.is_empty()) {
        Some(prev) => {
            let before = decode("prev_profile", &prev, &limits.part, held)?;
            // Each sample's key (its frames as text), in both profiles.
            let keys = 64 * (p.sample.len() + before.sample.len()) as u64
                + 4 * (p.string_table.len() + before.string_table.len()) as u64 * 16;
            charge(held, keys, "profile − prev_profile")?;
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
        None => profile.to_vec(),
    };
    let stem = kind
        .map(String::from)
        .unwrap_or_else(|| stem_of(&p, &display));
    Ok((format!("{stem}.pprof"), bytes))
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
    let mut b = Folded::default();
    b.string("");
    let unit = q.units.as_deref().unwrap_or("samples");
    let (ty, un) = match (kind, unit) {
        (_, "bytes") => (kind.unwrap_or("space"), "bytes"),
        (_, "objects") => (kind.unwrap_or("objects"), "count"),
        (Some(k), _) => (k, "count"),
        (None, _) => ("samples", "count"),
    };
    let (t, u) = (b.string(ty), b.string(un));
    b.p.sample_type.push(pp::ValueType { r#type: t, unit: u });
    if let Some(rate) = q.sample_rate.filter(|r| *r > 0 && unit == "samples") {
        let (t, u) = (b.string("cpu"), b.string("nanoseconds"));
        b.p.period_type = Some(pp::ValueType { r#type: t, unit: u });
        b.p.period = 1_000_000_000 / rate as i64;
    }
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
        b.add(stack, count);
        if b.p.string_table.len() as u64 + b.p.sample.len() as u64 > limits.part.fields {
            return Err(Reject::TooLarge(format!(
                "more than {} frames and stacks",
                limits.part.fields
            )));
        }
    }
    if let (Some(from), Some(until)) = (q.from, q.until) {
        b.p.time_nanos = from.as_nanosecond() as i64;
        b.p.duration_nanos = (until.as_nanosecond() - from.as_nanosecond()).max(0) as i64;
    }
    Ok(b.p)
}

/// A pprof profile being built from folded stacks: each frame one function at one
/// location, the same stacks one sample.
#[derive(Default)]
struct Folded {
    p: pp::Profile,
    strings: HashMap<String, i64>,
    frames: HashMap<i64, u64>,
    stacks: HashMap<Vec<u64>, usize>,
}

impl Folded {
    fn string(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.strings.get(s) {
            return i;
        }
        let i = self.p.string_table.len() as i64;
        self.p.string_table.push(s.to_string());
        self.strings.insert(s.to_string(), i);
        i
    }

    fn frame(&mut self, name: &str) -> u64 {
        let si = self.string(name);
        if let Some(&id) = self.frames.get(&si) {
            return id;
        }
        let id = self.p.function.len() as u64 + 1;
        self.p.function.push(pp::Function {
            id,
            name: si,
            system_name: si,
            filename: 0,
            start_line: 0,
        });
        self.p.location.push(pp::Location {
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
        self.frames.insert(si, id);
        id
    }

    /// `count` more of `stack` (root first, `;` between frames).
    fn add(&mut self, stack: &str, count: i64) {
        let ids: Vec<u64> = stack.split(';').rev().map(|f| self.frame(f)).collect();
        match self.stacks.get(&ids) {
            Some(&i) => self.p.sample[i].value[0] += count,
            None => {
                self.stacks.insert(ids.clone(), self.p.sample.len());
                self.p.sample.push(pp::Sample {
                    location_id: ids,
                    value: vec![count],
                    label: Vec::new(),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_times_and_spies_read_as_pyroscope_writes_them() {
        let Name { app, kind, labels } = parse_name("shop.cpu{env=prod,region=eu}").expect("name");
        assert_eq!((app.as_str(), kind), ("shop", Some("cpu")));
        assert_eq!(
            labels,
            vec![
                ("env".into(), "prod".into()),
                ("region".into(), "eu".into())
            ]
        );
        let Name { app, kind, labels } =
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
