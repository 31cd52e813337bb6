//! Baseline against this run: the findings (timing.rs for cost, figures.rs for the rest) and
//! the verdict with its one-line summary.

use serde::Serialize;

use super::GateStats;
use super::callgrind::{FunctionChange, changes};
use super::figures::{memory, metric_series, python_calls, traced_allocations};
use super::finding::{Finding, GateConfig, Measure, Mode, Status};
use super::timing::{
    Timing, estimated_cycles, instruction_change, instructions, paired, samples, timing_finding,
    two_sample,
};

/// The gate's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Pass,
    Regression,
    /// No regression found, but the measure was too noisy to see one of the threshold's size.
    CannotTell,
    /// `--against`: the baseline version has no such check (a pull request that adds it).
    NoBaseline,
}

#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    pub check: String,
    pub regression: bool,
    pub outcome: Outcome,
    pub measure: Measure,
    pub mode: Mode,
    /// What measured the gated figure: `CPU time of 5 worker processes' runs, divided by the
    /// machine's speed`, `valgrind-3.19.0 (callgrind)`, `CPU time: 20 paired rounds`.
    pub source: String,
    /// The smallest slowdown (percent) this run could have failed.
    pub detectable_pct: Option<f64>,
    /// One line: the outcome and the gated figure.
    pub summary: String,
    pub findings: Vec<Finding>,
    /// Instructions counted by callgrind on both sides: the functions whose own count
    /// changed most (the why of a count's change).
    pub functions: Vec<FunctionChange>,
}

/// Compares `new` with `base`: the gated measure first, the other timings for information,
/// then memory, Python calls, traced allocations, metric series, failed runs.
pub fn compare(base: &GateStats, new: &GateStats, cfg: &GateConfig, mode: Mode) -> Verdict {
    let mut f = Vec::new();
    let mut source = String::new();
    let mut timings = Vec::new();
    // The gated measure's ratio (now / baseline) when it is surely below 1 (its interval's
    // upper end, below 1 in pairs and below 1 - threshold against a file; or the counts'
    // mean beyond their noise): the call counts are judged with it.
    let mut faster_by = None;
    for cpu in [true, false] {
        let t = timing_of(base, new, cfg, mode, cpu);
        let gated = (cfg.measure == Measure::Cpu) == cpu && cfg.measure != Measure::Instructions;
        if let Some((label, t)) = t {
            if gated {
                source = format!("{label}: {}", t.what);
                // Against a file, the machine's drift since it was made moves the whole
                // interval: faster counts only past the threshold there.
                let below = match mode {
                    Mode::Paired => 1.0,
                    Mode::Baseline => 1.0 - cfg.time_threshold,
                };
                faster_by = t.ci.filter(|&(_, hi)| hi < below).map(|_| t.ratio);
            }
            timings.push((gated, timing_finding(&label, &t, cfg, gated)));
        }
    }
    if cfg.measure == Measure::Instructions {
        let (x, counted) = instructions_finding(base, new, cfg);
        if counted {
            source = new.instructions_source.clone().unwrap_or_default();
            faster_by = instruction_change(base, new)
                .filter(|c| c.ratio < 1.0 - c.noise)
                .map(|c| c.ratio);
        }
        f.push(x);
        f.extend(estimated_cycles(base, new));
    }
    // The gated timing first, then the other.
    timings.sort_by_key(|(gated, _)| !*gated);
    f.extend(timings.into_iter().map(|(_, x)| x));
    // The rest in order of importance, which the headline keeps: runs that failed, memory,
    // allocations, calls, series.
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
    memory(base, new, cfg, &mut f);
    traced_allocations(base, new, cfg, &mut f);
    // More calls in a change the gated measure saw as faster are a note, not a failure
    // (unless --strict): the check does more, smaller calls and costs less.
    let faster = faster_by.map(|r| format!("{} {:+.1}%", cfg.measure.label(), (r - 1.0) * 100.0));
    python_calls(base, new, cfg, faster.as_deref(), &mut f);
    metric_series(base, new, cfg, &mut f);
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
    let functions = if cfg.measure == Measure::Instructions {
        changes(
            &base.instructions_by_function,
            &new.instructions_by_function,
            FUNCTIONS_SHOWN,
        )
    } else {
        Vec::new()
    };
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
        functions,
    }
}

/// How many functions the instruction diff shows.
const FUNCTIONS_SHOWN: usize = 10;

/// The CPU (`cpu`) or wall time compared, with its label: paired rounds' ratios, or two
/// samples (each run divided by the machine's speed where both sides measured it).
fn timing_of(
    base: &GateStats,
    new: &GateStats,
    cfg: &GateConfig,
    mode: Mode,
    cpu: bool,
) -> Option<(String, Timing)> {
    let label = if cpu { "CPU time" } else { "wall time" };
    match mode {
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
            let shift = normalized
                .then(|| super::timing::calibration_shift(base, new))
                .flatten();
            let spread = super::timing::spread_change(&b, &n);
            let load = super::timing::load_change(base, new);
            two_sample(&b, &n, cfg.alpha).map(|mut t| {
                if shift.is_some() || spread.is_some() || load.is_some() {
                    t.widen(shift.unwrap_or(1.0), spread.unwrap_or(1.0), load);
                }
                (label, t)
            })
        }
    }
}

/// The instruction counts compared; whether both sides had counts (else CANNOT TELL, with
/// how many each had).
fn instructions_finding(base: &GateStats, new: &GateStats, cfg: &GateConfig) -> (Finding, bool) {
    if let Some(x) = instructions(base, new, cfg) {
        return (x, true);
    }
    let x = Finding {
        figure: "instructions per run".into(),
        baseline: if base.instructions_per_run.is_empty() {
            "none".into()
        } else {
            base.instructions_per_run.len().to_string()
        },
        current: new.instructions_per_run.len().to_string(),
        change: "n/a".into(),
        status: Status::CannotTell,
        detail: "no counts on one side".into(),
        detectable_pct: None,
    };
    (x, false)
}

/// `agentprof gate NAME: REGRESSION — CPU time +52.1% …`: the outcome, then what failed in
/// order of importance (the gated measure first when it failed; when it did not, what it
/// said follows), on one line.
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
        Outcome::NoBaseline => "NEW — no baseline",
    };
    let mut line = format!("agentprof gate {check}: {word}");
    let gated_part = |g: &Finding| {
        let mut s = format!(
            "{} {} ({} → {})",
            cfg.measure.label(),
            g.change,
            g.baseline,
            g.current
        );
        match (g.status, g.detectable_pct) {
            (Status::CannotTell, Some(d)) => s.push_str(&format!(
                "; the noise here hides slowdowns under +{d:.1}%, above the +{:.1}% threshold",
                cfg.time_threshold * 100.0
            )),
            (Status::CannotTell, None) => {
                s.push_str("; too noisy or too few samples to detect any slowdown")
            }
            (_, Some(d)) => s.push_str(&format!("; detects ≥ +{d:.1}%")),
            _ => {}
        }
        s
    };
    // The gated finding, when there is one, is the first.
    let failed: Vec<String> = all
        .iter()
        .skip(usize::from(gated.is_some()))
        .filter(|x| x.status == Status::Regression)
        .map(|x| format!("{} {} ({} → {})", x.figure, x.change, x.baseline, x.current))
        .collect();
    match gated {
        Some(g) if g.status == Status::Regression || failed.is_empty() => {
            line.push_str(" — ");
            line.push_str(&gated_part(g));
            if !failed.is_empty() {
                line.push_str(&format!("; also failed: {}", failed.join(", ")));
            }
        }
        Some(g) => {
            // Something else failed: it leads; the gated measure's own answer follows.
            let said = if g.status == Status::CannotTell {
                "could not tell"
            } else {
                "passed"
            };
            line.push_str(&format!(
                " — {}; {said}: {}",
                failed.join(", "),
                gated_part(g)
            ));
        }
        None if !failed.is_empty() => line.push_str(&format!(" — {}", failed.join(", "))),
        None => {}
    }
    line
}

impl Verdict {
    /// `--against` where the baseline version (`against`, as described) has no such check:
    /// a pull request that adds it. Nothing is run or compared.
    pub fn no_baseline(check: &str, cfg: &GateConfig, against: &str) -> Verdict {
        Verdict {
            check: check.to_string(),
            regression: false,
            outcome: Outcome::NoBaseline,
            measure: cfg.measure,
            mode: Mode::Paired,
            source: format!("{against} has no check {check}"),
            detectable_pct: None,
            summary: format!(
                "{}: {against} has no check {check} (a change that adds it); nothing compared",
                summary(check, Outcome::NoBaseline, cfg, None, &[])
            ),
            findings: Vec::new(),
            functions: Vec::new(),
        }
    }
}
