//! A loopback kubelet over HTTPS: `/stats/summary` in the kubelet's schema, behind a bearer
//! token, whose figures are those of real processes — CPU from /proc/PID/stat over the last
//! second (usageNanoCores), working set from VmRSS — so a test service that burns CPU or
//! grows its heap crosses a real threshold.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Request, Response};
use serde_json::json;

#[derive(Clone)]
struct Container {
    namespace: String,
    pod: String,
    uid: String,
    name: String,
    pid: u32,
}

#[derive(Default)]
struct Shared {
    containers: Mutex<Vec<Container>>,
    /// pid → (when, CPU seconds) samples, newest last.
    samples: Mutex<BTreeMap<u32, Vec<(Instant, f64)>>>,
    requests: AtomicU64,
    /// Request numbers (1-based) answered 503, as a kubelet that is restarting.
    down: Mutex<Vec<u64>>,
    /// The bearer token it accepts (the API server checks it for a real kubelet), and the
    /// tokens it was sent.
    token: Mutex<String>,
    tokens_seen: Mutex<BTreeMap<String, u64>>,
    refused: AtomicU64,
}

pub struct Kubelet {
    pub addr: SocketAddr,
    pub ca: PathBuf,
    shared: Arc<Shared>,
    tls: bool,
}

/// Serves `app` over plain HTTP on 127.0.0.1 (a free port) until the test process ends.
fn serve_plain(app: axum::Router) -> SocketAddr {
    super::tls::on_thread(move |l| async move {
        let _ = axum::serve(l, app).await;
    })
}

/// CPU seconds (user + system) `pid` has used so far, from /proc/PID/stat.
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

fn rss_bytes(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

impl Kubelet {
    pub fn start(dir: &Path, token: &str, node: &str) -> Option<Kubelet> {
        Kubelet::start_with(dir, token, node, true)
    }

    /// As the kubelet's read-only port (10255): plain HTTP, answering only requests that
    /// carry no credentials (one that carries a token is refused and counted).
    pub fn start_plain(dir: &Path, node: &str) -> Option<Kubelet> {
        Kubelet::start_with(dir, "", node, false)
    }

    fn start_with(dir: &Path, token: &str, node: &str, tls: bool) -> Option<Kubelet> {
        let kdir = dir.join("kubelet");
        std::fs::create_dir_all(&kdir).unwrap();
        let (cert, key) = super::tls::certificate(&kdir)?;
        let shared = Arc::new(Shared::default());
        // The sampler: every 200 ms, the CPU time of each container's process.
        let s = Arc::clone(&shared);
        std::thread::spawn(move || {
            loop {
                let pids: Vec<u32> = s.containers.lock().unwrap().iter().map(|c| c.pid).collect();
                let now = Instant::now();
                {
                    let mut samples = s.samples.lock().unwrap();
                    for pid in pids {
                        if let Some(cpu) = cpu_seconds(pid) {
                            let v = samples.entry(pid).or_default();
                            v.push((now, cpu));
                            v.retain(|(t, _)| now.duration_since(*t) < Duration::from_secs(3));
                        }
                    }
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        });
        *shared.token.lock().unwrap() = token.to_string();
        let (s, node) = (Arc::clone(&shared), node.to_string());
        let app = axum::Router::new().fallback(move |req: Request<Body>| {
            let (s, node) = (Arc::clone(&s), node.clone());
            async move { summary(&req, &s, &node) }
        });
        let addr = if tls {
            super::tls::serve(app, &cert, &key)
        } else {
            serve_plain(app)
        };
        Some(Kubelet {
            addr,
            ca: cert,
            shared,
            tls,
        })
    }

    pub fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// The init_config lines of profile.yaml that point agentprof at this kubelet, its
    /// token in `token_file`.
    pub fn settings(&self, token_file: &Path) -> String {
        format!(
            "  kubelet_url: {}\n  kubelet_client_ca: {}\n  kubelet_token_file: {}",
            self.url(),
            self.ca.display(),
            token_file.display()
        )
    }

    /// Reports `pid`'s usage as that of container `name` of pod `namespace/pod` (`uid`).
    pub fn add(&self, namespace: &str, pod: &str, uid: &str, name: &str, pid: u32) {
        self.shared.containers.lock().unwrap().push(Container {
            namespace: namespace.into(),
            pod: pod.into(),
            uid: uid.into(),
            name: name.into(),
            pid,
        });
    }

    /// Answers the `n`-th requests (1-based) with 503 Service Unavailable.
    pub fn fail_requests(&self, n: &[u64]) {
        self.shared.down.lock().unwrap().extend_from_slice(n);
    }

    /// From now on only `token` is accepted (a rotated service-account token).
    pub fn set_token(&self, token: &str) {
        *self.shared.token.lock().unwrap() = token.to_string();
    }

    /// Requests that carried `token`, and those refused (401).
    pub fn sent(&self, token: &str) -> u64 {
        self.shared
            .tokens_seen
            .lock()
            .unwrap()
            .get(token)
            .copied()
            .unwrap_or(0)
    }

    pub fn refused(&self) -> u64 {
        self.shared.refused.load(Ordering::SeqCst)
    }

    pub fn requests(&self) -> u64 {
        self.shared.requests.load(Ordering::SeqCst)
    }
}

fn summary(req: &Request<Body>, s: &Shared, node: &str) -> Response<Body> {
    let n = s.requests.fetch_add(1, Ordering::SeqCst) + 1;
    let reply = |code: u16, body: String| {
        Response::builder()
            .status(code)
            .header("content-type", "application/json")
            .body(Body::from(body))
            .unwrap()
    };
    let bearer = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("")
        .to_string();
    *s.tokens_seen
        .lock()
        .unwrap()
        .entry(bearer.clone())
        .or_default() += 1;
    if bearer != *s.token.lock().unwrap() {
        s.refused.fetch_add(1, Ordering::SeqCst);
        return reply(401, "Unauthorized".into());
    }
    if req.uri().path() != "/stats/summary" {
        return reply(404, "404 page not found".into());
    }
    if s.down.lock().unwrap().contains(&n) {
        return reply(503, "kubelet is restarting".into());
    }
    let containers = s.containers.lock().unwrap().clone();
    let samples = s.samples.lock().unwrap();
    let mut pods: BTreeMap<(String, String, String), Vec<serde_json::Value>> = BTreeMap::new();
    let now = jiff::Timestamp::now().to_string();
    for c in containers {
        let cpu = samples.get(&c.pid).and_then(|v| {
            let (t1, c1) = *v.last()?;
            let (t0, c0) = *v
                .iter()
                .find(|(t, _)| t1.duration_since(*t) <= Duration::from_millis(1100))?;
            let wall = t1.duration_since(t0).as_secs_f64();
            (wall > 0.3).then(|| ((c1 - c0) / wall * 1e9) as u64)
        });
        let mut cpu_json = json!({"time": now});
        if let Some(n) = cpu {
            cpu_json["usageNanoCores"] = n.into();
        }
        if let Some(total) = cpu_seconds(c.pid) {
            cpu_json["usageCoreNanoSeconds"] = ((total * 1e9) as u64).into();
        }
        let mut mem = json!({"time": now});
        if let Some(rss) = rss_bytes(c.pid) {
            mem["workingSetBytes"] = rss.into();
            mem["rssBytes"] = rss.into();
        }
        pods.entry((c.namespace, c.pod, c.uid))
            .or_default()
            .push(json!({"name": c.name, "startTime": "2026-12-01T00:00:00Z",
                "cpu": cpu_json, "memory": mem}));
    }
    let pods: Vec<serde_json::Value> = pods
        .into_iter()
        .map(|((ns, name, uid), cs)| {
            json!({"podRef": {"name": name, "namespace": ns, "uid": uid},
                "startTime": "2026-12-01T00:00:00Z", "containers": cs})
        })
        .collect();
    let doc = json!({"node": {"nodeName": node, "startTime": "2026-12-01T00:00:00Z",
        "cpu": {"time": now}, "memory": {"time": now}}, "pods": pods});
    reply(200, doc.to_string())
}
