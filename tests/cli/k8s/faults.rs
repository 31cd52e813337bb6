//! `agentprof k8s` against a control plane that misbehaves as real ones do: an API server
//! that throttles with Retry-After, restarts (503), accepts requests and never answers, is
//! gone and comes back, refuses the credentials, ends watches at once; a holder cut off from
//! it while a standby waits; a Lease at the largest transition count; rotated credentials;
//! an upload intake that never answers; a disk that is full; many targets under a small
//! concurrency limit; pod lists that are not lists (a proxy's page, a cut body); a serving
//! certificate rotated within its CA and one from an unknown CA; a flood of watch events.
//! Each case prints what it measured (`measured: …`).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::apiserver::{ApiServer, Fault};
use super::collect::{NODE, PodProcess, Running, cluster, metric, pod_process, profile_yaml};
use super::kubelet::Kubelet;
use crate::support::Sandbox;

/// A node with `n` Running pods of app=web (real Go services on 127.0.1.`base`+i, port
/// `port`), the loopback API server and kubelet reporting them.
struct Node {
    sb: Sandbox,
    api: ApiServer,
    kc: PathBuf,
    kubelet: Kubelet,
    _pods: Vec<PodProcess>,
}

fn node(n: usize, base: u8, port: u16) -> Option<Node> {
    let sb = Sandbox::new();
    let (api, kc) = cluster(&sb)?;
    sb.write("kt", "kt\n");
    let kubelet = Kubelet::start(sb.path(), "kt", NODE)?;
    let mut pods = Vec::new();
    for i in 0..n {
        let ip = format!("127.0.1.{}", base as usize + i);
        let p = pod_process(&format!("{ip}:{port}"))?;
        let uid = format!("u{base}-{i}");
        kubelet.add("shop", &format!("web-{i}"), &uid, "app", p.pid);
        api.put_pod(web(&format!("web-{i}"), &uid, &ip, port));
        pods.push(p);
    }
    Some(Node {
        sb,
        api,
        kc,
        kubelet,
        _pods: pods,
    })
}

fn web(name: &str, uid: &str, ip: &str, port: u16) -> Value {
    super::apiserver::pod(
        "shop",
        name,
        uid,
        NODE,
        ip,
        json!({"app": "web"}),
        &[("app", &[("pprof", port)])],
    )
}

impl Node {
    /// `agentprof k8s` on this node with `args` and a /metrics listener: the run, and the
    /// listener's address once it listens.
    fn start(&self, args: &[&str]) -> (Running, String) {
        let mut all = vec!["--metrics-listen", "127.0.0.1:0"];
        all.extend_from_slice(args);
        let mut run = Running::start(&self.sb, &self.kc, &all);
        let listening = run.wait("listening", |v| v["event"] == "listening");
        let metrics = listening["metrics"].as_str().unwrap().to_string();
        (run, metrics)
    }

    /// profile.yaml: the kubelet's settings plus `init`, and one rule for app=web with
    /// `rule` lines (each `    key: value\n`).
    fn rules(&self, init: &str, rule: &str) {
        profile_yaml(
            &self.sb,
            &format!("{}\n{init}", self.kubelet.settings(&self.sb.file("kt"))),
            &format!("  - selector: app=web\n    port: pprof\n{rule}"),
        );
    }
}

/// `http://ADDR/PATH`: status and body.
fn get(addr: &str, path: &str) -> (u16, String) {
    match reqwest::blocking::Client::new()
        .get(format!("http://{addr}{path}"))
        .timeout(Duration::from_secs(5))
        .send()
    {
        Ok(r) => (r.status().as_u16(), r.text().unwrap_or_default()),
        Err(e) => (0, e.to_string()),
    }
}

/// An event's time stamp.
fn at(v: &Value) -> jiff::Timestamp {
    v["time"].as_str().unwrap().parse().unwrap()
}

/// Waits until `cond` holds (at most `secs`), looking every 100 ms; the seconds it took.
fn until(what: &str, secs: u64, mut cond: impl FnMut() -> bool) -> f64 {
    let t0 = Instant::now();
    while !cond() {
        assert!(
            t0.elapsed() < Duration::from_secs(secs),
            "{what}: not within {secs} s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    t0.elapsed().as_secs_f64()
}

const WATCHED: &str = "    interval: 10s\n    scheduled_types: [goroutine]\n    \
                       monitor_interval: 1s\n    mem_usage_bytes: 100Gi\n";

/// Throttled with `Retry-After: 3600`, restarting (503) or accepting requests and never
/// answering: the collector goes on (kubelet rounds every second, /metrics answers) and
/// SIGTERM ends it within 2 s, the lease given back within its deadline.
#[test]
fn an_api_server_that_throttles_restarts_or_hangs_never_freezes_the_collector() {
    let cases = [
        (
            "429 Retry-After: 3600",
            Fault::Status(429, Some(3600)),
            10u8,
        ),
        ("503 (restarting)", Fault::Status(503, None), 20),
        ("no answer", Fault::Hang, 30),
    ];
    let runs: Vec<_> = cases
        .into_iter()
        .map(|(name, fault, base)| std::thread::spawn(move || one_fault(name, fault, base)))
        .collect();
    for r in runs {
        r.join().unwrap();
    }
}

fn one_fault(name: &str, fault: Fault, base: u8) {
    let Some(n) = node(1, base, 16200) else {
        return;
    };
    n.rules("", WATCHED);
    let (mut run, metrics) = n.start(&[]);
    run.wait("leader", |v| v["event"] == "leader");
    run.wait("synced", |v| v["event"] == "synced");
    run.wait("a capture", |v| v["event"] == "capture_done");
    n.api.set_fault(None, Some(fault.clone()));
    let rounds = n.kubelet.requests();
    std::thread::sleep(Duration::from_secs(4));
    let after = n.kubelet.requests();
    assert!(
        after >= rounds + 3,
        "{name}: kubelet rounds went on: {rounds} → {after}"
    );
    let (code, text) = get(&metrics, "/metrics");
    assert_eq!(code, 200, "{name}: {text}");
    if fault == Fault::Status(429, Some(3600)) {
        until("a Retry-After counted", 10, || {
            metric(
                &get(&metrics, "/metrics").1,
                "agentprof_k8s_api_retry_after_total",
            ) >= 1.0
        });
        let (_, text) = get(&metrics, "/metrics");
        assert!(
            text.contains("code=\"429\""),
            "{name}: the 429s are counted by outcome: {text}"
        );
    }
    let exit = run.sigterm_timed();
    eprintln!(
        "measured: k8s with the API server answering {name}: exit {exit:.2} s after SIGTERM, kubelet rounds {rounds} → {after} in 4 s"
    );
    assert!(exit <= 2.0, "{name}: {exit:.2} s from SIGTERM to exit");
}

/// A leader cut off from the API server (its requests hang) stops collecting before its
/// lease could have expired; the standby takes over only after that, so no target is
/// collected by both; the old leader stands by when the API server answers it again.
#[test]
fn a_holder_cut_off_stops_collecting_before_the_standby_takes_over() {
    let Some(n) = node(3, 40, 16201) else {
        return;
    };
    n.rules("", "    interval: 10s\n    scheduled_types: [goroutine]\n");
    n.api.add_token("ta");
    n.api.add_token("tb");
    let (kc_a, kc_b) = (n.sb.file("kc-a"), n.sb.file("kc-b"));
    n.api.kubeconfig_with(&kc_a, "ta");
    n.api.kubeconfig_with(&kc_b, "tb");
    let mut a = Running::start(&n.sb, &kc_a, &[]);
    a.wait("a leads", |v| v["event"] == "leader");
    a.wait("a captures", |v| v["event"] == "capture_done");
    let mut b = Running::start(&n.sb, &kc_b, &[]);
    b.wait("b stands by", |v| v["event"] == "standby");
    let cut = Instant::now();
    n.api.set_fault(Some("ta"), Some(Fault::Hang));
    let lost = a.wait_for("a loses the lease", 30, |v| v["event"] == "lease_lost");
    let lost_after = cut.elapsed().as_secs_f64();
    let took = b.wait_for("b takes over", 40, |v| v["event"] == "leader");
    let took_after = cut.elapsed().as_secs_f64();
    assert!(at(&lost) < at(&took), "a stopped first: {lost} {took}");
    b.wait_for("b captures", 20, |v| v["event"] == "capture_done");
    std::thread::sleep(Duration::from_secs(2));
    let late: Vec<Value> = a
        .drain()
        .iter()
        .filter(|v| v["event"] == "capture_started" && at(v) > at(&lost))
        .cloned()
        .collect();
    assert!(
        late.is_empty(),
        "a collected after losing the lease: {late:?}"
    );
    n.api.set_fault(None, None);
    a.wait_for("a stands by again", 20, |v| v["event"] == "standby");
    eprintln!(
        "measured: leader cut off from the API server: stopped collecting {lost_after:.1} s after the cut, the standby took over {took_after:.1} s after it"
    );
    let _ = b.stop();
    let _ = a.stop();
}

/// A Lease left at `leaseTransitions: 2147483647` (which the API server validates ≥ 0) is
/// taken over without wrapping; while the API server refuses the Lease (403), the error
/// names the verb and resource refused.
#[test]
fn a_lease_at_the_largest_transition_count_is_taken_over_and_a_403_says_what_was_refused() {
    let Some(n) = node(1, 50, 16202) else {
        return;
    };
    n.rules("", "    interval: 10s\n    scheduled_types: [goroutine]\n");
    n.api.put_lease(
        "agentprof",
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": format!("agentprof-{NODE}")},
            "spec": {"holderIdentity": "", "leaseDurationSeconds": 15,
                "leaseTransitions": i32::MAX}}),
    );
    n.api.set_fault(None, Some(Fault::Leases(403)));
    let mut run = Running::start(&n.sb, &n.kc, &[]);
    let err = run.wait("a lease error", |v| v["event"] == "lease_error");
    let text = err["error"].as_str().unwrap();
    assert!(
        text.contains("get leases") && text.contains("`get` on `leases`"),
        "{text}"
    );
    assert!(!text.contains("pods"), "not the pods' RBAC: {text}");
    n.api.set_fault(None, None);
    run.wait("leader", |v| v["event"] == "leader");
    let lease = n
        .api
        .lease("agentprof", &format!("agentprof-{NODE}"))
        .unwrap();
    assert_eq!(lease["spec"]["leaseTransitions"], i32::MAX, "{lease}");
    let _ = run.stop();
}

/// The API server gone (connections refused) for a while and back on the same address:
/// /readyz says not ready while it is gone, the lease is taken again, discovery resumes (a
/// pod created after the return is captured within 40 s), /readyz ready again.
#[test]
fn the_api_server_gone_and_back_resumes_discovery_the_lease_and_readiness() {
    let outage: u64 = std::env::var("AGENTPROF_OUTAGE_S")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let Some(n) = node(1, 60, 16203) else {
        return;
    };
    let late = pod_process("127.0.1.69:16203");
    let Some(late) = late else { return };
    n.kubelet.add("shop", "web-late", "u-late", "app", late.pid);
    n.rules("", WATCHED);
    let (mut run, metrics) = n.start(&[]);
    run.wait("synced", |v| v["event"] == "synced");
    until("ready", 10, || get(&metrics, "/readyz").0 == 200);
    let gone = Instant::now();
    n.api.set_down(true);
    let unready = until("not ready while gone", 30, || {
        get(&metrics, "/readyz").0 == 503
    });
    let (_, why) = get(&metrics, "/readyz");
    assert!(why.contains("the API server is unreachable since"), "{why}");
    std::thread::sleep(Duration::from_secs(outage).saturating_sub(gone.elapsed()));
    n.api.set_down(false);
    let back = Instant::now();
    n.api
        .put_pod(web("web-late", "u-late", "127.0.1.69", 16203));
    let leads = |v: &Value| v["event"] == "leader";
    let leaders = run.drain().iter().filter(|v| leads(v)).count();
    let captured = run.wait_for("the new pod captured", 40, |v| {
        v["event"] == "capture" && v["capture"]["pod"] == "web-late"
    });
    let captured_after = back.elapsed().as_secs_f64();
    let ready = until("ready again", 30, || get(&metrics, "/readyz").0 == 200);
    let ready_after = back.elapsed().as_secs_f64().max(ready);
    let now_leaders = run.drain().iter().filter(|v| leads(v)).count();
    let renewed = run
        .seen
        .iter()
        .any(|v| v["event"] == "lease_ok" || v["event"] == "leader");
    assert!(renewed && now_leaders >= leaders, "{:#?}", run.seen);
    eprintln!(
        "measured: API server gone {outage} s: /readyz 503 after {unready:.1} s ({}), a pod created after the return captured {captured_after:.1} s after it, ready {ready_after:.1} s after it",
        why.trim()
    );
    assert_eq!(captured["capture"]["profiles"][0]["ok"], true, "{captured}");
    // The watch's errors keep their cause (the connection refused or cut), not only kube's
    // "failed to start watching object".
    let watch_errors: Vec<&Value> = run
        .seen
        .iter()
        .filter(|v| v["event"] == "watch_error")
        .collect();
    assert!(
        watch_errors.iter().any(|v| {
            let e = v["error"].as_str().unwrap().to_lowercase();
            e.contains("connect")
                || e.contains("closed")
                || e.contains("reset")
                || e.contains("eof")
        }),
        "{watch_errors:#?}"
    );
    let _ = run.stop();
}

/// Watches the API server ends at once with no event are errors that back off (at most
/// about one a second, counted); 401 on every request makes /readyz say not ready and is
/// counted by outcome; both recover when the server does.
#[test]
fn short_watches_back_off_and_refused_credentials_make_it_unready() {
    let Some(n) = node(1, 70, 16204) else {
        return;
    };
    n.rules("", WATCHED);
    let (mut run, metrics) = n.start(&[]);
    run.wait("synced", |v| v["event"] == "synced");
    n.api.wait_for_watches(1);
    n.api.set_fault(None, Some(Fault::WatchEndsAtOnce));
    n.api.cut_watches();
    let w0 = n.api.count("watch");
    std::thread::sleep(Duration::from_secs(10));
    let watches = n.api.count("watch") - w0;
    assert!(watches <= 12, "{watches} watches in 10 s");
    let (_, text) = get(&metrics, "/metrics");
    assert!(
        metric(&text, "agentprof_k8s_api_short_watches_total") >= 1.0,
        "{text}"
    );
    n.api.set_fault(None, Some(Fault::Status(401, None)));
    let unready = until("not ready on 401", 20, || get(&metrics, "/readyz").0 == 503);
    let (_, why) = get(&metrics, "/readyz");
    assert!(
        why.starts_with("not ready: unauthorized: the API server answered 401 to"),
        "{why}"
    );
    let (_, text) = get(&metrics, "/metrics");
    assert!(text.contains("code=\"401\""), "{text}");
    n.api.set_fault(None, None);
    let ready = until("ready again", 20, || get(&metrics, "/readyz").0 == 200);
    eprintln!(
        "measured: a watch ended at once: {watches} watches in 10 s; 401 on every request: /readyz 503 after {unready:.1} s, ready {ready:.1} s after it stopped"
    );
    let _ = run.stop();
}

/// The kubelet is sent the credentials the API server is sent (here a kubeconfig user's
/// `tokenFile`, which agentprof never saw as a token), read again at once when the kubelet
/// refuses a rotated one; one kubelet read serves every target due in a round.
#[test]
fn the_kubelet_gets_the_clusters_rotated_credentials_and_one_read_per_round() {
    let Some(n) = node(4, 80, 16205) else {
        return;
    };
    let token_file = n.sb.write("sa-token", "kt");
    n.api.add_token("kt");
    let kc = n.sb.file("kc-file");
    n.api.kubeconfig(&kc);
    let text = std::fs::read_to_string(&kc).unwrap().replace(
        &format!("token: {}", n.api.token),
        &format!("tokenFile: {}", token_file.display()),
    );
    std::fs::write(&kc, text).unwrap();
    // The kubelet's address and CA, but no kubelet_token_file: the cluster's credentials.
    profile_yaml(
        &n.sb,
        &format!(
            "  kubelet_url: {}\n  kubelet_client_ca: {}\n",
            n.kubelet.url(),
            n.kubelet.ca.display()
        ),
        &format!("  - selector: app=web\n    port: pprof\n{WATCHED}"),
    );
    let mut run = Running::start(&n.sb, &kc, &[]);
    let started = run.wait("started", |v| v["event"] == "started");
    assert!(
        started["kubelet_credentials"]
            .as_str()
            .unwrap()
            .contains("sa-token"),
        "{started}"
    );
    run.wait("synced", |v| v["event"] == "synced");
    std::thread::sleep(Duration::from_secs(2));
    let r0 = n.kubelet.requests();
    std::thread::sleep(Duration::from_secs(6));
    let reads = n.kubelet.requests() - r0;
    assert!(
        (5..=8).contains(&reads),
        "{reads} kubelet reads in 6 s for 4 targets at monitor_interval 1s"
    );
    assert!(
        n.kubelet.sent("kt") > 0,
        "the kubelet got the cluster's token"
    );
    // The token is rotated: the file gets the new one, the kubelet takes only the new one.
    n.api.add_token("kt2");
    std::fs::write(&token_file, "kt2").unwrap();
    n.kubelet.set_token("kt2");
    let refused = n.kubelet.refused();
    let rotated = until("the rotated token reaches the kubelet", 10, || {
        n.kubelet.sent("kt2") > 0
    });
    std::thread::sleep(Duration::from_secs(3));
    let errors = run
        .drain()
        .iter()
        .filter(|v| v["event"] == "stats_error")
        .count();
    assert!(errors <= 1, "{:#?}", run.seen);
    eprintln!(
        "measured: kubelet reads: {reads} in 6 s (4 targets, 1 s rounds); a rotated token reached the kubelet {rotated:.1} s after the rotation ({} refused, {errors} round(s) lost)",
        n.kubelet.refused() - refused
    );
    let _ = run.stop();
}

/// Eight targets whose 1 s CPU captures all fall due in the first second of a 10 s interval,
/// under `kubernetes_max_concurrency: 1`: each gets its scheduled captures (none skipped,
/// none missed), and an upload intake and an OTLP collector that accept and never answer
/// hold none of them; SIGTERM exits at once with the uploads left in their spools.
#[test]
fn scheduled_captures_all_run_under_a_small_limit_whatever_the_intake_does() {
    let Some(n) = node(8, 100, 16206) else {
        return;
    };
    n.rules(
        "  kubernetes_max_concurrency: 1\n",
        "    interval: 10s\n    scheduled_types: [cpu]\n    profile_duration: 1s\n",
    );
    let intake = format!(
        "http://{}/profiling/v1/input",
        crate::support::hung_server()
    );
    let collector = format!("http://{}", crate::support::hung_server());
    let mut run = Running::start(
        &n.sb,
        &n.kc,
        &[
            "--upload",
            &intake,
            "--otlp",
            &collector,
            "--spool",
            "spool",
            "--metrics-listen",
            "127.0.0.1:0",
        ],
    );
    let listening = run.wait("listening", |v| v["event"] == "listening");
    let metrics = listening["metrics"].as_str().unwrap().to_string();
    run.wait("synced", |v| v["event"] == "synced" && v["targets"] == 8);
    let t0 = Instant::now();
    let done = |r: &mut Running| {
        let mut by: std::collections::BTreeMap<String, usize> = Default::default();
        for v in r.drain() {
            if v["event"] == "capture_done" && v["status"] == "ok" {
                *by.entry(v["target"].as_str().unwrap().to_string())
                    .or_default() += 1;
            }
        }
        by
    };
    // The event is the point, not how fast it comes: eight 1 s captures through one slot,
    // twice, take about 20 s on a quiet machine; a loaded 2-core CI runner has needed over 40.
    until("two captures of every target", 180, || {
        let by = done(&mut run);
        by.len() == 8 && by.values().all(|&n| n >= 2)
    });
    let took = t0.elapsed().as_secs_f64();
    let (_, text) = get(&metrics, "/metrics");
    let late = metric(&text, "agentprof_k8s_scheduled_late_total");
    let missed = metric(&text, "agentprof_k8s_scheduled_missed_total");
    assert_eq!(missed, 0.0, "{text}");
    assert!(late >= 1.0, "the captures waited for the slot: {text}");
    assert!(
        !run.seen
            .iter()
            .any(|v| v["event"] == "capture_skipped" && v["cause"] == "scheduled"),
        "{:#?}",
        run.seen
    );
    let exit = run.sigterm_timed();
    let in_spool = |dir: &str| {
        std::fs::read_dir(n.sb.file(dir))
            .map(|d| {
                d.flatten()
                    .filter(|e| e.path().extension().is_some_and(|x| x == "upload"))
                    .count()
            })
            .unwrap_or(0)
    };
    let (spooled, otlp) = (in_spool("spool"), in_spool("spool/otlp"));
    eprintln!(
        "measured: 8 targets, 1 slot, an intake and a collector that never answer: every target captured twice in {took:.1} s ({late} waited, {missed} missed); exit {exit:.2} s after SIGTERM, {spooled} uploads and {otlp} OTLP requests left in the spools"
    );
    assert!(exit <= 3.0, "{exit:.2} s");
    assert!(spooled >= 8, "the uploads wait in the spool: {spooled}");
    assert!(otlp >= 8, "the OTLP requests wait in theirs: {otlp}");
}

/// `--out` whose captures.jsonl cannot be written (the disk full: /dev/full) and whose
/// profile directory cannot be made: the capture is a failure in its events and in
/// /metrics, never `ok`.
#[test]
fn a_capture_whose_files_were_not_written_is_a_failure() {
    let Some(n) = node(1, 110, 16207) else {
        return;
    };
    n.rules("", "    interval: 10s\n    scheduled_types: [goroutine]\n");
    std::fs::create_dir_all(n.sb.file("out")).unwrap();
    std::os::unix::fs::symlink("/dev/full", n.sb.file("out/captures.jsonl")).unwrap();
    // Where the pod's profiles would go is a file.
    n.sb.write("out/shop", "not a directory");
    let (mut run, metrics) = n.start(&["--out", "out"]);
    let done = run.wait("the capture", |v| v["event"] == "capture_done");
    assert_eq!(done["status"], "error", "{done}");
    let rec = run.wait("the record error", |v| v["event"] == "record_error");
    assert!(
        rec["error"].as_str().unwrap().contains("No space left"),
        "{rec}"
    );
    let cap = run.wait("the capture", |v| v["event"] == "capture");
    assert_eq!(cap["capture"]["profiles"][0]["ok"], false, "{cap}");
    let (_, text) = get(&metrics, "/metrics");
    assert!(
        metric(
            &text,
            "agentprof_k8s_collections_total{cause=\"scheduled\",status=\"error\"}"
        ) >= 1.0,
        "{text}"
    );
    let _ = run.stop();
}

/// `/proc/PID/fd` entries and VmRSS (KiB) of a process.
fn fds_and_rss(pid: u32) -> (usize, u64) {
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count());
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    (fds, rss)
}

/// 1,500 clients on `--metrics-listen` that send half a request header and hold on: the
/// server keeps at most its cap of connections (the collector's fds stay free, its memory
/// small), the collector goes on, and /metrics answers again once the header timeout has
/// closed them.
#[test]
fn hostile_clients_of_the_metrics_listener_cannot_starve_the_collector() {
    let Some(n) = node(1, 120, 16208) else {
        return;
    };
    n.rules("", WATCHED);
    let (mut run, metrics) = n.start(&[]);
    run.wait("synced", |v| v["event"] == "synced");
    let pid = run.child.id();
    let (fds0, rss0) = fds_and_rss(pid);
    let mut held = Vec::new();
    for _ in 0..1500 {
        use std::io::Write;
        if let Ok(mut s) = std::net::TcpStream::connect(&metrics) {
            let _ = s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ");
            held.push(s);
        }
    }
    std::thread::sleep(Duration::from_secs(2));
    let (fds, rss) = fds_and_rss(pid);
    let rounds = n.kubelet.requests();
    std::thread::sleep(Duration::from_secs(3));
    assert!(n.kubelet.requests() >= rounds + 2, "the collector goes on");
    assert!(
        fds <= fds0 + 70,
        "{fds} fds with 1,500 hostile clients ({fds0} before): the cap is 64"
    );
    assert!(rss <= rss0 + 8 * 1024, "{rss} KiB ({rss0} before)");
    let answered = until("/metrics answers again", 20, || {
        get(&metrics, "/metrics").0 == 200
    });
    eprintln!(
        "measured: 1,500 clients holding half a header on --metrics-listen: {fds} fds ({fds0} before), VmRSS {rss} KiB ({rss0} before); /metrics answered again after {answered:.1} s more"
    );
    drop(held);
    let _ = run.stop();
}

/// What a hostile pod's pprof endpoint does.
#[derive(Clone, Copy, Debug)]
enum Hostile {
    /// Reads the request and never answers.
    Hang,
    /// Answers 200 and sends one byte a second.
    Trickle,
    /// Answers 200 with a 2 GiB body, as fast as the socket takes it.
    Huge,
    /// Redirects to the API server.
    Redirect,
    /// Answers a login page.
    Html,
}

/// A hostile pprof endpoint on `addr`; counts the requests that carried an Authorization
/// header.
fn hostile(addr: &str, how: Hostile, api: String) -> std::sync::Arc<std::sync::atomic::AtomicU64> {
    use std::io::{BufRead, Write};
    let authorized = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let seen = std::sync::Arc::clone(&authorized);
    let listener = std::net::TcpListener::bind(addr).unwrap();
    std::thread::spawn(move || {
        for s in listener.incoming().flatten() {
            let (seen, api) = (std::sync::Arc::clone(&seen), api.clone());
            std::thread::spawn(move || {
                let mut r = std::io::BufReader::new(s.try_clone().unwrap());
                let mut line = String::new();
                while r.read_line(&mut line).is_ok_and(|n| n > 0) {
                    if line.to_ascii_lowercase().starts_with("authorization:") {
                        seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    }
                    if line == "\r\n" {
                        break;
                    }
                    line.clear();
                }
                let mut s = s;
                let _ = match how {
                    Hostile::Hang => {
                        std::thread::sleep(Duration::from_secs(120));
                        Ok(())
                    }
                    Hostile::Trickle => s
                        .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n\r\n")
                        .and_then(|()| {
                            for _ in 0..120 {
                                s.write_all(b"\x0a")?;
                                std::thread::sleep(Duration::from_secs(1));
                            }
                            Ok(())
                        }),
                    Hostile::Huge => s
                        .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2147483648\r\n\r\n")
                        .and_then(|()| {
                            let chunk = vec![0u8; 1 << 16];
                            for _ in 0..(1 << 15) {
                                s.write_all(&chunk)?;
                            }
                            Ok(())
                        }),
                    Hostile::Redirect => s.write_all(
                        format!(
                            "HTTP/1.1 302 Found\r\nLocation: {api}/api/v1/pods\r\nContent-Length: 0\r\n\r\n"
                        )
                        .as_bytes(),
                    ),
                    Hostile::Html => s.write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 38\r\n\r\n<html><form>login</form></html>\x0a\x0a\x0a\x0a\x0a\x0a\x0a",
                    ),
                };
            });
        }
    });
    authorized
}

/// Pods whose endpoints hang, trickle, stream 2 GiB, redirect to the API server or answer
/// a login page: each capture ends within the rule's request_timeout with an error, no
/// redirect is followed, no credential is sent to a pod, and the good pod beside them is
/// collected.
#[test]
fn hostile_pod_endpoints_cost_their_own_capture_only() {
    let Some(n) = node(1, 130, 16209) else {
        return;
    };
    let kinds = [
        Hostile::Hang,
        Hostile::Trickle,
        Hostile::Huge,
        Hostile::Redirect,
        Hostile::Html,
    ];
    let mut auth = Vec::new();
    for (i, how) in kinds.iter().enumerate() {
        let ip = format!("127.0.2.{}", 10 + i);
        auth.push(hostile(&format!("{ip}:16209"), *how, n.api.url()));
        n.api
            .put_pod(web(&format!("bad-{i}"), &format!("ub{i}"), &ip, 16209));
    }
    n.rules(
        "  kubernetes_max_concurrency: 8\n",
        "    interval: 10s\n    scheduled_types: [goroutine]\n    request_timeout: 3s\n    \
         max_concurrency: 8\n",
    );
    let mut run = Running::start(&n.sb, &n.kc, &[]);
    run.wait("synced", |v| v["event"] == "synced" && v["targets"] == 6);
    let good = run.wait("the good pod's capture", |v| {
        v["event"] == "capture_done" && v["target"].as_str().unwrap().starts_with("u130-0/")
    });
    assert_eq!(good["status"], "ok", "{good}");
    for (i, how) in kinds.iter().enumerate() {
        let id = format!("ub{i}/");
        let done = run.wait_for("a hostile pod's capture", 15, |v| {
            v["event"] == "capture_done" && v["target"].as_str().unwrap().starts_with(&id)
        });
        assert_eq!(done["status"], "error", "{how:?}: {done}");
        let secs = done["seconds"].as_f64().unwrap();
        assert!(secs <= 4.0, "{how:?}: {secs} s with a 3 s request_timeout");
        // The deadline is named as the k8s user set it, not as pull's flag.
        let said = run
            .wait_for("the hostile capture's line", 5, |v| {
                v["event"] == "capture"
                    && v["capture"]["target"]
                        .as_str()
                        .unwrap_or("")
                        .starts_with(&id)
            })
            .to_string();
        assert!(!said.contains("--http-timeout"), "{how:?}: {said}");
        if matches!(how, Hostile::Hang | Hostile::Trickle) {
            assert!(said.contains("request_timeout 3.00s"), "{how:?}: {said}");
        }
        eprintln!(
            "measured: a pod endpoint that does {how:?}: its capture ended in {secs:.2} s (error)"
        );
    }
    let _ = run.stop();
    for (a, how) in auth.iter().zip(kinds) {
        assert_eq!(
            a.load(std::sync::atomic::Ordering::SeqCst),
            0,
            "{how:?}: a credential was sent to a pod"
        );
    }
    assert_eq!(
        n.api.count("unauthorized"),
        0,
        "a redirect was followed: {:?}",
        n.api.log()
    );
}

/// `capture_done` events printed so far.
fn captures_done(run: &mut Running) -> usize {
    run.drain()
        .iter()
        .filter(|v| v["event"] == "capture_done")
        .count()
}

/// CPU seconds (user + system) `pid` has used so far (0 once it is gone).
fn cpu_seconds(pid: u32) -> f64 {
    super::kubelet::cpu_seconds(pid).unwrap_or(0.0)
}

/// A pod LIST answered 200 with a proxy's HTML page, or with the list cut off halfway, for
/// 20 s: no crash, the lists retried at a modest rate (backing off), /readyz 503 while they fail (from the
/// start: not synced; after a sync: the relist fails though every answer was a 200), and
/// ready again soon after the lists are whole.
#[test]
fn garbage_or_truncated_pod_lists_make_it_unready_and_it_recovers() {
    let runs: Vec<_> = [
        ("an HTML page", false, 90u8),
        ("a truncated list", true, 100),
    ]
    .into_iter()
    .map(|(name, truncated, base)| std::thread::spawn(move || bad_lists(name, truncated, base)))
    .collect();
    for r in runs {
        r.join().unwrap();
    }
}

fn bad_lists(name: &str, truncated: bool, base: u8) {
    const BAD_S: u64 = 20;
    let Some(n) = node(1, base, 16206) else {
        return;
    };
    n.rules("", WATCHED);
    // From the start for the HTML page; after a sync, when a cut watch relists, for the
    // truncated list.
    if !truncated {
        n.api.set_fault(None, Some(Fault::BadList(false)));
    }
    let (mut run, metrics) = n.start(&[]);
    let pid = run.child.id();
    if truncated {
        run.wait("synced", |v| v["event"] == "synced");
        until("ready", 10, || get(&metrics, "/readyz").0 == 200);
        n.api.set_fault(None, Some(Fault::BadList(true)));
        // The watch ends and its version is gone: kube's watcher relists.
        n.api.expire_watches();
    }
    let t0 = Instant::now();
    let lists0 = n.api.count("list");
    let unready = until("not ready while the lists are bad", 15, || {
        get(&metrics, "/readyz").0 == 503
    });
    // Right after the start the reason is that nothing answered yet; on a busy machine the
    // first bad list can come later than the first look: wait for the reason it gives.
    let mut why = String::new();
    until("/readyz to name the failing pod list", 15, || {
        let (code, text) = get(&metrics, "/readyz");
        why = text;
        code == 503 && why.contains("pod")
    });
    let mut ready_during = 0;
    while t0.elapsed() < Duration::from_secs(BAD_S) {
        if get(&metrics, "/readyz").0 == 200 {
            ready_during += 1;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let lists = n.api.count("list") - lists0;
    let alive = std::fs::metadata(format!("/proc/{pid}")).is_ok();
    n.api.set_fault(None, None);
    let back = Instant::now();
    let ready = until("ready again", 40, || get(&metrics, "/readyz").0 == 200);
    let errors: Vec<String> = run
        .drain()
        .iter()
        .filter(|v| v["event"] == "watch_error")
        .map(|v| v["error"].as_str().unwrap_or("").to_string())
        .collect();
    eprintln!(
        "measured: the pod LIST answered with {name} for {BAD_S} s: {lists} lists ({:.2}/s), /readyz 503 after {unready:.1} s ({}), ready {:.1} s after the lists were whole",
        lists as f64 / BAD_S as f64,
        why.trim(),
        back.elapsed().as_secs_f64().max(ready)
    );
    assert!(alive, "{name}: agentprof ended");
    assert_eq!(
        ready_during, 0,
        "{name}: /readyz said ready while lists failed"
    );
    assert!(why.contains("pod"), "{name}: {why}");
    assert!(
        // Backed off: 1, 2, 4, 8 s between lists (kube alone relists every 0.8 s: 16 in
        // 20 s).
        (1..=8).contains(&lists),
        "{name}: {lists} lists in {BAD_S} s"
    );
    assert!(
        errors
            .iter()
            .any(|e| e.contains("expected") || e.contains("EOF") || e.contains("json")),
        "{name}: the decoding error is said: {errors:#?}"
    );
    // The collector still works: a scheduled capture after the recovery.
    let done0 = captures_done(&mut run);
    until("a capture after the recovery", 30, || {
        captures_done(&mut run) > done0
    });
    let _ = run.stop();
}

/// The API server's serving certificate rotated to another from the same CA is
/// transparent (no watch error, ready throughout); one from an unknown CA for 15 s fails
/// with certificate errors and /readyz 503, and agentprof recovers without a restart once
/// the server has a good certificate again.
#[test]
fn a_rotated_api_server_certificate_is_transparent_and_an_unknown_ca_recovers() {
    let Some(n) = node(1, 110, 16207) else {
        return;
    };
    n.rules("", WATCHED);
    let (mut run, metrics) = n.start(&[]);
    let pid = run.child.id();
    run.wait("synced", |v| v["event"] == "synced");
    until("ready", 10, || get(&metrics, "/readyz").0 == 200);
    let errors = |run: &mut Running| -> Vec<String> {
        run.drain()
            .iter()
            .filter(|v| v["event"] == "watch_error")
            .map(|v| v["error"].as_str().unwrap_or("").to_string())
            .collect()
    };
    let before = errors(&mut run).len();

    // Rotated within the cluster's CA.
    let watches = n.api.count("watch");
    n.api.serve_certificate(None, "rotated");
    until("a new watch", 20, || n.api.count("watch") > watches);
    let mut unready = 0;
    for _ in 0..10 {
        if get(&metrics, "/readyz").0 != 200 {
            unready += 1;
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    let after_rotation = errors(&mut run);
    assert_eq!(
        after_rotation.len(),
        before,
        "a rotation within the CA is transparent: {after_rotation:#?}"
    );
    assert_eq!(unready, 0, "ready throughout the rotation");

    // A certificate from a CA the kubeconfig does not name, for 15 s.
    let bad = Instant::now();
    n.api
        .serve_certificate(Some(&n.sb.path().join("other-ca")), "stranger");
    let not_ready = until("not ready with an unknown CA", 20, || {
        get(&metrics, "/readyz").0 == 503
    });
    std::thread::sleep(Duration::from_secs(15).saturating_sub(bad.elapsed()));
    let refused = errors(&mut run);
    n.api.serve_certificate(None, "good-again");
    let back = Instant::now();
    let ready = until("ready again", 40, || get(&metrics, "/readyz").0 == 200);
    let ready_after = back.elapsed().as_secs_f64().max(ready);
    let done0 = captures_done(&mut run);
    until("a capture after the recovery", 30, || {
        captures_done(&mut run) > done0
    });
    eprintln!(
        "measured: API server certificate rotated within its CA: 0 watch errors, ready throughout; from an unknown CA for 15 s: /readyz 503 after {not_ready:.1} s, {} watch errors, ready {ready_after:.1} s after a good certificate, same process",
        refused.len() - before
    );
    assert!(
        refused[before..].iter().any(|e| {
            let e = e.to_lowercase();
            e.contains("certificate") || e.contains("issuer")
        }),
        "the watch errors name the certificate: {refused:#?}"
    );
    assert_eq!(run.child.id(), pid);
    assert!(
        run.child.try_wait().unwrap().is_none(),
        "no restart: the same process"
    );
    let _ = run.stop();
}

/// A watch that streams MODIFIED events of a pod at up to 20,000 a second for 15 s
/// (`AGENTPROF_FLOOD_RATE` and `AGENTPROF_FLOOD_S` set others): memory stays flat, the Lease
/// is still renewed, scheduled captures go on, /readyz stays 200, and the collector is calm
/// (little CPU) soon after it ends. A release build reads 40,000 a second at half a core;
/// the tests' debug build reads what it can (about 7,000 a second at a whole core), the
/// server holding the rest back as TCP does — so it takes the CPU lock, and other timed
/// tests do not run beside it.
#[test]
fn a_watch_flood_keeps_memory_flat_the_lease_renewed_and_captures_going() {
    let rate: u64 = std::env::var("AGENTPROF_FLOOD_RATE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000);
    let flood_s: u64 = std::env::var("AGENTPROF_FLOOD_S")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(15);
    let _cpu = crate::support::cpu_exclusive();
    // Two pods, each captured every 10 s; the flood is of the first.
    let Some(n) = node(2, 120, 16208) else {
        return;
    };
    n.rules("", WATCHED);
    let (mut run, metrics) = n.start(&[]);
    let pid = run.child.id();
    run.wait("synced", |v| v["event"] == "synced");
    run.wait("a capture", |v| v["event"] == "capture_done");
    n.api.wait_for_watches(1);
    std::thread::sleep(Duration::from_secs(2));
    let rss0 = fds_and_rss(pid).1;
    let lease = |n: &Node| -> String {
        n.api
            .lease("agentprof", &format!("agentprof-{NODE}"))
            .map(|l| l["spec"]["renewTime"].as_str().unwrap_or("").to_string())
            .unwrap_or_default()
    };
    let renew0 = lease(&n);
    let captures0 = captures_done(&mut run);
    let (cpu0, t0) = (cpu_seconds(pid), Instant::now());
    n.api.flood(rate, flood_s);
    let mut rss_max = rss0;
    let mut renewals = std::collections::BTreeSet::new();
    let mut unready = 0;
    while t0.elapsed() < Duration::from_secs(flood_s) {
        rss_max = rss_max.max(fds_and_rss(pid).1);
        renewals.insert(lease(&n));
        if get(&metrics, "/readyz").0 != 200 {
            unready += 1;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let flooded = n.api.flooded();
    let cpu_flood = cpu_seconds(pid) - cpu0;
    let captured = captures_done(&mut run) - captures0;
    // Calm again: what was already sent is read, then the CPU it uses over 2 s is small.
    let end = Instant::now();
    let mut calm;
    loop {
        let c1 = cpu_seconds(pid);
        std::thread::sleep(Duration::from_secs(2));
        calm = (cpu_seconds(pid) - c1) / 2.0;
        if calm < 0.10 || end.elapsed() > Duration::from_secs(20) {
            break;
        }
    }
    let calm_after = end.elapsed().as_secs_f64();
    let rss_after = fds_and_rss(pid).1;
    renewals.remove(&renew0);
    eprintln!(
        "measured: a watch flood offered at {rate}/s for {flood_s} s: {flooded} events read ({:.0}/s), agentprof's CPU {:.0} % of a core during it, {:.1} % over 2 s within {calm_after:.0} s after; RSS {} → max {} → {} KiB; {} lease renewals, {captured} scheduled captures, /readyz not 200 {unready} times",
        flooded as f64 / flood_s as f64,
        cpu_flood / flood_s as f64 * 100.0,
        calm * 100.0,
        rss0,
        rss_max,
        rss_after,
        renewals.len()
    );
    assert!(
        flooded >= 2_000 * flood_s,
        "the flood reached agentprof: {flooded} events"
    );
    assert!(
        rss_max <= rss0 + 16 * 1024,
        "RSS flat: {rss0} → {rss_max} KiB"
    );
    assert!(renewals.len() >= 2, "lease renewed during the flood");
    // Two targets, each every 10 s.
    assert!(
        captured as u64 >= flood_s / 10 * 2,
        "{captured} scheduled captures in {flood_s} s"
    );
    assert_eq!(unready, 0);
    assert!(calm < 0.10, "calm after: {:.1} % CPU", calm * 100.0);
    let _ = run.stop();
}

/// `kubelet_url: http://…` (the read-only port) with a token file configured: the token is
/// never sent in clear text — every kubelet request carries no credentials, and the start
/// says so — while the rounds go on.
#[test]
fn a_plain_http_kubelet_is_never_sent_the_token() {
    let sb = Sandbox::new();
    let Some((api, kc)) = cluster(&sb) else {
        return;
    };
    sb.write("kt", "kt-secret\n");
    let Some(kubelet) = Kubelet::start_plain(sb.path(), NODE) else {
        return;
    };
    let Some(p) = pod_process("127.0.1.130:16209") else {
        return;
    };
    kubelet.add("shop", "web-0", "u130", "app", p.pid);
    api.put_pod(web("web-0", "u130", "127.0.1.130", 16209));
    profile_yaml(
        &sb,
        &format!(
            "  kubelet_url: {}\n  kubelet_token_file: {}\n",
            kubelet.url(),
            sb.file("kt").display()
        ),
        &format!("  - selector: app=web\n    port: pprof\n{WATCHED}"),
    );
    let mut run = Running::start(&sb, &kc, &[]);
    let started = run.wait("the kubelet's credentials said", |v| {
        v.get("kubelet_credentials").is_some()
    });
    until("kubelet rounds", 20, || kubelet.requests() >= 3);
    let _ = run.stop();
    let said = started["kubelet_credentials"].as_str().unwrap_or("");
    eprintln!(
        "measured: kubelet_url http:// with kubelet_token_file: {} requests, {} with the token, {} refused; said: {said}",
        kubelet.requests(),
        kubelet.sent("kt-secret"),
        kubelet.refused()
    );
    assert!(
        said.contains("no credentials") && said.contains("plain HTTP"),
        "{said}"
    );
    assert_eq!(kubelet.sent("kt-secret"), 0, "the token went in clear text");
    assert_eq!(
        kubelet.refused(),
        0,
        "every request came without credentials"
    );
}

/// The output directory is kept within `retention_mb`: at start (and every minute) the
/// oldest files go first, said as a `retention` event and counted on /metrics.
#[test]
fn the_output_directory_is_kept_within_its_retention() {
    let Some(n) = node(1, 140, 16210) else {
        return;
    };
    n.rules("  retention_mb: 1\n", WATCHED);
    let old =
        n.sb.write_bytes("out/shop/old/app/heap-old.pb.gz", &vec![7u8; 2 << 20]);
    let f = std::fs::File::options().write(true).open(&old).unwrap();
    f.set_modified(std::time::SystemTime::now() - Duration::from_secs(3600))
        .unwrap();
    drop(f);
    let (mut run, metrics) = n.start(&["--out", "out"]);
    let ev = run.wait("retention", |v| v["event"] == "retention");
    assert_eq!(ev["deleted_files"], 1, "{ev}");
    assert_eq!(ev["deleted_bytes"], 2 << 20, "{ev}");
    assert!(!old.exists());
    let (_, text) = get(&metrics, "/metrics");
    assert_eq!(
        metric(&text, "agentprof_k8s_retention_deleted_files_total"),
        1.0,
        "{text}"
    );
    // Captures go on being written.
    run.wait("a capture", |v| v["event"] == "capture_done");
    let _ = run.stop();
}

/// An API-server outage longer than the Lease: the node stops collecting, leads again after
/// the return, and keeps each target's state by pod UID — both pods fired their emergency
/// capture (10 min cooldown) before the cut; after the return the rounds that still cross
/// the threshold are cooldown skips, no triggered capture comes, and each target's scheduled
/// captures keep their place on its grid (nothing is captured at once on re-leading).
/// /readyz names the outage as it is, then the standby it becomes.
#[test]
fn an_outage_keeps_cooldowns_and_schedules_by_pod_uid() {
    let Some(n) = node(2, 160, 16211) else {
        return;
    };
    n.rules(
        "",
        "    interval: 12s\n    scheduled_types: [goroutine]\n    trigger_types: [goroutine]\n    \
         monitor_interval: 1s\n    trigger_window: 2s\n    mem_emergency_bytes: 1Mi\n    \
         cooldown: 10m\n    profile_duration: 1s\n",
    );
    let (mut run, metrics) = n.start(&[]);
    let leader = run.wait("leader", |v| v["event"] == "leader");
    let started = |v: &Value, pod: &str, cause: &str| {
        v["event"] == "capture_started"
            && v["cause"] == cause
            && v["target"].as_str().is_some_and(|t| t.starts_with(pod))
    };
    assert!(
        leader["identity"].as_str().is_some_and(|s| !s.is_empty()),
        "{leader}"
    );
    // Both fire their emergency, then each is captured on its schedule once.
    let mut before = Vec::new();
    for uid in ["u160-0/", "u160-1/"] {
        run.wait_for("an emergency capture", 30, |v| {
            started(v, uid, "resource_threshold")
        });
        before.push(run.wait_for("a scheduled capture", 30, |v| started(v, uid, "scheduled")));
    }
    n.api.set_down(true);
    run.wait_for("the lease lost", 40, |v| v["event"] == "lease_lost");
    let (code, why) = get(&metrics, "/readyz");
    assert_eq!(code, 503);
    assert!(why.contains("the API server is unreachable since"), "{why}");
    n.api.set_down(false);
    let back = run.wait_for("leading again", 40, |v| {
        v["event"] == "leader" && at(v) > at(&leader)
    });
    let restored = |v: &Value| v["event"] == "discovered" && v["restored"] == true;
    run.wait_for("targets restored", 20, restored);
    // The rounds after the return see both pods over the threshold: cooldown skips.
    let (_, text) = get(&metrics, "/metrics");
    let skips0 = metric(&text, "agentprof_k8s_skipped_total{reason=\"cooldown\"}");
    until("rounds in cooldown after the return", 30, || {
        let (_, text) = get(&metrics, "/metrics");
        metric(&text, "agentprof_k8s_skipped_total{reason=\"cooldown\"}") >= skips0 + 4.0
    });
    // Each target's first scheduled capture after the return is on its own grid.
    for (uid, earlier) in ["u160-0/", "u160-1/"].iter().zip(&before) {
        let after = run.wait_for("a scheduled capture after the return", 30, |v| {
            started(v, uid, "scheduled") && at(v) > at(&back)
        });
        let gap = (at(&after).as_millisecond() - at(earlier).as_millisecond()) as f64 / 1000.0;
        let off = (gap / 12.0 - (gap / 12.0).round()).abs() * 12.0;
        assert!(
            off < 1.5,
            "{uid}: {gap} s after its earlier capture, {off} s off its grid"
        );
        let first = (at(&after).as_millisecond() - at(&back).as_millisecond()) as f64 / 1000.0;
        eprintln!(
            "measured: {uid} captured {first:.1} s after leading again, on its grid ({off:.2} s off)"
        );
    }
    // What got no connection is counted apart from what reached the API server: the lease
    // GETs /metrics counts as answered are at most those the API server saw.
    let (_, text) = get(&metrics, "/metrics");
    let prefix = "agentprof_k8s_api_requests_total{verb=\"get\",resource=\"leases\",code=\"";
    let (mut answered, mut errors) = (0.0, 0.0);
    for l in text.lines().filter(|l| l.starts_with(prefix)) {
        let v: f64 = l.rsplit(' ').next().unwrap().parse().unwrap();
        if l[prefix.len()..].starts_with("error\"") {
            errors += v;
        } else {
            answered += v;
        }
    }
    let seen = n.api.counts().get("get leases").copied().unwrap_or(0) as f64;
    assert!(
        answered <= seen && errors >= 1.0,
        "{answered} answered, {errors} errors, {seen} seen"
    );
    let events = run.stop();
    let late: Vec<&Value> = events
        .iter()
        .filter(|v| {
            v["event"] == "capture_started" && v["cause"] != "scheduled" && at(v) > at(&back)
        })
        .collect();
    assert!(late.is_empty(), "a cooldown was bypassed: {late:?}");
    let stopped = events.iter().find(|v| v["event"] == "stopped").unwrap();
    assert!(
        stopped["api_errors"]["get"].as_u64().unwrap_or(0) >= 1,
        "{stopped}"
    );
}

/// An OTLP collector that throttles (429, Retry-After: 1) and then fails (503) for its first
/// seven requests: `k8s --otlp` goes on capturing, keeps the requests in its spool, and once
/// the collector answers delivers every capture's request once — none lost, none twice —
/// and the spool empties.
#[test]
fn an_otlp_collector_that_throttles_then_fails_gets_every_capture_once() {
    let Some(n) = node(2, 170, 16212) else {
        return;
    };
    n.rules("", "    interval: 10s\n    scheduled_types: [goroutine]\n");
    let (collector, seen) = crate::support::throttling_then_failing(6);
    let mut run = Running::start(
        &n.sb,
        &n.kc,
        &["--otlp", &format!("http://{collector}"), "--spool", "spool"],
    );
    run.wait("synced", |v| v["event"] == "synced" && v["targets"] == 2);
    let mut captured = 0;
    let otlp_waiting = || {
        std::fs::read_dir(n.sb.file("spool/otlp"))
            .map(|d| {
                d.flatten()
                    .filter(|e| e.path().extension().is_some_and(|x| x == "upload"))
                    .count()
            })
            .unwrap_or(0)
    };
    until(
        "four captures, and the collector past its refusals",
        180,
        || {
            captured = run
                .drain()
                .iter()
                .filter(|v| v["event"] == "capture_done" && v["status"] == "ok")
                .count();
            captured >= 4 && seen.lock().unwrap().len() >= 7
        },
    );
    let _ = run.sigterm_timed();
    // Delivered after the stop? No: what was left waits in the spool for the next run.
    let left = otlp_waiting();
    let mut rerun = Running::start(
        &n.sb,
        &n.kc,
        &["--otlp", &format!("http://{collector}"), "--spool", "spool"],
    );
    rerun.wait("synced", |v| v["event"] == "synced" && v["targets"] == 2);
    until("the spool emptied", 60, || otlp_waiting() == 0);
    let _ = rerun.sigterm_timed();
    let seen = seen.lock().unwrap().clone();
    let delivered: Vec<&Vec<u8>> = seen.iter().skip(7).map(|(_, _, body)| body).collect();
    let distinct: std::collections::HashSet<&Vec<u8>> = delivered.iter().copied().collect();
    eprintln!(
        "measured: k8s --otlp to a collector answering 429 then 503 ×6: {captured} captures, \
         {} requests delivered after the refusals ({} distinct), {left} left in the spool at \
         the first stop and sent by the next run",
        delivered.len(),
        distinct.len()
    );
    assert_eq!(distinct.len(), delivered.len(), "a request delivered twice");
    assert!(
        delivered.len() >= captured,
        "{} < {captured}",
        delivered.len()
    );
}

/// The bytes of the `.upload` files under `dir`.
fn spool_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "upload"))
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

/// An OTLP collector that, from its first request and for `outage`, answers 429
/// (Retry-After: 1), 503 and nothing at all (it reads the request and holds the connection)
/// in turn, and 200 after; each request logged with its answer.
fn down_for(outage: Duration) -> (String, crate::support::Noted) {
    let first = std::sync::OnceLock::new();
    crate::support::serve_noting(move |_, n| {
        let since = first.get_or_init(Instant::now).elapsed();
        if since >= outage {
            return crate::support::reply("200 OK", "");
        }
        match n % 3 {
            0 => {
                let mut r = crate::support::reply("429 Too Many Requests", "");
                r.headers.push(("Retry-After".into(), "1".into()));
                r
            }
            1 => crate::support::reply("503 Service Unavailable", "down"),
            _ => {
                // Held for an hour: the status is never sent, only logged.
                let mut r = crate::support::reply("504 Gateway Timeout", "");
                r.delay = Duration::from_secs(3600);
                r
            }
        }
    })
}

/// A collector down for a while (429, 503 and silence in turn; 20 s here, 10 minutes under
/// `AGENTPROF_ACCEPTANCE=1`) beside `k8s --otlp --upload-timeout 2s`: captures go on through
/// it, the spool stays within its 64 MiB and memory near its start, and once the collector
/// answers, every capture's request is delivered once.
#[test]
fn a_collector_down_for_a_while_gets_every_capture_once_it_is_back() {
    let outage = Duration::from_secs(if crate::support::acceptance() {
        600
    } else {
        20
    });
    let Some(n) = node(2, 180, 16213) else {
        return;
    };
    n.rules("", "    interval: 10s\n    scheduled_types: [goroutine]\n");
    let (collector, seen) = down_for(outage);
    let (mut run, _) = n.start(&[
        "--otlp",
        &format!("http://{collector}"),
        "--spool",
        "spool",
        "--upload-timeout",
        "2s",
    ]);
    let pid = run.child.id();
    let captured = |run: &mut Running| {
        run.drain()
            .iter()
            .filter(|v| v["event"] == "capture_done" && v["status"] == "ok")
            .count()
    };
    until("the collector's first request", 60, || {
        !seen.lock().unwrap().is_empty()
    });
    let down_at = Instant::now();
    let rss_at_start = crate::support::proc_status_kib(pid, "VmRSS:");
    let (mut spool_max, mut rss_max) = (0u64, rss_at_start);
    let spool_dir = n.sb.file("spool/otlp");
    // Sampled while the outage lasts (its length is this test's scenario, not a wait).
    until("the outage's end", outage.as_secs() + 60, || {
        spool_max = spool_max.max(spool_bytes(&spool_dir));
        rss_max = rss_max.max(crate::support::proc_status_kib(pid, "VmRSS:"));
        down_at.elapsed() >= outage
    });
    let during = captured(&mut run);
    let refused = |seen: &[(crate::support::Seen, &'static str)]| {
        seen.iter()
            .filter(|(_, status)| *status != "200 OK")
            .count()
    };
    until("every capture delivered and the spool empty", 300, || {
        let c = captured(&mut run);
        let seen = seen.lock().unwrap();
        let delivered = seen
            .iter()
            .filter(|(_, status)| *status == "200 OK")
            .count();
        delivered >= c && spool_bytes(&spool_dir) == 0
    });
    let exit = run.sigterm_timed();
    let total = captured(&mut run);
    let seen = seen.lock().unwrap().clone();
    let delivered: Vec<&Vec<u8>> = seen
        .iter()
        .filter(|(_, status)| *status == "200 OK")
        .map(|((_, _, body), _)| body)
        .collect();
    let distinct: std::collections::HashSet<&Vec<u8>> = delivered.iter().copied().collect();
    eprintln!(
        "measured: k8s --otlp beside a collector down {} s (429, 503, silent in turn): \
         {during} captures during it, {} requests refused or unanswered, spool \
         at most {} KiB, VmRSS {} → at most {} MiB; after: {} delivered ({} distinct) of \
         {total} captures, exit {exit:.2} s after SIGTERM",
        outage.as_secs(),
        refused(&seen),
        spool_max / 1024,
        rss_at_start / 1024,
        rss_max / 1024,
        delivered.len(),
        distinct.len()
    );
    assert!(during >= 2, "captures went on during the outage");
    assert!(spool_max > 0, "the requests waited in the spool");
    assert!(spool_max <= 64 << 20, "the spool's bound");
    assert_eq!(distinct.len(), delivered.len(), "a request delivered twice");
    assert!(delivered.len() >= total, "{} < {total}", delivered.len());
}
