//! conf.d/agent_metrics.yaml: which of the agent's own process figures developer mode sends,
//! and as gauge or rate, as the Datadog Agent's `agent_metrics` check configured them.
//!
//! ```yaml
//! init_config:
//!   process_metrics:
//!     - name: memory_info    # datadog.agent.collector.memory_info.rss and .vms
//!       type: gauge
//!       active: true
//! ```

use std::path::Path;

use serde::Deserialize;

use crate::config::{CheckConf, find_key_line};
use crate::error::UsageError;
use crate::metrics::MetricType;

/// The figures agentprof can report about itself, with the Agent's names and default types.
pub const METHODS: &[(&str, MetricType)] = &[
    ("memory_info", MetricType::Gauge),
    ("io_counters", MetricType::Rate),
    ("num_threads", MetricType::Gauge),
    ("num_fds", MetricType::Gauge),
    ("connections", MetricType::Gauge),
    ("cpu_percent", MetricType::Gauge),
];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    name: String,
    #[serde(rename = "type", default)]
    mtype: Option<String>,
    #[serde(default = "yes")]
    active: bool,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Deserialize, Default)]
struct Init {
    #[serde(default)]
    process_metrics: Vec<Entry>,
}

#[derive(Debug, Deserialize)]
struct File {
    #[serde(default)]
    init_config: Option<Init>,
}

/// Active figures and how each is sent.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentMetrics {
    pub active: Vec<(&'static str, MetricType)>,
}

impl Default for AgentMetrics {
    fn default() -> Self {
        AgentMetrics {
            active: METHODS.to_vec(),
        }
    }
}

impl AgentMetrics {
    /// Reads `confd/agent_metrics.yaml`, or the defaults when there is none.
    pub fn load(confd: &Path) -> Result<AgentMetrics, UsageError> {
        let Some(path) = CheckConf::find(confd, "agent_metrics") else {
            return Ok(AgentMetrics::default());
        };
        let text = crate::config::read_config_text(&path)?;
        let file: File = serde_yaml_ng::from_str(&text).map_err(|e| UsageError::yaml(&path, &e))?;
        let entries = file.init_config.unwrap_or_default().process_metrics;
        if entries.is_empty() {
            return Ok(AgentMetrics::default());
        }
        let mut active = Vec::new();
        for e in entries {
            let at = find_key_line(&text, "name")
                .map(|l| format!(":{l}"))
                .unwrap_or_default();
            let Some(&(name, default)) = METHODS.iter().find(|(n, _)| *n == e.name) else {
                let known: Vec<&str> = METHODS.iter().map(|(n, _)| *n).collect();
                return Err(UsageError::config(
                    format!("{}{at}", path.display()),
                    format!(
                        "process_metrics: unknown name `{}` (known: {})",
                        e.name,
                        known.join(", ")
                    ),
                ));
            };
            let mtype = match e.mtype.as_deref() {
                None => default,
                Some("gauge") => MetricType::Gauge,
                Some("rate") => MetricType::Rate,
                Some(other) => {
                    return Err(UsageError::config(
                        &path,
                        format!("process_metrics: {name}: type `{other}` is not gauge or rate"),
                    ));
                }
            };
            if e.active {
                active.push((name, mtype));
            }
        }
        Ok(AgentMetrics { active })
    }

    pub fn get(&self, name: &str) -> Option<MetricType> {
        self.active
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, t)| *t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_overrides() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            AgentMetrics::load(dir.path()).unwrap(),
            AgentMetrics::default()
        );
        std::fs::write(
            dir.path().join("agent_metrics.yaml"),
            "init_config:\n  process_metrics:\n    - name: memory_info\n      type: rate\n    - name: num_threads\n      active: false\n",
        )
        .unwrap();
        let m = AgentMetrics::load(dir.path()).unwrap();
        assert_eq!(m.get("memory_info"), Some(MetricType::Rate));
        assert_eq!(m.get("num_threads"), None);
        assert_eq!(m.get("io_counters"), None);
        std::fs::write(
            dir.path().join("agent_metrics.yaml"),
            "init_config:\n  process_metrics:\n    - name: disk_usage\n",
        )
        .unwrap();
        let e = AgentMetrics::load(dir.path()).unwrap_err().to_string();
        assert!(e.contains("unknown name `disk_usage`"), "{e}");
    }
}
