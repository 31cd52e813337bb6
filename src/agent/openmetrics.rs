//! The agent's own /metrics (`--metrics-listen ADDR`): the same self figures it forwards, in
//! OpenMetrics text for Prometheus (served by [`crate::serve`], on a thread of its own).

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;

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
