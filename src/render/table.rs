//! Terminal output of a check report: metrics, service checks, events, warnings, then what each
//! run cost and the profile. Plain aligned columns by default, bordered with `--table`.

use std::fmt::Write as _;

use comfy_table::presets::{ASCII_FULL, NOTHING, UTF8_FULL};
use comfy_table::{Attribute, Cell, CellAlignment, Color, ContentArrangement, Table};

use crate::profile::RunRecord;

use super::units;
use super::{CheckReport, ProfileView, Style};

mod costs;
mod sampled;

use costs::{alloc_table, cost, profile};

/// Runs shown one column each; with more, the cost table shows min, median, max and last.
const MAX_RUN_COLUMNS: usize = 5;

/// The narrowest terminal tables are fitted to.
const MIN_FITTED_WIDTH: u16 = 40;

pub(crate) fn table(style: Style, header: &[&str]) -> Table {
    let mut t = Table::new();
    if style.bordered {
        t.load_style(if style.color { UTF8_FULL } else { ASCII_FULL });
    } else {
        t.load_style(NOTHING);
    }
    if style.color {
        t.enforce_styling();
        // Fitted to the terminal only when it says a width a table can be fitted to: a pty
        // that reports 0 columns (some CI runners, `script` without a size) would otherwise
        // get one character a line; below that the terminal wraps whole rows instead.
        if t.width().is_some_and(|w| w >= MIN_FITTED_WIDTH) {
            t.set_content_arrangement(ContentArrangement::Dynamic);
        }
    } else {
        t.force_no_tty();
    }
    t.set_header(header.iter().map(|h| {
        let c = Cell::new(h);
        if style.color {
            c.add_attribute(Attribute::Bold)
        } else {
            c
        }
    }));
    t
}

/// A table of text cells (`true`: right-aligned), drawn by comfy-table.
struct Grid {
    table: Table,
}

impl Grid {
    fn new(style: Style, header: &[&str]) -> Grid {
        Grid {
            table: table(style, header),
        }
    }

    fn row(&mut self, cells: Vec<(String, bool)>) {
        // What a check sent (names, tags, messages) never acts on the terminal.
        self.table.add_row(cells.into_iter().map(|(c, right)| {
            let c = match crate::redact::printable(&c) {
                std::borrow::Cow::Borrowed(_) => c,
                std::borrow::Cow::Owned(escaped) => escaped,
            };
            let cell = Cell::new_owned(c);
            if right {
                cell.set_alignment(CellAlignment::Right)
            } else {
                cell
            }
        }));
    }

    fn push_to(self, out: &mut String) {
        push_table(out, &self.table);
    }
}

fn title(out: &mut String, style: Style, text: &str) {
    if style.color {
        let _ = writeln!(out, "\n\x1b[1m{text}\x1b[0m");
    } else {
        let _ = writeln!(out, "\n{text}");
    }
}

fn push_table(out: &mut String, t: &Table) {
    for line in t.to_string().lines() {
        let _ = writeln!(out, "{}", line.trim_end());
    }
}

pub fn render(report: &CheckReport, style: Style) -> String {
    let mut out = String::new();
    let runs = report.records.iter().map(|r| r.run).max().unwrap_or(0);
    let instances: Vec<usize> = {
        // Runs interleave instances (0, 1, 0, 1, …): each instance once, in order.
        let mut v: Vec<usize> = report.records.iter().map(|r| r.instance).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    heading(&mut out, report, instances.len(), runs);
    for &inst in &instances {
        let recs: Vec<&RunRecord> = report
            .records
            .iter()
            .filter(|r| r.instance == inst)
            .collect();
        let Some(last) = recs.last() else { continue };
        let label = if instances.len() > 1 {
            format!(" — instances[{inst}]")
        } else {
            String::new()
        };
        metrics(&mut out, style, last, runs, &label);
        service_checks(&mut out, style, last, &label);
        events(&mut out, style, last, &label);
        warnings(&mut out, style, &recs, &label);
        logs(&mut out, style, &recs, &label);
        metadata(&mut out, style, report, inst, &label);
        cost(
            &mut out,
            style,
            &recs,
            report.kind.measured_process(),
            &label,
        );
        memory_and_errors(&mut out, style, &recs, report.kind.persists(), &label);
    }
    profiles(&mut out, style, report, runs);
    out
}

/// The first lines: the check, its kind and configuration, instances and runs; the Python
/// worker when there is one.
fn heading(out: &mut String, report: &CheckReport, instances: usize, runs: u32) {
    let _ = writeln!(
        out,
        "{} · {} · {} · {} instance{} × {} run{}",
        report.check,
        report.kind.label(),
        report.source,
        instances,
        if instances == 1 { "" } else { "s" },
        runs,
        if runs == 1 { "" } else { "s" },
    );
    if let Some(p) = &report.python {
        let _ = writeln!(
            out,
            "Python {} ({}) · {} · class {} · worker started in {}{}",
            p.python,
            p.interpreter,
            p.base,
            p.class,
            units::seconds(Some(p.start_s)),
            if p.starts > 1 {
                format!(" (started {} times)", p.starts)
            } else {
                String::new()
            },
        );
    }
}

/// Every run's warnings of one instance.
fn warnings(out: &mut String, style: Style, recs: &[&RunRecord], label: &str) {
    let warnings: Vec<String> = recs
        .iter()
        .flat_map(|r| {
            r.warnings
                .iter()
                .map(move |w| format!("run {}: {w}", r.run))
        })
        .collect();
    if !warnings.is_empty() {
        title(out, style, &format!("Warnings{label}"));
        for w in warnings {
            let _ = writeln!(out, "  {}", crate::redact::printable(&w));
        }
    }
}

/// The check's own log records of one instance, run by run, in order.
fn logs(out: &mut String, style: Style, recs: &[&RunRecord], label: &str) {
    if recs.iter().all(|r| r.logs.is_empty()) {
        return;
    }
    title(out, style, &format!("Log{label}"));
    for r in recs {
        for l in &r.logs {
            let _ = writeln!(
                out,
                "  run {} {:<8} {}",
                r.run,
                l.level,
                crate::redact::printable_lines(&l.message)
            );
        }
    }
}

/// What one instance set with `set_metadata` (its version…), as `agent check` shows it.
fn metadata(out: &mut String, style: Style, report: &CheckReport, inst: usize, label: &str) {
    let rows: Vec<_> = report
        .metadata
        .iter()
        .filter(|m| m.instance == inst)
        .collect();
    if rows.is_empty() {
        return;
    }
    title(out, style, &format!("Metadata{label}"));
    let width = rows
        .iter()
        .map(|m| m.name.chars().count())
        .max()
        .unwrap_or(0);
    for m in rows {
        let _ = writeln!(
            out,
            "  {:<width$}  {}",
            crate::redact::printable(&m.name),
            crate::redact::printable(&m.value)
        );
    }
}

/// One instance's tracemalloc table, its RSS trend over the runs, and its runs' errors.
fn memory_and_errors(
    out: &mut String,
    style: Style,
    recs: &[&RunRecord],
    persists: bool,
    label: &str,
) {
    if let Some((r, m)) = recs
        .iter()
        .rev()
        .find_map(|r| r.memory.as_ref().map(|m| (r, m)))
    {
        title(
            out,
            style,
            &format!(
                "Memory (tracemalloc), run {}: traced peak {} above the start, {} kept; lines holding the most new memory{label}",
                r.run,
                units::bytes(Some(m.traced_peak)),
                units::signed_bytes(Some(m.traced_kept))
            ),
        );
        alloc_table(out, style, &m.top);
    }
    if let Some(t) = crate::profile::leak::trend(recs, persists) {
        let _ = writeln!(
            out,
            "  RSS trend over {} runs: {} per run (least squares); grew in {} of {} steps{}{}",
            t.runs,
            units::signed_bytes(Some(t.rss_slope_bytes_per_run.round() as i64)),
            t.growing_steps,
            t.steps,
            crate::profile::leak::verdict(&t),
            t.note.map(|n| format!(" ({n})")).unwrap_or_default(),
        );
    }
    for r in recs.iter().filter(|r| r.error.is_some()) {
        let msg = crate::redact::printable_lines(r.error.as_deref().unwrap_or_default());
        let line = format!("instances[{}] run {}: error: {msg}", r.instance, r.run);
        if style.color {
            let _ = writeln!(out, "\x1b[31m{line}\x1b[0m");
        } else {
            let _ = writeln!(out, "{line}");
        }
    }
}

/// What is over every run: the memory growth table and the CPU or cProfile profile.
/// "5 runs", or "5 runs of each of 2 instances (10 calls)": what a profile merged.
fn runs_merged(runs: u32, instances: usize) -> String {
    let s = if runs == 1 { "" } else { "s" };
    if instances > 1 {
        format!(
            "{runs} run{s} of each of {instances} instances ({} calls)",
            runs as usize * instances
        )
    } else {
        format!("{runs} run{s}")
    }
}

fn profiles(out: &mut String, style: Style, report: &CheckReport, runs: u32) {
    let instances = report
        .records
        .iter()
        .map(|r| r.instance)
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let merged = runs_merged(runs, instances);
    if let Some(growth) = &report.memory_growth {
        let last = report.records.iter().map(|r| r.run).max().unwrap_or(1);
        title(
            out,
            style,
            &format!("Memory growth from run 1 to run {last} (tracemalloc)"),
        );
        alloc_table(out, style, growth);
    }
    match &report.profile {
        Some(ProfileView::Cpu(p)) => profile(out, style, p, &merged),
        Some(ProfileView::Python(p)) => sampled::python_sampled(out, style, p, &merged),
        Some(ProfileView::Pstats(v)) => {
            let warm = if v.warm_up {
                ", after a warm-up run left out (--profile-first-run keeps it)"
            } else {
                ""
            };
            title(
                out,
                style,
                &format!("Profile: cProfile over {merged}{warm}"),
            );
            out.push_str(&super::pstats::render(v));
        }
        None => {}
    }
}

fn metrics(out: &mut String, style: Style, last: &RunRecord, runs: u32, label: &str) {
    let of = if runs > 1 {
        format!(" (run {} of {runs})", last.run)
    } else {
        String::new()
    };
    title(out, style, &format!("Metrics{of}{label}"));
    if last.metrics.is_empty() {
        let _ = writeln!(out, "  (none)");
    } else {
        let mut t = Grid::new(style, &["METRIC", "TYPE", "VALUE", "TAGS"]);
        for m in &last.metrics {
            t.row(vec![
                (m.metric.clone(), false),
                (m.mtype.as_str().to_string(), false),
                (units::value(m.value), true),
                (m.tags.join(" "), false),
            ]);
        }
        t.push_to(out);
        distributions(out, style, last);
    }
    if last.awaiting_previous > 0 {
        let _ = writeln!(
            out,
            "  {} value{} need{} a previous run (rates and deltas): run with -r or -t 2",
            last.awaiting_previous,
            if last.awaiting_previous == 1 { "" } else { "s" },
            if last.awaiting_previous == 1 { "s" } else { "" },
        );
    }
}

/// Each distribution's sketch: its count, sum, min, max, average and the percentiles the
/// backend computes from it (each within the sketch's 1/128 relative accuracy).
fn distributions(out: &mut String, style: Style, last: &RunRecord) {
    let sketches: Vec<_> = last
        .metrics
        .iter()
        .filter_map(|m| Some((m, m.sketch.as_ref()?.summary())))
        .collect();
    if sketches.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "  distributions (sketches; percentiles within {:.2} % of the values):",
        crate::metrics::sketch::RELATIVE_ACCURACY * 100.0
    );
    let mut t = Grid::new(
        style,
        &[
            "METRIC", "COUNT", "SUM", "MIN", "AVG", "P50", "P75", "P90", "P95", "P99", "MAX",
            "TAGS",
        ],
    );
    for (m, s) in sketches {
        let mut row = vec![(m.metric.clone(), false)];
        for v in [
            s.count, s.sum, s.min, s.avg, s.p50, s.p75, s.p90, s.p95, s.p99, s.max,
        ] {
            row.push((units::value(v), true));
        }
        row.push((m.tags.join(" "), false));
        t.row(row);
    }
    t.push_to(out);
}

fn service_checks(out: &mut String, style: Style, last: &RunRecord, label: &str) {
    if last.service_checks.is_empty() {
        return;
    }
    title(out, style, &format!("Service checks{label}"));
    let mut t = table(style, &["NAME", "STATUS", "TAGS", "MESSAGE"]);
    for sc in &last.service_checks {
        let mut status = Cell::new(sc.status.label());
        if style.color {
            status = status.fg(match sc.status.label() {
                "OK" => Color::Green,
                "WARNING" => Color::Yellow,
                _ => Color::Red,
            });
        }
        t.add_row(vec![
            Cell::new(crate::redact::printable(&sc.name)),
            status,
            Cell::new(crate::redact::printable(&sc.tags.join(" "))),
            Cell::new(crate::redact::printable_lines(&sc.message)),
        ]);
    }
    push_table(out, &t);
}

fn events(out: &mut String, style: Style, last: &RunRecord, label: &str) {
    if last.events.is_empty() {
        return;
    }
    title(out, style, &format!("Events{label}"));
    let mut t = table(style, &["TITLE", "ALERT", "TAGS", "TEXT"]);
    for e in &last.events {
        let p = |s: &str| crate::redact::printable(s).into_owned();
        t.add_row(vec![
            p(&e.title),
            p(&e.alert_type),
            p(&e.tags.join(" ")),
            crate::redact::printable_lines(&e.text).into_owned(),
        ]);
    }
    push_table(out, &t);
}

#[cfg(test)]
mod tests {
    use super::costs::short_path;
    use super::*;
    use crate::checks::{CheckKind, ConfigSource};
    use crate::metrics::{Flushed, Metric, MetricType, ServiceCheck, ServiceCheckStatus};
    use crate::procstat::IoCounters;
    use crate::profile::RunCost;
    use crate::profile::{PeakScope, TopRow, TopTable};
    use crate::render::ProfileSummary;

    fn report(runs: u32, profile_samples: u64) -> CheckReport {
        let records = (1..=runs)
            .map(|run| {
                let cost = RunCost {
                    wall_s: 0.000_5 * f64::from(run),
                    cpu_user_s: Some(0.000_4),
                    cpu_system_s: Some(0.0),
                    cpu_total_s: Some(0.000_4),
                    rss_before: Some(18_685_952),
                    rss_after: Some(18_722_816),
                    vms_before: Some(2_533_859_328),
                    vms_after: Some(2_534_907_904),
                    peak_rss: Some(18_800_000),
                    peak_scope: Some(PeakScope::Run),
                    io: Some(IoCounters {
                        read_bytes: 0,
                        write_bytes: 4096,
                        read_count: 12,
                        write_count: 1,
                    }),
                    threads: Some(2),
                    open_fds: Some(9),
                    connections: None,
                };
                let flushed = Flushed {
                    metrics: vec![Metric {
                        metric: "system.disk.total".into(),
                        mtype: MetricType::Gauge,
                        value: 264212084.0,
                        tags: vec!["device:/dev/vda".into(), "device_name:vda".into()],
                        host: "box".into(),
                        timestamp: 1.0,
                        run,
                        sketch: None,
                    }],
                    service_checks: vec![ServiceCheck {
                        name: "process.up".into(),
                        status: ServiceCheckStatus::Ok,
                        tags: vec![],
                        message: String::new(),
                        host: "box".into(),
                        run,
                    }],
                    awaiting_previous: if run == 1 { 3 } else { 0 },
                    ..Default::default()
                };
                RunRecord::new("disk", 0, run, 1.0, Ok(()), cost, flushed)
            })
            .collect();
        let profile = (profile_samples > 0).then(|| {
            ProfileView::Cpu(ProfileSummary {
                frequency_hz: 1000,
                period_ns: 1_000_000,
                samples: profile_samples,
                min_samples: 20,
                suggested_times: 93,
                repeated: 0,
                top: TopTable {
                    total_samples: profile_samples,
                    functions: 2,
                    rows: vec![
                        TopRow {
                            function: "disk::run".into(),
                            file: Some("src/disk.rs".into()),
                            line: Some(10),
                            flat: 0,
                            cum: profile_samples,
                        },
                        TopRow {
                            function: "statvfs".into(),
                            file: None,
                            line: None,
                            flat: profile_samples,
                            cum: profile_samples,
                        },
                    ],
                },
            })
        });
        CheckReport {
            check: "disk".into(),
            kind: CheckKind::Builtin,
            version: Some("0.1.0".into()),
            source: ConfigSource::Default,
            records,
            profile,
            memory_growth: None,
            python: None,
            config_warnings: vec![],
            metadata: vec![],
            spooled: false,
        }
    }

    const PLAIN: Style = Style {
        color: false,
        bordered: false,
    };

    #[test]
    fn one_run_with_a_profile() {
        insta::assert_snapshot!(render(&report(1, 40), PLAIN));
    }

    #[test]
    fn many_runs_summarise_and_too_few_samples_say_so() {
        insta::assert_snapshot!(render(&report(7, 3), PLAIN));
    }

    #[test]
    fn source_paths_are_shortened_for_the_table() {
        assert_eq!(
            short_path(
                "/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/procfs-0.18.0/src/lib.rs"
            ),
            "procfs-0.18.0/src/lib.rs"
        );
        assert_eq!(
            short_path("/rustc/59807616e1fa/library/std/src/os/fd/owned.rs"),
            "library/std/src/os/fd/owned.rs"
        );
        assert_eq!(
            short_path("src/checks/builtin/disk.rs"),
            "src/checks/builtin/disk.rs"
        );
    }

    #[test]
    fn bordered_tables_are_ascii_without_colour() {
        let out = render(
            &report(1, 0),
            Style {
                color: false,
                bordered: true,
            },
        );
        assert!(out.contains("+-----"));
        assert!(!out.contains('\x1b'));
    }
}
