//! `agentprof receive` as a server on a network: hostile uploads within its memory budget,
//! stores that fail and are tried again, names no filesystem holds, a full disk, its
//! configuration checked, what clients send kept off the terminal, nothing stored twice.

use std::io::Write;
use std::time::{Duration, Instant};

use serde_json::json;

use super::receive::{Receiver, multipart, post, recorded_upload};
use crate::support::Sandbox;

fn gzip(b: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    e.write_all(b).unwrap();
    e.finish().unwrap()
}

/// A valid pprof profile whose string table holds one string of `n` bytes, gzipped: a few
/// KiB on the wire, `n` bytes decompressed.
fn inflating_profile(n: usize) -> Vec<u8> {
    use prost::Message;
    let p = agentprof::pprof::proto::Profile {
        string_table: vec![String::new(), "x".repeat(n)],
        ..Default::default()
    };
    gzip(&p.encode_to_vec())
}

/// The worst upload within the body limit: event.json and 200 gzip parts of a few KiB, each
/// a valid profile of 8 MiB decompressed (1.6 GB in all); with `lie`, each gzip trailer
/// states 1 KiB, so nothing is known before the parts are decompressed.
fn hostile_upload(lie: bool) -> (Vec<u8>, String) {
    let mut part = inflating_profile(8 << 20);
    if lie {
        let n = part.len();
        part[n - 4..].copy_from_slice(&1024u32.to_le_bytes());
    }
    let names: Vec<String> = (0..200).map(|i| format!("p{i}.pprof")).collect();
    let mut parts: Vec<(&str, Option<&str>, Vec<u8>)> = names
        .iter()
        .map(|n| (n.as_str(), Some(n.as_str()), part.clone()))
        .collect();
    let event = json!({"start": "2026-12-01T10:00:00Z", "end": "2026-12-01T10:01:00Z",
        "attachments": names, "tags_profiler": "service:hostile", "family": "go", "version": "4"});
    parts.push(("event", Some("event.json"), event.to_string().into_bytes()));
    multipart(&parts)
}

pub(super) fn vm_hwm_kib(pid: u32) -> u64 {
    crate::support::proc_status_kib(pid, "VmHWM:")
}

/// 16 clients sending the worst upload in a loop, and honest clients beside them: the
/// receiver's peak RSS stays under 256 MiB (the default memory budget is 192 MiB) and the
/// honest uploads are acknowledged and stored.
#[test]
fn sixteen_hostile_clients_cannot_take_the_receivers_memory() {
    let secs: u64 = std::env::var("AGENTPROF_HOSTILE_S")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(15);
    let sb = Sandbox::new();
    let rx = Receiver::start(&sb, &[]);
    let url = rx.url();
    let (hostile, hct) = hostile_upload(false);
    let (liar, _) = hostile_upload(true);
    eprintln!(
        "the hostile upload: {} bytes, 200 parts of 8 MiB decompressed (half the clients send it with gzip trailers that say 1 KiB)",
        hostile.len()
    );
    let end = Instant::now() + Duration::from_secs(secs);
    let answers = std::sync::Arc::new(std::sync::Mutex::new(
        std::collections::BTreeMap::<u16, u64>::new(),
    ));
    let mut threads = Vec::new();
    for i in 0..16 {
        let body = if i % 2 == 0 {
            hostile.clone()
        } else {
            liar.clone()
        };
        let (url, ct, answers) = (url.clone(), hct.clone(), answers.clone());
        threads.push(std::thread::spawn(move || {
            let c = reqwest::blocking::Client::new();
            while Instant::now() < end {
                let code = c
                    .post(&url)
                    .header("content-type", &ct)
                    .body(body.clone())
                    .timeout(Duration::from_secs(30))
                    .send()
                    .map_or(0, |r| r.status().as_u16());
                *answers.lock().unwrap().entry(code).or_default() += 1;
            }
        }));
    }
    let (mut honest, mut accepted) = (0u64, 0u64);
    while Instant::now() < end {
        let (body, ct) = recorded_upload("service:honest");
        honest += 1;
        if post(&url, body, &ct).0 == 202 {
            accepted += 1;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    for t in threads {
        t.join().unwrap();
    }
    let hwm = vm_hwm_kib(rx.pid());
    let hostile_answers = answers.lock().unwrap().clone();
    eprintln!(
        "measured: receive under 16 hostile clients for {secs} s: VmHWM {} MiB; hostile answers {hostile_answers:?}; honest uploads {accepted} of {honest} acknowledged (202)",
        hwm / 1024
    );
    assert!(hwm < 256 * 1024, "VmHWM {hwm} KiB");
    assert!(
        !hostile_answers.contains_key(&202),
        "a hostile upload was acknowledged: {hostile_answers:?}"
    );
    assert!(
        accepted * 10 >= honest * 9,
        "{accepted} of {honest} honest uploads acknowledged"
    );
    let mut stored = 0;
    while stored < accepted {
        assert_eq!(rx.next()["service"], "honest");
        stored += 1;
    }
}

/// receive.endpoints listed twice, or with a route's syntax, and numeric keys out of their
/// range are refused at load with the file and line, exit 2, no panic.
#[test]
fn receive_settings_are_checked_where_they_are_written() {
    let sb = Sandbox::new();
    for (yaml, says) in [
        (
            "receive:\n  endpoints: [/x, /x]\n",
            "agentprof.yaml:2:1: receive.endpoints: \"/x\" is listed twice",
        ),
        (
            "receive:\n  endpoints: [\"/a/{b\"]\n",
            "agentprof.yaml:2:1: receive.endpoints: \"/a/{b\" is not a plain path",
        ),
        (
            "receive:\n  listen: 127.0.0.1:0\n  memory_limit_mb: 0\n",
            "agentprof.yaml:3:1: receive.memory_limit_mb: 0 is outside 16 to 1048576",
        ),
    ] {
        sb.write("agentprof.yaml", yaml);
        let r = sb.run(&["receive", "--config", "agentprof.yaml", "--duration", "1s"]);
        assert_eq!(r.code, 2, "{yaml}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{yaml}: {}", r.stderr);
        assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    }
}

/// A store that fails (the service's directory cannot be made) keeps the upload in the
/// queue, says so, and stores it once the cause is gone; names no filesystem holds and
/// names of agentprof's own files are stored, set apart; two services whose names map to
/// one directory keep two; what a client sent never reaches the terminal raw.
#[test]
fn a_store_that_fails_is_tried_again_and_no_name_loses_an_upload() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.file("out")).unwrap();
    sb.write("out/blocked", "a file where the service's directory goes");
    let rx = Receiver::start(&sb, &[]);
    let (body, ct) = recorded_upload("service:blocked");
    assert_eq!(post(&rx.url(), body, &ct).0, 202);
    let t0 = Instant::now();
    while !rx.stderr.lock().unwrap().contains("cannot store an upload") {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "{}",
            rx.stderr.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::fs::remove_file(sb.file("out/blocked")).unwrap();
    let line = rx.next();
    assert_eq!(line["service"], "blocked");
    eprintln!(
        "measured: a store that failed was stored {:.1} s after its upload",
        t0.elapsed().as_secs_f64()
    );
    let long = "s".repeat(300);
    let escape = "evil\u{1b}[2J\u{1b}]0;title\u{7}";
    for service in [long.as_str(), "uploads.jsonl", "a b", "a_b", escape] {
        let (body, ct) = recorded_upload(&format!("service:{service}"));
        assert_eq!(post(&rx.url(), body, &ct).0, 202, "{service}");
    }
    let mut dirs = std::collections::BTreeSet::new();
    for _ in 0..5 {
        let l = rx.next();
        let file = l["attachments"][0]["file"].as_str().unwrap().to_string();
        assert!(
            std::path::Path::new(&sb.path().join(&file)).exists()
                || std::path::Path::new(&file).exists(),
            "{l}"
        );
        dirs.insert(std::path::Path::new(&file).parent().unwrap().to_path_buf());
    }
    assert_eq!(dirs.len(), 5, "five services, five directories: {dirs:?}");
    assert!(sb.file("out/uploads.jsonl").is_file());
    // A 300-character attachment name is stored too.
    let name = format!("{}.pprof", "n".repeat(300));
    let cpu = gzip(&std::fs::read(crate::support::fixture("cpu.pprof")).unwrap());
    let event = json!({"start": "2026-12-01T10:00:00Z", "end": "2026-12-01T10:01:00Z",
        "attachments": [name], "tags_profiler": "service:longname", "family": "go", "version": "4"});
    let (body, ct) = multipart(&[
        (name.as_str(), Some(name.as_str()), cpu),
        ("event", Some("event.json"), event.to_string().into_bytes()),
    ]);
    assert_eq!(post(&rx.url(), body, &ct).0, 202);
    assert!(rx.next()["attachments"][0]["file"].is_string());
    let stderr = rx.stop();
    assert!(
        !stderr.contains('\u{1b}'),
        "a raw escape reached the terminal"
    );
}

/// Below receive.min_free_mb free where uploads are stored, an upload gets 507 with
/// Retry-After, not 202.
#[test]
fn a_full_disk_refuses_uploads_instead_of_losing_them() {
    let sb = Sandbox::new();
    sb.write("agentprof.yaml", "receive:\n  min_free_mb: 1048576\n");
    let rx = Receiver::start(&sb, &["--config", "agentprof.yaml"]);
    let (body, ct) = recorded_upload("service:full");
    let r = reqwest::blocking::Client::new()
        .post(rx.url())
        .header("content-type", ct)
        .body(body)
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 507);
    assert_eq!(r.headers()["retry-after"], "5");
    let text = r.text().unwrap();
    assert!(text.contains("bytes free"), "{text}");
}

/// After a clean stop, a restart stores and forwards nothing twice, even with a forward
/// target that never answers; an event.json whose `start` is not a time is refused.
#[test]
fn a_restart_after_a_clean_stop_repeats_nothing() {
    let sb = Sandbox::new();
    let hung = format!(
        "http://{}/profiling/v1/input",
        crate::support::hung_server()
    );
    let rx = Receiver::start(&sb, &["--forward", &hung, "--spool", "spool"]);
    for i in 0..5 {
        let (body, ct) = recorded_upload(&format!("service:once,seq:{i}"));
        assert_eq!(post(&rx.url(), body, &ct).0, 202);
    }
    for _ in 0..5 {
        rx.next();
    }
    let event = json!({"start": 12, "attachments": ["cpu.pprof"], "tags_profiler": "service:x"});
    let cpu = gzip(&std::fs::read(crate::support::fixture("cpu.pprof")).unwrap());
    let (body, ct) = multipart(&[
        ("cpu.pprof", Some("cpu.pprof"), cpu),
        ("event", Some("event.json"), event.to_string().into_bytes()),
    ]);
    let (code, text) = post(&rx.url(), body, &ct);
    assert_eq!(code, 400, "{text}");
    assert!(text.contains("start"), "{text}");
    let t0 = Instant::now();
    rx.stop();
    assert!(t0.elapsed() < Duration::from_secs(8), "{:?}", t0.elapsed());
    let lines = || {
        std::fs::read_to_string(sb.file("out/uploads.jsonl"))
            .unwrap()
            .lines()
            .count()
    };
    assert_eq!(lines(), 5);
    let spooled = || {
        std::fs::read_dir(sb.file("spool"))
            .unwrap()
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "upload"))
            .count()
    };
    assert_eq!(spooled(), 5, "the forwards wait in the spool");
    let rx = Receiver::start(&sb, &["--forward", &hung, "--spool", "spool"]);
    std::thread::sleep(Duration::from_secs(2));
    let stderr = rx.stop();
    assert!(
        !stderr.contains("acknowledged by the previous run"),
        "{stderr}"
    );
    assert_eq!(lines(), 5, "nothing stored twice");
    assert_eq!(spooled(), 5, "nothing forwarded twice");
}

/// A real Go heap profile of 32,768 distinct stacks (far more than the 100,000 fields the
/// receiver once refused) is acknowledged and stored, and go tool pprof reads the stored file
/// with the totals of what the service served.
#[test]
fn large_real_go_profiles_are_accepted() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    // Killed when dropped, whatever the test does.
    let Some(svc) = crate::k8s::collect::pod_process_with("127.0.0.1:0", &["-bigheap", "15"])
    else {
        return;
    };
    let addr = svc.addrs[0].clone();
    let heap = reqwest::blocking::get(format!("http://{addr}/debug/pprof/heap"))
        .unwrap()
        .bytes()
        .unwrap()
        .to_vec();
    drop(svc);
    let sb = Sandbox::new();
    let served = sb.write_bytes("served.pb.gz", &heap);
    let refused = sb.run(&["top", "served.pb.gz", "--max-fields", "100000"]);
    assert_ne!(
        refused.code, 0,
        "the profile holds more than 100,000 fields"
    );
    let rx = Receiver::start(&sb, &[]);
    let event = json!({"start": "2026-12-01T10:00:00Z", "end": "2026-12-01T10:01:00Z",
        "attachments": ["heap.pprof"], "tags_profiler": "service:big", "family": "go", "version": "4"});
    let (body, ct) = multipart(&[
        ("heap.pprof", Some("heap.pprof"), heap.clone()),
        ("event", Some("event.json"), event.to_string().into_bytes()),
    ]);
    let (code, text) = post(&rx.url(), body, &ct);
    assert_eq!(code, 202, "{text}");
    let stored = rx.next();
    let file = stored["attachments"][0]["file"]
        .as_str()
        .unwrap()
        .to_string();
    let total = |f: &str| {
        crate::support::go(&[
            "tool",
            "pprof",
            "-top",
            "-nodecount=1",
            "-sample_index=inuse_space",
            f,
        ])
        .map(|t| {
            t.lines()
                .find(|l| l.contains("% of "))
                .unwrap_or_default()
                .to_string()
        })
    };
    let stored_path = sb.path().join(&file);
    let stored_path = if stored_path.exists() {
        stored_path
    } else {
        file.into()
    };
    assert_eq!(
        total(stored_path.to_str().unwrap()),
        total(served.to_str().unwrap())
    );
    eprintln!(
        "measured: a real Go heap profile of {} bytes (gzip) with more than 100,000 fields: acknowledged and stored",
        heap.len()
    );
}

/// The uploads series takes its language label from a fixed set: a client's own `language:`
/// tag (escape sequences, markup, a new name per upload) is `other`, so no client can grow
/// /metrics or write into it.
#[test]
fn the_language_label_is_one_of_a_fixed_set() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let sb = Sandbox::new();
    let metrics = format!("127.0.0.1:{port}");
    let rx = Receiver::start(&sb, &["--metrics-listen", &metrics]);
    let url = rx.url();
    let tags = [
        "service:a,language:go".to_string(),
        "service:b,language:\u{1b}[31mevil".to_string(),
        "service:c,language:cobol<i>".to_string(),
    ]
    .into_iter()
    .chain((0..20).map(|i| format!("service:d,language:lang{i}")));
    let mut sent = 0;
    for t in tags {
        let (body, ct) = recorded_upload(&t);
        assert_eq!(post(&url, body, &ct).0, 202, "{t}");
        rx.next();
        sent += 1;
    }
    let text = reqwest::blocking::get(format!("http://{metrics}/metrics"))
        .unwrap()
        .text()
        .unwrap();
    let series: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("agentprof_receive_uploads") && l.contains("language="))
        .collect();
    let languages: std::collections::BTreeSet<&str> = series
        .iter()
        .filter_map(|l| l.split("language=\"").nth(1)?.split('"').next())
        .collect();
    assert_eq!(
        languages,
        ["go", "other"].into_iter().collect(),
        "{sent} uploads: {series:?}"
    );
    assert!(!text.contains("evil") && !text.contains("cobol") && !text.contains("lang1"));
}
