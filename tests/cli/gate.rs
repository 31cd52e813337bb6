//! `agentprof gate` on a Python check whose cost its configuration controls: a leak and
//! extra calls fail, thresholds come from the conf and files, and the reports parse. The
//! timing verdicts are tested in tests/gate_timing.rs, alone.

use crate::gate_check::{finding, gate, gate_against, setup};
use crate::python::venv_python;
use crate::support::Sandbox;

/// The figures that do not drift: timings are taken out of the verdict (`--threshold 1000`)
/// so only memory, call counts and metrics can fail it.
#[test]
fn a_leak_and_extra_calls_fail_even_when_timings_pass() {
    let Some(py) = venv_python() else { return };
    let _cpu = crate::support::cpu_exclusive();
    let sb = Sandbox::new();
    setup(&sb, &[]);
    assert_eq!(gate(&sb, &py, &["--update-baseline"]).code, 0);
    let quiet = ["--threshold", "1000"];
    setup(&sb, &[("keep_kib", "2048")]);
    let r = gate(&sb, &py, &["--format", "json", quiet[0], quiet[1]]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    let rss = finding(&r.json(), "RSS growth per run");
    assert_eq!(rss["status"], "regression", "{rss}");
    // 5 more calls per run (a few microseconds in a 2 ms run, far inside the timing noise),
    // caught by the call count.
    setup(&sb, &[("extra_calls", "5")]);
    let r = gate(&sb, &py, &["--format", "json", quiet[0], quiet[1]]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    let calls = finding(&r.json(), "Python calls per run");
    assert_eq!(calls["status"], "regression", "{calls}");
    // A metric that disappeared warns, and fails with --strict.
    setup(&sb, &[("drop_metric", "true")]);
    assert_eq!(gate(&sb, &py, &quiet).code, 0);
    let r = gate(&sb, &py, &["--strict", quiet[0], quiet[1]]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.stdout.contains("metric work.extra"), "{}", r.stdout);
}

#[test]
fn compare_mode_and_the_junit_and_markdown_reports() {
    let Some(py) = venv_python() else { return };
    let _cpu = crate::support::cpu_exclusive();
    let sb = Sandbox::new();
    setup(&sb, &[]);
    assert_eq!(gate(&sb, &py, &["--update-baseline"]).code, 0);
    setup(&sb, &[("work", "80000")]);
    let summary = sb.file("summary.md");
    let r = sb.run_env(
        &[
            "gate",
            "work",
            "--baseline",
            "base.json",
            "--python",
            &py,
            "--format",
            "json",
            "-o",
            "new.json",
        ],
        &[("GITHUB_STEP_SUMMARY", summary.to_str().unwrap())],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    // The report went to the file; the log still shows the verdict.
    assert!(
        r.stdout
            .starts_with("agentprof gate work: REGRESSION — CPU time +"),
        "{}",
        r.stdout
    );
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(
        md.starts_with("### ❌ agentprof gate work: REGRESSION")
            && md.contains("| CPU time, for the machine's speed (median) |"),
        "{md}"
    );
    // A real markdown parser (GitHub's table extension) finds one table whose every row has
    // the header's six cells.
    let parsed = std::process::Command::new(&py)
        .arg("-c")
        .arg(
            "import sys\n\
             from markdown_it import MarkdownIt\n\
             toks = MarkdownIt('commonmark').enable('table').parse(open(sys.argv[1]).read())\n\
             assert sum(t.type == 'table_open' for t in toks) == 1, 'one table'\n\
             rows, cells, texts = [], 0, []\n\
             for t in toks:\n\
             \x20   if t.type == 'tr_open': cells = 0\n\
             \x20   if t.type in ('th_open', 'td_open'): cells += 1\n\
             \x20   if t.type == 'tr_close': rows.append(cells)\n\
             \x20   if t.type == 'inline': texts.append(t.content)\n\
             assert rows and all(r == 6 for r in rows), rows\n\
             print(len(rows) - 1, '|'.join(texts))",
        )
        .arg(&summary)
        .output()
        .unwrap();
    assert!(
        parsed.status.success(),
        "{}",
        String::from_utf8_lossy(&parsed.stderr)
    );
    let out = String::from_utf8_lossy(&parsed.stdout);
    assert!(
        out.contains("|CPU time, for the machine's speed (median)|")
            && out.contains("|REGRESSION|"),
        "{out}"
    );
    // --compare reads a baseline file and a --format json report.
    let r = sb.run(&[
        "gate",
        "--compare",
        "base.json",
        "new.json",
        "--format",
        "junit",
        "-o",
        "gate.xml",
    ]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    // A real XML parser reads the JUnit report.
    let parsed = std::process::Command::new(&py)
        .arg("-c")
        .arg(
            "import sys, xml.etree.ElementTree as ET\n\
             root = ET.parse(sys.argv[1]).getroot()\n\
             suite = root.find('testsuite')\n\
             fails = [c.get('name') for c in suite.iter('testcase') if c.find('failure') is not None]\n\
             props = {p.get('name'): p.get('value') for p in suite.find('properties')}\n\
             print(suite.get('tests'), suite.get('failures'), ';'.join(fails), props['outcome'], props['measure'], props['detectable_slowdown_pct'])",
        )
        .arg(sb.file("gate.xml"))
        .output()
        .unwrap();
    assert!(
        parsed.status.success(),
        "{}",
        String::from_utf8_lossy(&parsed.stderr)
    );
    let out = String::from_utf8_lossy(&parsed.stdout);
    assert!(
        out.contains("CPU time, for the machine's speed (median)")
            && out.contains(" regression CPU time "),
        "{out}"
    );
    // --compare also reads `agentprof check --json` reports, with their cProfile figures.
    let check = |work: &str, out: &str| {
        setup(&sb, &[("work", work)]);
        let r = sb.run(&[
            "check",
            "work",
            "-t",
            "12",
            "--profile=cprofile",
            "--json",
            "--python",
            &py,
        ]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        sb.write(out, &r.stdout);
    };
    check("20000", "c1.json");
    check("80000", "c4.json");
    let r = sb.run(&[
        "gate",
        "--compare",
        "c1.json",
        "c4.json",
        "--format",
        "json",
    ]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let doc = r.json();
    let cpu = &doc["findings"][0];
    assert_eq!(cpu["figure"], "CPU time (median)", "{doc}");
    assert_eq!(cpu["status"], "regression", "{doc}");
    assert_eq!(doc["outcome"], "regression", "{doc}");
    assert_eq!(doc["measure"], "cpu", "{doc}");
    assert!(doc["detectable_slowdown_pct"].is_number(), "{doc}");
    assert!(doc["current"]["python_calls_per_run"].as_f64().unwrap() > 0.0);
    let r = sb.run(&["gate", "--compare", "c1.json", "c1.json"]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    // A check that cannot run is an error of the gate (2), never a regression (1).
    setup(&sb, &[("work", "nope")]);
    let r = gate(&sb, &py, &["--times", "5"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("the warm-up run failed"), "{}", r.stderr);
    let same = sb.run(&["gate", "--compare", "base.json", "base.json"]);
    assert_eq!(same.code, 0, "{}", same.stdout);
    let missing = sb.run(&["gate", "work", "--baseline", "none.json", "--python", &py]);
    assert_eq!(missing.code, 2);
    assert!(
        missing.stderr.contains("--update-baseline"),
        "{}",
        missing.stderr
    );
}

/// A regression in calls shows where it is: the stacks of the baseline and of this run as a
/// differential flamegraph, for a Python check and a built-in (both sampled).
#[test]
fn flamegraph_diff_of_a_python_and_a_builtin_check() {
    let Some(py) = venv_python() else { return };
    let _cpu = crate::support::cpu_exclusive();
    let sb = Sandbox::new();
    // Runs of about 20 ms, so that the sampled stacks are there on a loaded machine too (runs
    // of 2 ms were sometimes not sampled at all in a full test run beside a build), and
    // enough calls that they hold `_noop`.
    let work = ("work", "200000");
    setup(&sb, &[work]);
    let five = ["--times", "5"];
    let r = gate(&sb, &py, &[&five[..], &["--update-baseline"]].concat());
    assert_eq!(r.code, 0, "{}", r.stderr);
    setup(&sb, &[work, ("extra_calls", "30000")]);
    let r = gate(
        &sb,
        &py,
        &[&five[..], &["--flamegraph-diff", "d.svg"]].concat(),
    );
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let svg = std::fs::read_to_string(sb.file("d.svg")).unwrap();
    // Frames without line numbers: an edited check still lines up with its baseline.
    assert!(svg.contains("_noop (work.py)"), "no _noop frame");
    let parsed = std::process::Command::new(&py)
        .args([
            "-c",
            "import sys, xml.etree.ElementTree as ET; ET.parse(sys.argv[1])",
        ])
        .arg(sb.file("d.svg"))
        .status()
        .unwrap();
    assert!(parsed.success(), "the flamegraph is not well-formed XML");

    let r = sb.run(&["gate", "cpu", "--baseline", "cpu.json", "--update-baseline"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = sb.run(&[
        "gate",
        "cpu",
        "--baseline",
        "cpu.json",
        "--threshold",
        "1000",
        "--flamegraph-diff",
        "cpu.svg",
    ]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let svg = std::fs::read_to_string(sb.file("cpu.svg")).unwrap();
    assert!(svg.contains("CpuCheck"), "no frame of the cpu check");
    // A baseline without stacks is refused before any run, naming the flag.
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sb.file("cpu.json")).unwrap()).unwrap();
    doc.as_object_mut().unwrap().remove("stacks_ns_per_run");
    sb.write("old.json", &doc.to_string());
    let r = sb.run(&[
        "gate",
        "cpu",
        "--baseline",
        "old.json",
        "--flamegraph-diff",
        "x.svg",
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("--flamegraph-diff") && r.stderr.contains("old.json"),
        "{}",
        r.stderr
    );
}

/// A per-run figure of a `--format json` report's current run.
fn per_run(doc: &serde_json::Value, field: &str) -> Vec<i64> {
    doc["current"][field]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect()
}

/// With --memory, what each run allocates and keeps is compared through tracemalloc: exact
/// for the same code, so a few hundred KiB more is caught while RSS would not show it.
#[test]
fn memory_compares_traced_allocations() {
    let Some(py) = venv_python() else { return };
    let _cpu = crate::support::cpu_exclusive();
    let sb = Sandbox::new();
    setup(&sb, &[("work", "2000")]);
    let args = [
        "--times",
        "5",
        "--memory",
        "--format",
        "json",
        "--threshold",
        "1000",
    ];
    assert_eq!(
        gate(&sb, &py, &[&args[..], &["--update-baseline"]].concat()).code,
        0
    );
    let r = gate(&sb, &py, &args);
    assert_eq!(r.code, 0, "{}", r.stdout);
    // 300 KiB of temporaries per run: the traced peak grows, nothing is kept.
    setup(&sb, &[("work", "2000"), ("scratch_kib", "300")]);
    let doc = gate(&sb, &py, &args).json();
    // The figures are what the check did: 300 objects of 1 KiB alive at once (each with its
    // object header), 64 KiB kept below.
    let peaks = per_run(&doc, "traced_peak");
    assert!(
        peaks
            .iter()
            .all(|&p| (300 * 1024..2 * 300 * 1024).contains(&p)),
        "traced peaks {peaks:?}"
    );
    assert_eq!(
        finding(&doc, "traced peak per run (median)")["status"],
        "regression"
    );
    assert_eq!(
        finding(&doc, "traced bytes kept per run (median)")["status"],
        "ok"
    );
    // 64 KiB kept per run: under the RSS slope limit, over the traced bytes kept.
    setup(&sb, &[("work", "2000"), ("keep_kib", "64")]);
    let doc = gate(&sb, &py, &args).json();
    let kept = per_run(&doc, "traced_kept");
    assert!(
        kept.iter().all(|&k| (64 * 1024..80 * 1024).contains(&k)),
        "traced bytes kept {kept:?}"
    );
    assert_eq!(
        finding(&doc, "traced bytes kept per run (median)")["status"],
        "regression"
    );
    assert_eq!(finding(&doc, "RSS growth per run")["status"], "ok");
    // The timed runs trace nothing, so a baseline made with --memory compares with a run
    // without it; one made without has no traced figures for a run with it.
    let r = gate(&sb, &py, &["--times", "5", "--threshold", "1000"]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert_eq!(
        gate(&sb, &py, &["--update-baseline", "--times", "5"]).code,
        0
    );
    let r = gate(&sb, &py, &args);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("--memory") && r.stderr.contains("no traced allocations"),
        "{}",
        r.stderr
    );
}

/// Thresholds from the check conf's `gate:` section and from --gate-config, which overrides it.
#[test]
fn gate_section_and_gate_config_set_the_thresholds() {
    let Some(py) = venv_python() else { return };
    let _cpu = crate::support::cpu_exclusive();
    let sb = Sandbox::new();
    let five = ["--times", "5", "--threshold", "1000"];
    setup(&sb, &[("work", "2000")]);
    assert_eq!(
        gate(&sb, &py, &[&five[..], &["--update-baseline"]].concat()).code,
        0
    );
    sb.write(
        "conf.d/work.yaml",
        "instances:\n  - {work: 2000, extra_calls: 0, keep_kib: 0, scratch_kib: 0, drop_metric: true}\ngate:\n  strict: true\n",
    );
    let r = gate(&sb, &py, &five);
    assert_eq!(r.code, 1, "strict from the gate: section\n{}", r.stdout);
    sb.write("loose.yaml", "gate:\n  strict: false\n");
    let r = gate(
        &sb,
        &py,
        &[&five[..], &["--gate-config", "loose.yaml"]].concat(),
    );
    assert_eq!(
        r.code, 0,
        "--gate-config overrides the section\n{}",
        r.stdout
    );
    sb.write(
        "conf.d/work.yaml",
        "instances:\n  - {work: 2000}\ngate:\n  threshold: 10\n  treshold: 5\n",
    );
    let r = gate(&sb, &py, &five);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("work.yaml:5:") && r.stderr.contains("treshold"),
        "{}",
        r.stderr
    );
    sb.write("bad.yaml", "alpha: 3\n");
    setup(&sb, &[("work", "2000")]);
    let r = gate(
        &sb,
        &py,
        &[&five[..], &["--gate-config", "bad.yaml"]].concat(),
    );
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .contains("bad.yaml:1:1: gate.alpha: 3 is not between 0 and 1"),
        "{}",
        r.stderr
    );
    let r = sb.run(&["gate", "work", "--baseline", "base.json", "--alpha", "0"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("--alpha"), "{}", r.stderr);
}

/// docs/ci.md's own command makes its `perf/` folder; a baseline of another check, of
/// another schema, or with timings that are not durations (a calibration of 0, a wall time
/// of 1e308 s) is refused before any run, exit 2, instead of passing or panicking.
#[test]
fn the_gate_refuses_a_baseline_it_cannot_compare_with() {
    let sb = Sandbox::new();
    // An exec plugin that leaves a mark when it runs: a refused baseline must cost no run.
    let plugin = sb.write(
        "checks/mark.sh",
        "#!/bin/sh\ntouch \"$(dirname \"$0\")/../ran\"\necho 'mark.x:1|g'\n",
    );
    std::fs::set_permissions(&plugin, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    sb.write("conf.d/mark.yaml", "instances:\n  - {}\n");
    let r = sb.run(&[
        "gate",
        "mark",
        "--baseline",
        "perf/mark.json",
        "--update-baseline",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(sb.file("ran").exists(), "the plugin ran for the baseline");
    let good: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sb.file("perf/mark.json")).unwrap()).unwrap();
    type Edit = fn(&mut serde_json::Value);
    let edits: [(&str, Edit, &str); 4] = [
        (
            "other",
            |d| d["check"] = "disk".into(),
            "baseline of check `disk`, not of `mark`",
        ),
        ("schema", |d| d["schema"] = 99.into(), "schema 99"),
        (
            "calibration",
            |d| d["calibration_s"] = serde_json::json!([0.0]),
            "calibration_s: 0.0",
        ),
        ("wall", |d| d["wall_s"][0] = 1e308.into(), "wall_s: 1e308"),
    ];
    for (name, edit, says) in edits {
        std::fs::remove_file(sb.file("ran")).unwrap();
        let mut d = good.clone();
        edit(&mut d);
        let file = format!("perf/{name}.json");
        sb.write(&file, &d.to_string());
        let r = sb.run(&["gate", "mark", "--baseline", &file]);
        assert_eq!(r.code, 2, "{name}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{name}: {}", r.stderr);
        // The plugin loads (its files are found) but never runs.
        assert!(!sb.file("ran").exists(), "{name}: the runs ran first");
        sb.write("ran", "");
    }
}

/// The timing test can always fail: against a baseline of eight worker processes, a check
/// made 3.4 times slower is a regression at the default alpha and at the smaller ones CI
/// users set (0.005, 0.001, 0.0001: the gate runs as many processes as they need), and an alpha no
/// number of processes could meet is refused, exit 2, instead of passing everything.
#[test]
fn every_alpha_can_fail_and_an_unreachable_one_is_refused() {
    let Some(py) = venv_python() else { return };
    let _cpu = crate::support::cpu_exclusive();
    let sb = Sandbox::new();
    setup(&sb, &[]);
    assert_eq!(gate(&sb, &py, &["--update-baseline"]).code, 0);
    setup(&sb, &[("work", "68000")]);
    for alpha in ["0.01", "0.005", "0.0001"] {
        let r = gate(&sb, &py, &["--alpha", alpha, "--format", "json"]);
        assert_eq!(r.code, 1, "alpha {alpha}: {}\n{}", r.stdout, r.stderr);
        let doc = r.json();
        let slower =
            doc["findings"].as_array().unwrap().iter().any(|f| {
                f["figure"].as_str().unwrap().contains("time") && f["status"] == "regression"
            });
        assert!(slower, "alpha {alpha}: {doc}");
    }
    let r = gate(&sb, &py, &["--alpha", "0.000000001"]);
    assert_eq!(r.code, 2, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("cannot be met"), "{}", r.stderr);
}

/// True when valgrind can count instructions here; under CI (where `.ci/run` installs it)
/// its absence is a failure.
#[track_caller]
pub fn require_valgrind() -> bool {
    let ok = std::process::Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        crate::support::skip("valgrind is not installed, so no instructions can be counted");
    }
    ok
}

/// `--measure instructions --counter valgrind`: counts that repeat within 0.5 % for the same
/// check, and a 5 % growth of a Python check's work that fails with no statistics needed; a
/// built-in and an exec plugin are counted too. (Counted by callgrind whatever the machine
/// offers: a machine whose kernel gives hardware counters would otherwise count with them,
/// which CI machines on some hosts do.)
#[test]
fn instruction_counts_are_deterministic_and_catch_a_small_growth() {
    let Some(py) = venv_python() else { return };
    if !require_valgrind() {
        return;
    }
    let sb = Sandbox::new();
    setup(&sb, &[]);
    let args = [
        "--measure",
        "instructions",
        "--counter",
        "valgrind",
        "--format",
        "json",
    ];
    let r = gate(&sb, &py, &[&args[..], &["--update-baseline"]].concat());
    assert_eq!(r.code, 0, "{}", r.stderr);
    let (base, counts) = counted(&sb, "base.json");
    assert!(counts.len() >= 8, "{base}");
    let first = mean(&counts);
    assert!(
        first > 1e6,
        "a 20,000-iteration loop is millions of instructions: {counts:?}"
    );
    assert!(
        base["instructions_source"]
            .as_str()
            .unwrap()
            .contains("callgrind"),
        "{base}"
    );
    // callgrind's cache simulation per counted run: every access served somewhere, so the
    // estimated cycles are at least the instructions.
    let hits = base["cache_hits_per_run"].as_array().expect("cache hits");
    assert_eq!(hits.len(), counts.len(), "{base}");
    for (h, ir) in hits.iter().zip(&counts) {
        let (l1, ll, ram) = (
            h["l1"].as_f64().unwrap(),
            h["ll"].as_f64().unwrap(),
            h["ram"].as_f64().unwrap(),
        );
        assert!(l1 + ll + ram >= *ir, "{h} for {ir} instructions");
    }
    // callgrind's call graph as stacks (for --flamegraph-diff): they hold the run's count,
    // within the part a call graph cannot place.
    let stacked: f64 = base["instruction_stacks_per_run"]
        .as_array()
        .expect("instruction stacks")
        .iter()
        .map(|l| {
            let l = l.as_str().unwrap();
            l[l.rfind(' ').unwrap() + 1..].parse::<f64>().unwrap()
        })
        .sum();
    assert!(
        (stacked / first - 1.0).abs() < 0.1,
        "stacks hold {stacked} of {first} instructions per run"
    );
    // Counted again from scratch: the same mean within 0.5 %.
    let r = gate(&sb, &py, &[&args[..], &["--update-baseline"]].concat());
    assert_eq!(r.code, 0, "{}", r.stderr);
    let (_, again) = counted(&sb, "base.json");
    let drift = (mean(&again) / first - 1.0).abs();
    assert!(drift < 0.005, "{counts:?} then {again:?}");
    // A baseline said to be counted by a hardware counter: --counter valgrind refuses it
    // (exit 2, before any run) on every machine ...
    let mut perf = base.clone();
    perf["instructions_source"] = "perf_event_open (hardware instructions, user space)".into();
    sb.write("perf.json", &perf.to_string());
    let against_perf = |extra: &[&str]| {
        let mut a = vec![
            "gate",
            "work",
            "--baseline",
            "perf.json",
            "--python",
            &py,
            "--measure",
            "instructions",
            "--format",
            "json",
        ];
        a.extend_from_slice(extra);
        sb.run(&a)
    };
    let r = against_perf(&["--counter", "valgrind"]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("--counter")
            && r.stderr.contains("was counted by perf_event_open")
            && r.stderr
                .contains("make the baseline again with --counter valgrind"),
        "{}",
        r.stderr
    );
    // ... and without --counter, where the machine has no hardware counter it is refused
    // rather than compared with callgrind's counts; where it has one, that counter counts
    // this side too.
    let r = against_perf(&[]);
    if r.code == 2 {
        assert!(
            r.stderr
                .contains("the baseline was counted by perf_event_open")
                && r.stderr
                    .contains("perf_event_open gives no hardware counter"),
            "{}",
            r.stderr
        );
    } else {
        assert!(
            r.code == 0 || r.code == 1,
            "counted by the hardware counter: exit {}\n{}{}",
            r.code,
            r.stdout,
            r.stderr
        );
        let counted = finding(&r.json(), "instructions per run (mean)");
        assert!(
            counted["detail"]
                .as_str()
                .unwrap_or_default()
                .starts_with("perf_event_open"),
            "{counted}"
        );
    }
    let r = gate(&sb, &py, &args);
    assert_eq!(r.code, 0, "unchanged: {}", r.stdout);
    let doc = r.json();
    assert_eq!(doc["outcome"], "pass", "{doc}");
    assert_eq!(doc["findings"][0]["figure"], "instructions per run (mean)");
    let cycles = &doc["findings"][1];
    assert_eq!(cycles["figure"], "estimated cycles per run (mean)", "{doc}");
    assert_eq!(cycles["status"], "info", "{cycles}");
    assert!(
        cycles["detail"].as_str().unwrap().contains("L1 hits"),
        "{cycles}"
    );
    // 5 % more iterations: 5 % more instructions, a regression.
    setup(&sb, &[("work", "21000")]);
    let r = gate(&sb, &py, &args);
    assert_eq!(r.code, 1, "{}", r.stdout);
    let grown = &r.json()["findings"][0];
    let change: f64 = grown["change"]
        .as_str()
        .unwrap()
        .trim_end_matches('%')
        .parse()
        .unwrap();
    assert!((4.0..6.0).contains(&change), "{grown}");
    eprintln!(
        "measured: Python check {first:.0} instructions per run, counted twice {:.4}% apart; +5% work: {change:+.2}%",
        drift * 100.0
    );

    // A built-in: agentprof's own run of it, without its bookkeeping. (`memory` reads
    // /proc/meminfo, whose lines stay put; `cpu` parses /proc/stat, whose interrupt line
    // changes length from run to run, and its count with it.)
    let builtin = |extra: &[&str]| {
        let mut a = vec![
            "gate",
            "memory",
            "--baseline",
            "memory.json",
            "--measure",
            "instructions",
            "--counter",
            "valgrind",
        ];
        a.extend_from_slice(extra);
        sb.run(&a)
    };
    let r = builtin(&["--update-baseline"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = builtin(&[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout
            .starts_with("agentprof gate memory: no regression — instructions"),
        "{}",
        r.stdout
    );

    // An exec plugin: its process tree.
    sb.write(
        "checks/hello.sh",
        "#!/bin/sh\nn=0\nwhile [ $n -lt ${1:-100} ]; do n=$((n+1)); done\necho \"hello.count:$n|g\"\n",
    );
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            sb.file("checks/hello.sh"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
    }
    sb.write("conf.d/hello.yaml", "instances:\n  - command: ['300']\n");
    let hello = |extra: &[&str]| {
        let mut a = vec![
            "gate",
            "hello",
            "--baseline",
            "hello.json",
            "--measure",
            "instructions",
            "--counter",
            "valgrind",
        ];
        a.extend_from_slice(extra);
        sb.run(&a)
    };
    assert_eq!(hello(&["--update-baseline"]).code, 0);
    // The reference: the same program under callgrind, started here; every process of its
    // tree summed.
    let reference = sb.file("reference");
    std::fs::create_dir_all(&reference).unwrap();
    let st = std::process::Command::new("valgrind")
        .args(["--tool=callgrind", "-q", "--trace-children=yes"])
        .arg(format!(
            "--callgrind-out-file={}/cg.%p",
            reference.display()
        ))
        .arg(sb.file("checks/hello.sh"))
        .arg("300")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let summed: f64 = std::fs::read_dir(&reference)
        .unwrap()
        .map(|e| {
            let text = std::fs::read_to_string(e.unwrap().path()).unwrap();
            let line = text.lines().find(|l| l.starts_with("summary:")).unwrap();
            line["summary:".len()..].trim().parse::<f64>().unwrap()
        })
        .sum();
    let (_, plugin) = counted(&sb, "hello.json");
    let off = mean(&plugin) / summed - 1.0;
    assert!(
        off.abs() < 0.01,
        "agentprof {plugin:?}, callgrind itself {summed}"
    );
    eprintln!(
        "measured: exec plugin {:.0} instructions per run, callgrind run by hand {summed:.0} ({:+.3}%)",
        mean(&plugin),
        off * 100.0
    );
    sb.write("conf.d/hello.yaml", "instances:\n  - command: ['600']\n");
    let r = hello(&[]);
    assert_eq!(r.code, 1, "{}", r.stdout);
}

/// A gate report's instruction counts per run, from `file` in the sandbox.
fn counted(sb: &Sandbox, file: &str) -> (serde_json::Value, Vec<f64>) {
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sb.file(file)).unwrap()).unwrap();
    let counts = doc["instructions_per_run"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    (doc, counts)
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// A machine without valgrind and without hardware counters is told what is missing, before
/// anything runs (exit 2); one with hardware counters counts with them.
#[test]
fn instruction_counts_without_valgrind_say_what_to_install() {
    let sb = Sandbox::new();
    let r = sb.run_env(
        &[
            "gate",
            "cpu",
            "--baseline",
            "cpu.json",
            "--measure",
            "instructions",
            "--update-baseline",
        ],
        &[("PATH", "/nonexistent")],
    );
    if r.code == 0 {
        let (doc, _) = counted(&sb, "cpu.json");
        assert!(
            doc["instructions_source"]
                .as_str()
                .unwrap()
                .starts_with("perf_event_open"),
            "{doc}"
        );
        return;
    }
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("--measure instructions")
            && r.stderr
                .contains("perf_event_open gives no hardware counter")
            && r.stderr.contains("apt-get install valgrind"),
        "{}",
        r.stderr
    );
}

/// `--cannot-tell fail` gives CANNOT TELL its own exit status (4); by default it exits 0 and
/// says so on the verdict line.
#[test]
fn cannot_tell_exits_4_when_asked_and_0_by_default() {
    let sb = Sandbox::new();
    let r = sb.run(&[
        "gate",
        "uptime",
        "--baseline",
        "perf/uptime.json",
        "--update-baseline",
        "--times",
        "10",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // Ten runs over eight processes: rounded up, and said.
    assert!(
        r.stderr
            .contains("16 timed runs, 2 in each of 8 worker processes (10 rounded up"),
        "{}",
        r.stderr
    );
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sb.file("perf/uptime.json")).unwrap())
            .unwrap();
    // This side's processes spread from half to twice the baseline's: nothing can be told.
    let spread = [0.5, 2.0, 0.7, 1.6, 1.0, 0.6, 1.9, 1.2];
    for key in ["cpu_process_medians", "wall_process_medians"] {
        for (i, x) in doc[key].as_array_mut().unwrap().iter_mut().enumerate() {
            *x = (x.as_f64().unwrap() * spread[i % spread.len()]).into();
        }
    }
    sb.write("perf/noisy.json", &doc.to_string());
    let compare = |extra: &[&str]| {
        let mut args = vec![
            "gate",
            "--compare",
            "perf/uptime.json",
            "perf/noisy.json",
            "--min-slowdown-us",
            "0",
        ];
        args.extend_from_slice(extra);
        sb.run(&args)
    };
    let r = compare(&[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.starts_with("agentprof gate uptime: CANNOT TELL"),
        "{}",
        r.stdout
    );
    let r = compare(&["--cannot-tell", "fail"]);
    assert_eq!(r.code, 4, "{}{}", r.stdout, r.stderr);
    let r = compare(&["--cannot-tell", "fail", "--format", "junit"]);
    assert_eq!(r.code, 4, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("<skipped message="), "{}", r.stdout);
    let r = compare(&["--cannot-tell", "maybe"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    // Flags of other modes and kinds are refused, not ignored.
    for (flag, says) in [
        (&["--max-time", "5s"][..], "--max-time: adds A/B rounds"),
        (
            &["--compat-base"][..],
            "--compat-base: uptime is not a Python check",
        ),
    ] {
        let mut args = vec!["gate", "uptime", "--baseline", "perf/uptime.json"];
        args.extend_from_slice(flag);
        let r = sb.run(&args);
        assert_eq!(r.code, 2, "{flag:?}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{flag:?}: {}", r.stderr);
    }
    // The help says what each exit status means.
    let help = sb.run(&["gate", "--help"]);
    for says in [
        "4  CANNOT TELL, with --cannot-tell fail",
        "Wilcoxon signed-rank",
        "perf_event_open",
    ] {
        assert!(help.stdout.contains(says), "{says}: {}", help.stdout);
    }
}

/// A change that adds a check: `--against` a version without it (a directory, or a git
/// revision before the checks directory existed) says so and exits 0.
#[test]
fn a_new_check_against_a_version_without_it_is_new_not_an_error() {
    let Some(py) = venv_python() else { return };
    let sb = Sandbox::new();
    setup(&sb, &[]);
    std::fs::create_dir_all(sb.file("old")).unwrap();
    let ab = |against: &str, format: &str| gate_against(&sb, &py, against, format);
    let r = ab("old", "table");
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout
            .starts_with("agentprof gate work: NEW — no baseline: old has no check work"),
        "{}",
        r.stdout
    );
    let r = ab("old", "json");
    assert_eq!(r.json()["outcome"], "no_baseline", "{}", r.stdout);
    sb.git(&["init", "-q"]);
    sb.write("README", "before the checks\n");
    sb.git(&["add", "README"]);
    sb.git(&["commit", "-qm", "base"]);
    let r = ab("HEAD", "junit");
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout
            .contains("<skipped message=\"agentprof gate work: NEW"),
        "{}",
        r.stdout
    );
}

/// An interpreter without datadog_checks_base would time the check on agentprof's own
/// compatible AgentCheck: the gate refuses (exit 2, with the install command) unless asked.
#[test]
fn a_python_without_datadog_checks_base_is_refused_unless_asked() {
    let sb = Sandbox::new();
    setup(&sb, &[("work", "2000")]);
    let bare = sb.file("bare");
    let made = std::process::Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(&bare)
        .status()
        .expect("python3");
    assert!(made.success());
    let py = bare.join("bin/python").display().to_string();
    let r = gate(&sb, &py, &["--update-baseline", "--times", "3"]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("has no importable datadog_checks_base")
            && r.stderr
                .contains("-m pip install \"datadog-checks-base[deps]\""),
        "{}",
        r.stderr
    );
    assert!(!sb.file("base.json").exists());
    let r = gate(
        &sb,
        &py,
        &["--update-baseline", "--times", "3", "--compat-base"],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
}

/// Why an instruction count grew: with callgrind counting, the report lists the functions
/// whose own instructions changed most, and the one made slower leads. The check is a C
/// exec plugin with two functions; this side's configuration gives one of them more work.
#[test]
fn the_instruction_diff_names_the_function_made_slower() {
    if !require_valgrind() {
        return;
    }
    let sb = Sandbox::new();
    sb.write(
        "w.c",
        "#include <stdio.h>\n#include <stdlib.h>\n\
         __attribute__((noinline)) long hot_loop(long n){long s=0;for(long i=0;i<n;i++)s=(s*31+i)&0xffff;return s;}\n\
         __attribute__((noinline)) long cold_loop(long n){long s=0;for(long i=0;i<n;i++)s^=i;return s;}\n\
         int main(int c,char**v){printf(\"w.x:%ld|g\\n\",hot_loop(atol(v[1]))+cold_loop(atol(v[2])));return 0;}\n",
    );
    std::fs::create_dir_all(sb.file("checks")).unwrap();
    let built = std::process::Command::new("cc")
        .args(["-O1", "-o", "checks/w", "w.c"])
        .current_dir(sb.file(""))
        .status()
        .expect("cc (the C compiler Rust links with)");
    assert!(built.success());
    let conf = |hot: u32| {
        sb.write(
            "conf.d/w.yaml",
            &format!("instances:\n  - command: ['{hot}', '20000']\n"),
        )
    };
    conf(20000);
    let gate = |extra: &[&str]| {
        let mut args = vec![
            "gate",
            "w",
            "--baseline",
            "perf/w.json",
            "--measure",
            "instructions",
            "--counter",
            "valgrind",
        ];
        args.extend_from_slice(extra);
        sb.run(&args)
    };
    let r = gate(&["--update-baseline"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // Counts of another counter do not compare: refused, as is a counter without counts.
    for (args, says) in [
        (
            &["--measure", "instructions", "--counter", "perf"][..],
            "was counted by valgrind",
        ),
        (
            &["--counter", "valgrind"][..],
            "--counter: counts instructions",
        ),
    ] {
        let mut all = vec!["gate", "w", "--baseline", "perf/w.json"];
        all.extend_from_slice(args);
        let r = sb.run(&all);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{args:?}: {}", r.stderr);
    }
    conf(30000);
    let r = gate(&["--format", "json", "--flamegraph-diff", "diff.svg"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    // A differential flamegraph of instructions (callgrind's call graph as stacks): hot_loop
    // under main, red, its instructions up by about half; cold_loop unchanged.
    let svg = std::fs::read_to_string(sb.file("diff.svg")).expect("the flamegraph");
    assert!(
        svg.contains("more instructions per run") && svg.contains("instructions per run"),
        "{}",
        &svg[..svg.len().min(2000)]
    );
    let title = |f: &str| -> String {
        let at = svg
            .find(&format!("<title>{f} ("))
            .unwrap_or_else(|| panic!("no frame {f} in the flamegraph"));
        svg[at..at + svg[at..].find("</title>").unwrap()].to_string()
    };
    let hot = title("hot_loop");
    assert!(hot.contains("+") && hot.contains('%'), "{hot}");
    let cold = title("cold_loop");
    assert!(cold.contains("0.00%") || !cold.contains('+'), "{cold}");
    eprintln!("measured: differential flamegraph of instructions: {hot}; {cold}");
    let doc = r.json();
    let first = &doc["functions"][0];
    assert_eq!(first["function"], "hot_loop", "{}", doc["functions"]);
    let (before, now) = (
        first["baseline"]["own"].as_f64().unwrap(),
        first["current"]["own"].as_f64().unwrap(),
    );
    // 10,000 more iterations of a loop of a few instructions each.
    assert!(now - before > 30_000.0 && now / before > 1.4, "{first}");
    let cold = doc["functions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["function"] == "cold_loop");
    assert!(
        cold.is_none_or(|c| c["baseline"]["own"] == c["current"]["own"]),
        "{cold:?}"
    );
    // The table says it under its title.
    let r = gate(&[]);
    assert!(
        r.stdout
            .contains("Instructions by function, per run (callgrind)")
            && r.stdout.contains("hot_loop"),
        "{}",
        r.stdout
    );
    // So does the Markdown report.
    let r = gate(&["--format", "markdown"]);
    assert!(
        r.stdout
            .contains("| function | own before | own now | own change |")
            && r.stdout.contains("\n| hot_loop | "),
        "{}",
        r.stdout
    );
}

/// A/B loads both versions afresh each round, and which is loaded first alternates: a
/// version loaded second ran 3–8 % faster than the same check loaded first, so loading the
/// baseline first every round read an unchanged check as −4.7 % (interval 0.930–0.974).
/// Each worker notes its side as it imports the check; the rounds' loads go A B, B A, …
#[test]
fn ab_rounds_alternate_which_version_is_loaded_first() {
    let Some(py) = venv_python() else { return };
    let sb = Sandbox::new();
    let check = |side: &str| {
        format!(
            "import os\nwith open(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'loads.log'), 'a') as f:\n    f.write({side:?} + '\\n')\n{}",
            crate::gate_check::WORK
        )
    };
    setup(&sb, &[("work", "2000")]);
    sb.write("old/work.py", &check("A"));
    sb.write("checks/work.py", &check("B"));
    let r = sb.run(&[
        "gate",
        "work",
        "--against",
        "old",
        "--python",
        &py,
        "--max-time",
        "0",
    ]);
    assert!(r.code == 0 || r.code == 1, "{}{}", r.stdout, r.stderr);
    let log = std::fs::read_to_string(sb.file("loads.log")).unwrap();
    let loads: Vec<&str> = log.lines().collect();
    let rounds = 20;
    assert!(loads.len() >= 2 * rounds, "{log}");
    for (i, pair) in loads[..2 * rounds].chunks(2).enumerate() {
        let want = if i % 2 == 0 { ["A", "B"] } else { ["B", "A"] };
        assert_eq!(pair, want, "round {}: {log}", i + 1);
    }
}
