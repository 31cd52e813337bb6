//! What one gate run measured: the statistics a baseline file holds and `--compare` reads,
//! from run records or from `agentprof check --json` reports.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::profile::RunRecord;

/// The baseline schema this agentprof writes and reads. Schema 1 timed runs under cProfile
/// (Python checks), so its timings do not compare with today's, taken as the Agent runs the
/// check; schema 2's Python stacks were cProfile's times split along its caller edges, where
/// schema 3's are sampled.
pub const SCHEMA: u32 = 3;
/// Seconds a timing in a baseline may hold at most (a run of over a day is not one).
const MAX_SECONDS: f64 = 86_400.0;

/// What one gate run measured: the baseline file, and `--compare`'s inputs.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct GateStats {
    pub schema: u32,
    pub check: String,
    pub kind: String,
    /// Timed runs (the warm-up run is not among them).
    pub runs: usize,
    pub errors: usize,
    pub wall_s: Vec<f64>,
    pub cpu_s: Vec<f64>,
    /// Median wall and CPU time of the runs of each worker process: the samples the timing
    /// test compares (a process's own runs agree more with each other than processes do).
    #[serde(default)]
    pub wall_process_medians: Vec<f64>,
    #[serde(default)]
    pub cpu_process_medians: Vec<f64>,
    /// RSS growth per run within each worker process (its warm-up run included): RSS
    /// starts over in each process, so a slope across processes would mean nothing.
    #[serde(default)]
    pub rss_slope_per_process: Vec<f64>,
    /// Python checks: per worker process, CPU seconds of a fixed pure-Python loop (before and
    /// after its runs, averaged) — the machine's speed while that process ran.
    #[serde(default)]
    pub calibration_s: Vec<f64>,
    /// Which loop `calibration_s` timed: runs divide by it only when both sides timed the
    /// same one.
    #[serde(default)]
    pub calibration_loop: Option<String>,
    /// The share of the machine's CPU time (all its CPUs, from /proc/stat, stolen time
    /// included) that work other than agentprof and its children took while the runs went
    /// on: 0 on a quiet machine, 0.5 with a core's worth of other work on two.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub others_busy: Option<f64>,
    pub rss_after: Vec<u64>,
    pub peak_rss: Vec<u64>,
    /// Python checks: function calls per run (cProfile), and the functions called most.
    pub python_calls_per_run: Option<f64>,
    pub python_top: Vec<FunctionCalls>,
    /// Metric name -> the most series of it one run emitted.
    pub metrics: BTreeMap<String, usize>,
    /// The runs traced allocations (`--memory`, Python checks). Tracing slows Python down,
    /// so a baseline and a run compare only when both did or both did not.
    #[serde(default)]
    pub tracemalloc: bool,
    /// With `--memory`: per run, the traced peak above the run's start, bytes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub traced_peak: Vec<u64>,
    /// With `--memory`: per run, traced bytes at its end minus at its start.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub traced_kept: Vec<i64>,
    /// `root;…;leaf NS` lines: nanoseconds per run in each stack (sampled: wall time for
    /// Python checks, CPU for built-ins), for `--flamegraph-diff`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stacks_ns_per_run: Vec<String>,
    /// `--measure instructions`: user-space instructions of each counted run (the check's
    /// own work; see `gate::instructions`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instructions_per_run: Vec<f64>,
    /// What counted them: `valgrind-3.19.0 (callgrind)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions_source: Option<String>,
    /// Counted by callgrind: each function's instructions per counted run, its own and with
    /// what it called (the functions that matter: `gate::callgrind::per_run`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub instructions_by_function: BTreeMap<String, super::callgrind::FunctionCost>,
    /// Counted by callgrind: each counted run's accesses served by L1, the last-level cache
    /// and memory (its cache simulation), for estimated cycles.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cache_hits_per_run: Vec<super::callgrind::CacheHits>,
    /// Counted by callgrind: `root;…;leaf N` folded stacks, instructions per counted run
    /// (callgrind's call graph followed down), for `--flamegraph-diff` of instructions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub instruction_stacks_per_run: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FunctionCalls {
    pub function: String,
    pub calls_per_run: f64,
}

/// Why a baseline or a report cannot be compared with.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BaselineError {
    #[error(
        "schema {0}: this agentprof reads baselines of schema {SCHEMA} (make it again with --update-baseline)"
    )]
    Schema(u32),
    #[error("{key}: {value:?} is not a duration in seconds ({low}, at most {MAX_SECONDS})")]
    NotADuration {
        key: &'static str,
        value: f64,
        low: &'static str,
    },
    #[error(
        "rss_slope_per_process or instructions_per_run: a value is not a finite number (≥ 0 for counts)"
    )]
    NotFinite,
    #[error("others_busy: not a share of the machine's time (0 to 1)")]
    NotAShare,
    #[error("no runs[] (not an agentprof check --json report)")]
    NoRuns,
    #[error("runs[] is empty")]
    EmptyRuns,
}

impl GateStats {
    /// Refuses a document the gate cannot compare with: another schema, or timings that are
    /// not durations (negative, not finite, over a day; a calibration of 0 would divide by
    /// zero).
    pub fn validate(&self) -> Result<(), BaselineError> {
        if self.schema != SCHEMA {
            return Err(BaselineError::Schema(self.schema));
        }
        let lists: [(&'static str, &[f64]); 5] = [
            ("wall_s", &self.wall_s),
            ("cpu_s", &self.cpu_s),
            ("wall_process_medians", &self.wall_process_medians),
            ("cpu_process_medians", &self.cpu_process_medians),
            ("calibration_s", &self.calibration_s),
        ];
        for (key, values) in lists {
            let calibration = key == "calibration_s";
            let ok =
                |v: f64| v.is_finite() && v <= MAX_SECONDS && (v > 0.0 || !calibration && v == 0.0);
            if let Some(v) = values.iter().find(|v| !ok(**v)) {
                let low = if calibration { "above 0" } else { "0 or more" };
                return Err(BaselineError::NotADuration {
                    key,
                    value: *v,
                    low,
                });
            }
        }
        if self
            .others_busy
            .is_some_and(|b| !(b.is_finite() && (0.0..=1.0).contains(&b)))
        {
            return Err(BaselineError::NotAShare);
        }
        if self.rss_slope_per_process.iter().any(|v| !v.is_finite())
            || self
                .instructions_per_run
                .iter()
                .any(|v| !(v.is_finite() && *v >= 0.0))
        {
            return Err(BaselineError::NotFinite);
        }
        Ok(())
    }

    /// Nothing measured yet.
    pub fn empty(check: &str, kind: &str) -> GateStats {
        GateStats {
            schema: SCHEMA,
            check: check.to_string(),
            kind: kind.to_string(),
            runs: 0,
            errors: 0,
            wall_s: Vec::new(),
            cpu_s: Vec::new(),
            wall_process_medians: Vec::new(),
            cpu_process_medians: Vec::new(),
            rss_slope_per_process: Vec::new(),
            calibration_s: Vec::new(),
            calibration_loop: None,
            others_busy: None,
            rss_after: Vec::new(),
            peak_rss: Vec::new(),
            python_calls_per_run: None,
            python_top: Vec::new(),
            metrics: BTreeMap::new(),
            tracemalloc: false,
            traced_peak: Vec::new(),
            traced_kept: Vec::new(),
            stacks_ns_per_run: Vec::new(),
            instructions_per_run: Vec::new(),
            instructions_source: None,
            instructions_by_function: BTreeMap::new(),
            cache_hits_per_run: Vec::new(),
            instruction_stacks_per_run: Vec::new(),
        }
    }

    /// The timed runs' figures: run count, failures, times, memory and metric series.
    pub fn absorb_records(&mut self, records: &[RunRecord]) {
        let ok: Vec<&RunRecord> = records.iter().filter(|r| r.error.is_none()).collect();
        // Per metric, the most series any run emitted: a rate has a value only in runs
        // that follow another closely enough to see its counter move.
        let mut run: BTreeMap<&str, usize> = BTreeMap::new();
        for r in &ok {
            run.clear();
            for m in &r.metrics {
                *run.entry(m.metric.as_str()).or_insert(0) += 1;
            }
            for (name, &n) in &run {
                let e = self.metrics.entry((*name).to_string()).or_insert(0);
                *e = (*e).max(n);
            }
        }
        self.runs += records.len();
        self.errors += records.len() - ok.len();
        self.wall_s.extend(ok.iter().map(|r| r.cost.wall_s));
        self.cpu_s.extend(ok.iter().filter_map(|r| r.cost.cpu_s()));
        self.rss_after
            .extend(ok.iter().filter_map(|r| r.rss_after_untraced()));
        self.peak_rss
            .extend(ok.iter().filter_map(|r| r.cost.peak_rss));
    }

    /// Traced allocations (`--memory`) of untimed runs.
    pub fn absorb_traced(&mut self, records: &[RunRecord]) {
        let ok = records.iter().filter(|r| r.error.is_none());
        for m in ok.filter_map(|r| r.memory.as_ref()) {
            self.tracemalloc = true;
            self.traced_peak.push(m.traced_peak);
            self.traced_kept.push(m.traced_kept);
        }
    }

    /// From the records of one process's runs (tests, and the figures of one load).
    pub fn from_records(check: &str, kind: &str, records: &[RunRecord]) -> GateStats {
        let mut s = GateStats::empty(check, kind);
        s.absorb_records(records);
        s
    }
}

/// cProfile's top functions, their calls divided over `runs`.
pub fn top_calls(p: &crate::profile::PstatsReport, runs: f64) -> Vec<FunctionCalls> {
    p.rows
        .iter()
        .map(|(file, line, func, _, calls, _, _)| FunctionCalls {
            function: format!("{file}:{line}({func})"),
            calls_per_run: *calls as f64 / runs.max(1.0),
        })
        .collect()
}

impl GateStats {
    /// From an `agentprof check --json` document (its runs, metrics and, with `--profile`, its
    /// cProfile statistics): what `gate --compare` reads from reports made by `check`. Such a
    /// report has one process's runs, so its timings are compared run by run.
    pub fn from_check_json(doc: &serde_json::Value) -> Result<GateStats, BaselineError> {
        let runs = doc["runs"].as_array().ok_or(BaselineError::NoRuns)?;
        if runs.is_empty() {
            return Err(BaselineError::EmptyRuns);
        }
        let ok: Vec<&serde_json::Value> = runs.iter().filter(|r| r["status"] == "ok").collect();
        let f = |v: &serde_json::Value| v.as_f64();
        let u = |v: &serde_json::Value| v.as_u64();
        let metrics = most_per_run(doc);
        let profiled = (doc["profile"]["kind"] == "pstats").then_some(&doc["profile"]);
        let n = runs.len().max(1) as f64;
        let memory: Vec<&serde_json::Value> = ok
            .iter()
            .map(|r| &r["memory_profile"])
            .filter(|m| m.is_object())
            .collect();
        Ok(GateStats {
            schema: SCHEMA,
            check: doc["check"].as_str().unwrap_or("?").to_string(),
            kind: doc["kind"].as_str().unwrap_or("?").to_string(),
            runs: runs.len(),
            errors: runs.len() - ok.len(),
            wall_s: ok.iter().filter_map(|r| f(&r["run_time_s"])).collect(),
            cpu_s: ok
                .iter()
                .filter_map(|r| Some(f(&r["cpu"]["user_s"])? + f(&r["cpu"]["system_s"])?))
                .collect(),
            wall_process_medians: Vec::new(),
            cpu_process_medians: Vec::new(),
            rss_slope_per_process: Vec::new(),
            calibration_s: Vec::new(),
            calibration_loop: None,
            others_busy: None,
            rss_after: ok
                .iter()
                .filter_map(|r| u(&r["memory"]["rss_after"]))
                .collect(),
            peak_rss: ok
                .iter()
                .filter_map(|r| u(&r["memory"]["peak_rss"]))
                .collect(),
            python_calls_per_run: profiled.and_then(|p| f(&p["total_calls"])).map(|c| c / n),
            python_top: profiled.map(|p| python_top(p, n)).unwrap_or_default(),
            metrics,
            tracemalloc: !memory.is_empty(),
            traced_peak: memory.iter().filter_map(|m| u(&m["traced_peak"])).collect(),
            traced_kept: memory
                .iter()
                .filter_map(|m| m["traced_kept"].as_i64())
                .collect(),
            stacks_ns_per_run: Vec::new(),
            instructions_per_run: Vec::new(),
            instructions_source: None,
            instructions_by_function: BTreeMap::new(),
            cache_hits_per_run: Vec::new(),
            instruction_stacks_per_run: Vec::new(),
        })
    }
}

/// Each metric's most samples in one run (of one instance) of a check report.
fn most_per_run(doc: &serde_json::Value) -> BTreeMap<String, usize> {
    let mut per_run: BTreeMap<(u64, u64), BTreeMap<&str, usize>> = BTreeMap::new();
    for m in doc["metrics"].as_array().into_iter().flatten() {
        let key = (
            m["instance"].as_u64().unwrap_or(0),
            m["run"].as_u64().unwrap_or(0),
        );
        *per_run
            .entry(key)
            .or_default()
            .entry(m["metric"].as_str().unwrap_or(""))
            .or_insert(0) += 1;
    }
    let mut metrics: BTreeMap<String, usize> = BTreeMap::new();
    for run in per_run.values() {
        for (name, &n) in run {
            let e = metrics.entry((*name).to_string()).or_insert(0);
            *e = (*e).max(n);
        }
    }
    metrics
}

/// A pstats profile's top functions, their calls divided over `n` runs.
fn python_top(profile: &serde_json::Value, n: f64) -> Vec<FunctionCalls> {
    profile["top"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| FunctionCalls {
            function: format!(
                "{}:{}({})",
                t["file"].as_str().unwrap_or(""),
                t["line"].as_u64().unwrap_or(0),
                t["function"].as_str().unwrap_or("")
            ),
            calls_per_run: t["calls"].as_f64().unwrap_or(0.0) / n,
        })
        .collect()
}
