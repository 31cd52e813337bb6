//! `agentprof start`: checks on their intervals, developer mode, forwarders, stopping.

use std::net::UdpSocket;
use std::time::{Duration, Instant};

use crate::support::Sandbox;

#[test]
fn the_agent_runs_every_check_logs_forwards_and_summarises() {
    let sb = Sandbox::new();
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    sb.write(
        "agentprof.yaml",
        &format!(
            "dogstatsd_url: udp://{}\nmetrics_file: metrics.jsonl\nlog_file: collector.log\nhostname: box\n",
            udp.local_addr().unwrap()
        ),
    );
    uptime_every_second(&sb);
    sb.plugin("fast.sh", "echo 'fast.value:1|g|#via:exec'\n");
    sb.write(
        "conf.d/fast.yaml",
        "instances:\n  - min_collection_interval: 1\n",
    );
    sb.plugin("hang.sh", "sleep 30\n");
    sb.write(
        "conf.d/hang.yaml",
        "instances:\n  - min_collection_interval: 1\n    run_timeout: 1\n",
    );
    sb.write("conf.d/disk.yaml", "instances:\n  - use_mount: [\n");
    let t = Instant::now();
    let r = sb.run(&["start", "--profile", "--duration", "3500ms", "--json"]);
    assert!(
        t.elapsed() < Duration::from_secs(8),
        "took {:?}",
        t.elapsed()
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    let check = |name: &str| {
        doc["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["check"] == name)
            .unwrap()
            .clone()
    };
    assert!(check("uptime")["runs"].as_u64().unwrap() >= 3, "{doc}");
    assert!(
        check("fast")["runs"].as_u64().unwrap() >= 3,
        "the hanging check did not stall the others"
    );
    let hang = check("hang");
    assert!(hang["errors"].as_u64().unwrap() >= 1);
    assert!(hang["last_error"].as_str().unwrap().contains("timed out"));
    assert!(
        doc["config_errors"]
            .to_string()
            .contains("conf.d/disk.yaml:3:1"),
        "{}",
        doc["config_errors"]
    );
    assert!(doc["loops"].as_u64().unwrap() >= 2);

    let log = std::fs::read_to_string(sb.file("collector.log")).unwrap();
    assert!(log.contains(" | INFO | checks(src/agent/mod.rs:"), "{log}");
    assert!(log.contains(" | uptime\nMemory Before (RSS): "), "{log}");
    assert!(log.contains(" | ERROR | checks(src/agent/mod.rs:"), "{log}");
    assert!(
        log.contains("hang instance 0 run 1 failed: timed out"),
        "{log}"
    );
    assert!(log.contains("Difference (VMS): "));
    assert!(
        log.contains("AGENT STATS:\n[ ( 'datadog.agent.collector."),
        "{log}"
    );

    let jsonl = std::fs::read_to_string(sb.file("metrics.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = jsonl
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        lines
            .iter()
            .any(|l| l["metric"]["metric"] == "system.uptime" && l["metric"]["host"] == "box")
    );
    assert!(lines.iter().any(|l| l["metric"]["metric"] == "fast.value"));

    let mut got = String::new();
    let mut buf = [0u8; 65536];
    while let Ok(n) = udp.recv(&mut buf) {
        got.push_str(std::str::from_utf8(&buf[..n]).unwrap());
        got.push('\n');
    }
    for name in [
        "system.uptime:",
        "fast.value:1|g|#via:exec,host:box",
        "datadog.agent.collector.memory_info.rss:",
        "datadog.agent.collector.memory_info.vms:",
        "datadog.agent.collector.io_counters.read_bytes:",
        "datadog.agent.collector.io_counters.write_bytes:",
        "datadog.agent.collector.io_counters.read_count:",
        "datadog.agent.collector.io_counters.write_count:",
        "datadog.agent.collector.num_threads:",
        "datadog.agent.collector.num_fds:",
        "datadog.agent.collector.connections:",
        "datadog.agent.collector.cpu.used:",
        "datadog.agent.collector.collection.time:",
        "datadog.agent.emitter.emit.time:",
        "datadog.agent.check_run_time:",
        "datadog.agent.check.memory_info.rss:",
        "_sc|datadog.agent.up|0",
        "_sc|datadog.agent.check_status|2|#check:hang",
    ] {
        assert!(got.contains(name), "{name} not received over UDP:\n{got}");
    }
}

#[test]
fn sigterm_stops_the_agent_within_five_seconds_with_a_summary() {
    let sb = Sandbox::new();
    uptime_every_second(&sb);
    sb.write("agentprof.yaml", "metrics_file: m.jsonl\n");
    let out = sigterm_after(&sb, &["start", "--json"], Duration::from_millis(1500));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(doc["checks"][0]["runs"].as_u64().unwrap() >= 1);
    let flushed = std::fs::read_to_string(sb.file("m.jsonl")).unwrap();
    assert!(
        flushed.contains("system.uptime"),
        "forwarders flushed at stop"
    );
}

#[test]
fn nothing_configured_runs_the_agents_default_checks() {
    // A fresh clone's conf.d holds only examples: the Agent's default checks run, and say so.
    let sb = Sandbox::new();
    sb.write("conf.d/disk.yaml.example", "instances: [{}]\n");
    let r = sb.run(&["start", "--duration", "1s", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("no check is configured") && r.stderr.contains("default checks"),
        "{}",
        r.stderr
    );
    let doc = r.json();
    let names: Vec<&str> = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["check"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["cpu", "disk", "io", "load", "memory", "network", "uptime"]
    );
    let r = Sandbox::new().run(&["start", "--duration", "soon"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("--duration"), "{}", r.stderr);
}

#[test]
fn collector_log_rotates_by_size() {
    let sb = Sandbox::new();
    uptime_every_second(&sb);
    sb.write(
        "agentprof.yaml",
        "log_file: collector.log\nlog_file_max_size: 1KB\nlog_file_max_rolls: 2\nmetrics_file: m.jsonl\n",
    );
    let r = sb.run(&["start", "--profile", "--duration", "2500ms", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(sb.file("collector.log.1").exists(), "rotated once at least");
    assert!(std::fs::metadata(sb.file("collector.log")).unwrap().len() <= 2048);
    sb.write("agentprof.yaml", "log_file_max_size: huge\n");
    let r = sb.run(&["start", "--duration", "1s"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("log_file_max_size: `huge` is not a size"),
        "{}",
        r.stderr
    );
}

#[test]
fn metrics_listen_serves_the_agents_own_figures() {
    let sb = Sandbox::new();
    uptime_every_second(&sb);
    sb.write("agentprof.yaml", "metrics_file: m.jsonl\n");
    // Port 0: agentprof picks a free port and says which, so no other test can race for it.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_agentprof"))
        .args([
            "start",
            "--profile",
            "--duration",
            "30s",
            "--json",
            "--metrics-listen",
            "127.0.0.1:0",
        ])
        .current_dir(sb.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let addr = {
        use std::io::BufRead;
        let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
        let line = lines
            .find_map(|l| l.ok().filter(|l| l.contains("serving http://")))
            .expect("the agent says where /metrics is served");
        std::thread::spawn(move || lines.for_each(drop));
        line.split("http://")
            .nth(1)
            .unwrap()
            .trim_end_matches("/metrics")
            .to_string()
    };
    // At least one collector loop (1 s) has run.
    std::thread::sleep(Duration::from_millis(1800));
    let get = |path: &str| {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(&addr).unwrap();
        // One request a connection (the server keeps HTTP/1.1 connections open otherwise).
        s.write_all(
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        text
    };
    let resp = get("/metrics");
    let vm_rss: f64 = std::fs::read_to_string(format!("/proc/{}/status", child.id()))
        .unwrap()
        .lines()
        .find_map(|l| {
            l.strip_prefix("VmRSS:")
                .map(|v| v.trim().trim_end_matches(" kB").parse::<f64>().unwrap() * 1024.0)
        })
        .unwrap();
    assert!(get("/nope").starts_with("HTTP/1.1 404"));
    // SAFETY: signals the child we started.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert!(
        resp.starts_with("HTTP/1.1 200 OK") && resp.contains("application/openmetrics-text"),
        "{resp}"
    );
    assert!(resp.trim_end().ends_with("# EOF"));
    let value = |name: &str| -> f64 {
        resp.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{name} missing:\n{resp}"))
    };
    let rss = value("datadog_agent_collector_memory_info_rss ");
    // Against /proc, read a moment later: the same process, about the same size.
    assert!(
        (rss - vm_rss).abs() / vm_rss < 0.25,
        "exported {rss}, /proc {vm_rss}"
    );
    assert!(value("datadog_agent_collector_num_threads ") >= 3.0);
    assert!(value("datadog_agent_check_run_time{check=\"uptime\"} ") > 0.0);
}

/// One request the intake saw: path, lower-cased headers, decompressed body.
type Request = (String, Vec<(String, String)>, String);

/// A loopback Datadog intake that answers 500 to the first request and 202 after.
fn intake() -> (
    String,
    std::sync::Arc<std::sync::Mutex<Vec<crate::support::Seen>>>,
) {
    let (addr, seen) = crate::support::serve(|_, n| {
        if n == 0 {
            crate::support::reply("500 Internal Server Error", "{}")
        } else {
            crate::support::reply("202 Accepted", "{}")
        }
    });
    (format!("http://{addr}"), seen)
}

/// A request with its body gunzipped when it says it is gzip.
fn decoded(s: &crate::support::Seen) -> Request {
    use std::io::Read;
    let (path, headers, body) = s;
    let gzipped = headers
        .iter()
        .any(|(k, v)| k == "content-encoding" && v == "gzip");
    let mut text = String::new();
    if gzipped {
        flate2::read::GzDecoder::new(&body[..])
            .read_to_string(&mut text)
            .unwrap();
    } else {
        text = String::from_utf8(body.clone()).unwrap();
    }
    (path.clone(), headers.clone(), text)
}

#[test]
fn series_reach_the_datadog_api_gzipped_with_retries_and_the_key_stays_secret() {
    let sb = Sandbox::new();
    let (url, seen) = intake();
    uptime_every_second(&sb);
    sb.plugin(
        "deploys",
        "echo '_e{6,10}:deploy|v2 is live|t:success|#team:web'\n",
    );
    sb.write(
        "conf.d/deploys.yaml",
        "instances:\n  - min_collection_interval: 1\n",
    );
    sb.write(
        "agentprof.yaml",
        &format!("api_key: s3cr3t-key-0123\ndd_url: {url}\nhostname: box\n"),
    );
    let r = sb.run(&["start", "--profile", "--duration", "2500ms", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        !r.stdout.contains("s3cr3t") && !r.stderr.contains("s3cr3t"),
        "the key leaked"
    );
    let seen: Vec<Request> = seen.lock().unwrap().iter().map(decoded).collect();
    assert!(seen.len() >= 3, "{} requests", seen.len());
    let series: Vec<&Request> = seen
        .iter()
        .filter(|(p, _, _)| p == "/api/v2/series")
        .collect();
    assert!(series.len() >= 2, "the 500 was retried");
    for (_, headers, _) in &series {
        let h = |k: &str| {
            headers
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(h("dd-api-key"), Some("s3cr3t-key-0123"));
        assert_eq!(h("content-encoding"), Some("gzip"));
        assert_eq!(h("content-type"), Some("application/json"));
    }
    let all: Vec<serde_json::Value> = series
        .iter()
        .map(|(_, _, b)| serde_json::from_str(b).unwrap())
        .collect();
    let uptime = all
        .iter()
        .flat_map(|d| d["series"].as_array().unwrap().clone())
        .find(|s| s["metric"] == "system.uptime")
        .expect("system.uptime sent");
    assert_eq!(uptime["type"], 3);
    assert!(uptime["points"][0]["value"].as_f64().unwrap() > 0.0);
    assert!(uptime["points"][0]["timestamp"].as_i64().unwrap() > 1_600_000_000);
    assert_eq!(
        uptime["resources"][0],
        serde_json::json!({"name": "box", "type": "host"})
    );
    assert!(
        seen.iter()
            .any(|(p, _, b)| p == "/api/v1/check_run" && b.contains("datadog.agent.up"))
    );
    let (_, headers, body) = seen
        .iter()
        .find(|(p, _, _)| p == "/api/v1/events")
        .expect("the plugin's event was sent");
    assert!(!headers.iter().any(|(k, _)| k == "content-encoding"));
    let ev: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(ev["title"], "deploy");
    assert_eq!(ev["text"], "v2 is live");
    assert_eq!(ev["alert_type"], "success");
    assert_eq!(ev["host"], "box");
    assert!(ev["tags"].as_array().unwrap().contains(&"team:web".into()));
    assert!(ev["date_happened"].as_i64().unwrap() > 1_600_000_000);
    // What the forwarder delivered is in --json: the 500 shows as a retry.
    let doc = r.json();
    let api = doc["delivery"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["unit"] == "payloads")
        .expect("api delivery");
    assert!(!api["forwarder"].as_str().unwrap().contains("s3cr3t"));
    assert_eq!(api["retried"], 1, "{api}");
    assert_eq!(api["failed"], 0, "{api}");
    assert_eq!(
        api["sent"].as_u64().unwrap(),
        seen.len() as u64 - 1,
        "{api}"
    );
}

#[test]
fn developer_mode_logs_python_checks_top_calls_every_n_loops() {
    let _cpu = crate::support::cpu_exclusive();
    let sb = Sandbox::new();
    sb.write(
        "checks/pyc.py",
        "import time\nfrom checks import AgentCheck\n\n\
         def spin():\n    end = time.perf_counter() + 0.2\n    while time.perf_counter() < end:\n        pass\n    return 1\n\n\
         class P(AgentCheck):\n    def check(self, instance):\n        self.gauge('pyc.value', spin())\n",
    );
    sb.write(
        "conf.d/pyc.yaml",
        "instances:\n  - min_collection_interval: 1\n",
    );
    sb.write(
        "agentprof.yaml",
        "log_file: collector.log\ncollector_profile_interval: 1\nmetrics_file: m.jsonl\n",
    );
    let r = sb.run(&["start", "--profile", "--duration", "2500ms", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let log = std::fs::read_to_string(sb.file("collector.log")).unwrap();
    assert!(log.contains(" | DEBUG | collector(profile.rs:"), "{log}");
    // Sampled: its stacks' wall and CPU time, the check's own function by name and line.
    assert!(log.contains("pyc: top calls: "), "{log}");
    assert!(log.contains("cum wall  cum wall%"), "{log}");
    assert!(log.contains("spin (") && log.contains("pyc.py:4)"), "{log}");
    // And a pprof file of it at the end.
    let doc = r.json();
    let files = doc["profile_files"].as_array().unwrap();
    assert!(
        files
            .iter()
            .any(|f| f.as_str().unwrap().contains("python-pyc-")),
        "{files:?}"
    );
    // A Python check's own process figures in developer mode.
    let m = std::fs::read_to_string(sb.file("m.jsonl")).unwrap();
    assert!(m.contains("datadog.agent.check.memory_info.rss") && m.contains("check:pyc"));
}

#[test]
fn developer_mode_profiles_the_whole_agent() {
    // What the agent's profile shows depends on what else runs: not beside the CPU burners.
    let _cpu = crate::support::cpu_exclusive();
    let sb = Sandbox::new();
    let busy = "  - name: all\n    search_string: [All]\n    exact_match: false\n    min_collection_interval: 1\n";
    sb.write(
        "conf.d/process.yaml",
        &format!("instances:\n{busy}{busy}{busy}"),
    );
    sb.write(
        "agentprof.yaml",
        "log_file: collector.log\ncollector_profile_interval: 2\nmetrics_file: m.jsonl\nprofile_dir: prof\n",
    );
    let r = sb.run(&["start", "--profile", "--duration", "3500ms", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    let files: Vec<String> = doc["profile_files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_string())
        .collect();
    assert_eq!(files.len(), 2, "{doc}");
    let pb = files.iter().find(|f| f.ends_with(".pb.gz")).unwrap();
    // Named with an RFC 3339 time, as pull names its files: agent-2026-12-01T09:38:00Z.pb.gz.
    let stamp = std::path::Path::new(pb)
        .file_name()
        .unwrap()
        .to_str()
        .unwrap();
    let t = stamp
        .strip_prefix("agent-")
        .and_then(|s| s.strip_suffix(".pb.gz"))
        .unwrap();
    assert!(
        t.len() == 20 && t.as_bytes()[10] == b'T' && t.ends_with('Z'),
        "{stamp}"
    );
    let svg = files.iter().find(|f| f.ends_with(".svg")).unwrap();
    assert!(
        std::fs::read_to_string(sb.path().join(svg))
            .unwrap()
            .contains("<svg")
    );
    let log = std::fs::read_to_string(sb.file("collector.log")).unwrap();
    assert!(
        log.contains("agent: ") && log.contains("samples at 99 Hz"),
        "{log}"
    );
    // The checks' work shows in the agent's profile: the whole run's file, read back (the
    // periodic top 20 of a loaded machine may be crowded out by the runtime's own frames).
    let top = sb.run(&[
        "top",
        "--cum",
        "-n",
        "1000",
        sb.path().join(pb).to_str().unwrap(),
    ]);
    assert!(
        top.stdout.contains("ProcessCheck") || log.contains("ProcessCheck"),
        "the checks' work shows in the agent's profile:\n{}",
        top.stdout
    );
    if crate::support::require_go() {
        let raw = std::process::Command::new("go")
            .args(["tool", "pprof", "-raw"])
            .arg(sb.path().join(pb))
            .output()
            .unwrap();
        assert!(
            raw.status.success(),
            "{}",
            String::from_utf8_lossy(&raw.stderr)
        );
        assert!(String::from_utf8_lossy(&raw.stdout).contains("samples/count cpu/nanoseconds"));
    }
}

#[test]
fn log_level_filters_collector_log() {
    let sb = Sandbox::new();
    uptime_every_second(&sb);
    sb.write(
        "agentprof.yaml",
        "log_file: c.log\nlog_level: error\nmetrics_file: m.jsonl\n",
    );
    let r = sb.run(&["start", "--profile", "--duration", "1500ms", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let log = std::fs::read_to_string(sb.file("c.log")).unwrap_or_default();
    assert!(
        !log.contains("Memory Before") && !log.contains("AGENT STATS"),
        "{log}"
    );
    sb.write("agentprof.yaml", "log_level: chatty\n");
    let r = sb.run(&["start", "--duration", "1s"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .contains("log_level: `chatty` is not debug, info, warning or error"),
        "{}",
        r.stderr
    );
}

/// Developer mode with no log configured writes collector.log in the current directory and
/// says so; metrics go to stdout only with `metrics_file: -`.
#[test]
fn developer_mode_without_a_log_file_logs_to_collector_log_and_stdout_stays_quiet() {
    let sb = Sandbox::new();
    uptime_every_second(&sb);
    let r = sb.run(&["start", "--profile", "--duration", "1500ms"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("developer mode logs to") && r.stderr.contains("collector.log"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("metrics are not forwarded"),
        "{}",
        r.stderr
    );
    let log = std::fs::read_to_string(sb.file("collector.log")).unwrap();
    assert!(log.contains("Memory Before (RSS):"), "{log}");
    assert!(log.contains("AGENT STATS:"), "{log}");
    // No JSON metric lines on stdout, only the summary.
    assert!(!r.stdout.contains("\"metric\":"), "{}", r.stdout);
    sb.write("agentprof.yaml", "metrics_file: \"-\"\n");
    let r = sb.run(&["start", "--duration", "1500ms"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("\"metric\":"), "{}", r.stdout);
}

/// A password in dd_url never reaches the summary, --json or stderr; a dd_url that is not an
/// http(s) URL is a configuration error at start.
#[test]
fn dd_url_credentials_stay_secret_and_a_bad_dd_url_is_refused() {
    let sb = Sandbox::new();
    uptime_every_second(&sb);
    sb.write(
        "agentprof.yaml",
        "api_key: k\ndd_url: http://user:PASSWORD123@127.0.0.1:1\n",
    );
    for json in [false, true] {
        let mut args = vec!["start", "--duration", "1500ms"];
        if json {
            args.push("--json");
        }
        let r = sb.run(&args);
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(r.stdout.contains("127.0.0.1:1"), "{}", r.stdout);
        for out in [&r.stdout, &r.stderr] {
            assert!(
                !out.contains("PASSWORD123") && !out.contains("user:"),
                "{out}"
            );
        }
    }
    for bad in ["ftp://intake.example", "not a url PASSWORD123", "http://"] {
        sb.write(
            "agentprof.yaml",
            &format!("api_key: k\ndd_url: \"{bad}\"\n"),
        );
        let r = sb.run(&["start", "--duration", "1s"]);
        assert_eq!(r.code, 2, "{bad}: {}", r.stderr);
        assert!(r.stderr.contains("dd_url"), "{bad}: {}", r.stderr);
        assert!(!r.stderr.contains("PASSWORD123"), "{}", r.stderr);
    }
}

/// A Datadog intake that accepts connections and never answers cannot hold the agent: SIGTERM
/// and --duration both stop it within 5 seconds, with the summary, and what was not
/// delivered is counted as dropped.
#[test]
fn a_hanging_intake_cannot_hold_the_stop() {
    let addr = crate::support::hung_server();
    let sb = Sandbox::new();
    uptime_every_second(&sb);
    sb.write(
        "agentprof.yaml",
        &format!("api_key: k\ndd_url: http://{addr}\n"),
    );
    // --duration
    let t = Instant::now();
    let r = sb.run(&["start", "--duration", "2s", "--json"]);
    assert!(
        t.elapsed() < Duration::from_secs(2 + 5),
        "stopped after {:?}",
        t.elapsed()
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    let delivery = &doc["delivery"][0];
    assert!(delivery["dropped"].as_u64().unwrap() >= 1, "{doc}");
    // SIGTERM
    let out = sigterm_after(&sb, &["start"], Duration::from_millis(2500));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("uptime"), "no summary: {stdout}");
}

/// The uptime check, every second: the smallest agent that runs.
fn uptime_every_second(sb: &Sandbox) {
    sb.write(
        "conf.d/uptime.yaml",
        "instances:\n  - min_collection_interval: 1\n",
    );
}

/// Runs agentprof with `args`, sends SIGTERM after `delay`, and checks it stopped within 5 s.
fn sigterm_after(sb: &Sandbox, args: &[&str], delay: Duration) -> std::process::Output {
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_agentprof"))
        .args(args)
        .current_dir(sb.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(delay);
    let t = Instant::now();
    // SAFETY: signals the child we started.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "stopped after {:?}",
        t.elapsed()
    );
    out
}

/// A run of 60,000 series goes to the series intake as payloads each within its documented
/// limits (512,000 bytes compressed, 5,242,880 decompressed), every series once; a 429 with
/// `Retry-After: 2` is waited out before the next attempt, not retried within a second.
#[test]
fn big_runs_are_split_under_the_intakes_limits_and_retry_after_is_honoured() {
    let sb = Sandbox::new();
    let times = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let t = std::sync::Arc::clone(&times);
    let (addr, seen) = crate::support::serve(move |path, n| {
        if path == "/api/v2/series" {
            t.lock().unwrap().push(Instant::now());
        }
        if n == 0 {
            let mut r = crate::support::reply("429 Too Many Requests", "{}");
            r.headers.push(("Retry-After".into(), "2".into()));
            r
        } else {
            crate::support::reply("202 Accepted", "{}")
        }
    });
    sb.plugin(
        "many",
        "i=0\nwhile [ $i -lt 60000 ]; do echo \"many.series.with.a.long.name:1|g|#shard:$i,team:observability,env:production\"; i=$((i+1)); done\n",
    );
    sb.write(
        "conf.d/many.yaml",
        "instances:\n  - min_collection_interval: 30\n",
    );
    sb.write(
        "agentprof.yaml",
        &format!("api_key: k\ndd_url: http://{addr}\nhostname: box\n"),
    );
    let r = sb.run(&["start", "--duration", "8s"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let seen = seen.lock().unwrap().clone();
    let series: Vec<(usize, Request)> = seen
        .iter()
        .filter(|(p, _, _)| p == "/api/v2/series")
        .map(|s| (s.2.len(), decoded(s)))
        .collect();
    assert!(
        series.len() >= 3,
        "{} series payloads of {} requests",
        series.len(),
        seen.len()
    );
    let mut shards = std::collections::BTreeSet::new();
    for (compressed, (_, _, text)) in &series {
        assert!(*compressed <= 512_000, "{compressed} bytes compressed");
        assert!(text.len() <= 5_242_880, "{} bytes decompressed", text.len());
        let doc: serde_json::Value = serde_json::from_str(text).unwrap();
        for s in doc["series"].as_array().unwrap() {
            if s["metric"] == "many.series.with.a.long.name" {
                let shard = s["tags"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find_map(|t| t.as_str()?.strip_prefix("shard:").map(String::from))
                    .unwrap();
                shards.insert(shard);
            }
        }
    }
    assert_eq!(shards.len(), 60_000, "every series arrived");
    let times = times.lock().unwrap().clone();
    let gap = times[1].duration_since(times[0]);
    assert!(
        gap >= Duration::from_millis(1900),
        "retried {gap:?} after a Retry-After of 2 s"
    );
}

/// Developer mode logs the agent's top calls every `collector_profile_interval` loops. Naming
/// the sampled functions through the debug information parsed all of it at every log (0.14 s
/// of CPU and 30 MiB of heap, kept, on the release binary; more on this debug build); the
/// periodic logs now name them from the symbol table, so logging at every loop costs little
/// CPU and memory, and the names are still the functions' own.
#[test]
fn developer_modes_periodic_top_calls_are_cheap() {
    let _cpu = crate::support::cpu_exclusive();
    let sb = Sandbox::new();
    for c in ["uptime", "load", "memory"] {
        sb.write(
            &format!("conf.d/{c}.yaml"),
            "instances:\n  - min_collection_interval: 1\n",
        );
    }
    sb.write(
        "agentprof.yaml",
        "log_file: collector.log\ncollector_profile_interval: 1\nprofile_dir: prof\n",
    );
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_agentprof"))
        .args(["start", "--profile", "--duration", "7s"])
        .current_dir(sb.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let figures = || {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let after_name = stat.rsplit_once(')')?.1;
        let f: Vec<&str> = after_name.split_whitespace().collect();
        let ticks: u64 = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        let hwm_kib: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))?
            .trim()
            .trim_end_matches(" kB")
            .parse()
            .ok()?;
        Some((ticks, hwm_kib))
    };
    std::thread::sleep(Duration::from_millis(1500));
    let (ticks_start, _) = figures().expect("agentprof runs");
    std::thread::sleep(Duration::from_secs(4));
    let (ticks_end, hwm_kib) = figures().expect("agentprof runs");
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let log = std::fs::read_to_string(sb.file("collector.log")).unwrap();
    let logs = log.matches("samples at 99 Hz").count();
    let cpu_ms = (ticks_end - ticks_start) * 10;
    eprintln!(
        "measured: developer mode, top calls logged every loop: {cpu_ms} ms of CPU in 4 s ({logs} logs in all), peak RSS {hwm_kib} KiB"
    );
    assert!(logs >= 4, "{log}");
    assert!(log.contains("agentprof::"), "functions are named: {log}");
    assert!(cpu_ms <= 400, "{cpu_ms} ms of CPU in 4 s");
    // This debug binary alone maps about 34 MiB; naming through DWARF at every log took 80.
    assert!(hwm_kib < 56 * 1024, "peak RSS {hwm_kib} KiB");
}
