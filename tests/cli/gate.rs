//! `agentprof gate` on a Python check whose cost its configuration controls: the unchanged
//! check passes, slowdowns, a leak and extra calls fail, and the reports parse.

use crate::python::venv_python;
use crate::support::Sandbox;

const WORK: &str = r#"
from datadog_checks.base import AgentCheck

KEPT = []

class WorkCheck(AgentCheck):
    def check(self, instance):
        total = 0
        for i in range(int(instance.get("work", 20000))):
            total += i * i
        for _ in range(int(instance.get("extra_calls", 0))):
            self._noop()
        KEPT.append(bytearray(int(instance.get("keep_kib", 0)) * 1024))
        self.gauge("work.total", total)
        if not instance.get("drop_metric"):
            self.gauge("work.extra", 1)

    def _noop(self):
        return 1
"#;

fn setup(sb: &Sandbox, instance: &str) {
    sb.write("checks/work.py", WORK);
    sb.write("conf.d/work.yaml", &format!("instances:\n  - {instance}\n"));
}

fn gate(sb: &Sandbox, py: &str, extra: &[&str]) -> crate::support::Run {
    let mut args = vec!["gate", "work", "--baseline", "base.json", "--python", py];
    args.extend_from_slice(extra);
    sb.run(&args)
}

#[test]
fn unchanged_passes_slowdowns_fail_with_the_figure_and_how_sure() {
    let Some(py) = venv_python() else { return };
    let _cpu = crate::support::cpu_exclusive();
    let sb = Sandbox::new();
    setup(&sb, "work: 20000");
    let r = gate(&sb, &py, &["--update-baseline"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // The unchanged check, at the default 10% threshold: the machine's speed may drift
    // between the baseline and this run; the gate divides by it.
    let r = gate(&sb, &py, &[]);
    assert_eq!(r.code, 0, "unchanged:\n{}", r.stdout);
    assert!(r.stdout.contains("no regression"), "{}", r.stdout);
    for work in [40000, 80000] {
        setup(&sb, &format!("work: {work}"));
        let r = gate(&sb, &py, &[]);
        assert_eq!(r.code, 1, "{work}:\n{}", r.stdout);
        let line = r
            .stdout
            .lines()
            .find(|l| l.trim_start().starts_with("wall time"))
            .unwrap();
        assert!(line.contains("for the machine's speed"), "{line}");
        assert!(
            line.contains("REGRESSION") && line.contains("95% CI"),
            "{line}"
        );
    }
}

/// The figures that do not drift: timings are taken out of the verdict (`--threshold 1000`)
/// so only memory, call counts and metrics can fail it.
#[test]
fn a_leak_and_extra_calls_fail_even_when_timings_pass() {
    let Some(py) = venv_python() else { return };
    let _cpu = crate::support::cpu_exclusive();
    let sb = Sandbox::new();
    setup(&sb, "work: 20000");
    assert_eq!(gate(&sb, &py, &["--update-baseline"]).code, 0);
    let quiet = ["--threshold", "1000"];
    setup(&sb, "{work: 20000, keep_kib: 2048}");
    let r = gate(&sb, &py, &["--format", "json", quiet[0], quiet[1]]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    let doc = r.json();
    let rss = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["figure"] == "RSS growth per run")
        .unwrap();
    assert_eq!(rss["status"], "regression", "{rss}");
    // 300 more calls per run (+4%): inside the timing noise, caught by the call count.
    setup(&sb, "{work: 20000, extra_calls: 300}");
    let r = gate(&sb, &py, &["--format", "json", quiet[0], quiet[1]]);
    assert_eq!(r.code, 1, "{}", r.stdout);
    let doc = r.json();
    let calls = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["figure"] == "Python calls per run")
        .unwrap();
    assert_eq!(calls["status"], "regression", "{calls}");
    // A metric that disappeared warns, and fails with --strict.
    setup(&sb, "{work: 20000, drop_metric: true}");
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
    setup(&sb, "work: 20000");
    assert_eq!(gate(&sb, &py, &["--update-baseline"]).code, 0);
    setup(&sb, "work: 80000");
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
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(
        md.starts_with("### agentprof gate `work`")
            && md.contains("| wall time, for the machine's speed (median) |"),
        "{md}"
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
             print(suite.get('tests'), suite.get('failures'), ';'.join(fails))",
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
        out.contains("wall time, for the machine's speed (median)"),
        "{out}"
    );
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
