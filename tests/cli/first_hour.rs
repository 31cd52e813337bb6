//! A newcomer's first hour: the README's examples run as written from a fresh copy of the
//! repository, and every dead end says what is missing and how to get past it.

use std::path::Path;

use crate::support::Sandbox;

/// A fresh copy of what a clone holds for the README's commands: conf.d/ and checks/.
fn fresh_copy() -> Sandbox {
    let sb = Sandbox::new();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for dir in ["conf.d", "checks"] {
        for e in std::fs::read_dir(root.join(dir)).unwrap().flatten() {
            let to = sb.path().join(dir).join(e.file_name());
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(e.path(), &to).unwrap();
        }
    }
    sb
}

/// The README's `$ agentprof …` examples, each after the ```sh block just before it (its
/// setup), run in a fresh copy: each exits 0.
#[test]
fn the_readmes_examples_run_as_written_in_a_fresh_copy() {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let sb = fresh_copy();
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_agentprof"))
        .parent()
        .unwrap()
        .to_path_buf();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut ran = Vec::new();
    let mut setup: Option<String> = None;
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line == "```sh" {
            setup = Some(
                lines
                    .by_ref()
                    .take_while(|l| *l != "```")
                    .collect::<Vec<_>>()
                    .join("\n"),
            );
            continue;
        }
        if line == "```text" {
            let Some(command) = lines.next().and_then(|l| l.strip_prefix("$ ")) else {
                continue;
            };
            if !command.starts_with("agentprof ") {
                continue;
            }
            // A setup block directly before the example (only blank text between) runs first.
            let script = match setup.take().filter(|s| !s.contains("agentprof ")) {
                Some(s) => format!("{s}\n{command}"),
                None => command.to_string(),
            };
            let out = std::process::Command::new("sh")
                .args(["-ec", &script])
                .current_dir(sb.path())
                .env("PATH", &path)
                .env("NO_COLOR", "1")
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "README example `{script}` failed in a fresh copy: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            ran.push(command.to_string());
            continue;
        }
        if !line.trim().is_empty() && !line.starts_with("```") {
            setup = setup.filter(|_| false);
        }
    }
    assert!(
        ran.iter().any(|c| c.starts_with("agentprof check process")),
        "{ran:?}"
    );
    assert!(ran.iter().any(|c| c == "agentprof check disk"), "{ran:?}");
}

#[test]
fn a_configured_check_without_its_code_says_what_is_missing() {
    let sb = Sandbox::new();
    sb.write(
        "conf.d/etcd.d/conf.yaml",
        "instances:\n  - prometheus_url: http://127.0.0.1:1/metrics\n",
    );
    sb.write("conf.d/foo.d/conf.yaml", "instances:\n  - {}\n");
    sb.write("conf.d/bar.d/conf.yaml.example", "instances:\n  - {}\n");
    // An interpreter that has no integration installed: plain python3, isolated.
    for (name, says) in [
        (
            "etcd",
            "conf.d/etcd.d/conf.yaml: configures `etcd`, but no check named `etcd` was found",
        ),
        ("foo", "conf.d/foo.d/conf.yaml: configures `foo`"),
        (
            "bar",
            "conf.d/bar.d/conf.yaml.example: is only an example (copy it to conf.d/bar.d/conf.yaml",
        ),
    ] {
        let r = sb.run(&["check", name]);
        assert_eq!(r.code, 2, "{name}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{name}: {}", r.stderr);
        assert!(
            r.stderr.contains("--python VENV/bin/python"),
            "{}",
            r.stderr
        );
        assert!(!r.stderr.contains("did you mean"), "{}", r.stderr);
    }
    // A built-in without configuration whose default instance cannot run: the file to
    // write, its example, and `agentprof init`.
    let r = sb.run(&["check", "process"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    for needle in [
        "conf.d/process.yaml: does not exist",
        "name: required",
        "conf.d/process.yaml.example",
        "agentprof init",
    ] {
        assert!(r.stderr.contains(needle), "{needle}: {}", r.stderr);
    }
}

/// Outside a clone: where agentprof looked, and `agentprof init` bringing the shipped
/// examples and plugins (the http_check plugin then runs as in a clone).
#[test]
fn outside_a_clone_init_writes_what_agentprof_ships() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_agentprof"))
            .args(args)
            .current_dir(dir.path())
            .env("NO_COLOR", "1")
            .env_remove("AGENTPROF_CONFIG")
            .output()
            .unwrap()
    };
    let text = |o: &std::process::Output| {
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    };
    let list = run(&["list"]);
    let shown = text(&list);
    assert!(
        shown.contains("conf.d: conf.d (does not exist)") && shown.contains("agentprof init"),
        "{shown}"
    );
    let unknown = run(&["check", "http_check"]);
    assert_eq!(unknown.status.code(), Some(2));
    let shown = text(&unknown);
    assert!(
        shown.contains("conf.d (does not exist), plugins in /")
            && shown.contains("`agentprof init` writes"),
        "{shown}"
    );

    let init = run(&["init"]);
    assert!(init.status.success(), "{}", text(&init));
    for f in [
        "conf.d/http_check.yaml.example",
        "checks/http_check.py",
        "checks/file_age.sh",
        "agentprof.yaml.example",
    ] {
        assert!(dir.path().join(f).is_file(), "{f}");
    }
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(dir.path().join("checks/file_age.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0o111);
    // Again: nothing to write; an edited file is kept unless --force.
    std::fs::write(dir.path().join("checks/http_check.py"), "# mine\n").unwrap();
    let again = run(&["init"]);
    let shown = text(&again);
    assert!(
        shown.contains("0 written, 17 already there") && shown.contains("kept 1 file"),
        "{shown}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("checks/http_check.py")).unwrap(),
        "# mine\n"
    );
    let forced = run(&["init", "--force"]);
    assert!(text(&forced).contains("1 written"), "{}", text(&forced));
}
