//! completions/ and man/ are generated from the CLI definition; this fails when they are stale.
//! Regenerate with `scripts/generate.sh`.

use agentprof::cli::Shell;
use agentprof::{completion_file_name, completion_script, man_pages};

fn repo(rel: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

#[test]
fn completions_are_current() {
    for shell in [
        Shell::Bash,
        Shell::Zsh,
        Shell::Fish,
        Shell::Elvish,
        Shell::Powershell,
    ] {
        let path = repo("completions").join(completion_file_name(shell));
        let committed = std::fs::read(&path).unwrap_or_default();
        assert!(
            committed == completion_script(shell),
            "{} is stale: run scripts/generate.sh",
            path.display()
        );
    }
}

#[test]
fn man_pages_are_current() {
    let pages = man_pages().unwrap();
    assert!(pages.iter().any(|(n, _)| n == "agentprof.1"));
    assert!(pages.iter().any(|(n, _)| n == "agentprof-check.1"));
    let mut committed: Vec<String> = std::fs::read_dir(repo("man"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    committed.sort();
    let mut generated: Vec<String> = pages.iter().map(|(n, _)| n.clone()).collect();
    generated.sort();
    assert_eq!(
        committed, generated,
        "man/ differs: run scripts/generate.sh"
    );
    for (name, bytes) in pages {
        let on_disk = std::fs::read(repo("man").join(&name)).unwrap();
        assert!(
            on_disk == bytes,
            "man/{name} is stale: run scripts/generate.sh"
        );
    }
}

#[test]
fn the_binary_writes_the_same_pages() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_agentprof"))
        .args(["man", "--out"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    for (name, bytes) in man_pages().unwrap() {
        assert_eq!(std::fs::read(dir.path().join(name)).unwrap(), bytes);
    }
    let bash = std::process::Command::new(env!("CARGO_BIN_EXE_agentprof"))
        .args(["completions", "bash"])
        .output()
        .unwrap();
    assert_eq!(bash.stdout, completion_script(Shell::Bash));
}

/// The binary builds a subcommand's arguments only when it enters it; what it generates and
/// what `help` finds must still be the whole tree.
#[test]
fn the_binary_generates_and_helps_with_every_argument() {
    let sb = crate::support::Sandbox::new();
    let r = sb.run(&["completions", "bash"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let committed = std::fs::read_to_string(repo("completions/agentprof.bash")).unwrap();
    assert!(
        r.stdout == committed,
        "`agentprof completions bash` differs from completions/"
    );
    let nested = sb.run(&["help", "k8s", "targets"]);
    assert_eq!(nested.code, 0, "{}", nested.stderr);
    assert!(
        nested
            .stdout
            .starts_with("Print once every pod on the node"),
        "{}",
        nested.stdout
    );
    let direct = sb.run(&["k8s", "targets", "--help"]);
    assert_eq!(nested.stdout, direct.stdout);
    let check = sb.run(&["check", "--help"]);
    assert!(
        check.stdout.starts_with("Run one check once"),
        "{}",
        check.stdout
    );
    assert!(check.stdout.contains("--profile"), "{}", check.stdout);
}
