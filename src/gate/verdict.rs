//! Baseline against this run: the thresholds, one finding per figure, and the verdict.

use std::collections::BTreeMap;

use serde::Serialize;

use super::GateStats;
use super::stats;

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

/// Compares `new` with `base`: times, memory, Python calls, traced allocations, metric
/// series, failed runs.
pub fn compare(base: &GateStats, new: &GateStats, cfg: &GateConfig) -> Verdict {
    let mut f = Vec::new();
    f.extend(timed("wall time", base, new, false, cfg));
    f.extend(timed("CPU time", base, new, true, cfg));
    memory(base, new, cfg, &mut f);
    python_calls(base, new, cfg, &mut f);
    traced_allocations(base, new, cfg, &mut f);
    metric_series(base, new, cfg, &mut f);
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

/// RSS growth per run (a leak) and peak RSS.
fn memory(base: &GateStats, new: &GateStats, cfg: &GateConfig, f: &mut Vec<Finding>) {
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
}

/// cProfile's calls per run, and which of the top functions is called more.
fn python_calls(base: &GateStats, new: &GateStats, cfg: &GateConfig, f: &mut Vec<Finding>) {
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
}

/// tracemalloc's peak and kept bytes per run.
fn traced_allocations(base: &GateStats, new: &GateStats, cfg: &GateConfig, f: &mut Vec<Finding>) {
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
}

/// Series of the metrics both emit, new metrics, and metrics gone.
fn metric_series(base: &GateStats, new: &GateStats, cfg: &GateConfig, f: &mut Vec<Finding>) {
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
        let detail = series_detail(base, new, cfg, grew, &added);
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
}

/// What the series finding says: which metrics have more series when they grew (the first
/// five), else the limit; then the first five new metric names.
fn series_detail(
    base: &GateStats,
    new: &GateStats,
    cfg: &GateConfig,
    grew: bool,
    added: &[&str],
) -> String {
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
    detail
}
