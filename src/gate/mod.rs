//! `agentprof gate`: performance gates for CI. A check runs N times after a warm-up; its run
//! times are compared with a baseline by statistics (they drift on shared runners: a slowdown
//! counts only when it is both over the threshold and significant), the figures that do not
//! drift (Python call counts, metric names) exactly, memory by its growth per run and its peak.

pub mod config;
pub mod stats;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::profile::RunRecord;

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
    /// `root;…;leaf NS` lines: nanoseconds per run in each stack (Python: cProfile's
    /// times split along its caller edges; built-ins: sampled), for `--flamegraph-diff`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stacks_ns_per_run: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FunctionCalls {
    pub function: String,
    pub calls_per_run: f64,
}

impl GateStats {
    /// From the timed runs' records and, for Python checks, the cProfile statistics of every
    /// run including the warm-up (`profiled_runs` of them).
    pub fn from_records(
        check: &str,
        kind: &str,
        records: &[RunRecord],
        pstats: Option<&crate::checks::python::PstatsReport>,
        profiled_runs: usize,
    ) -> GateStats {
        let ok: Vec<&RunRecord> = records.iter().filter(|r| r.error.is_none()).collect();
        let per_run = |n: u64| n as f64 / profiled_runs.max(1) as f64;
        // Per metric, the most series any run emitted: a rate has a value only in runs
        // that follow another closely enough to see its counter move.
        let mut metrics: BTreeMap<String, usize> = BTreeMap::new();
        let mut run: BTreeMap<&str, usize> = BTreeMap::new();
        for r in &ok {
            run.clear();
            for m in &r.metrics {
                *run.entry(m.metric.as_str()).or_insert(0) += 1;
            }
            for (name, &n) in &run {
                let e = metrics.entry((*name).to_string()).or_insert(0);
                *e = (*e).max(n);
            }
        }
        GateStats {
            schema: 1,
            check: check.to_string(),
            kind: kind.to_string(),
            runs: records.len(),
            errors: records.len() - ok.len(),
            wall_s: ok.iter().map(|r| r.cost.wall_s).collect(),
            cpu_s: ok.iter().filter_map(|r| r.cost.cpu_s()).collect(),
            rss_after: ok.iter().filter_map(|r| r.rss_after_untraced()).collect(),
            peak_rss: ok.iter().filter_map(|r| r.cost.peak_rss).collect(),
            python_calls_per_run: pstats.map(|p| per_run(p.total_calls)),
            wall_process_medians: Vec::new(),
            cpu_process_medians: Vec::new(),
            rss_slope_per_process: Vec::new(),
            calibration_s: Vec::new(),
            calibration_loop: None,
            python_top: pstats
                .map(|p| {
                    p.rows
                        .iter()
                        .map(|(file, line, func, _, calls, _, _)| FunctionCalls {
                            function: format!("{file}:{line}({func})"),
                            calls_per_run: per_run(*calls),
                        })
                        .collect()
                })
                .unwrap_or_default(),
            metrics,
            tracemalloc: ok.iter().any(|r| r.memory.is_some()),
            traced_peak: ok
                .iter()
                .filter_map(|r| r.memory.as_ref().map(|m| m.traced_peak))
                .collect(),
            traced_kept: ok
                .iter()
                .filter_map(|r| r.memory.as_ref().map(|m| m.traced_kept))
                .collect(),
            stacks_ns_per_run: Vec::new(),
        }
    }
}

impl GateStats {
    /// From an `agentprof check --json` document (its runs, metrics and, with `--profile`, its
    /// cProfile statistics): what `gate --compare` reads from reports made by `check`. Such a
    /// report has one process's runs, so its timings are compared run by run.
    pub fn from_check_json(doc: &serde_json::Value) -> Result<GateStats, String> {
        let runs = doc["runs"]
            .as_array()
            .ok_or("no runs[] (not an agentprof check --json report)")?;
        if runs.is_empty() {
            return Err("runs[] is empty".into());
        }
        let ok: Vec<&serde_json::Value> = runs.iter().filter(|r| r["status"] == "ok").collect();
        let f = |v: &serde_json::Value| v.as_f64();
        let u = |v: &serde_json::Value| v.as_u64();
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
        let profiled = (doc["profile"]["kind"] == "pstats").then_some(&doc["profile"]);
        let n = runs.len().max(1) as f64;
        let memory: Vec<&serde_json::Value> = ok
            .iter()
            .map(|r| &r["memory_profile"])
            .filter(|m| m.is_object())
            .collect();
        Ok(GateStats {
            schema: 1,
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
            rss_after: ok
                .iter()
                .filter_map(|r| u(&r["memory"]["rss_after"]))
                .collect(),
            peak_rss: ok
                .iter()
                .filter_map(|r| u(&r["memory"]["peak_rss"]))
                .collect(),
            python_calls_per_run: profiled.and_then(|p| f(&p["total_calls"])).map(|c| c / n),
            python_top: profiled
                .and_then(|p| p["top"].as_array())
                .into_iter()
                .flatten()
                .map(|t| FunctionCalls {
                    function: format!(
                        "{}:{}({})",
                        t["file"].as_str().unwrap_or(""),
                        t["line"].as_u64().unwrap_or(0),
                        t["function"].as_str().unwrap_or("")
                    ),
                    calls_per_run: f(&t["calls"]).unwrap_or(0.0) / n,
                })
                .collect(),
            metrics,
            tracemalloc: !memory.is_empty(),
            traced_peak: memory.iter().filter_map(|m| u(&m["traced_peak"])).collect(),
            traced_kept: memory
                .iter()
                .filter_map(|m| m["traced_kept"].as_i64())
                .collect(),
            stacks_ns_per_run: Vec::new(),
        })
    }
}

/// The thresholds, with their defaults.
#[derive(Debug, Clone)]
pub struct GateConfig {
    /// A slowdown under this fraction is never a regression (0.10 = 10%).
    pub time_threshold: f64,
    /// Significance level of the one-sided Mann-Whitney U test.
    pub alpha: f64,
    /// A slowdown of fewer seconds per run than this is never a regression: a check of
    /// 20 µs moves by more than that with the machine's state alone.
    pub min_slowdown_s: f64,
    /// RSS growth per run (bytes, least-squares slope) over which memory is leaking.
    pub rss_slope_bytes: f64,
    /// Peak RSS growth over which it is a regression (0.25 = 25%, and at least 1 MiB).
    pub peak_rss_threshold: f64,
    /// Python calls per run may grow by this fraction (0.01 = 1%).
    pub calls_threshold: f64,
    /// Traced bytes per run (peak and kept, `--memory`) may grow by this fraction, and
    /// always by 1 KiB.
    pub alloc_threshold: f64,
    /// The metric series a run emits may grow by this fraction (0 = not at all).
    pub series_threshold: f64,
    /// A metric that disappeared fails the gate instead of warning.
    pub strict: bool,
}

impl Default for GateConfig {
    fn default() -> Self {
        GateConfig {
            time_threshold: 0.10,
            alpha: 0.01,
            min_slowdown_s: 50e-6,
            rss_slope_bytes: 512.0 * 1024.0,
            peak_rss_threshold: 0.25,
            calls_threshold: 0.01,
            alloc_threshold: 0.01,
            series_threshold: 0.0,
            strict: false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok,
    Warning,
    Regression,
}

/// One compared figure.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub figure: String,
    pub baseline: String,
    pub current: String,
    pub change: String,
    pub status: Status,
    /// How sure, for timings: the p-value and the ratio's 95% interval.
    pub detail: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    pub check: String,
    pub regression: bool,
    pub findings: Vec<Finding>,
}

fn secs(s: f64) -> String {
    crate::duration::human(std::time::Duration::from_secs_f64(s.max(0.0)))
}

fn bytes(b: f64) -> String {
    crate::render::units::signed_bytes(Some(b.round() as i64))
}

fn size(b: f64) -> String {
    crate::render::units::human_bytes(b.max(0.0))
}

/// What the timing test compares: per-process medians divided by the machine's speed when
/// both sides measured it; per-process medians when both have at least 3 processes; else
/// the runs themselves.
fn samples(s: &GateStats, other: &GateStats, cpu: bool) -> (Vec<f64>, bool) {
    let (mine, theirs, runs) = if cpu {
        (&s.cpu_process_medians, &other.cpu_process_medians, &s.cpu_s)
    } else {
        (
            &s.wall_process_medians,
            &other.wall_process_medians,
            &s.wall_s,
        )
    };
    if mine.len() < 3 || theirs.len() < 3 {
        return (runs.clone(), false);
    }
    let calibrated = |x: &GateStats, m: &[f64]| x.calibration_s.len() == m.len();
    if calibrated(s, mine)
        && calibrated(other, theirs)
        && s.calibration_loop == other.calibration_loop
    {
        // Scaled back to seconds by the baseline-independent mean calibration, so the
        // medians shown stay readable: only the ratio between the two sides matters.
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let scale = (mean(&s.calibration_s) + mean(&other.calibration_s)) / 2.0;
        let v = mine
            .iter()
            .zip(&s.calibration_s)
            .map(|(m, c)| m / c * scale)
            .collect();
        return (v, true);
    }
    (mine.clone(), false)
}

fn timed(
    name: &str,
    base: &GateStats,
    new: &GateStats,
    cpu: bool,
    cfg: &GateConfig,
) -> Option<Finding> {
    let (b, normalized) = samples(base, new, cpu);
    let (n, _) = samples(new, base, cpu);
    let label = if normalized {
        format!("{name}, for the machine's speed")
    } else {
        name.to_string()
    };
    timing(&label, &b, &n, cfg)
}

fn timing(name: &str, base: &[f64], new: &[f64], cfg: &GateConfig) -> Option<Finding> {
    let (mb, mn) = (stats::median(base)?, stats::median(new)?);
    let (_, p) = stats::mann_whitney_greater(base, new)?;
    let ci = stats::median_ratio_ci(base, new, 0.95, 2000);
    let ratio = if mb > 0.0 { mn / mb } else { 1.0 };
    let slower = ratio > 1.0 + cfg.time_threshold && p < cfg.alpha && mn - mb > cfg.min_slowdown_s;
    Some(Finding {
        figure: format!("{name} (median)"),
        baseline: secs(mb),
        current: secs(mn),
        change: format!("{:+.1}%", (ratio - 1.0) * 100.0),
        status: if slower {
            Status::Regression
        } else {
            Status::Ok
        },
        detail: match ci {
            Some((_, lo, hi)) => format!("p={p:.4}, ratio {ratio:.3} (95% CI {lo:.3}–{hi:.3})"),
            None => format!("p={p:.4}"),
        },
    })
}

/// Compares `new` with `base`.
pub fn compare(base: &GateStats, new: &GateStats, cfg: &GateConfig) -> Verdict {
    let mut f = Vec::new();
    f.extend(timed("wall time", base, new, false, cfg));
    f.extend(timed("CPU time", base, new, true, cfg));
    let as_f = |v: &[u64]| v.iter().map(|&x| x as f64).collect::<Vec<_>>();
    let growth = |s: &GateStats| {
        stats::median(&s.rss_slope_per_process).or_else(|| stats::slope(&as_f(&s.rss_after)))
    };
    if let Some(slope) = growth(new) {
        let base_slope = growth(base).unwrap_or(0.0);
        let leak = slope > cfg.rss_slope_bytes && slope - base_slope > cfg.rss_slope_bytes;
        f.push(Finding {
            figure: "RSS growth per run".into(),
            baseline: bytes(base_slope),
            current: bytes(slope),
            change: bytes(slope - base_slope),
            status: if leak { Status::Regression } else { Status::Ok },
            detail: format!(
                "median of each process's least-squares slope; limit {} per run",
                bytes(cfg.rss_slope_bytes)
            ),
        });
    }
    if let (Some(b), Some(n)) = (
        stats::median(&as_f(&base.peak_rss)),
        stats::median(&as_f(&new.peak_rss)),
    ) {
        let grew = n > b * (1.0 + cfg.peak_rss_threshold) && n - b > 1024.0 * 1024.0;
        f.push(Finding {
            figure: "peak RSS (median)".into(),
            baseline: size(b),
            current: size(n),
            change: format!("{:+.1}%", (n / b.max(1.0) - 1.0) * 100.0),
            status: if grew { Status::Regression } else { Status::Ok },
            detail: format!("limit +{:.0}%", cfg.peak_rss_threshold * 100.0),
        });
    }
    if let (Some(b), Some(n)) = (base.python_calls_per_run, new.python_calls_per_run) {
        let more = n > b * (1.0 + cfg.calls_threshold);
        f.push(Finding {
            figure: "Python calls per run".into(),
            baseline: format!("{b:.0}"),
            current: format!("{n:.0}"),
            change: format!("{:+.1}%", (n / b.max(1.0) - 1.0) * 100.0),
            status: if more { Status::Regression } else { Status::Ok },
            detail: "cProfile call counts: exact, whatever the machine's noise".into(),
        });
        // The functions in both top lists: which one is called more.
        let top_b: BTreeMap<&str, f64> = base
            .python_top
            .iter()
            .map(|x| (x.function.as_str(), x.calls_per_run))
            .collect();
        // A function counts when its own extra calls would take the total over the
        // threshold: one hot loop moved from one function into another shows, while a
        // function called 3 times instead of 2 does not fail a check of 10,000 calls.
        let enough = b * cfg.calls_threshold;
        for x in &new.python_top {
            let Some(&before) = top_b.get(x.function.as_str()) else {
                if x.calls_per_run > enough.max(1.0) {
                    f.push(Finding {
                        figure: format!("calls of {}", x.function),
                        baseline: "not in the top".into(),
                        current: format!("{:.0}", x.calls_per_run),
                        change: "new".into(),
                        status: Status::Warning,
                        detail: "per run; among the top functions now".into(),
                    });
                }
                continue;
            };
            let extra = x.calls_per_run - before;
            if extra > (before * cfg.calls_threshold).max(enough) + 0.5 {
                f.push(Finding {
                    figure: format!("calls of {}", x.function),
                    baseline: format!("{before:.0}"),
                    current: format!("{:.0}", x.calls_per_run),
                    change: format!("{:+.0}", x.calls_per_run - before),
                    status: Status::Regression,
                    detail: "per run".into(),
                });
            }
        }
    }
    let traced = |v: Vec<f64>| stats::median(&v);
    for (label, b, n) in [
        (
            "traced peak per run (median)",
            traced(base.traced_peak.iter().map(|&x| x as f64).collect()),
            traced(new.traced_peak.iter().map(|&x| x as f64).collect()),
        ),
        (
            "traced bytes kept per run (median)",
            traced(base.traced_kept.iter().map(|&x| x as f64).collect()),
            traced(new.traced_kept.iter().map(|&x| x as f64).collect()),
        ),
    ] {
        let (Some(b), Some(n)) = (b, n) else {
            continue;
        };
        let more = n > b + (b.abs() * cfg.alloc_threshold).max(1024.0);
        f.push(Finding {
            figure: label.into(),
            baseline: bytes(b),
            current: bytes(n),
            change: bytes(n - b),
            status: if more { Status::Regression } else { Status::Ok },
            detail: format!(
                "tracemalloc: exact for the same code; limit +{:.0}% and 1 KiB",
                cfg.alloc_threshold * 100.0
            ),
        });
    }
    // Series of the metrics both emit: more of them is a cardinality change (a tag with a
    // new value per run, a loop submitting twice). New metric names are listed, not failed.
    let shared = |s: &GateStats, other: &GateStats| -> usize {
        s.metrics
            .iter()
            .filter(|(m, _)| other.metrics.contains_key(*m))
            .map(|(_, n)| n)
            .sum()
    };
    let (sb, sn) = (shared(base, new), shared(new, base));
    let added: Vec<&str> = new
        .metrics
        .keys()
        .filter(|m| !base.metrics.contains_key(*m))
        .map(String::as_str)
        .collect();
    if sb > 0 || sn > 0 {
        let grew = sn as f64 > sb as f64 * (1.0 + cfg.series_threshold);
        let mut detail = if grew {
            let more: Vec<String> = new
                .metrics
                .iter()
                .filter_map(|(m, &c)| {
                    let b = *base.metrics.get(m)?;
                    (c > b).then(|| format!("{m} {b}→{c}"))
                })
                .take(5)
                .collect();
            format!("more series: {}", more.join(", "))
        } else {
            format!(
                "of the metrics both emit; limit +{:.0}%",
                cfg.series_threshold * 100.0
            )
        };
        if !added.is_empty() {
            let shown: Vec<&str> = added.iter().take(5).copied().collect();
            detail.push_str(&format!(
                "; new metrics: {}{}",
                shown.join(", "),
                if added.len() > shown.len() {
                    ", …"
                } else {
                    ""
                }
            ));
        }
        f.push(Finding {
            figure: "metric series per run".into(),
            baseline: sb.to_string(),
            current: sn.to_string(),
            change: format!("{:+}", sn as i64 - sb as i64),
            status: if grew {
                Status::Regression
            } else if sn < sb {
                Status::Warning
            } else {
                Status::Ok
            },
            detail,
        });
    }
    for (name, _) in base
        .metrics
        .iter()
        .filter(|(m, _)| !new.metrics.contains_key(*m))
    {
        f.push(Finding {
            figure: format!("metric {name}"),
            baseline: "emitted".into(),
            current: "missing".into(),
            change: "gone".into(),
            status: if cfg.strict {
                Status::Regression
            } else {
                Status::Warning
            },
            detail: "the check no longer emits it".into(),
        });
    }
    if new.errors > 0 {
        f.push(Finding {
            figure: "failed runs".into(),
            baseline: base.errors.to_string(),
            current: new.errors.to_string(),
            change: format!("{:+}", new.errors as i64 - base.errors as i64),
            status: Status::Regression,
            detail: "a run of the check failed".into(),
        });
    }
    Verdict {
        check: new.check.clone(),
        regression: f.iter().any(|x| x.status == Status::Regression),
        findings: f,
    }
}

fn status_word(s: Status) -> &'static str {
    match s {
        Status::Ok => "ok",
        Status::Warning => "WARNING",
        Status::Regression => "REGRESSION",
    }
}

impl Verdict {
    pub fn table(&self) -> String {
        let mut t = comfy_table::Table::new();
        t.load_style(comfy_table::presets::NOTHING).force_no_tty();
        t.set_header(["FIGURE", "BASELINE", "NOW", "CHANGE", "VERDICT", "HOW SURE"]);
        for f in &self.findings {
            t.add_row([
                f.figure.as_str(),
                &f.baseline,
                &f.current,
                &f.change,
                status_word(f.status),
                &f.detail,
            ]);
        }
        let mut out = format!(
            "agentprof gate {}: {}\n",
            self.check,
            if self.regression {
                "REGRESSION"
            } else {
                "no regression"
            }
        );
        for line in t.to_string().lines() {
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }

    pub fn markdown(&self) -> String {
        let esc = |s: &str| s.replace('|', "\\|");
        let mut out = format!(
            "### agentprof gate `{}`: {}\n\n| figure | baseline | now | change | verdict | how sure |\n|---|---|---|---|---|---|\n",
            self.check,
            if self.regression {
                "❌ regression"
            } else {
                "✅ no regression"
            }
        );
        for f in &self.findings {
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} |\n",
                esc(&f.figure),
                esc(&f.baseline),
                esc(&f.current),
                esc(&f.change),
                status_word(f.status),
                esc(&f.detail)
            ));
        }
        out
    }

    pub fn junit(&self) -> String {
        let x = |s: &str| {
            s.replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;")
                .replace('"', "&quot;")
        };
        let failures = self
            .findings
            .iter()
            .filter(|f| f.status == Status::Regression)
            .count();
        let mut out = format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"agentprof gate\" tests=\"{}\" failures=\"{failures}\">\n  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\">\n",
            self.findings.len(),
            x(&self.check),
            self.findings.len()
        );
        for f in &self.findings {
            out.push_str(&format!(
                "    <testcase classname=\"agentprof.gate.{}\" name=\"{}\">",
                x(&self.check),
                x(&f.figure)
            ));
            let msg = format!(
                "{}: {} -> {} ({}); {}",
                f.figure, f.baseline, f.current, f.change, f.detail
            );
            match f.status {
                Status::Regression => out.push_str(&format!(
                    "<failure message=\"{}\">{}</failure>",
                    x(&msg),
                    x(&msg)
                )),
                Status::Warning => out.push_str(&format!("<system-out>{}</system-out>", x(&msg))),
                Status::Ok => {}
            }
            out.push_str("</testcase>\n");
        }
        out.push_str("  </testsuite>\n</testsuites>\n");
        out
    }
}

/// Writes a differential flamegraph of the baseline's and the current stacks: frames sized by
/// the current nanoseconds per run, red where a stack takes more time than in the baseline,
/// blue where it takes less.
pub fn write_flamegraph_diff(
    base: &GateStats,
    new: &GateStats,
    out: impl std::io::Write,
) -> anyhow::Result<()> {
    if base.stacks_ns_per_run.is_empty() || new.stacks_ns_per_run.is_empty() {
        anyhow::bail!("no stacks to compare");
    }
    let before = base.stacks_ns_per_run.join("\n");
    let after = new.stacks_ns_per_run.join("\n");
    let mut merged = Vec::new();
    inferno::differential::from_readers(
        inferno::differential::Options::default(),
        before.as_bytes(),
        after.as_bytes(),
        &mut merged,
    )
    .map_err(|e| anyhow::anyhow!("cannot merge the stacks: {e}"))?;
    let text = String::from_utf8_lossy(&merged);
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = format!(
        "agentprof gate {}: baseline -> now (red: more time per run, blue: less)",
        new.check
    );
    opts.count_name = "ns per run".into();
    inferno::flamegraph::from_lines(&mut opts, text.lines(), out)
        .map_err(|e| anyhow::anyhow!("cannot draw the flamegraph: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(wall: &[f64], rss_step: u64, calls: Option<f64>) -> GateStats {
        GateStats {
            schema: 1,
            check: "c".into(),
            kind: "python".into(),
            runs: wall.len(),
            errors: 0,
            wall_s: wall.to_vec(),
            cpu_s: wall.to_vec(),
            wall_process_medians: Vec::new(),
            cpu_process_medians: Vec::new(),
            rss_slope_per_process: Vec::new(),
            calibration_s: Vec::new(),
            calibration_loop: None,
            rss_after: (0..wall.len() as u64)
                .map(|i| (50 << 20) + i * rss_step)
                .collect(),
            peak_rss: vec![60 << 20; wall.len()],
            python_calls_per_run: calls,
            python_top: Vec::new(),
            metrics: [("a".to_string(), 1)].into_iter().collect(),
            tracemalloc: false,
            traced_peak: Vec::new(),
            traced_kept: Vec::new(),
            stacks_ns_per_run: Vec::new(),
        }
    }

    #[test]
    fn noise_passes_and_a_slowdown_a_leak_and_more_calls_fail() {
        let cfg = GateConfig::default();
        let base: Vec<f64> = (0..10).map(|i| 0.010 + f64::from(i % 3) * 0.0004).collect();
        let noisy: Vec<f64> = (0..10)
            .map(|i| 0.010 + f64::from((i + 1) % 3) * 0.0005)
            .collect();
        let b = stats(&base, 0, Some(1000.0));
        assert!(!compare(&b, &stats(&noisy, 0, Some(1000.0)), &cfg).regression);
        let slow: Vec<f64> = base.iter().map(|x| x * 2.0).collect();
        let v = compare(&b, &stats(&slow, 0, Some(1000.0)), &cfg);
        assert!(v.regression);
        assert_eq!(
            v.findings[0].status,
            Status::Regression,
            "{:?}",
            v.findings[0]
        );
        let leak = compare(&b, &stats(&base, 2 << 20, Some(1000.0)), &cfg);
        assert!(
            leak.findings
                .iter()
                .any(|f| f.figure.starts_with("RSS") && f.status == Status::Regression)
        );
        let calls = compare(&b, &stats(&base, 0, Some(1100.0)), &cfg);
        assert!(
            calls
                .findings
                .iter()
                .any(|f| f.figure.starts_with("Python calls") && f.status == Status::Regression)
        );
        let series = |v: &Verdict| {
            v.findings
                .iter()
                .find(|f| f.figure == "metric series per run")
                .map(|f| f.status)
        };
        let mut more = stats(&base, 0, Some(1000.0));
        more.metrics.insert("b".into(), 3);
        assert_eq!(
            series(&compare(&b, &more, &cfg)),
            Some(Status::Ok),
            "a new metric is listed, not failed"
        );
        more.metrics.insert("a".into(), 2);
        assert_eq!(series(&compare(&b, &more, &cfg)), Some(Status::Regression));
        let mut gone = stats(&base, 0, Some(1000.0));
        gone.metrics.clear();
        let v = compare(&b, &gone, &cfg);
        assert!(!v.regression, "a missing metric warns by default");
        let v = compare(
            &b,
            &gone,
            &GateConfig {
                strict: true,
                ..cfg
            },
        );
        assert!(v.regression);
    }
}
