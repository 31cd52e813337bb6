//! What `agentprof start` prints when it stops: per check the Agent 7 "Running Checks" facts
//! and, in developer mode, each instance's RSS trend with leakers flagged.

use std::fmt::Write as _;

use serde::Serialize;

use crate::profile::RunRecord;
use crate::profile::leak::{LeakTrend, trend};

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
    pub rss_trend: Vec<LeakTrend>,
    #[serde(skip)]
    total_time_s: f64,
    #[serde(skip)]
    records: Vec<RunRecord>,
}

impl CheckSummary {
    pub fn new(check: &str, kind: &str) -> CheckSummary {
        CheckSummary {
            check: check.into(),
            kind: kind.into(),
            ..Default::default()
        }
    }

    pub fn add(&mut self, rec: RunRecord, keep_for_trend: bool) {
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
        if keep_for_trend {
            // Only the figures the trend needs.
            let mut slim = rec;
            slim.metrics.clear();
            slim.events.clear();
            slim.service_checks.clear();
            self.records.push(slim);
        }
    }

    pub fn finish(&mut self) {
        let mut instances: Vec<usize> = self.records.iter().map(|r| r.instance).collect();
        instances.sort_unstable();
        instances.dedup();
        self.rss_trend = instances
            .iter()
            .filter_map(|&i| {
                trend(
                    &self
                        .records
                        .iter()
                        .filter(|r| r.instance == i)
                        .collect::<Vec<_>>(),
                )
            })
            .collect();
    }
}

pub fn render(checks: &[CheckSummary], config_errors: &[String], forwarders: &[String]) -> String {
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
        for tr in &c.rss_trend {
            let _ = writeln!(
                out,
                "{}: RSS {} per run over {} runs; grew in {} of {} steps{}",
                c.check,
                crate::render::units::signed_bytes(Some(tr.rss_slope_bytes_per_run.round() as i64)),
                tr.runs,
                tr.growing_steps,
                tr.steps,
                if tr.steady_growth {
                    ": steady growth, a leak?"
                } else {
                    ""
                }
            );
        }
    }
    for e in config_errors {
        let _ = writeln!(out, "not started: {e}");
    }
    if !forwarders.is_empty() {
        let _ = writeln!(out, "sent to: {}", forwarders.join(", "));
    }
    out
}
