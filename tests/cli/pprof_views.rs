//! `agentprof top --focus/--ignore/--hide/--show`, `--peek` and `--list` against go tool
//! pprof's `-focus`, `-peek` and `-list`: the same text, byte for byte, on dd-trace-go uploads
//! and on a real Go program's heap profile whose sources are on disk.

use std::path::Path;
use std::process::Command;

use crate::support::{Sandbox, fixture, require_go};

/// go tool pprof's stdout in `dir`, or None when it refuses.
fn go_in(dir: &Path, args: &[&str]) -> (Option<String>, String) {
    let out = Command::new("go")
        .args(["tool", "pprof"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("go");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned()),
        stderr,
    )
}

/// agentprof in `dir`.
fn ours_in(dir: &Path, args: &[&str]) -> crate::support::Run {
    let out = Command::new(env!("CARGO_BIN_EXE_agentprof"))
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .output()
        .expect("agentprof");
    crate::support::Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Each pair (our flags, go's flags) on `file` in `dir`: the same text, or both refuse (then
/// ours exits 2 and says why on stderr, with go's warning or error).
fn same(dir: &Path, file: &Path, cases: &[(Vec<&str>, Vec<&str>)]) -> usize {
    let f = file.to_str().unwrap();
    let mut compared = 0;
    for (ours, theirs) in cases {
        let mut a = vec!["top"];
        a.extend_from_slice(ours);
        a.push(f);
        let mut g: Vec<&str> = theirs.clone();
        if !g
            .iter()
            .any(|x| x.starts_with("-peek") || x.starts_with("-list"))
        {
            g.insert(0, "-top");
        }
        g.push(f);
        let run = ours_in(dir, &a);
        match go_in(dir, &g) {
            (Some(text), stderr) => {
                assert_eq!(run.code, 0, "{a:?}: {}", run.stderr);
                assert_eq!(run.stdout, text, "agentprof {a:?} vs go tool pprof {g:?}");
                // go's warnings (an expression that matched nothing) are ours too.
                for w in stderr.lines().filter(|l| l.contains("matched no samples")) {
                    assert!(run.stderr.contains(w), "{a:?}: no {w:?} in {}", run.stderr);
                }
                compared += 1;
            }
            (None, stderr) => {
                assert_eq!(
                    run.code, 2,
                    "go refused {g:?} ({stderr}), agentprof: {}",
                    run.stdout
                );
                let said = stderr.trim().lines().last().unwrap_or("").to_string();
                if said.starts_with("no matches found") {
                    assert!(run.stderr.contains(&said), "{a:?}: {}", run.stderr);
                }
            }
        }
    }
    compared
}

fn v<'a>(s: &[&'a str]) -> Vec<&'a str> {
    s.to_vec()
}

#[test]
fn filters_peek_and_list_print_what_go_tool_pprof_prints_on_uploads() {
    if !require_go() {
        return;
    }
    let sb = Sandbox::new();
    let mut compared = 0;
    for name in [
        "cpu.pprof",
        "delta-heap.pprof",
        "delta-mutex.pprof",
        "goroutines.pprof",
    ] {
        let file = fixture(name);
        let cases = vec![
            (v(&["--focus", "main"]), v(&["-focus=main"])),
            (v(&["--ignore", "runtime"]), v(&["-ignore=runtime"])),
            (v(&["--hide", "runtime"]), v(&["-hide=runtime"])),
            (v(&["--show", "main|sync"]), v(&["-show=main|sync"])),
            // File names and binaries match as well as function names.
            (v(&["--focus", "proc\\.go"]), v(&["-focus=proc\\.go"])),
            (
                v(&["--focus", "fib|sync", "--ignore", "gc", "--cum"]),
                v(&["-focus=fib|sync", "-ignore=gc", "-cum"]),
            ),
            (
                v(&["--focus", "nothing-matches-this"]),
                v(&["-focus=nothing-matches-this"]),
            ),
            (v(&["--peek", "main\\."]), v(&["-peek=main\\."])),
            (
                v(&["--peek", "runtime\\.(gc|mallocgc)"]),
                v(&["-peek=runtime\\.(gc|mallocgc)"]),
            ),
            (
                v(&["--hide", "runtime", "--peek", "."]),
                v(&["-hide=runtime", "-peek=."]),
            ),
            (
                v(&["--peek", "no-such-function"]),
                v(&["-peek=no-such-function"]),
            ),
            (v(&["--list", "main\\."]), v(&["-list=main\\."])),
            // The Go runtime's sources where this Go keeps them, or go's error where not.
            (
                v(&["--list", "runtime.mallocgc$"]),
                v(&["-list=runtime.mallocgc$"]),
            ),
            (
                v(&[
                    "--focus",
                    "main",
                    "--list",
                    "runtime\\.(futex|gcBgMarkWorker)$",
                ]),
                v(&["-focus=main", "-list=runtime\\.(futex|gcBgMarkWorker)$"]),
            ),
        ];
        compared += same(sb.path(), &file, &cases);
    }
    assert!(compared >= 40, "compared {compared}");
    // A bad expression names its flag.
    let r = sb.run(&[
        "top",
        "--focus",
        "(",
        fixture("cpu.pprof").to_str().unwrap(),
    ]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("--focus") && r.stderr.contains("unclosed group"),
        "{}",
        r.stderr
    );
}

const PROGRAM: &str = r#"package main

import (
	"os"
	"runtime"
	"runtime/pprof"
)

var sink [][]byte

func small(n int) {
	for i := 0; i < n; i++ {
		sink = append(sink, make([]byte, 64))
	}
}

func large(n int) {
	for i := 0; i < n; i++ {
		sink = append(sink, make([]byte, 4096))
		small(2)
	}
}

func main() {
	runtime.MemProfileRate = 1
	small(1000)
	large(300)
	runtime.GC()
	f, err := os.Create(os.Args[1])
	if err != nil {
		panic(err)
	}
	pprof.Lookup("allocs").WriteTo(f, 0)
	f.Close()
}
"#;

/// A real program's heap profile with its source found as go tool pprof finds it: by its
/// absolute path, under the working directory's own name once the program has moved, under
/// `--source-path` with `--trim-path`; and go's error where it cannot be found.
#[test]
fn list_finds_sources_as_go_tool_pprof_finds_them() {
    if !require_go() {
        return;
    }
    let sb = Sandbox::new();
    let src = sb.write("build/app/main.go", PROGRAM);
    sb.write("build/app/go.mod", "module app\n\ngo 1.22\n");
    let built = Command::new("go")
        .args(["build", "-o", "prog", "."])
        .current_dir(src.parent().unwrap())
        .env("GOFLAGS", "-buildvcs=false")
        .output()
        .expect("go build");
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let heap = sb.file("heap.pb.gz");
    let ran = Command::new(sb.file("build/app/prog"))
        .arg(&heap)
        .output()
        .unwrap();
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let indexes = ["alloc_space", "alloc_objects"];
    let mut compared = 0;
    for si in indexes {
        let s = format!("--sample-index={si}");
        let g = format!("-sample_index={si}");
        let cases = vec![
            (v(&["--list", "main\\.", &s]), v(&["-list=main\\.", &g])),
            (
                v(&["--list", "main.small", "--focus", "main.large", &s]),
                v(&["-list=main.small", "-focus=main.large", &g]),
            ),
            (v(&["--peek", "main\\.", &s]), v(&["-peek=main\\.", &g])),
            (
                v(&["--hide", "main.small", &s]),
                v(&["-hide=main.small", &g]),
            ),
        ];
        compared += same(sb.path(), &heap, &cases);
    }
    // The program moves: its old path no longer exists. Under a directory named as the one
    // it was built in, the file is found by the part of its path after that name.
    let moved = sb.write("elsewhere/app/main.go", PROGRAM);
    std::fs::remove_dir_all(sb.file("build")).unwrap();
    let here = moved.parent().unwrap();
    let trim = sb.file("build").display().to_string();
    let elsewhere = sb.file("elsewhere").display().to_string();
    for dir in [sb.path(), here] {
        let cases = vec![
            (v(&["--list", "main\\."]), v(&["-list=main\\."])),
            (
                v(&[
                    "--list",
                    "main\\.",
                    "--trim-path",
                    &trim,
                    "--source-path",
                    &elsewhere,
                ]),
                v(&[
                    "-list=main\\.",
                    "-trim_path",
                    &trim,
                    "-source_path",
                    &elsewhere,
                ]),
            ),
            (
                v(&["--list", "main\\.", "--source-path", "/nonexistent:/tmp"]),
                v(&["-list=main\\.", "-source_path", "/nonexistent:/tmp"]),
            ),
        ];
        compared += same(dir, &heap, &cases);
    }
    assert_eq!(compared, 14);
    // Where go says it cannot find the file, the report still carries the lines with samples.
    let r = ours_in(
        sb.path(),
        &[
            "top",
            "--list",
            "main.small",
            "--json",
            heap.to_str().unwrap(),
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    let routine = &doc["report"]["routines"][0];
    assert!(
        routine["error"]
            .as_str()
            .unwrap()
            .contains("could not find file build/app/main.go"),
        "{routine}"
    );
    let lines = routine["lines"].as_array().unwrap();
    assert!(
        lines
            .iter()
            .any(|l| l["line"] == 13 && l["cum"].as_i64() > Some(0)),
        "{routine}"
    );
    let r = ours_in(
        here,
        &[
            "top",
            "--list",
            "main.small",
            "--json",
            heap.to_str().unwrap(),
        ],
    );
    let doc = r.json();
    let line13 = doc["report"]["routines"][0]["lines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["line"] == 13)
        .cloned()
        .unwrap();
    assert_eq!(line13["text"], "\t\tsink = append(sink, make([]byte, 64))");
}
