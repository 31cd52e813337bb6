//! Baseline against this run: the thresholds, one finding per figure, and the verdict.

use std::collections::BTreeMap;

use serde::Serialize;

use super::GateStats;
use super::stats;

/// What the gate's verdict on the check's cost rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Measure {
    /// CPU time of each run (user and system): what the check costs the host, and less moved
    /// by other jobs on a shared runner than wall time.
    Cpu,
    /// Wall time of each run: what a check that waits (network, disk) costs.
    Wall,
    /// User-space instructions of each run, counted: deterministic.
    Instructions,
}

impl Measure {
    pub fn label(self) -> &'static str {
        match self {
            Measure::Cpu => "CPU time",
            Measure::Wall => "wall time",
            Measure::Instructions => "instructions",
        }
    }

    /// The slowdown that fails by default: a count repeats within a fraction of a percent,
    /// paired rounds cancel the machine's drift, a baseline file from another time does not.
    pub fn default_threshold(self, paired: bool) -> f64 {
        match (self, paired) {
            (Measure::Instructions, _) => 0.02,
            (_, true) => 0.05,
            (_, false) => 0.10,
        }
    }
}

/// How the two sides were measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// This run against a baseline file (or two reports, `--compare`).
    Baseline,
    /// Both versions in interleaved rounds of the same job (`--against`): round i of one side
    /// pairs with round i of the other.
    Paired,
}

/// The thresholds, with their defaults.
#[derive(Debug, Clone)]
pub struct GateConfig {
    /// What the verdict on cost rests on (the other measures are shown, not gated).
    pub measure: Measure,
    /// A slowdown under this fraction is never a regression (0.10 = 10%).
    pub time_threshold: f64,
    /// The threshold was set (flag or file), rather than the measure's default.
    pub threshold_set: bool,
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
            measure: Measure::Cpu,
            time_threshold: 0.10,
            threshold_set: false,
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
    /// The measure the gate rests on was too noisy to tell a slowdown of the threshold.
    CannotTell,
    /// Shown for information, not gated (the measures the verdict does not rest on).
    Info,
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
    /// For the measure the verdict rests on: the smallest slowdown (percent) this run could
    /// have failed, given the noise it saw and the thresholds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detectable_pct: Option<f64>,
}

/// The gate's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Pass,
    Regression,
    /// No regression found, but the measure was too noisy to see one of the threshold's size.
    CannotTell,
}

#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    pub check: String,
    pub regression: bool,
    pub outcome: Outcome,
    pub measure: Measure,
    pub mode: Mode,
    /// What measured the gated figure: `CPU time of 5 worker processes' runs, divided by the
    /// machine's speed`, `valgrind-3.19.0 (callgrind)`, `10 interleaved A/B rounds`.
    pub source: String,
    /// The smallest slowdown (percent) this run could have failed.
    pub detectable_pct: Option<f64>,
    /// One line: the outcome and the gated figure.
    pub summary: String,
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
/// both sides measured it with the same loop (scaled by the baseline's mean calibration, so
/// the baseline's figures are the file's whatever this run measured); per-process medians
/// when both have at least 3 processes; else the runs themselves.
fn samples(s: &GateStats, base: &GateStats, other: &GateStats, cpu: bool) -> (Vec<f64>, bool) {
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
        let scale = base.calibration_s.iter().sum::<f64>() / base.calibration_s.len() as f64;
        let v = mine
            .iter()
            .zip(&s.calibration_s)
            .map(|(m, c)| m / c * scale)
            .collect();
        return (v, true);
    }
    (mine.clone(), false)
}

/// The smallest factor in [1, 100] for which `fails(factor)` holds, `fails` being monotone;
/// None when not even 100 would.
fn smallest_failing(fails: impl Fn(f64) -> bool) -> Option<f64> {
    if !fails(100.0) {
        return None;
    }
    let (mut lo, mut hi) = (0.0f64, 100.0f64.ln());
    if fails(1.0) {
        return Some(1.0);
    }
    for _ in 0..48 {
        let mid = (lo + hi) / 2.0;
        if fails(mid.exp()) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi.exp())
}

/// What a timing comparison found, before it becomes a finding.
struct Timing {
    base_median: f64,
    new_median: f64,
    ratio: f64,
    p: f64,
    ci: Option<(f64, f64)>,
    /// The smallest slowdown factor the statistics alone could have called significant.
    significant_from: Option<f64>,
    what: String,
}

/// A baseline's samples against this run's: Mann-Whitney and Hodges-Lehmann.
fn two_sample(base: &[f64], new: &[f64], alpha: f64) -> Option<Timing> {
    let (mb, mn) = (stats::median(base)?, stats::median(new)?);
    let (_, p) = stats::mann_whitney_greater(base, new)?;
    let (ratio, ci) = stats::ratio_two_sample(base, new, 0.95)
        .unwrap_or((if mb > 0.0 { mn / mb } else { 1.0 }, None));
    let significant_from = smallest_failing(|s| {
        let moved: Vec<f64> = new.iter().map(|x| x / ratio * s).collect();
        stats::mann_whitney_greater(base, &moved).is_some_and(|(_, p)| p < alpha)
    });
    Some(Timing {
        base_median: mb,
        new_median: mn,
        ratio,
        p,
        ci,
        significant_from,
        what: format!("{} against {} samples", new.len(), base.len()),
    })
}

/// Paired rounds: round i of `a` against round i of `b`, Wilcoxon signed-rank.
fn paired(a: &[f64], b: &[f64], alpha: f64) -> Option<Timing> {
    let n = a.len().min(b.len());
    if n == 0 {
        return None;
    }
    let ratios: Vec<f64> = (0..n).map(|i| b[i] / a[i]).collect();
    let pr = stats::paired_ratios(&ratios, 0.95)?;
    let logs: Vec<f64> = ratios.iter().map(|r| r.ln()).collect();
    let significant_from = smallest_failing(|s| {
        let moved: Vec<f64> = logs.iter().map(|d| d - pr.ratio.ln() + s.ln()).collect();
        stats::signed_rank_greater(&moved) < alpha
    });
    Some(Timing {
        base_median: stats::median(&a[..n])?,
        new_median: stats::median(&b[..n])?,
        ratio: pr.ratio,
        p: pr.p,
        ci: pr.ci,
        significant_from,
        what: format!("{n} paired rounds"),
    })
}

/// The finding of a timing: gated (regression, cannot tell or ok) or shown for information.
fn timing_finding(label: &str, t: &Timing, cfg: &GateConfig, gated: bool) -> Finding {
    // What the thresholds let fail at all: the percentage, and the absolute floor.
    let policy = (1.0 + cfg.time_threshold)
        .max(1.0 + cfg.min_slowdown_s / t.base_median.max(f64::MIN_POSITIVE));
    let slower = t.ratio > 1.0 + cfg.time_threshold
        && t.p < cfg.alpha
        && t.new_median - t.base_median > cfg.min_slowdown_s;
    let detectable = t.significant_from.map(|s| s.max(policy));
    let status = if !gated {
        Status::Info
    } else if slower {
        Status::Regression
    } else if t.significant_from.is_none_or(|s| s > policy) {
        Status::CannotTell
    } else {
        Status::Ok
    };
    let ci = match t.ci {
        Some((lo, hi)) => format!("95% CI {lo:.3}–{hi:.3}"),
        None => "too few samples for a 95% interval".into(),
    };
    let detects = match detectable {
        Some(d) => format!("detects ≥ +{:.1}%", (d - 1.0) * 100.0),
        None => "no slowdown up to 100× would be significant".into(),
    };
    Finding {
        figure: format!("{label} (median)"),
        baseline: secs(t.base_median),
        current: secs(t.new_median),
        change: format!("{:+.1}%", (t.ratio - 1.0) * 100.0),
        status,
        detail: format!(
            "ratio {:.3} ({ci}), p={:.4}; {}; {detects}",
            t.ratio, t.p, t.what
        ),
        detectable_pct: gated
            .then(|| detectable.map(|d| (d - 1.0) * 100.0))
            .flatten(),
    }
}

/// Instruction counts: the mean per run of each side (a run that happens to collect
/// garbage costs more; the mean is the cost averaged over runs, as the Agent pays it), and
/// how far the mean itself could move: three standard errors of each side's mean.
fn instructions(base: &GateStats, new: &GateStats, cfg: &GateConfig) -> Option<Finding> {
    let mean_se = |v: &[f64]| -> Option<(f64, f64)> {
        if v.is_empty() {
            return None;
        }
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        let var = if v.len() > 1 {
            v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)
        } else {
            0.0
        };
        Some((mean, (var / n).sqrt()))
    };
    let (b, sb) = mean_se(&base.instructions_per_run)?;
    let (n, sn) = mean_se(&new.instructions_per_run)?;
    let ratio = if b > 0.0 { n / b } else { 1.0 };
    // The change the runs' own variation could make of the ratio.
    let noise = if b > 0.0 && n > 0.0 {
        3.0 * ((sb / b).powi(2) + (sn / n).powi(2)).sqrt()
    } else {
        0.0
    };
    let detectable = 1.0 + cfg.time_threshold.max(noise);
    let status = if ratio > 1.0 + cfg.time_threshold && ratio - 1.0 > noise {
        Status::Regression
    } else if noise > cfg.time_threshold {
        Status::CannotTell
    } else {
        Status::Ok
    };
    let source = new
        .instructions_source
        .clone()
        .unwrap_or_else(|| "counted".into());
    Some(Finding {
        figure: "instructions per run (mean)".into(),
        baseline: count(b),
        current: count(n),
        change: format!("{:+.2}%", (ratio - 1.0) * 100.0),
        status,
        detail: format!(
            "{source}; {} and {} runs, ±{:.2}% (3 standard errors); detects ≥ +{:.1}%",
            base.instructions_per_run.len(),
            new.instructions_per_run.len(),
            noise * 100.0,
            (detectable - 1.0) * 100.0
        ),
        detectable_pct: Some((detectable - 1.0) * 100.0),
    })
}

fn count(n: f64) -> String {
    let n = n.round() as u64;
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Compares `new` with `base`: the gated measure first, the other timings for information,
/// then memory, Python calls, traced allocations, metric series, failed runs.
pub fn compare(base: &GateStats, new: &GateStats, cfg: &GateConfig, mode: Mode) -> Verdict {
    let mut f = Vec::new();
    let mut source = String::new();
    let mut timings = Vec::new();
    for cpu in [true, false] {
        let label = if cpu { "CPU time" } else { "wall time" };
        let t = match mode {
            Mode::Paired => {
                let (a, b) = if cpu {
                    (&base.cpu_process_medians, &new.cpu_process_medians)
                } else {
                    (&base.wall_process_medians, &new.wall_process_medians)
                };
                paired(a, b, cfg.alpha).map(|t| (label.to_string(), t))
            }
            Mode::Baseline => {
                let (b, normalized) = samples(base, base, new, cpu);
                let (n, _) = samples(new, base, base, cpu);
                let label = if normalized {
                    format!("{label}, for the machine's speed")
                } else {
                    label.to_string()
                };
                two_sample(&b, &n, cfg.alpha).map(|t| (label, t))
            }
        };
        let gated = (cfg.measure == Measure::Cpu) == cpu && cfg.measure != Measure::Instructions;
        if let Some((label, t)) = t {
            if gated {
                source = format!("{label}: {}", t.what);
            }
            timings.push((gated, timing_finding(&label, &t, cfg, gated)));
        }
    }
    if cfg.measure == Measure::Instructions {
        match instructions(base, new, cfg) {
            Some(x) => {
                source = new.instructions_source.clone().unwrap_or_default();
                f.push(x);
            }
            None => f.push(Finding {
                figure: "instructions per run".into(),
                baseline: if base.instructions_per_run.is_empty() {
                    "none".into()
                } else {
                    count(base.instructions_per_run.len() as f64)
                },
                current: count(new.instructions_per_run.len() as f64),
                change: "n/a".into(),
                status: Status::CannotTell,
                detail: "no counts on one side".into(),
                detectable_pct: None,
            }),
        }
    }
    // The gated timing first, then the other.
    timings.sort_by_key(|(gated, _)| !*gated);
    f.extend(timings.into_iter().map(|(_, x)| x));
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
            detectable_pct: None,
        });
    }
    let regression = f.iter().any(|x| x.status == Status::Regression);
    let gated = f
        .first()
        .filter(|x| x.detectable_pct.is_some() || x.status == Status::CannotTell);
    let outcome = if regression {
        Outcome::Regression
    } else if gated.is_some_and(|g| g.status == Status::CannotTell) {
        Outcome::CannotTell
    } else {
        Outcome::Pass
    };
    let detectable_pct = gated.and_then(|g| g.detectable_pct);
    let summary = summary(&new.check, outcome, cfg, gated, &f);
    Verdict {
        check: new.check.clone(),
        regression,
        outcome,
        measure: cfg.measure,
        mode,
        source,
        detectable_pct,
        summary,
        findings: f,
    }
}

/// `agentprof gate NAME: REGRESSION — CPU time +52.1% …`: the outcome, the gated figure and
/// what the run could detect, on one line.
fn summary(
    check: &str,
    outcome: Outcome,
    cfg: &GateConfig,
    gated: Option<&Finding>,
    all: &[Finding],
) -> String {
    let word = match outcome {
        Outcome::Pass => "no regression",
        Outcome::Regression => "REGRESSION",
        Outcome::CannotTell => "CANNOT TELL",
    };
    let mut line = format!("agentprof gate {check}: {word}");
    if let Some(g) = gated {
        line.push_str(&format!(
            " — {} {} ({} → {})",
            cfg.measure.label(),
            g.change,
            g.baseline,
            g.current
        ));
        match (outcome, g.detectable_pct) {
            (Outcome::CannotTell, Some(d)) => line.push_str(&format!(
                "; the noise here hides slowdowns under +{d:.1}%, above the +{:.1}% threshold",
                cfg.time_threshold * 100.0
            )),
            (Outcome::CannotTell, None) => {
                line.push_str("; too noisy or too few samples to detect any slowdown")
            }
            (_, Some(d)) => line.push_str(&format!("; detects ≥ +{d:.1}%")),
            _ => {}
        }
    }
    let failed: Vec<&str> = all
        .iter()
        .filter(|x| {
            x.status == Status::Regression
                && !std::ptr::eq(*x, gated.map_or(std::ptr::null(), |g| g as *const Finding))
        })
        .map(|x| x.figure.as_str())
        .collect();
    if !failed.is_empty() {
        line.push_str(&format!("; also failed: {}", failed.join(", ")));
    }
    line
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
            detectable_pct: None,
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
            detectable_pct: None,
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
            detectable_pct: None,
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
                        detectable_pct: None,
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
                    detectable_pct: None,
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
            detectable_pct: None,
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
            detectable_pct: None,
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
            detectable_pct: None,
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
