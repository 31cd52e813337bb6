//! Pyroscope's clients against `agentprof receive`: grafana/pyroscope-go v1.5.0 in a Go
//! service (`POST /ingest`, pprof in a multipart form), Pyroscope's Python SDK pyroscope-io
//! 1.4.0 (`POST /push.v1.PusherService/Push`), and the forms no installed client sends
//! (folded, lines, prev_profile, jfr) written as Pyroscope's API documents them. What is
//! stored is what the client sent.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::receive::Receiver;
use crate::support::{Sandbox, go};

fn stored_files(sb: &Sandbox, lines: &[Value]) -> Vec<(String, Vec<u8>)> {
    lines
        .iter()
        .flat_map(|l| l["attachments"].as_array().cloned().unwrap_or_default())
        .map(|a| {
            let f = sb.file(a["file"].as_str().expect("file"));
            (
                a["type"].as_str().unwrap_or_default().to_string(),
                std::fs::read(f).expect("stored"),
            )
        })
        .collect()
}

/// pyroscope-go v1.5.0 (CPU, the four heap types, goroutines, mutex and block, a 1 s upload
/// rate) sending to receive for 4 s: every request is answered 200, every profile it sent is
/// stored byte for byte, each upload named by the application and its labels, of every type.
#[test]
fn pyroscope_go_profiles_are_stored_as_sent() {
    let Some(bin) = crate::support::go_peer("pyroscope") else {
        return;
    };
    let sb = Sandbox::new();
    let rx = Receiver::start(&sb, &[]);
    let sent = sb.file("sent");
    let _cpu = crate::support::cpu_exclusive();
    let st = Command::new(bin)
        .args([
            "-server",
            &format!("http://{}", rx.addr),
            "-run",
            "4s",
            "-sent",
        ])
        .arg(&sent)
        .stdout(Stdio::null())
        .status()
        .expect("run the pyroscope-go service");
    assert!(st.success());
    let mut requests: Vec<String> = std::fs::read_dir(&sent)
        .expect("sent")
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_suffix(".query")
                .map(String::from)
        })
        .collect();
    requests.sort();
    assert!(requests.len() >= 5, "{requests:?}");
    let lines: Vec<Value> = requests.iter().map(|_| rx.next()).collect();
    let stored = stored_files(&sb, &lines);
    let mut types = Vec::new();
    for r in &requests {
        let status = std::fs::read_to_string(sent.join(format!("{r}.status"))).expect("status");
        assert_eq!(status, "200 OK", "{r}");
        let profile = std::fs::read(sent.join(format!("{r}.profile"))).expect("profile");
        let (ty, _) = stored
            .iter()
            .find(|(_, b)| *b == profile)
            .unwrap_or_else(|| panic!("request {r}: its profile is not stored as sent"));
        types.push(ty.clone());
    }
    for t in ["cpu", "heap", "goroutine", "mutex", "block"] {
        assert!(types.iter().any(|x| x == t), "{t}: {types:?}");
    }
    eprintln!(
        "measured: pyroscope-go v1.5.0 → receive /ingest: {} requests, {} profiles, all answered \
         200 and stored byte for byte ({})",
        requests.len(),
        types.len(),
        types.join(" ")
    );
    for l in &lines {
        assert_eq!(l["service"], "pyro.app", "{l}");
        assert_eq!(l["language"], "go");
        let tags = l["tags"].to_string();
        for t in [
            "region:eu",
            "team:core",
            "ingest:pyroscope",
            "spy_name:gospy",
        ] {
            assert!(tags.contains(t), "{t}: {tags}");
        }
        assert!(l["duration_s"].as_f64().unwrap_or(0.0) > 0.0, "{l}");
    }
    // The CPU profile is about the spinning function, as go tool pprof reads it.
    let cpu = lines
        .iter()
        .flat_map(|l| l["attachments"].as_array().cloned().unwrap_or_default())
        .find(|a| a["type"] == "cpu")
        .expect("a cpu profile");
    let file = sb.file(cpu["file"].as_str().expect("file"));
    let top = go(&["tool", "pprof", "-top", file.to_str().expect("path")]).expect("go tool pprof");
    assert!(top.contains("main.spin"), "{top}");
    rx.stop();
}

/// Bytes inflated when they are gzip, else as they are.
fn inflated(b: &[u8]) -> Vec<u8> {
    if !b.starts_with(&[0x1f, 0x8b]) {
        return b.to_vec();
    }
    use std::io::Read;
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(b)
        .read_to_end(&mut out)
        .expect("gzip");
    out
}

/// The raw profiles of a push request's body (gzip or not): series (1) → samples (2) →
/// raw_profile (1), read field by field.
fn push_profiles(body: &[u8]) -> Vec<Vec<u8>> {
    fn varint(b: &[u8], at: &mut usize) -> u64 {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let x = b[*at];
            *at += 1;
            v |= u64::from(x & 0x7f) << shift;
            if x < 0x80 {
                break;
            }
        }
        v
    }
    fn fields(b: &[u8]) -> Vec<(u64, &[u8])> {
        let mut out = Vec::new();
        let mut at = 0;
        while at < b.len() {
            let key = varint(b, &mut at);
            match key & 7 {
                0 => {
                    varint(b, &mut at);
                }
                2 => {
                    let n = varint(b, &mut at) as usize;
                    out.push((key >> 3, &b[at..at + n]));
                    at += n;
                }
                w => panic!("wire type {w} in a push request"),
            }
        }
        out
    }
    let raw = inflated(body);
    let mut out = Vec::new();
    for (f, series) in fields(&raw) {
        if f != 1 {
            continue;
        }
        for (f, sample) in fields(series) {
            if f != 2 {
                continue;
            }
            for (f, profile) in fields(sample) {
                if f == 1 {
                    out.push(profile.to_vec());
                }
            }
        }
    }
    out
}

/// Pyroscope's Python SDK (pyroscope-io 1.4.0, py-spy inside, a 1 s upload interval) in a
/// script that spins in `busy` for 3 s, sending to receive through a recording proxy: every
/// push is answered 200, every profile it pushed is stored byte for byte (so its sample
/// counts and stacks are the SDK's own), and go tool pprof reads `busy` in them.
#[test]
fn pyroscope_python_pushes_are_stored_as_sent() {
    let Some(python) = crate::support::venv_python() else {
        return;
    };
    let sb = Sandbox::new();
    let rx = Receiver::start(&sb, &[]);
    let script = sb.write(
        "app.py",
        r#"
import http.server, os, sys, threading, time, urllib.request
import pyroscope

target, sent = sys.argv[1], sys.argv[2]
os.makedirs(sent, exist_ok=True)
n = 0

class Proxy(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        global n
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        n += 1
        with open(os.path.join(sent, "%04d.body" % n), "wb") as f:
            f.write(body)
        req = urllib.request.Request(target + self.path, data=body, method="POST")
        for k in ("content-type", "content-encoding"):
            if self.headers.get(k):
                req.add_header(k, self.headers[k])
        with urllib.request.urlopen(req, timeout=30) as r:
            status, answer = r.status, r.read()
        with open(os.path.join(sent, "%04d.status" % n), "w") as f:
            f.write(str(status))
        self.send_response(status)
        self.send_header("content-type", "application/proto")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *a):
        pass

proxy = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
threading.Thread(target=proxy.serve_forever, daemon=True).start()
pyroscope.configure(application_name="py.app", server_address="http://127.0.0.1:%d" % proxy.server_port,
                    tags={"team": "core"}, upload_interval=1)

def busy():
    x = 0
    for i in range(100000):
        x += i * i
    return x

end = time.time() + 3
while time.time() < end:
    busy()
pyroscope.shutdown()
"#,
    );
    let sent = sb.file("sent");
    let _cpu = crate::support::cpu_exclusive();
    let st = Command::new(&python)
        .arg(&script)
        .arg(format!("http://{}", rx.addr))
        .arg(&sent)
        .stdout(Stdio::null())
        .status()
        .expect("run the script");
    assert!(st.success());
    let mut bodies: Vec<std::path::PathBuf> = std::fs::read_dir(&sent)
        .expect("sent")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "body"))
        .collect();
    bodies.sort();
    assert!(bodies.len() >= 2, "{bodies:?}");
    let pushed: Vec<Vec<u8>> = bodies
        .iter()
        .flat_map(|b| push_profiles(&std::fs::read(b).expect("body")))
        .collect();
    for b in &bodies {
        let status = std::fs::read_to_string(b.with_extension("status")).expect("status");
        assert_eq!(status, "200", "{}", b.display());
    }
    let lines: Vec<Value> = bodies.iter().map(|_| rx.next()).collect();
    // Stored gzip-compressed (go tool pprof's form): the same bytes inflated.
    let stored: Vec<(String, Vec<u8>)> = stored_files(&sb, &lines)
        .into_iter()
        .map(|(t, b)| (t, inflated(&b)))
        .collect();
    assert_eq!(stored.len(), pushed.len());
    for p in &pushed {
        assert!(
            stored.iter().any(|(t, b)| b == &inflated(p) && t == "cpu"),
            "a pushed profile is not stored as sent"
        );
    }
    eprintln!(
        "measured: pyroscope-io 1.4.0 → receive /push.v1.PusherService/Push: {} pushes, {} \
         profiles, all answered 200 and stored as sent",
        bodies.len(),
        pushed.len()
    );
    for l in &lines {
        assert_eq!(l["service"], "py.app", "{l}");
        assert_eq!(l["language"], "python");
        let tags = l["tags"].to_string();
        assert!(
            tags.contains("team:core") && tags.contains("ingest:pyroscope"),
            "{tags}"
        );
    }
    let busy = lines.iter().any(|l| {
        let f = sb.file(l["attachments"][0]["file"].as_str().unwrap_or_default());
        go(&["tool", "pprof", "-top", f.to_str().unwrap_or_default()])
            .is_some_and(|t| t.contains("busy"))
    });
    assert!(busy, "no profile shows busy");
    rx.stop();
}

fn post(url: &str, ctype: &str, body: Vec<u8>) -> (u16, String) {
    let c = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client");
    let r = c
        .post(url)
        .header("content-type", ctype)
        .body(body)
        .send()
        .expect("post");
    let code = r.status().as_u16();
    (code, r.text().unwrap_or_default())
}

fn traces(file: &Path) -> String {
    go(&["tool", "pprof", "-traces", file.to_str().expect("path")]).expect("go tool pprof -traces")
}

/// The ingest forms no installed client sends, as Pyroscope's API documents them: folded
/// stacks and `lines` become a pprof profile whose stacks and counts are those of the text
/// (root first, same stacks summed); `prev_profile` is subtracted from `profile` for the
/// types `sample_type_config` marks cumulative; `jfr` is stored as sent; bad requests are
/// refused with what is wrong.
#[test]
fn pyroscope_s_other_forms_and_bad_requests() {
    if !crate::support::require_go() {
        return;
    }
    let sb = Sandbox::new();
    let rx = Receiver::start(&sb, &[]);
    let base = format!("http://{}/ingest", rx.addr);
    let from = 1_700_000_000u64;
    let (code, text) = post(
        &format!(
            "{base}?name=shop.cpu%7Benv%3Dprod%7D&from={from}&until={}&format=folded&sampleRate=100&spyName=pyspy",
            from + 10
        ),
        "text/plain",
        b"main;work;spin 3\nmain;idle 2\nmain;work;spin 1\n".to_vec(),
    );
    assert_eq!(code, 200, "{text}");
    let l = rx.next();
    assert_eq!(l["service"], "shop");
    assert_eq!(l["env"], "prod");
    assert_eq!(l["language"], "python");
    assert_eq!(l["duration_s"], 10.0);
    let f = sb.file(l["attachments"][0]["file"].as_str().expect("file"));
    let t = traces(&f);
    assert!(
        t.contains("4   spin\n             work\n             main"),
        "{t}"
    );
    assert!(t.contains("2   idle\n             main"), "{t}");
    let (code, text) = post(
        &format!("{base}?name=shop.cpu&format=lines"),
        "text/plain",
        b"a;b\na;b\na;c\n".to_vec(),
    );
    assert_eq!(code, 200, "{text}");
    let f = sb.file(rx.next()["attachments"][0]["file"].as_str().expect("file"));
    let t = traces(&f);
    assert!(t.contains("2   b\n             a"), "{t}");
    assert!(t.contains("1   c\n             a"), "{t}");

    // prev_profile: a cumulative heap's two readings; what is stored is the difference.
    let heap = |alloc: i64, inuse: i64| {
        use prost::Message;
        let strings = ["", "alloc_space", "bytes", "inuse_space", "main.grow"];
        let p = agentprof::pprof::proto::Profile {
            sample_type: vec![
                agentprof::pprof::proto::ValueType { r#type: 1, unit: 2 },
                agentprof::pprof::proto::ValueType { r#type: 3, unit: 2 },
            ],
            sample: vec![agentprof::pprof::proto::Sample {
                location_id: vec![1],
                value: vec![alloc, inuse],
                label: vec![],
            }],
            location: vec![agentprof::pprof::proto::Location {
                id: 1,
                line: vec![agentprof::pprof::proto::Line {
                    function_id: 1,
                    line: 3,
                    column: 0,
                }],
                ..Default::default()
            }],
            function: vec![agentprof::pprof::proto::Function {
                id: 1,
                name: 4,
                system_name: 4,
                ..Default::default()
            }],
            string_table: strings.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        };
        p.encode_to_vec()
    };
    let (body, ctype) = crate::receive::multipart(&[
        ("profile", Some("profile.pprof"), heap(5000, 700)),
        ("prev_profile", Some("profile.pprof"), heap(3000, 400)),
        ("sample_type_config", Some("sample_type_config.json"), br#"{"alloc_space":{"units":"bytes","cumulative":true},"inuse_space":{"units":"bytes"}}"#.to_vec()),
    ]);
    let (code, text) = post(&format!("{base}?name=svc&spyName=gospy"), &ctype, body);
    assert_eq!(code, 200, "{text}");
    let a = &rx.next()["attachments"][0];
    assert_eq!(a["type"], "heap");
    let f = sb.file(a["file"].as_str().expect("file"));
    let alloc = go(&["tool", "pprof", "-raw", f.to_str().expect("path")]).expect("raw");
    assert!(
        alloc.contains("2000        700: 1"),
        "alloc_space 5000 − 3000, inuse_space kept: {alloc}"
    );

    // jfr: stored as sent.
    let jfr = b"FLR\0 a recording".to_vec();
    let (code, text) = post(
        &format!("{base}?name=java.app&format=jfr&spyName=javaspy"),
        "application/octet-stream",
        jfr.clone(),
    );
    assert_eq!(code, 200, "{text}");
    let l = rx.next();
    assert_eq!(l["language"], "java");
    assert_eq!(
        std::fs::read(sb.file(l["attachments"][0]["file"].as_str().expect("file"))).expect("jfr"),
        jfr
    );

    for (query, body, want) in [
        ("format=folded", "a 1\n", "no `name`"),
        ("name=a&from=soon", "a 1\n", "from=\\\"soon\\\""),
        ("name=a&format=folded", "a;b 1\na;c x\n", "line 2"),
        ("name=a&format=svg", "x", "format=svg"),
        ("name=%7Ba%3Db%7D", "a 1\n", "no application name"),
    ] {
        let (code, text) = post(
            &format!("{base}?{query}"),
            "text/plain",
            body.as_bytes().to_vec(),
        );
        assert_eq!(code, 400, "{query}: {text}");
        assert!(text.contains(want), "{query}: {text}");
    }
    rx.stop();
}
