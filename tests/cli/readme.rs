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

/// A README command line as the shell splits it: words, '…' and "…" quoting, a trailing
/// `# comment` dropped.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                word.extend(chars.by_ref().take_while(|&c| c != '\''));
            }
            '"' => {
                in_word = true;
                word.extend(chars.by_ref().take_while(|&c| c != '"'));
            }
            '#' if !in_word => break,
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// Every `agentprof …` line of the README's and docs' ```sh blocks names a command and flags
/// that exist: the line is run with `--help` added, which clap answers only when every flag
/// before it is known.
#[test]
fn every_command_in_the_readme_and_docs_is_one_agentprof_accepts() {
    let root = env!("CARGO_MANIFEST_DIR");
    let sb = Sandbox::new();
    let mut checked = 0;
    for doc in [
        "README.md",
        "docs/ci.md",
        "docs/details.md",
        "docs/python-profiling.md",
        "checks/README.md",
    ] {
        let text = std::fs::read_to_string(format!("{root}/{doc}")).unwrap();
        let mut in_sh = false;
        for (n, line) in text.lines().enumerate() {
            if line.starts_with("```") {
                in_sh = line == "```sh" || line == "```bash";
                continue;
            }
            let Some(rest) = line.trim_start().strip_prefix("agentprof ") else {
                continue;
            };
            if !in_sh {
                continue;
            }
            let mut args = shell_words(rest);
            if let Some(cut) = args.iter().position(|a| a == "&&" || a == "|" || a == ">") {
                args.truncate(cut);
            }
            args.push("--help".into());
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let r = sb.run(&args);
            assert_eq!(
                r.code,
                0,
                "{doc}:{}: `agentprof {rest}` is not accepted: {}",
                n + 1,
                r.stderr
            );
            checked += 1;
        }
    }
    assert!(checked >= 20, "only {checked} commands found");
}

/// The flags the README's tables list for `check`, `gate` and `pull` are flags of those
/// commands (a renamed or removed flag fails here, not in a user's terminal).
#[test]
fn the_readmes_flag_tables_name_real_flags() {
    let text = readme();
    let sb = Sandbox::new();
    for (command, table_start) in [
        ("check", "`agentprof check` flags:"),
        ("gate", "| option | meaning (default) |"),
        ("pull", "| `pull` option | meaning (default) |"),
    ] {
        let start = text
            .find(table_start)
            .unwrap_or_else(|| panic!("README has no table for {command}"));
        let help = sb.run(&[command, "--help"]).stdout;
        let rows = text[start..]
            .lines()
            .skip_while(|l| !l.starts_with('|'))
            .take_while(|l| l.starts_with('|'));
        let mut flags = 0;
        for row in rows {
            let first = row.split(" | ").next().unwrap_or("");
            for flag in first.split('`').skip(1).step_by(2) {
                for word in flag.split([' ', ',']) {
                    if word.starts_with("--") || (word.starts_with('-') && word.len() == 2) {
                        assert!(
                            help.contains(&format!("{word} "))
                                || help.contains(&format!("{word},"))
                                || help.contains(&format!("{word}\n"))
                                || help.contains(&format!("{word}]")),
                            "README lists `{word}` for `agentprof {command}`, which has no such flag"
                        );
                        flags += 1;
                    }
                }
            }
        }
        assert!(flags >= 5, "{command}: only {flags} flags found");
    }
}
