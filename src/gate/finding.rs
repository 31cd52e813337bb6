//! What the gate compares with what: the measure and mode, the thresholds, and one compared
//! figure (a finding) with the words its figures are written in. The verdict and the
//! findings' makers (`timing.rs`, `figures.rs`) all read these.

use serde::Serialize;

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
            time_threshold: Measure::Cpu.default_threshold(false),
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

pub(super) fn secs(s: f64) -> String {
    crate::duration::human(std::time::Duration::from_secs_f64(s.max(0.0)))
}

pub(super) fn bytes(b: f64) -> String {
    crate::render::units::signed_bytes(Some(b.round() as i64))
}

pub(super) fn size(b: f64) -> String {
    crate::render::units::human_bytes(b.max(0.0))
}
