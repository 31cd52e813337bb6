//! The gate's timing verdicts, in a test binary of their own: cargo runs test binaries one
//! after another, so no other test loads the machine beside these runs. (Inside the CLI
//! suite, a baseline timed while nothing else ran and a gate timed beside other tests are not
//! the same machine: an unchanged check was once called 44% slower there.)
#![allow(clippy::unwrap_used)]

#[path = "cli/support.rs"]
#[allow(dead_code)]
mod support;

#[path = "cli/gate_check.rs"]
#[allow(dead_code)]
mod gate_check;

use gate_check::{gate, setup};
use support::{Sandbox, venv_python};

#[test]
fn unchanged_passes_slowdowns_fail_with_the_figure_and_how_sure() {
    let Some(py) = venv_python() else { return };
    let sb = Sandbox::new();
    setup(&sb, &[]);
    let r = gate(&sb, &py, &["--update-baseline"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // The unchanged check, at the default 10% threshold: the machine's speed may drift
    // between the baseline and this run; the gate divides by it.
    let r = gate(&sb, &py, &[]);
    assert_eq!(r.code, 0, "unchanged:\n{}", r.stdout);
    // Never a regression; CANNOT TELL when the noise between processes hid 10%.
    assert!(
        r.stdout.starts_with("agentprof gate work: no regression")
            || r.stdout.starts_with("agentprof gate work: CANNOT TELL"),
        "{}",
        r.stdout
    );
    // The slowed check gets 20 runs: 10 against 10 at p < 0.01 on a loaded 2-core machine
    // once called a +84 % slowdown (95 % CI 1.22–2.04) not significant (p = 0.0108).
    for work in ["40000", "80000"] {
        setup(&sb, &[("work", work)]);
        let r = gate(&sb, &py, &["--times", "20"]);
        assert_eq!(r.code, 1, "{work}:\n{}", r.stdout);
        let line = r
            .stdout
            .lines()
            .find(|l| l.trim_start().starts_with("CPU time"))
            .unwrap();
        assert!(line.contains("for the machine's speed"), "{line}");
        assert!(
            line.contains("REGRESSION") && line.contains("95% CI"),
            "{line}"
        );
    }
}

/// `--against`: the baseline version in another directory or at a git revision, run in
/// interleaved rounds with this one. The same check passes (no regression); one doing 10 %
/// more work per run is caught on the paired CPU ratios.
#[test]
fn against_a_directory_and_a_revision_catches_ten_percent() {
    let Some(py) = venv_python() else { return };
    let sb = Sandbox::new();
    // About 20 ms of CPU a run: a run of a few ms was mostly the machine's noise (12–26 %
    // on a 2-core CI VM, hiding the 10 % this test asks the gate to catch).
    setup(&sb, &[("work", "300000")]);
    // The baseline version: the same file in old/.
    std::fs::create_dir_all(sb.file("old")).unwrap();
    std::fs::copy(sb.file("checks/work.py"), sb.file("old/work.py")).unwrap();
    let ab = |against: &str| gate_check::gate_against(&sb, &py, against, "json");
    let r = ab("old");
    assert_eq!(r.code, 0, "unchanged:\n{}{}", r.stdout, r.stderr);
    let doc = r.json();
    assert_eq!(doc["mode"], "paired", "{doc}");
    assert_ne!(doc["outcome"], "regression", "{doc}");
    // 10 % more iterations in this tree's version.
    let slower = std::fs::read_to_string(sb.file("checks/work.py"))
        .unwrap()
        .replace(
            "for i in range(int(instance.get(\"work\", 20000))):",
            "for i in range(int(instance.get(\"work\", 20000)) * 11 // 10):",
        );
    sb.write("checks/work.py", &slower);
    // On a VM whose neighbours load the host, the gate may rightly say CANNOT TELL (the noise
    // it measured hides 10 %); it is asked again, up to five times. It must never call the
    // slower version no regression, and must catch it once the machine lets it.
    let caught = |against: &str| {
        let mut said = Vec::new();
        for _ in 0..5 {
            let r = ab(against);
            let doc = r.json();
            assert_ne!(
                doc["outcome"], "pass",
                "10% slower called no regression:\n{doc}"
            );
            if r.code == 1 {
                return r;
            }
            said.push(doc["summary"].to_string());
        }
        panic!("10% slower not caught in five tries: {said:#?}");
    };
    let r = caught("old");
    assert_eq!(r.code, 1, "10% slower:\n{}{}", r.stdout, r.stderr);
    let doc = r.json();
    let cpu = &doc["findings"][0];
    assert_eq!(cpu["figure"], "CPU time (median)", "{doc}");
    let change: f64 = cpu["change"]
        .as_str()
        .unwrap()
        .trim_end_matches('%')
        .parse()
        .unwrap();
    // The point estimate is one draw of a noisy median: a loaded CI VM once read +21.6 % for
    // this 10 % (95 % CI 1.074–1.406). What the gate must get right is its interval: above 1
    // (a regression) and, within five points of slack each side, holding the true 1.10.
    assert!(change > 0.0, "{cpu}");
    let detail = cpu["detail"].as_str().unwrap();
    let (lo, hi) = ci_of(detail).unwrap_or_else(|| panic!("no 95% CI in {detail}"));
    assert!(lo > 1.0 && lo <= 1.15 && hi >= 1.05, "{cpu}");
    eprintln!(
        "measured: A/B, 10% more work: CPU {change:+.1}% ({})",
        cpu["detail"]
    );
    // The same against a git revision of the checks directory.
    sb.git(&["init", "-q"]);
    std::fs::copy(sb.file("old/work.py"), sb.file("checks/work.py")).unwrap();
    sb.git(&["add", "checks/work.py"]);
    sb.git(&["commit", "-qm", "base"]);
    sb.write("checks/work.py", &slower);
    let r = caught("HEAD");
    assert_eq!(r.code, 1, "against HEAD:\n{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("HEAD ("), "{}", r.stderr);
    let r = ab("no-such-rev");
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--against"), "{}", r.stderr);
}

/// The bounds of "95% CI 1.074–1.406" in a finding's detail.
fn ci_of(detail: &str) -> Option<(f64, f64)> {
    let rest = detail.split("95% CI ").nth(1)?;
    let (lo, rest) = rest.split_once('–')?;
    let hi: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    Some((lo.trim().parse().ok()?, hi.parse().ok()?))
}
