//! `agentprof gate`: performance gates for CI. A check runs N times after a warm-up; its run
//! times are compared with a baseline by statistics (they drift on shared runners: a slowdown
//! counts only when it is both over the threshold and significant), the figures that do not
//! drift (Python call counts, metric names) exactly, memory by its growth per run and its peak.

pub mod against;
pub mod baseline;
pub mod callgrind;
pub mod config;
mod counted;
mod error;
mod figures;
mod finding;
pub mod instructions;
pub mod measure;
mod measured;
pub mod perf;
pub mod plan;
mod report;
pub mod run;
pub mod stats;
mod timing;
pub mod valgrind;
mod verdict;

pub use error::GateError;
pub use finding::{GateConfig, Measure, Mode, Status};
pub use measured::GateStats;
pub use report::write_flamegraph_diff;
pub use verdict::{Outcome, Verdict, compare};

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(wall: &[f64], rss_step: u64, calls: Option<f64>) -> GateStats {
        let mut s = GateStats::empty("c", "python");
        s.runs = wall.len();
        s.wall_s = wall.to_vec();
        s.cpu_s = wall.to_vec();
        s.rss_after = (0..wall.len() as u64)
            .map(|i| (50 << 20) + i * rss_step)
            .collect();
        s.peak_rss = vec![60 << 20; wall.len()];
        s.python_calls_per_run = calls;
        s.metrics = [("a".to_string(), 1)].into_iter().collect();
        s
    }

    /// Per-process medians of `n` loads around `center`, spread by `noise` (deterministic).
    fn processes(center: f64, noise: f64, n: usize, phase: usize) -> Vec<f64> {
        (0..n)
            .map(|i| center * (1.0 + noise * (((i * 7 + phase * 3) % 11) as f64 / 10.0 - 0.5)))
            .collect()
    }

    #[test]
    fn noise_passes_and_a_slowdown_a_leak_and_more_calls_fail() {
        let cfg = GateConfig::default();
        let base: Vec<f64> = (0..10).map(|i| 0.010 + f64::from(i % 3) * 0.0004).collect();
        let noisy: Vec<f64> = (0..10)
            .map(|i| 0.010 + f64::from((i + 1) % 3) * 0.0005)
            .collect();
        let b = stats(&base, 0, Some(1000.0));
        assert!(!compare(&b, &stats(&noisy, 0, Some(1000.0)), &cfg, Mode::Baseline).regression);
        let slow: Vec<f64> = base.iter().map(|x| x * 2.0).collect();
        let v = compare(&b, &stats(&slow, 0, Some(1000.0)), &cfg, Mode::Baseline);
        assert!(v.regression);
        assert_eq!(
            v.findings[0].status,
            Status::Regression,
            "{:?}",
            v.findings[0]
        );
        let leak = compare(
            &b,
            &stats(&base, 2 << 20, Some(1000.0)),
            &cfg,
            Mode::Baseline,
        );
        assert!(
            leak.findings
                .iter()
                .any(|f| f.figure.starts_with("RSS") && f.status == Status::Regression)
        );
        let calls = compare(&b, &stats(&base, 0, Some(1100.0)), &cfg, Mode::Baseline);
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
            series(&compare(&b, &more, &cfg, Mode::Baseline)),
            Some(Status::Ok),
            "a new metric is listed, not failed"
        );
        more.metrics.insert("a".into(), 2);
        assert_eq!(
            series(&compare(&b, &more, &cfg, Mode::Baseline)),
            Some(Status::Regression)
        );
        let mut gone = stats(&base, 0, Some(1000.0));
        gone.metrics.clear();
        let v = compare(&b, &gone, &cfg, Mode::Baseline);
        assert!(!v.regression, "a missing metric warns by default");
        let v = compare(
            &b,
            &gone,
            &GateConfig {
                strict: true,
                ..cfg
            },
            Mode::Baseline,
        );
        assert!(v.regression);
    }

    #[test]
    fn a_ten_percent_slowdown_is_caught_in_pairs_and_noise_is_not_a_regression() {
        let cfg = GateConfig {
            time_threshold: Measure::Cpu.default_threshold(true),
            ..GateConfig::default()
        };
        let mut a = stats(&[0.010; 10], 0, None);
        // The machine drifts by ±20% across rounds; both sides drift together.
        a.cpu_process_medians = processes(0.010, 0.4, 10, 0);
        let mut same = a.clone();
        same.cpu_process_medians = a
            .cpu_process_medians
            .iter()
            .enumerate()
            .map(|(i, x)| x * (1.0 + 0.01 * ((i % 3) as f64 - 1.0)))
            .collect();
        let v = compare(&a, &same, &cfg, Mode::Paired);
        assert_eq!(v.outcome, Outcome::Pass, "{}", v.summary);
        let mut slow = a.clone();
        slow.cpu_process_medians = same.cpu_process_medians.iter().map(|x| x * 1.10).collect();
        let v = compare(&a, &slow, &cfg, Mode::Paired);
        assert_eq!(v.outcome, Outcome::Regression, "{}", v.summary);
        assert!(v.summary.contains("CPU time +10"), "{}", v.summary);
    }

    #[test]
    fn too_much_noise_against_a_file_is_cannot_tell_and_the_baseline_column_is_the_files() {
        let cfg = GateConfig::default();
        let mut base = stats(&[0.010; 10], 0, None);
        base.cpu_process_medians = processes(0.010, 0.6, 5, 0);
        base.calibration_s = vec![0.002; 5];
        base.calibration_loop = Some("loop".into());
        let mut now = base.clone();
        now.cpu_process_medians = processes(0.010, 0.6, 5, 1);
        let v = compare(&base, &now, &cfg, Mode::Baseline);
        assert_eq!(v.outcome, Outcome::CannotTell, "{}", v.summary);
        assert!(!v.regression);
        // Visible in every report: JUnit skips the gated test case with the reason, the
        // Markdown report's first line says it.
        let junit = v.junit();
        assert!(junit.contains("skipped=\"1\""), "{junit}");
        assert!(
            junit.contains("<skipped message=\"agentprof gate c: CANNOT TELL"),
            "{junit}"
        );
        let md = v.markdown();
        assert!(
            md.lines().next().is_some_and(|l| l.contains("CANNOT TELL")),
            "{md}"
        );
        let d = v.detectable_pct.expect("a detectable slowdown");
        assert!(d > 10.0, "{d}");
        // This run's machine speed does not move the baseline's figure.
        let shown = v.findings[0].baseline.clone();
        now.calibration_s = vec![0.003; 5];
        let v = compare(&base, &now, &cfg, Mode::Baseline);
        assert_eq!(v.findings[0].baseline, shown);
        // 1.5× is caught through ±10% of noise between processes.
        now.calibration_s = vec![0.002; 5];
        base.cpu_process_medians = processes(0.010, 0.2, 5, 0);
        now.cpu_process_medians = processes(0.015, 0.2, 5, 1);
        let v = compare(&base, &now, &cfg, Mode::Baseline);
        assert_eq!(v.outcome, Outcome::Regression, "{}", v.summary);
    }

    /// A busier machine than the baseline's, as measured on a memory-heavy check beside
    /// bursty load: the check's per-process CPU ×1.77, the calibration loop ×1.39. Divided
    /// by the calibration alone, an unchanged check read as +27 % (a false REGRESSION); a
    /// check made 22 % slower whose calibration rose as much read as +0.7 % with an interval
    /// that left out +22 %. The interval carries the calibration's shift: it holds the
    /// truth, and the answer is CANNOT TELL; a quiet machine's answers stand.
    #[test]
    fn a_busier_machine_than_the_baselines_widens_the_interval_to_hold_the_truth() {
        let cfg = GateConfig::default();
        let mut base = stats(&[0.010; 8], 0, None);
        base.cpu_process_medians = processes(0.010, 0.04, 8, 0);
        base.calibration_s = processes(0.002, 0.04, 8, 2);
        base.calibration_loop = Some("loop".into());
        let busier = |check: f64, truth: f64, loop_: f64| {
            let mut now = base.clone();
            now.cpu_process_medians = processes(0.010 * check * truth, 0.04, 8, 1);
            now.calibration_s = processes(0.002 * loop_, 0.04, 8, 3);
            now
        };
        let interval = |v: &super::Verdict| -> (f64, f64) {
            let d = &v.findings[0].detail;
            let ci = d.split("95% CI ").nth(1).expect(d);
            let (lo, rest) = ci.split_once('–').expect(d);
            let hi = rest.split([')', ' ']).next().expect(d);
            (lo.parse().expect(d), hi.parse().expect(d))
        };
        // Unchanged, the machine busier for the check than for the loop.
        let v = compare(&base, &busier(1.77, 1.0, 1.39), &cfg, Mode::Baseline);
        assert_eq!(v.outcome, Outcome::CannotTell, "{}", v.summary);
        let (lo, hi) = interval(&v);
        assert!(lo <= 1.0 && 1.0 <= hi, "({lo}, {hi})");
        assert!(
            v.findings[0].detail.contains("widened ×1.39"),
            "{}",
            v.findings[0].detail
        );
        // 22 % slower, the loop slowed as much by the load.
        let v = compare(&base, &busier(1.0, 1.22, 1.21), &cfg, Mode::Baseline);
        assert_ne!(v.outcome, Outcome::Pass, "{}", v.summary);
        let (lo, hi) = interval(&v);
        assert!(lo <= 1.22 && 1.22 <= hi, "({lo}, {hi})");
        // The loop unmoved, the processes scattered by the load: an awk and sort plugin made
        // +35 % slower (A/B beside the same load: +34.8 %), its baseline made on the quiet
        // machine — the figures of one such gate, which read +21 % with a narrow interval.
        let mut quiet = stats(&[0.009; 8], 0, None);
        quiet.cpu_process_medians = vec![
            0.0090, 0.0091, 0.0095, 0.0091, 0.0089, 0.0090, 0.0090, 0.0090,
        ];
        quiet.calibration_s = vec![0.0018; 8];
        quiet.calibration_loop = Some("loop".into());
        let mut loaded = quiet.clone();
        loaded.cpu_process_medians = vec![
            0.0113, 0.0112, 0.0116, 0.0113, 0.0099, 0.0099, 0.0106, 0.0106,
        ];
        let v = compare(&quiet, &loaded, &cfg, Mode::Baseline);
        let (lo, hi) = interval(&v);
        assert!(
            lo <= 1.35 && 1.35 <= hi,
            "({lo}, {hi}) {}",
            v.findings[0].detail
        );
        assert_ne!(v.outcome, Outcome::Pass, "{}", v.summary);
        // A quiet machine, a JSON-parsing Python check's own baseline figures, 25 % slower,
        // scattered 1.6 times as much: no widening for that scatter, the slowdown caught.
        let mut json_check = stats(&[0.005; 8], 0, None);
        json_check.cpu_process_medians = vec![
            0.00531, 0.00463, 0.00462, 0.00467, 0.00479, 0.00506, 0.00512, 0.00480,
        ];
        json_check.calibration_s = vec![0.00068; 8];
        json_check.calibration_loop = Some("loop".into());
        let mut slower = json_check.clone();
        slower.cpu_process_medians = [
            0.00531, 0.00440, 0.00462, 0.00467, 0.00479, 0.00506, 0.00530, 0.00480,
        ]
        .iter()
        .rev()
        .map(|x| x * 1.25)
        .collect();
        let v = compare(&json_check, &slower, &cfg, Mode::Baseline);
        assert_eq!(v.outcome, Outcome::Regression, "{}", v.findings[0].detail);
        assert!(
            v.findings[0].detail.contains("scatter ×1.000"),
            "{}",
            v.findings[0].detail
        );
        // The JSON-parsing check unchanged beside bursty load (about half the machine), its
        // baseline made on the quiet machine: its CPU per run read −13 % with neither the
        // loop nor the scatter moved. The other work measured on each side widens the
        // interval to hold the truth.
        let mut quiet_json = json_check.clone();
        quiet_json.others_busy = Some(0.02);
        let mut busy_json = quiet_json.clone();
        busy_json.cpu_process_medians = json_check
            .cpu_process_medians
            .iter()
            .rev()
            .map(|x| x * 0.87)
            .collect();
        busy_json.others_busy = Some(0.48);
        let v = compare(&quiet_json, &busy_json, &cfg, Mode::Baseline);
        let (lo, hi) = interval(&v);
        assert!(
            lo <= 1.0 && 1.0 <= hi,
            "({lo}, {hi}) {}",
            v.findings[0].detail
        );
        assert!(
            v.findings[0]
                .detail
                .contains("other work 2% of the machine then, 48% now"),
            "{}",
            v.findings[0].detail
        );
        // On a machine as quiet as the baseline's: 1.5× caught, the same check passes.
        let v = compare(&base, &busier(1.0, 1.5, 1.0), &cfg, Mode::Baseline);
        assert_eq!(v.outcome, Outcome::Regression, "{}", v.summary);
        let v = compare(&base, &busier(1.0, 1.0, 1.0), &cfg, Mode::Baseline);
        assert_eq!(v.outcome, Outcome::Pass, "{}", v.summary);
    }

    /// Paired rounds of `base` against `ratio` times them, each pair moved by ±1 %.
    fn rounds(base: &GateStats, ratio: f64) -> GateStats {
        let mut s = base.clone();
        s.cpu_process_medians = base
            .cpu_process_medians
            .iter()
            .enumerate()
            .map(|(i, x)| x * ratio * (1.0 + 0.01 * ((i % 3) as f64 - 1.0)))
            .collect();
        s
    }

    #[test]
    fn more_calls_in_a_surely_faster_change_are_a_note_and_what_failed_leads_the_headline() {
        let cfg = GateConfig {
            time_threshold: Measure::Cpu.default_threshold(true),
            ..GateConfig::default()
        };
        let mut a = stats(&[0.010; 20], 0, Some(1000.0));
        a.cpu_process_medians = processes(0.010, 0.3, 20, 0);
        // 10 % more calls, 20 % less CPU time: the check does more, smaller calls.
        let mut faster = rounds(&a, 0.8);
        faster.python_calls_per_run = Some(1100.0);
        let v = compare(&a, &faster, &cfg, Mode::Paired);
        assert_eq!(v.outcome, Outcome::Pass, "{}", v.summary);
        let calls = v
            .findings
            .iter()
            .find(|f| f.figure == "Python calls per run")
            .expect("calls");
        assert_eq!(calls.status, Status::Warning, "{calls:?}");
        assert!(calls.detail.contains("CPU time -20"), "{calls:?}");
        // Asked: they fail.
        let strict = GateConfig {
            strict: true,
            ..cfg.clone()
        };
        assert_eq!(
            compare(&a, &faster, &strict, Mode::Paired).outcome,
            Outcome::Regression
        );
        // Against a file, 5 % faster is inside the drift a file allows (10 %): the calls fail.
        let mut file_base = a.clone();
        file_base.cpu_process_medians = processes(0.010, 0.02, 8, 0);
        let mut drifted = file_base.clone();
        drifted.cpu_process_medians = file_base
            .cpu_process_medians
            .iter()
            .map(|x| x * 0.95)
            .collect();
        drifted.python_calls_per_run = Some(1100.0);
        let v = compare(&file_base, &drifted, &GateConfig::default(), Mode::Baseline);
        assert_eq!(v.outcome, Outcome::Regression, "{}", v.summary);
        // As fast as before: more calls fail, and lead the verdict's line; the gated
        // measure's own answer follows.
        let mut same = rounds(&a, 1.0);
        same.python_calls_per_run = Some(1100.0);
        let v = compare(&a, &same, &cfg, Mode::Paired);
        assert_eq!(v.outcome, Outcome::Regression, "{}", v.summary);
        assert!(
            v.summary.starts_with(
                "agentprof gate c: REGRESSION — Python calls per run +10.0% (1000 → 1100); passed: CPU time"
            ),
            "{}",
            v.summary
        );
        // Slower and more calls: the gated measure first, then what else failed.
        let mut slow = rounds(&a, 1.3);
        slow.python_calls_per_run = Some(1100.0);
        let v = compare(&a, &slow, &cfg, Mode::Paired);
        assert!(
            v.summary
                .starts_with("agentprof gate c: REGRESSION — CPU time +3"),
            "{}",
            v.summary
        );
        assert!(
            v.summary
                .ends_with("also failed: Python calls per run +10.0% (1000 → 1100)"),
            "{}",
            v.summary
        );
    }

    #[test]
    fn an_interval_across_the_threshold_is_cannot_tell_not_a_pass() {
        let cfg = GateConfig {
            time_threshold: Measure::Cpu.default_threshold(true),
            ..GateConfig::default()
        };
        let mut a = stats(&[0.010; 20], 0, None);
        a.cpu_process_medians = processes(0.010, 0.3, 20, 0);
        // +4.5 % ± 1 %: under the 5 % threshold, but the interval reaches past it.
        let v = compare(&a, &rounds(&a, 1.045), &cfg, Mode::Paired);
        assert_eq!(v.outcome, Outcome::CannotTell, "{}", v.summary);
        assert!(
            v.findings[0].detail.contains("95% CI 1.040–1.050"),
            "{:?}",
            v.findings[0]
        );
        // +1 % ± 1 %: the interval rules the threshold out.
        let v = compare(&a, &rounds(&a, 1.01), &cfg, Mode::Paired);
        assert_eq!(v.outcome, Outcome::Pass, "{}", v.summary);
        // +5.3 % ± 1 %, significant (p ≈ 1e-6) and past the threshold, but the interval
        // reaches down to +4.3 %: a slowdown the threshold lets pass may be all there is.
        let v = compare(&a, &rounds(&a, 1.053), &cfg, Mode::Paired);
        assert_eq!(v.outcome, Outcome::CannotTell, "{}", v.summary);
        assert!(
            v.findings[0].detail.contains("95% CI 1.04"),
            "{:?}",
            v.findings[0]
        );
        // +7 % ± 1 %: the whole interval is past it.
        let v = compare(&a, &rounds(&a, 1.07), &cfg, Mode::Paired);
        assert_eq!(v.outcome, Outcome::Regression, "{}", v.summary);
    }

    #[test]
    fn top_functions_line_up_across_directories_and_lines_and_a_newcomer_is_no_warning() {
        let cfg = GateConfig::default();
        let top = |v: &[(&str, f64)]| -> Vec<measured::FunctionCalls> {
            v.iter()
                .map(|&(f, c)| measured::FunctionCalls {
                    function: f.to_string(),
                    calls_per_run: c,
                })
                .collect()
        };
        let mut base = stats(&[0.010; 10], 0, Some(1000.0));
        base.python_top = top(&[
            ("/tmp/agentprof-ab-1/checks/work.py:10(check)", 100.0),
            ("~:0(<built-in method builtins.len>)", 500.0),
        ]);
        // The other side's file is elsewhere (`--against`) and was edited above `check`; a
        // helper entered the top list.
        let mut now = base.clone();
        now.python_top = top(&[
            ("/repo/checks/work.py:12(check)", 100.0),
            ("~:0(<built-in method builtins.len>)", 500.0),
            ("/repo/checks/work.py:30(helper)", 50.0),
        ]);
        let v = compare(&base, &now, &cfg, Mode::Baseline);
        let odd: Vec<_> = v
            .findings
            .iter()
            .filter(|f| f.figure.starts_with("calls of") || f.status == Status::Warning)
            .collect();
        assert!(odd.is_empty(), "{odd:?}");
        // The same function called three times as often is found across the two paths.
        now.python_top[0].calls_per_run = 300.0;
        let v = compare(&base, &now, &cfg, Mode::Baseline);
        let f = v
            .findings
            .iter()
            .find(|f| f.figure == "calls of /repo/checks/work.py:12(check)")
            .expect("the function called more");
        assert_eq!((f.status, f.change.as_str()), (Status::Regression, "+200"));
    }

    #[test]
    fn instruction_counts_fail_past_two_percent_and_say_their_source() {
        let cfg = GateConfig {
            measure: Measure::Instructions,
            time_threshold: Measure::Instructions.default_threshold(false),
            ..GateConfig::default()
        };
        let mut base = stats(&[0.010; 5], 0, None);
        base.instructions_per_run = vec![1_000_000.0, 1_000_100.0, 999_950.0];
        base.instructions_source = Some("valgrind-3.19.0 (callgrind)".into());
        let mut now = base.clone();
        let v = compare(&base, &now, &cfg, Mode::Baseline);
        assert_eq!(v.outcome, Outcome::Pass, "{}", v.summary);
        assert!(v.source.contains("callgrind"));
        now.instructions_per_run = base.instructions_per_run.iter().map(|x| x * 1.05).collect();
        let v = compare(&base, &now, &cfg, Mode::Baseline);
        assert_eq!(v.outcome, Outcome::Regression, "{}", v.summary);
        assert_eq!(v.findings[0].figure, "instructions per run (mean)");
    }

    /// The counts CI gave for the same Python check counted twice: runs 1-3 near 13.43 M and
    /// runs 4-8 near 13.80 M on both sides (the interpreter's own work at fixed runs). Each
    /// side's mean read alone is ±2.1 % — past the 2 % threshold, CANNOT TELL for identical
    /// counts; run against run it is a pass, and 5 % more work in every run still fails.
    #[test]
    fn counts_with_a_fixed_pattern_across_runs_are_compared_run_by_run() {
        let cfg = GateConfig {
            measure: Measure::Instructions,
            time_threshold: Measure::Instructions.default_threshold(false),
            ..GateConfig::default()
        };
        let mut base = stats(&[0.010; 5], 0, None);
        base.instructions_per_run = vec![
            13_429_214.0,
            13_433_560.0,
            13_396_307.0,
            13_811_123.0,
            13_782_487.0,
            13_806_188.0,
            13_769_426.0,
            13_805_928.0,
        ];
        let mut now = base.clone();
        now.instructions_per_run = base
            .instructions_per_run
            .iter()
            .map(|x| x - 294.0)
            .collect();
        let v = compare(&base, &now, &cfg, Mode::Baseline);
        assert_eq!(v.outcome, Outcome::Pass, "{}", v.summary);
        assert!(
            v.findings[0].detail.contains("run k against run k"),
            "{}",
            v.findings[0].detail
        );
        // Read side by side, the same counts hide the threshold.
        now.instructions_per_run.pop();
        let v = compare(&base, &now, &cfg, Mode::Baseline);
        assert_eq!(v.outcome, Outcome::CannotTell, "{}", v.summary);
        assert!(v.findings[0].detail.contains("of each mean"));
        // 5 % more in every run.
        now.instructions_per_run = base.instructions_per_run.iter().map(|x| x * 1.05).collect();
        let v = compare(&base, &now, &cfg, Mode::Baseline);
        assert_eq!(v.outcome, Outcome::Regression, "{}", v.summary);
        // A change that moves the pattern (the slow runs start at run 2): the run-by-run
        // ratios scatter, and the noise says so.
        let mut moved = base.instructions_per_run.clone();
        moved[1] = 13_800_000.0;
        now.instructions_per_run = moved;
        let c = timing::instruction_change(&base, &now).unwrap();
        assert!(c.paired && c.noise > 0.005, "{c:?}");
    }

    #[test]
    fn a_drift_just_past_the_threshold_is_no_regression_against_a_file() {
        let cfg = GateConfig::default();
        let mut base = stats(&[0.010; 16], 0, None);
        base.cpu_process_medians = processes(0.010, 0.08, 8, 0);
        let mut now = base.clone();
        // Every process 11 % slower: significant, but the interval reaches below +10 %.
        now.cpu_process_medians = base.cpu_process_medians.iter().map(|x| x * 1.11).collect();
        let v = compare(&base, &now, &cfg, Mode::Baseline);
        assert_eq!(v.outcome, Outcome::CannotTell, "{}", v.summary);
        // 1.5× clears it.
        now.cpu_process_medians = base.cpu_process_medians.iter().map(|x| x * 1.5).collect();
        let v = compare(&base, &now, &cfg, Mode::Baseline);
        assert_eq!(v.outcome, Outcome::Regression, "{}", v.summary);
    }
}
