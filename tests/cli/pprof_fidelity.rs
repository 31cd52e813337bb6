//! go tool pprof past the common case, compared with go tool pprof itself: demangled C++ and
//! Rust names, the profile's drop_frames/keep_frames, the totals of profiles that hold base
//! samples (`go tool pprof -proto -diff_base`), and what `diff` says of a change.

use std::io::Read;

use agentprof::pprof::proto::{Function, Label, Line, Location, Profile, Sample, ValueType};
use prost::Message;

use crate::support::{Sandbox, go, require_go};

/// A profile made by hand: functions by name, stacks of locations (each location a list of
/// function names, innermost first), one value per sample.
#[derive(Default)]
struct Builder {
    p: Profile,
    functions: Vec<(String, String)>,
}

impl Builder {
    fn new(sample_type: &str, unit: &str) -> Builder {
        let mut b = Builder::default();
        b.p.string_table.push(String::new());
        let (t, u) = (b.s(sample_type), b.s(unit));
        b.p.sample_type.push(ValueType { r#type: t, unit: u });
        b
    }

    fn s(&mut self, v: &str) -> i64 {
        if let Some(i) = self.p.string_table.iter().position(|x| x == v) {
            return i as i64;
        }
        self.p.string_table.push(v.to_string());
        self.p.string_table.len() as i64 - 1
    }

    /// A function id for (name, system name).
    fn func(&mut self, name: &str, system: &str) -> u64 {
        let key = (name.to_string(), system.to_string());
        if let Some(i) = self.functions.iter().position(|f| *f == key) {
            return i as u64 + 1;
        }
        self.functions.push(key);
        let (n, sn) = (self.s(name), self.s(system));
        let id = self.functions.len() as u64;
        self.p.function.push(Function {
            id,
            name: n,
            system_name: sn,
            filename: 0,
            start_line: 0,
        });
        id
    }

    /// A location of inlined frames (innermost first), each named and system-named alike.
    fn loc(&mut self, frames: &[&str]) -> u64 {
        let line = frames
            .iter()
            .map(|f| Line {
                function_id: self.func(f, f),
                line: 0,
                column: 0,
            })
            .collect();
        let id = self.p.location.len() as u64 + 1;
        self.p.location.push(Location {
            id,
            mapping_id: 0,
            address: 0,
            line,
            is_folded: false,
        });
        id
    }

    fn sample(&mut self, locations: &[u64], value: i64, labels: &[(&str, &str)]) {
        let label = labels
            .iter()
            .map(|(k, v)| Label {
                key: self.s(k),
                str: self.s(v),
                num: 0,
                num_unit: 0,
            })
            .collect();
        self.p.sample.push(Sample {
            location_id: locations.to_vec(),
            value: vec![value],
            label,
        });
    }

    fn bytes(&self) -> Vec<u8> {
        self.p.encode_to_vec()
    }
}

/// A profile of one sample type where each function is called from main.main, written as
/// `name` in the sandbox.
fn called_from_main(
    sb: &Sandbox,
    name: &str,
    (sample_type, unit): (&str, &str),
    rows: &[(&str, i64)],
) -> std::path::PathBuf {
    let mut b = Builder::new(sample_type, unit);
    let root = b.loc(&["main.main"]);
    for (f, v) in rows {
        let l = b.loc(&[f]);
        b.sample(&[l, root], *v, &[]);
    }
    sb.write_bytes(name, &b.bytes())
}

/// A CPU profile (nanoseconds) of functions called from main.main.
fn cpu_from_main(sb: &Sandbox, name: &str, rows: &[(&str, i64)]) -> std::path::PathBuf {
    called_from_main(sb, name, ("cpu", "nanoseconds"), rows)
}

/// What `go tool pprof -proto -diff_base BASE NEW` writes: NEW with BASE's samples negated
/// and labelled pprof::base=true.
pub fn go_diff_base(base: &std::path::Path, new: &std::path::Path) -> Vec<u8> {
    crate::support::go_proto(&["-diff_base"], &[base, new])
}

/// `agentprof top ARGS FILE` and `go tool pprof -top GOARGS FILE` print the same text.
pub fn same_as_go(sb: &Sandbox, file: &std::path::Path, ours: &[&str], theirs: &[&str]) -> String {
    let f = file.to_str().unwrap();
    let mut a = vec!["top"];
    a.extend_from_slice(ours);
    a.push(f);
    let mut g = vec!["tool", "pprof", "-top"];
    g.extend_from_slice(theirs);
    g.push(f);
    let out = sb.run(&a);
    assert_eq!(out.code, 0, "{a:?}: {}", out.stderr);
    let expected = go(&g).unwrap_or_else(|| panic!("go {g:?} failed"));
    assert_eq!(out.stdout, expected, "agentprof {a:?} vs go {g:?}");
    out.stdout
}

/// 3,230 symbols — C++ from libstdc++, Rust (legacy mangling) from agentprof's own binary,
/// Rust v0 mangling, already-demangled C++, Go and Java names — each a function of its own
/// in one profile: every row is go tool pprof's, names and merges included.
#[test]
fn mangled_cpp_and_rust_names_read_as_go_tool_pprof_reads_them() {
    if !require_go() {
        return;
    }
    let mut text = String::new();
    flate2::read::GzDecoder::new(
        &std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/symbols/names.txt.gz"),
        )
        .unwrap()[..],
    )
    .read_to_string(&mut text)
    .unwrap();
    let mut b = Builder::new("samples", "count");
    for (i, name) in text.lines().enumerate() {
        let l = b.loc(&[name]);
        b.sample(&[l], 100 + i as i64, &[]);
    }
    assert!(b.p.function.len() > 3000);
    let sb = Sandbox::new();
    let file = sb.write_bytes("names.pb", &b.bytes());
    let out = same_as_go(&sb, &file, &["--node-fraction", "0"], &["-nodefraction=0"]);
    for shown in [
        "std::vector::push_back",
        "app::Worker::step",
        "(anonymous namespace)::foo",
        "main::{lambda()#1}::operator()",
        "vtable for std::regex_error",
        "<alloc::raw_vec::RawVec<>>::grow_one",
        "::eq",
    ] {
        assert!(out.contains(&format!("  {shown}\n")), "{shown} missing");
    }
    // The default node fraction too.
    same_as_go(&sb, &file, &[], &[]);
    same_as_go(
        &sb,
        &file,
        &["--cum", "-n", "40"],
        &["-cum", "-nodecount=40"],
    );
}

/// drop_frames and keep_frames, applied as go tool pprof applies them: a matching frame and
/// everything it called are cut from each stack (unless it is the stack's root side before any
/// other frame), inlined frames inside a location included.
#[test]
fn drop_frames_and_keep_frames_cut_stacks_as_go_tool_pprof_does() {
    if !require_go() {
        return;
    }
    let sb = Sandbox::new();
    let mut b = Builder::new("alloc_space", "bytes");
    let main = b.loc(&["main"]);
    let work = b.loc(&["app::alloc", "app::work"]);
    let malloc = b.loc(&["malloc"]);
    let inner = b.loc(&[
        "tc_malloc_inner",
        "operator new(unsigned long)",
        "app::build",
    ]);
    let keep = b.loc(&["malloc_keep_me"]);
    let root_malloc = b.loc(&["malloc"]);
    b.sample(&[malloc, work, main], 500, &[]);
    b.sample(&[inner, work, main], 300, &[]);
    b.sample(&[keep, malloc, main], 40, &[]);
    b.sample(&[work, root_malloc], 70, &[]);
    b.sample(&[malloc], 9, &[]);
    b.p.drop_frames = b.s("malloc.*|operator new");
    b.p.keep_frames = b.s("malloc_keep_me");
    let file = sb.write_bytes("drop.pb", &b.bytes());
    let out = same_as_go(&sb, &file, &[], &[]);
    assert!(out.contains("app::alloc"), "{out}");
    // Cut below app::build (inlined frames included); kept where malloc is the root side.
    assert!(
        !out.contains("tc_malloc_inner") && !out.contains("operator new"),
        "{out}"
    );
    assert!(out.contains("79B  8.60%  malloc\n"), "{out}");
    same_as_go(&sb, &file, &["--cum"], &["-cum"]);
    // A drop_frames that is not a regular expression is ignored, as go ignores it.
    b.p.drop_frames = b.s("malloc(");
    let bad = sb.write_bytes("bad.pb", &b.bytes());
    let out = sb.run(&["top", bad.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("drop_frames"), "{}", out.stderr);
    assert_eq!(
        out.stdout,
        go(&["tool", "pprof", "-top", bad.to_str().unwrap()]).unwrap()
    );
}

/// A profile written by `go tool pprof -proto -diff_base` carries the base's samples, negated
/// and labelled pprof::base=true; its total is the base's, as go tool pprof reports it.
#[test]
fn diff_base_output_totals_as_go_tool_pprof() {
    if !require_go() {
        return;
    }
    let sb = Sandbox::new();
    let write = |name: &str, rows: &[(&str, i64)]| cpu_from_main(&sb, name, rows);
    let base = write(
        "base.pb",
        &[("main.a", 700_000_000), ("main.b", 700_000_000)],
    );
    let new = write(
        "new.pb",
        &[("main.a", 300_000_000), ("main.c", 1_180_000_000)],
    );
    let diffed = sb.write_bytes("diffed.pb.gz", &go_diff_base(&base, &new));
    let text = same_as_go(&sb, &diffed, &[], &[]);
    assert!(text.contains("of 1400ms total"), "{text}");
    same_as_go(&sb, &diffed, &["--cum"], &["-cum"]);
    // And a hand-made one: two base samples, one not.
    let mut b = Builder::new("samples", "count");
    let x = b.loc(&["x"]);
    let y = b.loc(&["y"]);
    b.sample(&[x], -40, &[("pprof::base", "true")]);
    b.sample(&[y], -10, &[("pprof::base", "true")]);
    b.sample(&[x], 90, &[]);
    let file = sb.write_bytes("labelled.pb", &b.bytes());
    let text = same_as_go(&sb, &file, &[], &[]);
    assert!(text.contains("of 50 total"), "{text}");
}

/// `diff`: rows in go tool pprof -diff_base's order, each value in a unit that shows it, the
/// percentage of the base's total beside the function's own, `-n` limiting --json, and a
/// refusal that names both files' sample types.
#[test]
fn diff_rows_units_and_percentages_a_reader_can_trust() {
    if !require_go() {
        return;
    }
    let sb = Sandbox::new();
    let write = |name: &str, rows: &[(&str, i64)]| cpu_from_main(&sb, name, rows);
    let base = write(
        "base.pb",
        &[
            ("main.a", 1_000_000_000),
            ("main.b", 2_000_000_000),
            ("main.tie2", 5_000_000),
            ("main.tie1", 5_000_000),
        ],
    );
    let new = write(
        "new.pb",
        &[
            ("main.a", 1_000_001_878),
            ("main.b", 3_000_000_000),
            ("main.c", 500_000_000),
        ],
    );
    let (b, n) = (base.to_str().unwrap(), new.to_str().unwrap());
    let text = sb.run(&["diff", b, n]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    let row = |f: &str| {
        text.stdout
            .lines()
            .find(|l| l.ends_with(&format!("  {f}")))
            .unwrap_or_else(|| panic!("{f} in {}", text.stdout))
            .to_string()
    };
    assert!(
        row("main.a").trim_start().starts_with("+1.88us"),
        "{}",
        row("main.a")
    );
    // +1s of a 3.01s base total: +33.22% of the total, +50% of main.b's own 2s.
    assert!(
        row("main.b").contains("+50.0%") && row("main.b").contains("+33.22%"),
        "{}",
        row("main.b")
    );
    // go tool pprof's order: the change, then the name.
    let theirs = go(&[
        "tool",
        "pprof",
        "-top",
        "-nodefraction=0",
        &format!("-diff_base={b}"),
        n,
    ])
    .unwrap();
    let go_order: Vec<String> = theirs
        .lines()
        .skip_while(|l| !l.contains("flat%"))
        .skip(1)
        .map(|l| l.split_whitespace().last().unwrap().to_string())
        .collect();
    let doc = sb.run(&["diff", b, n, "--json"]).json();
    let ours: Vec<String> = doc["report"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["function"].as_str().unwrap().to_string())
        .collect();
    let go_changed: Vec<&String> = go_order.iter().filter(|f| ours.contains(f)).collect();
    assert_eq!(
        go_changed.len(),
        ours.len(),
        "go: {go_order:?} ours: {ours:?}"
    );
    assert_eq!(go_changed, ours.iter().collect::<Vec<_>>());
    let tie = ours.iter().position(|f| f == "main.tie1").unwrap();
    assert_eq!(ours[tie + 1], "main.tie2", "ties by name, as go");
    let b_row = &doc["report"]["rows"][ours.iter().position(|f| f == "main.b").unwrap()];
    assert!((b_row["delta_flat_pct_of_total"].as_f64().unwrap() - 33.222).abs() < 0.01);
    assert!((b_row["delta_flat_pct"].as_f64().unwrap() - 50.0).abs() < 1e-9);
    // -n limits --json as it limits the table; rows_total says how many changed.
    let two = sb.run(&["diff", b, n, "--json", "-n", "2"]).json();
    assert_eq!(two["report"]["rows"].as_array().unwrap().len(), 2);
    assert_eq!(two["rows_total"].as_u64().unwrap() as usize, ours.len());
    // Profiles that report different things: both files' types are named, no flag is blamed.
    let mut h = Builder::new("alloc_space", "bytes");
    let l = h.loc(&["main.a"]);
    h.sample(&[l], 10, &[]);
    let heap = sb.write_bytes("heap.pb", &h.bytes());
    let bad = sb.run(&["diff", heap.to_str().unwrap(), n]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(
        bad.stderr.contains("cpu/nanoseconds") && bad.stderr.contains("alloc_space/bytes"),
        "{}",
        bad.stderr
    );
    assert!(!bad.stderr.contains("--sample-index"), "{}", bad.stderr);
}

/// `delta` of two snapshots where the older has a stack the newer lacks (a restarted process,
/// files given in the wrong order): refused with the reason, never a silently smaller total.
#[test]
fn delta_refuses_a_baseline_with_stacks_the_newer_snapshot_lacks() {
    let sb = Sandbox::new();
    let write = |name: &str, rows: &[(&str, i64)]| {
        called_from_main(&sb, name, ("alloc_objects", "count"), rows)
    };
    let old = write("old.pb", &[("main.a", 10), ("main.b", 5)]);
    let new = write("new.pb", &[("main.a", 25), ("main.b", 5)]);
    let ok = sb.run(&[
        "delta",
        old.to_str().unwrap(),
        new.to_str().unwrap(),
        "-o",
        "d.pb.gz",
    ]);
    assert_eq!(ok.code, 0, "{}", ok.stderr);
    let restarted = write("restarted.pb", &[("main.a", 3)]);
    let r = sb.run(&[
        "delta",
        old.to_str().unwrap(),
        restarted.to_str().unwrap(),
        "-o",
        "r.pb.gz",
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("restarted"), "{}", r.stderr);
    assert!(
        !sb.path().join("r.pb.gz").exists(),
        "no file for a refused delta"
    );
    // The files the wrong way round hold the same stacks: the delta is negative where the
    // counters went back, as go tool pprof -base shows it.
    let r = sb.run(&[
        "delta",
        new.to_str().unwrap(),
        old.to_str().unwrap(),
        "-o",
        "w.pb.gz",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

/// A flamegraph of one sample a million frames deep is cut at 1000 frames and says so (it was a
/// 198 MB SVG); a profile with negative samples (go tool pprof -proto -diff_base output) is
/// drawn as a differential flamegraph and says so.
#[test]
fn flamegraphs_of_deep_stacks_and_of_diffs_say_what_they_show() {
    let sb = Sandbox::new();
    let mut b = Builder::new("samples", "count");
    let leaf = b.loc(&["main.leaf"]);
    let rec = b.loc(&["main.recurse"]);
    let root = b.loc(&["main.main"]);
    let mut stack = vec![leaf];
    stack.extend(std::iter::repeat_n(rec, 1_000_000));
    stack.push(root);
    b.sample(&stack, 7, &[]);
    let shallow = b.loc(&["main.shallow"]);
    b.sample(&[shallow, root], 3, &[]);
    let deep = sb.write_bytes("deep.pb", &b.bytes());
    let r = sb.run(&["flamegraph", deep.to_str().unwrap(), "-o", "deep.svg"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let svg = std::fs::read_to_string(sb.path().join("deep.svg")).unwrap();
    assert!(svg.len() < 2_000_000, "{} bytes", svg.len());
    assert!(
        svg.contains("1 stack deeper than 1000 frames cut at 1000"),
        "no note"
    );
    assert!(
        svg.contains("[999002 more frames cut]"),
        "the cut is a frame of its own"
    );
    assert!(svg.contains("main.shallow"));

    let mut d = Builder::new("samples", "count");
    let (x, y) = (d.loc(&["main.x"]), d.loc(&["main.y"]));
    d.sample(&[x], -40, &[("pprof::base", "true")]);
    d.sample(&[x], 90, &[]);
    d.sample(&[y], 15, &[]);
    let diffed = sb.write_bytes("diffed.pb", &d.bytes());
    let r = sb.run(&["flamegraph", diffed.to_str().unwrap(), "-o", "diffed.svg"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let svg = std::fs::read_to_string(sb.path().join("diffed.svg")).unwrap();
    assert!(svg.contains("differential: 1 negative samples"), "no note");
    assert!(svg.contains("main.x") && svg.contains("main.y"));
}

/// google/pprof's module, at the version the tests pin, from the Go module cache (fetched
/// through the module proxy when it is not there yet).
fn google_pprof_testdata() -> Option<std::path::PathBuf> {
    const MODULE: &str = "github.com/google/pprof@v0.0.0-20261105003125-4bf881d7fb0b";
    let out = std::process::Command::new("go")
        .args(["mod", "download", "-json", MODULE])
        .output()
        .ok()?;
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    let dir = std::path::PathBuf::from(doc["Dir"].as_str()?).join("profile/testdata");
    dir.is_dir().then_some(dir)
}

/// Legacy profiles — gperftools' binary CPU format, the text heap (heapz v2, growthz, Go's
/// legacy heap), contention and Go count formats — read with identical `-top` to go tool
/// pprof on google/pprof's own test data; the legacy formats agentprof does not read are
/// named, with the conversion, never "field number 0".
#[test]
fn legacy_profiles_read_as_go_tool_pprof_reads_them() {
    if !require_go() {
        return;
    }
    let Some(dir) = google_pprof_testdata() else {
        crate::support::skip(
            "github.com/google/pprof's test data could not be downloaded (.ci/run downloads it)",
        );
        return;
    };
    let sb = Sandbox::new();
    let mut compared = 0;
    for f in [
        "cppbench.cpu",
        "gobench.cpu",
        "go.crc32.cpu",
        "cppbench.heap",
        "cppbench.growth",
        "gobench.heap",
        "cppbench.contention",
        "go.godoc.thread",
    ] {
        let path = dir.join(f);
        for (ours, theirs) in [
            (vec![], vec![]),
            (vec!["--cum"], vec!["-cum"]),
            (vec!["--sample-index", "0"], vec!["-sample_index=0"]),
        ] {
            same_as_go(&sb, &path, &ours, &theirs);
            compared += 1;
        }
    }
    assert_eq!(compared, 24);
    // What the Go compiler writes for -memprofile today: a legacy text heap profile.
    let src = sb.write(
        "main.go",
        "package main\n\ntype T struct{ a, b int }\n\nfunc (t *T) sum() int { return t.a + t.b }\n\nfunc main() {\n\ts := 0\n\tfor i := 0; i < 10; i++ {\n\t\tt := &T{i, i * 2}\n\t\ts += t.sum()\n\t}\n\tprintln(s)\n}\n",
    );
    let mem = sb.path().join("compile.mem");
    let built = std::process::Command::new("go")
        .args(["tool", "compile", "-p", "main", "-memprofilerate=1"])
        .arg(format!("-memprofile={}", mem.display()))
        .arg("-o")
        .arg(sb.path().join("main.o"))
        .arg(&src)
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    assert!(
        std::fs::read_to_string(&mem)
            .unwrap()
            .starts_with("heap profile:")
    );
    for (ours, theirs) in [
        (vec![], vec![]),
        (
            vec!["--sample-index", "alloc_space"],
            vec!["-sample_index=alloc_space"],
        ),
        (
            vec!["--cum", "--sample-index", "0"],
            vec!["-cum", "-sample_index=0"],
        ),
    ] {
        same_as_go(&sb, &mem, &ours, &theirs);
    }
    for (f, says) in [
        ("cppbench.thread", "threadz"),
        ("java.cpu", "Java"),
        ("java.heap", "Java"),
        ("java.contention", "Java"),
    ] {
        let r = sb.run(&["top", dir.join(f).to_str().unwrap()]);
        assert_eq!(r.code, 2, "{f}: {}", r.stderr);
        assert!(
            r.stderr.contains(says) && r.stderr.contains("go tool pprof -proto FILE > out.pb.gz"),
            "{f}: {}",
            r.stderr
        );
        assert!(
            !r.stderr.contains("field number 0") && !r.stderr.contains("tag"),
            "{}",
            r.stderr
        );
    }
}
