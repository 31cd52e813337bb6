//! A verdict as a table, JSON, markdown or JUnit, and the differential flamegraph of the
//! baseline's and this run's stacks.

use super::{GateStats, Mode, Outcome, Status, Verdict};

impl Verdict {
    pub fn table(&self) -> String {
        let mut t = comfy_table::Table::new();
        t.load_style(comfy_table::presets::NOTHING).force_no_tty();
        t.set_header(["FIGURE", "BASELINE", "NOW", "CHANGE", "VERDICT", "HOW SURE"]);
        for f in &self.findings {
            t.add_row([
                f.figure.as_str(),
                &f.baseline,
                &f.current,
                &f.change,
                status_word(f.status),
                &f.detail,
            ]);
        }
        let mut out = format!("{}\n{}\n", self.summary, self.about());
        for line in t.to_string().lines() {
            out.push_str(line.trim_end());
            out.push('\n');
        }
        if self.measure == super::Measure::Instructions
            && self.functions.is_empty()
            && self.source.starts_with(super::instructions::PERF_SOURCE)
        {
            out.push_str("\nThe hardware counter names no functions: --counter valgrind counts by callgrind and lists those whose count changed.\n");
        }
        if !self.functions.is_empty() {
            let mut t = comfy_table::Table::new();
            t.load_style(comfy_table::presets::NOTHING).force_no_tty();
            t.set_header(FUNCTION_COLUMNS);
            for row in self.function_rows() {
                t.add_row(row);
            }
            out.push_str(&format!("\n{FUNCTIONS_TITLE}\n"));
            for line in t.to_string().lines() {
                out.push_str(line.trim_end());
                out.push('\n');
            }
        }
        out
    }

    /// The instruction diff's rows: function, own before/now/change, inclusive before/now.
    fn function_rows(&self) -> Vec<[String; 6]> {
        let n = |v: f64| crate::render::units::grouped(v.round() as u64);
        self.functions
            .iter()
            .map(|c| {
                let own = c.current.own - c.baseline.own;
                [
                    c.function.clone(),
                    n(c.baseline.own),
                    n(c.current.own),
                    format!("{}{}", if own < 0.0 { "-" } else { "+" }, n(own.abs())),
                    n(c.baseline.inclusive),
                    n(c.current.inclusive),
                ]
            })
            .collect()
    }

    pub fn markdown(&self) -> String {
        let esc = |s: &str| s.replace('|', "\\|");
        let mark = match self.outcome {
            Outcome::Pass => "✅",
            Outcome::Regression => "❌",
            Outcome::CannotTell => "⚠️",
            Outcome::NoBaseline => "🆕",
        };
        let mut out = format!(
            "### {mark} {}\n\n{}\n\n| figure | baseline | now | change | verdict | how sure |\n|---|---|---|---|---|---|\n",
            esc(&self.summary),
            esc(&self.about())
        );
        for f in &self.findings {
            out.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} |\n",
                esc(&f.figure),
                esc(&f.baseline),
                esc(&f.current),
                esc(&f.change),
                status_word(f.status),
                esc(&f.detail)
            ));
        }
        if !self.functions.is_empty() {
            out.push_str(&format!(
                "\n{FUNCTIONS_TITLE}\n\n| {} |\n|---|---|---|---|---|---|\n",
                FUNCTION_COLUMNS.join(" | ").to_lowercase()
            ));
            for row in self.function_rows() {
                let cells: Vec<String> = row.iter().map(|c| esc(c)).collect();
                out.push_str(&format!("| {} |\n", cells.join(" | ")));
            }
        }
        out
    }

    pub fn junit(&self) -> String {
        let x = |s: &str| {
            s.replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;")
                .replace('"', "&quot;")
        };
        let failures = self
            .findings
            .iter()
            .filter(|f| f.status == Status::Regression)
            .count();
        // CANNOT TELL is a test that could not run to an answer: the gated finding is
        // `<skipped>` with the reason, which CI dashboards count and show. So is a new check.
        let skipped = usize::from(matches!(
            self.outcome,
            Outcome::CannotTell | Outcome::NoBaseline
        ));
        let mut out = format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"agentprof gate\" tests=\"{}\" failures=\"{failures}\" skipped=\"{skipped}\">\n  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" skipped=\"{skipped}\">\n    <properties>\n      <property name=\"outcome\" value=\"{}\"/>\n      <property name=\"measure\" value=\"{}\"/>\n      <property name=\"source\" value=\"{}\"/>\n      <property name=\"detectable_slowdown_pct\" value=\"{}\"/>\n    </properties>\n    <system-out>{}</system-out>\n",
            self.findings.len().max(skipped),
            x(&self.check),
            self.findings.len().max(skipped),
            outcome_word(self.outcome),
            self.measure.label(),
            x(&self.source),
            self.detectable_pct
                .map_or("none".to_string(), |d| format!("{d:.1}")),
            x(&self.summary)
        );
        if self.outcome == Outcome::NoBaseline {
            out.push_str(&format!(
                "    <testcase classname=\"agentprof.gate.{}\" name=\"baseline\"><skipped message=\"{}\"/></testcase>\n",
                x(&self.check),
                x(&self.summary)
            ));
        }
        for (i, f) in self.findings.iter().enumerate() {
            out.push_str(&format!(
                "    <testcase classname=\"agentprof.gate.{}\" name=\"{}\">",
                x(&self.check),
                x(&f.figure)
            ));
            if i == 0 && self.outcome == Outcome::CannotTell {
                out.push_str(&format!("<skipped message=\"{}\"/>", x(&self.summary)));
                out.push_str("</testcase>\n");
                continue;
            }
            let msg = format!(
                "{}: {} -> {} ({}); {}",
                f.figure, f.baseline, f.current, f.change, f.detail
            );
            match f.status {
                Status::Regression => out.push_str(&format!(
                    "<failure message=\"{}\">{}</failure>",
                    x(&msg),
                    x(&msg)
                )),
                Status::Warning | Status::CannotTell => {
                    out.push_str(&format!("<system-out>{}</system-out>", x(&msg)))
                }
                Status::Ok | Status::Info => {}
            }
            out.push_str("</testcase>\n");
        }
        out.push_str("  </testsuite>\n</testsuites>\n");
        out
    }
}

/// Writes a differential flamegraph of the baseline's and the current stacks: frames sized by
/// the current nanoseconds per run, red where a stack takes more time than in the baseline,
/// blue where it takes less. With `instructions` and both sides counted by callgrind, of
/// instructions per run instead (callgrind's call graph folded into stacks).
pub fn write_flamegraph_diff(
    base: &GateStats,
    new: &GateStats,
    instructions: bool,
    out: impl std::io::Write,
) -> Result<(), crate::pprof::Error> {
    use crate::pprof::Error as DrawError;
    // Instructions when asked, or when they are the only stacks both sides have (two
    // reports of instruction counts compared with --compare).
    let timed = !base.stacks_ns_per_run.is_empty() && !new.stacks_ns_per_run.is_empty();
    let counted = (instructions || !timed)
        && !base.instruction_stacks_per_run.is_empty()
        && !new.instruction_stacks_per_run.is_empty();
    let (before, after, what, unit) = if counted {
        (
            &base.instruction_stacks_per_run,
            &new.instruction_stacks_per_run,
            "instructions",
            "instructions per run",
        )
    } else {
        (
            &base.stacks_ns_per_run,
            &new.stacks_ns_per_run,
            "time",
            "ns per run",
        )
    };
    if before.is_empty() || after.is_empty() {
        return Err(DrawError::NothingToDraw("no stacks to compare"));
    }
    let before = before.join("\n");
    let after = after.join("\n");
    let mut merged = Vec::new();
    inferno::differential::from_readers(
        inferno::differential::Options::default(),
        before.as_bytes(),
        after.as_bytes(),
        &mut merged,
    )
    .map_err(DrawError::fold_stacks)?;
    let text = String::from_utf8_lossy(&merged);
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = format!(
        "agentprof gate {}: baseline -> now (red: more {what} per run, blue: less)",
        new.check
    );
    opts.count_name = unit.into();
    inferno::flamegraph::from_lines(&mut opts, text.lines(), out).map_err(DrawError::draw)
}

const FUNCTIONS_TITLE: &str =
    "Instructions by function, per run (callgrind): the functions whose own count changed most";
const FUNCTION_COLUMNS: [&str; 6] = [
    "FUNCTION",
    "OWN BEFORE",
    "OWN NOW",
    "OWN CHANGE",
    "WITH CALLEES BEFORE",
    "WITH CALLEES NOW",
];

fn status_word(s: Status) -> &'static str {
    match s {
        Status::Ok => "ok",
        Status::Warning => "WARNING",
        Status::Regression => "REGRESSION",
        Status::CannotTell => "CANNOT TELL",
        Status::Info => "info",
    }
}

fn outcome_word(o: Outcome) -> &'static str {
    match o {
        Outcome::Pass => "pass",
        Outcome::Regression => "regression",
        Outcome::CannotTell => "cannot_tell",
        Outcome::NoBaseline => "no_baseline",
    }
}

impl Verdict {
    /// What the verdict rests on: the measure, how it was taken, the mode.
    fn about(&self) -> String {
        let mode = match self.mode {
            Mode::Baseline => "against the baseline",
            Mode::Paired => "A/B in this job",
        };
        if self.outcome == Outcome::NoBaseline {
            return format!("{}: nothing to compare with", self.source);
        }
        format!(
            "gated on {} ({}), {mode}; the smallest slowdown it could see is in the table (\"detects ≥\")",
            self.measure.label(),
            self.source
        )
    }
}
