//! What a check submits and what a run reports: metrics with Datadog's types, service checks,
//! events; tag validation; the aggregator that turns submissions into emitted values.

mod aggregator;
pub mod dogstatsd;
mod sink;

/// A check's log levels: Python's logging numbers, which `check -l` and the Python worker speak.
pub(crate) mod level {
    pub const DEBUG: u8 = 10;
    pub const INFO: u8 = 20;
    pub const WARNING: u8 = 30;
}
pub mod sketch;

pub use aggregator::{Aggregator, Flushed};
pub use sink::{LogLine, Sink, Submission, SubmittedServiceCheck};

use serde::Serialize;

/// How a check submitted a metric (the Datadog Agent's types).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MetricType {
    Gauge,
    Count,
    Rate,
    MonotonicCount,
    Histogram,
    Historate,
    /// DogStatsD sets: the number of distinct values seen in a run, emitted as a gauge.
    Set,
    /// DogStatsD distributions (`|d`): kept as a sketch (see `sketch`), emitted as one.
    Distribution,
}

impl MetricType {
    pub fn as_str(self) -> &'static str {
        match self {
            MetricType::Gauge => "gauge",
            MetricType::Count => "count",
            MetricType::Rate => "rate",
            MetricType::MonotonicCount => "monotonic_count",
            MetricType::Histogram => "histogram",
            MetricType::Historate => "historate",
            MetricType::Set => "set",
            MetricType::Distribution => "distribution",
        }
    }
}

/// One emitted value, after aggregation: what a forwarder would send.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Metric {
    pub metric: String,
    /// The emitted type: `gauge`, `count` or `rate`.
    #[serde(rename = "type")]
    pub mtype: MetricType,
    pub value: f64,
    pub tags: Vec<String>,
    pub host: String,
    /// Unix seconds of the run that produced it.
    pub timestamp: f64,
    /// 1-based run number.
    pub run: u32,
    /// A distribution's sketch (its `value` is the sketch's count); none for other types.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sketch: Option<Box<sketch::Sketch>>,
}

/// OK, WARNING, CRITICAL, UNKNOWN = 0..3, as Datadog numbers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(into = "u8")]
pub enum ServiceCheckStatus {
    Ok = 0,
    Warning = 1,
    Critical = 2,
    Unknown = 3,
}

impl From<ServiceCheckStatus> for u8 {
    fn from(s: ServiceCheckStatus) -> u8 {
        s as u8
    }
}

impl ServiceCheckStatus {
    pub fn from_code(code: i64) -> Option<Self> {
        Some(match code {
            0 => ServiceCheckStatus::Ok,
            1 => ServiceCheckStatus::Warning,
            2 => ServiceCheckStatus::Critical,
            3 => ServiceCheckStatus::Unknown,
            _ => return None,
        })
    }

    pub fn label(self) -> &'static str {
        match self {
            ServiceCheckStatus::Ok => "OK",
            ServiceCheckStatus::Warning => "WARNING",
            ServiceCheckStatus::Critical => "CRITICAL",
            ServiceCheckStatus::Unknown => "UNKNOWN",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServiceCheck {
    pub name: String,
    pub status: ServiceCheckStatus,
    pub tags: Vec<String>,
    pub message: String,
    pub host: String,
    pub run: u32,
}

/// An event as the Agent's `event()` takes it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Event {
    pub title: String,
    pub text: String,
    pub alert_type: String,
    pub priority: String,
    pub aggregation_key: Option<String>,
    pub source_type_name: Option<String>,
    pub tags: Vec<String>,
    pub host: String,
    pub timestamp: f64,
    pub run: u32,
}

pub use crate::config::validate_tag;
