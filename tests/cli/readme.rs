//! The README's examples are what agentprof prints: the `check disk` example's header,
//! sections, metric names and cost figures, and the built-in checks' metric table, checked
//! against a real run so they cannot go stale.

use std::collections::BTreeSet;

use crate::support::Sandbox;

fn readme() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap()
}

/// The lines of the README's ```text block that starts with `$ COMMAND`.
fn example(text: &str, command: &str) -> Vec<String> {
    let start = text
        .find(&format!("```text\n$ {command}\n"))
        .unwrap_or_else(|| panic!("README has no example of `{command}`"));
    text[start..]
        .lines()
        .skip(2)
        .take_while(|l| !l.starts_with("```"))
        .map(str::to_string)
        .collect()
}

/// What a `check` table shows: its first line, section titles, metric names, cost figures.
#[derive(Debug, PartialEq)]
struct Shape {
    header: String,
    titles: Vec<String>,
    metrics: BTreeSet<String>,
    figures: Vec<String>,
}

fn shape(lines: &[String]) -> Shape {
    let titles = lines
        .iter()
        .filter(|l| !l.is_empty() && !l.starts_with(' '))
        .skip(1)
        .cloned()
        .collect();
    let metrics = lines
        .iter()
        .filter_map(|l| l.strip_prefix(' '))
        .filter(|l| l.starts_with("system."))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    let figures = lines
        .iter()
        .skip_while(|l| !l.starts_with(" FIGURE"))
        .skip(1)
        .take_while(|l| l.starts_with(' ') && !l.starts_with("  "))
        .filter_map(|l| l.trim_start().split("  ").next().map(str::to_string))
        .collect();
    Shape {
        header: lines.first().cloned().unwrap_or_default(),
        titles,
        metrics,
        figures,
    }
}

#[test]
fn the_check_disk_example_has_the_shape_of_a_real_run() {
    let text = readme();
    let shown = shape(&example(&text, "agentprof check disk"));
    let sb = Sandbox::new();
    let r = sb.run(&["check", "disk"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let lines: Vec<String> = r.stdout.lines().map(str::to_string).collect();
    let real = shape(&lines);
    assert_eq!(shown.header, real.header);
    assert_eq!(shown.titles, real.titles);
    assert_eq!(shown.metrics, real.metrics, "metric names");
    assert_eq!(shown.figures, real.figures, "cost figures, in order");
}

/// `a/b/c` after a common prefix: `system.disk.total/used/free` is three names.
fn expand(names: &str) -> Vec<String> {
    let (head, tail) = names.rsplit_once('.').unwrap_or(("", names));
    tail.split('/').map(|t| format!("{head}.{t}")).collect()
}

#[test]
fn the_builtin_metric_table_names_what_disk_sends() {
    let text = readme();
    let row = text
        .lines()
        .find(|l| l.starts_with("| `disk` |"))
        .expect("the disk row");
    let listed: BTreeSet<String> = row
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|t| t.starts_with("system."))
        .flat_map(expand)
        .collect();
    let sb = Sandbox::new();
    let r = sb.run(&["check", "disk", "-t", "2", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let sent: BTreeSet<String> = r.json()["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["metric"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        listed, sent,
        "README's disk row and what `check disk -t 2` sends"
    );
}
