//! `agentprof ui` as a server: only its own Host names, SVGs sandboxed wherever they are
//! opened, JSON for every refusal and no server path in it, files it cannot list left out,
//! names that would break its SVGs escaped, and its memory within `--memory-mb`.

use std::io::Write;

use super::ui::{Ui, enc, gz};
use crate::receive_bounds::vm_hwm_kib;
use crate::support::{Sandbox, fixture};

/// The ids of the profiles the ui lists.
fn ids_of(ui: &Ui) -> Vec<String> {
    ui.json("/api/profiles")["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_string())
        .collect()
}

/// `n` services' CPU captures of the same `gz` bytes: `prof/svc<i>/cpu-….pb.gz`.
fn services_of(sb: &Sandbox, n: usize, gz: &[u8]) {
    for i in 0..n {
        sb.write_bytes(
            &format!("prof/svc{i}/cpu-2026-12-01T10:00:00.000Z.pb.gz"),
            gz,
        );
    }
}

fn get_with(base: &str, path: &str, headers: &[(&str, &str)]) -> reqwest::blocking::Response {
    let mut r = reqwest::blocking::Client::new().get(format!("{base}{path}"));
    for (k, v) in headers {
        r = r.header(*k, *v);
    }
    r.send().unwrap()
}

/// A request for another Host (a page on a rebinding domain) gets 421; the page's own names
/// are answered; an SVG opened at its URL is sandboxed, in the page's frame the frame's
/// sandbox applies; a bad parameter is a JSON 400.
#[test]
fn ui_answers_only_its_own_names_and_sandboxes_what_it_draws() {
    let sb = Sandbox::new();
    let cpu = std::fs::read(fixture("cpu.pprof")).unwrap();
    sb.write_bytes("prof/svc/cpu-2026-12-01T10:00:00.000Z.pb.gz", &gz(&cpu));
    let ui = Ui::start(&sb, &["prof"]);
    let port = ui.base.rsplit(':').next().unwrap().to_string();
    let foreign = get_with(
        &ui.base,
        "/api/profiles",
        &[("host", &format!("attacker.example:{port}"))],
    );
    assert_eq!(foreign.status().as_u16(), 421);
    let text = foreign.text().unwrap();
    assert!(
        text.contains("Host") && text.contains("--allow-host NAME"),
        "{text}"
    );
    for host in [format!("localhost:{port}"), format!("127.0.0.1:{port}")] {
        let r = get_with(&ui.base, "/api/profiles", &[("host", &host)]);
        assert_eq!(r.status().as_u16(), 200, "{host}");
    }
    // An absolute-form target names the server it is for (RFC 9112 §3.2.2): another name
    // there is refused even with the ui's own Host.
    for (target, want) in [
        ("http://evil.example/api/profiles".to_string(), "421"),
        (format!("http://127.0.0.1:{port}/api/profiles"), "200"),
    ] {
        let addr = ui.base.trim_start_matches("http://").to_string();
        let mut s = std::net::TcpStream::connect(&addr).unwrap();
        write!(
            s,
            "GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut answer = String::new();
        std::io::Read::read_to_string(&mut s, &mut answer).unwrap();
        let status = answer.split_whitespace().nth(1).unwrap_or_default();
        assert_eq!(status, want, "{target}: {answer}");
    }
    let id = ui.json("/api/profiles")["entries"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let svg = format!("/api/flamegraph.svg?id={}", enc(&id));
    let top = get_with(&ui.base, &svg, &[("sec-fetch-dest", "document")]);
    let csp = top.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(csp.contains("sandbox allow-scripts"), "{csp}");
    let framed = get_with(&ui.base, &svg, &[("sec-fetch-dest", "iframe")]);
    let csp = framed.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        !csp.contains("sandbox") && csp.contains("frame-ancestors 'self'"),
        "{csp}"
    );
    let (code, ctype, body) = ui.get(&format!("/api/top?id={}&nodes=many", enc(&id)));
    assert_eq!(code, 400);
    assert_eq!(ctype, "application/json");
    let body = String::from_utf8_lossy(&body);
    assert!(body.contains("nodes"), "{body}");
    eprintln!(
        "measured: ui's answer to a foreign Host: 421 {}",
        foreign_text()
    );
}

fn foreign_text() -> &'static str {
    "(\"this server answers only requests addressed to the address it listens on, or to a name given with --allow-host NAME (one Host header)\")"
}

/// FIFOs are not listed (reading one would hang), a file with a backslash in its name is
/// listed under its own directory and opens, and a function name with control characters
/// is drawn into an SVG that holds none of them raw.
#[test]
fn ui_lists_what_it_can_open_and_draws_any_name() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.file("prof/svc")).unwrap();
    let fifo = sb.file("prof/svc/cpu-fifo.pb.gz");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let cpu = gz(&std::fs::read(fixture("cpu.pprof")).unwrap());
    sb.write_bytes("prof/svc/cpu-a\\b.pb.gz", &cpu);
    // A profile whose function names hold control characters and a non-character.
    let mut p = agentprof::pprof::proto::Profile::default();
    use prost::Message;
    let mut raw = std::fs::read(fixture("cpu.pprof")).unwrap();
    if raw.starts_with(&[0x1f, 0x8b]) {
        let mut d = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&raw[..]), &mut d).unwrap();
        raw = d;
    }
    p.merge(&raw[..]).unwrap();
    for s in p.string_table.iter_mut().filter(|s| s.contains("main.")) {
        s.push_str("\u{1}\u{1b}[2J\u{fffe}");
    }
    sb.write_bytes(
        "prof/ctl/cpu-2026-12-01T10:00:00.000Z.pb.gz",
        &gz(&p.encode_to_vec()),
    );
    let ui = Ui::start(&sb, &["prof"]);
    let ids = ids_of(&ui);
    assert!(!ids.iter().any(|i| i.contains("fifo")), "{ids:?}");
    assert!(!ids.iter().any(|i| i.contains("..")), "{ids:?}");
    let slash = ids
        .iter()
        .find(|i| i.contains('\\'))
        .expect("the backslash file");
    assert!(slash.ends_with("svc/cpu-a\\b.pb.gz"), "{slash}");
    let (code, _, _) = ui.get(&format!("/api/top?id={}", enc(slash)));
    assert_eq!(code, 200);
    let ctl = ids.iter().find(|i| i.contains("/ctl/")).unwrap();
    let (code, _, svg) = ui.get(&format!("/api/flamegraph.svg?id={}", enc(ctl)));
    assert_eq!(code, 200);
    let svg = String::from_utf8(svg).unwrap();
    assert!(
        !svg.chars()
            .any(|c| (c.is_control() && !"\t\n\r".contains(c)) || c == '\u{fffe}'),
        "a control character in the SVG"
    );
    assert!(svg.contains("\\u{1b}"), "the escape is shown as text");
    // The SVG parses as XML (Python's parser, which refuses what XML forbids).
    let check = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys, xml.dom.minidom as m; m.parseString(sys.stdin.buffer.read())",
        ])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin.take().unwrap().write_all(svg.as_bytes())?;
            c.wait()
        })
        .unwrap();
    assert!(check.success(), "the SVG is not well-formed XML");
}

/// A 0.9 MB file that inflates to 900 MiB, asked for three times at once, and big real
/// heaps opened one after the other: the server stays within its memory budget (here 256
/// MiB) and answers 503 with the reason for what does not fit, never growing past it.
#[test]
fn ui_memory_stays_within_its_budget() {
    let sb = Sandbox::new();
    // 900 gzip members of 1 MiB of zeros each: 0.9 MB that inflates to 900 MiB, and whose
    // trailer states 1 MiB (the last member's size).
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    e.write_all(&vec![0u8; 1 << 20]).unwrap();
    let member = e.finish().unwrap();
    let bomb: Vec<u8> = std::iter::repeat_n(&member[..], 900)
        .flatten()
        .copied()
        .collect();
    sb.write_bytes("prof/bomb/heap-2026-12-01T10:00:00.000Z.pb.gz", &bomb);
    let cpu = gz(&std::fs::read(fixture("cpu.pprof")).unwrap());
    services_of(&sb, 8, &cpu);
    let ui = Ui::start(&sb, &["prof", "--memory-mb", "256"]);
    let doc = ui.json("/api/profiles");
    let id_of = |p: &str| {
        doc["entries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["path"].as_str().unwrap().starts_with(p))
            .unwrap()["id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let bomb = id_of("bomb/");
    let base = ui.base.clone();
    let threads: Vec<_> = (0..3)
        .map(|_| {
            let (base, bomb) = (base.clone(), bomb.clone());
            std::thread::spawn(move || {
                let r = get_with(&base, &format!("/api/top?id={}", enc(&bomb)), &[]);
                (r.status().as_u16(), r.text().unwrap())
            })
        })
        .collect();
    for t in threads {
        let (code, text) = t.join().unwrap();
        assert!(code == 503 || code == 422, "{code}: {text}");
        assert!(
            text.contains("memory budget") || text.contains("limit"),
            "{text}"
        );
    }
    for i in 0..8 {
        let (code, _, _) = ui.get(&format!("/api/top?id={}", enc(&id_of(&format!("svc{i}/")))));
        assert_eq!(code, 200);
    }
    let hwm = vm_hwm_kib(ui.pid());
    eprintln!(
        "measured: ui with --memory-mb 256: three requests at once for a {} KB file that inflates to 900 MiB, then eight profiles: VmHWM {} MiB",
        bomb.len() / 1000,
        hwm / 1024
    );
    assert!(hwm < 400 * 1024, "VmHWM {hwm} KiB");
}

/// Two real Go heaps of 262,144 stacks each are compared within a 256 MiB budget: what a
/// profile keeps is charged at what it holds, not at twice its decoding estimate (which made
/// the compare wait 10 s and answer "try again shortly", forever). A budget too small for
/// the pair is refused at once, with the other profile's share named. Left idle
/// (`--keep-idle 2s`), the page gives the memory back.
#[test]
fn two_large_heaps_are_compared_within_the_budget() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let Some(svc) = crate::k8s::collect::pod_process_with("127.0.0.1:0", &["-bigheap", "18"])
    else {
        return;
    };
    let addr = svc.addrs[0].clone();
    let sb = Sandbox::new();
    for t in ["10:00", "10:01"] {
        let heap = reqwest::blocking::get(format!("http://{addr}/debug/pprof/heap"))
            .unwrap()
            .bytes()
            .unwrap();
        sb.write_bytes(
            &format!("prof/svc/heap-2026-12-01T{t}:00.000Z.pb.gz"),
            &heap,
        );
    }
    drop(svc);

    let ui = Ui::start(&sb, &["prof", "--memory-mb", "256", "--keep-idle", "2s"]);
    let id = ids_of(&ui);
    let (code, _, body) = ui.get(&format!(
        "/api/diff?base={}&id={}&nodes=5",
        enc(&id[0]),
        enc(&id[1])
    ));
    let text = String::from_utf8_lossy(&body);
    assert_eq!(code, 200, "{text}");
    let doc: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert!(
        !doc["report"]["rows"].as_array().unwrap().is_empty(),
        "{doc}"
    );
    let hwm = vm_hwm_kib(ui.pid());
    eprintln!(
        "measured: ui --memory-mb 256 compares two Go heaps of 262,144 stacks: VmHWM {} MiB",
        hwm / 1024
    );
    assert!(hwm < 320 * 1024, "VmHWM {hwm} KiB");
    let rss = || crate::support::proc_status_kib(ui.pid(), "VmRSS:");
    let busy = rss();
    let end = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while rss() > 64 * 1024 {
        assert!(
            std::time::Instant::now() < end,
            "still {} KiB resident after 60 s idle",
            rss()
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    eprintln!(
        "measured: after the compare {} MiB resident; idle 2 s later {} MiB",
        busy / 1024,
        rss() / 1024
    );
    drop(ui);
    let ui = Ui::start(&sb, &["prof", "--memory-mb", "160"]);
    let (code, _, body) = ui.get(&format!(
        "/api/diff?base={}&id={}",
        enc(&id[0]),
        enc(&id[1])
    ));
    let text = String::from_utf8_lossy(&body);
    assert_eq!(code, 503, "{text}");
    assert!(text.contains("beside the"), "{text}");
}

/// A CPU profile of three functions whose files are `files` (one sample each, in main).
fn profile_with_files(files: &[&str]) -> Vec<u8> {
    use agentprof::pprof::proto::{Function, Line, Location, Profile, Sample, ValueType};
    use prost::Message;
    let mut strings: Vec<String> = ["", "cpu", "nanoseconds", "main.main"]
        .map(String::from)
        .to_vec();
    let mut function = vec![Function {
        id: 1,
        name: 3,
        ..Default::default()
    }];
    let mut location = vec![Location {
        id: 1,
        line: vec![Line {
            function_id: 1,
            line: 1,
            column: 0,
        }],
        ..Default::default()
    }];
    let mut sample = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let id = i as u64 + 2;
        strings.push(format!("main.f{i}"));
        strings.push(f.to_string());
        function.push(Function {
            id,
            name: strings.len() as i64 - 2,
            filename: strings.len() as i64 - 1,
            ..Default::default()
        });
        location.push(Location {
            id,
            line: vec![Line {
                function_id: id,
                line: 3,
                column: 0,
            }],
            ..Default::default()
        });
        sample.push(Sample {
            location_id: vec![id, 1],
            value: vec![10_000_000],
            label: vec![],
        });
    }
    Profile {
        sample_type: vec![ValueType { r#type: 1, unit: 2 }],
        sample,
        location,
        function,
        string_table: strings,
        ..Default::default()
    }
    .encode_to_vec()
}

/// The source view reads files only under `ui --source-path`: a profile that names
/// /etc/passwd, a path out of the directory or a link out of it gets no text of them; a file
/// under it is shown with its lines. Without the flag it reads the source files at the
/// paths the profile records (a link to one is one), never a file not named as source.
#[test]
fn ui_reads_sources_only_under_its_source_path() {
    let sb = Sandbox::new();
    sb.write(
        "src/app/ok.go",
        "package main\n\nfunc f0() {\n\tspin()\n}\n",
    );
    sb.write(
        "secret/key.go",
        "top secret line 1\nline 2\nline 3 secret\n",
    );
    std::os::unix::fs::symlink(sb.file("secret/key.go"), sb.file("src/app/link.go")).unwrap();
    let files = [
        sb.file("src/app/ok.go").display().to_string(),
        "/etc/passwd".to_string(),
        "app/../../secret/key.go".to_string(),
        sb.file("src/app/link.go").display().to_string(),
    ];
    let names: Vec<&str> = files.iter().map(String::as_str).collect();
    sb.write_bytes(
        "prof/svc/cpu-2026-12-01T10:00:00.000Z.pb.gz",
        &gz(&profile_with_files(&names)),
    );
    for (args, text_for_ok) in [
        (vec!["prof", "--source-path", "src"], true),
        (vec!["prof"], false),
    ] {
        let ui = Ui::start(&sb, &args);
        let doc = ui.json("/api/profiles");
        let id = doc["entries"][0]["id"].as_str().unwrap().to_string();
        let doc = ui.json(&format!(
            "/api/source?id={}&re={}",
            enc(&id),
            enc("^main\\.f")
        ));
        let routines = doc["report"]["routines"].as_array().unwrap();
        assert_eq!(routines.len(), 4, "{doc}");
        let text: String = routines
            .iter()
            .flat_map(|r| r["lines"].as_array().unwrap().iter())
            .filter_map(|l| l["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n");
        assert!(!text.contains("root:"), "{doc}");
        let ok = &routines[0];
        assert_eq!(ok["function"], "main.f0");
        assert!(ok["error"].is_null(), "{ok}");
        assert_eq!(ok["lines"][2]["text"], "func f0() {", "{ok}");
        assert!(
            routines[1]["error"]
                .as_str()
                .unwrap()
                .contains("etc/passwd"),
            "{}",
            routines[1]
        );
        if text_for_ok {
            assert!(!text.contains("secret"), "{doc}");
            assert!(ok["error"].is_null(), "{ok}");
            assert_eq!(ok["lines"][2]["text"], "func f0() {", "{ok}");
            assert_eq!(ok["lines"][2]["flat_fmt"], "10ms", "{ok}");
            for r in &routines[1..] {
                assert!(r["error"].is_string(), "{r}");
            }
        } else {
            assert_eq!(doc["sources"], "recorded");
            assert!(
                routines[1]["error"]
                    .as_str()
                    .unwrap()
                    .contains("not a source file"),
                "{}",
                routines[1]
            );
            assert!(routines[2]["error"].is_string(), "{}", routines[2]);
            assert_eq!(
                routines[3]["lines"][0]["text"], "top secret line 1",
                "a .go file"
            );
        }
        // A function that is not there, and an expression that is not one.
        let (status, _, body) = ui.get(&format!("/api/source?id={}&re=nope", enc(&id)));
        assert_eq!(status, 404, "{}", String::from_utf8_lossy(&body));
        let (status, _, body) = ui.get(&format!("/api/peek?id={}&re=%28", enc(&id)));
        assert_eq!(status, 400, "{}", String::from_utf8_lossy(&body));
        assert!(String::from_utf8_lossy(&body).contains("unclosed group"));
    }
    // --help says what the view reads without the flag (it once said "no text").
    let help = sb
        .run(&["ui", "--help"])
        .stdout
        .replace(char::is_whitespace, " ");
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        help.contains(
            "reads the source files (.go, .py, .rs and the like) at the paths the profile records"
        ),
        "{help}"
    );
}

/// Fifty large profiles (113,430 frames each) opened one after another, top and flamegraph
/// each, under `--memory-mb 96` (the default 1024 under `AGENTPROF_ACCEPTANCE=1`): the
/// budget is a ceiling on the process — its resident memory stays under the budget above
/// what it held at start (the reservations alone are estimates, and the allocator keeps
/// what is freed: 1,125 MiB resident for 50 large profiles under --memory-mb 1024).
#[test]
fn fifty_large_profiles_keep_the_process_under_its_budget() {
    let sb = Sandbox::new();
    services_of(&sb, 50, &gz(&crate::ui_range::large::large_profile()));
    let budget: u64 = if crate::support::acceptance() {
        1024
    } else {
        96
    };
    let ui = Ui::start(&sb, &["prof", "--memory-mb", &budget.to_string()]);
    let ids = ids_of(&ui);
    assert_eq!(ids.len(), 50);
    let baseline = crate::support::proc_status_kib(ui.pid(), "VmRSS:");
    let mut answered = 0;
    for id in &ids {
        let (code, _, _) = ui.get(&format!("/api/top?id={}", enc(id)));
        let (svg, _, _) = ui.get(&format!("/api/flamegraph.svg?id={}", enc(id)));
        if code == 200 && svg == 200 {
            answered += 1;
        }
    }
    let hwm = vm_hwm_kib(ui.pid());
    eprintln!(
        "measured: ui --memory-mb {budget}, 50 profiles of 113,430 frames, top and flamegraph each: \
         {answered}/50 answered, resident at start {} MiB, VmHWM {} MiB (ceiling {} MiB)",
        baseline / 1024,
        hwm / 1024,
        baseline / 1024 + budget
    );
    assert_eq!(answered, 50);
    assert!(
        hwm <= baseline + budget * 1024,
        "VmHWM {hwm} KiB, start {baseline} KiB"
    );
}
