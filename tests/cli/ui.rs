//! `agentprof ui`: its listing (layouts, captures.jsonl and uploads.jsonl causes), its
//! numbers against the CLI's, and what it refuses to serve.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{Sandbox, fixture};

pub struct Ui {
    child: Child,
    pub base: String,
}

impl Ui {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn start(sb: &Sandbox, args: &[&str]) -> Ui {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut child = Command::new(crate::support::server_bin())
            .current_dir(sb.path())
            .arg("ui")
            .args(args)
            .args(["--listen", "127.0.0.1:0", "--duration", "120s"])
            .env_remove("AGENTPROF_CONFIG")
            .env("XDG_CACHE_HOME", sb.file(".cache"))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let err = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(err).lines().map_while(Result::ok) {
                let _ = tx.send(l);
            }
        });
        // Where it serves, from its first lines (the process is killed and waited for by
        // Drop if it never says).
        let base = (|| {
            let mut seen = Vec::new();
            while let Ok(l) = rx.recv_timeout(Duration::from_secs(20)) {
                if let Some(rest) = l.split("serving ").nth(1) {
                    let base = rest.split_whitespace().next().unwrap_or_default();
                    return Ok(base.trim_end_matches('/').to_string());
                }
                seen.push(l);
            }
            Err(seen)
        })();
        let mut ui = Ui {
            child,
            base: String::new(),
        };
        match base {
            Ok(b) => ui.base = b,
            Err(seen) => panic!("ui did not start: {seen:?}"),
        }
        ui
    }

    pub fn get(&self, path: &str) -> (u16, String, Vec<u8>) {
        let r = reqwest::blocking::Client::new()
            .get(format!("{}{path}", self.base))
            .send()
            .unwrap();
        let status = r.status().as_u16();
        let ctype = r
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default();
        (status, ctype, r.bytes().unwrap().to_vec())
    }

    pub fn json(&self, path: &str) -> Value {
        self.json_inner(path)
    }

    fn json_inner(&self, path: &str) -> Value {
        let (status, _, body) = self.get(path);
        assert_eq!(status, 200, "{path}: {}", String::from_utf8_lossy(&body));
        serde_json::from_slice(&body).unwrap()
    }
}

impl Drop for Ui {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn enc(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A top report's rows as the page's table shows them: flat, flat%, sum%, cum, cum%, the
/// function (and its inline mark).
pub fn page_rows(report: &Value) -> Value {
    let rows = report["rows"].as_array().unwrap().iter().map(|r| {
        let f = match r["inline"].as_str().unwrap() {
            "" => r["function"].as_str().unwrap().to_string(),
            i => format!("{} {i}", r["function"].as_str().unwrap()),
        };
        json!([
            r["flat_fmt"],
            r["flat_pct"],
            r["sum_pct"],
            r["cum_fmt"],
            r["cum_pct"],
            f
        ])
    });
    Value::Array(rows.collect())
}

pub fn gz(b: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(b).unwrap();
    e.finish().unwrap()
}

/// A k8s capture directory (two captures of one pod: scheduled, then on a memory threshold)
/// and a receive directory (one upload), as those commands write them.
fn corpus(sb: &Sandbox) {
    let cpu = std::fs::read(fixture("cpu.pprof")).unwrap();
    let heap = std::fs::read(fixture("delta-heap.pprof")).unwrap();
    let dir = "prof/shop/cart-7d9/app";
    sb.write_bytes(
        &format!("{dir}/cpu-2026-12-01T10:00:00.000Z.pb.gz"),
        &gz(&cpu),
    );
    sb.write_bytes(
        &format!("{dir}/heap-2026-12-01T10:00:00.000Z.pb.gz"),
        &gz(&heap),
    );
    // The later heap: the same stacks, half of them holding three times as much.
    let grown = {
        use prost::Message;
        let mut p = agentprof::pprof::proto::Profile::decode(&heap[..]).unwrap();
        let n = p.sample.len();
        for s in p.sample.iter_mut().take(n / 2) {
            for v in s.value.iter_mut() {
                *v *= 3;
            }
        }
        p.encode_to_vec()
    };
    sb.write_bytes(
        &format!("{dir}/heap-2026-12-01T10:05:00.000Z.pb.gz"),
        &gz(&grown),
    );
    let captures = [
        json!({"time": "2026-12-01T10:00:00.000Z", "target": "shop/cart-7d9/app", "namespace": "shop",
            "pod": "cart-7d9", "container": "app", "cause": "scheduled", "trigger": null, "tags": ["team:cart"],
            "profiles": [{"type": "cpu", "files": [format!("{dir}/cpu-2026-12-01T10:00:00.000Z.pb.gz")]},
                         {"type": "heap", "files": [format!("{dir}/heap-2026-12-01T10:00:00.000Z.pb.gz")]}]}),
        json!({"time": "2026-12-01T10:05:00.000Z", "target": "shop/cart-7d9/app", "namespace": "shop",
            "pod": "cart-7d9", "container": "app", "cause": "resource_threshold",
            "trigger": {"level": "normal", "metric": "memory", "value": 96.2, "threshold": 90, "unit": "percent"},
            "tags": ["team:cart"],
            "profiles": [{"type": "heap", "files": [format!("{dir}/heap-2026-12-01T10:05:00.000Z.pb.gz")]}]}),
    ];
    let text: String = captures.iter().map(|c| format!("{c}\n")).collect();
    sb.write(
        "prof/captures.jsonl",
        &format!("{text}not json, a cut line\n"),
    );
    sb.write_bytes(
        "prof/checkout/goroutine-2026-12-01T11:00:00.000Z.pb.gz",
        &gz(&std::fs::read(fixture("goroutines.pprof")).unwrap()),
    );
    let upload = json!({"received": "2026-12-01T11:00:00.5Z", "service": "checkout", "end": "2026-12-01T11:00:00.000Z",
        "tags": ["service:checkout", "env:prod"],
        "attachments": [{"file": "out/checkout/goroutine-2026-12-01T11:00:00.000Z.pb.gz"}]});
    sb.write("prof/uploads.jsonl", &format!("{upload}\n"));
}

/// The listing carries the layout and the records' causes; the top table and the diff are
/// the CLI's own JSON, value for value; the flamegraphs are drawn; a capture on a
/// threshold has the scheduled one before it to compare with.
#[test]
fn ui_lists_captures_with_their_causes_and_shows_the_clis_numbers() {
    let sb = Sandbox::new();
    corpus(&sb);
    let ui = Ui::start(&sb, &["prof"]);
    let doc = ui.json("/api/profiles");
    let entries = doc["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 4, "{doc:#}");
    let find = |path: &str| {
        entries
            .iter()
            .find(|e| e["path"] == path)
            .unwrap_or_else(|| panic!("{path}: {doc:#}"))
    };
    let trig = find("shop/cart-7d9/app/heap-2026-12-01T10:05:00.000Z.pb.gz");
    assert_eq!(trig["cause"], "resource_threshold");
    assert_eq!(trig["trigger"]["metric"], "memory");
    assert_eq!(trig["namespace"], "shop");
    assert_eq!(trig["pod"], "cart-7d9");
    assert_eq!(trig["container"], "app");
    assert_eq!(trig["type"], "heap");
    assert_eq!(trig["record"], "captures.jsonl");
    let sched = find("shop/cart-7d9/app/heap-2026-12-01T10:00:00.000Z.pb.gz");
    assert_eq!(sched["cause"], "scheduled");
    let up = find("checkout/goroutine-2026-12-01T11:00:00.000Z.pb.gz");
    assert_eq!(up["cause"], "upload");
    assert_eq!(up["service"], "checkout");
    assert_eq!(up["time"], "2026-12-01T11:00:00.000Z");
    assert_eq!(up["tags"], json!(["service:checkout", "env:prod"]));
    // Newest first.
    assert_eq!(entries[0]["path"], up["path"]);
    // Unchanged, the listing is a 304 to the page's revalidation.
    let etag = reqwest::blocking::get(format!("{}/api/profiles", ui.base))
        .unwrap()
        .headers()["etag"]
        .to_str()
        .unwrap()
        .to_string();
    let again = reqwest::blocking::Client::new()
        .get(format!("{}/api/profiles", ui.base))
        .header("if-none-match", &etag)
        .send()
        .unwrap();
    assert_eq!(again.status().as_u16(), 304);
    // A new capture of another pod, of a file name the records hold for the first pod:
    // listed (within the listing's second) with no cause of its own.
    sb.write_bytes(
        "prof/shop/cart-x1/app/cpu-2026-12-01T10:00:00.000Z.pb.gz",
        &gz(&std::fs::read(fixture("cpu.pprof")).unwrap()),
    );
    std::thread::sleep(Duration::from_millis(1100));
    let later = ui.json("/api/profiles");
    let other = later["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["pod"] == "cart-x1")
        .unwrap_or_else(|| panic!("{later:#}"));
    assert!(
        other["cause"].is_null() && other["record"].is_null(),
        "{other}"
    );
    // A page that names the listing it has is sent what changed: the new capture, nothing
    // removed; then a file removed is named as gone.
    let changes = ui.json(&format!("/api/profiles?since={}", enc(&etag)));
    assert!(changes.get("entries").is_none(), "{changes:#}");
    assert_eq!(changes["count"], 5);
    assert_eq!(changes["removed"], json!([]));
    assert_eq!(changes["changed"], json!([other]));
    let tag5 = reqwest::blocking::get(format!("{}/api/profiles", ui.base))
        .unwrap()
        .headers()["etag"]
        .to_str()
        .unwrap()
        .to_string();
    std::fs::remove_file(sb.file("prof/shop/cart-x1/app/cpu-2026-12-01T10:00:00.000Z.pb.gz"))
        .unwrap();
    std::thread::sleep(Duration::from_millis(1100));
    let changes = ui.json(&format!("/api/profiles?since={}", enc(&tag5)));
    assert_eq!(changes["changed"], json!([]), "{changes:#}");
    assert_eq!(changes["removed"], json!([other["id"]]));
    assert_eq!(changes["count"], 4);
    // A tag it no longer has (or never had): the whole listing.
    let whole = ui.json("/api/profiles?since=%22nope%22");
    assert_eq!(whole["entries"].as_array().unwrap().len(), 4);

    let cpu = find("shop/cart-7d9/app/cpu-2026-12-01T10:00:00.000Z.pb.gz");
    let id = cpu["id"].as_str().unwrap();
    let file = sb.file(&format!("prof/{}", cpu["path"].as_str().unwrap()));
    let ours = ui.json(&format!("/api/top?id={}&nodes=15", enc(id)));
    let cli = sb.run(&["top", "--json", "-n", "15", file.to_str().unwrap()]);
    assert_eq!(cli.code, 0, "{}", cli.stderr);
    let cli: Value = serde_json::from_str(&cli.stdout).unwrap();
    assert_eq!(ours["report"], cli["report"]);
    assert_eq!(ours["sample_types"], cli["sample_types"]);
    let cum = ui.json(&format!(
        "/api/top?id={}&cum=true&sample_index=cpu",
        enc(id)
    ));
    let cli = sb.run(&[
        "top",
        "--json",
        "--cum",
        "--sample-index",
        "cpu",
        file.to_str().unwrap(),
    ]);
    let cli: Value = serde_json::from_str(&cli.stdout).unwrap();
    assert_eq!(cum["report"], cli["report"]);

    let (status, ctype, svg) = ui.get(&format!("/api/flamegraph.svg?id={}", enc(id)));
    assert_eq!(status, 200);
    assert_eq!(ctype, "image/svg+xml");
    assert!(String::from_utf8_lossy(&svg).contains("<svg"), "not an SVG");
    // Its title names the file by its path, not by the page's internal root index.
    let (_, rel) = id.split_once('/').unwrap();
    let text = String::from_utf8_lossy(&svg);
    assert!(
        text.contains(&format!("{rel} — ")),
        "{}",
        &text[..text.len().min(2000)]
    );
    assert!(
        !text.contains(&format!("{id} — ")),
        "the id {id} in the title"
    );
    // Asked with gzip, the flamegraph comes compressed (and is the same drawing).
    let zipped = reqwest::blocking::Client::new()
        .get(format!("{}/api/flamegraph.svg?id={}", ui.base, enc(id)))
        .header("accept-encoding", "br, gzip;q=0.8")
        .send()
        .unwrap();
    assert_eq!(zipped.headers()["content-encoding"], "gzip");
    assert_eq!(zipped.headers()["content-type"], "image/svg+xml");
    let zipped = zipped.bytes().unwrap();
    let mut back = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&zipped[..]), &mut back).unwrap();
    assert!(
        zipped.len() * 3 < back.len(),
        "{} → {}",
        back.len(),
        zipped.len()
    );
    let rects = |b: &[u8]| String::from_utf8_lossy(b).matches("<rect").count();
    assert_eq!(rects(&back), rects(&svg));

    let (b, n) = (sched["id"].as_str().unwrap(), trig["id"].as_str().unwrap());
    let ours = ui.json(&format!("/api/diff?base={}&id={}", enc(b), enc(n)));
    let cli = sb.run(&[
        "diff",
        "--json",
        sb.file(&format!("prof/{}", sched["path"].as_str().unwrap()))
            .to_str()
            .unwrap(),
        sb.file(&format!("prof/{}", trig["path"].as_str().unwrap()))
            .to_str()
            .unwrap(),
    ]);
    assert_eq!(cli.code, 0, "{}", cli.stderr);
    let cli: Value = serde_json::from_str(&cli.stdout).unwrap();
    assert_eq!(ours["report"], cli["report"]);
    assert_eq!(ours["rows_total"], cli["rows_total"]);
    let (status, _, svg) = ui.get(&format!("/api/diff.svg?base={}&id={}", enc(b), enc(n)));
    assert_eq!(status, 200);
    assert!(String::from_utf8_lossy(&svg).contains("<svg"));

    // The file as it is on disk.
    let (status, _, bytes) = ui.get(&format!("/file?id={}", enc(id)));
    assert_eq!(status, 200);
    assert_eq!(bytes, std::fs::read(&file).unwrap());

    // The page itself: its script and style from this server, under a policy that allows
    // nothing else.
    let r = reqwest::blocking::get(format!("{}/", ui.base)).unwrap();
    let csp = r.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(csp.contains("script-src 'self'"), "{csp}");
    let page = r.text().unwrap();
    assert!(page.contains("src=\"/app.js\""), "{page}");
    assert!(
        !page.contains("http://") && !page.contains("https://"),
        "an outside asset"
    );
}

/// Only what the listing holds is served: traversal, absolute paths, ids of other roots
/// and files reached through a symbolic link out of the directory are 404, and so is a
/// path that is not a page.
#[test]
fn ui_serves_nothing_outside_its_directories() {
    let sb = Sandbox::new();
    corpus(&sb);
    sb.write_bytes(
        "outside/secret-2026-12-01T10:00:00.000Z.pb.gz",
        &gz(&std::fs::read(fixture("cpu.pprof")).unwrap()),
    );
    std::os::unix::fs::symlink(
        sb.file("outside/secret-2026-12-01T10:00:00.000Z.pb.gz"),
        sb.file("prof/checkout/link-2026-12-01T10:00:00.000Z.pb.gz"),
    )
    .unwrap();
    std::os::unix::fs::symlink(sb.file("outside"), sb.file("prof/dirlink")).unwrap();
    let ui = Ui::start(&sb, &["prof"]);
    let doc = ui.json("/api/profiles");
    let listed = doc.to_string();
    assert!(
        !listed.contains("secret") && !listed.contains("link-"),
        "{listed}"
    );
    let outside = sb.file("outside/secret-2026-12-01T10:00:00.000Z.pb.gz");
    for id in [
        "0/../outside/secret-2026-12-01T10:00:00.000Z.pb.gz".to_string(),
        "0/checkout/link-2026-12-01T10:00:00.000Z.pb.gz".to_string(),
        "0/dirlink/secret-2026-12-01T10:00:00.000Z.pb.gz".to_string(),
        outside.to_str().unwrap().to_string(),
        format!("0/{}", outside.to_str().unwrap()),
        "1/checkout/goroutine-2026-12-01T11:00:00.000Z.pb.gz".to_string(),
        "0/captures.jsonl".to_string(),
    ] {
        for page in ["/file", "/api/top", "/api/flamegraph.svg"] {
            let (status, _, body) = ui.get(&format!("{page}?id={}", enc(&id)));
            assert_eq!(
                status,
                404,
                "{page} {id}: {}",
                String::from_utf8_lossy(&body)
            );
        }
    }
    for path in [
        "/../outside",
        "/etc/passwd",
        "/prof/captures.jsonl",
        "/%2e%2e/outside",
    ] {
        assert_eq!(ui.get(path).0, 404, "{path}");
    }
}

/// The function names made to be markup, and a CPU profile of them (gzip).
const MARKUP: [&str; 6] = [
    "",
    "<script>window.pwned=1</script>",
    "\"><img src=x onerror=window.pwned=1>",
    "main.main",
    "cpu",
    "nanoseconds",
];

fn markup_profile() -> Vec<u8> {
    use agentprof::pprof::proto::{Function, Line, Location, Profile, Sample, ValueType};
    use prost::Message;
    let p = Profile {
        sample_type: vec![ValueType { r#type: 4, unit: 5 }],
        sample: vec![
            Sample {
                location_id: vec![1, 3],
                value: vec![700],
                ..Default::default()
            },
            Sample {
                location_id: vec![2, 3],
                value: vec![300],
                ..Default::default()
            },
        ],
        location: (1..=3)
            .map(|i| Location {
                id: i,
                line: vec![Line {
                    function_id: i,
                    line: 1,
                    ..Default::default()
                }],
                ..Default::default()
            })
            .collect(),
        function: (1..=3)
            .map(|i| Function {
                id: i,
                name: i as i64,
                system_name: i as i64,
                ..Default::default()
            })
            .collect(),
        string_table: MARKUP.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    };
    gz(&p.encode_to_vec())
}

/// Function names made to be markup arrive as data: JSON strings in the top table, and
/// escaped text in the flamegraph.
#[test]
fn ui_keeps_markup_in_names_as_text() {
    let names = MARKUP;
    let sb = Sandbox::new();
    sb.write_bytes(
        "prof/evil/cpu-2026-12-01T10:00:00.000Z.pb.gz",
        &markup_profile(),
    );
    let ui = Ui::start(&sb, &["prof"]);
    let top = ui.json("/api/top?id=0%2Fevil%2Fcpu-2026-12-01T10%3A00%3A00.000Z.pb.gz");
    let fns: Vec<&str> = top["report"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["function"].as_str().unwrap())
        .collect();
    // As go tool pprof names them (`<…>` read as template arguments and dropped); the other
    // name keeps its markup.
    assert!(fns.contains(&names[2]), "{fns:?}");
    let (status, _, svg) =
        ui.get("/api/flamegraph.svg?id=0%2Fevil%2Fcpu-2026-12-01T10%3A00%3A00.000Z.pb.gz");
    assert_eq!(status, 200);
    let svg = String::from_utf8_lossy(&svg);
    assert!(
        !svg.contains("<script>window") && !svg.contains("<img"),
        "{svg}"
    );
    assert!(
        svg.contains("&lt;img src=x onerror=window.pwned=1&gt;"),
        "{svg}"
    );
}

/// A pstats dump written by Python's cProfile at `rel`, and for the sort keys cumulative,
/// tottime and ncalls the rows in Python's pstats' order: [file, line, function, cc, nc,
/// tt, ct].
fn pstats_dump(sb: &Sandbox, rel: &str) -> Value {
    let dump = sb.file(rel);
    std::fs::create_dir_all(dump.parent().unwrap()).unwrap();
    let script = r#"
import cProfile, json, pstats, sys
def leaf(n): return sum(i * i for i in range(n))
def mid(): return [leaf(2000) for _ in range(30)]
def fib(n): return n if n < 2 else fib(n - 1) + fib(n - 2)
cProfile.run("mid(); fib(12); sorted(range(1000), key=lambda x: -x)", sys.argv[1])
out = {}
for key in ["cumulative", "tottime", "ncalls"]:
    st = pstats.Stats(sys.argv[1]).sort_stats(key)
    out[key] = [[f[0], f[1], f[2]] + list(st.stats[f][:4]) for f in st.fcn_list]
print(json.dumps(out))
"#;
    let py = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(&dump)
        .output()
        .expect("python3");
    assert!(
        py.status.success(),
        "{}",
        String::from_utf8_lossy(&py.stderr)
    );
    serde_json::from_slice(&py.stdout).unwrap()
}

/// A pstats dump that Python's cProfile wrote reads as Python's pstats reads it: the same
/// functions with the same calls and times, in pstats' order for each sort key.
#[test]
fn ui_reads_pstats_dumps_as_python_does() {
    let sb = Sandbox::new();
    let want = pstats_dump(&sb, "prof/checks/disk.pstats");
    let ui = Ui::start(&sb, &["prof"]);
    let doc = ui.json("/api/profiles");
    let e = &doc["entries"][0];
    assert_eq!(e["kind"], "pstats", "{doc}");
    for key in ["cumulative", "tottime", "ncalls"] {
        let got = ui.json(&format!(
            "/api/pstats?id={}&sort={key}",
            enc(e["id"].as_str().unwrap())
        ));
        let rows: Vec<Value> = got["top"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                json!([
                    r["file"],
                    r["line"],
                    r["function"],
                    r["primitive_calls"],
                    r["calls"],
                    r["tottime"],
                    r["cumtime"]
                ])
            })
            .collect();
        assert_eq!(Value::Array(rows), want[key], "{key}");
    }
    let (status, _, body) = ui.get(&format!(
        "/api/pstats?id={}&sort=bogus",
        enc(e["id"].as_str().unwrap())
    ));
    assert_eq!(status, 400, "{}", String::from_utf8_lossy(&body));
    // Its call tree drawn from the caller edges: every function of the script under the
    // dump's root, fib's recursion stopped, the whole as wide as the root's cumulative time.
    let (status, ctype, svg) = ui.get(&format!(
        "/api/pstats.svg?id={}",
        enc(e["id"].as_str().unwrap())
    ));
    let svg = String::from_utf8_lossy(&svg);
    assert_eq!((status, ctype.as_str()), (200, "image/svg+xml"), "{svg}");
    for f in [
        "mid (&lt;string&gt;:4)",
        "leaf (&lt;string&gt;:3)",
        "fib (&lt;string&gt;:5)",
        "{built-in method builtins.exec}",
    ] {
        assert!(
            svg.contains(f),
            "{f}: {:?}",
            svg.split("<title>")
                .skip(1)
                .map(|t| t.split('<').next().unwrap_or(""))
                .collect::<Vec<_>>()
        );
    }
    let total: f64 = svg
        .split("total_samples=\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .and_then(|n| n.parse().ok())
        .expect("total_samples");
    let root_us = want["cumulative"][0][6].as_f64().unwrap() * 1e6;
    assert!(
        (total - root_us).abs() <= root_us * 0.01 + 50.0,
        "{total} µs drawn, root {root_us} µs"
    );
}

/// The page in the system's Chromium (playwright-core): the list shows every profile with
/// its cause and trigger; a profile opens with the CLI's top rows and a flamegraph that
/// inferno's search finds in; one click compares a triggered capture with the scheduled
/// one before it, with `agentprof diff`'s rows; markup in names stays text and runs
/// nothing; a pstats dump sorts by a click; traversal is 404; nothing is fetched from
/// outside. The screenshots stay in target/tmp/ui-screenshots.
#[test]
fn ui_in_a_real_browser() {
    let Some(chromium) = crate::support::browser() else {
        return;
    };
    let sb = Sandbox::new();
    corpus(&sb);
    sb.write_bytes(
        "prof/evil/cpu-2026-12-01T09:00:00.000Z.pb.gz",
        &markup_profile(),
    );
    pstats_dump(&sb, "prof/checks/disk.pstats");
    sb.write_bytes(
        "prof/broken/goroutine-2026-12-01T08:00:00.000Z.pb.gz",
        &gz(b"not a profile at all"),
    );
    let ui = Ui::start(&sb, &["prof"]);
    let doc = ui.json("/api/profiles");
    let entries = doc["entries"].as_array().unwrap();
    let id_of = |path: &str| {
        entries
            .iter()
            .find(|e| e["path"] == path)
            .unwrap_or_else(|| panic!("{path}"))["id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let cpu_path = "shop/cart-7d9/app/cpu-2026-12-01T10:00:00.000Z.pb.gz";
    let sched = "shop/cart-7d9/app/heap-2026-12-01T10:00:00.000Z.pb.gz";
    let trig = "shop/cart-7d9/app/heap-2026-12-01T10:05:00.000Z.pb.gz";
    let artefacts = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ui-screenshots");
    std::fs::create_dir_all(&artefacts).unwrap();
    let plan = json!({
        "base": ui.base,
        "chromium": chromium,
        "artefacts": artefacts,
        "listed": entries.len(),
        "open": {"id": id_of(cpu_path), "type": "cpu", "search": "runtime"},
        "views": {"pick": "main.fibonacci"},
        "compare": {"id": id_of(trig)},
        "evil": {"id": id_of("evil/cpu-2026-12-01T09:00:00.000Z.pb.gz")},
        "bad": {"id": id_of("broken/goroutine-2026-12-01T08:00:00.000Z.pb.gz")},
        "pstats": {"id": id_of("checks/disk.pstats")},
        "traversal": ["/file?id=0%2F..%2F..%2Fetc%2Fpasswd", "/file?id=%2Fetc%2Fpasswd", "/../../etc/passwd", "/prof/captures.jsonl"],
    });
    let seen = crate::support::run_browser(&sb, "ui.mjs", &plan);
    assert_eq!(seen["listed"], entries.len());
    let causes = seen["causes"].to_string();
    for c in ["resource_threshold", "scheduled", "upload"] {
        assert!(causes.contains(c), "{c}: {causes}");
    }
    assert!(
        seen["triggers"]
            .to_string()
            .contains("memory 96.2 % ≥ 90 % (normal)"),
        "{}",
        seen["triggers"]
    );
    assert_eq!(seen["filtered"], 2, "the two cpu profiles");
    // The top rows are the CLI's, cell for cell (the page shows 20).
    let cli = sb.run(&[
        "top",
        "--json",
        "-n",
        "20",
        sb.file(&format!("prof/{cpu_path}")).to_str().unwrap(),
    ]);
    let cli: Value = serde_json::from_str(&cli.stdout).unwrap();
    assert_eq!(seen["top_rows"], page_rows(&cli["report"]));
    assert!(seen["flame_frames"].as_u64().unwrap() > 3, "{seen}");
    views_as_the_cli_shows_them(&sb, &format!("prof/{cpu_path}"), &seen);

    // A frame is labelled with its name, not with half its value ("main.main (1,910 cpu").
    let labels: Vec<&str> = seen["flame_labels"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|l| l.as_str())
        .map(str::trim_end)
        .collect();
    assert!(labels.contains(&"all"), "{labels:?}");
    assert!(
        labels.iter().any(|l| l.starts_with("runtime.")),
        "{labels:?}"
    );
    assert!(
        labels
            .iter()
            .all(|l| !l.contains("cpu") && !l.contains('(')),
        "{labels:?}"
    );
    // Searched as a user searches: typed into the page's box (highlighted in place, the
    // flamegraph not fetched again), and by the SVG's own button.
    assert_eq!(seen["search_fetches"], 0, "{seen}");
    // Also a term typed while the flamegraph was still on its way to its frame.
    for k in [
        "flame_search",
        "flame_button_search",
        "flame_search_while_loading",
    ] {
        assert!(
            seen[k]
                .as_str()
                .unwrap()
                .starts_with("Drawn frames matched:"),
            "{k}: {seen}"
        );
    }
    // The share under the box is go tool pprof -focus's (which also matches file names);
    // the SVG's is of the frames it drew whose names match, never more.
    let go =
        crate::support::go_focus_percent(&sb.file(&format!("prof/{cpu_path}")), "runtime", "cpu");
    let state = seen["search_state"].as_str().unwrap();
    assert!(
        state.contains(&format!("matched {go:.1}%")),
        "{state}: go {go}"
    );
    let drawn = seen["flame_search"].as_str().unwrap();
    let drawn_pct: f64 = drawn
        .trim_start_matches("Drawn frames matched:")
        .trim()
        .trim_end_matches('%')
        .parse()
        .unwrap();
    assert!(
        drawn_pct > 0.0 && drawn_pct <= go + 0.05,
        "{drawn}: go {go}"
    );
    assert!(
        seen["search_in_hash"]
            .as_str()
            .unwrap()
            .contains("s=runtime"),
        "{seen}"
    );
    assert!(
        seen["sort_in_hash"].as_str().unwrap().contains("sort=cum"),
        "{seen}"
    );
    assert_eq!(
        seen["next_profile_sort"], "flat",
        "settings do not carry over"
    );
    assert!(
        seen["bad_flame_state"]
            .as_str()
            .unwrap()
            .starts_with("no flamegraph"),
        "{seen}"
    );
    assert_eq!(seen["bad_frame_hidden"], true);
    let bad = seen["bad_error"].as_str().unwrap();
    assert!(
        !bad.contains(sb.path().to_str().unwrap()),
        "no server path in an error: {bad}"
    );
    assert!(seen["phone_overflow"].as_i64().unwrap() <= 0, "{seen}");
    // One click to the scheduled capture before, and agentprof diff's rows.
    assert_eq!(seen["previous_button"], true);
    let hash = seen["diff_hash"].as_str().unwrap();
    assert!(hash.contains(&format!("base={}", id_of(sched))), "{hash}");
    // The rows of agentprof diff's own table, cell by cell (units and all).
    let cli = sb.run(&[
        "diff",
        "-n",
        "30",
        sb.file(&format!("prof/{sched}")).to_str().unwrap(),
        sb.file(&format!("prof/{trig}")).to_str().unwrap(),
    ]);
    assert_eq!(cli.code, 0, "{}", cli.stderr);
    let want: Vec<Value> = cli
        .stdout
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("Δflat"))
        .skip(1)
        .take_while(|l| !l.starts_with('…'))
        .map(|l| {
            let cells: Vec<&str> = l.split_whitespace().collect();
            let mut row: Vec<Value> = cells[..8].iter().map(|c| json!(c)).collect();
            row.push(json!(cells[8..].join(" ")));
            Value::Array(row)
        })
        .collect();
    assert!(!want.is_empty());
    assert_eq!(
        seen["diff_rows"],
        Value::Array(want.clone()),
        "want {want:?}\n{}",
        cli.stdout
    );
    // Markup in names: text, and nothing ran.
    assert!(
        seen["evil_functions"]
            .to_string()
            .contains("onerror=window.pwned=1"),
        "{seen}"
    );
    assert_eq!(seen["evil_images"], 0);
    assert_eq!(seen["evil_frame_images"], 0);
    assert_eq!(seen["pwned"], false);
    // pstats, sorted by tottime by a click.
    let tt: Vec<f64> = seen["pstats_rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[1].as_str().unwrap().trim().parse().unwrap())
        .collect();
    assert!(
        tt.len() > 3 && tt.windows(2).all(|w| w[0] >= w[1]),
        "{tt:?}"
    );
    for t in seen["traversal"].as_array().unwrap() {
        assert_eq!(t[1], 404, "{t}");
    }
    assert_eq!(seen["outside_requests"], json!([]));
    // The broken profile's two 422s (its table and its flamegraph) are the browser's only
    // console errors.
    let errors: Vec<&Value> = seen["console_errors"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| !e.as_str().unwrap().contains("status of 422"))
        .collect();
    assert!(errors.is_empty(), "{seen}");
    for s in seen["screenshots"].as_array().unwrap() {
        let png = std::fs::read(s.as_str().unwrap()).unwrap();
        assert!(png.starts_with(b"\x89PNG") && png.len() > 10_000, "{s}");
    }
}

/// A directory that is not there and an address that is not one are usage errors (exit 2)
/// that say which; an address other hosts reach is served, and agentprof says what that
/// exposes.
#[test]
fn ui_says_what_is_wrong_and_what_is_exposed() {
    let sb = Sandbox::new();
    let r = sb.run(&["ui", "no-such-dir", "--duration", "1s"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("no-such-dir"), "{}", r.stderr);
    let r = sb.run(&["ui", ".", "--listen", "localhost", "--duration", "1s"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("--listen") && r.stderr.contains("HOST:PORT"),
        "{}",
        r.stderr
    );
    std::fs::create_dir_all(sb.file("prof")).unwrap();
    let r = sb.run(&["ui", "prof", "--listen", "0.0.0.0:0", "--duration", "1s"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // What is true: only the names it answers reach the profiles; the others get 421
    // until --allow-host names them.
    assert!(
        r.stderr.contains("0.0.0.0 is not a loopback address: anyone who reaches it under a name it answers can read these profiles")
            && r.stderr.contains("others get 421 until their name is given with --allow-host NAME"),
        "{}",
        r.stderr
    );
}

/// `--open` starts `$BROWSER` on the page (the first of its list that starts, `%s` for the
/// URL), and the page it is given is served; with no browser to start, it says so and
/// serves anyway.
#[test]
fn ui_open_starts_the_browser_on_the_page() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let sb = Sandbox::new();
    corpus(&sb);
    sb.write(
        "browser.sh",
        "#!/bin/sh\nprintf '%s %s' \"$1\" \"$2\" > \"$(dirname \"$0\")/opened.txt\"\n",
    );
    let script = sb.file("browser.sh");
    let run = |browser: &str, path: &str| {
        Command::new(env!("CARGO_BIN_EXE_agentprof"))
            .current_dir(sb.path())
            .args(["ui", "prof", "--open", "--listen", "127.0.0.1:0"])
            .args(["--duration", "4s"])
            .env_remove("AGENTPROF_CONFIG")
            .env("BROWSER", browser)
            .env("PATH", path)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let browser = format!(
        "/nonexistent/browser:/bin/sh {} --new-tab %s",
        script.display()
    );
    let child = run(&browser, "/usr/bin:/bin");
    let opened = sb.file("opened.txt");
    let until = std::time::Instant::now() + Duration::from_secs(3);
    while !opened.exists() && std::time::Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    let said = std::fs::read_to_string(&opened).unwrap_or_default();
    let (flag, url) = said.split_once(' ').unwrap_or_default();
    assert_eq!(flag, "--new-tab", "{said:?}");
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with('/'),
        "{said:?}"
    );
    let page = reqwest::blocking::get(url).unwrap();
    assert_eq!(page.status().as_u16(), 200);
    assert!(page.text().unwrap().contains("agentprof"));
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());

    // Nothing to start (no $BROWSER command there, no xdg-open on the PATH).
    let child = run("/nonexistent/browser", sb.path().to_str().unwrap());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("cannot open a browser (/nonexistent/browser: ")
            && err.contains("; open http://127.0.0.1:"),
        "{err}"
    );
}

/// What the browser saw of focus, peek and source from a click on main.fibonacci's row: the
/// rows `agentprof top --focus`, `--peek` and `--list` print (go tool pprof's, as
/// tests/cli/pprof_views.rs checks), and the flamegraph's right-click picking its frame.
fn views_as_the_cli_shows_them(sb: &Sandbox, file: &str, seen: &Value) {
    assert_eq!(seen["picked"], "main.fibonacci", "{seen}");
    let re = "^main\\.fibonacci$";
    assert!(
        seen["focus_hash"]
            .as_str()
            .unwrap()
            .contains(&format!("focus={re}")),
        "{seen}"
    );
    assert!(
        seen["focus_flame_src"]
            .as_str()
            .unwrap()
            .contains(&format!("focus={re}")),
        "the flamegraph is of what the focus keeps: {seen}"
    );
    let f = sb.file(file);
    let cli = |extra: &[&str]| -> Value {
        let mut a = vec!["top", "--json", "--focus", re];
        a.extend_from_slice(extra);
        a.push(f.to_str().unwrap());
        let r = sb.run(&a);
        assert_eq!(r.code, 0, "{a:?}: {}", r.stderr);
        r.json()
    };
    let top = cli(&["-n", "20"]);
    assert_eq!(
        seen["focus_header"].as_str().unwrap(),
        top["report"]["header"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h.as_str().unwrap())
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert_eq!(seen["focus_rows"], page_rows(&top["report"]));
    // The peek: a separator, callers (↑), the function, callees (↓).
    let peek = cli(&["--peek", re]);
    let mut want = Vec::new();
    for e in peek["report"]["entries"].as_array().unwrap() {
        want.push(json!([""]));
        let edge = |c: &Value, arrow: &str| {
            let inline = if c["inline"] == true { " (inline)" } else { "" };
            json!([
                "",
                "",
                "",
                "",
                "",
                c["weight_fmt"],
                c["pct"],
                format!("{arrow} {}{inline}", c["function"].as_str().unwrap())
            ])
        };
        for c in e["callers"].as_array().unwrap() {
            want.push(edge(c, "↑"));
        }
        want.push(json!([
            e["flat_fmt"],
            e["flat_pct"],
            e["sum_pct"],
            e["cum_fmt"],
            e["cum_pct"],
            "",
            "",
            e["function"]
        ]));
        for c in e["callees"].as_array().unwrap() {
            want.push(edge(c, "↓"));
        }
    }
    assert!(want.len() > 2, "{peek}");
    assert_eq!(seen["peek_rows"], Value::Array(want));
    assert!(
        seen["peek_hash"]
            .as_str()
            .unwrap()
            .contains(&format!("peek={re}"))
    );
    // The source view: the page reads no source without --source-path; it shows the lines
    // with samples, the CLI's lines (whose file is not on this machine either).
    let list = cli(&["--list", re]);
    let routines = list["report"]["routines"].as_array().unwrap();
    let heads: Vec<String> = routines
        .iter()
        .map(|r| {
            format!(
                "{} in {}",
                r["function"].as_str().unwrap(),
                r["file"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(seen["source_heads"], json!(heads));
    let mut want = Vec::new();
    for r in routines {
        for l in r["lines"].as_array().unwrap() {
            assert!(l["text"].is_null(), "the file is not here: {l}");
            want.push(json!([
                l["flat_fmt"],
                l["cum_fmt"],
                l["line"].to_string(),
                ""
            ]));
        }
    }
    assert!(!want.is_empty());
    assert_eq!(seen["source_rows"], Value::Array(want));
    assert!(
        seen["source_note"]
            .as_str()
            .unwrap()
            .contains("--source-path"),
        "{seen}"
    );
    // Right-click on the widest frame: its function, picked.
    let title = seen["flame_target"].as_str().unwrap();
    let name = title.rsplit_once(" (").map_or(title, |(n, _)| n);
    assert_eq!(seen["flame_picked"], name, "{seen}");
    assert!(seen["cleared_rows"].as_u64().unwrap() > 0);
}
