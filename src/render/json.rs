//! `--json`: one document with a stable schema, documented in docs/json.md. Unknown figures
//! are `null`, never 0. Bump SCHEMA_VERSION on any change that is not a pure addition.

use serde_json::{Value, json};

use super::{CheckReport, ProfileView};

pub const SCHEMA_VERSION: u32 = 1;

/// Strings no check sends (a NUL starts them), standing in the document for the spooled
/// metrics, service checks and events until it is written.
const SPOOL_MARKS: [&str; 3] = [
    "\0spool:metrics",
    "\0spool:service_checks",
    "\0spool:events",
];
/// Where a spooled report's runs are written, one at a time, from their records.
const RUNS_MARK: &str = "\0spool:runs";

/// Every run's metrics, service checks and events as JSON text in files of their own (unlinked
/// at once: nothing is left behind), so that `check -t N --json` holds in memory only what
/// one run sent, whatever N (kept as values, every run's grew without bound).
pub struct Spool {
    files: [std::fs::File; 3],
    counts: [u64; 3],
}

impl Spool {
    pub fn new() -> std::io::Result<Spool> {
        let open = |what: &str| -> std::io::Result<std::fs::File> {
            static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
            let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let path = std::env::temp_dir()
                .join(format!("agentprof-{}-{n}-{what}.json", std::process::id()));
            let f = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&path)?;
            std::fs::remove_file(&path)?;
            Ok(f)
        };
        Ok(Spool {
            files: [open("metrics")?, open("service_checks")?, open("events")?],
            counts: [0; 3],
        })
    }

    /// Moves what `r` sent into the spool.
    pub fn take(&mut self, r: &mut crate::profile::RunRecord) -> std::io::Result<()> {
        use std::io::Write;
        let instance = r.instance;
        let mut put = |k: usize, v: Value| -> std::io::Result<()> {
            let mut w = std::io::BufWriter::new(&self.files[k]);
            if self.counts[k] > 0 {
                w.write_all(b",\n")?;
            }
            serde_json::to_writer(&mut w, &with_instance(v, instance))?;
            self.counts[k] += 1;
            w.flush()
        };
        for m in std::mem::take(&mut r.metrics) {
            put(0, json!(m))?;
        }
        for sc in std::mem::take(&mut r.service_checks) {
            put(1, json!(sc))?;
        }
        for e in std::mem::take(&mut r.events) {
            put(2, json!(e))?;
        }
        Ok(())
    }

    /// Writes `doc` (from [`render`] of `report`, whose runs were spooled) to `out`: the
    /// spooled arrays copied in where their marks are, the runs written one by one.
    pub fn write(
        &mut self,
        doc: &Value,
        report: &CheckReport,
        out: &mut impl std::io::Write,
    ) -> std::io::Result<()> {
        use std::io::{Seek, SeekFrom};
        let text = serde_json::to_string_pretty(doc)?;
        let mut rest = text.as_str();
        let marks: Vec<String> = SPOOL_MARKS
            .iter()
            .chain([&RUNS_MARK])
            .filter_map(|m| serde_json::to_string(m).ok())
            .collect();
        loop {
            let next = marks
                .iter()
                .enumerate()
                .filter_map(|(k, quoted)| rest.find(quoted).map(|at| (at, k, quoted.len())))
                .min();
            let Some((at, k, len)) = next else {
                out.write_all(rest.as_bytes())?;
                return Ok(());
            };
            // The mark is the array's one element: `[\n    "mark"\n  ]`.
            out.write_all(&rest.as_bytes()[..at])?;
            if k < self.files.len() {
                self.files[k].seek(SeekFrom::Start(0))?;
                std::io::copy(&mut self.files[k], out)?;
            } else {
                for (i, r) in report.records.iter().enumerate() {
                    if i > 0 {
                        out.write_all(b",\n")?;
                    }
                    serde_json::to_writer(&mut *out, &run(r))?;
                }
            }
            rest = &rest[at + len..];
        }
    }
}

pub fn render(report: &CheckReport) -> Value {
    let runs: Vec<Value> = if report.spooled {
        vec![json!(RUNS_MARK)]
    } else {
        report.records.iter().map(run).collect()
    };
    let (mut metrics, mut service_checks, mut events, warnings) = outputs(report);
    // What a spool holds (`check -t N --json`) goes where these marks are when written.
    if report.spooled {
        metrics = vec![json!(SPOOL_MARKS[0])];
        service_checks = vec![json!(SPOOL_MARKS[1])];
        events = vec![json!(SPOOL_MARKS[2])];
    }
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
        Some(ProfileView::Python(p)) => Some(json!({
            "kind": "python_sampled",
            "method": p.method,
            "frequency_hz": p.frequency_hz,
            "samples": p.samples,
            "wall_ns": p.wall_ns,
            "cpu_ns": p.cpu_ns,
            "runs": p.runs,
            "partial_runs": p.partial_runs,
            "torn_stacks": p.torn,
            "sampler_cpu_ns": p.sampler_cpu_ns,
            "warm_up_excluded": p.warm_up,
            "functions": p.functions,
            "top": p.rows,
        })),
        Some(ProfileView::Pstats(v)) => Some(super::pstats::json(v)),
        None => None,
    }
}
