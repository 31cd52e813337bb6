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
    // src/: the commands' crate.
    let files: &[(&str, &str)] = &[
        (
            "src/lib.rs",
            "pub mod checks;\npub mod pull;\npub mod receive;\npub mod ui;\npub mod gate;\nmod cmd;\n// The crate root names what the binary runs.\npub use cmd::main;\n",
        ),
        // With pull's import below, a circle between two folders.
        (
            "src/checks/mod.rs",
            "pub struct Registry;\npub struct Runner;\nfn f() {\n    crate::pull::g()\n}\n",
        ),
        (
            "src/pull/mod.rs",
            "pub mod fetch;\nuse crate::checks::Registry;\npub fn g() {}\n",
        ),
        // Two levels up, into a folder it must not use; a grouped import of one path.
        (
            "src/pull/fetch.rs",
            "// use crate::k8s::Commented;\nconst S: &str = \"crate::k8s::InAString\";\nuse super::super::{receive::Form};\npub fn fetch() {}\n",
        ),
        ("src/cmd/mod.rs", "pub fn main() {}\n"),
        ("src/receive/mod.rs", "pub struct Form;\n"),
        // A multi-line grouped import.
        ("src/ui/mod.rs", "use crate::{\n    checks::Runner,\n};\n"),
        // A circle between two files of a folder, one side written in code.
        ("src/gate/mod.rs", "mod a;\nmod b;\n"),
        ("src/gate/a.rs", "use super::b::B;\npub struct A;\n"),
        (
            "src/gate/b.rs",
            "pub struct B;\nfn f() -> super::a::A { super::a::A }\n",
        ),
        // crates/checks: the check runner's own rules.
        (
            "crates/checks/src/lib.rs",
            "mod runner;\npub mod metrics;\npub mod profile;\npub mod config;\n",
        ),
        (
            "crates/checks/src/runner.rs",
            "pub struct Runner;\nfn f() {\n    crate::metrics::g()\n}\n",
        ),
        // A grouped import of one path: a circle with the runner.
        (
            "crates/checks/src/metrics/mod.rs",
            "// use crate::runner::Commented;\nuse crate::{runner::Runner};\npub fn g() {}\n",
        ),
        ("crates/checks/src/profile/mod.rs", "pub mod names;\n"),
        // Below the tests' attribute still counts.
        (
            "crates/checks/src/profile/names.rs",
            "pub fn n() {}\n#[cfg(test)]\nmod tests {\n    use super::super::super::runner::Runner;\n}\n",
        ),
        (
            "crates/checks/src/config/mod.rs",
            "fn f() { crate::profile::names::n() }\n",
        ),
    ];
    for (path, text) in files {
        sb.write(path, text);
    }
    let (code, out) = run(&[
        "--src",
        sb.file("src").to_str().unwrap(),
        "--crates",
        sb.file("crates").to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{out}");
    let mut lines: Vec<&str> = out.lines().collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            "crates/checks/src/: an import circle metrics -> runner -> metrics",
            "crates/checks/src/config/mod.rs:1: uses crate::profile::names (config reads files; it imports no domain folder)",
            "crates/checks/src/metrics/mod.rs:2: uses crate::runner (metrics is below the runner)",
            "crates/checks/src/profile/names.rs:4: uses crate::runner (run records are below the runner)",
            "src/: an import circle checks -> pull -> checks",
            "src/gate/: an import circle a -> b -> a",
            "src/pull/fetch.rs:3: uses crate::receive (pull never imports k8s or receive)",
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

/// The crates of the workspace are read too: two files of a crate that import each other are
/// a broken rule, named with the crate — also when one names the other's item through the
/// crate root's `pub use`.
#[test]
fn a_circle_inside_a_crate_is_caught() {
    let sb = Sandbox::new();
    sb.write("src/lib.rs", "pub mod a;\n");
    sb.write("src/a.rs", "pub fn a() {}\n");
    sb.write(
        "crates/wire/src/lib.rs",
        "mod error;\nmod json;\nmod proto;\npub use error::{Error as WireError, describe};\n",
    );
    // A circle through the crate root's re-export: `crate::WireError` is error.rs's.
    sb.write(
        "crates/wire/src/error.rs",
        "pub struct Error;\npub fn describe() -> String {\n    crate::json::b64()\n}\n",
    );
    sb.write(
        "crates/wire/src/json.rs",
        "use crate::WireError;\nuse crate::proto::Message;\npub fn b64() -> String {\n    String::new()\n}\n",
    );
    sb.write(
        "crates/wire/src/proto.rs",
        "pub struct Message;\nfn f() {\n    crate::json::b64()\n}\n",
    );
    let src = sb.file("src");
    let crates = sb.file("crates");
    let (code, out) = run(&[
        "--src",
        src.to_str().unwrap(),
        "--crates",
        crates.to_str().unwrap(),
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("crates/wire/src/: an import circle json -> proto -> json"),
        "{out}"
    );
    assert!(
        out.contains("crates/wire/src/: an import circle error -> json -> error"),
        "{out}"
    );
}

/// scripts/code_shape.py counts a file's code wherever its test module stands: a function
/// after `mod tests` is code, one inside it is not.
#[test]
fn code_after_a_test_module_is_counted() {
    let sb = Sandbox::new();
    let body = |name: &str| {
        let mut f = format!("fn {name}() {{\n");
        for i in 0..90 {
            f.push_str(&format!("    let _x{i} = {i};\n"));
        }
        f.push_str("}\n");
        f
    };
    sb.write(
        "src/lib.rs",
        &format!(
            "{}#[cfg(test)]\nmod tests {{\n    #[test]\n    fn t() {{}}\n}}\n\n{}",
            body("before"),
            body("after")
        ),
    );
    let out = Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/code_shape.py"))
        .args(["--json", "--root", sb.path().to_str().unwrap()])
        .output()
        .expect("python3 runs scripts/code_shape.py");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["functions_over_limit"], 2, "{doc}");
    // 2 × 92 lines of code; the 5 lines of the test module are not code.
    assert_eq!(doc["largest"][0]["code_lines"], 185, "{doc}");
}
