//! What an accepted upload becomes: its files under `<out>/<service>/` (pprof as
//! `<type>-<time>.pb.gz`, the layout `pull` writes, so `agentprof top` and `go tool pprof`
//! read them; other attachments as `<stem>-<time>.<ext>`), one line of
//! `<out>/uploads.jsonl`, the `profiling_metrics` DataKit derives, and the line printed.
//! An upload is stored whole or not at all: each file is written under a temporary name and
//! renamed, and when a file or the uploads.jsonl line cannot be written, the files already
//! written are removed and the store fails (the upload stays in the queue and is stored
//! again later). Names a filesystem cannot hold (a 300-byte service or attachment name, a
//! service called `uploads.jsonl`) are shortened or set apart deterministically.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::form::{Kind, Upload};
use crate::pprof::{Compression, Limits, Totals};

/// Where and how uploads are stored.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    pub out: PathBuf,
    /// Each profile's top N functions in the printed line and uploads.jsonl (0: none).
    pub top: usize,
    pub limits: Limits,
}

/// One attachment in uploads.jsonl.
#[derive(Debug, Serialize)]
pub struct StoredAttachment {
    pub name: String,
    #[serde(rename = "type")]
    pub stem: String,
    pub kind: Kind,
    /// Bytes as sent.
    pub bytes: usize,
    pub compression: Compression,
    pub file: Option<PathBuf>,
    /// Sample records (pprof only).
    pub samples: Option<usize>,
    /// Its totals per sample type (pprof only).
    pub totals: Option<crate::pprof::Totals>,
    pub error: Option<String>,
    /// The top functions by flat value (with `--top N`), as `agentprof top` lists them,
    /// and of which sample type.
    pub top: Option<Vec<crate::pprof::TopRow>>,
    pub top_sample_type: Option<String>,
}

/// One line of uploads.jsonl (docs/json.md).
#[derive(Debug, Serialize)]
pub struct Stored {
    /// When the upload was acknowledged.
    pub received: String,
    pub service: String,
    pub env: Option<String>,
    pub version: Option<String>,
    pub host: Option<String>,
    pub language: String,
    pub form: super::form::Form,
    pub start: Option<String>,
    pub end: Option<String>,
    pub duration_s: f64,
    pub tags: Vec<String>,
    /// The client's headers kept with the upload (DD-EVP-ORIGIN, Datadog-Container-ID…).
    pub headers: Vec<(String, String)>,
    pub attachments: Vec<StoredAttachment>,
    pub profiling_metrics: std::collections::BTreeMap<&'static str, f64>,
    /// With `--forward`: whether it was posted on (false: it waits in the spool), and why not.
    pub forwarded: Option<bool>,
    /// What the upload holds, as 32 hex digits: an upload whose digest was stored recently
    /// is not stored again (src/receive/dedupe.rs).
    pub digest: String,
    pub forward_error: Option<String>,
}

/// A value in nanoseconds or bytes, from its unit's name.
fn normalised(value: f64, unit: &str) -> f64 {
    let scale = match unit {
        "microseconds" | "us" => 1e3,
        "milliseconds" | "ms" => 1e6,
        "seconds" | "s" => 1e9,
        "kilobytes" | "kb" => 1024.0,
        "megabytes" | "mb" => 1024.0 * 1024.0,
        _ => 1.0,
    };
    value * scale
}

/// The figures DataKit derives for Go: from the profiles (the CPU profile's own recording
/// time, the heap's live objects and bytes, block and mutex delays, the goroutines counted
/// by the goroutine profile's values) and from metrics.json (its `go_*` figures as
/// `prof_go_*`; allocated bytes over the upload's period; GC pause over it).
fn go_metrics(
    up: &Upload,
    decoded: &[(String, Totals)],
) -> std::collections::BTreeMap<&'static str, f64> {
    let mut m = std::collections::BTreeMap::new();
    let secs = up.duration_s();
    go_metrics_json(up, secs, &mut m);
    let total = |stem: &str, ty: &str| {
        decoded
            .iter()
            .find(|(s, _)| s == stem || s.strip_prefix("delta-") == Some(stem))
            .and_then(|(_, p)| p.types.iter().find(|(t, _, _)| t == ty).cloned())
            .map(|(_, unit, v)| normalised(v, &unit))
    };
    if let Some((_, p)) = decoded.iter().find(|(s, _)| s == "cpu")
        && let Some(cpu) = total("cpu", "cpu")
    {
        let ns = if p.duration_nanos > 0 {
            p.duration_nanos as f64
        } else {
            secs * 1e9
        };
        if ns > 0.0 {
            m.insert("prof_go_cpu_cores", cpu / ns);
        }
    }
    for (figure, sample_type) in crate::pull::GO_LIVE_HEAP {
        if let Some(v) = total("heap", sample_type) {
            m.insert(figure, v);
        }
    }
    if let Some(v) = total("block", "delay") {
        m.insert("prof_go_blocked_time", v);
    }
    if let Some(v) = total("mutex", "delay") {
        m.insert("prof_go_mutex_delay_time", v);
    }
    if let Some(v) = total("goroutine", "goroutine") {
        m.insert("prof_go_num_goroutine", v);
    }
    m
}

/// metrics.json's `go_*` figures as `prof_go_*`, with the bytes allocated and the share of a
/// core spent in GC pauses over the upload's `secs`.
fn go_metrics_json(up: &Upload, secs: f64, m: &mut std::collections::BTreeMap<&'static str, f64>) {
    const FROM_JSON: [(&str, &str); 8] = [
        ("go_alloc_bytes_per_sec", "prof_go_alloc_bytes_per_sec"),
        ("go_allocs_per_sec", "prof_go_allocs_per_sec"),
        ("go_frees_per_sec", "prof_go_frees_per_sec"),
        (
            "go_heap_growth_bytes_per_sec",
            "prof_go_heap_growth_bytes_per_sec",
        ),
        ("go_gcs_per_sec", "prof_go_gcs_per_sec"),
        ("go_gc_pause_time", "prof_go_gc_pause_time"),
        ("go_max_gc_pause_time", "prof_go_max_gc_pause_time"),
        ("go_num_goroutine", "prof_go_num_goroutine"),
    ];
    if let Some(raw) = up
        .attachments
        .iter()
        .find(|a| a.kind == Kind::Metrics)
        .and_then(|a| a.raw.as_ref())
        && let Ok(pairs) = serde_json::from_slice::<Vec<(String, serde_json::Value)>>(raw)
    {
        for (name, v) in pairs {
            if let (Some((_, key)), Some(x)) =
                (FROM_JSON.iter().find(|(n, _)| *n == name), v.as_f64())
            {
                m.insert(*key, x);
            }
        }
        if let Some(a) = m.get("prof_go_alloc_bytes_per_sec").copied()
            && a > 0.0
            && secs > 0.0
        {
            m.insert("prof_go_alloc_bytes_total", a * secs);
        }
        if let Some(p) = m.get("prof_go_gc_pause_time").copied()
            && p > 0.0
            && secs > 0.0
        {
            m.insert("prof_go_cpu_cores_gc_overhead", p / secs);
        }
    }
}

/// The figures DataKit derives for Python from its profile's totals per sample type.
fn python_metrics(
    up: &Upload,
    decoded: &[(String, Totals)],
) -> std::collections::BTreeMap<&'static str, f64> {
    let mut m = std::collections::BTreeMap::new();
    let Some((_, p)) = decoded.first() else {
        return m;
    };
    let secs = up.duration_s();
    let t = &p.types;
    let get = |ty: &str| {
        t.iter()
            .find(|(n, _, _)| n == ty)
            .map(|(_, u, v)| normalised(*v, u))
    };
    let per_sec = |v: f64| if secs > 0.0 { Some(v / secs) } else { None };
    if let Some(v) = get("cpu-time")
        && secs > 0.0
    {
        m.insert("prof_python_cpu_cores", v / (secs * 1e9));
    }
    if let Some(v) = get("alloc-space") {
        m.insert("prof_python_alloc_bytes_total", v);
        if let Some(r) = per_sec(v) {
            m.insert("prof_python_alloc_bytes_per_sec", r);
        }
    }
    if let Some(r) = get("alloc-samples").and_then(per_sec) {
        m.insert("prof_python_allocs_per_sec", r);
    }
    if let Some(r) = get("lock-acquire").and_then(per_sec) {
        m.insert("prof_python_lock_acquisitions_per_sec", r);
    }
    if let Some(v) = get("lock-acquire-wait") {
        m.insert("prof_python_lock_acquisition_time", v);
    }
    if let Some(v) = get("lock-release-hold") {
        m.insert("prof_python_lock_hold_time", v);
    }
    if let Some(v) = get("exception-samples") {
        m.insert("prof_python_exceptions_total", v);
        if let Some(r) = per_sec(v) {
            m.insert("prof_python_exceptions_per_sec", r);
        }
    }
    if let Some(v) = get("wall-time") {
        m.insert("prof_python_wall_time", v);
    }
    if let Some(v) = get("heap-space") {
        m.insert("prof_python_lifetime_heap_bytes", v);
    }
    m
}

/// Why an upload could not be stored (it stays in the queue).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct StoreError(pub String);

/// The top rows of a profile; of its `cpu-time` when it has one (Python's, whose default
/// type is its last, a GPU count), else of the first sample type that has samples, as
/// `go tool pprof -sample_index` would show it.
fn top_rows(
    p: crate::pprof::proto::Profile,
    n: usize,
) -> Option<(String, Vec<crate::pprof::TopRow>)> {
    let mut pp = crate::pprof::Pprof::new(p).ok()?;
    pp.prepare_for_report();
    let types: Vec<String> = pp
        .sample_types()
        .iter()
        .map(|(t, _)| t.to_string())
        .collect();
    let nonzero = |i: usize| {
        pp.proto
            .sample
            .iter()
            .any(|s| s.value.get(i).is_some_and(|v| *v != 0))
    };
    let cpu = types
        .iter()
        .position(|t| t == "cpu-time")
        .filter(|&i| nonzero(i))
        .or_else(|| {
            // The default type (the last) when it has samples, else the first that has.
            let last = types.len().checked_sub(1)?;
            if nonzero(last) {
                None
            } else {
                (0..types.len()).find(|&i| nonzero(i))
            }
        })
        .map(|i| types[i].clone());
    let o = crate::pprof::TopOptions {
        nodes: n,
        sample_index: cpu,
        ..Default::default()
    };
    let t = crate::pprof::top(&pp, &o).ok()?;
    Some((t.sample_type, t.rows))
}

/// What an attachment is stored as: its file's extension and bytes (profiles gzip-compressed,
/// their totals and top table noted in `s`, their totals kept in `decoded`). The top table's
/// decoding takes its memory from the upload's reservation; without room it is left out.
fn contents<'a>(
    a: &'a super::form::Attachment,
    opts: &StoreOptions,
    s: &mut StoredAttachment,
    decoded: &mut Vec<(String, Totals)>,
    held: &mut crate::budget::Reservation,
) -> (&'a str, std::borrow::Cow<'a, [u8]>) {
    let content = a.raw.as_deref().unwrap_or(&a.data[..]);
    match (&a.kind, &a.raw) {
        (Kind::Pprof, _) => {
            let raw = content;
            // The totals off the wire; the profile is decoded only for its top table.
            match crate::pprof::totals(raw) {
                Some(t) => {
                    s.samples = Some(t.samples);
                    s.totals = Some(t.clone());
                    decoded.push((a.stem.clone(), t));
                }
                None => s.error = Some("not a well-formed pprof profile".into()),
            }
            if opts.top > 0 {
                top_table(raw, opts, s, held);
            }
            let gz = if a.compression == Compression::Gzip {
                std::borrow::Cow::Borrowed(&a.data[..])
            } else {
                std::borrow::Cow::Owned(crate::pprof::gzip_fast(raw))
            };
            ("pb.gz", gz)
        }
        (Kind::Metrics, Some(raw)) => ("json", std::borrow::Cow::Borrowed(&raw[..])),
        _ => {
            let ext = Path::new(&a.name)
                .extension()
                .and_then(|e| e.to_str())
                .unwrap_or("bin");
            let bytes = a.raw.as_deref().unwrap_or(&a.data[..]);
            (ext, std::borrow::Cow::Borrowed(bytes))
        }
    }
}

/// The profile decoded for its top table, within what the upload's reservation can grow by:
/// the decoded model's estimate is reserved first (and given back after).
fn top_table(
    raw: &[u8],
    opts: &StoreOptions,
    s: &mut StoredAttachment,
    held: &mut crate::budget::Reservation,
) {
    let estimate = match crate::pprof::memory_estimate(raw, &opts.limits) {
        Ok(scan) => scan.memory,
        Err(e) => {
            s.error = Some(e.to_string());
            return;
        }
    };
    let before = held.bytes();
    if !held.grow(estimate) {
        s.error = Some(format!(
            "no top table: decoding it would take {estimate} bytes and the memory budget of \
             uploads in flight is spent (receive.memory_limit_mb)"
        ));
        return;
    }
    match crate::pprof::decode_raw(raw, &opts.limits) {
        Ok(p) => {
            if let Some((ty, rows)) = top_rows(p, opts.top) {
                s.top_sample_type = Some(ty);
                s.top = Some(rows);
            }
        }
        Err(e) => s.error = Some(e.to_string()),
    }
    held.shrink_to(before);
}

/// Stores an upload's files and says what became of it; Err (nothing left on disk) when a
/// file could not be written.
pub fn store(
    up: &Upload,
    headers: Vec<(String, String)>,
    received: jiff::Timestamp,
    opts: &StoreOptions,
    held: &mut crate::budget::Reservation,
) -> Result<Stored, StoreError> {
    let service = up.tag("service").unwrap_or("unnamed-service").to_string();
    let dir = opts.out.join(crate::pull::dir_name(&service));
    std::fs::create_dir_all(&dir)
        .map_err(|e| StoreError(format!("cannot create {}: {e}", dir.display())))?;
    let at = up.end.unwrap_or(received);
    let stamp = at.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
    let mut decoded = Vec::new();
    let mut attachments = Vec::new();
    for a in &up.attachments {
        let mut s = StoredAttachment {
            name: a.name.clone(),
            stem: a.stem.clone(),
            kind: a.kind.clone(),
            bytes: a.data.len(),
            compression: a.compression,
            file: None,
            samples: None,
            totals: None,
            error: None,
            top: None,
            top_sample_type: None,
        };
        let stem = crate::pull::dir_name(&a.stem);
        let (ext, bytes) = contents(a, opts, &mut s, &mut decoded, held);
        let base = match &a.kind {
            Kind::Other => Path::new(&stem)
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or("attachment")
                .to_string(),
            _ => stem,
        };
        match crate::files::write_new_or_same(&dir, &format!("{base}-{stamp}"), ext, &bytes) {
            Ok(p) => s.file = Some(p),
            Err(e) => {
                remove_written(&attachments);
                return Err(StoreError(format!(
                    "cannot write {} under {}: {e}",
                    a.name,
                    dir.display()
                )));
            }
        }
        attachments.push(s);
    }
    let language = up.language();
    let profiling_metrics = match language.as_str() {
        "go" => go_metrics(up, &decoded),
        "python" => python_metrics(up, &decoded),
        _ => Default::default(),
    };
    let ts = |t: Option<jiff::Timestamp>| t.map(crate::pull::upload::rfc3339_nano);
    Ok(Stored {
        received: crate::pull::upload::rfc3339_nano(received),
        env: up.tag("env").map(String::from),
        version: up.tag("version").map(String::from),
        host: up.tag("host").map(String::from),
        service,
        language,
        form: up.form,
        start: ts(up.start),
        end: ts(up.end),
        duration_s: up.duration_s(),
        tags: up.tags.clone(),
        headers,
        attachments,
        profiling_metrics,
        forwarded: None,
        forward_error: None,
        digest: String::new(),
    })
}

/// The files of a store that failed, removed: an upload is on disk whole or not at all.
pub fn remove_written(attachments: &[StoredAttachment]) {
    for a in attachments {
        if let Some(f) = &a.file {
            let _ = std::fs::remove_file(f);
        }
    }
}

/// The line printed per upload.
/// The line printed for an upload (and its top tables): what the client sent is escaped, so
/// no control character reaches the operator's terminal.
pub fn render(s: &Stored) -> String {
    use crate::redact::printable as p;
    let mut out = format!(
        "{} {} env={} version={} {} {:.1}s:",
        s.received,
        p(&s.service),
        p(s.env.as_deref().unwrap_or("-")),
        p(s.version.as_deref().unwrap_or("-")),
        p(&s.language),
        s.duration_s
    );
    for a in &s.attachments {
        out.push_str(&format!(" {}({})", p(&a.stem), human_bytes(a.bytes)));
        if let Some(e) = &a.error {
            out.push_str(&format!("[error: {}]", p(e)));
        }
    }
    out.push('\n');
    for a in &s.attachments {
        if let Some(rows) = &a.top {
            out.push_str(&format!(
                "  {} ({}):\n",
                p(&a.stem),
                p(a.top_sample_type.as_deref().unwrap_or(""))
            ));
            for r in rows {
                out.push_str(&format!(
                    "    {:>10} {:>7}  {}\n",
                    r.flat_fmt,
                    r.flat_pct,
                    p(&r.function)
                ));
            }
        }
    }
    out
}

fn human_bytes(n: usize) -> String {
    if n >= 1 << 20 {
        format!("{:.1} MiB", n as f64 / 1048576.0)
    } else if n >= 1024 {
        format!("{:.1} KiB", n as f64 / 1024.0)
    } else {
        format!("{n} B")
    }
}
