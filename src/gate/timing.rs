//! The findings on cost: timings against a baseline file (two samples) or in A/B rounds
//! (pairs), and instruction counts; each with the smallest slowdown it could detect.

use super::GateStats;
use super::finding::{Finding, GateConfig, Status, secs};
use super::stats;

fn grouped(n: f64) -> String {
    crate::render::units::grouped(n.round() as u64)
}

/// What the timing test compares: per-process medians divided by the machine's speed when
/// both sides measured it with the same loop (scaled by the baseline's mean calibration, so
/// the baseline's figures are the file's whatever this run measured); per-process medians
/// when both have at least 3 processes; else the runs themselves.
pub(super) fn samples(
    s: &GateStats,
    base: &GateStats,
    other: &GateStats,
    cpu: bool,
) -> (Vec<f64>, bool) {
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
pub(super) struct Timing {
    base_median: f64,
    new_median: f64,
    pub(super) ratio: f64,
    p: f64,
    pub(super) ci: Option<(f64, f64)>,
    /// The smallest slowdown factor the statistics alone could have called significant.
    significant_from: Option<f64>,
    pub(super) what: String,
}

/// A baseline's samples against this run's: Mann-Whitney and Hodges-Lehmann.
pub(super) fn two_sample(base: &[f64], new: &[f64], alpha: f64) -> Option<Timing> {
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

/// How far the machine's speed moved between a baseline file and this run: the ratio of
/// the two sides' median calibrations (at least 1, either way), when both timed the same
/// loop. Dividing by the calibration cancels a machine slowed as a whole only for a check
/// that slows as the loop does: a busier machine slowed a memory-heavy check ×1.77 while
/// the loop slowed ×1.39. A check slows between not at all and twice as much (in log terms)
/// as the loop, so the calibrated ratio may be off by this factor either way.
pub(super) fn calibration_shift(base: &GateStats, new: &GateStats) -> Option<f64> {
    if base.calibration_loop.is_none()
        || base.calibration_loop != new.calibration_loop
        || base.calibration_s.is_empty()
        || new.calibration_s.is_empty()
    {
        return None;
    }
    let c = stats::median(&new.calibration_s)? / stats::median(&base.calibration_s)?;
    (c.is_finite() && c > 0.0).then(|| c.max(1.0 / c))
}

/// How far the machine's load may have moved one side's samples, judged by how much more
/// they scatter than the other side's. Each side's scatter is the log of its upper quartile
/// over its lower; where one side's is more than three times the other's (more than eight
/// samples' quartiles differ by on the same machine: an unchanged check gated on a quiet
/// machine scattered up to 1.6 times its baseline), the samples are moved by up to twice the
/// difference — the scatter is the part of the load's effect that differs between processes,
/// the part they share can be as large again; else 1. None with fewer than 4 samples a side. The load moves a check unlike any calibration loop (an
/// awk and sort plugin's CPU per run fell ×0.78 beside bursty load while the integer loop
/// stayed at ×1.00, and its processes scattered ×1.07 more than the quiet baseline's: the
/// plugin made +35 % slower read +19 %, 95 % interval 1.100–1.256).
pub(super) fn spread_change(a: &[f64], b: &[f64]) -> Option<f64> {
    let relative = |v: &[f64]| -> Option<f64> {
        if v.len() < 4 {
            return None;
        }
        let mut s = v.to_vec();
        s.sort_by(f64::total_cmp);
        let q = |p: f64| {
            let x = p * (s.len() - 1) as f64;
            let i = x.floor() as usize;
            let next = s[(i + 1).min(s.len() - 1)];
            s[i] + (next - s[i]) * (x - i as f64)
        };
        let (lo, hi) = (q(0.25), q(0.75));
        (lo > 0.0 && hi.is_finite()).then(|| hi / lo)
    };
    let (x, y) = (relative(a)?.ln(), relative(b)?.ln());
    let (wide, narrow) = (x.max(y), x.min(y));
    // A floor of 0.5 %: quartiles that nearly coincide are not a scatter to divide by.
    if wide <= 3.0 * narrow.max(0.005) {
        return Some(1.0);
    }
    Some((2.0 * (wide - narrow)).exp())
}

/// How far other work on the machine may have moved this run's figures from the baseline's:
/// the two sides' shares of the machine taken by other work (`others_busy`), and the factor
/// their difference allows, 1 + 1.5 × (difference − 0.05). Beside bursty memory-streaming
/// load (about half the machine), checks' CPU per run moved by −13 % (a JSON-parsing Python
/// check), −22 % (an awk and sort plugin) and +77 % (a memory-heavy check) against baselines
/// made on the quiet machine, while neither the calibration loop nor the processes' scatter
/// showed it; a difference of 5 points or less (a quiet machine's own) moves nothing.
pub(super) fn load_change(base: &GateStats, new: &GateStats) -> Option<(f64, f64, f64)> {
    let (b, n) = (base.others_busy?, new.others_busy?);
    let factor = 1.0 + 1.5 * ((n - b).abs() - 0.05).max(0.0);
    Some((b, n, factor))
}

impl Timing {
    /// The 95 % interval widened each way by how far the calibration loop moved (`shift`,
    /// [`calibration_shift`]), how much more one side scatters than the other (`spread`,
    /// [`spread_change`]) and how much busier with other work one side's machine was
    /// (`load`, [`load_change`]), said in its description: the interval holds the change
    /// whichever way the machine's load weighs on the check.
    pub(super) fn widen(&mut self, shift: f64, spread: f64, load: Option<(f64, f64, f64)>) {
        let by = shift * spread * load.map_or(1.0, |l| l.2);
        if let Some((lo, hi)) = self.ci {
            self.ci = Some((lo / by, hi * by));
        }
        let others = load.map_or(String::new(), |(b, n, f)| {
            format!(
                ", other work {:.0}% of the machine then, {:.0}% now ×{f:.3}",
                b * 100.0,
                n * 100.0
            )
        });
        self.what.push_str(&format!(
            "; interval widened ×{by:.3} each way for a machine unlike the baseline's (calibration loop ×{shift:.3}, the processes' scatter ×{spread:.3}{others})"
        ));
    }
}

/// Paired rounds: round i of `a` against round i of `b`, Wilcoxon signed-rank.
pub(super) fn paired(a: &[f64], b: &[f64], alpha: f64) -> Option<Timing> {
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
pub(super) fn timing_finding(label: &str, t: &Timing, cfg: &GateConfig, gated: bool) -> Finding {
    // What the thresholds let fail at all: the percentage, and the absolute floor.
    let policy = (1.0 + cfg.time_threshold)
        .max(1.0 + cfg.min_slowdown_s / t.base_median.max(f64::MIN_POSITIVE));
    let beyond = t.ratio > 1.0 + cfg.time_threshold;
    // A regression needs the interval's lower end past the threshold, as a pass needs its
    // upper end within it ("a slowdown under the threshold is never a regression"): a
    // significant +7 % whose interval reaches down to +3 % may be a +3 % slowdown, which the
    // threshold lets pass. Against a file the machine's drift moves every sample of this run
    // alike; in A/B rounds a fresh process's memory layout moves each round's ratio. Between
    // the two ends is CANNOT TELL, and A/B adds rounds (--max-time).
    let cleared = t.ci.is_some_and(|(lo, _)| lo > 1.0 + cfg.time_threshold);
    let slower =
        beyond && cleared && t.p < cfg.alpha && t.new_median - t.base_median > cfg.min_slowdown_s;
    // The slowdown that would move the interval's lower end past the threshold (the interval
    // moves with the ratio).
    let clearing = match t.ci {
        Some((lo, _)) if lo > 0.0 => t.ratio / lo * (1.0 + cfg.time_threshold),
        _ => 1.0,
    };
    let detectable = t.significant_from.map(|s| s.max(policy).max(clearing));
    // No regression is said only when the interval rules one out: its upper end within what
    // the thresholds let pass. An interval across the threshold is CANNOT TELL (and A/B adds
    // rounds), not a pass of a slowdown that may be the threshold's size.
    let ruled_out = t.ci.is_none_or(|(_, hi)| hi <= policy);
    let status = if !gated {
        Status::Info
    } else if slower {
        Status::Regression
    } else if beyond || !ruled_out || t.significant_from.is_none_or(|s| s > policy) {
        // Too noisy to see the threshold, or past it without being sure.
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

/// The instruction counts of the two sides compared: the mean per run of each, their ratio
/// (now / baseline), and the change the runs' own variation could make of it.
#[derive(Debug, Clone, Copy)]
pub(super) struct InstructionChange {
    pub base: f64,
    pub new: f64,
    pub ratio: f64,
    /// Three standard errors of the ratio, as a fraction.
    pub noise: f64,
    /// Whether the runs were compared run by run (see [`instruction_change`]).
    pub paired: bool,
}

/// Both sides' counts: `None` when one side has none.
///
/// Counted runs are a sequence in one process (a built-in's child, a Python worker) after
/// the same warm-ups, and a run's count depends on its place in it — Python's collector, its
/// specialising interpreter and the allocator's arenas act at the same runs each time (the
/// same check counted twice gives 13.43 M for runs 1–3 and 13.80 M for runs 4–8, on both
/// sides to a few hundred instructions). Unpaired, that fixed pattern reads as noise (±2.1 %
/// for identical counts, past a 2 % threshold). So with as many runs on each side, run k is
/// compared with run k: three standard errors of the per-run ratios' mean. That is an
/// honest estimate whatever the runs are — independent runs give the unpaired figure's size
/// in expectation — and it grows when a change moves the pattern. With different numbers
/// of runs, three standard errors of each side's mean, combined.
pub(super) fn instruction_change(base: &GateStats, new: &GateStats) -> Option<InstructionChange> {
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
    let (bv, nv) = (&base.instructions_per_run, &new.instructions_per_run);
    let (b, sb) = mean_se(bv)?;
    let (n, sn) = mean_se(nv)?;
    let ratio = if b > 0.0 { n / b } else { 1.0 };
    let paired = bv.len() == nv.len() && bv.len() > 1 && bv.iter().all(|&x| x > 0.0);
    let noise = if b <= 0.0 || n <= 0.0 {
        0.0
    } else if paired {
        let ratios: Vec<f64> = bv.iter().zip(nv).map(|(b, n)| n / b).collect();
        let (mean_ratio, se) = mean_se(&ratios).unwrap_or((1.0, 0.0));
        3.0 * se / mean_ratio.max(f64::MIN_POSITIVE)
    } else {
        3.0 * ((sb / b).powi(2) + (sn / n).powi(2)).sqrt()
    };
    Some(InstructionChange {
        base: b,
        new: n,
        ratio,
        noise,
        paired,
    })
}

/// Instruction counts: the mean per run of each side (a run that happens to collect
/// garbage costs more; the mean is the cost averaged over runs, as the Agent pays it), and
/// how far the mean itself could move ([`instruction_change`]).
pub(super) fn instructions(base: &GateStats, new: &GateStats, cfg: &GateConfig) -> Option<Finding> {
    let InstructionChange {
        base: b,
        new: n,
        ratio,
        noise,
        paired,
    } = instruction_change(base, new)?;
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
    let how = if paired {
        "3 standard errors, run k against run k"
    } else {
        "3 standard errors of each mean"
    };
    Some(Finding {
        figure: "instructions per run (mean)".into(),
        baseline: grouped(b),
        current: grouped(n),
        change: format!("{:+.2}%", (ratio - 1.0) * 100.0),
        status,
        detail: format!(
            "{source}; {} and {} runs, ±{:.2}% ({how}); detects ≥ +{:.1}%",
            base.instructions_per_run.len(),
            new.instructions_per_run.len(),
            noise * 100.0,
            (detectable - 1.0) * 100.0
        ),
        detectable_pct: Some((detectable - 1.0) * 100.0),
    })
}

/// Estimated cycles from callgrind's cache simulation (both sides counted with it): the
/// means per run, for information — the verdict rests on the instruction count, which the
/// cache model only weighs. Its detail says where the accesses were served on each side.
pub(super) fn estimated_cycles(base: &GateStats, new: &GateStats) -> Option<Finding> {
    use super::callgrind::CacheHits;
    let mean = |v: &[CacheHits]| -> Option<CacheHits> {
        if v.is_empty() {
            return None;
        }
        let mut sum = CacheHits::default();
        for c in v {
            sum.add(c);
        }
        let n = v.len() as f64;
        Some(CacheHits {
            l1: sum.l1 / n,
            ll: sum.ll / n,
            ram: sum.ram / n,
        })
    };
    let (b, n) = (
        mean(&base.cache_hits_per_run)?,
        mean(&new.cache_hits_per_run)?,
    );
    let (bc, nc) = (b.estimated_cycles(), n.estimated_cycles());
    let change = if bc > 0.0 {
        format!("{:+.2}%", (nc / bc - 1.0) * 100.0)
    } else {
        "n/a".into()
    };
    Some(Finding {
        figure: "estimated cycles per run (mean)".into(),
        baseline: grouped(bc),
        current: grouped(nc),
        change,
        status: Status::Info,
        detail: format!(
            "callgrind's cache simulation: L1 hits {} → {}, LL hits {} → {}, RAM {} → {}; \
             cycles = L1 + 5 × LL + 35 × RAM (Gungraun's weights); not gated",
            grouped(b.l1),
            grouped(n.l1),
            grouped(b.ll),
            grouped(n.ll),
            grouped(b.ram),
            grouped(n.ram)
        ),
        detectable_pct: None,
    })
}
