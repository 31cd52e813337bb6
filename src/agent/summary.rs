//! What `agentprof start` prints when it stops: per check the Agent 7 "Running Checks" facts
//! and, in developer mode, each instance's RSS trend with leakers flagged.

use std::fmt::Write as _;

use serde::Serialize;

use crate::profile::RunRecord;
use crate::profile::leak::{LeakTrend, trend_of};

/// RSS values kept per instance for the trend; past this, every other one is dropped and
/// only every second run after is kept, so a long run's memory stays bounded.
const TREND_POINTS: usize = 2048;

/// The RSS series of the successful runs of one instance (as `profile::leak::rss_series`
/// reads it), every `stride`-th run.
#[derive(Debug, Clone, Default)]
struct RssSeries {
    instance: usize,
    stride: usize,
    /// Successful runs seen (with an RSS figure).
    runs: usize,
    points: Vec<f64>,
    /// For a process that lives across runs: the previous run's RSS after, and the growth
    /// of the runs so far (what RSS moved less what it gained between runs).
    previous: Option<f64>,
    level: f64,
}

impl RssSeries {
    /// The value of a run with these figures: its RSS after, or (`persists`) the growth of
    /// the runs so far.
    fn value(&mut self, before: Option<u64>, after: u64, persists: bool) -> f64 {
        let after = after as f64;
        if !persists {
            return after;
        }
        if let (Some(p), Some(b)) = (self.previous, before) {
            self.level += (after - p) - (b as f64 - p).max(0.0);
        }
        self.previous = Some(after);
        self.level
    }

    fn push(&mut self, rss: f64) {
        if self.runs.is_multiple_of(self.stride) {
            if self.points.len() == TREND_POINTS {
                let kept: Vec<f64> = self.points.iter().copied().step_by(2).collect();
                self.points = kept;
                self.stride *= 2;
            }
            if self.runs.is_multiple_of(self.stride) {
                self.points.push(rss);
            }
        }
        self.runs += 1;
    }
}

/// The RSS trend of one instance.
#[derive(Debug, Clone, Serialize)]
pub struct InstanceTrend {
    pub instance: usize,
    #[serde(flatten)]
    pub trend: LeakTrend,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct CheckSummary {
    pub check: String,
    pub kind: String,
    pub runs: u32,
    pub errors: u32,
    pub skipped: u32,
    pub metric_samples_last: usize,
    pub metric_samples_total: usize,
    pub events_last: usize,
    pub events_total: usize,
    pub service_checks_last: usize,
    pub service_checks_total: usize,
    pub average_run_time_s: f64,
    pub last_run_time_s: f64,
    pub last_error: Option<String>,
    /// Developer mode: per instance.
    pub rss_trend: Vec<InstanceTrend>,
    #[serde(skip)]
    total_time_s: f64,
    #[serde(skip)]
    series: Vec<RssSeries>,
}

impl CheckSummary {
    pub fn new(check: &str, kind: &str) -> CheckSummary {
        CheckSummary {
            check: check.into(),
            kind: kind.into(),
            ..Default::default()
        }
    }

    pub fn add(&mut self, rec: RunRecord, keep_for_trend: bool, persists: bool) {
        self.runs += 1;
        if let Some(e) = &rec.error {
            self.errors += 1;
            self.last_error = Some(e.clone());
        }
        self.metric_samples_last = rec.metrics.len();
        self.metric_samples_total += rec.metrics.len();
        self.events_last = rec.events.len();
        self.events_total += rec.events.len();
        self.service_checks_last = rec.service_checks.len();
        self.service_checks_total += rec.service_checks.len();
        self.total_time_s += rec.cost.wall_s;
        self.last_run_time_s = rec.cost.wall_s;
        self.average_run_time_s = self.total_time_s / f64::from(self.runs);
        if keep_for_trend
            && rec.error.is_none()
            && let Some(rss) = rec.cost.rss_after
        {
            let at = match self.series.iter().position(|r| r.instance == rec.instance) {
                Some(at) => at,
                None => {
                    self.series.push(RssSeries {
                        instance: rec.instance,
                        stride: 1,
                        ..Default::default()
                    });
                    self.series.len() - 1
                }
            };
            let s = &mut self.series[at];
            let v = s.value(rec.cost.rss_before, rss, persists);
            s.push(v);
        }
    }

    pub fn finish(&mut self) {
        self.series.sort_by_key(|r| r.instance);
        self.rss_trend = self
            .series
            .iter()
            .filter_map(|r| {
                trend_of(&r.points, r.stride, r.runs).map(|trend| InstanceTrend {
                    instance: r.instance,
                    trend,
                })
            })
            .collect();
    }
}

pub fn render(
    checks: &[CheckSummary],
    config_errors: &[String],
    delivery: &[crate::emit::Delivery],
) -> String {
    let mut out = String::from("\nRunning checks\n");
    let mut t = comfy_table::Table::new();
    t.load_style(comfy_table::presets::NOTHING).force_no_tty();
    t.set_header([
        "CHECK",
        "KIND",
        "RUNS",
        "ERRORS",
        "SKIPPED",
        "METRICS (LAST/TOTAL)",
        "EVENTS",
        "SERVICE CHECKS",
        "AVG TIME",
        "LAST TIME",
    ]);
    let secs = |s: f64| crate::duration::human(std::time::Duration::from_secs_f64(s.max(0.0)));
    for c in checks {
        t.add_row(vec![
            c.check.clone(),
            c.kind.clone(),
            c.runs.to_string(),
            c.errors.to_string(),
            c.skipped.to_string(),
            format!("{}/{}", c.metric_samples_last, c.metric_samples_total),
            format!("{}/{}", c.events_last, c.events_total),
            format!("{}/{}", c.service_checks_last, c.service_checks_total),
            secs(c.average_run_time_s),
            secs(c.last_run_time_s),
        ]);
    }
    for line in t.to_string().lines() {
        let _ = writeln!(out, "{}", line.trim_end());
    }
    for c in checks {
        if let Some(e) = &c.last_error {
            let first = e.lines().last().unwrap_or_default();
            let _ = writeln!(out, "{}: last error: {first}", c.check);
        }
        for it in &c.rss_trend {
            let tr = &it.trend;
            let _ = writeln!(
                out,
                "{} instance {}: RSS {} per run over {} runs; grew in {} of {} steps{}",
                c.check,
                it.instance,
                crate::render::units::signed_bytes(Some(tr.rss_slope_bytes_per_run.round() as i64)),
                tr.runs,
                tr.growing_steps,
                tr.steps,
                crate::profile::leak::verdict(tr)
            );
        }
    }
    for e in config_errors {
        let _ = writeln!(out, "not started: {e}");
    }
    for d in delivery {
        let mut line = format!("sent to {}: {} {}", d.forwarder, d.sent, d.unit);
        for (n, what) in [
            (d.retried, "retried"),
            (d.failed, "failed"),
            (d.dropped, "dropped"),
        ] {
            if n > 0 {
                let _ = write!(line, ", {n} {what}");
            }
        }
        let _ = writeln!(out, "{line}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_run_keeps_a_bounded_series_and_the_same_slope() {
        let mut s = RssSeries {
            stride: 1,
            ..Default::default()
        };
        for run in 0..10_000 {
            s.push(50e6 + 8192.0 * f64::from(run));
        }
        assert!(s.points.len() <= TREND_POINTS, "{}", s.points.len());
        assert_eq!(s.stride, 8);
        let t = trend_of(&s.points, s.stride, s.runs).expect("trend");
        assert_eq!(t.runs, 10_000);
        assert!(
            (t.rss_slope_bytes_per_run - 8192.0).abs() < 1e-6,
            "{}",
            t.rss_slope_bytes_per_run
        );
        assert!(t.steady_growth);
    }
}
