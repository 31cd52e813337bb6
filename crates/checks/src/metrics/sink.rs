//! The submission API a check calls during one run (gauge, count, rate, …), shared by every
//! kind of check; the aggregator turns a run's submissions into emitted values.

use super::{Event, MetricType, ServiceCheckStatus};

/// One raw submission from a check.
#[derive(Debug, Clone, PartialEq)]
pub struct Submission {
    pub name: String,
    pub mtype: MetricType,
    pub value: f64,
    pub tags: Vec<String>,
    /// Overrides the agent's hostname for this value (`hostname=` in the Agent API).
    pub hostname: Option<String>,
    /// For monotonic_count: emit the first value instead of waiting for a second one.
    pub flush_first_value: bool,
    /// Unix seconds when the check submitted it (0: not known, the run's start is used). A rate
    /// is the change between two submissions over the time between them, as the Agent's
    /// check sampler computes it from each sample's own timestamp.
    pub timestamp: f64,
    /// How many values this one stands for: `1/r` for a DogStatsD distribution sent with a
    /// sample rate `@r`, else 1.
    pub weight: f64,
}

/// A service check as submitted, before hostname and global tags are applied.
#[derive(Debug, Clone, PartialEq)]
pub struct SubmittedServiceCheck {
    pub name: String,
    pub status: ServiceCheckStatus,
    pub tags: Vec<String>,
    pub hostname: Option<String>,
    pub message: String,
}

/// A log record a check wrote during its run (`self.log.warning(...)`), at or above the
/// level asked for (`check --log-level`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LogLine {
    /// `DEBUG`, `INFO`, `WARNING`, `ERROR` or `CRITICAL`.
    pub level: String,
    pub message: String,
}

/// Everything one run of one instance submitted.
#[derive(Debug, Default, Clone)]
pub struct Sink {
    pub metrics: Vec<Submission>,
    pub service_checks: Vec<SubmittedServiceCheck>,
    pub events: Vec<Event>,
    pub warnings: Vec<String>,
    /// The check's own log records, in order.
    pub logs: Vec<LogLine>,
    /// Values a check could not compute yet because they need a previous run (cpu %, io r_s).
    pub awaiting_previous: u32,
    /// Submissions past `MAX_SUBMISSIONS` in this run, dropped.
    pub dropped: u64,
    /// The least level of log record kept (Python's numbers: 10 debug … 50 critical; 0 is
    /// the default, warning).
    pub log_level: u8,
    /// Records past `MAX_LOG_RECORDS` were dropped (said once, as a warning).
    logs_cut: bool,
}

use super::level::{DEBUG, WARNING};

/// At most this many log records are kept per run; more are counted in one last record.
const MAX_LOG_RECORDS: usize = 1000;

/// Metric submissions one run of one instance may make: past it they are dropped and counted,
/// so a plugin printing hundreds of thousands of distinct series cannot take agentprof's
/// memory with it (what a submission holds: docs/details.md, "Measured choices").
pub const MAX_SUBMISSIONS: usize = 100_000;

impl Sink {
    /// Adds one submission, unless the run already made `MAX_SUBMISSIONS`.
    pub fn push(&mut self, sub: Submission) {
        if self.metrics.len() >= MAX_SUBMISSIONS {
            self.dropped += 1;
            return;
        }
        self.metrics.push(sub);
    }

    pub fn submit(&mut self, mtype: MetricType, name: &str, value: f64, tags: &[String]) {
        self.push(Submission {
            name: name.to_string(),
            mtype,
            value,
            tags: tags.to_vec(),
            hostname: None,
            flush_first_value: false,
            timestamp: crate::duration::unix_now(),
            weight: 1.0,
        });
    }

    pub fn gauge(&mut self, name: &str, value: f64, tags: &[String]) {
        self.submit(MetricType::Gauge, name, value, tags);
    }

    pub fn count(&mut self, name: &str, value: f64, tags: &[String]) {
        self.submit(MetricType::Count, name, value, tags);
    }

    pub fn rate(&mut self, name: &str, value: f64, tags: &[String]) {
        self.submit(MetricType::Rate, name, value, tags);
    }

    pub fn monotonic_count(&mut self, name: &str, value: f64, tags: &[String]) {
        self.submit(MetricType::MonotonicCount, name, value, tags);
    }

    pub fn histogram(&mut self, name: &str, value: f64, tags: &[String]) {
        self.submit(MetricType::Histogram, name, value, tags);
    }

    pub fn service_check(
        &mut self,
        name: &str,
        status: ServiceCheckStatus,
        tags: &[String],
        message: &str,
    ) {
        self.service_checks.push(SubmittedServiceCheck {
            name: name.to_string(),
            status,
            tags: tags.to_vec(),
            hostname: None,
            message: message.to_string(),
        });
    }

    pub fn event(&mut self, event: Event) {
        self.events.push(event);
    }

    /// An empty sink that keeps the check's log records from `log_level` up (0: warning).
    pub fn with_log_level(log_level: u8) -> Sink {
        Sink {
            log_level,
            ..Sink::default()
        }
    }

    /// A log record of the check at `level` (Python's numbers), kept when the run's level
    /// lets it through; the message is made only then.
    pub fn log(&mut self, level: u8, message: impl FnOnce() -> String) {
        let least = if self.log_level == 0 {
            WARNING
        } else {
            self.log_level
        };
        if level < least {
            return;
        }
        if self.logs.len() >= MAX_LOG_RECORDS {
            if !self.logs_cut {
                self.logs_cut = true;
                self.warning(format!(
                    "log records past the {MAX_LOG_RECORDS} a run keeps were dropped"
                ));
            }
            return;
        }
        let name = match level {
            ..=10 => "DEBUG",
            11..=20 => "INFO",
            21..=30 => "WARNING",
            31..=40 => "ERROR",
            _ => "CRITICAL",
        };
        self.logs.push(LogLine {
            level: name.to_string(),
            message: message(),
        });
    }

    pub fn warning(&mut self, message: impl Into<String>) {
        self.warnings.push(message.into());
    }

    /// Notes `n` values that will appear from the next run on.
    pub fn awaiting_previous(&mut self, n: u32) {
        self.awaiting_previous += n;
        self.log(DEBUG, || {
            format!("{n} values wait for the next run: a rate or a delta needs two samples")
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::level::{DEBUG, INFO};

    #[test]
    fn records_below_the_level_are_not_kept_and_past_the_cap_are_said_once() {
        let mut s = Sink::with_log_level(INFO);
        s.log(DEBUG, unreachable_message);
        assert!(s.logs.is_empty());
        for i in 0..MAX_LOG_RECORDS + 5 {
            s.log(INFO, || format!("r{i}"));
        }
        assert_eq!(s.logs.len(), MAX_LOG_RECORDS);
        assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
        // The default level is warning.
        let mut d = Sink::default();
        d.log(INFO, || "info".into());
        d.log(WARNING, || "warn".into());
        assert_eq!(d.logs.len(), 1);
        assert_eq!(d.logs[0].level, "WARNING");
    }

    /// A message that must not be made: a record under the level is never formatted.
    fn unreachable_message() -> String {
        panic!("a record under the level was formatted")
    }
}
