//! The agent's own /metrics (`--metrics-listen ADDR`): the same self figures it forwards, in
//! OpenMetrics text for Prometheus, served by a small HTTP/1.1 responder on its own thread.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::metrics::Metric;

type Labels = Vec<(String, String)>;
type GaugeFamily = Family<Labels, Gauge<f64, AtomicU64>>;

/// Agent figures exported, with their help text.
const EXPORTED: &[(&str, &str)] = &[
    (
        "datadog.agent.collector.memory_info.rss",
        "Resident set size of agentprof, bytes",
    ),
    (
        "datadog.agent.collector.memory_info.vms",
        "Virtual memory size of agentprof, bytes",
    ),
    (
        "datadog.agent.collector.io_counters.read_bytes",
        "Storage bytes read per second",
    ),
    (
        "datadog.agent.collector.io_counters.write_bytes",
        "Storage bytes written per second",
    ),
    (
        "datadog.agent.collector.io_counters.read_count",
        "Read system calls per second",
    ),
    (
        "datadog.agent.collector.io_counters.write_count",
        "Write system calls per second",
    ),
    (
        "datadog.agent.collector.num_threads",
        "Threads of agentprof",
    ),
    (
        "datadog.agent.collector.num_fds",
        "Open file descriptors of agentprof",
    ),
    (
        "datadog.agent.collector.connections",
        "Open TCP and UDP sockets of agentprof",
    ),
    (
        "datadog.agent.collector.cpu.used",
        "CPU used by agentprof over the last loop, percent",
    ),
    (
        "datadog.agent.collector.collection.time",
        "Seconds checks ran during the last loop",
    ),
    (
        "datadog.agent.emitter.emit.time",
        "Seconds spent forwarding during the last loop",
    ),
    (
        "datadog.agent.check_run_time",
        "Seconds the last run of each check took",
    ),
    (
        "datadog.agent.check.memory_info.rss",
        "RSS of a check's own process after its last run, bytes",
    ),
    (
        "datadog.agent.check.cpu.user",
        "User CPU seconds of a check's last run",
    ),
    (
        "datadog.agent.check.cpu.system",
        "System CPU seconds of a check's last run",
    ),
];

pub struct OpenMetrics {
    registry: Registry,
    gauges: HashMap<&'static str, GaugeFamily>,
}

impl OpenMetrics {
    pub fn new() -> OpenMetrics {
        let mut registry = Registry::default();
        let mut gauges = HashMap::new();
        for (name, help) in EXPORTED {
            let family = GaugeFamily::default();
            registry.register(name.replace('.', "_"), *help, family.clone());
            gauges.insert(*name, family);
        }
        OpenMetrics { registry, gauges }
    }

    /// Takes the latest value of every exported metric in `metrics`; `check:NAME` tags become
    /// the `check` label.
    pub fn update(&self, metrics: &[Metric]) {
        for m in metrics {
            let Some(family) = self.gauges.get(m.metric.as_str()) else {
                continue;
            };
            let labels: Labels = m
                .tags
                .iter()
                .filter_map(|t| {
                    t.strip_prefix("check:")
                        .map(|c| ("check".to_string(), c.to_string()))
                })
                .collect();
            family.get_or_create(&labels).set(m.value);
        }
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        if encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}

impl Default for OpenMetrics {
    fn default() -> Self {
        Self::new()
    }
}

fn answer(mut stream: TcpStream, metrics: &OpenMetrics) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    // Read the whole request head: closing with unread bytes would reset the connection.
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 8192 {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let request = String::from_utf8_lossy(&buf);
    let first = request.lines().next().unwrap_or_default();
    let (status, ctype, body) = if first.starts_with("GET /metrics ") || first == "GET /metrics" {
        (
            "200 OK",
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            metrics.render(),
        )
    } else {
        (
            "404 Not Found",
            "text/plain",
            "only GET /metrics is served here\n".to_string(),
        )
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// Serves `metrics` on `listener` until the process ends.
pub fn serve(listener: TcpListener, metrics: Arc<OpenMetrics>) {
    std::thread::Builder::new()
        .name("metrics-listen".into())
        .spawn(move || {
            for stream in listener.incoming().flatten() {
                answer(stream, &metrics);
            }
        })
        .map(|_| ())
        .unwrap_or_else(|e| eprintln!("agentprof: cannot serve /metrics: {e}"));
}
