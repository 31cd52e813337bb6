//! The check report's cost and profile sections: what each run cost (one column a run, or
//! min, median, max and last), the Python allocations, and the sampled profile's top calls.

use std::fmt::Write as _;

use comfy_table::{Cell, CellAlignment};

use crate::profile::{RunCost, RunRecord};

use super::super::units;
use super::super::{ProfileSummary, Style};
use super::{Grid, MAX_RUN_COLUMNS, push_table, table, title};

type Figure = (
    &'static str,
    fn(&RunCost) -> Option<f64>,
    fn(Option<f64>) -> String,
);

fn b(v: Option<f64>) -> String {
    units::bytes(v.map(|x| x as u64))
}
fn sb(v: Option<f64>) -> String {
    units::signed_bytes(v.map(|x| x as i64))
}
fn n(v: Option<f64>) -> String {
    units::count(v.map(|x| x as u64))
}

const FIGURES: &[Figure] = &[
    ("wall time", |c| Some(c.wall_s), units::seconds),
    ("cpu total", |c| c.cpu_s(), units::seconds),
    ("cpu user (tick split)", |c| c.cpu_user_s, units::seconds),
    (
        "cpu system (tick split)",
        |c| c.cpu_system_s,
        units::seconds,
    ),
    ("memory before (RSS)", |c| c.rss_before.map(|v| v as f64), b),
    ("memory after (RSS)", |c| c.rss_after.map(|v| v as f64), b),
    ("difference (RSS)", |c| c.rss_diff().map(|v| v as f64), sb),
    ("memory before (VMS)", |c| c.vms_before.map(|v| v as f64), b),
    ("memory after (VMS)", |c| c.vms_after.map(|v| v as f64), b),
    ("difference (VMS)", |c| c.vms_diff().map(|v| v as f64), sb),
    ("peak RSS", |c| c.peak_rss.map(|v| v as f64), b),
    ("read bytes", |c| c.io.map(|i| i.read_bytes as f64), b),
    ("write bytes", |c| c.io.map(|i| i.write_bytes as f64), b),
    ("read ops", |c| c.io.map(|i| i.read_count as f64), n),
    ("write ops", |c| c.io.map(|i| i.write_count as f64), n),
    ("threads", |c| c.threads.map(|v| v as f64), n),
    ("open fds", |c| c.open_fds.map(|v| v as f64), n),
    (
        "connections (TCP+UDP)",
        |c| c.connections.map(|v| v as f64),
        n,
    ),
];

pub(super) fn cost(
    out: &mut String,
    style: Style,
    recs: &[&RunRecord],
    measured: &str,
    label: &str,
) {
    let scope = match recs.iter().find_map(|r| r.cost.peak_scope) {
        Some(crate::profile::PeakScope::Process) => "; peak RSS since the process started",
        Some(crate::profile::PeakScope::Sampled) => "; peak RSS as sampled every 5 ms",
        _ => "",
    };
    title(
        out,
        style,
        &format!("Cost of each run (measured on {measured}{scope}){label}"),
    );
    let few = recs.len() <= MAX_RUN_COLUMNS;
    let mut header: Vec<String> = vec!["FIGURE".into()];
    if few {
        header.extend(recs.iter().map(|r| format!("RUN {}", r.run)));
    } else {
        header.extend(
            [
                "MIN",
                "MEDIAN",
                "MAX",
                &format!("LAST (RUN {})", recs[recs.len() - 1].run),
            ]
            .map(String::from),
        );
    }
    let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut t = Grid::new(style, &header_refs);
    let ok: Vec<&&RunRecord> = recs.iter().filter(|r| r.error.is_none()).collect();
    for (name, get, fmt) in FIGURES {
        let mut row = vec![(name.to_string(), false)];
        if few {
            row.extend(recs.iter().map(|r| (fmt(get(&r.cost)), true)));
        } else {
            let mut vals: Vec<f64> = ok.iter().filter_map(|r| get(&r.cost)).collect();
            vals.sort_by(f64::total_cmp);
            let pick = |i: Option<usize>| i.and_then(|i| vals.get(i).copied());
            let cells = [
                pick((!vals.is_empty()).then_some(0)),
                pick((!vals.is_empty()).then(|| (vals.len() - 1) / 2)),
                pick(vals.len().checked_sub(1)),
                get(&recs[recs.len() - 1].cost),
            ];
            row.extend(cells.map(|v| (fmt(v), true)));
        }
        t.row(row);
    }
    t.push_to(out);
    let _ = writeln!(
        out,
        "  cpu total: the CPU clock; user/system: the kernel's split of it by scheduler-tick samples (one tick, 1-10 ms)"
    );
    if measured == crate::checks::CheckKind::Builtin.measured_process() && recs.len() > 1 {
        let _ = writeln!(
            out,
            "  rss, vms: agentprof's own process, which also keeps each run's figures (under 1 KB a run) and the last run's metrics; a run's diff is what it changed during the run"
        );
    }
}

pub(super) fn alloc_table(out: &mut String, style: Style, lines: &[crate::profile::AllocLine]) {
    if lines.is_empty() {
        let _ = writeln!(out, "  (no line holds more memory)");
        return;
    }
    let mut t = table(style, &["SIZE", "BLOCKS", "LINE"]);
    for l in lines {
        t.add_row(vec![
            Cell::new(units::signed_bytes(Some(l.size))).set_alignment(CellAlignment::Right),
            Cell::new(format!("{:+}", l.count)).set_alignment(CellAlignment::Right),
            Cell::new(match (l.line, l.traceback.len() > 1) {
                // --m-sort filename: a whole file.
                (0, _) => crate::redact::printable(short_path(&l.file)).into_owned(),
                // --m-sort traceback: the frames, innermost first.
                (_, true) => l
                    .traceback
                    .iter()
                    .map(|f| crate::redact::printable(short_path(f)).into_owned())
                    .collect::<Vec<_>>()
                    .join("\n  ← "),
                _ => format!(
                    "{}:{}",
                    crate::redact::printable(short_path(&l.file)),
                    l.line
                ),
            }),
        ]);
    }
    push_table(out, &t);
}

/// A source path as a reader wants it in a table: agentprof's own relative to its source
/// tree, crates from their name on
/// (`procfs-0.18.0/src/lib.rs`), the standard library from `library/`, the rest as is.
/// JSON and pprof files keep the full path.
pub(super) fn short_path(path: &str) -> &str {
    // agentprof's own sources, relative to where it was built.
    if let Some(rest) = path
        .strip_prefix(env!("CARGO_MANIFEST_DIR"))
        .and_then(|r| r.strip_prefix('/'))
    {
        return rest;
    }
    if let Some(i) = path.find("/registry/src/") {
        let rest = &path[i + "/registry/src/".len()..];
        return rest
            .split_once('/')
            .map_or(rest, |(_, crate_path)| crate_path);
    }
    if path.starts_with("/rustc/")
        && let Some(i) = path.find("/library/")
    {
        return &path[i + 1..];
    }
    path
}

pub(super) fn profile(out: &mut String, style: Style, p: &ProfileSummary, merged: &str) {
    let ms = |samples: u64| samples as f64 * p.period_ns as f64 / 1e6;
    if !p.meaningful() {
        title(out, style, "Profile");
        let _ = writeln!(
            out,
            "  {} sample{} at {} Hz ({:.1}ms of CPU) over {merged}: too few for a meaningful profile \
             (want at least {}); sample more runs, e.g. --times {}",
            p.samples,
            if p.samples == 1 { "" } else { "s" },
            p.frequency_hz,
            ms(p.samples),
            p.min_samples,
            p.suggested_times,
        );
        return;
    }
    let over = if p.repeated > 0 {
        format!(
            "over {} and {} sampled repetitions (one run is too short to sample; the cost table is of the measured runs)",
            merged.replacen("run", "measured run", 1),
            p.repeated
        )
    } else {
        format!("over {merged}")
    };
    title(
        out,
        style,
        &format!(
            "Profile: {} samples at {} Hz ({:.1}ms of CPU) {over}; top {} of {} functions by cumulative time",
            p.samples,
            p.frequency_hz,
            ms(p.samples),
            p.top.rows.len(),
            p.top.functions,
        ),
    );
    let total = p.samples.max(1) as f64;
    let mut t = table(style, &["FLAT", "FLAT%", "SUM%", "CUM", "CUM%", "FUNCTION"]);
    let mut sum = 0u64;
    for r in &p.top.rows {
        sum += r.flat;
        let loc = match (r.file.as_deref().map(short_path), r.line) {
            (Some(f), Some(l)) => format!(" ({f}:{l})"),
            (Some(f), None) => format!(" ({f})"),
            _ => String::new(),
        };
        let right = |s: String| Cell::new(s).set_alignment(CellAlignment::Right);
        t.add_row(vec![
            right(format!("{:.2}ms", ms(r.flat))),
            right(format!("{:.2}%", r.flat as f64 / total * 100.0)),
            right(format!("{:.2}%", sum as f64 / total * 100.0)),
            right(format!("{:.2}ms", ms(r.cum))),
            right(format!("{:.2}%", r.cum as f64 / total * 100.0)),
            Cell::new(format!("{}{loc}", crate::redact::printable(&r.function))),
        ]);
    }
    push_table(out, &t);
}
