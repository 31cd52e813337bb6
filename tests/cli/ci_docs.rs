//! docs/ci.md's GitHub Actions and GitLab CI jobs, run step by step as their runners run
//! them, on a scratch repository whose pull request makes its check four times slower: the
//! A/B step and the instruction-count step fail the job with their reports written (JUnit,
//! the job summary's Markdown). The steps that install what this machine has already
//! (actions, setup-python, pip, cargo install, apt-get) are the only ones not run; the test
//! says which it left out, and fails if a step it runs is not one the docs hold.

use std::path::Path;
use std::process::Command;

use crate::gate_check::WORK;
use crate::python::venv_python;
use crate::support::Sandbox;

/// The YAML block under the docs' `## {heading}`.
fn job(heading: &str) -> serde_yaml_ng::Value {
    let docs =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/ci.md")).unwrap();
    let at = docs
        .find(&format!("\n## {heading}\n"))
        .unwrap_or_else(|| panic!("docs/ci.md has no `## {heading}`"));
    let rest = &docs[at..];
    let start = rest.find("```yaml\n").expect("a yaml block") + "```yaml\n".len();
    let end = start + rest[start..].find("```").expect("the block's end");
    serde_yaml_ng::from_str(&rest[start..end]).expect("the docs' YAML parses")
}

/// Whether a step only installs what this machine has (the test's venv, valgrind, this
/// build of agentprof): left out, and said.
fn installs(step: &str) -> bool {
    ["pip install", "cargo install", "apt-get", "python3 -m venv"]
        .iter()
        .any(|w| step.contains(w))
        && !step.contains("agentprof gate")
}

/// A scratch repository as a runner checks it out: `main` with the check and its
/// instruction-count baseline committed (made as docs/ci.md says), cloned from a `file://`
/// origin, on a pull request's branch whose check does four times the work.
fn repository(sb: &Sandbox, py: &str) -> std::path::PathBuf {
    let git = crate::support::git_in;
    let upstream = sb.file("upstream");
    std::fs::create_dir_all(upstream.join("checks")).unwrap();
    std::fs::create_dir_all(upstream.join("conf.d")).unwrap();
    std::fs::write(upstream.join("checks/my_check.py"), WORK).unwrap();
    std::fs::write(
        upstream.join("conf.d/my_check.yaml"),
        "instances:\n  - {work: 20000}\n",
    )
    .unwrap();
    git(&upstream, &["init", "-q"]);
    // The committed baseline of instruction counts, as docs/ci.md records it.
    let r = Command::new(crate::support::server_bin())
        .args([
            "gate",
            "my_check",
            "--baseline",
            "perf/my_check.instructions.json",
            "--measure",
            "instructions",
            "--update-baseline",
            "--python",
            py,
        ])
        .current_dir(&upstream)
        .env_remove("AGENTPROF_CONFIG")
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    git(&upstream, &["add", "."]);
    git(&upstream, &["commit", "-qm", "my_check"]);
    let work = sb.file("work");
    let url = format!("file://{}", upstream.display());
    git(sb.path(), &["clone", "-q", &url, "work"]);
    git(&work, &["checkout", "-qb", "slower"]);
    let slower = WORK.replace(
        "range(int(instance.get(\"work\", 20000)))",
        "range(4 * int(instance.get(\"work\", 20000)))",
    );
    assert_ne!(slower, WORK);
    std::fs::write(work.join("checks/my_check.py"), slower).unwrap();
    git(&work, &["commit", "-qam", "four times the work"]);
    work
}

/// Runs `script` as a runner does (`bash -e`), in `dir`, with agentprof and the test venv's
/// python first on PATH and `env` set; its exit status and output.
fn step(dir: &Path, py: &str, script: &str, env: &[(&str, String)]) -> (i32, String) {
    let bin = crate::support::server_bin();
    let path = format!(
        "{}:{}:{}",
        bin.parent().unwrap().display(),
        Path::new(py).parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("bash")
        .args(["-e", "-c", script])
        .current_dir(dir)
        .env("PATH", path)
        .env("NO_COLOR", "1")
        .env_remove("AGENTPROF_CONFIG")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .expect("bash");
    (
        out.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

#[test]
fn the_ci_jobs_of_the_docs_run_and_fail_a_slower_pull_request() {
    let Some(py) = venv_python() else { return };
    if !crate::gate::require_valgrind() {
        return;
    }
    let sb = Sandbox::new();
    let work = repository(&sb, &py);
    let mut left_out = Vec::new();

    // GitHub Actions: each `run:` with its expressions as GitHub fills them in.
    let gh = job("GitHub Actions");
    let steps = gh["jobs"]["gate"]["steps"].as_sequence().expect("steps");
    let summary = sb.file("summary.md");
    let mut ran = 0;
    for s in steps {
        let Some(run) = s["run"].as_str() else {
            left_out.push(format!("uses: {}", s["uses"].as_str().unwrap_or("?")));
            continue;
        };
        let mut script = run
            .replace("${{ matrix.check }}", "my_check")
            .replace("${{ github.base_ref }}", "main");
        // The instruction step installs valgrind first (here .ci/run has).
        if let Some((install, rest)) = script.split_once("&&")
            && installs(install)
        {
            left_out.push(install.trim().to_string());
            script = rest.trim().to_string();
        }
        if installs(&script) {
            left_out.push(script.trim().to_string());
            continue;
        }
        assert!(!script.contains("${{"), "an expression left: {script}");
        let (code, out) = step(
            &work,
            &py,
            &script,
            &[("GITHUB_STEP_SUMMARY", summary.display().to_string())],
        );
        ran += 1;
        if script.starts_with("git fetch") {
            assert_eq!(code, 0, "{script}: {out}");
        } else {
            // The pull request's four times the work fails the job, on both measures.
            assert!(script.starts_with("agentprof gate"), "{script}");
            assert_eq!(code, 1, "{script}: {out}");
        }
    }
    assert_eq!(ran, 3, "git fetch and the two gate steps");
    let junit = std::fs::read_to_string(work.join("gate-my_check.xml")).expect("the JUnit report");
    assert!(
        junit.contains("<testsuite") && junit.contains("<failure"),
        "{junit}"
    );
    let md = std::fs::read_to_string(&summary).expect("the job summary");
    assert!(md.contains("REGRESSION"), "{md}");

    // GitLab CI: its script lines, with the variables GitLab sets for a merge request.
    let gl = job("GitLab CI");
    let script = gl["perf-gate"]["script"].as_sequence().expect("script");
    let vars = [
        ("CHECK", "my_check".to_string()),
        ("CI_MERGE_REQUEST_TARGET_BRANCH_NAME", "main".to_string()),
    ];
    let mut ran = 0;
    for line in script.iter().map(|l| l.as_str().expect("a script line")) {
        if installs(line) {
            left_out.push(line.to_string());
            continue;
        }
        // The venv the job makes at /venv is the test's.
        let line = line.replace("/venv/bin/python", &py);
        let (code, out) = step(&work, &py, &line, &vars);
        ran += 1;
        if line.starts_with("git fetch") {
            assert_eq!(code, 0, "{line}: {out}");
        } else {
            assert_eq!(code, 1, "{line}: {out}");
        }
    }
    assert_eq!(ran, 2, "git fetch and the A/B gate");
    let junit = std::fs::read_to_string(work.join("gate.xml")).expect("GitLab's junit report");
    assert!(junit.contains("<failure"), "{junit}");
    eprintln!("measured: docs/ci.md's steps run; left out as installs: {left_out:?}");
}
