//! One capture: pull's collection of the target, run on the blocking pool, and its record —
//! a line of `<out>/captures.jsonl` (docs/json.md), the `capture` event, a line on stderr.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde::Serialize;

use super::targets::Found;
use super::trigger::Fired;
use crate::pull::delta::DeltaCache;
use crate::pull::fetch::Cancel;
use crate::pull::{Collection, Job, PullOptions};
use crate::sync::lock;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    Scheduled,
    ResourceThreshold,
    /// A static target of `instances:`, on its own interval.
    Static,
}

impl Cause {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Cause::Scheduled => "scheduled",
            Cause::ResourceThreshold => "resource_threshold",
            Cause::Static => "static",
        }
    }
}

/// A finished collection, back from the blocking pool.
pub(super) struct Done {
    pub(super) id: String,
    pub(super) endpoint: String,
    pub(super) cause: Cause,
    pub(super) ok: bool,
    pub(super) cancelled: bool,
    pub(super) seconds: f64,
    /// Why a cumulative profile had no delta, for the skip counts (`delta_cache_evicted`…).
    pub(super) no_delta: Vec<crate::pull::delta::NoDelta>,
}

/// One line of `<out>/captures.jsonl` (docs/json.md).
pub(super) struct Shared {
    pub(super) cache: Mutex<DeltaCache>,
    /// Uploads go to its spool and are sent from there by a thread of its own: a capture
    /// never waits on the intake, and none is lost at a stop.
    /// One per target (dd-trace's upload, the OTLP export), each with its spool.
    pub(super) uploaders: Vec<crate::pull::upload::Background>,
    pub(super) captures: Option<Mutex<std::fs::File>>,
    pub(super) out: Option<PathBuf>,
    pub(super) hostname: String,
    pub(super) json: bool,
}

impl Shared {
    /// How pull's collection runs for a capture: files under `out`, a one-row top (its
    /// figures), the upload when there is an uploader (its URL is the uploader's own).
    pub(super) fn pull_options(&self, body_size_limit_mb: u64) -> PullOptions {
        PullOptions {
            out: self.out.clone(),
            top: 1,
            upload: (!self.uploaders.is_empty())
                .then(|| reqwest::Url::parse("http://upload.invalid/").expect("a constant URL")),
            body_size_limit_mb,
            hostname: self.hostname.clone(),
            ..Default::default()
        }
    }
}

#[derive(Serialize)]
pub(super) struct CaptureLine<'a> {
    time: &'a str,
    target: &'a str,
    namespace: &'a str,
    pod: &'a str,
    container: &'a str,
    endpoint: &'a str,
    /// The rule's index; None for a static target (`instances:`).
    rule: Option<usize>,
    cause: Cause,
    trigger: Option<&'a Fired>,
    tags: &'a [String],
    /// Per profile type: files, sizes, the top function.
    profiles: Vec<CaptureProfile<'a>>,
    figures: &'a crate::pull::GoFigures,
    uploaded: Option<bool>,
    /// The upload is in the spool, sent by the background sender.
    upload_queued: bool,
    upload_error: Option<&'a str>,
    /// Milliseconds from the kubelet round that fired to the capture's start.
    trigger_latency_ms: Option<f64>,
}

#[derive(Serialize)]
pub(super) struct CaptureProfile<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    ok: bool,
    error: Option<&'a str>,
    bytes: usize,
    delta: bool,
    no_delta: Option<crate::pull::delta::NoDelta>,
    files: &'a [PathBuf],
    /// Each pprof file's totals.
    totals: &'a [crate::pull::FileTotals],
    top_function: Option<&'a str>,
}

fn profiles_of(c: &Collection) -> Vec<CaptureProfile<'_>> {
    c.profiles
        .iter()
        .map(|p| CaptureProfile {
            kind: &p.kind,
            ok: p.ok,
            error: p.error.as_deref(),
            bytes: p.bytes,
            delta: p.delta,
            no_delta: p.no_delta,
            files: &p.files,
            totals: &p.totals,
            top_function: p
                .top
                .as_ref()
                .and_then(|t| t.rows.first())
                .map(|r| r.function.as_str()),
        })
        .collect()
}

/// One capture of one target, run on the blocking pool: pull's collection, the capture
/// recorded (what was fetched before a cut is kept), the collector told.
pub(super) struct Capture {
    pub(super) target: crate::pull::Target,
    pub(super) client: Arc<reqwest::blocking::Client>,
    pub(super) seq: u64,
    pub(super) dir: PathBuf,
    pub(super) id: String,
    pub(super) cancel: Cancel,
    pub(super) shared: Arc<Shared>,
    pub(super) body_limit: u64,
    pub(super) found: Found,
    pub(super) cause: Cause,
    pub(super) fired: Option<Fired>,
    pub(super) tags: Vec<String>,
    pub(super) latency_ms: Option<f64>,
}

impl Capture {
    pub(super) fn run(self) -> Done {
        let shared = &self.shared;
        let t0 = std::time::Instant::now();
        let pull_opts = shared.pull_options(self.body_limit);
        let job = Job {
            target: &self.target,
            client: &self.client,
            seq: self.seq,
            dir: self.dir.clone(),
            cache_key: self.id.clone(),
            cancel: &self.cancel,
        };
        let uploader = (!shared.uploaders.is_empty())
            .then_some(&shared.uploaders as &dyn crate::pull::upload::Submit);
        let c = crate::pull::collect(&job, &pull_opts, &shared.cache, uploader);
        // Cancelled: a fetch was cut short. A capture that had everything when its pod
        // went away (its upload still running) is a capture like any other.
        let cut = c.profiles.len() < self.target.types.len()
            || c.profiles.iter().any(|p| {
                p.error
                    .as_deref()
                    .is_some_and(|e| e.ends_with(crate::pull::fetch::CANCELLED))
            });
        // Cut by the target's removal or by the stop (whichever came first): what was
        // fetched before is kept and recorded; a capture that got nothing is not one.
        let cancelled = cut && (self.cancel.cancelled() || crate::signal::requested());
        let mut ok = !c.profiles.is_empty() && c.profiles.iter().all(|p| p.ok);
        if !cancelled || c.profiles.iter().any(|p| p.ok) {
            ok &= write_capture(
                shared,
                &c,
                &self.found,
                &self.id,
                self.cause,
                self.fired.as_ref(),
                &self.tags,
                self.latency_ms,
            );
        }
        Done {
            id: self.id.clone(),
            endpoint: self.found.endpoint.clone(),
            cause: self.cause,
            ok,
            cancelled,
            seconds: t0.elapsed().as_secs_f64(),
            no_delta: c.profiles.iter().filter_map(|p| p.no_delta).collect(),
        }
    }
}

/// Shared with the collections on the blocking pool.
#[allow(clippy::too_many_arguments)]
pub(super) fn write_capture(
    shared: &Shared,
    c: &Collection,
    f: &Found,
    id: &str,
    cause: Cause,
    fired: Option<&Fired>,
    tags: &[String],
    latency_ms: Option<f64>,
) -> bool {
    let line = CaptureLine {
        time: &c.start,
        target: id,
        namespace: &f.facts.namespace,
        pod: &f.facts.pod_name,
        container: &f.container,
        endpoint: &f.endpoint,
        rule: Some(f.rule),
        cause,
        trigger: fired,
        tags,
        profiles: profiles_of(c),
        figures: &c.figures,
        uploaded: c.uploaded,
        upload_queued: c.upload_queued,
        upload_error: c.upload_error.as_deref(),
        trigger_latency_ms: latency_ms,
    };
    emit(shared, &line, c)
}

/// A static target's collection: its service is the target, no pod, no rule.
pub(super) fn write_static_capture(shared: &Shared, c: &Collection, t: &crate::pull::Target) {
    let line = CaptureLine {
        time: &c.start,
        target: &c.service,
        namespace: "",
        pod: "",
        container: "",
        endpoint: &c.target,
        rule: None,
        cause: Cause::Static,
        trigger: None,
        tags: &t.tags,
        profiles: profiles_of(c),
        figures: &c.figures,
        uploaded: c.uploaded,
        upload_queued: c.upload_queued,
        upload_error: c.upload_error.as_deref(),
        trigger_latency_ms: None,
    };
    let _ = emit(shared, &line, c);
}

/// The capture's line written to captures.jsonl, printed; false when the line could not
/// be written (the capture is then a failure: its record is not on disk).
fn emit(shared: &Shared, line: &CaptureLine<'_>, c: &Collection) -> bool {
    let Ok(text) = serde_json::to_string(line) else {
        return false;
    };
    let mut recorded = true;
    if let Some(file) = &shared.captures
        && let Err(e) = crate::pull::append_record(&mut lock(file), &text, false)
    {
        recorded = false;
        super::events::log(
            shared.json,
            "record_error",
            serde_json::json!({"target": line.target, "file": "captures.jsonl",
                "error": e.to_string()}),
        );
    }
    if shared.json {
        use std::io::Write;
        let _ = writeln!(
            std::io::stdout().lock(),
            "{{\"event\":\"capture\",\"capture\":{text}}}"
        );
    } else {
        let kinds: Vec<String> = c
            .profiles
            .iter()
            .map(|p| {
                if p.ok {
                    format!("{}({}B)", p.kind, p.bytes)
                } else {
                    let e = p.error.as_deref().unwrap_or("?");
                    format!("{}(error: {})", p.kind, crate::redact::printable(e))
                }
            })
            .collect();
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr().lock(),
            "agentprof k8s: capture target={} cause={} {}",
            crate::redact::printable(line.target),
            line.cause.as_str(),
            kinds.join(" ")
        );
    }
    recorded
}
