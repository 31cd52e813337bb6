//! What the Python worker's reply to a run holds, read into agentprof's records: the run's
//! submissions (metrics, service checks, events, logs, metadata), its traced allocations and
//! memory figures.

use serde_json::Value;

use crate::Error;
use crate::metrics::{Event, MetricType, ServiceCheckStatus, Sink, Submission};
use crate::profile::{AllocLine, MemoryProfile};

/// Moves a run's submissions into `sink`; the run's error, if any.
pub(super) fn absorb(reply: &Value, sink: &mut Sink) -> Result<(), Error> {
    for l in reply["logs"].as_array().into_iter().flatten() {
        if let (Some(level), Some(message)) = (l[0].as_str(), l[1].as_str()) {
            sink.logs.push(crate::metrics::LogLine {
                level: level.to_string(),
                message: message.to_string(),
            });
        }
    }
    for m in reply["metrics"].as_array().into_iter().flatten() {
        let mtype = match m[0].as_u64() {
            Some(0) => MetricType::Gauge,
            Some(1) => MetricType::Rate,
            Some(2) | Some(4) => MetricType::Count,
            Some(3) => MetricType::MonotonicCount,
            Some(5) => MetricType::Histogram,
            Some(6) => MetricType::Historate,
            _ => continue,
        };
        sink.push(Submission {
            name: m[1].as_str().unwrap_or_default().to_string(),
            mtype,
            value: m[2].as_f64().unwrap_or(f64::NAN),
            tags: strings(&m[3]),
            hostname: m[4].as_str().map(str::to_string),
            flush_first_value: m[5].as_bool().unwrap_or(false),
            timestamp: m[6].as_f64().unwrap_or(0.0),
            weight: 1.0,
        });
    }
    sink.dropped += reply["dropped"].as_u64().unwrap_or(0);
    for sc in reply["service_checks"].as_array().into_iter().flatten() {
        let Some(status) = sc[1].as_i64().and_then(ServiceCheckStatus::from_code) else {
            continue;
        };
        sink.service_check(
            sc[0].as_str().unwrap_or_default(),
            status,
            &strings(&sc[2]),
            sc[4].as_str().unwrap_or_default(),
        );
        if let (Some(h), Some(last)) = (sc[3].as_str(), sink.service_checks.last_mut()) {
            last.hostname = Some(h.to_string());
        }
    }
    for e in reply["events"].as_array().into_iter().flatten() {
        let s = |k: &str| e.get(k).and_then(Value::as_str).map(str::to_string);
        sink.event(Event {
            title: s("msg_title").or_else(|| s("title")).unwrap_or_default(),
            text: s("msg_text").or_else(|| s("text")).unwrap_or_default(),
            alert_type: s("alert_type").unwrap_or_else(|| "info".into()),
            priority: s("priority").unwrap_or_else(|| "normal".into()),
            aggregation_key: s("aggregation_key"),
            source_type_name: s("source_type_name"),
            tags: strings(&e["tags"]),
            host: s("host").unwrap_or_default(),
            timestamp: e.get("timestamp").and_then(Value::as_f64).unwrap_or(0.0),
            run: 0,
        });
    }
    for w in reply["warnings"].as_array().into_iter().flatten() {
        if let Some(w) = w.as_str() {
            sink.warning(w.to_string());
        }
    }
    match reply["error"].as_str() {
        Some(e) => Err(Error::Run(e.to_string())),
        None => Ok(()),
    }
}

pub(super) fn alloc_lines(v: &Value) -> Vec<AllocLine> {
    v.as_array()
        .into_iter()
        .flatten()
        .map(|l| AllocLine {
            file: l[0].as_str().unwrap_or_default().to_string(),
            line: l[1].as_u64().unwrap_or(0) as u32,
            size: l[2].as_i64().unwrap_or(0),
            count: l[3].as_i64().unwrap_or(0),
            traceback: l[4]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|f| f.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
        })
        .collect()
}

pub(super) fn memory_of(v: &Value) -> Option<MemoryProfile> {
    v.is_object().then(|| MemoryProfile {
        traced_peak: v["traced_peak"].as_u64().unwrap_or(0),
        traced_kept: v["traced_kept"].as_i64().unwrap_or(0),
        top: alloc_lines(&v["top"]),
        tracer_bytes: v["tracer_bytes"].as_u64(),
        snapshots: v["snapshots"].as_bool().unwrap_or(false),
    })
}

pub(super) fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|t| t.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}
