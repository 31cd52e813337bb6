//! The figures the page draws beside its tables, against go tool pprof: the call graph's
//! boxes (flat and cum) and arrows (each call's weight) against `go tool pprof -dot`, and the
//! differential flamegraph's "base → new" against each file's total.

use crate::support::{Sandbox, go, go_total_ns};
use crate::ui::Ui;
use crate::ui_range::{sel, web_corpus};

/// Nanoseconds of a figure as go tool pprof and agentprof write a duration ("0.95s",
/// "950ms", "2s", "0"), and how many decimals it was written with.
fn ns(figure: &str) -> (f64, usize) {
    let figure = figure.trim();
    if figure == "0" {
        return (0.0, 0);
    }
    let at = figure
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(figure.len());
    let (num, unit) = figure.split_at(at);
    let scale = match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "mins" => 60e9,
        "hrs" => 3600e9,
        other => panic!("{figure:?}: unit {other:?}"),
    };
    let decimals = num.split_once('.').map_or(0, |(_, d)| d.len());
    (num.parse::<f64>().unwrap() * scale, decimals)
}

/// Ours equals go's as go wrote it: the same value rounded to go's unit and decimals.
fn same(ours: &str, gos: &str) -> bool {
    let ((a, _), (b, decimals)) = (ns(ours), ns(gos));
    let unit = gos
        .trim()
        .trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
    let unit_ns = if unit.is_empty() {
        1.0
    } else {
        ns(&format!("1{unit}")).0
    };
    let step = unit_ns / 10f64.powi(decimals as i32);
    (a - b).abs() <= step / 2.0 + 1e-6 * b.abs()
}

/// `go tool pprof -dot`'s boxes (full name → flat, cum, cum %) and its direct calls
/// ((caller, callee) → weight).
type Boxes = std::collections::HashMap<String, (String, String, String)>;
type Calls = std::collections::HashMap<(String, String), String>;

fn go_dot(file: &str) -> (Boxes, Calls) {
    let dot = go(&["tool", "pprof", "-dot", "-nodecount=40", file]).expect("go tool pprof -dot");
    let (mut boxes, mut calls) = (Boxes::new(), Calls::new());
    for line in dot.lines() {
        let Some((_, rest)) = line.split_once(" [label=\"") else {
            continue;
        };
        let Some((label, attrs)) = rest.split_once('"') else {
            continue;
        };
        let Some(tooltip) = attrs.split("tooltip=\"").nth(1) else {
            continue;
        };
        let tooltip = tooltip.split('"').next().unwrap();
        // The boxes of a sample label's values have no name before their figure.
        let Some((name, _)) = tooltip.rsplit_once(" (") else {
            continue;
        };
        if line.contains(" -> ") {
            // Direct calls only: a dotted arrow stands for a path through boxes left out.
            if let Some((caller, callee)) = name.split_once(" -> ")
                && !attrs.contains("dotted")
            {
                let weight = label.split("\\n").next().unwrap().trim().to_string();
                calls.insert((caller.into(), callee.into()), weight);
            }
            continue;
        }
        // "pkg\nname\nflat (p%)\nof cum (q%)", "…\n0 of cum (q%)" or "…\nflat (p%)" (flat = cum).
        let lines: Vec<&str> = label.split("\\n").collect();
        let last = *lines.last().unwrap();
        let split = |s: &str| {
            let (v, pct) = s.rsplit_once(" (").unwrap();
            (v.trim().to_string(), pct.trim_end_matches(')').to_string())
        };
        let (flat, cum, pct) = if let Some(cum) = last.strip_prefix("0 of ") {
            let (c, p) = split(cum);
            ("0".to_string(), c, p)
        } else if let Some(cum) = last.strip_prefix("of ") {
            let (c, p) = split(cum);
            (split(lines[lines.len() - 2]).0, c, p)
        } else {
            let (c, p) = split(last);
            (c.clone(), c, p)
        };
        boxes.insert(name.to_string(), (flat, cum, pct));
    }
    (boxes, calls)
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// Every box and arrow of the call graph that go's `-dot` also draws says go's figures.
#[test]
fn the_call_graph_and_the_diff_tooltips_say_go_tool_pprofs_figures() {
    if !crate::support::require_go() {
        return;
    }
    let sb = Sandbox::new();
    let files = web_corpus(&sb);
    let ui = Ui::start(&sb, &["prof"]);
    let id = |i: usize| {
        sel(&format!(
            "service=web&type=cpu&from=2026-12-01T10:0{i}:00Z&to=2026-12-01T10:0{i}:30Z"
        ))
    };
    let (status, _, svg) = ui.get(&format!("/api/graph.svg?id={}", id(0)));
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&svg));
    let svg = String::from_utf8(svg).unwrap();
    let (boxes, calls) = go_dot(sb.file(&files[0]).to_str().unwrap());
    let (mut nodes, mut arrows) = (0, 0);
    for g in svg.split("<g class=\"node\"><title>").skip(1) {
        let name = unescape(g.split("</title>").next().unwrap());
        // The box's three texts: its short name, flat, "of" cum.
        let texts: Vec<String> = g
            .split("</text>")
            .filter_map(|t| t.rsplit_once('>').map(|(_, text)| unescape(text)))
            .collect();
        let (flat, cum) = (&texts[1], texts[2].trim_start_matches("of "));
        let Some((gflat, gcum, gpct)) = boxes.get(&name) else {
            continue;
        };
        nodes += 1;
        let (cum, pct) = cum.rsplit_once(" (").unwrap();
        let flat = flat.rsplit_once(" (").unwrap().0;
        assert!(same(flat, gflat), "{name}: flat {flat} vs go's {gflat}");
        assert!(same(cum, gcum), "{name}: cum {cum} vs go's {gcum}");
        assert_eq!(pct.trim_end_matches(')'), gpct, "{name}: cum share");
    }
    for g in svg.split("<g><title>").skip(1) {
        let title = unescape(g.split("</title>").next().unwrap());
        let Some((pair, weight)) = title.rsplit_once(": ") else {
            continue;
        };
        let Some((caller, callee)) = pair.split_once(" → ") else {
            continue;
        };
        let Some(gw) = calls.get(&(caller.to_string(), callee.to_string())) else {
            continue;
        };
        arrows += 1;
        assert!(same(weight, gw), "{pair}: {weight} vs go's {gw}");
    }
    assert!(
        nodes >= 15 && arrows >= 10,
        "{nodes} boxes and {arrows} arrows in common with go's"
    );

    // The second capture holds twice the first's values: every frame of the diff doubled,
    // and the whole's "base → new" is the two files' totals as go tool pprof reads them.
    let (status, _, svg) = ui.get(&format!("/api/diff.svg?base={}&id={}", id(0), id(1)));
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&svg));
    let svg = String::from_utf8(svg).unwrap();
    let titles: Vec<String> = svg
        .split("<g><title>")
        .skip(1)
        .map(|g| unescape(g.split("</title>").next().unwrap()))
        .collect();
    assert!(titles.len() > 100, "{} frames", titles.len());
    for t in &titles {
        assert!(t.ends_with(", +100.0%)"), "not doubled: {t}");
    }
    let all = titles.iter().find(|t| t.starts_with("all (")).unwrap();
    let figures = all
        .split("; base ")
        .nth(1)
        .unwrap()
        .trim_end_matches(", +100.0%)");
    let (b, a) = figures.split_once(" → ").unwrap();
    for (ours, file) in [(b, &files[0]), (a, &files[1])] {
        let total = go_total_ns(&sb.file(file), "cpu");
        assert!(
            (ns(ours).0 - total).abs() <= total * 0.005,
            "{all}: {ours} vs go's {total} ns"
        );
    }
    eprintln!(
        "measured: {nodes} boxes and {arrows} arrows equal go tool pprof -dot's; {} diff frames, the whole {b} → {a}",
        titles.len()
    );
}
