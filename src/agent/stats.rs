//! The agent's own figures every collector loop, as `datadog.agent.collector.*` metrics the
//! Agent's developer mode reported, and each check run's as `datadog.agent.check*`.

use std::time::Instant;

use crate::checks::CheckKind;
use crate::metrics::{Aggregator, Flushed, ServiceCheckStatus, Sink};
use crate::procstat::{Probe, Target};

use super::agent_metrics::AgentMetrics;
use crate::profile::RunRecord;

/// Samples agentprof's own process each loop.
pub struct AgentStats {
    which: AgentMetrics,
    probe: Probe,
    aggregator: Aggregator,
    last: Option<(Instant, f64)>,
    loops: u32,
}

impl AgentStats {
    pub fn new(aggregator: Aggregator, which: AgentMetrics) -> AgentStats {
        AgentStats {
            which,
            probe: Probe::new(Target::SelfProcess),
            aggregator,
            last: None,
            loops: 0,
        }
    }

    /// The loop's metrics: `collection_s` is the time checks ran, `emit_s` the time forwarding
    /// took, since the previous loop.
    pub fn collect(&mut self, collection_s: f64, emit_s: f64, now_unix: f64) -> Flushed {
        self.loops += 1;
        let s = self.probe.after();
        let mut sink = Sink::default();
        let which = &self.which;
        let mut put = |method: &str, name: &str, v: Option<f64>| {
            if let (Some(t), Some(v)) = (which.get(method), v) {
                sink.submit(t, &format!("datadog.agent.collector.{name}"), v, &[]);
            }
        };
        put("memory_info", "memory_info.rss", s.rss.map(|v| v as f64));
        put("memory_info", "memory_info.vms", s.vms.map(|v| v as f64));
        put("num_threads", "num_threads", s.threads.map(|v| v as f64));
        put("num_fds", "num_fds", s.open_fds.map(|v| v as f64));
        put(
            "connections",
            "connections",
            s.connections.map(|v| v as f64),
        );
        if let Some(io) = s.io {
            for (name, v) in [
                ("read_bytes", io.read_bytes),
                ("write_bytes", io.write_bytes),
                ("read_count", io.read_count),
                ("write_count", io.write_count),
            ] {
                put(
                    "io_counters",
                    &format!("io_counters.{name}"),
                    Some(v as f64),
                );
            }
        }
        let cpu = match (s.cpu_user_s, s.cpu_system_s) {
            (Some(u), Some(sy)) => Some(u + sy),
            _ => None,
        };
        let now = Instant::now();
        if let (Some(cpu), Some((then, cpu_then)), Some(t)) =
            (cpu, self.last, self.which.get("cpu_percent"))
        {
            let dt = now.duration_since(then).as_secs_f64();
            if dt > 0.0 {
                sink.submit(
                    t,
                    "datadog.agent.collector.cpu.used",
                    (cpu - cpu_then) / dt * 100.0,
                    &[],
                );
            }
        }
        if let Some(cpu) = cpu {
            self.last = Some((now, cpu));
        }
        sink.gauge("datadog.agent.collector.collection.time", collection_s, &[]);
        sink.gauge("datadog.agent.emitter.emit.time", emit_s, &[]);
        sink.service_check("datadog.agent.up", ServiceCheckStatus::Ok, &[], "");
        self.aggregator.flush(sink, now_unix, self.loops)
    }
}

/// A run's own figures as agent metrics: run time always; in developer mode the process
/// figures of checks that run in their own process (Python worker, exec plugin).
pub fn check_metrics(rec: &RunRecord, kind: CheckKind, developer_mode: bool, sink: &mut Sink) {
    let tags = [format!("check:{}", rec.check)];
    sink.gauge("datadog.agent.check_run_time", rec.cost.wall_s, &tags);
    let status = if rec.error.is_some() {
        ServiceCheckStatus::Critical
    } else {
        ServiceCheckStatus::Ok
    };
    sink.service_check(
        "datadog.agent.check_status",
        status,
        &tags,
        rec.error.as_deref().unwrap_or(""),
    );
    if !developer_mode || kind == CheckKind::Builtin {
        return;
    }
    let c = &rec.cost;
    for (name, v) in [
        ("memory_info.rss", c.rss_after.map(|v| v as f64)),
        ("memory_info.vms", c.vms_after.map(|v| v as f64)),
        ("peak_rss", c.peak_rss.map(|v| v as f64)),
        ("cpu.user", c.cpu_user_s),
        ("cpu.system", c.cpu_system_s),
        ("num_threads", c.threads.map(|v| v as f64)),
        ("num_fds", c.open_fds.map(|v| v as f64)),
        ("connections", c.connections.map(|v| v as f64)),
    ] {
        if let Some(v) = v {
            sink.gauge(&format!("datadog.agent.check.{name}"), v, &tags);
        }
    }
}
