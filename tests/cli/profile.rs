//! `--profile`, `--flamegraph`, `--pprof`: sampled stacks of the check, read back with the
//! reference tool (`go tool pprof`) when Go is installed.

use crate::support::Sandbox;

/// A check that burns measurable CPU per run: every process on the machine.
fn busy(sb: &Sandbox) {
    sb.write(
        "conf.d/process.yaml",
        "instances:\n  - name: all\n    search_string: [All]\n    exact_match: false\n",
    );
}

/// The README's first command: one disk run is a few hundred microseconds, far too short for
/// 1000 Hz sampling, so the run is repeated (sampled, not measured) until the table means
/// something; the cost table stays that of the one measured run.
#[test]
fn the_first_command_prints_a_real_top_table_from_repeated_runs() {
    let sb = Sandbox::new();
    let r = sb.run(&["check", "disk", "--profile"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stdout.contains("too few"), "{}", r.stdout);
    let title = r
        .stdout
        .lines()
        .find(|l| l.starts_with("Profile: "))
        .unwrap_or_else(|| panic!("no profile table:\n{}", r.stdout));
    assert!(
        title.contains("1 measured run and") && title.contains("sampled repetitions"),
        "{title}"
    );
    assert!(r.stdout.contains("DiskCheck"), "{}", r.stdout);
    assert!(
        r.stdout.contains("RUN 1") && !r.stdout.contains("RUN 2"),
        "{}",
        r.stdout
    );
    let doc = sb.run(&["check", "disk", "--profile", "--json"]).json();
    let p = &doc["profile"];
    assert_eq!(p["meaningful"], true, "{p}");
    assert!(p["repeated_runs"].as_u64().unwrap() > 0, "{p}");
    assert_eq!(p["top"].as_array().unwrap().len(), 20);
    assert_eq!(doc["runs"].as_array().unwrap().len(), 1);
    // Runs that already sampled enough are not repeated.
    busy(&sb);
    let doc = sb
        .run(&["check", "process", "--profile", "-t", "40", "--json"])
        .json();
    if doc["profile"]["samples"].as_u64().unwrap() >= 200 {
        assert_eq!(doc["profile"]["repeated_runs"], 0);
    }
}

/// An instance that times out between two that run: the runs after it (on the runner's
/// fresh thread) are sampled, the timed-out one is not repeated, and the profile is of the
/// instances that ran.
#[test]
fn a_timed_out_instance_leaves_the_others_sampled() {
    let sb = Sandbox::new();
    sb.write(
        "conf.d/process.yaml",
        "instances:\n  - name: a\n    search_string: [init]\n  - name: b\n    search_string: [All]\n    exact_match: false\n    run_timeout: 0.001\n  - name: c\n    search_string: [init]\n",
    );
    let r = sb.run(&["check", "process", "--profile", "-t", "3", "--json"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let doc = r.json();
    let p = &doc["profile"];
    assert_eq!(p["meaningful"], true, "{p}\nstderr: {}", r.stderr);
    assert!(
        p["samples"].as_u64().unwrap() >= 100,
        "{p}\nstderr: {}",
        r.stderr
    );
    // The title says what was merged: 3 runs of each of the 3 instances, and the sampled
    // repetitions that topped the profile up.
    let table = sb.run(&["check", "process", "--profile", "-t", "3"]);
    assert!(
        table
            .stdout
            .contains("over 3 measured runs of each of 3 instances (9 calls)"),
        "{}",
        table.stdout
    );
}

#[test]
fn profile_pprof_and_flamegraph_agree() {
    let sb = Sandbox::new();
    busy(&sb);
    let (svg, pb) = (sb.file("out.svg"), sb.file("out.pb.gz"));
    let r = sb.run(&[
        "check",
        "process",
        "--json",
        "-t",
        "40",
        "--top",
        "10",
        "--flamegraph",
        svg.to_str().unwrap(),
        "--pprof",
        pb.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    let p = &doc["profile"];
    let samples = p["samples"].as_u64().unwrap();
    assert!(samples >= 20, "{samples} samples");
    let top = p["top"].as_array().unwrap();
    assert_eq!(top.len(), 10);
    // Sorted by cum; the check's own run method is on every sampled stack.
    let cums: Vec<u64> = top.iter().map(|t| t["cum"].as_u64().unwrap()).collect();
    assert!(cums.windows(2).all(|w| w[0] >= w[1]));
    assert!(
        top.iter().any(
            |t| t["function"].as_str().unwrap().contains("ProcessCheck") && t["cum"] == samples
        ),
        "no ProcessCheck function on all {samples} samples: {top:#?}"
    );
    for t in top {
        assert!(t["flat"].as_u64().unwrap() <= t["cum"].as_u64().unwrap());
    }

    let svg_text = std::fs::read_to_string(&svg).unwrap();
    assert!(svg_text.contains("<svg") && svg_text.contains("ProcessCheck"));
    let bytes = std::fs::read(&pb).unwrap();
    assert_eq!(&bytes[..2], &[0x1f, 0x8b]);

    if !crate::support::require_go() {
        return;
    }
    // go tool pprof -raw: the sample counts must add up to ours.
    let raw = std::process::Command::new("go")
        .args(["tool", "pprof", "-raw"])
        .arg(&pb)
        .output()
        .unwrap();
    assert!(
        raw.status.success(),
        "{}",
        String::from_utf8_lossy(&raw.stderr)
    );
    let raw = String::from_utf8_lossy(&raw.stdout);
    assert!(raw.contains("samples/count cpu/nanoseconds"), "{raw}");
    let total: u64 = raw
        .lines()
        .skip_while(|l| !l.starts_with("Samples:"))
        .skip(2)
        .take_while(|l| l.contains(':') && !l.starts_with("Locations"))
        .filter_map(|l| l.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    assert_eq!(total, samples);
    // go tool pprof -top: same total, and every sample under the run marker.
    let out = std::process::Command::new("go")
        .args([
            "tool",
            "pprof",
            "-top",
            "-cum",
            "-sample_index=samples",
            "-nodecount=200",
        ])
        .arg(&pb)
        .output()
        .unwrap();
    let top_text = String::from_utf8_lossy(&out.stdout);
    assert!(
        top_text.contains(&format!("of {samples} total")),
        "{top_text}"
    );
    // The first row of `-top -cum` is the check's run method, on every stack.
    let run_line = top_text
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("flat"))
        .nth(1)
        .unwrap_or_else(|| panic!("{top_text}"));
    assert!(run_line.ends_with("::run"), "{run_line}");
    let go_cum: u64 = run_line.split_whitespace().nth(3).unwrap().parse().unwrap();
    assert_eq!(go_cum, samples, "{run_line}");
    // The top table is go tool pprof's `-top -cum` of the same profile, row for row:
    // function, flat and cum, in its order.
    let out = std::process::Command::new("go")
        .args(["tool", "pprof", "-top", "-cum", "-sample_index=samples"])
        .args(["-nodefraction=0", "-nodecount=10"])
        .arg(&pb)
        .output()
        .unwrap();
    let go_rows: Vec<(String, u64, u64)> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("flat"))
        .skip(1)
        .map(|l| {
            let mut rest = l.trim_start();
            let mut fields = Vec::new();
            for _ in 0..5 {
                let (f, r) = rest.split_once(char::is_whitespace).unwrap();
                fields.push(f);
                rest = r.trim_start();
            }
            let name = rest
                .trim_end_matches(" (inline)")
                .trim_end_matches(" (partial-inline)");
            (
                name.to_string(),
                fields[0].parse().unwrap(),
                fields[3].parse().unwrap(),
            )
        })
        .collect();
    let ours: Vec<(String, u64, u64)> = top
        .iter()
        .map(|t| {
            (
                t["function"].as_str().unwrap().to_string(),
                t["flat"].as_u64().unwrap(),
                t["cum"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(ours, go_rows);
}

#[test]
fn human_profile_table_has_pprof_columns() {
    let sb = Sandbox::new();
    busy(&sb);
    let r = sb.run(&["check", "process", "--profile", "-t", "40", "--top", "5"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let header = r
        .stdout
        .lines()
        .find(|l| l.contains("FLAT%"))
        .unwrap_or_else(|| panic!("{}", r.stdout));
    for col in ["FLAT", "FLAT%", "SUM%", "CUM", "CUM%", "FUNCTION"] {
        assert!(header.contains(col));
    }
    assert!(r.stdout.contains("by cumulative time"));
}

/// Naming a built-in's samples reads agentprof's own line tables, outside the measured runs:
/// `--profile` says what that cost, so a user timing it knows where the time went.
#[test]
fn the_cost_of_naming_samples_is_said() {
    let sb = crate::support::Sandbox::new();
    let r = sb.run(&["check", "memory", "--profile", "-t", "3"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let line = r
        .stderr
        .lines()
        .find(|l| l.contains("read agentprof's line tables"))
        .unwrap_or_else(|| panic!("{}", r.stderr));
    assert!(
        line.contains("sampled addresses")
            && line.contains(" s and +")
            && line.contains("outside the measured runs"),
        "{line}"
    );
    // Without --profile nothing is named, and nothing is said.
    let r = sb.run(&["check", "memory"]);
    assert!(!r.stderr.contains("line tables"), "{}", r.stderr);
}
