//! The findings that do not drift with the machine: memory, Python calls, traced
//! allocations, metric series.

use std::collections::BTreeMap;

use super::GateStats;
use super::finding::{Finding, GateConfig, Status, bytes, size};
use super::stats;

/// RSS growth per run (a leak) and peak RSS.
pub(super) fn memory(base: &GateStats, new: &GateStats, cfg: &GateConfig, f: &mut Vec<Finding>) {
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

/// cProfile's calls per run, and which of the top functions is called more. `faster` names
/// what the gated measure saw when it found the change faster: more calls then are a note,
/// not a failure, unless `strict`.
pub(super) fn python_calls(
    base: &GateStats,
    new: &GateStats,
    cfg: &GateConfig,
    faster: Option<&str>,
    f: &mut Vec<Finding>,
) {
    let (Some(b), Some(n)) = (base.python_calls_per_run, new.python_calls_per_run) else {
        return;
    };
    let judged = |more: bool, detail: &str| -> (Status, String) {
        match (more, faster) {
            (false, _) => (Status::Ok, detail.to_string()),
            (true, Some(said)) if !cfg.strict => (
                Status::Warning,
                format!(
                    "{detail}; a note, not a failure: {said}, so the check does more of less (--strict fails it)"
                ),
            ),
            (true, _) => (Status::Regression, detail.to_string()),
        }
    };
    let (status, detail) = judged(
        n > b * (1.0 + cfg.calls_threshold),
        "cProfile call counts: exact, whatever the machine's noise",
    );
    f.push(Finding {
        figure: "Python calls per run".into(),
        baseline: format!("{b:.0}"),
        current: format!("{n:.0}"),
        change: format!("{:+.1}%", (n / b.max(1.0) - 1.0) * 100.0),
        status,
        detail,
        detectable_pct: None,
    });
    // The functions in both top lists: which one is called more. Named without their
    // directory or line, so that the same function lines up when the two sides' files are
    // in different places (`--against`) or the check was edited above it.
    let mut top_b: BTreeMap<String, f64> = BTreeMap::new();
    for x in &base.python_top {
        *top_b.entry(same_function(&x.function)).or_default() += x.calls_per_run;
    }
    let mut top_n: BTreeMap<String, (f64, &str)> = BTreeMap::new();
    for x in &new.python_top {
        let e = top_n
            .entry(same_function(&x.function))
            .or_insert((0.0, x.function.as_str()));
        e.0 += x.calls_per_run;
    }
    // A function counts when its own extra calls would take the total over the threshold:
    // one hot loop moved from one function into another shows, while a function called 3
    // times instead of 2 does not fail a check of 10,000 calls. A function that entered the
    // top list is not compared: the baseline kept only its own top, so it may have been
    // called as often there, just below it.
    let enough = b * cfg.calls_threshold;
    for (key, &(calls, shown)) in &top_n {
        let Some(&before) = top_b.get(key) else {
            continue;
        };
        let extra = calls - before;
        if extra > (before * cfg.calls_threshold).max(enough) + 0.5 {
            let (status, detail) = judged(true, "per run");
            f.push(Finding {
                figure: format!("calls of {shown}"),
                baseline: format!("{before:.0}"),
                current: format!("{calls:.0}"),
                change: format!("{extra:+.0}"),
                status,
                detail,
                detectable_pct: None,
            });
        }
    }
}

/// A top function's name as both sides' can be matched: `file:line(function)` without the
/// file's directory and the line.
fn same_function(name: &str) -> String {
    // `{file}:{line}({function})`: the line is the digits after the last ':' that is
    // followed by digits and '('.
    let split = name.rmatch_indices(':').map(|(i, _)| i).find(|&i| {
        let rest = &name[i + 1..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        digits > 0 && rest.as_bytes().get(digits) == Some(&b'(')
    });
    let Some(i) = split else {
        return name.to_string();
    };
    let file = &name[..i];
    let rest = &name[i + 1..];
    let function = &rest[rest.find('(').unwrap_or(0)..];
    let base = file.rsplit('/').next().unwrap_or(file);
    format!("{base}{function}")
}

/// tracemalloc's peak and kept bytes per run.
pub(super) fn traced_allocations(
    base: &GateStats,
    new: &GateStats,
    cfg: &GateConfig,
    f: &mut Vec<Finding>,
) {
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
pub(super) fn metric_series(
    base: &GateStats,
    new: &GateStats,
    cfg: &GateConfig,
    f: &mut Vec<Finding>,
) {
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
