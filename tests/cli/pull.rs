//! `agentprof pull` against a real Go service with net/http/pprof, and against loopback
//! servers that misbehave in the ways real endpoints do.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use crate::support::{Reply, Sandbox, fixture, go, reply, require_go, serve};

/// The test service, built once per test run.
pub fn service_binary() -> Option<PathBuf> {
    static BIN: OnceLock<Option<PathBuf>> = OnceLock::new();
    BIN.get_or_init(|| {
        if !require_go() {
            return None;
        }
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("pprofsvc");
        let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/go/pprofsvc");
        let st = Command::new("go")
            .args(["build", "-o"])
            .arg(&out)
            .arg(".")
            .current_dir(&src)
            .env("GOFLAGS", "-mod=mod")
            .status()
            .expect("go build");
        assert!(st.success(), "go build of the test service failed");
        Some(out)
    })
    .clone()
}

/// A running test service: its pprof address, the one with a 1 s WriteTimeout, and (when
/// started with a certificate) an https one and an https one that requires a client
/// certificate.
struct Service {
    child: Child,
    addr: String,
    short: String,
    tls: Option<(String, String)>,
    _cpu: std::sync::MutexGuard<'static, ()>,
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn service() -> Option<Service> {
    service_with(&[])
}

fn service_with(args: &[&str]) -> Option<Service> {
    let bin = service_binary()?;
    let cpu = crate::support::cpu_exclusive();
    let mut child = Command::new(bin)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the service");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("address");
    let mut parts = line.split_whitespace();
    let addr = parts.next().expect("addr").to_string();
    let short = parts.next().expect("short").to_string();
    let tls = parts
        .next()
        .map(|a| (a.to_string(), parts.next().expect("mtls").to_string()));
    // Let the burners, allocators and lock fights run a little first.
    std::thread::sleep(Duration::from_millis(300));
    Some(Service {
        child,
        addr,
        short,
        tls,
        _cpu: cpu,
    })
}

/// Every type pulled from a real Go service is a profile `go tool pprof` reads, and
/// `agentprof top` prints the same rows as `go tool pprof -top` on it.
#[test]
fn every_type_from_a_go_service_is_read_by_go_tool_pprof_and_top_matches_it() {
    let Some(svc) = service() else { return };
    let sb = Sandbox::new();
    let r = sb.run(&[
        "pull",
        &format!("http://{}", svc.addr),
        "--types",
        "cpu,heap,allocs,goroutine,mutex,block,threadcreate",
        "--profile-duration",
        "1s",
        "--out",
        "out",
        "--service",
        "svc",
        "--json",
    ]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let doc: serde_json::Value = serde_json::from_str(r.stdout.lines().next().unwrap()).unwrap();
    let profiles = doc["profiles"].as_array().unwrap();
    assert_eq!(profiles.len(), 7);
    let f = &doc["figures"];
    // How much of a core the burners got depends on the machine's load: the figure is
    // compared with go tool pprof's reading of the same profile below.
    assert!(f["prof_go_cpu_cores"].as_f64().unwrap() > 0.0, "{f}");
    assert!(f["prof_go_num_goroutine"].as_i64().unwrap() >= 50, "{f}");
    // The goroutine count and the CPU cores are what go tool pprof says of the same files:
    // the goroutine profile's total, and the CPU total over the profile's duration.
    let file_of = |t: &str| {
        let p = profiles.iter().find(|p| p["type"] == t).unwrap();
        sb.path().join(p["files"][0].as_str().unwrap())
    };
    let header = |t: &str| go(&["tool", "pprof", "-top", file_of(t).to_str().unwrap()]).unwrap();
    let goroutines = header("goroutine");
    let total = goroutines
        .lines()
        .find_map(|l| l.strip_prefix("Showing nodes accounting for "))
        .and_then(|l| l.split(" of ").nth(1))
        .and_then(|l| l.split_whitespace().next())
        .unwrap();
    assert_eq!(
        f["prof_go_num_goroutine"].as_i64().unwrap().to_string(),
        total
    );
    // The live heap, the block and mutex delays: go tool pprof's totals of the same files
    // (a first collection has no delta, so the figures are the files' whole totals).
    let total = |t: &str, index: &str, unit: &str| {
        crate::support::go_total(&file_of(t), index, unit) as i64
    };
    assert_eq!(
        f["prof_go_lifetime_heap_bytes"].as_i64(),
        Some(total("heap", "inuse_space", "B")),
        "{f}"
    );
    assert_eq!(
        f["prof_go_lifetime_heap_objects"].as_i64(),
        Some(total("heap", "inuse_objects", "")),
        "{f}"
    );
    assert!(
        f["prof_go_lifetime_heap_bytes"].as_i64().unwrap() > 0,
        "{f}"
    );
    assert_eq!(
        f["prof_go_blocked_time"].as_i64(),
        Some(total("block", "delay", "ns")),
        "{f}"
    );
    assert_eq!(
        f["prof_go_mutex_delay_time"].as_i64(),
        Some(total("mutex", "delay", "ns")),
        "{f}"
    );
    let pct = crate::support::go_cpu_percent(&file_of("cpu"));
    let ours = f["prof_go_cpu_cores"].as_f64().unwrap() * 100.0;
    assert_eq!(
        format!("{ours:.2}"),
        pct,
        "prof_go_cpu_cores vs go's Total samples %"
    );
    let mut compared = 0;
    for p in profiles {
        assert_eq!(p["ok"], true, "{p}");
        let file = p["files"][0].as_str().unwrap();
        assert!(file.starts_with("out/svc/"), "{file}");
        let path = sb.path().join(file);
        let path = path.to_str().unwrap();
        let raw = go(&["tool", "pprof", "-raw", path]).expect("go tool pprof -raw reads it");
        assert!(raw.contains("Samples:"), "{raw}");
        for si in [None, Some("0")] {
            for cum in [false, true] {
                let mut g = vec!["tool", "pprof", "-top"];
                let mut a = vec!["top"];
                if let Some(s) = si {
                    g.push("-sample_index=0");
                    a.push("--sample-index");
                    a.push(s);
                }
                if cum {
                    g.push("-cum");
                    a.push("--cum");
                }
                g.push(path);
                a.push(path);
                let theirs = go(&g).expect("go tool pprof -top");
                let ours = sb.run(&a);
                assert_eq!(ours.stdout, theirs, "{a:?}");
                compared += 1;
            }
        }
    }
    assert_eq!(compared, 28);
}

/// Two collections: the second carries deltas of heap, mutex and block; both are uploaded in
/// dd-trace-go's format, the first after the receiver's 500 is retried.
#[test]
fn deltas_on_the_second_collection_and_uploads_in_dd_trace_go_format() {
    let Some(svc) = service() else { return };
    let (intake, seen) = serve(|_, n| {
        if n == 0 {
            reply("500 Internal Server Error", "busy")
        } else {
            reply("200 OK", "{}")
        }
    });
    let sb = Sandbox::new();
    let r = sb.run(&[
        "pull",
        &format!("http://{}", svc.addr),
        "--profile-duration",
        "1s",
        "--count",
        "2",
        "--interval",
        "10s",
        "--service",
        "svc",
        "--env",
        "test",
        "--version",
        "1.2.3",
        "--tag",
        "team:db",
        "--upload",
        &format!("http://{intake}/profiling/v1/input"),
        "--spool",
        "spool",
        "--json",
    ]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let docs: Vec<serde_json::Value> = r
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(docs.len(), 2);
    let by_type = |d: &serde_json::Value, t: &str| {
        d["profiles"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["type"] == t)
            .cloned()
            .unwrap()
    };
    for t in ["heap", "mutex", "block"] {
        assert_eq!(by_type(&docs[0], t)["delta"], false);
        assert_eq!(by_type(&docs[0], t)["no_delta"], "first_collection");
        assert_eq!(by_type(&docs[1], t)["delta"], true, "{t}");
    }
    assert_eq!(by_type(&docs[1], "cpu")["delta"], false);
    assert_eq!(docs[0]["uploaded"], true);
    assert_eq!(docs[1]["uploaded"], true);

    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 3, "500, its retry, the second upload");
    assert_eq!(seen[0].2, seen[1].2, "the retry sends the same body");
    let parts = |body: &[u8], ctype: &str| -> Vec<(String, String, Vec<u8>)> {
        let boundary = ctype.split("boundary=").nth(1).unwrap();
        let text = body.to_vec();
        let sep = format!("--{boundary}");
        let mut out = Vec::new();
        let s = String::from_utf8_lossy(&text).into_owned();
        for chunk in s.split(&sep).skip(1) {
            if chunk.starts_with("--") {
                break;
            }
            let (head, rest) = chunk.split_once("\r\n\r\n").unwrap();
            let name = head
                .split("name=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap()
                .to_string();
            let ct = head
                .lines()
                .find_map(|l| l.strip_prefix("Content-Type: "))
                .unwrap_or_default()
                .to_string();
            out.push((name, ct, rest.trim_end_matches("\r\n").as_bytes().to_vec()));
        }
        out
    };
    let ctype = |h: &[(String, String)]| {
        h.iter()
            .find(|(k, _)| k == "content-type")
            .map(|(_, v)| v.clone())
            .unwrap()
    };
    // The first upload has heap as it is (its live-heap types need no delta, and
    // dd-trace-go's first upload has heap); mutex and block wait for their delta, and the
    // collection says so.
    let first = parts(&seen[1].2, &ctype(&seen[1].1));
    let names: Vec<&str> = first.iter().map(|p| p.0.as_str()).collect();
    assert_eq!(
        names,
        ["cpu.pprof", "heap.pprof", "goroutines.pprof", "event"]
    );
    assert_eq!(
        docs[0]["upload_waiting"],
        serde_json::json!(["mutex", "block"])
    );
    assert_eq!(docs[1]["upload_waiting"], serde_json::json!([]));
    let second = parts(&seen[2].2, &ctype(&seen[2].1));
    let names: Vec<&str> = second.iter().map(|p| p.0.as_str()).collect();
    assert_eq!(
        names,
        [
            "cpu.pprof",
            "delta-heap.pprof",
            "goroutines.pprof",
            "delta-mutex.pprof",
            "delta-block.pprof",
            "event"
        ]
    );
    let (_, ct, event) = second.last().unwrap();
    assert_eq!(ct, "application/json");
    let ev: serde_json::Value = serde_json::from_slice(event).unwrap();
    assert_eq!(ev["family"], "go");
    assert_eq!(ev["version"], "4");
    assert_eq!(ev["attachments"].as_array().unwrap().len(), 5);
    let tags = ev["tags_profiler"].as_str().unwrap();
    for t in [
        "service:svc",
        "env:test",
        "version:1.2.3",
        "runtime:go",
        "profile_seq:1",
        "team:db",
    ] {
        assert!(tags.split(',').any(|x| x == t), "{t} in {tags}");
    }
    assert!(tags.split(',').any(|x| x.starts_with("host:")), "{tags}");
    for k in ["start", "end"] {
        let t = ev[k].as_str().unwrap();
        assert!(t.ends_with('Z') && t.contains('T'), "{t}");
    }
}

/// `pull` of `target`'s goroutines, uploaded to `upload` with the sandbox's `spool`.
fn pull_goroutines_to(sb: &Sandbox, target: &str, upload: &str) -> crate::support::Run {
    sb.run(&[
        "pull",
        &format!("http://{target}"),
        "--types",
        "goroutine",
        "--upload",
        upload,
        "--spool",
        "spool",
    ])
}

/// An upload that cannot be delivered is spooled and sent by the next run.
#[test]
fn uploads_to_a_receiver_that_is_down_are_spooled_and_sent_later() {
    let target = goroutine_target();
    let down = port_nothing_listens_on();
    let sb = Sandbox::new();
    let pull = |upload: &str| pull_goroutines_to(&sb, &target, upload);
    let r = pull(&format!("http://{down}/profiling/v1/input"));
    assert_eq!(
        r.code, 0,
        "the profile was pulled; the upload waits: {}",
        r.stderr
    );
    assert!(
        r.stdout.contains("upload FAILED") && r.stdout.contains("spooled"),
        "{}",
        r.stdout
    );
    assert_eq!(std::fs::read_dir(sb.file("spool")).unwrap().count(), 1);
    let (intake, seen) = serve(|_, _| reply("200 OK", "{}"));
    let r = pull(&format!("http://{intake}/profiling/v1/input"));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        seen.lock().unwrap().len(),
        2,
        "the spooled upload, then this run's"
    );
    assert_eq!(std::fs::read_dir(sb.file("spool")).unwrap().count(), 0);
}

/// A spooled upload the intake refuses for good (413) is set aside under `refused/` and the
/// ones behind it are delivered; it is never sent again. (It used to be resent before every
/// later upload, and everything spooled behind it waited forever.)
#[test]
fn a_spooled_upload_refused_for_good_is_set_aside_and_never_blocks_the_spool() {
    let target = goroutine_target();
    let down = port_nothing_listens_on();
    let sb = Sandbox::new();
    let pull = |upload: &str| pull_goroutines_to(&sb, &target, upload);
    let spooled = || {
        std::fs::read_dir(sb.file("spool"))
            .unwrap()
            .flatten()
            .filter(|e| e.path().is_file())
            .count()
    };
    for _ in 0..2 {
        let r = pull(&format!("http://{down}/profiling/v1/input"));
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    assert_eq!(spooled(), 2);
    // The oldest spooled upload is refused for good; everything after it is taken.
    let (intake, seen) = serve(|_, n| {
        if n == 0 {
            reply("413 Payload Too Large", "request entity too large")
        } else {
            reply("200 OK", "{}")
        }
    });
    let r = pull(&format!("http://{intake}/profiling/v1/input"));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("refused for good") && r.stderr.contains("refused"),
        "{}",
        r.stderr
    );
    assert_eq!(
        seen.lock().unwrap().len(),
        3,
        "the refused one, the one behind it, this run's"
    );
    assert_eq!(spooled(), 0);
    assert_eq!(
        std::fs::read_dir(sb.file("spool/refused")).unwrap().count(),
        1
    );
    // The next run sends only its own upload.
    let (intake, seen) = serve(|_, _| reply("200 OK", "{}"));
    let r = pull(&format!("http://{intake}/profiling/v1/input"));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        seen.lock().unwrap().len(),
        1,
        "the refused upload is not resent"
    );
}

/// Endpoints that are not what they should be: each refused with its reason, the other types
/// still written, exit 1; credentials never printed.
#[test]
fn broken_endpoints_are_refused_with_reasons_and_nothing_collected_is_lost() {
    let bomb = {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..64 {
            gz.write_all(&zeros).unwrap();
        }
        gz.finish().unwrap()
    };
    let budget = {
        // 100,001 empty strings: a valid protobuf over the field budget.
        let mut b = Vec::new();
        for _ in 0..100_001 {
            b.extend([0x32, 0x00]);
        }
        b
    };
    let goroutines = std::fs::read(fixture("goroutines.pprof")).unwrap();
    let zstd = ruzstd::encoding::compress_to_vec(
        &goroutines[..],
        ruzstd::encoding::CompressionLevel::Fastest,
    );
    let (addr, _) = serve(move |p, _| match p {
        "/p/goroutine" => reply("200 OK", zstd.clone()),
        "/p/heap" => reply("404 Not Found", "404 page not found\n"),
        "/p/allocs" => Reply {
            headers: vec![("Location".into(), "/login?next=allocs".into())],
            ..reply("302 Found", "")
        },
        "/p/mutex" => reply("200 OK", "<!DOCTYPE html><html><body>Sign in</body></html>"),
        "/p/block" => reply("200 OK", bomb.clone()),
        "/p/threadcreate" => reply("200 OK", budget.clone()),
        "/p/profile" => Reply {
            delay: Duration::from_secs(5),
            ..reply("200 OK", "")
        },
        _ => reply("404 Not Found", ""),
    });
    let sb = Sandbox::new();
    let r = sb.run(&[
        "pull",
        &format!("http://bob:hunter2@{addr}/p"),
        "--types",
        "cpu,heap,allocs,goroutine,mutex,block,threadcreate",
        "--profile-duration",
        "1s",
        "--http-timeout",
        "2s",
        "--out",
        "out",
        "--service",
        "svc",
    ]);
    // The CPU profile's server never answered: a network failure, exit 3 (the README's
    // exit codes); every other type's reason is still printed and the goroutine kept.
    assert_eq!(r.code, 3, "{}\n{}", r.stdout, r.stderr);
    let all = format!("{}{}", r.stdout, r.stderr);
    assert!(!all.contains("hunter2") && !all.contains("bob"), "{all}");
    let line = |t: &str| {
        r.stdout
            .lines()
            .find(|l| l.trim_start().starts_with(t))
            .unwrap_or_else(|| panic!("{t} in {}", r.stdout))
            .to_string()
    };
    assert!(
        line("cpu").contains("no answer within --http-timeout 2.00s"),
        "{}",
        line("cpu")
    );
    assert!(line("heap").contains("HTTP 404"), "{}", line("heap"));
    assert!(
        line("allocs").contains("redirects to") && line("allocs").contains("not followed"),
        "{}",
        line("allocs")
    );
    assert!(line("mutex").contains("HTML"), "{}", line("mutex"));
    assert!(
        line("block").contains("decompressed limit"),
        "{}",
        line("block")
    );
    assert!(
        line("threadcreate").contains("parsing budget"),
        "{}",
        line("threadcreate")
    );
    // The zstd goroutine profile was decoded and written.
    assert!(
        !line("goroutine").contains("FAILED"),
        "{}",
        line("goroutine")
    );
    let written: Vec<_> = std::fs::read_dir(sb.file("out/svc")).unwrap().collect();
    assert_eq!(written.len(), 1);
}

/// A Go server that cuts its handlers off (net/http's TimeoutHandler) answers a CPU profile
/// longer than that with a 503 and its own text; agentprof shows that text.
#[test]
fn a_go_servers_own_error_text_is_reported() {
    let Some(svc) = service() else { return };
    let sb = Sandbox::new();
    let r = sb.run(&[
        "pull",
        &format!("http://{}", svc.short),
        "--types",
        "cpu",
        "--profile-duration",
        "2s",
    ]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("handler timeout of 1s exceeded"),
        "{}",
        r.stdout
    );
}

#[test]
fn bad_flags_and_targets_are_usage_errors() {
    let sb = Sandbox::new();
    for (args, want) in [
        (
            vec!["pull", "http://h:1", "--types", "cpu,gc"],
            "profile type \"gc\"",
        ),
        (
            vec!["pull", "http://h:1", "--interval", "5s"],
            "at least 10s",
        ),
        (
            vec![
                "pull",
                "http://h:1",
                "--profile-duration",
                "30s",
                "--http-timeout",
                "20s",
            ],
            "must exceed the profile duration",
        ),
        (vec!["pull", "ftp://h:1"], "use http or https"),
        (vec!["pull", "http://h:1", "--tag", "a,b:c"], "comma"),
        (vec!["pull"], "profile.yaml"),
    ] {
        let r = sb.run(&args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(want), "{args:?}: {}", r.stderr);
    }
    sb.write(
        "conf.d/profile.yaml",
        "instances:\n  - url: http://h:1\n    intervall: 10s\n",
    );
    let r = sb.run(&["pull"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("profile.yaml:3") && r.stderr.contains("intervall"),
        "{}",
        r.stderr
    );
    // The `kubernetes:` rules beside the instances are `agentprof k8s`'s: pull reads past them.
    sb.write(
        "conf.d/profile.yaml",
        "instances:\n  - url: http://h:1\n    enabled: false\nkubernetes:\n  - port: pprof\n",
    );
    let r = sb.run(&["pull"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("no enabled target")
            && r.stderr.contains("not the `kubernetes:` rules (1)"),
        "{}",
        r.stderr
    );
    // A mistake in the rules is found by pull too, not only when they are used.
    sb.write(
        "conf.d/profile.yaml",
        "instances:\n  - url: http://h:1\nkubernetes:\n  - port: 99999\n",
    );
    let r = sb.run(&["pull"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("profile.yaml:4:5: kubernetes[0]: port: 99999 is outside 1 to 65535"),
        "{}",
        r.stderr
    );
}

/// https targets: verified against --tls-ca, refused without it, accepted with
/// --insecure-skip-verify; a target that wants a client certificate gets --tls-cert/--tls-key.
#[test]
fn https_targets_with_a_ca_a_client_certificate_or_no_verification() {
    let sb = Sandbox::new();
    let Some((cert, key)) = crate::k8s::tls::certificate(sb.path()) else {
        return;
    };
    let Some(svc) = service_with(&[
        "-tlscert",
        cert.to_str().unwrap(),
        "-tlskey",
        key.to_str().unwrap(),
    ]) else {
        return;
    };
    let (https, mtls) = svc.tls.clone().expect("tls listeners");
    let pull = |url: &str, extra: &[&str]| {
        let mut a = vec!["pull", url, "--types", "goroutine"];
        a.extend_from_slice(extra);
        sb.run(&a)
    };
    let ca = cert.to_str().unwrap();
    let ok = pull(&format!("https://{https}"), &["--tls-ca", ca]);
    assert_eq!(ok.code, 0, "{}\n{}", ok.stdout, ok.stderr);
    let unknown = pull(&format!("https://{https}"), &[]);
    assert_eq!(
        unknown.code, 1,
        "an unknown CA is refused: {}",
        unknown.stdout
    );
    assert!(unknown.stdout.contains("FAILED"), "{}", unknown.stdout);
    let skip = pull(&format!("https://{https}"), &["--insecure-skip-verify"]);
    assert_eq!(skip.code, 0, "{}\n{}", skip.stdout, skip.stderr);
    let no_client = pull(&format!("https://{mtls}"), &["--tls-ca", ca]);
    assert_eq!(no_client.code, 1, "{}", no_client.stdout);
    let client = pull(
        &format!("https://{mtls}"),
        &[
            "--tls-ca",
            ca,
            "--tls-cert",
            ca,
            "--tls-key",
            key.to_str().unwrap(),
        ],
    );
    assert_eq!(client.code, 0, "{}\n{}", client.stdout, client.stderr);
}

/// A server that trickles its body (slow loris) cannot hold a pull past --http-timeout: the
/// pull ends within it and says how much arrived of how much.
#[test]
fn http_timeout_bounds_a_trickled_body() {
    use std::io::{BufRead, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(4) {
            let Ok(mut s) = stream else { continue };
            std::thread::spawn(move || {
                let mut r = std::io::BufReader::new(s.try_clone().unwrap());
                let mut line = String::new();
                while r.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n");
                for _ in 0..1000 {
                    if s.write_all(b"x").is_err() {
                        return;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
            });
        }
    });
    let sb = Sandbox::new();
    let t0 = std::time::Instant::now();
    let r = sb.run(&[
        "pull",
        &format!("http://{addr}"),
        "--types",
        "heap",
        "--http-timeout",
        "1s",
    ]);
    let took = t0.elapsed();
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(took < std::time::Duration::from_secs(3), "took {took:?}");
    let all = format!("{}{}", r.stdout, r.stderr);
    assert!(
        all.contains("did not arrive within --http-timeout 1.00s")
            && all.contains("of 1000 arrived"),
        "{all}"
    );
}

/// SIGINT stops a pull within a second, mid-request against a server that never answers,
/// and what was already fetched is kept and said; a second signal is not needed.
#[test]
fn a_signal_stops_a_pull_against_a_hung_server_within_a_second() {
    let addr = crate::support::hung_server();
    let sb = Sandbox::new();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_agentprof"))
        .args(["pull", &format!("http://{addr}"), "--http-timeout", "60s"])
        .current_dir(sb.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(800));
    let t0 = std::time::Instant::now();
    // SAFETY: signals the child we started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let took = t0.elapsed();
    assert!(took < std::time::Duration::from_secs(1), "took {took:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("stopped by a signal"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// Secrets in every URL a pull is given (the target's and the upload's credentials) reach no
/// output: not stdout, stderr, --json, nor any file the pull writes (profiles, spool).
#[test]
fn credentials_in_every_url_reach_no_output_or_file() {
    let target = goroutine_target();
    let down = port_nothing_listens_on();
    let sb = Sandbox::new();
    for json in [false, true] {
        let target_url = format!("http://tuser:TARGETSECRET@{target}");
        let upload_url = format!("http://uuser:UPLOADSECRET@{down}/profiling/v1/input");
        let mut args = vec![
            "pull",
            &target_url,
            "--types",
            "goroutine,heap",
            "--upload",
            &upload_url,
            "--spool",
            "spool",
            "--out",
            "out",
        ];
        if json {
            args.push("--json");
        }
        let r = sb.run(&args);
        let mut all = format!("{}{}", r.stdout, r.stderr);
        for dir in ["spool", "out"] {
            for e in walk(&sb.file(dir)) {
                all.push_str(&String::from_utf8_lossy(&std::fs::read(e).unwrap()));
            }
        }
        for secret in ["TARGETSECRET", "UPLOADSECRET", "tuser", "uuser"] {
            assert!(!all.contains(secret), "{secret} shown (json: {json})");
        }
        assert!(r.stdout.contains(&target.to_string()), "{}", r.stdout);
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// A loopback pprof endpoint that serves only the recorded goroutine profile.
fn goroutine_target() -> String {
    serve(|p, _| match p {
        "/debug/pprof/goroutine" => reply(
            "200 OK",
            std::fs::read(fixture("goroutines.pprof")).unwrap(),
        ),
        _ => reply("404 Not Found", "404 page not found\n"),
    })
    .0
}

/// A loopback port nothing listens on (bound, then let go).
fn port_nothing_listens_on() -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().to_string()
}

/// Records and samples are named as go tool pprof names them: a CPU profile's records hold
/// its samples, and the count agentprof prints is go's "Total samples".
#[test]
fn records_and_samples_are_counted_as_go_tool_pprof_counts_them() {
    if !crate::support::require_go() {
        return;
    }
    let (target, _) = serve(|p, _| match p {
        "/debug/pprof/profile" => reply("200 OK", std::fs::read(fixture("cpu.pprof")).unwrap()),
        _ => reply("404 Not Found", "404 page not found\n"),
    });
    let sb = Sandbox::new();
    let r = sb.run(&[
        "pull",
        &format!("http://{target}"),
        "--types",
        "cpu",
        "--profile-duration",
        "1s",
        "--json",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc: serde_json::Value = serde_json::from_str(r.stdout.lines().next().unwrap()).unwrap();
    let p = &doc["profiles"][0];
    let go = crate::support::go(&[
        "tool",
        "pprof",
        "-top",
        "-sample_index=0",
        fixture("cpu.pprof").to_str().unwrap(),
    ])
    .unwrap();
    let total: i64 = go
        .lines()
        .find_map(|l| l.split("Total samples = ").nth(1))
        .and_then(|t| t.trim().parse().ok())
        .unwrap();
    assert_eq!(p["samples"].as_i64(), Some(total), "{go}");
    assert!(p["records"].as_i64().unwrap() < total, "{p}");
    let human = sb.run(&[
        "pull",
        &format!("http://{target}"),
        "--types",
        "cpu",
        "--profile-duration",
        "1s",
    ]);
    assert!(
        human.stdout.contains(&format!("records ({total} samples)")),
        "{}",
        human.stdout
    );
}

/// Two real block profiles of the Go service, a few seconds apart, diffed by
/// `go tool pprof -proto -diff_base` in both directions (so nodes go negative, positive and
/// cancel): `agentprof top` prints what `go tool pprof -top` prints, with its default node
/// fraction, sorted by cum, and cut to a node count.
#[test]
fn top_of_a_diff_base_block_profile_is_go_tool_pprofs() {
    let Some(svc) = service() else { return };
    let _ = rustls::crypto::ring::default_provider().install_default();
    let sb = Sandbox::new();
    let fetch = |name: &str| {
        let body = reqwest::blocking::get(format!("http://{}/debug/pprof/block", svc.addr))
            .unwrap()
            .bytes()
            .unwrap();
        sb.write_bytes(name, &body)
    };
    let first = fetch("block1.pb.gz");
    std::thread::sleep(std::time::Duration::from_secs(2));
    let second = fetch("block2.pb.gz");
    for (base, new, name) in [
        (&first, &second, "up.pb.gz"),
        (&second, &first, "down.pb.gz"),
    ] {
        let diffed = sb.write_bytes(name, &crate::pprof_fidelity::go_diff_base(base, new));
        for (ours, theirs) in [
            (&[][..], &[][..]),
            (&["--cum"][..], &["-cum"][..]),
            (&["--nodes", "3"][..], &["-nodecount=3"][..]),
            (&["--node-fraction", "0.2"][..], &["-nodefraction=0.2"][..]),
        ] {
            crate::pprof_fidelity::same_as_go(&sb, &diffed, ours, theirs);
        }
    }
}

/// `pull URL` without `--out` says that it keeps nothing.
#[test]
fn a_pull_without_out_says_it_keeps_nothing() {
    let sb = Sandbox::new();
    let r = sb.run(&["pull", "http://127.0.0.1:1", "--types", "goroutine"]);
    // A refused connection is a network failure: exit 3, as the README's exit codes say.
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(
        r.stderr.contains("could not be reached or never answered"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("nothing is kept"), "{}", r.stderr);
    let r = sb.run(&[
        "pull",
        "http://127.0.0.1:1",
        "--types",
        "goroutine",
        "--out",
        "o",
    ]);
    assert!(!r.stderr.contains("nothing is kept"), "{}", r.stderr);
}

/// A service's own error words (net/http/pprof marks them with X-Go-Pprof) reach the terminal
/// escaped: an escape sequence in them clears nothing.
#[test]
fn the_services_words_are_printed_escaped() {
    let (addr, _) = crate::support::serve(|_, _| {
        let mut r = crate::support::reply(
            "404 Not Found",
            "Unknown profile: \u{1b}[2J\u{1b}]0;owned\u{7}",
        );
        r.headers.push(("X-Go-Pprof".into(), "1".into()));
        r
    });
    let sb = Sandbox::new();
    let r = sb.run(&["pull", &format!("http://{addr}"), "--types", "goroutine"]);
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    let all = format!("{}{}", r.stdout, r.stderr);
    assert!(
        all.contains("the service says: Unknown profile: \\u{1b}[2J"),
        "{all}"
    );
    assert!(!all.contains('\u{1b}') && !all.contains('\u{7}'), "{all:?}");
}

/// `--retention-mb` keeps `--out` within its size after each collection: the oldest files go
/// first, and the pull says what it deleted.
#[test]
fn retention_keeps_the_output_within_its_size_oldest_first() {
    let target = goroutine_target();
    let sb = Sandbox::new();
    // An old capture of 2 MiB, from an earlier run.
    let old = sb.write_bytes("out/old-service/goroutine-old.pb.gz", &vec![7u8; 2 << 20]);
    let f = std::fs::File::options().write(true).open(&old).unwrap();
    f.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(3600))
        .unwrap();
    drop(f);
    let r = sb.run(&[
        "pull",
        &format!("http://{target}"),
        "--types",
        "goroutine",
        "--out",
        "out",
        "--retention-mb",
        "1",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!old.exists(), "the oldest file was deleted");
    assert!(
        r.stderr
            .contains("retention: deleted the 1 oldest file(s) (2097152 bytes)"),
        "{}",
        r.stderr
    );
    let kept: Vec<_> = walkdir(&sb.file("out"));
    assert!(
        kept.iter()
            .any(|p| p.to_string_lossy().contains("goroutine-")),
        "this run's profile is kept: {kept:?}"
    );
}

fn walkdir(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walkdir(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// Three pulls of one service into one --out that finish together (the target answers the
/// three at once) keep three captures: a name taken in the same second gets `-2`, `-3`,
/// never written over (the names themselves: `files::tests` in the library).
#[test]
fn three_pulls_into_one_out_at_once_keep_three_files() {
    let gate = std::sync::Arc::new(std::sync::Barrier::new(3));
    let (target, _) = serve(move |p, _| match p {
        "/debug/pprof/goroutine" => {
            gate.wait();
            reply(
                "200 OK",
                std::fs::read(fixture("goroutines.pprof")).unwrap(),
            )
        }
        _ => reply("404 Not Found", "404 page not found\n"),
    });
    let sb = Sandbox::new();
    let url = format!("http://{target}");
    let runs: Vec<crate::support::Run> = std::thread::scope(|s| {
        let pulls: Vec<_> = (0..3)
            .map(|_| {
                s.spawn(|| {
                    sb.run(&[
                        "pull",
                        &url,
                        "--types",
                        "goroutine",
                        "--out",
                        "out",
                        "--service",
                        "svc",
                    ])
                })
            })
            .collect();
        pulls.into_iter().map(|p| p.join().unwrap()).collect()
    });
    for r in &runs {
        assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    }
    let files: Vec<PathBuf> = walk(&sb.file("out"))
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(".pb.gz"))
        .collect();
    eprintln!(
        "measured: three pulls of one service into one --out at once: {} files ({})",
        files.len(),
        files
            .iter()
            .filter_map(|f| f.file_name()?.to_str().map(str::to_string))
            .collect::<Vec<_>>()
            .join(", ")
    );
    assert_eq!(files.len(), 3, "{files:?}");
    for f in &files {
        assert!(std::fs::metadata(f).unwrap().len() > 0, "{f:?}");
    }
    assert!(
        !walk(&sb.file("out"))
            .iter()
            .any(|p| p.to_string_lossy().ends_with(".partial")),
        "a temporary file was left"
    );
}
