//! `agentprof gate`: performance gates for CI. A check runs N times after a warm-up; its run
//! times are compared with a baseline by statistics (they drift on shared runners: a slowdown
//! counts only when it is both over the threshold and significant), the figures that do not
//! drift (Python call counts, metric names) exactly, memory by its growth per run and its peak.

pub mod against;
pub mod config;
pub mod instructions;
pub mod measure;
mod measured;
mod report;
pub mod stats;
mod verdict;

pub use measured::{FunctionCalls, GateStats};
pub use report::write_flamegraph_diff;
pub use verdict::{Finding, GateConfig, Measure, Mode, Outcome, Status, Verdict, compare};

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
