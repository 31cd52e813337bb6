//! `agentprof ui` over a week of one service's captures, for the figures the ui's time
//! views are measured by:
//!
//!   cargo run --release --example ui_bench -- [--captures N] [--agentprof PATH]
//!
//! Writes N (default 10,000) CPU captures of service `web` over 7 days (the fixture's
//! profile, its values scaled per capture, alternately of pods web-1 and web-2) with the
//! captures.jsonl lines `agentprof k8s` writes (each file's totals in them), starts the
//! ui, and prints: the timeline of the week in Chromium (page load to line drawn, and its
//! request), a 1-hour and a 1-day range merged (time, the ui's peak RSS after each) with
//! the merge's table against `agentprof top` of `go tool pprof -proto`'s merge of the same
//! files, the last hour compared with the hour before, and the week's timeline again
//! without captures.jsonl (each total read off its file). With `--large`, instead: a
//! flamegraph of 113,430 frames (tests/cli/large_profile.rs) drawn by the server and opened
//! and searched in Chromium, three times each at most 3,000, 6,000 and 12,000 frames, and
//! once all of them.

#![allow(clippy::unwrap_used)]

#[path = "../tests/cli/large_profile.rs"]
mod large;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::{Value, json};

fn arg(name: &str) -> Option<String> {
    let a: Vec<String> = std::env::args().collect();
    a.iter()
        .position(|x| x == name)
        .and_then(|i| a.get(i + 1).cloned())
}

fn gz(b: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(b).unwrap();
    e.finish().unwrap()
}

fn enc(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// The week's captures under `dir/prof`, oldest first: (time as the file names it, path).
fn corpus(dir: &Path, n: usize) -> Vec<(String, PathBuf)> {
    use prost::Message;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let cpu = std::fs::read(root.join("tests/fixtures/dd-trace-go-upload/cpu.pprof")).unwrap();
    // The week that ended at the last whole hour: its hours have ended (the ui keeps
    // rollups of ended hours only).
    let now = jiff::Timestamp::now().as_second();
    let start = jiff::Timestamp::from_second(now - now % 3600 - 7 * 86_400).unwrap();
    let step = 7 * 86_400 * 1_000_000_000i64 / n as i64;
    let mut lines = String::new();
    let mut out = Vec::new();
    std::fs::create_dir_all(dir.join("prof/web")).unwrap();
    for i in 0..n {
        let mut p = agentprof::pprof::proto::Profile::decode(&cpu[..]).unwrap();
        let k = 1 + (i % 7) as i64;
        for s in &mut p.sample {
            for v in &mut s.value {
                *v *= k;
            }
        }
        let t = start + jiff::SignedDuration::from_nanos(step * i as i64);
        p.time_nanos = t.as_nanosecond() as i64;
        p.duration_nanos = 60_000_000_000;
        let stamp = t.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
        let file = dir.join(format!("prof/web/cpu-{stamp}.pb.gz"));
        std::fs::write(&file, gz(&p.encode_to_vec())).unwrap();
        let pod = if i % 2 == 0 { "web-1" } else { "web-2" };
        // The totals as `agentprof k8s` records them (with the sample labels' index).
        let mut totals =
            serde_json::to_value(agentprof::pprof::Pprof::new(p.clone()).unwrap().totals())
                .unwrap();
        totals["file"] = json!(format!("out/web/cpu-{stamp}.pb.gz"));
        let line = json!({"time": stamp, "target": "web", "namespace": "shop", "pod": pod,
            "container": "app", "cause": "scheduled", "tags": [format!("pod_name:{pod}")],
            "profiles": [{"type": "cpu", "files": [format!("out/web/cpu-{stamp}.pb.gz")],
                "totals": [totals]}]});
        lines.push_str(&format!("{line}\n"));
        out.push((stamp, file));
    }
    std::fs::write(dir.join("prof/captures.jsonl"), lines).unwrap();
    out
}

/// Milliseconds from starting `go tool pprof -http` on `file` to its top page answered.
fn go_http_top(file: &std::path::Path) -> f64 {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let t = Instant::now();
    let mut go = Command::new("go")
        .args(["tool", "pprof", "-no_browser"])
        .arg(format!("-http=127.0.0.1:{port}"))
        .arg(file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let client = reqwest::blocking::Client::new();
    let url = format!("http://127.0.0.1:{port}/ui/top");
    let ms = loop {
        if client
            .get(&url)
            .send()
            .is_ok_and(|r| r.status().is_success() && r.bytes().is_ok())
        {
            break t.elapsed().as_secs_f64() * 1000.0;
        }
        assert!(
            t.elapsed().as_secs() < 120,
            "go tool pprof -http did not answer"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    let _ = go.kill();
    let _ = go.wait();
    ms
}

fn vm_hwm_mib(pid: u32) -> f64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|k| k.parse::<f64>().ok())
        .unwrap_or(0.0)
        / 1024.0
}

fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let n: usize = arg("--captures").map_or(10_000, |s| s.parse().unwrap());
    let bin = PathBuf::from(arg("--agentprof").unwrap_or_else(release::release_agentprof));
    let dir = tempfile::tempdir().unwrap();
    if std::env::args().any(|a| a == "--large") {
        return large_flamegraph(&bin, dir.path());
    }
    let t0 = Instant::now();
    let files = corpus(dir.path(), n);
    eprintln!(
        "{n} captures written in {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    let mut ui = Command::new(&bin)
        .current_dir(dir.path())
        .args(["ui", "prof", "--listen", "127.0.0.1:0", "--duration", "1h"])
        .env("XDG_CACHE_HOME", dir.path().join("cache"))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = BufReader::new(ui.stderr.take().unwrap());
    let mut base = String::new();
    for l in err.lines().map_while(Result::ok) {
        if let Some(rest) = l.split("serving ").nth(1) {
            base = rest
                .split_whitespace()
                .next()
                .unwrap()
                .trim_end_matches('/')
                .into();
            break;
        }
    }
    let client = reqwest::blocking::Client::builder()
        .timeout(std::time::Duration::from_secs(600))
        .build()
        .unwrap();
    let get = |path: &str| -> (f64, Value) {
        let t = Instant::now();
        let r = client.get(format!("{base}{path}")).send().unwrap();
        let status = r.status();
        let body: Value = serde_json::from_slice(&r.bytes().unwrap()).unwrap();
        assert!(status.is_success(), "{path}: {body}");
        (t.elapsed().as_secs_f64() * 1000.0, body)
    };
    let (_, listing) = get("/api/profiles");
    println!("listed: {}", listing["entries"].as_array().unwrap().len());
    let (ms, series) = get("/api/series?service=web&type=cpu");
    println!(
        "series of the week: {ms:.0} ms, {} captures, {} totals from records, {} from files",
        series["captures"], series["from_records"], series["from_files"]
    );
    // The timeline in Chromium, then a small range brushed and opened merged.
    let artefacts = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/tmp/ui-bench");
    std::fs::create_dir_all(&artefacts).unwrap();
    let plan = json!({"base": base, "chromium": std::env::var("AGENTPROF_CHROMIUM").unwrap_or("/usr/bin/chromium".into()),
        "artefacts": artefacts, "service": "web", "type": "cpu", "brush": [0.98, 0.995], "bench": true,
        "timeout_ms": 120000});
    std::fs::write(dir.path().join("plan.json"), plan.to_string()).unwrap();
    let out = Command::new("node")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser/timeline.mjs"))
        .arg(dir.path().join("plan.json"))
        .output()
        .unwrap();
    let seen: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or(json!({"error": String::from_utf8_lossy(&out.stderr)}));
    println!(
        "chromium: timeline of {} points drawn {} ms after the page's load ({} ms its request); a brushed range ({}) opened merged in {} ms{}",
        seen["timeline_points"],
        seen["timeline_ms"],
        seen["timeline_request_ms"],
        seen["range_text"],
        seen["merge_ms"],
        if seen["error"].is_null() {
            String::new()
        } else {
            format!("; error: {}", seen["error"])
        }
    );
    let pid = ui.id();
    println!("ui peak RSS before merging: {:.1} MiB", vm_hwm_mib(pid));
    let last = &files.last().unwrap().0;
    let end: jiff::Timestamp = last.parse().unwrap();
    let end = end + jiff::SignedDuration::from_secs(1);
    for (name, secs) in [("1 hour", 3600i64), ("1 day", 86_400)] {
        let from = end - jiff::SignedDuration::from_secs(secs);
        let sel = format!("sel:service=web&type=cpu&from={from}&to={end}");
        let (ms, top) = get(&format!("/api/top?id={}&nodes=20", enc(&sel)));
        let inside: Vec<&PathBuf> = files
            .iter()
            .filter(|(t, _)| {
                let t: jiff::Timestamp = t.parse().unwrap();
                t >= from && t < end
            })
            .map(|(_, f)| f)
            .collect();
        let merged = dir.path().join("go-merged.pb.gz");
        let t = Instant::now();
        let go = Command::new("go")
            .args(["tool", "pprof", "-proto"])
            .args(&inside)
            .output()
            .unwrap();
        let go_ms = t.elapsed().as_secs_f64() * 1000.0;
        std::fs::write(&merged, &go.stdout).unwrap();
        let cli = Command::new(&bin)
            .args(["top", "--json", "-n", "20"])
            .arg(&merged)
            .output()
            .unwrap();
        let cli: Value = serde_json::from_slice(&cli.stdout).unwrap_or(Value::Null);
        // The same top again (the merge kept), and go tool pprof -http showing the merged
        // file's top from its start, cold.
        let (warm_ms, _) = get(&format!("/api/top?id={}&nodes=20", enc(&sel)));
        let go_http_ms = go_http_top(&merged);
        println!(
            "merge of {name}: {} captures in {ms:.0} ms, again {warm_ms:.0} ms (go tool pprof -proto: {go_ms:.0} ms; go tool pprof -http of the merged file, start to its top page: {go_http_ms:.0} ms); ui peak RSS {:.1} MiB; table equal to go tool pprof's merge: {}",
            top["selection"]["captures"],
            vm_hwm_mib(pid),
            top["report"] == cli["report"]
        );
        if name == "1 hour" {
            let before = from - jiff::SignedDuration::from_secs(secs);
            let base_sel = format!("sel:service=web&type=cpu&from={before}&to={from}");
            let (ms, diff) = get(&format!(
                "/api/diff?base={}&id={}&nodes=20",
                enc(&base_sel),
                enc(&sel)
            ));
            println!(
                "the last hour compared with the hour before: {ms:.0} ms, {} changed functions",
                diff["rows_total"]
            );
        }
    }
    // The day again in a fresh ui each time (nothing in its memory), its whole hours read
    // from the rollups the first one kept: median of 5.
    {
        let from = end - jiff::SignedDuration::from_secs(86_400);
        let sel = format!("sel:service=web&type=cpu&from={from}&to={end}");
        let (mut listed, mut merged) = (Vec::new(), Vec::new());
        for _ in 0..5 {
            let (mut fresh, base) = start_ui(&bin, dir.path());
            let timed = |path: &str| {
                let t = Instant::now();
                let r = client.get(format!("{base}{path}")).send().unwrap();
                assert!(r.status().is_success(), "{path}");
                let _ = r.bytes().unwrap();
                t.elapsed().as_secs_f64() * 1000.0
            };
            listed.push(timed("/api/profiles"));
            merged.push(timed(&format!("/api/top?id={}&nodes=20", enc(&sel))));
            let _ = fresh.kill();
            let _ = fresh.wait();
        }
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        println!(
            "merge of 1 day in a fresh ui, its whole hours from the hourly rollups kept: median {:.0} ms (of {:.0?}), after the page's listing of the captures (median {:.0} ms)",
            median(&mut merged),
            merged,
            median(&mut listed)
        );
    }
    // A week grouped by dd-trace-go's `trace endpoint`, then one endpoint's share, from the
    // records' label index (no capture decoded).
    for (what, query) in [
        (
            "grouped by label:trace endpoint",
            "group_by=label:trace%20endpoint",
        ),
        (
            "of label trace endpoint=get_movies",
            "label=trace%20endpoint%3Dget_movies",
        ),
    ] {
        let (ms, series) = get(&format!("/api/series?service=web&type=cpu&{query}"));
        println!(
            "series of the week {what}: {ms:.0} ms, {} captures, {} groups; ui peak RSS {:.1} MiB",
            series["captures"],
            series["groups"].as_array().map_or(0, Vec::len),
            vm_hwm_mib(pid)
        );
    }
    // Without the records (pull's --out writes none): every total read off its file once.
    std::fs::remove_file(dir.path().join("prof/captures.jsonl")).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1100));
    for pass in ["first", "second"] {
        let (ms, series) = get("/api/series?service=web&type=cpu");
        println!(
            "series of the week without captures.jsonl, {pass} time: {ms:.0} ms ({} totals read off files, {} kept from before); ui peak RSS {:.1} MiB",
            series["from_files"],
            series["from_cache"],
            vm_hwm_mib(pid)
        );
    }
    let _ = ui.kill();
    let _ = ui.wait();
}

/// Starts the ui on `dir/prof`; its pid and address.
fn start_ui(bin: &Path, dir: &Path) -> (std::process::Child, String) {
    let mut ui = Command::new(bin)
        .current_dir(dir)
        .args(["ui", "prof", "--listen", "127.0.0.1:0", "--duration", "1h"])
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = BufReader::new(ui.stderr.take().unwrap());
    for l in err.lines().map_while(Result::ok) {
        if let Some(rest) = l.split("serving ").nth(1) {
            let base = rest
                .split_whitespace()
                .next()
                .unwrap()
                .trim_end_matches('/')
                .to_string();
            return (ui, base);
        }
    }
    let _ = ui.kill();
    let _ = ui.wait();
    panic!("the ui did not start");
}

fn large_flamegraph(bin: &Path, dir: &Path) {
    std::fs::create_dir_all(dir.join("prof/checkout")).unwrap();
    std::fs::write(
        dir.join("prof/checkout/cpu-2026-12-01T09:00:00.000Z.pb.gz"),
        gz(&large::large_profile()),
    )
    .unwrap();
    let runs = [
        3_000, 3_000, 3_000, 6_000, 6_000, 6_000, 12_000, 12_000, 12_000, 200_000,
    ];
    for (run, frames) in runs.into_iter().enumerate() {
        let (mut ui, base) = start_ui(bin, dir);
        let client = reqwest::blocking::Client::new();
        let id = "0/checkout/cpu-2026-12-01T09:00:00.000Z.pb.gz";
        let t = Instant::now();
        let top = client
            .get(format!("{base}/api/top?id={}", enc(id)))
            .send()
            .unwrap();
        assert!(top.status().is_success());
        let _ = top.bytes();
        let top_ms = t.elapsed().as_secs_f64() * 1000.0;
        let t = Instant::now();
        let svg = client
            .get(format!(
                "{base}/api/flamegraph.svg?id={}&frames={frames}",
                enc(id)
            ))
            .send()
            .unwrap()
            .bytes()
            .unwrap();
        let svg_ms = t.elapsed().as_secs_f64() * 1000.0;
        // A page that opens it afresh: the ui restarted, nothing kept.
        let _ = ui.kill();
        let _ = ui.wait();
        let (mut ui, base) = start_ui(bin, dir);
        let artefacts = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/tmp/ui-bench");
        std::fs::create_dir_all(&artefacts).unwrap();
        let plan = json!({"base": base, "chromium": std::env::var("AGENTPROF_CHROMIUM").unwrap_or("/usr/bin/chromium".into()),
            "artefacts": artefacts, "large": {"id": id, "search": "Serve12", "frames": frames}, "large_only": true, "timeout_ms": 120000});
        std::fs::write(dir.join("plan.json"), plan.to_string()).unwrap();
        let out = Command::new("node")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser/timeline.mjs"))
            .arg(dir.join("plan.json"))
            .output()
            .unwrap();
        let seen: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or(json!({"error": String::from_utf8_lossy(&out.stderr)}));
        println!(
            "run {run}, at most {frames} frames: top {top_ms:.0} ms, SVG drawn and sent {svg_ms:.0} ms ({} KB); in Chromium opened {} ms, searched {} ms, {} frames{}",
            svg.len() / 1000,
            seen["large_open_ms"],
            seen["large_search_ms"],
            seen["large_frames"],
            if seen["error"].is_null() {
                String::new()
            } else {
                format!("; error: {}", seen["error"])
            }
        );
        let _ = ui.kill();
        let _ = ui.wait();
    }
}

#[path = "support/release.rs"]
mod release;
