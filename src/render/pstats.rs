//! A Python check's cProfile statistics in pstats' own layout, line for line as
//! `pstats.Stats(...).sort_stats("cumulative").print_stats(N)` prints them, so numbers can be
//! put beside Python's and habits built on that output keep working.

use std::fmt::Write as _;

use serde_json::{Value, json};

use crate::profile::PstatsReport;

/// cProfile statistics of a check's runs, ready to print.
#[derive(Debug, Clone)]
pub struct PstatsView {
    pub report: PstatsReport,
    /// `--top`: rows asked for.
    pub top: usize,
    /// A warm-up run of each instance came first and is not in the statistics.
    pub warm_up: bool,
}

fn f8(x: f64) -> String {
    format!("{x:8.3}")
}

/// pstats' `func_std_string`: `{built-in}` names for C functions, else `file:line(name)`.
pub fn func_std_string(file: &str, line: u32, name: &str) -> String {
    if file == "~" && line == 0 {
        if name.starts_with('<') && name.ends_with('>') && name.len() >= 2 {
            format!("{{{}}}", &name[1..name.len() - 1])
        } else {
            name.to_string()
        }
    } else {
        format!("{file}:{line}({name})")
    }
}

/// pstats' ncalls column: `calls` or `calls/primitive` when recursion made them differ.
pub fn ncalls(cc: u64, nc: u64) -> String {
    if nc == cc {
        nc.to_string()
    } else {
        format!("{nc}/{cc}")
    }
}

/// The block pstats prints, from the "function calls" line to the last row.
pub fn render(v: &PstatsView) -> String {
    let r = &v.report;
    let mut out = String::new();
    let _ = write!(out, "         {} function calls ", r.total_calls);
    if r.total_calls != r.prim_calls {
        let _ = write!(out, "({} primitive calls) ", r.prim_calls);
    }
    let _ = writeln!(out, "in {:.3} seconds\n", r.total_tt);
    if r.rows.is_empty() {
        return out;
    }
    let _ = writeln!(out, "   Ordered by: cumulative time");
    if r.functions > v.top {
        let _ = writeln!(
            out,
            "   List reduced from {} to {} due to restriction <{}>",
            r.functions, v.top, v.top
        );
    }
    let _ = writeln!(
        out,
        "\n   ncalls  tottime  percall  cumtime  percall filename:lineno(function)"
    );
    for (file, line, name, cc, nc, tt, ct) in &r.rows {
        let per_tt = if *nc == 0 {
            " ".repeat(8)
        } else {
            f8(tt / *nc as f64)
        };
        let per_ct = if *cc == 0 {
            " ".repeat(8)
        } else {
            f8(ct / *cc as f64)
        };
        let _ = writeln!(
            out,
            "{:>9} {} {} {} {} {}",
            ncalls(*cc, *nc),
            f8(*tt),
            per_tt,
            f8(*ct),
            per_ct,
            func_std_string(file, *line, name)
        );
    }
    out
}

/// The `profile` object of `--json` for a Python check.
pub fn json(v: &PstatsView) -> Value {
    let r = &v.report;
    let top: Vec<Value> = r
        .rows
        .iter()
        .map(|(file, line, name, cc, nc, tt, ct)| {
            json!({
                "function": name,
                "file": file,
                "line": line,
                "ncalls": ncalls(*cc, *nc),
                "calls": nc,
                "primitive_calls": cc,
                "tottime": tt,
                "cumtime": ct,
            })
        })
        .collect();
    json!({
        "kind": "pstats",
        "total_calls": r.total_calls,
        "primitive_calls": r.prim_calls,
        "total_time_s": r.total_tt,
        "functions": r.functions,
        "warm_up_excluded": v.warm_up,
        "top": top,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_pstats() {
        let v = PstatsView {
            warm_up: false,
            top: 2,
            report: PstatsReport {
                functions: 5,
                total_calls: 8361,
                prim_calls: 12,
                total_tt: 0.0123,
                rows: vec![
                    ("/c/x.py".into(), 7, "check".into(), 1, 1, 0.0001, 0.0122),
                    ("/c/x.py".into(), 3, "fib".into(), 1, 8349, 0.01, 0.012),
                ],
                folded: vec![],
            },
        };
        let text = render(&v);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "         8361 function calls (12 primitive calls) in 0.012 seconds"
        );
        assert_eq!(lines[2], "   Ordered by: cumulative time");
        assert_eq!(
            lines[3],
            "   List reduced from 5 to 2 due to restriction <2>"
        );
        assert_eq!(
            lines[5],
            "   ncalls  tottime  percall  cumtime  percall filename:lineno(function)"
        );
        assert_eq!(
            lines[6],
            "        1    0.000    0.000    0.012    0.012 /c/x.py:7(check)"
        );
        assert_eq!(
            lines[7],
            "   8349/1    0.010    0.000    0.012    0.012 /c/x.py:3(fib)"
        );
        assert_eq!(
            func_std_string("~", 0, "<built-in method time.sleep>"),
            "{built-in method time.sleep}"
        );
    }
}
