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
