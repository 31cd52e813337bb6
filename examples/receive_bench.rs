//! `agentprof receive` under load, for the figures its issue asks for. Run by
//! `scripts/bench_receive.sh`:
//!
//!   cargo run --release --example receive_bench -- [--seconds S] [--concurrency C] [--zstd] [--dir D] [--agentprof PATH]
//!
//! The upload: the recorded dd-trace-go profiles of tests/fixtures/dd-trace-go-upload
//! (cpu, delta-heap, delta-block, delta-mutex, goroutines, metrics.json) with event.json, in
//! dd-trace-go's current form, as recorded (uncompressed), or with `--zstd` each attachment
//! zstd-compressed as dd-trace-go v2 sends them. C senders on loopback post it
//! back to back for S seconds (default 20 s, C = 16; C = 0: the probes alone, the unloaded
//! time to stored); once a second a probe upload with its
//! own tag measures the time from its 202 to its line in uploads.jsonl (the files written).
//! Printed: uploads/s acknowledged and stored, p50/p99 time to the 202, the probes' time to
//! stored, the receiver's peak RSS and CPU seconds, and what waited in the queue at the end.

#![allow(clippy::unwrap_used)]

use std::io::BufRead;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

fn arg(name: &str) -> Option<String> {
    let a: Vec<String> = std::env::args().collect();
    a.iter()
        .position(|x| x == name)
        .and_then(|i| a.get(i + 1).cloned())
}

/// The upload, its content type, and where in it the nine digits of its end's fraction of a
/// second are: each sender writes its own there, as each real upload has its own end.
fn upload(tags: &str, zstd: bool) -> (Vec<u8>, String, usize) {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dd-trace-go-upload");
    let names = [
        "cpu.pprof",
        "delta-heap.pprof",
        "delta-block.pprof",
        "delta-mutex.pprof",
        "goroutines.pprof",
        "metrics.json",
    ];
    let boundary = "benchboundary0123456789";
    let mut body = Vec::new();
    let mut part = |name: &str, file: &str, bytes: &[u8]| {
        body.extend(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{file}\"\r\nContent-Type: application/octet-stream\r\n\r\n"
            )
            .as_bytes(),
        );
        body.extend(bytes);
        body.extend(b"\r\n");
    };
    for n in names {
        let data = std::fs::read(dir.join(n)).unwrap();
        if zstd {
            // As dd-trace-go v2 sends every attachment.
            let z = ruzstd::encoding::compress_to_vec(
                &data[..],
                ruzstd::encoding::CompressionLevel::Fastest,
            );
            part(n, n, &z);
        } else {
            part(n, n, &data);
        }
    }
    let event = serde_json::json!({
        "start": "2026-12-01T10:00:00Z", "end": "2026-12-01T10:01:00.000000000Z",
        "attachments": names, "tags_profiler": tags, "family": "go", "version": "4",
    });
    part("event", "event.json", event.to_string().as_bytes());
    body.extend(format!("--{boundary}--\r\n").as_bytes());
    let mark = b"10:01:00.000000000Z";
    let at = body.windows(mark.len()).position(|w| w == mark).unwrap() + 9;
    (
        body,
        format!("multipart/form-data; boundary={boundary}"),
        at,
    )
}

fn status(pid: u32, key: &str) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        .unwrap_or(0.0)
        / 1024.0
}

fn cpu_s(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let f: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..]
        .split_whitespace()
        .collect();
    (f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap()) / 100.0
}

fn pct(v: &mut [f64], p: f64) -> Option<f64> {
    v.sort_by(|a, b| a.total_cmp(b));
    v.get(((v.len() as f64 - 1.0) * p).round() as usize)
        .copied()
}

fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let seconds: u64 = arg("--seconds").map_or(20, |s| s.parse().unwrap());
    let conc: usize = arg("--concurrency").map_or(16, |s| s.parse().unwrap());
    let agentprof = arg("--agentprof").unwrap_or_else(release_agentprof);
    let agentprof =
        std::fs::canonicalize(&agentprof).unwrap_or_else(|e| panic!("{agentprof}: {e}"));
    // `--dir D`: the receiver's files go under D and stay (the script removes them all at
    // the end): removing each run's hundred thousand files at once makes the next run's
    // file creation slower on ext4, which would be the bench's cost, not the receiver's.
    let _tmp;
    let dir = match arg("--dir") {
        Some(d) => tempfile::tempdir_in(d).unwrap().keep(),
        None => {
            _tmp = tempfile::tempdir().unwrap();
            _tmp.path().to_path_buf()
        }
    };
    let mut child = Command::new(&agentprof)
        .current_dir(&dir)
        .args([
            "receive",
            "--listen",
            "127.0.0.1:0",
            "--out",
            "out",
            "--queue",
            "queue",
            "--json",
        ])
        .env("AGENTPROF_CONFIG", "")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let err = child.stderr.take().unwrap();
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in std::io::BufReader::new(err).lines().map_while(Result::ok) {
            if let Some(rest) = l
                .split("listening on ")
                .nth(1)
                .and_then(|r| r.split_once("://"))
                .map(|(_, a)| a)
            {
                let _ = addr_tx.send(rest.split('/').next().unwrap().to_string());
            }
            if l.contains("stopped") {
                eprintln!("{l}");
            }
        }
    });
    let addr = addr_rx.recv_timeout(Duration::from_secs(20)).unwrap();
    let url = format!("http://{addr}/profiling/v1/input");
    // Stored lines as they come: the probes' arrival times.
    let stored = Arc::new(AtomicU64::new(0));
    let probes_seen = Arc::new(std::sync::Mutex::new(std::collections::HashMap::new()));
    {
        let out = child.stdout.take().unwrap();
        let (stored, seen) = (Arc::clone(&stored), Arc::clone(&probes_seen));
        std::thread::spawn(move || {
            for l in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                stored.fetch_add(1, Ordering::Relaxed);
                if let Some(i) = l.find("probe:") {
                    let id: String = l[i + 6..]
                        .chars()
                        .take_while(|c| c.is_ascii_digit())
                        .collect();
                    seen.lock().unwrap().insert(id, Instant::now());
                }
            }
        });
    }
    let zstd = std::env::args().any(|a| a == "--zstd");
    let (body, ct, at) = upload("service:bench,env:bench,version:1,runtime:go", zstd);
    let seq = Arc::new(AtomicU64::new(1));
    println!("upload: {} bytes", body.len());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let t0 = Instant::now();
    let cpu0 = cpu_s(pid);
    let (lat, acked, refused, probes) = rt.block_on(async {
        let client = reqwest::Client::builder().no_proxy().build().unwrap();
        let mut tasks = Vec::new();
        for _ in 0..conc {
            let (client, url, mut body, ct, stop, seq) = (
                client.clone(),
                url.clone(),
                body.clone(),
                ct.clone(),
                Arc::clone(&stop),
                Arc::clone(&seq),
            );
            tasks.push(tokio::spawn(async move {
                let mut lat = Vec::new();
                let mut refused = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let n = seq.fetch_add(1, Ordering::Relaxed);
                    body[at..at + 9].copy_from_slice(format!("{n:09}").as_bytes());
                    let t = Instant::now();
                    let r = client
                        .post(&url)
                        .header("content-type", &ct)
                        .body(body.clone())
                        .send()
                        .await;
                    match r {
                        Ok(r) if r.status().as_u16() == 202 => {
                            lat.push(t.elapsed().as_secs_f64() * 1000.0)
                        }
                        _ => refused += 1,
                    }
                }
                (lat, refused)
            }));
        }
        // The probes: one a second.
        let mut probes = Vec::new();
        for i in 0..seconds {
            tokio::time::sleep(Duration::from_secs(1)).await;
            let (b, c, _) = upload(&format!("service:bench,probe:{i}"), zstd);
            let r = client
                .post(&url)
                .header("content-type", c)
                .body(b)
                .send()
                .await;
            if r.is_ok_and(|r| r.status().as_u16() == 202) {
                probes.push((i.to_string(), Instant::now()));
            }
        }
        stop.store(true, Ordering::Relaxed);
        let mut lat = Vec::new();
        let mut refused = 0;
        for t in tasks {
            let (l, r) = t.await.unwrap();
            lat.extend(l);
            refused += r;
        }
        let acked = lat.len();
        (lat, acked, refused, probes)
    });
    let wall = t0.elapsed().as_secs_f64();
    let stored_at_stop = stored.load(Ordering::Relaxed);
    let hwm = status(pid, "VmHWM:");
    let cpu = cpu_s(pid) - cpu0;
    // Let the backlog drain, then stop it.
    let drain0 = Instant::now();
    while stored.load(Ordering::Relaxed) < (acked + probes.len()) as u64
        && drain0.elapsed() < Duration::from_secs(120)
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    let drained_s = drain0.elapsed().as_secs_f64();
    std::thread::sleep(Duration::from_millis(300));
    let mut to_stored: Vec<f64> = {
        let seen = probes_seen.lock().unwrap();
        probes
            .iter()
            .filter_map(|(id, acked_at)| {
                seen.get(id)
                    .map(|s| s.saturating_duration_since(*acked_at).as_secs_f64() * 1000.0)
            })
            .collect()
    };
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let _ = child.wait();
    let mut lat = lat;
    let report = serde_json::json!({
        "seconds": wall,
        "concurrency": conc,
        "upload_bytes": body.len(),
        "attachments": if zstd { "zstd" } else { "uncompressed" },
        "acknowledged": acked,
        "acknowledged_per_s": acked as f64 / wall,
        "refused": refused,
        "stored_during_load_per_s": stored_at_stop as f64 / wall,
        "backlog_at_stop": (acked as u64 + probes.len() as u64).saturating_sub(stored_at_stop),
        "backlog_drained_in_s": drained_s,
        "to_202_ms": {"p50": pct(&mut lat, 0.5), "p99": pct(&mut lat, 0.99)},
        "probe_202_to_stored_ms": {"p50": pct(&mut to_stored, 0.5), "max": pct(&mut to_stored, 1.0), "probes": to_stored.len()},
        "receiver_peak_rss_mib": hwm,
        "receiver_cpu_s": cpu,
    });
    println!("{}", serde_json::to_string_pretty(&report).unwrap());
}

#[path = "support/release.rs"]
mod release;
use release::release_agentprof;
