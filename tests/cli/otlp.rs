//! OTLP profiles against the real OpenTelemetry Collector (otelcol, otlpreceiver and
//! otlphttpexporter v0.165.0, tests/go/otelcol): `pull --otlp` sends what it captured, the
//! collector's own exporter writes what it got back as pprof with code that shares nothing
//! with agentprof's, and its OTLP exporter (protobuf and JSON) sends it on to `agentprof
//! receive`; every profile read by `go tool pprof` the same at each step.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::receive::Receiver;
use crate::support::{Sandbox, go};

/// The test collector, running with its `pprofdir` exporter (and any others given).
pub struct Collector {
    child: Child,
    pub endpoint: String,
    pub dir: PathBuf,
    log: Arc<Mutex<String>>,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

impl Collector {
    /// Starts it with `exporters` (YAML under `exporters:`, indented two spaces) beside
    /// `pprofdir`, waiting for it to say it is ready (at most 120 s: a cold build's first
    /// start). None when Go is missing (a failure under CI).
    pub fn start(sb: &Sandbox, exporters: &str, names: &[&str]) -> Option<Collector> {
        let bin = crate::support::go_peer("otelcol")?;
        let port = free_port();
        let dir = sb.file("collected");
        let mut list = vec!["pprofdir"];
        list.extend_from_slice(names);
        let config = format!(
            "receivers:\n  otlp:\n    protocols:\n      http:\n        endpoint: 127.0.0.1:{port}\n\
             exporters:\n  pprofdir:\n    dir: {}\n{exporters}\
             service:\n  telemetry:\n    metrics:\n      level: none\n  pipelines:\n    profiles:\n      \
             receivers: [otlp]\n      exporters: [{}]\n",
            dir.display(),
            list.join(", ")
        );
        let path = sb.write("otelcol.yaml", &config);
        let mut child = Command::new(bin)
            .arg("--config")
            .arg(&path)
            .arg("--feature-gates=service.profilesSupport")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the collector");
        let log = Arc::new(Mutex::new(String::new()));
        let (ready_tx, ready) = std::sync::mpsc::channel();
        let err = child.stderr.take().expect("stderr");
        let l = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                if line.contains("Everything is ready") {
                    let _ = ready_tx.send(());
                }
                let mut s = l.lock().unwrap_or_else(|e| e.into_inner());
                s.push_str(&line);
                s.push('\n');
            }
        });
        if ready.recv_timeout(Duration::from_secs(120)).is_err() {
            let _ = child.kill();
            panic!("the collector did not start:\n{}", log.lock().unwrap());
        }
        Some(Collector {
            child,
            endpoint: format!("http://127.0.0.1:{port}"),
            dir,
            log,
        })
    }

    /// The profiles it wrote, once there are at least `n` (at most 60 s): each file's stem
    /// (`<request>-<resource>-<scope>-<profile>`) and what its .json says.
    pub fn received(&self, n: usize) -> BTreeMap<String, Value> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let got = self.profiles();
            if got.len() >= n {
                return got;
            }
            assert!(
                Instant::now() < deadline,
                "the collector wrote {} of {n} profiles:\n{}",
                got.len(),
                self.log.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn profiles(&self) -> BTreeMap<String, Value> {
        let Ok(rd) = std::fs::read_dir(&self.dir) else {
            return BTreeMap::new();
        };
        rd.flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let stem = name.strip_suffix(".pb.gz")?.to_string();
                let meta = std::fs::read(self.dir.join(format!("{stem}.json"))).ok()?;
                Some((stem, serde_json::from_slice(&meta).ok()?))
            })
            .collect()
    }
}

impl Drop for Collector {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `go tool pprof -traces` of one sample type, without the header lines that name the
/// file (the stacks, their values and labels).
fn traces(file: &Path, sample_index: Option<&str>) -> String {
    try_traces(file, sample_index)
        .unwrap_or_else(|| panic!("go tool pprof -traces {}", file.display()))
}

/// `traces`, or None when go tool pprof cannot read it so (no such sample type).
fn try_traces(file: &Path, sample_index: Option<&str>) -> Option<String> {
    let path = file.to_str().expect("utf-8 path");
    let index = sample_index.map(|s| format!("-sample_index={s}"));
    let mut args = vec!["tool", "pprof", "-traces"];
    if let Some(i) = &index {
        args.push(i);
    }
    args.push(path);
    let out = go(&args)?;
    Some(
        out.lines()
            .filter(|l| !l.starts_with("File:") && !l.starts_with("Build ID:"))
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

fn top(file: &Path, sample_index: Option<&str>) -> String {
    let path = file.to_str().expect("utf-8 path");
    let index = sample_index.map(|s| format!("-sample_index={s}"));
    let mut args = vec!["tool", "pprof", "-top", "-nodecount=100000"];
    if let Some(i) = &index {
        args.push(i);
    }
    args.push(path);
    let out = go(&args).unwrap_or_else(|| panic!("go tool pprof -top {path}"));
    out.lines()
        .filter(|l| !l.starts_with("File:") && !l.starts_with("Build ID:"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// A Go service with net/http/pprof (tests/go/pprofsvc) and its address.
struct Service(Child, String);

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn service() -> Option<Service> {
    let bin = crate::pull::service_binary()?;
    let mut child = Command::new(bin)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the service");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("address");
    let addr = line.split_whitespace().next().expect("addr").to_string();
    Some(Service(child, addr))
}

/// Two collections of every Go profile type from a real service, sent by `pull --otlp`
/// (with the original attached) to the real collector: each OTLP profile, converted back to
/// pprof by the collector's side, reads in `go tool pprof -traces` and `-top` as the capture
/// it came from does for that sample type; the original is byte for byte the file pull
/// stored; the resource is named by the semantic conventions. The collector's OTLP exporter
/// sends the same on to `agentprof receive` in protobuf and in JSON, and every profile
/// receive stores reads as one of the captures does.
#[test]
fn captures_cross_the_collector_and_come_back_identical() {
    let sb = Sandbox::new();
    let metrics = crate::receive_hostile::free_addr();
    let rx = Receiver::start(&sb, &["--metrics-listen", &metrics]);
    let exporters = format!(
        "  otlp_http/proto:\n    endpoint: http://{0}\n    encoding: proto\n    retry_on_failure:\n      enabled: false\n\
         \x20 otlp_http/json:\n    endpoint: http://{0}\n    encoding: json\n    retry_on_failure:\n      enabled: false\n",
        rx.addr
    );
    let Some(col) = Collector::start(&sb, &exporters, &["otlp_http/proto", "otlp_http/json"])
    else {
        return;
    };
    let Some(svc) = service() else {
        return;
    };
    let _cpu = crate::support::cpu_exclusive();
    let target = format!("http://{}", svc.1);
    let run = sb.run(&[
        "pull",
        &target,
        "--types",
        "cpu,heap,goroutine,mutex,block",
        "--profile-duration",
        "1s",
        "--count",
        "2",
        "--interval",
        "10s",
        "--out",
        "pulled",
        "--service",
        "shop",
        "--env",
        "prod",
        "--version",
        "1.2",
        "--otlp",
        &col.endpoint,
        "--otlp-original-payload",
    ]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let uploads = run
        .stdout
        .lines()
        .filter(|l| l.trim() == "uploaded")
        .count();
    assert_eq!(uploads, 2, "{}", run.stdout);
    // First collection: cpu (2 types) and goroutine (1); second: cpu, goroutine, and the
    // deltas of heap (4), mutex (2) and block (2).
    let got = col.received(3 + 11);
    let pulled = files_under(&sb.file("pulled"));
    let mut types = Vec::new();
    for (stem, meta) in &got {
        let group = stem.rsplit_once('-').expect("stem").0;
        let original = col.dir.join(format!("{group}-0.original"));
        let ty = meta["type"].as_str().expect("type");
        types.push(ty.to_string());
        let converted = col.dir.join(format!("{stem}.pb.gz"));
        assert_eq!(
            traces(&converted, None),
            traces(&original, Some(ty)),
            "{stem} ({ty}) against the profile sent"
        );
        assert_eq!(
            top(&converted, None),
            top(&original, Some(ty)),
            "{stem} ({ty})"
        );
        let bytes = std::fs::read(&original).expect("original");
        assert!(
            pulled
                .iter()
                .any(|p| std::fs::read(p).is_ok_and(|b| b == bytes)),
            "{group}: the original is no file pull stored"
        );
        let res = &meta["resource"];
        assert_eq!(res["service.name"], "shop", "{meta}");
        assert_eq!(res["deployment.environment.name"], "prod");
        assert_eq!(res["service.version"], "1.2");
        assert_eq!(res["process.runtime.name"], "go");
        assert!(res["host.name"].is_string(), "{meta}");
        assert!(res.get("profile_seq").is_none(), "{meta}");
        assert_eq!(meta["scope"], "agentprof");
    }
    // Every sample type of every profile sent (each group's original) arrived.
    let groups: std::collections::BTreeSet<&str> = got
        .keys()
        .filter_map(|k| Some(k.rsplit_once('-')?.0))
        .collect();
    let sent: usize = groups
        .iter()
        .map(|g| {
            let bytes = std::fs::read(col.dir.join(format!("{g}-0.original"))).expect("original");
            agentprof::pprof::decode(&bytes, &agentprof::pprof::Limits::local())
                .expect("the original decodes")
                .sample_type
                .len()
        })
        .sum();
    assert_eq!(sent, got.len(), "OTLP profiles sent and received");
    eprintln!(
        "measured: pull --otlp → the collector: {} pprof profiles sent as {sent} OTLP profiles; \
         the collector received {}, each identical to what was sent in go tool pprof -traces and -top",
        groups.len(),
        got.len()
    );
    for t in [
        "samples",
        "cpu",
        "goroutine",
        "alloc_objects",
        "alloc_space",
        "inuse_objects",
        "inuse_space",
        "contentions",
        "delay",
    ] {
        assert!(types.iter().any(|x| x == t), "{t}: {types:?}");
    }
    // The same two requests, on to agentprof receive in protobuf and in JSON: two uploads
    // stored, and the JSON copy of each found to be the same upload (its digest) and not
    // stored again — so the JSON decodes to exactly what the protobuf does.
    let lines: Vec<Value> = (0..2).map(|_| rx.next()).collect();
    crate::receive_hostile::wait_for("the JSON copies counted as the same uploads", || {
        crate::receive_hostile::metric(&metrics, "agentprof_receive_duplicates_total") >= 2.0
    });
    let captured: Vec<String> = pulled
        .iter()
        .filter(|p| p.to_string_lossy().ends_with(".pb.gz"))
        .map(|p| traces(p, None))
        .collect();
    for l in &lines {
        assert_eq!(l["service"], "shop", "{l}");
        assert_eq!(l["env"], "prod");
        assert_eq!(l["version"], "1.2");
        assert_eq!(l["language"], "go");
        let tags = l["tags"].to_string();
        assert!(tags.contains("ingest:otlp"), "{tags}");
        for a in l["attachments"].as_array().expect("attachments") {
            assert!(a["error"].is_null(), "{a}");
            let stored = sb.file(a["file"].as_str().expect("file"));
            let want = traces(&stored, None);
            assert!(
                captured.contains(&want),
                "{}: no capture reads as it does",
                stored.display()
            );
        }
    }
    let attachments: usize = lines
        .iter()
        .map(|l| l["attachments"].as_array().map_or(0, Vec::len))
        .sum();
    eprintln!(
        "measured: the collector's otlp_http exporter (protobuf and JSON) → receive: {} requests, \
         {attachments} pprof profiles stored, each identical to a capture in go tool pprof -traces; \
         the JSON copies were the same uploads",
        lines.len()
    );
    rx.stop();
}

/// A loopback pprof endpoint that serves only the recorded goroutine profile.
fn goroutine_target() -> String {
    crate::support::serve(|p, _| match p {
        "/debug/pprof/goroutine" => crate::support::reply(
            "200 OK",
            std::fs::read(crate::support::fixture("goroutines.pprof")).expect("fixture"),
        ),
        _ => crate::support::reply("404 Not Found", "404 page not found\n"),
    })
    .0
}

/// `pull` of `target`'s goroutine profile as service `svc`, each collection sent to the OTLP
/// endpoint `otlp` with `extra` flags, spooled in `spool`.
fn pull_to_otlp(sb: &Sandbox, target: &str, otlp: &str, extra: &[&str]) -> crate::support::Run {
    let mut args = vec![
        "pull",
        target,
        "--types",
        "goroutine",
        "--spool",
        "spool",
        "--service",
        "svc",
        "--otlp",
        otlp,
    ];
    args.extend_from_slice(extra);
    sb.run(&args)
}

fn spooled(sb: &Sandbox) -> usize {
    std::fs::read_dir(sb.file("spool/otlp"))
        .map(|d| {
            d.flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "upload"))
                .count()
        })
        .unwrap_or(0)
}

/// The real collector answers 503 while its exporter cannot write: the capture is kept and
/// its OTLP request waits in the spool (the dd-trace upload is not held up), and the next
/// run delivers it before its own. A 429 with Retry-After is waited and sent again; a 400
/// is refused for good, not spooled. Credentials of `--otlp-header` go with every request
/// and never into the spool.
#[test]
fn an_otlp_target_that_is_busy_or_down_loses_nothing() {
    let sb = Sandbox::new();
    let Some(col) = Collector::start(&sb, "", &[]) else {
        return;
    };
    let target = format!("http://{}", goroutine_target());
    let pull = |otlp: &str| {
        pull_to_otlp(
            &sb,
            &target,
            otlp,
            &["--otlp-header", "Authorization=Bearer s3cret"],
        )
    };
    std::fs::remove_dir_all(&col.dir).expect("make the exporter fail");
    let r = pull(&col.endpoint);
    assert_eq!(
        r.code, 0,
        "the profile was pulled; the request waits: {}",
        r.stderr
    );
    assert!(
        r.stdout.contains("HTTP 503") && r.stdout.contains("spooled"),
        "{}",
        r.stdout
    );
    assert_eq!(spooled(&sb), 1);
    let spool_text: String = files_under(&sb.file("spool"))
        .iter()
        .map(|p| String::from_utf8_lossy(&std::fs::read(p).unwrap_or_default()).into_owned())
        .collect();
    assert!(!spool_text.contains("s3cret"), "a credential in the spool");
    std::fs::create_dir_all(&col.dir).expect("the exporter can write again");
    let r = pull(&col.endpoint);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(spooled(&sb), 0, "{}", r.stdout);
    let got = col.received(2);
    assert_eq!(got.len(), 2, "the spooled request and this run's: {got:?}");
    for meta in got.values() {
        assert_eq!(meta["type"], "goroutine");
        assert_eq!(meta["resource"]["service.name"], "svc");
    }

    // 429 then 200: the Retry-After is waited, the request sent again.
    let (busy, seen) = crate::support::serve(|_, n| {
        let mut r = crate::support::reply(
            if n == 0 {
                "429 Too Many Requests"
            } else {
                "200 OK"
            },
            "",
        );
        r.headers.push(("Retry-After".into(), "1".into()));
        r
    });
    let r = pull(&format!("http://{busy}"));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("uploaded"), "{}", r.stdout);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "sent twice");
    for (path, headers, body) in &seen {
        assert_eq!(path, "/v1development/profiles");
        let h = |k: &str| {
            headers
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(h("content-type"), Some("application/x-protobuf"));
        assert_eq!(h("content-encoding"), Some("gzip"));
        assert_eq!(h("authorization"), Some("Bearer s3cret"));
        let raw = pprof_raw(body);
        let req =
            <otlp::proto::ExportProfilesServiceRequest as prost::Message>::decode(raw.as_slice())
                .expect("an ExportProfilesServiceRequest");
        assert_eq!(req.resource_profiles.len(), 1);
    }
    // 400: refused for good, not spooled.
    let (refusing, _) =
        crate::support::serve(|_, _| crate::support::reply("400 Bad Request", "no"));
    let r = pull(&format!("http://{refusing}"));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("refused for good"), "{}", r.stdout);
    assert_eq!(spooled(&sb), 0);
}

/// gzip's bytes, inflated.
fn pprof_raw(gz: &[u8]) -> Vec<u8> {
    use std::io::Read;
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(gz)
        .read_to_end(&mut out)
        .expect("gzip");
    out
}

pub fn post(url: &str, headers: &[(&str, &str)], body: Vec<u8>) -> (u16, String) {
    let c = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client");
    let mut r = c.post(url).body(body);
    for (k, v) in headers {
        r = r.header(*k, *v);
    }
    let r = r.send().expect("post");
    let code = r.status().as_u16();
    (code, r.text().unwrap_or_default())
}

/// An honest request of the dd-trace-go CPU fixture.
pub fn honest() -> otlp::proto::ExportProfilesServiceRequest {
    let bytes = std::fs::read(crate::support::fixture("cpu.pprof")).expect("fixture");
    let p = agentprof::pprof::decode(&bytes, &agentprof::pprof::Limits::local()).expect("decodes");
    let mut e = otlp::export::Export::new();
    let resource = vec![("service.name".to_string(), "honest".to_string())];
    e.add(
        &p,
        &otlp::export::Source {
            resource: &resource,
            original: None,
        },
    );
    e.finish()
}

/// OTLP requests that are cut, malformed, point outside their tables, hold a million empty
/// samples, inflate past the limit or come in a type OTLP does not have: each is
/// refused with what is wrong (400, 413, 415) before it is stored (five million empty samples
/// in 10 MB before they are decoded), and an honest request
/// after them is stored.
#[test]
fn hostile_otlp_requests_are_refused_with_what_is_wrong() {
    use prost::Message;
    let sb = Sandbox::new();
    let rx = Receiver::start(&sb, &[]);
    let url = format!("http://{}/v1development/profiles", rx.addr);
    let proto = [("content-type", "application/x-protobuf")];
    let good = honest().encode_to_vec();
    let mut outside = honest();
    outside.resource_profiles[0].scope_profiles[0].profiles[0].samples[0].stack_index = 1 << 20;
    let mut million = Vec::new();
    for _ in 0..5_000_000 {
        million.extend_from_slice(&[0x12, 0x00]);
    }
    let nest = |field: u8, inner: &[u8]| {
        let mut out = vec![field];
        agentprof::pprof::proto::put_varint(&mut out, inner.len() as u64);
        out.extend_from_slice(inner);
        out
    };
    let million = nest(0x0a, &nest(0x12, &nest(0x12, &million)));
    let bomb = {
        use std::io::Write;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(&vec![0u8; 200 << 20]).expect("gzip");
        gz.finish().expect("gzip")
    };
    // What is sent (name, headers, body) and what must come back (status, words).
    type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, Vec<u8>, u16, &'a str);
    let cases: Vec<Case> = vec![
        (
            "cut",
            proto.to_vec(),
            good[..good.len() / 2].to_vec(),
            400,
            "OTLP protobuf",
        ),
        (
            "outside",
            proto.to_vec(),
            outside.encode_to_vec(),
            400,
            "stack index 1048576",
        ),
        ("millions", proto.to_vec(), million, 413, "bytes, over the"),
        (
            "bomb",
            vec![
                ("content-type", "application/x-protobuf"),
                ("content-encoding", "gzip"),
            ],
            bomb,
            413,
            "decompressed",
        ),
        (
            // 7 MB of JSON would take more to parse than the whole memory budget: 413, not a
            // 503 the client would retry for ever.
            "json-huge",
            vec![("content-type", "application/json")],
            format!(
                "{{\"resourceProfiles\": [], \"pad\": \"{}\"}}",
                " ".repeat(7 << 20)
            )
            .into_bytes(),
            413,
            "memory_limit_mb",
        ),
        (
            // 1.75 million `{}`: 5.25 MB whose parse and body (189 MB) fit the 192 MiB budget
            // but not what one large request may hold (the budget less the 24 MiB kept for
            // small uploads). Waiting cannot make it fit: 413, not 503 for ever.
            "json-past-the-large-share",
            vec![("content-type", "application/json")],
            format!(
                "{{\"resourceProfiles\": [], \"pad\": [{}{{}}]}}",
                "{},".repeat(1_750_000)
            )
            .into_bytes(),
            413,
            "less the room kept for small uploads",
        ),
        (
            "json",
            vec![("content-type", "application/json")],
            b"{\"resourceProfiles\": 3}".to_vec(),
            400,
            "OTLP/JSON",
        ),
        (
            "type",
            vec![("content-type", "text/plain")],
            good.clone(),
            415,
            "application/x-protobuf",
        ),
        (
            "encoding",
            vec![
                ("content-type", "application/x-protobuf"),
                ("content-encoding", "br"),
            ],
            good.clone(),
            415,
            "Content-Encoding br",
        ),
    ];
    for (what, headers, body, code, words) in cases {
        let len = body.len();
        let (got, text) = post(&url, &headers, body);
        if what == "json-past-the-large-share" {
            eprintln!("measured: OTLP/JSON of {len} bytes that can never fit: {got} {text}");
        }
        assert_eq!(got, code, "{what}: {text}");
        assert!(text.contains(words), "{what}: {text}");
    }
    let (got, text) = post(&url, &proto, good);
    assert_eq!(got, 200, "{text}");
    let l = rx.next();
    assert_eq!(l["service"], "honest");
    let stderr = rx.stop();
    assert!(stderr.contains("stopped: 1 stored"), "{stderr}");
}

/// `receive --forward-otlp` to the real collector: a recorded dd-trace-go upload (five
/// profiles, one of them gzip, and metrics.json) goes on as one OTLP request whose profiles,
/// converted back by the collector, read in go tool pprof as the five files do, under the
/// upload's service, env and version and agentprof.yaml's tags.
#[test]
fn receive_forwards_uploads_to_the_collector_as_otlp() {
    let sb = Sandbox::new();
    let Some(col) = Collector::start(&sb, "", &[]) else {
        return;
    };
    sb.write("agentprof.yaml", "tags: [team:core]\n");
    let rx = Receiver::start(
        &sb,
        &[
            "--config",
            "agentprof.yaml",
            "--forward-otlp",
            &col.endpoint,
            "--spool",
            "fspool",
        ],
    );
    let (body, ct) = crate::receive::recorded_upload("service:fwd,env:prod,version:3,runtime:go");
    let (code, text) =
        crate::receive::post(&format!("http://{}/profiling/v1/input", rx.addr), body, &ct);
    assert_eq!(code, 202, "{text}");
    rx.next();
    // cpu (2 types), heap (4), block (2), mutex (2), goroutine (1).
    let got = col.received(11);
    assert_eq!(got.len(), 11, "{got:?}");
    let names = [
        "cpu.pprof",
        "delta-heap.pprof",
        "delta-block.pprof",
        "delta-mutex.pprof",
        "goroutines.pprof",
    ];
    for (stem, meta) in &got {
        let res = &meta["resource"];
        assert_eq!(res["service.name"], "fwd", "{meta}");
        assert_eq!(res["deployment.environment.name"], "prod");
        assert_eq!(res["service.version"], "3");
        assert_eq!(res["team"], "core");
        let ty = meta["type"].as_str().expect("type");
        let converted = traces(&col.dir.join(format!("{stem}.pb.gz")), None);
        let matched = names
            .iter()
            .any(|n| try_traces(&crate::support::fixture(n), Some(ty)) == Some(converted.clone()));
        assert!(matched, "{stem} ({ty}) reads as none of the files sent");
    }
    eprintln!(
        "measured: receive --forward-otlp → the collector: 1 upload of 5 pprof profiles, {} OTLP \
         profiles received, each identical to the profile sent in go tool pprof -traces",
        got.len()
    );
    let stderr = rx.stop();
    assert!(
        stderr.contains("stopped: 1 stored, none refused"),
        "{stderr}"
    );
}

/// `receive --forward-otlp` to a target that throttles (429 with Retry-After: 1) and then is
/// down for a while (503): each upload is delivered once, after the Retry-After was waited
/// and the 503s retried from the spool, in the order received; none is lost or sent twice.
#[test]
fn receive_forwards_to_an_otlp_target_that_throttles_then_fails_each_upload_once() {
    let sb = Sandbox::new();
    // Request 0: 429 (wait 1 s); 1–5: 503; then 200.
    let (target, seen) = crate::support::throttling_then_failing(5);
    let rx = Receiver::start(
        &sb,
        &[
            "--forward-otlp",
            &format!("http://{target}"),
            "--spool",
            "spool",
        ],
    );
    let started = std::time::Instant::now();
    for i in 0..3 {
        let (body, ct) = crate::receive::recorded_upload(&format!("service:busy,seq:{i}"));
        assert_eq!(crate::receive::post(&rx.url(), body, &ct).0, 202);
        rx.next();
    }
    crate::receive_hostile::wait_for("the three uploads delivered", || {
        seen.lock().unwrap().len() >= 6 + 3
    });
    let elapsed = started.elapsed();
    let stderr = rx.stop();
    let seen = seen.lock().unwrap().clone();
    // Each delivered request is an OTLP export of one upload; the last three are the three.
    let delivered: Vec<String> = seen[6..]
        .iter()
        .map(|(_, _, body)| {
            let raw = pprof_raw(body);
            let req = <otlp::proto::ExportProfilesServiceRequest as prost::Message>::decode(
                raw.as_slice(),
            )
            .expect("an ExportProfilesServiceRequest");
            format!("{:?}", req.resource_profiles[0].resource)
        })
        .collect();
    assert_eq!(
        seen.len(),
        9,
        "sent once each after the 6 refusals: {stderr}"
    );
    for (i, d) in delivered.iter().enumerate() {
        assert!(d.contains(&format!("seq:{i}")) || d.contains("busy"), "{d}");
    }
    assert!(
        elapsed >= std::time::Duration::from_secs(1),
        "the Retry-After was waited"
    );
    eprintln!(
        "measured: receive --forward-otlp to a target answering 429 (Retry-After 1) then 503 ×5: \
         3 uploads delivered once each after {} requests, in {:.1} s",
        seen.len(),
        elapsed.as_secs_f64()
    );
}

/// A loopback intake that reads each request whole and never answers its first `silent`
/// ones (the connection held open), then answers 200; the requests it read.
fn silent_then_answering(silent: usize) -> (String, Arc<Mutex<Vec<crate::support::Seen>>>) {
    crate::support::serve(move |_, n| {
        let mut r = crate::support::reply("200 OK", "");
        if n < silent {
            r.delay = std::time::Duration::from_secs(3600);
        }
        r
    })
}

/// A target that reads a request and never answers is bounded by `--upload-timeout`: `pull
/// --otlp` gives up after its attempts (not after 30 s each) and keeps the request in its
/// spool; `receive --forward-otlp --forward-timeout` retries from the spool and, once the
/// target answers, delivers each upload once.
#[test]
fn a_silent_otlp_target_is_bounded_by_the_request_timeout() {
    let sb = Sandbox::new();
    let (silent, _) = silent_then_answering(usize::MAX);
    let target = format!("http://{}", goroutine_target());
    let started = std::time::Instant::now();
    let r = pull_to_otlp(
        &sb,
        &target,
        &format!("http://{silent}"),
        &["--upload-timeout", "1s"],
    );
    let pulled_in = started.elapsed();
    assert_eq!(r.code, 0, "the profile was pulled: {}", r.stderr);
    assert!(
        r.stdout.contains("spooled") && r.stdout.contains("timed out"),
        "{}",
        r.stdout
    );
    assert_eq!(spooled(&sb), 1);
    // Four attempts of 1 s and their backoffs; a default 30 s would take two minutes.
    assert!(
        pulled_in < std::time::Duration::from_secs(30),
        "{pulled_in:?}"
    );
    let r = sb.run(&["pull", "--upload-timeout", "0s", &target]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("--upload-timeout"), "{}", r.stderr);

    // Silent for its first two requests, then answering.
    let (target, seen) = silent_then_answering(2);
    let rx = Receiver::start(
        &sb,
        &[
            "--forward-otlp",
            &format!("http://{target}"),
            "--forward-timeout",
            "1s",
            "--spool",
            "rx-spool",
        ],
    );
    for i in 0..3 {
        let (body, ct) = crate::receive::recorded_upload(&format!("service:quiet,seq:{i}"));
        assert_eq!(crate::receive::post(&rx.url(), body, &ct).0, 202);
        rx.next();
    }
    crate::receive_hostile::wait_for("the three uploads delivered", || {
        seen.lock().unwrap().len() >= 2 + 3
    });
    let stderr = rx.stop();
    let seen = seen.lock().unwrap().clone();
    let answered: std::collections::HashSet<&Vec<u8>> =
        seen[2..].iter().map(|(_, _, body)| body).collect();
    eprintln!(
        "measured: pull --otlp to a silent target with --upload-timeout 1s: spooled after \
         {:.1} s; receive --forward-otlp --forward-timeout 1s to a target silent twice: \
         {} requests, {} distinct answered",
        pulled_in.as_secs_f64(),
        seen.len(),
        answered.len()
    );
    assert_eq!(seen.len(), 5, "two unanswered, then one each: {stderr}");
    assert_eq!(answered.len(), 3, "each upload answered once: {stderr}");
}
