//! `agentprof top` against `go tool pprof -top`, and what happens to files that are not
//! profiles.

use crate::support::{Sandbox, fixture, go, require_go};

const FIXTURES: &[&str] = &[
    "cpu.pprof",
    "delta-heap.pprof",
    "delta-mutex.pprof",
    "delta-block.pprof",
    "goroutines.pprof",
];

/// Every option combination agentprof and Go both accept gives the same text, byte for byte.
fn compare_with_go(path: &std::path::Path, sample_indexes: &[&str]) -> usize {
    let sb = Sandbox::new();
    let file = path.to_str().unwrap();
    let mut compared = 0;
    for si in sample_indexes.iter().map(Some).chain([None]) {
        for cum in [false, true] {
            for nodes in [None, Some("7")] {
                let mut g = vec!["tool", "pprof", "-top"];
                let mut a = vec!["top"];
                let si_flag = si.map(|s| format!("-sample_index={s}"));
                let si_ours = si.map(|s| format!("--sample-index={s}"));
                if let (Some(gs), Some(os)) = (&si_flag, &si_ours) {
                    g.push(gs);
                    a.push(os);
                }
                if cum {
                    g.push("-cum");
                    a.push("--cum");
                }
                if let Some(n) = nodes {
                    g.push("-nodecount");
                    g.push(n);
                    a.extend(["-n", n]);
                }
                g.push(file);
                a.push(file);
                let theirs = go(&g);
                let ours = sb.run(&a);
                match theirs {
                    Some(text) => {
                        assert_eq!(ours.code, 0, "{a:?}: {}", ours.stderr);
                        assert_eq!(ours.stdout, text, "agentprof {a:?} vs go {g:?}");
                        compared += 1;
                    }
                    None => assert_ne!(ours.code, 0, "go refused {g:?}, agentprof did not"),
                }
            }
        }
    }
    compared
}

#[test]
fn top_is_go_tool_pprof_top_row_for_row_on_dd_trace_go_uploads() {
    if !require_go() {
        return;
    }
    let mut compared = 0;
    for f in FIXTURES {
        compared += compare_with_go(
            &fixture(f),
            &[
                "0",
                "1",
                "alloc_space",
                "inuse_objects",
                "contentions",
                "delay",
                "samples",
                "goroutine",
            ],
        );
    }
    assert!(compared >= 40, "{compared} comparisons");
}

#[test]
fn top_json_carries_the_same_rows() {
    let sb = Sandbox::new();
    let f = fixture("cpu.pprof");
    let text = sb.run(&["top", f.to_str().unwrap()]);
    let json = sb.run(&["top", "--json", f.to_str().unwrap()]);
    assert_eq!(json.code, 0, "{}", json.stderr);
    let doc = json.json();
    let rows = doc["report"]["rows"].as_array().unwrap();
    assert!(!rows.is_empty());
    let body: Vec<&str> = text
        .stdout
        .lines()
        .skip_while(|l| !l.contains("flat%"))
        .skip(1)
        .collect();
    assert_eq!(rows.len(), body.len());
    for (r, line) in rows.iter().zip(body) {
        assert!(line.contains(r["function"].as_str().unwrap()), "{line}");
        assert!(
            line.trim_start()
                .starts_with(r["flat_fmt"].as_str().unwrap()),
            "{line}"
        );
    }
    assert_eq!(doc["report"]["sample_type"], "cpu");
    assert_eq!(doc["sample_types"][0]["type"], "samples");
}

#[test]
fn files_that_are_not_profiles_are_refused_with_the_reason() {
    let sb = Sandbox::new();
    let html = sb.write(
        "login.pb.gz",
        "<!DOCTYPE html><html><body>Sign in</body></html>",
    );
    let r = sb.run(&["top", html.to_str().unwrap()]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("login.pb.gz") && r.stderr.contains("HTML"),
        "{}",
        r.stderr
    );

    // 64 MiB of zeros in 64 KiB of gzip: refused at the decompressed limit.
    let bomb = sb.file("bomb.pb.gz");
    {
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(
            std::fs::File::create(&bomb).unwrap(),
            flate2::Compression::best(),
        );
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..64 {
            gz.write_all(&zeros).unwrap();
        }
        gz.finish().unwrap();
    }
    let r = sb.run(&["top", "--max-decompressed-mb", "8", bomb.to_str().unwrap()]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("decompressed limit") && r.stderr.contains("--max-decompressed-mb"),
        "{}",
        r.stderr
    );

    let cpu = fixture("cpu.pprof");
    let r = sb.run(&["top", "--max-fields", "1000", cpu.to_str().unwrap()]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("parsing budget") && r.stderr.contains("--max-fields"),
        "{}",
        r.stderr
    );

    let r = sb.run(&["top", "--sample-index", "nope", cpu.to_str().unwrap()]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("--sample-index") && r.stderr.contains("samples, cpu"),
        "{}",
        r.stderr
    );

    let truncated = sb.file("cut.pb");
    // dd-trace-go uploads raw protobuf.
    let raw = std::fs::read(fixture("goroutines.pprof")).unwrap();
    std::fs::write(&truncated, &raw[..raw.len() / 2]).unwrap();
    let r = sb.run(&["top", truncated.to_str().unwrap()]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("cut.pb") && r.stderr.contains("not a valid pprof profile"),
        "{}",
        r.stderr
    );
}

/// Runs agentprof with its address space limited to `limit_mib`: an allocation past it fails
/// and the process dies instead of exiting with its own status. (Its peak RSS cannot be read
/// from the test: a forked child's ru_maxrss includes the test process's memory.)
fn run_limited(args: &[&str], dir: &std::path::Path, limit_mib: u64) -> std::process::Output {
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_agentprof"));
    cmd.args(args).current_dir(dir);
    let limit = limit_mib << 20;
    // SAFETY: setrlimit is async-signal-safe; it only lowers the child's own limit.
    unsafe {
        cmd.pre_exec(move || {
            let rl = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &rl) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.output().unwrap()
}

#[test]
fn a_gzip_bomb_is_refused_without_the_memory_it_asks_for() {
    let sb = Sandbox::new();
    // 512 gzip members of 1 MiB of zeros each: 512 MiB that a 0.5 MiB file decompresses to.
    let member = {
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(&vec![0u8; 1 << 20]).unwrap();
        gz.finish().unwrap()
    };
    let bomb = sb.file("bomb.pb.gz");
    std::fs::write(&bomb, member.repeat(512)).unwrap();
    // Within 96 MiB of address space: decoding the bomb would need 512 MiB.
    let out = run_limited(
        &["top", "--max-decompressed-mb", "8", bomb.to_str().unwrap()],
        sb.path(),
        96,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("decompressed limit"), "{stderr}");
    // The same address space with the file's limit raised fails for lack of memory: the
    // limit is what kept the first run small.
    let out = run_limited(
        &[
            "top",
            "--max-decompressed-mb",
            "1024",
            bomb.to_str().unwrap(),
        ],
        sb.path(),
        96,
    );
    assert_ne!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_ne!(out.status.code(), Some(0));
}

#[test]
fn diff_sorts_by_the_change_and_its_changes_add_up() {
    let sb = Sandbox::new();
    let (base, new) = (fixture("delta-mutex.pprof"), fixture("delta-block.pprof"));
    let r = sb.run(&[
        "diff",
        base.to_str().unwrap(),
        new.to_str().unwrap(),
        "--json",
        "--flamegraph",
        "change.svg",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    let rep = &doc["report"];
    assert_eq!(rep["sample_type"], "delay");
    let rows = rep["rows"].as_array().unwrap();
    assert!(!rows.is_empty());
    let d = |r: &serde_json::Value| r["delta_flat"].as_i64().unwrap();
    for w in rows.windows(2) {
        assert!(
            d(&w[0]).abs() >= d(&w[1]).abs(),
            "sorted by the change of flat"
        );
    }
    // Flat values of all functions add up to the totals, so their changes add up to the
    // change of the total.
    let sum: i64 = rows.iter().map(d).sum();
    assert_eq!(
        sum,
        rep["new_total"].as_i64().unwrap() - rep["base_total"].as_i64().unwrap()
    );
    let svg = std::fs::read_to_string(sb.file("change.svg")).unwrap();
    assert!(svg.contains("<svg"));
    // A profile against itself has no change.
    let same = sb.run(&[
        "diff",
        base.to_str().unwrap(),
        base.to_str().unwrap(),
        "--json",
    ]);
    assert!(same.json()["report"]["rows"].as_array().unwrap().is_empty());
    // Text output: a header and a row per function.
    let text = sb.run(&["diff", base.to_str().unwrap(), new.to_str().unwrap()]);
    assert!(
        text.stdout.starts_with("Type: delay\nTotal: "),
        "{}",
        text.stdout
    );
    // Profiles of different sample types are refused.
    let cpu = fixture("cpu.pprof");
    let bad = sb.run(&["diff", cpu.to_str().unwrap(), new.to_str().unwrap()]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
}

#[test]
fn flamegraph_and_delta_write_their_files() {
    let sb = Sandbox::new();
    let cpu = fixture("cpu.pprof");
    let r = sb.run(&["flamegraph", cpu.to_str().unwrap(), "-o", "cpu.svg"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let svg = std::fs::read_to_string(sb.file("cpu.svg")).unwrap();
    assert!(
        svg.contains("<svg") && svg.contains("runtime"),
        "a flamegraph of Go frames"
    );
    let heap = fixture("delta-heap.pprof");
    let r = sb.run(&[
        "delta",
        heap.to_str().unwrap(),
        heap.to_str().unwrap(),
        "-o",
        "d.pb.gz",
        "--json",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // Without --json, the sizes are in units that fit them (a few KiB, not "0.0 MB").
    let r = sb.run(&[
        "delta",
        heap.to_str().unwrap(),
        heap.to_str().unwrap(),
        "-o",
        "d2.pb.gz",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("KiB (the newer snapshot) less ") && !r.stdout.contains("0.0 MB"),
        "{}",
        r.stdout
    );
    // The delta of a snapshot with itself: no allocation, only what is in use.
    let d = sb.run(&["top", "--sample-index", "alloc_space", "d.pb.gz"]);
    assert!(
        d.stdout
            .contains("Showing nodes accounting for 0, 0% of 0 total"),
        "{}",
        d.stdout
    );
    let r = sb.run(&[
        "delta",
        cpu.to_str().unwrap(),
        cpu.to_str().unwrap(),
        "-o",
        "x.pb.gz",
    ]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("no cumulative sample type"),
        "{}",
        r.stderr
    );
}

/// Per function, agentprof diff's change of flat and cum is what `go tool pprof -diff_base`
/// reports for the same two profiles (every node kept, values in nanoseconds).
#[test]
fn diff_is_go_tool_pprof_diff_base_function_for_function() {
    if !require_go() {
        return;
    }
    let sb = Sandbox::new();
    let (base, new) = (fixture("delta-mutex.pprof"), fixture("delta-block.pprof"));
    let (base, new) = (base.to_str().unwrap(), new.to_str().unwrap());
    let theirs = go(&[
        "tool",
        "pprof",
        "-top",
        "-nodefraction=0",
        "-unit=ns",
        &format!("-diff_base={base}"),
        new,
    ])
    .expect("go tool pprof -diff_base");
    let ours = sb.run(&["diff", base, new, "--json", "-n", "0"]).json();
    let rows = ours["report"]["rows"].as_array().unwrap();
    let ns = |t: &str| -> i64 { t.trim_end_matches("ns").parse().unwrap() };
    let mut compared = 0;
    for line in theirs.lines().skip_while(|l| !l.contains("flat%")).skip(1) {
        let cols: Vec<&str> = line.split_whitespace().collect();
        let (flat, cum, function) = (ns(cols[0]), ns(cols[3]), cols[5..].join(" "));
        let function = function
            .trim_end_matches(" (inline)")
            .trim_end_matches(" (partial-inline)")
            .to_string();
        if flat == 0 && cum == 0 {
            continue;
        }
        let row = rows
            .iter()
            .find(|r| r["function"] == function.as_str())
            .unwrap_or_else(|| panic!("{function} is not in agentprof's diff"));
        assert_eq!(row["delta_flat"].as_i64().unwrap(), flat, "{function}");
        assert_eq!(row["delta_cum"].as_i64().unwrap(), cum, "{function}");
        compared += 1;
    }
    assert!(compared >= 5, "{compared} functions compared");
    assert_eq!(compared, rows.len(), "the same functions changed");
}

/// A string table that is not UTF-8 is read as go tool pprof reads it, not refused: the same
/// rows, the bad bytes shown as U+FFFD (go prints them raw; read as text, they are the same).
#[test]
fn a_string_table_that_is_not_utf8_reads_as_go_tool_pprof_reads_it() {
    if !crate::support::require_go() {
        return;
    }
    fn field(out: &mut Vec<u8>, num: u8, payload: &[u8]) {
        out.push(num << 3 | 2);
        out.push(payload.len() as u8);
        out.extend_from_slice(payload);
    }
    let mut p = Vec::new();
    field(&mut p, 1, &[0x08, 0x01, 0x10, 0x02]); // sample_type samples/count
    field(&mut p, 2, &[0x0a, 0x01, 0x01, 0x12, 0x01, 0x05]); // 5 samples at location 1
    field(&mut p, 4, &[0x08, 0x01, 0x22, 0x02, 0x08, 0x01]); // location 1 -> function 1
    field(&mut p, 5, &[0x08, 0x01, 0x10, 0x03]); // function 1 named string 3
    for s in [&b""[..], b"samples", b"count", b"main.caf\xe9\xff"] {
        field(&mut p, 6, s);
    }
    let sb = crate::support::Sandbox::new();
    let path = sb.write_bytes("latin1.pb", &p);
    let ours = sb.run(&["top", path.to_str().unwrap()]);
    assert_eq!(ours.code, 0, "{}", ours.stderr);
    let theirs = crate::support::go(&["tool", "pprof", "-top", path.to_str().unwrap()]).unwrap();
    assert_eq!(ours.stdout, theirs);
    assert!(
        ours.stdout.contains("main.caf\u{fffd}\u{fffd}"),
        "{}",
        ours.stdout
    );
}

/// `diff` says "new" only for a function the base does not have: one the base has with no
/// flat value of its own (only callees) changes without a percentage, not as "new".
#[test]
fn diff_says_new_only_for_functions_absent_from_the_base() {
    fn field(out: &mut Vec<u8>, num: u8, payload: &[u8]) {
        out.push(num << 3 | 2);
        out.push(payload.len() as u8);
        out.extend_from_slice(payload);
    }
    // samples: (location ids leaf first, count)
    let profile = |samples: &[(&[u8], u8)]| {
        let mut p = Vec::new();
        field(&mut p, 1, &[0x08, 0x01, 0x10, 0x02]);
        for (locs, v) in samples {
            let mut s = Vec::new();
            field(&mut s, 1, locs);
            field(&mut s, 2, &[*v]);
            field(&mut p, 2, &s);
        }
        for id in 1..=3u8 {
            field(&mut p, 4, &[0x08, id, 0x22, 0x02, 0x08, id]);
            field(&mut p, 5, &[0x08, id, 0x10, id + 2]);
        }
        for s in ["", "samples", "count", "main.f", "main.g", "main.h"] {
            field(&mut p, 6, s.as_bytes());
        }
        p
    };
    let sb = crate::support::Sandbox::new();
    let base = sb.write_bytes("base.pb", &profile(&[(&[2, 1], 5)]));
    let new = sb.write_bytes("new.pb", &profile(&[(&[1], 3), (&[2, 1], 5), (&[3, 1], 2)]));
    let r = sb.run(&["diff", base.to_str().unwrap(), new.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let row = |f: &str| {
        r.stdout
            .lines()
            .find(|l| l.ends_with(&format!("  {f}")))
            .unwrap_or_else(|| panic!("{f} in {}", r.stdout))
            .to_string()
    };
    assert!(!row("main.f").contains("new"), "{}", row("main.f"));
    assert!(row("main.h").contains("new"), "{}", row("main.h"));
    let doc = sb
        .run(&[
            "diff",
            "--json",
            base.to_str().unwrap(),
            new.to_str().unwrap(),
        ])
        .json();
    let rows = doc["rows"]
        .as_array()
        .or_else(|| doc["report"]["rows"].as_array())
        .unwrap()
        .clone();
    let f = rows.iter().find(|r| r["function"] == "main.f").unwrap();
    let h = rows.iter().find(|r| r["function"] == "main.h").unwrap();
    assert_eq!(
        (f["in_base"].clone(), h["in_base"].clone()),
        (true.into(), false.into())
    );
}

/// A 10 s capture against a 5 s one: without --normalize every function seems to have
/// doubled, and the note says why and which flag scales it out.
#[test]
fn diff_of_captures_of_different_lengths_hints_normalize() {
    use prost::Message;
    let sb = Sandbox::new();
    let cpu = std::fs::read(fixture("cpu.pprof")).unwrap();
    let mut p = agentprof::pprof::proto::Profile::decode(&cpu[..]).unwrap();
    p.duration_nanos = 5_000_000_000;
    sb.write_bytes("base.pb", &p.encode_to_vec());
    p.duration_nanos = 10_000_000_000;
    for s in &mut p.sample {
        for v in &mut s.value {
            *v *= 2;
        }
    }
    sb.write_bytes("new.pb", &p.encode_to_vec());
    let r = sb.run(&["diff", "base.pb", "new.pb"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("the base covers 5.00s and the new profile 10.00s")
            && r.stderr.contains("--normalize"),
        "{}",
        r.stderr
    );
    let r = sb.run(&["diff", "base.pb", "new.pb", "--normalize", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stderr.contains("note"), "{}", r.stderr);
    assert!(r.json()["report"]["rows"].as_array().unwrap().is_empty());
    // Equal lengths: nothing said.
    let r = sb.run(&["diff", "new.pb", "new.pb"]);
    assert!(!r.stderr.contains("note"), "{}", r.stderr);
}
