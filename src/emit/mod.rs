//! Forwarders: where `agentprof start` sends what checks and the agent itself report. One file
//! per destination behind a small trait; all get the same aggregated values.

pub mod datadog_api;
mod dogstatsd;
mod jsonl;

pub use datadog_api::DatadogApi;
pub use dogstatsd::DogStatsd;
pub use jsonl::JsonLines;

use crate::error::UsageError;
use crate::metrics::{Event, Metric, ServiceCheck};

/// What one flush carries.
pub struct Batch<'a> {
    pub metrics: &'a [Metric],
    pub service_checks: &'a [ServiceCheck],
    pub events: &'a [Event],
}

/// What a forwarder delivered, for the summary and `--json`.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Delivery {
    pub forwarder: String,
    /// What is counted: `datagrams`, `payloads` (HTTP requests' bodies) or `lines`.
    pub unit: &'static str,
    pub sent: u64,
    /// Attempts repeated after a 5xx, a 429 or a network error.
    pub retried: u64,
    /// Given up on: refused by the receiver, out of attempts, or (datagrams) a send error.
    pub failed: u64,
    /// Never attempted: a full queue, a queue left at stop, or a line too long for a datagram.
    pub dropped: u64,
}

/// A destination for metrics, service checks and events.
pub trait Forwarder: Send {
    /// A short name for messages and the summary, e.g. `dogstatsd udp://127.0.0.1:8125`.
    fn name(&self) -> String;
    /// Sends (or queues) a batch; an error is counted and reported, never fatal.
    fn send(&mut self, batch: &Batch<'_>) -> std::io::Result<()>;
    /// Sends whatever is queued.
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
    /// What was delivered so far.
    fn delivery(&self) -> Delivery;
}

/// Sends `batch` to every forwarder; each one's failure goes to `failed` with its name (a
/// failure is never fatal: the others are still sent to).
pub fn send_all(
    forwarders: &mut [Box<dyn Forwarder>],
    batch: &Batch<'_>,
    mut failed: impl FnMut(&str, &std::io::Error),
) {
    for f in forwarders.iter_mut() {
        if let Err(e) = f.send(batch) {
            failed(&f.name(), &e);
        }
    }
}

/// Profiling figures (`pull`'s and `receive`'s `profiling_metrics`) as the gauges
/// `profiling_metrics.<name>` a forwarder sends, each with `tags`, `host`, `timestamp` and
/// the collection's number `run`.
pub fn profiling_gauges<'a>(
    figures: impl IntoIterator<Item = (&'a str, f64)>,
    tags: &[String],
    host: &str,
    timestamp: f64,
    run: u32,
) -> Vec<Metric> {
    figures
        .into_iter()
        .map(|(name, value)| Metric {
            metric: format!("profiling_metrics.{name}"),
            mtype: crate::metrics::MetricType::Gauge,
            value,
            tags: tags.to_vec(),
            host: host.to_string(),
            timestamp,
            run,
            sketch: None,
        })
        .collect()
}

/// `dd_url` must be an http(s) URL; what is wrong is said without echoing it (it may carry a
/// password).
fn check_dd_url(text: &str) -> Result<(), UsageError> {
    let url = reqwest::Url::parse(text.trim())
        .map_err(|e| UsageError::flag("dd_url", format!("not a URL ({e})")))?;
    match url.scheme() {
        "http" | "https" if url.host_str().is_some_and(|h| !h.is_empty()) => Ok(()),
        "http" | "https" => Err(UsageError::flag("dd_url", "the URL has no host")),
        s => Err(UsageError::flag(
            "dd_url",
            format!(
                "scheme {s}: use http or https ({})",
                crate::redact::url(&url)
            ),
        )),
    }
}

/// The forwarders agentprof.yaml configures (`dogstatsd_url`, `api_key`, `metrics_file`), in
/// that order; none when nothing is set.
pub fn configured(
    config: &crate::config::AgentConfig,
) -> Result<Vec<Box<dyn Forwarder>>, crate::error::UsageError> {
    use crate::error::UsageError;
    let mut forwarders: Vec<Box<dyn Forwarder>> = Vec::new();
    if let Some(url) = &config.dogstatsd_url {
        forwarders.push(Box::new(
            DogStatsd::connect(url).map_err(|e| UsageError::flag("dogstatsd_url", e))?,
        ));
    }
    if let Some(url) = &config.dd_url {
        check_dd_url(url)?;
    }
    if let Some(key) = &config.api_key {
        let base = datadog_api::base_url(&config.site, config.dd_url.as_deref());
        let api =
            DatadogApi::start(key.0.clone(), base).map_err(|e| UsageError::flag("api_key", e))?;
        forwarders.push(Box::new(api));
    }
    if let Some(path) = &config.metrics_file {
        if path.as_os_str() == "-" {
            forwarders.push(Box::new(JsonLines::stdout()));
            return Ok(forwarders);
        }
        let f = JsonLines::open(path).map_err(|e| {
            UsageError::flag(
                "metrics_file",
                format!("cannot append to {}: {e}", path.display()),
            )
        })?;
        forwarders.push(Box::new(f));
    }
    Ok(forwarders)
}
