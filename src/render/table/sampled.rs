//! The report's section for a Python check's sampled profile: which sampler ran and what
//! it cost, then the functions with the most wall time, with their CPU time beside (a
//! thread blocked in a read has wall time and no CPU).

use std::fmt::Write as _;

use comfy_table::{Cell, CellAlignment};

use super::super::{PythonSampled, Style};
use super::{push_table, table, title};

fn ms(ns: u64) -> String {
    format!("{:.2}ms", ns as f64 / 1e6)
}

fn pct(part: u64, whole: u64) -> String {
    format!("{:.1}%", part as f64 / whole.max(1) as f64 * 100.0)
}

pub(super) fn python_sampled(out: &mut String, style: Style, p: &PythonSampled, merged: &str) {
    let warm = if p.warm_up {
        ", after a warm-up run left out (--profile-first-run keeps it)"
    } else {
        ""
    };
    title(
        out,
        style,
        &format!(
            "Profile: {} samples at {} Hz over {merged}{warm}: {} wall, {} CPU; top {} of {} functions by cumulative wall time",
            p.samples,
            p.frequency_hz,
            ms(p.wall_ns),
            ms(p.cpu_ns),
            p.rows.len(),
            p.functions,
        ),
    );
    let _ = writeln!(out, "  {}", p.method);
    if p.sampler_cpu_ns > 0 {
        let _ = writeln!(
            out,
            "  the sampler thread used {} of the worker's CPU, which the cost table includes",
            ms(p.sampler_cpu_ns)
        );
    }
    if p.partial_runs > 0 {
        let _ = writeln!(
            out,
            "  partial: {} of {} runs ended early (timed out or the worker died); their samples up to then are kept",
            p.partial_runs, p.runs
        );
    }
    if p.torn > 0 {
        let _ = writeln!(
            out,
            "  {} stacks changed while they were read and were left out",
            p.torn
        );
    }
    if p.rows.is_empty() {
        let _ = writeln!(
            out,
            "  no stack of the check was seen: its runs are shorter than a sampling period; run it more times (--times) or sample faster (--frequency)"
        );
        return;
    }
    let mut t = table(
        style,
        &[
            "FLAT WALL",
            "CUM WALL",
            "CUM WALL%",
            "FLAT CPU",
            "CUM CPU",
            "CUM CPU%",
            "FUNCTION",
        ],
    );
    let right = |s: String| Cell::new(s).set_alignment(CellAlignment::Right);
    for r in &p.rows {
        t.add_row(vec![
            right(ms(r.flat_wall_ns)),
            right(ms(r.cum_wall_ns)),
            right(pct(r.cum_wall_ns, p.wall_ns)),
            right(ms(r.flat_cpu_ns)),
            right(ms(r.cum_cpu_ns)),
            right(pct(r.cum_cpu_ns, p.cpu_ns)),
            Cell::new(format!(
                "{} ({}:{})",
                crate::redact::printable(&r.function),
                super::costs::short_path(&r.file),
                r.line
            )),
        ]);
    }
    push_table(out, &t);
}
