//! `agentprof k8s` on a 110-pod node (the kubelet's default maximum) of the loopback API
//! server, for the figures the issue asks for. Run by `scripts/bench_k8s.sh`:
//!
//!   cargo run --release --example k8s_bench -- [--minutes M] [--agentprof PATH]
//!
//! Node `busy`: 110 pods under two rules (55 each) whose endpoints serve a real heap profile
//! of the Go test service (4,096 stacks; padded with comments to 160 KiB, also served as
//! allocs) and its goroutine profile (one loopback server answers every 127.0.N.M), scheduled
//! every 1 and 2 minutes: 220 baselines of 160 KiB, more than the 32 MiB delta cache holds,
//! so it fills and evicts.
//! Node `idle`: 110 pods, rules with no scheduled type and no threshold: what agentprof costs
//! doing nothing. Both run side by side for M minutes (default 10). Halfway, every watch is
//! cut. Printed: API requests at start and over the run by verb and resource, the requests to
//! recover the cut watch, peak RSS (VmHWM) and CPU seconds of each instance.
//!
//! With `--real`, the cluster is a real kube-apiserver and etcd (tests/cli/k8s/realcluster.rs)
//! with deploy/kubernetes/ applied, agentprof runs as the DaemonSet's ServiceAccount, the API
//! requests are read from the API server's audit log, and halfway the API server is restarted
//! instead of the watches cut.
//!
//! With `--outage S`, halfway the API server is gone for S seconds instead (longer than the
//! node's Lease of 15 s: each instance stops collecting and leads again after the return),
//! and the captures in the 60 s after the return are printed: in all, per target at most,
//! and within its first 10 s.
//!
//! With `--export`, the busy rules run on two nodes instead, one instance uploading in
//! dd-trace-go's format and one exporting OTLP profiles, each to a counting sink.

#![allow(clippy::unwrap_used)]

#[path = "../tests/cli/k8s/apiserver.rs"]
#[allow(dead_code)]
mod apiserver;
#[path = "../tests/cli/k8s/realcluster.rs"]
#[allow(dead_code)]
mod realcluster;
#[path = "../tests/cli/k8s/tls.rs"]
#[allow(dead_code)]
mod tls;

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use apiserver::{ApiServer, pod};
use serde_json::json;

const PORT: u16 = 16100;

fn arg(name: &str) -> Option<String> {
    let a: Vec<String> = std::env::args().collect();
    a.iter()
        .position(|x| x == name)
        .and_then(|i| a.get(i + 1).cloned())
}

/// A heap and a goroutine profile of the Go test service (built with go from tests/go).
fn real_profiles(dir: &Path) -> (Vec<u8>, Vec<u8>) {
    let bin = dir.join("pprofsvc");
    let st = Command::new("go")
        .args(["build", "-o"])
        .arg(&bin)
        .arg(".")
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/go/pprofsvc"))
        .status()
        .unwrap();
    assert!(st.success());
    let mut child = Command::new(&bin)
        .args(["-listen", "127.0.0.1:0", "-burners", "0", "-bigheap", "12"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line.split_whitespace().next().unwrap().to_string();
    std::thread::sleep(Duration::from_millis(500));
    let get = |p: &str| {
        reqwest::blocking::get(format!("http://{addr}/debug/pprof/{p}"))
            .unwrap()
            .bytes()
            .unwrap()
            .to_vec()
    };
    let (heap, goroutine) = (get("heap"), get("goroutine"));
    let _ = child.kill();
    let _ = child.wait();
    (pad(&heap, 160 << 10), goroutine)
}

/// The profile with comments of pseudo-random text added until it is about `size` bytes
/// compressed: a heap profile within the 100,000-field budget is ~23 KiB, and the delta
/// cache fills only with larger ones (services with long symbol names send those).
fn pad(gz: &[u8], size: usize) -> Vec<u8> {
    use prost::Message;
    use std::io::{Read, Write};
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(gz)
        .read_to_end(&mut raw)
        .unwrap();
    let mut p = agentprof::pprof::proto::Profile::decode(raw.as_slice()).unwrap();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let gzip = |p: &agentprof::pprof::proto::Profile| {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(&p.encode_to_vec()).unwrap();
        e.finish().unwrap()
    };
    while gzip(&p).len() < size {
        let text: String = (0..1024)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                char::from(b'a' + (x % 26) as u8)
            })
            .collect();
        p.comment.push(p.string_table.len() as i64);
        p.string_table.push(text);
    }
    gzip(&p)
}

/// One server on 0.0.0.0:PORT answering as every pod's pprof endpoint.
fn serve_profiles(heap: Vec<u8>, goroutine: Vec<u8>) {
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let (h, g) = (heap.clone(), goroutine.clone());
            let app = axum::Router::new()
                .route(
                    "/debug/pprof/heap",
                    axum::routing::get(move || {
                        let h = h.clone();
                        async move { h }
                    }),
                )
                .route(
                    "/debug/pprof/allocs",
                    axum::routing::get({
                        let h = heap.clone();
                        move || {
                            let h = h.clone();
                            async move { h }
                        }
                    }),
                )
                .route(
                    "/debug/pprof/goroutine",
                    axum::routing::get(move || {
                        let g = g.clone();
                        async move { g }
                    }),
                );
            let l = tokio::net::TcpListener::bind(("0.0.0.0", PORT))
                .await
                .unwrap();
            axum::serve(l, app).await.unwrap();
        });
    });
}

struct Instance {
    child: Child,
    dir: PathBuf,
}

/// Where the instances' API server is: the loopback one, or a real one (with the
/// ServiceAccount's kubeconfig).
enum Cluster {
    Loopback(ApiServer),
    Real(realcluster::RealCluster, PathBuf),
}

impl Cluster {
    fn kubeconfig(&self, path: &Path) {
        match self {
            Cluster::Loopback(api) => api.kubeconfig(path),
            Cluster::Real(_, sa) => {
                std::fs::copy(sa, path).unwrap();
            }
        }
    }

    fn put_pod(&self, node: &str, name: &str, uid: &str, ip: &str, app: &str) {
        match self {
            Cluster::Loopback(api) => api.put_pod(pod(
                "bench",
                name,
                uid,
                node,
                ip,
                json!({"app": app}),
                &[("app", &[("pprof", PORT)])],
            )),
            Cluster::Real(c, _) => {
                let m = realcluster::pod_manifest("bench", name, app, node, PORT);
                c.kubectl(&["apply", "-f", "-"], Some(&m.to_string()));
                c.set_running("bench", name, ip, true);
            }
        }
    }

    /// Requests by verb and resource of the instance on `node`.
    fn counts(&self, node: &str) -> BTreeMap<String, u64> {
        match self {
            Cluster::Loopback(api) => counts_of(api, node),
            Cluster::Real(c, _) => {
                let mut m = BTreeMap::new();
                let audit = c.audit();
                let sa = "system:serviceaccount:agentprof:agentprof";
                for e in realcluster::requests_of(&audit, sa) {
                    let uri = e["requestURI"].as_str().unwrap_or("");
                    let mine = uri.contains(&format!("nodeName%3D{node}"))
                        || uri.contains(&format!("agentprof-{node}"));
                    let counted = e["stage"] == "ResponseComplete" && e["verb"] != "watch"
                        || e["stage"] == "ResponseStarted" && e["verb"] == "watch";
                    if mine && counted {
                        let k = format!(
                            "{} {} {}",
                            e["verb"].as_str().unwrap_or("?"),
                            e["objectRef"]["resource"].as_str().unwrap_or("-"),
                            e["responseStatus"]["code"]
                        );
                        *m.entry(k).or_default() += 1;
                    }
                }
                m
            }
        }
    }

    /// Halfway: the watches cut (loopback) or the API server restarted (real); with an
    /// outage, the API server gone that long first.
    fn disturb(&mut self, outage: Option<Duration>) {
        match (self, outage) {
            (Cluster::Loopback(api), None) => api.cut_watches(),
            (Cluster::Loopback(api), Some(d)) => {
                api.set_down(true);
                std::thread::sleep(d);
                api.set_down(false);
            }
            (Cluster::Real(c, _), d) => {
                c.stop_apiserver();
                std::thread::sleep(d.unwrap_or_default());
                c.start_apiserver();
            }
        }
    }
}

/// A real cluster with deploy/kubernetes/ applied and the bench namespace; the
/// ServiceAccount's kubeconfig at `dir/sa.kubeconfig`.
fn real_cluster(dir: &Path) -> Cluster {
    let bin = realcluster::kube_apiserver().unwrap();
    let c = realcluster::RealCluster::start(bin, dir);
    let deploy = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/kubernetes/");
    c.kubectl(&["apply", "-f", deploy.to_str().unwrap()], None);
    c.kubectl(&["create", "namespace", "bench"], None);
    c.kubectl(
        &["-n", "bench", "create", "serviceaccount", "default"],
        None,
    );
    let (token, _) = c.kubectl(
        &[
            "-n",
            "agentprof",
            "create",
            "token",
            "agentprof",
            "--duration=2h",
        ],
        None,
    );
    let sa = dir.join("sa.kubeconfig");
    c.kubeconfig(&sa, token.trim(), "agentprof");
    Cluster::Real(c, sa)
}

fn start(agentprof: &str, api: &Cluster, dir: &Path, node: &str, rules: &str) -> Instance {
    start_with(agentprof, api, dir, node, rules, &[])
}

fn start_with(
    agentprof: &str,
    api: &Cluster,
    dir: &Path,
    node: &str,
    rules: &str,
    extra: &[String],
) -> Instance {
    let d = dir.join(node);
    std::fs::create_dir_all(d.join("conf.d")).unwrap();
    std::fs::write(
        d.join("conf.d/profile.yaml"),
        format!("init_config:\n  kubernetes_delta_cache_mb: 32\nkubernetes:\n{rules}"),
    )
    .unwrap();
    let kc = d.join("kubeconfig");
    api.kubeconfig(&kc);
    let child = Command::new(agentprof)
        .current_dir(&d)
        .args([
            "k8s", "--node", node, "--confd", "conf.d", "--out", "out", "--json",
        ])
        .arg("--kubeconfig")
        .arg(&kc)
        .args(extra)
        // As the DaemonSet runs it: its allocator settings, read from the manifest.
        .env("GLIBC_TUNABLES", daemonset_env("GLIBC_TUNABLES"))
        .env("AGENTPROF_STATE_DIR", d.join("state"))
        .env("POD_NAME", format!("agentprof-{node}"))
        .env("POD_NAMESPACE", "agentprof")
        .stdout(Stdio::from(
            std::fs::File::create(d.join("events.jsonl")).unwrap(),
        ))
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    Instance { child, dir: d }
}

/// The value of environment variable `name` in deploy/kubernetes/30-daemonset.yaml.
fn daemonset_env(name: &str) -> String {
    let manifest = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/kubernetes/30-daemonset.yaml"),
    )
    .unwrap();
    let mut lines = manifest.lines();
    lines
        .by_ref()
        .find(|l| l.trim() == format!("- name: {name}"))
        .unwrap_or_else(|| panic!("the DaemonSet sets no {name}"));
    lines
        .next()
        .and_then(|l| l.trim().strip_prefix("value: "))
        .unwrap_or_else(|| panic!("{name} has no value on the next line"))
        .to_string()
}

/// A process's current resident memory by kind (RssAnon, RssFile), MiB.
fn rss_kinds(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib = |key: &str| {
        status
            .lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
            .unwrap_or(0.0)
            / 1024.0
    };
    (kib("RssAnon:"), kib("RssFile:"))
}

/// (VmHWM bytes, CPU seconds) of a running process.
fn usage(pid: u32) -> (u64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let hwm = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .unwrap()
        * 1024;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let f: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..]
        .split_whitespace()
        .collect();
    let ticks: f64 = f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap();
    (hwm, ticks / 100.0)
}

fn counts_of(api: &ApiServer, node: &str) -> BTreeMap<String, u64> {
    // Requests are told apart by the node in their field selector or lease name.
    let mut m = BTreeMap::new();
    for l in api.log() {
        if !(l.contains(&format!("nodeName%3D{node}")) || l.contains(&format!("agentprof-{node}")))
        {
            continue;
        }
        let (method, rest) = l.split_once(' ').unwrap();
        let verb = if rest.contains("watch=true") {
            "watch pods"
        } else if rest.contains("/pods") {
            "list pods"
        } else if method == "GET" {
            "get lease"
        } else if method == "PUT" {
            "update lease"
        } else {
            "create lease"
        };
        *m.entry(verb.to_string()).or_default() += 1;
    }
    m
}

fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let minutes: u64 = arg("--minutes").map_or(10, |m| m.parse().unwrap());
    let outage = arg("--outage").map(|s| Duration::from_secs(s.parse().unwrap()));
    let agentprof = arg("--agentprof").unwrap_or_else(release_agentprof);
    let agentprof = std::fs::canonicalize(&agentprof)
        .unwrap_or_else(|e| panic!("{agentprof}: {e}"))
        .to_string_lossy()
        .into_owned();
    let dir = tempfile::tempdir().unwrap();
    let (heap, goroutine) = real_profiles(dir.path());
    println!(
        "profiles served: heap {} KiB, goroutine {} KiB (compressed, as the service sent them)",
        heap.len() >> 10,
        goroutine.len() >> 10
    );
    serve_profiles(heap, goroutine);
    let real = std::env::args().any(|a| a == "--real");
    let mut api = if real {
        real_cluster(dir.path())
    } else {
        Cluster::Loopback(ApiServer::start(dir.path(), "bench-token").unwrap())
    };
    for node in ["busy", "idle"] {
        for i in 0..110u32 {
            let app = if i % 2 == 0 { "a" } else { "b" };
            let ip = format!("127.0.{}.{}", if node == "busy" { 1 } else { 2 }, i + 2);
            api.put_pod(
                node,
                &format!("{node}-{i}"),
                &format!("{node}-uid-{i}"),
                &ip,
                app,
            );
        }
    }
    let busy_rules = "  - selector: app=a\n    port: pprof\n    interval: 1m\n    scheduled_types: [heap, allocs, goroutine]\n  \
                      - selector: app=b\n    port: pprof\n    interval: 2m\n    scheduled_types: [heap, allocs, goroutine]\n";
    if std::env::args().any(|a| a == "--export") {
        export(&agentprof, &api, dir.path(), minutes, busy_rules);
        return;
    }
    let idle_rules = "  - selector: app=a\n    port: pprof\n    scheduled_types: []\n  \
                      - selector: app=b\n    port: pprof\n    scheduled_types: []\n";
    let t0 = Instant::now();
    let mut busy = start(&agentprof, &api, dir.path(), "busy", busy_rules);
    let mut idle = start(&agentprof, &api, dir.path(), "idle", idle_rules);
    std::thread::sleep(Duration::from_secs(5));
    let at_start = (api.counts("busy"), api.counts("idle"));
    let (_, idle_cpu_start) = usage(idle.child.id());
    let half = Duration::from_secs(minutes * 30);
    std::thread::sleep(half.saturating_sub(t0.elapsed()));
    let before_cut = api.counts("busy");
    api.disturb(outage);
    let returned = jiff::Timestamp::now();
    std::thread::sleep(Duration::from_secs(5));
    let after_cut = api.counts("busy");
    std::thread::sleep((half * 2).saturating_sub(t0.elapsed()));
    let (busy_hwm, busy_cpu) = usage(busy.child.id());
    let (busy_anon, busy_file) = rss_kinds(busy.child.id());
    let (idle_hwm, idle_cpu) = usage(idle.child.id());
    let end = (api.counts("busy"), api.counts("idle"));
    for i in [&mut busy, &mut idle] {
        unsafe { libc::kill(i.child.id() as i32, libc::SIGTERM) };
        let _ = i.child.wait();
    }
    let captures = std::fs::read_to_string(busy.dir.join("out/captures.jsonl")).unwrap_or_default();
    let lines: Vec<serde_json::Value> = captures
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let no_delta = |why: &str| {
        lines
            .iter()
            .flat_map(|c| c["profiles"].as_array().cloned().unwrap_or_default())
            .filter(|p| p["no_delta"] == why)
            .count()
    };
    let deltas = lines
        .iter()
        .flat_map(|c| c["profiles"].as_array().cloned().unwrap_or_default())
        .filter(|p| p["delta"] == true)
        .count();
    let recover: BTreeMap<&String, i64> = after_cut
        .iter()
        .map(|(k, v)| (k, *v as i64 - *before_cut.get(k).unwrap_or(&0) as i64))
        .filter(|(_, d)| *d != 0)
        .collect();
    // The captures in the 60 s after the API server came back.
    let after_return = |within: i64| -> Vec<&serde_json::Value> {
        lines
            .iter()
            .filter(|c| {
                c["time"]
                    .as_str()
                    .and_then(|t| t.parse::<jiff::Timestamp>().ok())
                    .is_some_and(|t| {
                        let ms = t.as_millisecond() - returned.as_millisecond();
                        (0..within * 1000).contains(&ms)
                    })
            })
            .collect()
    };
    let mut per_target: BTreeMap<String, u64> = BTreeMap::new();
    for c in after_return(60) {
        *per_target
            .entry(c["target"].as_str().unwrap_or("").to_string())
            .or_default() += 1;
    }
    let report = json!({
        "minutes": minutes,
        "outage_s": outage.map(|d| d.as_secs()),
        "captures_in_60_s_after_the_return": outage.map(|_| json!({
            "all": after_return(60).len(),
            "in_the_first_10_s": after_return(10).len(),
            "targets": per_target.len(),
            "most_of_one_target": per_target.values().max().copied().unwrap_or(0),
            "resource_threshold": after_return(60).iter().filter(|c| c["cause"] == "resource_threshold").count(),
        })),
        "api_server": if real { "real kube-apiserver (audit log)" } else { "loopback" },
        "busy": {
            "api_requests_at_start": at_start.0,
            "api_requests_over_run": end.0,
            "requests_to_recover (5 s after the watches were cut or the API server restarted, lease renewals included)": recover,
            "peak_rss_mib": busy_hwm as f64 / 1048576.0,
            "rss_at_end_mib": {"anonymous": busy_anon, "file (the binary's pages)": busy_file},
            "cpu_seconds": busy_cpu,
            "captures": lines.len(),
            "deltas": deltas,
            "no_delta_evicted": no_delta("delta_cache_evicted"),
            "no_delta_first": no_delta("first_collection"),
            "profiles_refused": lines
                .iter()
                .flat_map(|c| c["profiles"].as_array().cloned().unwrap_or_default())
                .filter(|p| p["ok"] == false)
                .count(),
        },
        "idle": {
            "api_requests_at_start": at_start.1,
            "api_requests_over_run": end.1,
            "peak_rss_mib": idle_hwm as f64 / 1048576.0,
            "cpu_seconds_after_start": idle_cpu - idle_cpu_start,
            "cpu_seconds": idle_cpu,
        },
    });
    println!("{}", serde_json::to_string_pretty(&report).unwrap());
}

/// A sink that counts the requests and body bytes posted to it (any path), answering 200;
/// its address and its counts.
fn sink() -> (String, std::sync::Arc<[std::sync::atomic::AtomicU64; 2]>) {
    use std::sync::atomic::{AtomicU64, Ordering};
    let counts = std::sync::Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
    let (tx, rx) = std::sync::mpsc::channel();
    let c = std::sync::Arc::clone(&counts);
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let app = axum::Router::new().fallback(move |body: axum::body::Bytes| {
                let c = std::sync::Arc::clone(&c);
                async move {
                    c[0].fetch_add(1, Ordering::Relaxed);
                    c[1].fetch_add(body.len() as u64, Ordering::Relaxed);
                    "{}"
                }
            });
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(l.local_addr().unwrap().to_string()).unwrap();
            axum::serve(l, app).await.unwrap();
        });
    });
    (rx.recv().unwrap(), counts)
}

/// `--export`: the busy node's 110 pods twice, on nodes `dd` and `otlp`, one instance
/// uploading every capture in dd-trace-go's format, the other exporting it as OTLP profiles,
/// each to a counting sink, for M minutes: captures, requests, bytes, CPU seconds and peak
/// RSS of each.
fn export(agentprof: &str, api: &Cluster, dir: &Path, minutes: u64, rules: &str) {
    use std::sync::atomic::Ordering;
    for (node, net) in [("dd", 3), ("otlp", 4)] {
        for i in 0..110u32 {
            let app = if i % 2 == 0 { "a" } else { "b" };
            let ip = format!("127.0.{net}.{}", i + 2);
            api.put_pod(
                node,
                &format!("{node}-{i}"),
                &format!("{node}-uid-{i}"),
                &ip,
                app,
            );
        }
    }
    let (dd_addr, dd_counts) = sink();
    let (otlp_addr, otlp_counts) = sink();
    let mut dd = start_with(
        agentprof,
        api,
        dir,
        "dd",
        rules,
        &[
            "--upload".into(),
            format!("http://{dd_addr}/profiling/v1/input"),
        ],
    );
    let mut otlp = start_with(
        agentprof,
        api,
        dir,
        "otlp",
        rules,
        &["--otlp".into(), format!("http://{otlp_addr}")],
    );
    std::thread::sleep(Duration::from_secs(minutes * 60));
    let mut report = serde_json::Map::new();
    for (name, i, counts) in [
        ("dd-trace upload", &mut dd, &dd_counts),
        ("OTLP export", &mut otlp, &otlp_counts),
    ] {
        let (hwm, cpu) = usage(i.child.id());
        unsafe { libc::kill(i.child.id() as i32, libc::SIGTERM) };
        let _ = i.child.wait();
        let captures = std::fs::read_to_string(i.dir.join("out/captures.jsonl"))
            .unwrap_or_default()
            .lines()
            .count();
        let (requests, bytes) = (
            counts[0].load(Ordering::Relaxed),
            counts[1].load(Ordering::Relaxed),
        );
        report.insert(
            name.into(),
            json!({
                "captures": captures,
                "requests": requests,
                "bytes": bytes,
                "bytes_per_request": bytes.checked_div(requests).unwrap_or(0),
                "cpu_seconds": cpu,
                "peak_rss_mib": hwm as f64 / 1048576.0,
            }),
        );
    }
    report.insert("minutes".into(), minutes.into());
    println!(
        "{}",
        serde_json::to_string_pretty(&serde_json::Value::Object(report)).unwrap()
    );
}

#[path = "support/release.rs"]
mod release;

/// What the shared test modules call when a peer is missing: the bench cannot run without it.
mod support {
    pub fn skip(why: &str) {
        panic!("{why}")
    }
}
use release::release_agentprof;
