//! scripts/architecture.py, the check of ARCHITECTURE.md's import rules, reads Rust as the
//! compiler does: grouped, nested and multi-line `use` trees, `super::super`, paths written in
//! code and imports in test modules are all seen; comments and strings are not imports.

use std::path::Path;
use std::process::Command;

use crate::support::Sandbox;

fn script() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/architecture.py")
}

fn run(args: &[&str]) -> (i32, String) {
    let out = Command::new("python3")
        .arg(script())
        .args(args)
        .output()
        .expect("python3 runs scripts/architecture.py");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn the_tree_keeps_its_rules() {
    let (code, out) = run(&[]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn imports_the_line_reader_missed_are_caught() {
    let sb = Sandbox::new();
    let files: &[(&str, &str)] = &[
        (
            "lib.rs",
            "pub mod checks;\npub mod metrics;\npub mod profile;\npub mod pull;\npub mod ui;\npub mod gate;\nmod cmd;\n// The crate root names what the binary runs.\npub use cmd::main;\n",
        ),
        // With metrics' import below, a circle between two folders.
        (
            "checks/mod.rs",
            "pub struct Registry;\npub struct Runner;\nfn f() {\n    crate::metrics::g()\n}\n",
        ),
        ("pull/mod.rs", "pub mod fetch;\n"),
        ("pull/fetch.rs", "pub fn fetch() {}\n"),
        // A grouped import of one path.
        (
            "metrics/mod.rs",
            "// use crate::checks::Commented;\nconst S: &str = \"crate::checks::InAString\";\nuse crate::{checks::Registry};\n",
        ),
        ("profile/mod.rs", "pub mod legacy;\n"),
        ("cmd/mod.rs", "pub fn main() {}\n"),
        // Two levels up, then into a command's folder.
        ("profile/legacy/mod.rs", "use super::super::pull::fetch;\n"),
        // A multi-line grouped import.
        ("ui/mod.rs", "use crate::{\n    checks::Runner,\n};\n"),
        // A circle between two files of a folder, one side written in code.
        ("gate/mod.rs", "mod a;\nmod b;\n"),
        ("gate/a.rs", "use super::b::B;\npub struct A;\n"),
        (
            "gate/b.rs",
            "pub struct B;\nfn f() -> super::a::A { super::a::A }\n",
        ),
        // Below the tests' attribute still counts.
        (
            "profile/names.rs",
            "pub fn n() {}\n#[cfg(test)]\nmod tests {\n    use crate::ui;\n}\n",
        ),
    ];
    for (path, text) in files {
        sb.write(&format!("src/{path}"), text);
    }
    let (code, out) = run(&["--src", sb.file("src").to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    let mut lines: Vec<&str> = out.lines().collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            "src/: an import circle checks -> metrics -> checks",
            "src/gate/: an import circle a -> b -> a",
            "src/metrics/mod.rs:3: uses crate::checks (metrics is below checks)",
            "src/profile/legacy/mod.rs:1: uses crate::pull::fetch (profile imports nothing of the commands)",
            "src/profile/names.rs:4: uses crate::ui (profile imports nothing of the commands)",
            "src/ui/mod.rs:2: uses crate::checks (ui reads files through pprof and render)",
        ],
        "{out}"
    );
}

/// ARCHITECTURE.md's table of what each folder owns names every folder and top-level file of
/// src/ and every crate of the workspace, so a new one cannot be left off the map.
#[test]
fn the_map_names_every_folder_file_and_crate() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let map = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let mut missing = Vec::new();
    for e in std::fs::read_dir(root.join("src")).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let shown = if e.path().is_dir() {
            format!("`{name}/`")
        } else {
            format!("`{name}`")
        };
        if !map.contains(&shown) {
            missing.push(shown);
        }
    }
    for e in std::fs::read_dir(root.join("crates")).unwrap().flatten() {
        let shown = format!("`crates/{}/`", e.file_name().to_string_lossy());
        if !map.contains(&shown) {
            missing.push(shown);
        }
    }
    assert!(
        missing.is_empty(),
        "not on ARCHITECTURE.md's map: {missing:?}"
    );
}
