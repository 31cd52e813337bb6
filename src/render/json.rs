//! `--json`: one document with a stable schema, documented in docs/json.md. Unknown figures
//! are `null`, never 0. Bump SCHEMA_VERSION on any change that is not a pure addition.

use serde_json::{Value, json};

use super::{CheckReport, ProfileView};

pub const SCHEMA_VERSION: u32 = 1;

pub fn render(report: &CheckReport) -> Value {
    let runs: Vec<Value> = report.records.iter().map(run).collect();
    let (metrics, service_checks, events, warnings) = outputs(report);
    let mut doc = json!({
        "schema_version": SCHEMA_VERSION,
        "check": report.check,
        "kind": report.kind,
        "version": report.version,
        "config": report.source,
        "runs": runs,
        "metrics": metrics,
        "service_checks": service_checks,
        "events": events,
        "warnings": warnings,
        "leak": leaks(report),
        "python": report.python,
        "memory_growth": report.memory_growth,
        "metadata": report.metadata,
    });
    if let (Some(p), Value::Object(m)) = (profile(report), &mut doc) {
        m.insert("profile".into(), p);
    }
    doc
}

/// One run's cost.
fn run(r: &crate::profile::RunRecord) -> Value {
    let c = &r.cost;
    json!({
        "instance": r.instance,
        "run": r.run,
        "status": r.status,
        "error": r.error,
        "started_at": r.started_at,
        "run_time_s": c.wall_s,
        "cpu": { "user_s": c.cpu_user_s, "system_s": c.cpu_system_s, "total_s": c.cpu_s() },
        "memory": {
            "rss_before": c.rss_before,
            "rss_after": c.rss_after,
            "rss_diff": c.rss_diff(),
            "vms_before": c.vms_before,
            "vms_after": c.vms_after,
            "vms_diff": c.vms_diff(),
            "peak_rss": c.peak_rss,
            "peak_rss_scope": c.peak_scope,
        },
        "io": {
            "read_bytes": c.io.map(|i| i.read_bytes),
            "write_bytes": c.io.map(|i| i.write_bytes),
            "read_count": c.io.map(|i| i.read_count),
            "write_count": c.io.map(|i| i.write_count),
        },
        "threads": c.threads,
        "open_fds": c.open_fds,
        "connections": c.connections,
        "awaiting_previous": r.awaiting_previous,
        "logs": r.logs,
        "memory_profile": r.memory,
    })
}

fn with_instance(v: Value, instance: usize) -> Value {
    match v {
        Value::Object(mut m) => {
            m.insert("instance".into(), json!(instance));
            Value::Object(m)
        }
        other => other,
    }
}

/// What the runs sent: metrics, service checks, events, and the warnings (configuration's,
/// then each run's), each with its instance.
fn outputs(report: &CheckReport) -> (Vec<Value>, Vec<Value>, Vec<Value>, Vec<Value>) {
    let mut metrics = Vec::new();
    let mut service_checks = Vec::new();
    let mut events = Vec::new();
    let mut warnings: Vec<Value> = report.config_warnings.iter().map(|w| json!(w)).collect();
    for r in &report.records {
        metrics.extend(
            r.metrics
                .iter()
                .map(|m| with_instance(json!(m), r.instance)),
        );
        service_checks.extend(
            r.service_checks
                .iter()
                .map(|s| with_instance(json!(s), r.instance)),
        );
        events.extend(r.events.iter().map(|e| with_instance(json!(e), r.instance)));
        warnings.extend(
            r.warnings
                .iter()
                .map(|w| json!(format!("instances[{}] run {}: {w}", r.instance, r.run))),
        );
    }
    (metrics, service_checks, events, warnings)
}

/// Each instance's memory trend over its runs, where there is one.
fn leaks(report: &CheckReport) -> Vec<Value> {
    let mut instances: Vec<usize> = report.records.iter().map(|r| r.instance).collect();
    instances.sort_unstable();
    instances.dedup();
    instances
        .iter()
        .filter_map(|&i| {
            let recs: Vec<&crate::profile::RunRecord> =
                report.records.iter().filter(|r| r.instance == i).collect();
            crate::profile::leak::trend(&recs, report.kind.persists())
                .map(|t| with_instance(json!(t), i))
        })
        .collect()
}

fn profile(report: &CheckReport) -> Option<Value> {
    match &report.profile {
        Some(ProfileView::Cpu(p)) => Some(json!({
            "kind": "cpu",
            "frequency_hz": p.frequency_hz,
            "period_ns": p.period_ns,
            "samples": p.samples,
            "meaningful": p.meaningful(),
            "min_samples": p.min_samples,
            "suggested_times": p.suggested_times,
            "repeated_runs": p.repeated,
            "functions": p.top.functions,
            "top": p.top.rows,
        })),
        Some(ProfileView::Pstats(v)) => Some(super::pstats::json(v)),
        None => None,
    }
}
