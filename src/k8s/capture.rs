//! One capture's record: a line of `<out>/captures.jsonl` (docs/json.md), the `capture`
//! event, and a line on stderr.

use std::path::PathBuf;

use serde::Serialize;

use super::collector::{Cause, Shared};
use super::targets::Found;
use super::trigger::Fired;
use crate::pull::{Collection, lock};

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
            top_function: p
                .top
                .as_ref()
                .and_then(|t| t.rows.first())
                .map(|r| r.function.as_str()),
        })
        .collect()
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
) {
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
        upload_error: c.upload_error.as_deref(),
        trigger_latency_ms: latency_ms,
    };
    emit(shared, &line, c);
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
        upload_error: c.upload_error.as_deref(),
        trigger_latency_ms: None,
    };
    emit(shared, &line, c);
}

fn emit(shared: &Shared, line: &CaptureLine<'_>, c: &Collection) {
    let Ok(text) = serde_json::to_string(line) else {
        return;
    };
    if let Some(file) = &shared.captures {
        use std::io::Write;
        let mut file = lock(file);
        let _ = writeln!(file, "{text}");
    }
    if shared.json {
        println!("{{\"event\":\"capture\",\"capture\":{text}}}");
    } else {
        let kinds: Vec<String> = c
            .profiles
            .iter()
            .map(|p| {
                if p.ok {
                    format!("{}({}B)", p.kind, p.bytes)
                } else {
                    format!("{}(error: {})", p.kind, p.error.as_deref().unwrap_or("?"))
                }
            })
            .collect();
        eprintln!(
            "agentprof k8s: capture target={} cause={} {}",
            line.target,
            line.cause.as_str(),
            kinds.join(" ")
        );
    }
}
