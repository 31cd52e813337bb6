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
