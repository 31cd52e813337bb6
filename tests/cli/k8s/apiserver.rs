//! A loopback Kubernetes API server that enforces the parts of the protocol agentprof and
//! its peers use: bearer-token auth, discovery (`/version`, `/api`, `/apis`, resource lists),
//! pods listed in pages (`limit`/`continue`, `resourceVersion`), field selection on
//! `spec.nodeName`, `metadata.name` and `metadata.namespace` (others are refused as the real
//! server refuses them), equality label selectors, watch streams (ADDED, MODIFIED, DELETED,
//! BOOKMARK) from a resourceVersion or as a streaming list (`sendInitialEvents`), `410 Gone` for a version older than the kept history,
//! Leases with optimistic concurrency (409 on a stale resourceVersion) and the real server's
//! validation (leaseTransitions ≥ 0), a serving certificate signed by a cluster CA as kubeadm
//! lays it out, and a count of requests by verb and resource. Checked with kubectl and a
//! client-go informer (tests/cli/k8s/peers.rs). A test can make it misbehave as a control
//! plane does (`Fault`): throttle with Retry-After, answer 503 while restarting, accept a
//! request and never answer, refuse the credentials, end watches at once, be gone, answer
//! a pod list with what is not one; and change its serving certificate or flood its watches.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{Method, Request, Response, StatusCode};
use serde_json::{Value, json};

type Key = (String, String);

/// How the server misbehaves, for every request (or one token's).
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// This status (with a Retry-After of these seconds), as APF throttling (429) or a
    /// restarting control plane (503).
    Status(u16, Option<u64>),
    /// The request is read and never answered.
    Hang,
    /// A watch is answered 200 and ended at once with no event.
    WatchEndsAtOnce,
    /// Only the Lease requests fail, with this status.
    Leases(u16),
    /// A pod LIST is answered 200 with a body that is not a PodList: an HTML error page
    /// from a proxy in front of the server (`false`), or the real list cut off halfway
    /// (`true`), as by a connection reset mid-body.
    BadList(bool),
}

#[derive(Default)]
struct State {
    rv: u64,
    pods: BTreeMap<Key, Value>,
    leases: BTreeMap<Key, Value>,
    /// Pod events kept for watches: (resourceVersion, type, object).
    events: VecDeque<(u64, &'static str, Value)>,
    /// Versions at or below this are gone: a watch from one gets 410.
    compacted: u64,
    watch_paused: bool,
    /// Node → the kubelet summary its proxy answers with.
    summaries: BTreeMap<String, String>,
    /// `verb resource` → requests.
    counts: BTreeMap<String, u64>,
    /// Every request line, for messages.
    log: Vec<String>,
    /// The fault, and the token it is for (None: every request).
    fault: Option<(Option<String>, Fault)>,
    /// Bearer tokens accepted beside the first.
    more_tokens: Vec<String>,
    /// `Authorization` headers by the token they carried, for checks that a token never
    /// reached the wrong server.
    tokens_seen: BTreeMap<String, u64>,
    /// A flood of MODIFIED events on every open watch: (events a second, until).
    flood: Option<(u64, std::time::Instant)>,
    /// Flood events handed to the watch streams so far.
    flooded: u64,
}

pub struct ApiServer {
    pub addr: SocketAddr,
    pub token: String,
    /// The server's certificate, which a kubeconfig names as its authority.
    pub ca: std::path::PathBuf,
    /// Where its certificates are made.
    dir: std::path::PathBuf,
    state: Arc<Mutex<State>>,
    changed: tokio::sync::watch::Sender<u64>,
    cut: tokio::sync::watch::Sender<u64>,
    gate: Arc<super::tls::Gate>,
}

fn status(code: u16, reason: &str, message: &str) -> Response<Body> {
    let body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "message": message, "reason": reason, "code": code});
    Response::builder()
        .status(code)
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap()
}

fn ok(v: &Value) -> Response<Body> {
    Response::builder()
        .header("content-type", "application/json")
        .body(Body::from(v.to_string()))
        .unwrap()
}

/// A watch stream's body: JSON lines as they are sent.
struct Lines(tokio::sync::mpsc::Receiver<Bytes>);

impl http_body::Body for Lines {
    type Data = Bytes;
    type Error = std::convert::Infallible;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        self.0
            .poll_recv(cx)
            .map(|o| o.map(|b| Ok(http_body::Frame::data(b))))
    }
}

struct Query(Vec<(String, String)>);

impl Query {
    fn parse(q: Option<&str>) -> Query {
        let url = reqwest::Url::parse(&format!("http://x/?{}", q.unwrap_or(""))).unwrap();
        Query(
            url.query_pairs()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        )
    }
    fn get(&self, k: &str) -> Option<&str> {
        self.0.iter().find(|(a, _)| a == k).map(|(_, v)| v.as_str())
    }
}

/// A parsed field or label selector: `key=value` terms (also `==`, and `!=`).
fn selector_terms(s: &str) -> Vec<(String, bool, String)> {
    s.split(',')
        .filter(|t| !t.is_empty())
        .map(|t| {
            if let Some((k, v)) = t.split_once("!=") {
                (k.to_string(), false, v.to_string())
            } else {
                let (k, v) = t.split_once('=').unwrap_or((t, ""));
                (k.to_string(), true, v.trim_start_matches('=').to_string())
            }
        })
        .collect()
}

fn field(pod: &Value, key: &str) -> Option<String> {
    let v = match key {
        "spec.nodeName" => &pod["spec"]["nodeName"],
        "metadata.name" => &pod["metadata"]["name"],
        "metadata.namespace" => &pod["metadata"]["namespace"],
        "status.phase" => &pod["status"]["phase"],
        _ => return None,
    };
    Some(v.as_str().unwrap_or("").to_string())
}

struct Filter {
    namespace: Option<String>,
    fields: Vec<(String, bool, String)>,
    labels: Vec<(String, bool, String)>,
}

impl Filter {
    fn new(namespace: Option<&str>, q: &Query) -> Result<Filter, String> {
        let fields = selector_terms(q.get("fieldSelector").unwrap_or(""));
        for (k, _, _) in &fields {
            if field(&json!({}), k).is_none() {
                return Err(format!("field label not supported: {k}"));
            }
        }
        Ok(Filter {
            namespace: namespace.map(str::to_string),
            fields,
            labels: selector_terms(q.get("labelSelector").unwrap_or("")),
        })
    }
    fn matches(&self, pod: &Value) -> bool {
        if let Some(ns) = &self.namespace
            && pod["metadata"]["namespace"].as_str() != Some(ns)
        {
            return false;
        }
        self.fields
            .iter()
            .all(|(k, eq, v)| (field(pod, k).as_deref() == Some(v.as_str())) == *eq)
            && self.labels.iter().all(|(k, eq, v)| {
                (pod["metadata"]["labels"][k].as_str() == Some(v.as_str())) == *eq
            })
    }
}

impl ApiServer {
    /// Starts the server over HTTPS on 127.0.0.1, its certificate made in `dir`; `token` is
    /// the bearer token every request must carry. None only where openssl is missing (not CI).
    pub fn start(dir: &Path, token: &str) -> Option<ApiServer> {
        // openssl is what makes the certificates (CI installs it).
        super::tls::certificate(dir)?;
        let (ca, cert, key) = super::tls::ca_signed(dir, "apiserver");
        let state = Arc::new(Mutex::new(State::default()));
        let (changed, _) = tokio::sync::watch::channel(0u64);
        let (cut, _) = tokio::sync::watch::channel(0u64);
        let (s, ch, c, t) = (
            Arc::clone(&state),
            changed.clone(),
            cut.clone(),
            token.to_string(),
        );
        let app = axum::Router::new().fallback(move |req: Request<Body>| {
            let (s, ch, c, t) = (Arc::clone(&s), ch.clone(), c.clone(), t.clone());
            async move { handle(req, s, ch, c, &t).await }
        });
        let gate = Arc::new(super::tls::Gate::default());
        let addr = super::tls::serve_gated(app, &cert, &key, Arc::clone(&gate));
        Some(ApiServer {
            addr,
            token: token.to_string(),
            ca,
            dir: dir.to_path_buf(),
            state,
            changed,
            cut,
            gate,
        })
    }

    /// Misbehaves as `fault` says, for every request (`token` None) or one token's.
    pub fn set_fault(&self, token: Option<&str>, fault: Option<Fault>) {
        self.state.lock().unwrap().fault = fault.map(|f| (token.map(str::to_string), f));
    }

    /// Accepts `token` too.
    pub fn add_token(&self, token: &str) {
        self.state
            .lock()
            .unwrap()
            .more_tokens
            .push(token.to_string());
    }

    /// From now on new connections get the certificate `NAME.pem` signed by the CA in
    /// `ca_dir` (made there, as `tls::ca_signed` makes it; the server's own directory is
    /// its cluster CA), and every open connection is ended, as a restart to rotate it does.
    pub fn serve_certificate(&self, ca_dir: Option<&Path>, name: &str) {
        let dir = ca_dir.unwrap_or(&self.dir);
        std::fs::create_dir_all(dir).unwrap();
        let (_, cert, key) = super::tls::ca_signed(dir, name);
        self.gate.set_certificate(&cert, &key);
        self.gate.cut();
        self.cut_watches();
    }

    /// Every open watch streams `per_second` MODIFIED events of its first pod (only its
    /// resourceVersion and an annotation change) for `secs` seconds, as fast as the client
    /// reads them up to that rate.
    pub fn flood(&self, per_second: u64, secs: u64) {
        self.state.lock().unwrap().flood = Some((
            per_second,
            std::time::Instant::now() + Duration::from_secs(secs),
        ));
    }

    /// Flood events handed to the watch streams so far.
    pub fn flooded(&self) -> u64 {
        self.state.lock().unwrap().flooded
    }

    /// Gone (connections closed, new ones closed at once) or back on the same address.
    pub fn set_down(&self, down: bool) {
        self.gate.set_down(down);
    }

    /// A kubeconfig for this server whose user is `token` (rather than the first token).
    pub fn kubeconfig_with(&self, path: &Path, token: &str) {
        self.kubeconfig(path);
        let text = std::fs::read_to_string(path).unwrap();
        std::fs::write(
            path,
            text.replace(
                &format!("token: {}", self.token),
                &format!("token: {token}"),
            ),
        )
        .unwrap();
    }

    /// A Lease as another holder left it.
    pub fn put_lease(&self, ns: &str, lease: Value) {
        let mut st = self.state.lock().unwrap();
        st.rv += 1;
        let mut l = lease;
        l["metadata"]["resourceVersion"] = st.rv.to_string().into();
        l["metadata"]["namespace"] = ns.into();
        let name = l["metadata"]["name"].as_str().unwrap().to_string();
        st.leases.insert((ns.to_string(), name), l);
    }

    pub fn url(&self) -> String {
        format!("https://{}", self.addr)
    }

    /// A kubeconfig for this server, its user authenticated by the token.
    pub fn kubeconfig(&self, path: &Path) {
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: loop\n  cluster:\n    server: {}\n    \
             certificate-authority: {}\n\
             contexts:\n- name: loop\n  context:\n    cluster: loop\n    user: agentprof\n    \
             namespace: agentprof\ncurrent-context: loop\nusers:\n- name: agentprof\n  user:\n    \
             token: {}\n",
            self.url(),
            self.ca.display(),
            self.token
        );
        std::fs::write(path, text).unwrap();
    }

    fn record(&self, kind: &'static str, pod: Value) {
        let mut st = self.state.lock().unwrap();
        st.rv += 1;
        let rv = st.rv;
        let mut pod = pod;
        pod["metadata"]["resourceVersion"] = rv.to_string().into();
        let key = (
            pod["metadata"]["namespace"].as_str().unwrap().to_string(),
            pod["metadata"]["name"].as_str().unwrap().to_string(),
        );
        if kind == "DELETED" {
            st.pods.remove(&key);
        } else {
            st.pods.insert(key, pod.clone());
        }
        st.events.push_back((rv, kind, pod));
        drop(st);
        self.changed.send_replace(rv);
    }

    /// Creates or replaces a pod (ADDED or MODIFIED to watchers).
    pub fn put_pod(&self, pod: Value) {
        let key = (
            pod["metadata"]["namespace"].as_str().unwrap().to_string(),
            pod["metadata"]["name"].as_str().unwrap().to_string(),
        );
        let exists = self.state.lock().unwrap().pods.contains_key(&key);
        self.record(if exists { "MODIFIED" } else { "ADDED" }, pod);
    }

    pub fn pod(&self, ns: &str, name: &str) -> Option<Value> {
        let st = self.state.lock().unwrap();
        st.pods.get(&(ns.to_string(), name.to_string())).cloned()
    }

    pub fn delete_pod(&self, ns: &str, name: &str) {
        if let Some(p) = self.pod(ns, name) {
            self.record("DELETED", p);
        }
    }

    /// Compacts the history, as etcd does: a new watch from an older version gets 410 Gone
    /// (the watches already open keep receiving every event).
    pub fn compact(&self) {
        let mut st = self.state.lock().unwrap();
        st.compacted = st.rv;
    }

    /// Ends every open watch with the history compacted past its version, as a restarted
    /// API server with a compacted etcd does: watching on gets 410 Gone, a client relists.
    pub fn expire_watches(&self) {
        {
            let mut st = self.state.lock().unwrap();
            st.rv += 1;
            st.compacted = st.rv;
        }
        self.cut_watches();
    }

    /// While paused, new watch requests are refused with 503, as by an API server that is
    /// restarting; the ones open are not touched (cut them with `cut_watches`).
    pub fn pause_watches(&self, paused: bool) {
        self.state.lock().unwrap().watch_paused = paused;
    }

    /// Ends every open watch stream, as an API server restart or a load balancer does.
    pub fn cut_watches(&self) {
        self.cut.send_modify(|n| *n += 1);
    }

    /// Requests so far by `verb resource` (`list pods`, `watch pods`, `get leases`…).
    pub fn counts(&self) -> BTreeMap<String, u64> {
        self.state.lock().unwrap().counts.clone()
    }

    pub fn count(&self, verb: &str) -> u64 {
        self.counts()
            .iter()
            .filter(|(k, _)| k.split(' ').next() == Some(verb))
            .map(|(_, n)| n)
            .sum()
    }

    /// What `/api/v1/nodes/<node>/proxy/stats/summary` answers.
    pub fn set_summary(&self, node: &str, body: &str) {
        let mut st = self.state.lock().unwrap();
        st.summaries.insert(node.to_string(), body.to_string());
    }

    /// Waits (at most 20 s) until `n` watch requests have come.
    pub fn wait_for_watches(&self, n: u64) {
        let t0 = std::time::Instant::now();
        while self.count("watch") < n {
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "{} of {n} watches came: {:?}",
                self.count("watch"),
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn log(&self) -> Vec<String> {
        self.state.lock().unwrap().log.clone()
    }

    pub fn lease(&self, ns: &str, name: &str) -> Option<Value> {
        let st = self.state.lock().unwrap();
        st.leases.get(&(ns.to_string(), name.to_string())).cloned()
    }
}

fn count(state: &Mutex<State>, verb: &str, resource: &str, line: String) {
    let mut st = state.lock().unwrap();
    *st.counts.entry(format!("{verb} {resource}")).or_default() += 1;
    st.log.push(line);
}

async fn handle(
    req: Request<Body>,
    state: Arc<Mutex<State>>,
    changed: tokio::sync::watch::Sender<u64>,
    cut: tokio::sync::watch::Sender<u64>,
    token: &str,
) -> Response<Body> {
    let line = format!("{} {}", req.method(), req.uri());
    let bearer = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_string);
    let fault = {
        let mut st = state.lock().unwrap();
        if let Some(b) = &bearer {
            *st.tokens_seen.entry(b.clone()).or_default() += 1;
        }
        let authorized = bearer
            .as_deref()
            .is_some_and(|b| b == token || st.more_tokens.iter().any(|t| t == b));
        if !authorized {
            drop(st);
            count(&state, "unauthorized", "-", line);
            return status(401, "Unauthorized", "Unauthorized");
        }
        match &st.fault {
            Some((None, f)) => Some(f.clone()),
            Some((Some(t), f)) if bearer.as_deref() == Some(t.as_str()) => Some(f.clone()),
            _ => None,
        }
    };
    let is_watch = req
        .uri()
        .query()
        .is_some_and(|q| q.contains("watch=true") || q.contains("watch=1"));
    let is_lease = req.uri().path().contains("/leases");
    let is_pod_list =
        req.method() == Method::GET && !is_watch && req.uri().path().ends_with("/pods");
    match fault {
        Some(Fault::BadList(truncated)) if is_pod_list => {
            let body = if truncated {
                let q = Query::parse(req.uri().query());
                let whole = pods(&state, &changed, &cut, None, &q, line).await;
                let bytes = axum::body::to_bytes(whole.into_body(), usize::MAX)
                    .await
                    .unwrap();
                bytes.slice(..bytes.len() / 2)
            } else {
                count(&state, "list", "pods", line);
                Bytes::from_static(b"<html><head><title>502 Bad Gateway</title></head></html>")
            };
            return Response::builder()
                .header("content-type", "application/json")
                .body(Body::from(body))
                .unwrap();
        }
        Some(Fault::Status(code, retry_after)) => {
            count(&state, "faulted", "-", line.clone());
            let mut r = status(code, "Fault", "the test made this server refuse");
            if let Some(s) = retry_after {
                r.headers_mut()
                    .insert("retry-after", s.to_string().parse().unwrap());
            }
            return r;
        }
        Some(Fault::Leases(code)) if is_lease => {
            count(&state, "faulted", "leases", line.clone());
            return status(code, "Fault", "the test made this server refuse leases");
        }
        Some(Fault::Hang) => {
            count(&state, "faulted", "-", line.clone());
            std::future::pending::<()>().await;
        }
        Some(Fault::WatchEndsAtOnce) if is_watch => {
            count(&state, "watch", "pods", line.clone());
            return Response::builder()
                .header("content-type", "application/json")
                .body(Body::empty())
                .unwrap();
        }
        _ => {}
    }
    let q = Query::parse(req.uri().query());
    let path: Vec<String> = req
        .uri()
        .path()
        .split('/')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    let p: Vec<&str> = path.iter().map(String::as_str).collect();
    let method = req.method().clone();
    match (method.clone(), p.as_slice()) {
        (Method::GET, ["version"]) => {
            count(&state, "get", "version", line);
            ok(
                &json!({"major": "1", "minor": "34", "gitVersion": "v1.34.0",
                "gitCommit": "", "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z",
                "goVersion": "go1.26", "compiler": "gc", "platform": "linux/amd64"}),
            )
        }
        (Method::GET, ["api"]) => {
            count(&state, "get", "discovery", line);
            ok(&json!({"kind": "APIVersions", "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}))
        }
        (Method::GET, ["apis"]) => {
            count(&state, "get", "discovery", line);
            ok(
                &json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": [{
                "name": "coordination.k8s.io",
                "versions": [{"groupVersion": "coordination.k8s.io/v1", "version": "v1"}],
                "preferredVersion": {"groupVersion": "coordination.k8s.io/v1", "version": "v1"}}]}),
            )
        }
        (Method::GET, ["api", "v1"]) => {
            count(&state, "get", "discovery", line);
            ok(
                &json!({"kind": "APIResourceList", "groupVersion": "v1", "resources": [
                {"name": "pods", "singularName": "pod", "namespaced": true, "kind": "Pod",
                 "verbs": ["get", "list", "watch"], "shortNames": ["po"]},
                {"name": "namespaces", "singularName": "namespace", "namespaced": false,
                 "kind": "Namespace", "verbs": ["get"], "shortNames": ["ns"]}]}),
            )
        }
        (Method::GET, ["apis", "coordination.k8s.io", "v1"]) => {
            count(&state, "get", "discovery", line);
            ok(&json!({"kind": "APIResourceList", "apiVersion": "v1",
                "groupVersion": "coordination.k8s.io/v1", "resources": [
                {"name": "leases", "singularName": "lease", "namespaced": true, "kind": "Lease",
                 "verbs": ["create", "get", "list", "update"]}]}))
        }
        (Method::GET, ["api", "v1", "namespaces", ns]) => {
            count(&state, "get", "namespaces", line);
            let st = state.lock().unwrap();
            let known = ["default", "kube-system", "agentprof"].contains(ns)
                || st.pods.keys().any(|(n, _)| n == ns);
            if known {
                ok(&json!({"kind": "Namespace", "apiVersion": "v1",
                    "metadata": {"name": ns, "uid": format!("ns-{ns}")},
                    "status": {"phase": "Active"}}))
            } else {
                status(404, "NotFound", &format!("namespaces \"{ns}\" not found"))
            }
        }
        // The kubelet's stats through the API server's node proxy: the summary set for the node.
        (Method::GET, ["api", "v1", "nodes", node, "proxy", "stats", "summary"]) => {
            count(&state, "get", "nodes/proxy", line);
            let st = state.lock().unwrap();
            match st.summaries.get(*node) {
                Some(body) => Response::builder()
                    .header("content-type", "application/json")
                    .body(Body::from(body.clone()))
                    .unwrap(),
                None => status(404, "NotFound", &format!("nodes \"{node}\" not found")),
            }
        }
        (Method::GET, ["api", "v1", "pods"]) => pods(&state, &changed, &cut, None, &q, line).await,
        (Method::GET, ["api", "v1", "namespaces", ns, "pods"]) => {
            pods(&state, &changed, &cut, Some(ns), &q, line).await
        }
        (Method::GET, ["api", "v1", "namespaces", ns, "pods", name]) => {
            count(&state, "get", "pods", line);
            let st = state.lock().unwrap();
            match st.pods.get(&(ns.to_string(), name.to_string())) {
                Some(p) => ok(p),
                None => status(404, "NotFound", &format!("pods \"{name}\" not found")),
            }
        }
        (
            _,
            [
                "apis",
                "coordination.k8s.io",
                "v1",
                "namespaces",
                ns,
                "leases",
                rest @ ..,
            ],
        ) => {
            let ns = ns.to_string();
            let name = rest.first().map(|s| s.to_string());
            let body = axum::body::to_bytes(req.into_body(), 1 << 20).await;
            leases(&state, method, ns, name, body.ok(), line)
        }
        _ => {
            count(&state, "other", "-", line);
            status(
                404,
                "NotFound",
                "the server could not find the requested resource",
            )
        }
    }
}

fn leases(
    state: &Mutex<State>,
    method: Method,
    ns: String,
    name: Option<String>,
    body: Option<Bytes>,
    line: String,
) -> Response<Body> {
    let verb = match (&method, &name) {
        (&Method::GET, Some(_)) => "get",
        (&Method::GET, None) => "list",
        (&Method::POST, None) => "create",
        (&Method::PUT, Some(_)) => "update",
        _ => return status(405, "MethodNotAllowed", "not allowed"),
    };
    count(state, verb, "leases", line);
    let parsed: Option<Value> = body.and_then(|b| serde_json::from_slice(&b).ok());
    let mut st = state.lock().unwrap();
    match verb {
        "get" => {
            let name = name.unwrap();
            match st.leases.get(&(ns, name.clone())) {
                Some(l) => ok(l),
                None => status(
                    404,
                    "NotFound",
                    &format!("leases.coordination.k8s.io \"{name}\" not found"),
                ),
            }
        }
        "list" => {
            let items: Vec<Value> = st
                .leases
                .iter()
                .filter(|((n, _), _)| *n == ns)
                .map(|(_, v)| v.clone())
                .collect();
            let rv = st.rv.to_string();
            ok(
                &json!({"kind": "LeaseList", "apiVersion": "coordination.k8s.io/v1",
                "metadata": {"resourceVersion": rv}, "items": items}),
            )
        }
        "create" => {
            let Some(mut l) = parsed else {
                return status(400, "BadRequest", "the body is not a Lease");
            };
            let Some(name) = l["metadata"]["name"].as_str().map(str::to_string) else {
                return status(422, "Invalid", "metadata.name: Required value");
            };
            if let Some(bad) = invalid_lease(&l) {
                return status(422, "Invalid", &bad);
            }
            if st.leases.contains_key(&(ns.clone(), name.clone())) {
                return status(
                    409,
                    "AlreadyExists",
                    &format!("leases.coordination.k8s.io \"{name}\" already exists"),
                );
            }
            st.rv += 1;
            l["metadata"]["resourceVersion"] = st.rv.to_string().into();
            l["metadata"]["namespace"] = ns.clone().into();
            l["metadata"]["uid"] = format!("lease-{}", st.rv).into();
            st.leases.insert((ns, name), l.clone());
            Response::builder()
                .status(StatusCode::CREATED)
                .header("content-type", "application/json")
                .body(Body::from(l.to_string()))
                .unwrap()
        }
        _ => {
            let name = name.unwrap();
            let Some(mut l) = parsed else {
                return status(400, "BadRequest", "the body is not a Lease");
            };
            if let Some(bad) = invalid_lease(&l) {
                return status(422, "Invalid", &bad);
            }
            let key = (ns, name.clone());
            let Some(cur) = st.leases.get(&key).cloned() else {
                return status(
                    404,
                    "NotFound",
                    &format!("leases.coordination.k8s.io \"{name}\" not found"),
                );
            };
            if l["metadata"]["resourceVersion"] != cur["metadata"]["resourceVersion"] {
                return status(
                    409,
                    "Conflict",
                    &format!(
                        "Operation cannot be fulfilled on leases.coordination.k8s.io \"{name}\": \
                         the object has been modified; please apply your changes to the latest \
                         version and try again"
                    ),
                );
            }
            st.rv += 1;
            l["metadata"]["resourceVersion"] = st.rv.to_string().into();
            l["metadata"]["uid"] = cur["metadata"]["uid"].clone();
            st.leases.insert(key, l.clone());
            ok(&l)
        }
    }
}

/// What the real API server's validation refuses in a Lease's spec.
fn invalid_lease(l: &Value) -> Option<String> {
    let spec = &l["spec"];
    if spec["leaseTransitions"].as_i64().is_some_and(|n| n < 0) {
        return Some(format!(
            "Lease.coordination.k8s.io \"{}\" is invalid: spec.leaseTransitions: Invalid value: {}: must be greater than or equal to 0",
            l["metadata"]["name"].as_str().unwrap_or(""),
            spec["leaseTransitions"]
        ));
    }
    if spec["leaseDurationSeconds"]
        .as_i64()
        .is_some_and(|n| n <= 0)
    {
        return Some("spec.leaseDurationSeconds: must be greater than 0".into());
    }
    None
}

async fn pods(
    state: &Arc<Mutex<State>>,
    changed: &tokio::sync::watch::Sender<u64>,
    cut: &tokio::sync::watch::Sender<u64>,
    ns: Option<&str>,
    q: &Query,
    line: String,
) -> Response<Body> {
    let filter = match Filter::new(ns, q) {
        Ok(f) => f,
        Err(why) => return status(400, "BadRequest", &why),
    };
    let watch = matches!(q.get("watch"), Some("true" | "1"));
    if watch {
        count(state, "watch", "pods", line);
        if state.lock().unwrap().watch_paused {
            return status(503, "ServiceUnavailable", "the server is restarting");
        }
        return watch_pods(state, changed, cut, filter, q);
    }
    count(state, "list", "pods", line);
    let st = state.lock().unwrap();
    let limit: usize = q
        .get("limit")
        .and_then(|l| l.parse().ok())
        .filter(|&l| l > 0)
        .unwrap_or(usize::MAX);
    // A continue token: the list's resourceVersion and the last key returned.
    let (list_rv, after) = match q.get("continue").filter(|c| !c.is_empty()) {
        Some(c) => {
            let Some((rv, key)) = c.split_once('|') else {
                return status(400, "BadRequest", "invalid continue token");
            };
            let rv: u64 = rv.parse().unwrap_or(0);
            if rv < st.compacted {
                return status(
                    410,
                    "Expired",
                    "The provided continue parameter is too old to display a consistent list result.",
                );
            }
            let (a, b) = key.split_once('/').unwrap_or(("", ""));
            (rv, Some((a.to_string(), b.to_string())))
        }
        None => (st.rv, None),
    };
    let matching: Vec<(&Key, &Value)> = st
        .pods
        .iter()
        .filter(|(k, _)| after.as_ref().is_none_or(|a| *k > a))
        .filter(|(_, p)| filter.matches(p))
        .collect();
    let page: Vec<Value> = matching
        .iter()
        .take(limit)
        .map(|(_, p)| (*p).clone())
        .collect();
    let more = matching.len() > limit;
    let mut meta = json!({"resourceVersion": list_rv.to_string()});
    if more {
        let (k, _) = matching[limit - 1];
        meta["continue"] = format!("{list_rv}|{}/{}", k.0, k.1).into();
        meta["remainingItemCount"] = (matching.len() - limit).into();
    }
    ok(&json!({"kind": "PodList", "apiVersion": "v1", "metadata": meta, "items": page}))
}

fn watch_pods(
    state: &Arc<Mutex<State>>,
    changed: &tokio::sync::watch::Sender<u64>,
    cut: &tokio::sync::watch::Sender<u64>,
    filter: Filter,
    q: &Query,
) -> Response<Body> {
    let bookmarks = q.get("allowWatchBookmarks") == Some("true");
    // A streaming list (client-go's WatchList): the current objects as ADDED events, then a
    // bookmark marking their end, then the changes.
    let initial = q.get("sendInitialEvents") == Some("true");
    if initial && (q.get("resourceVersionMatch") != Some("NotOlderThan") || !bookmarks) {
        return status(
            422,
            "Invalid",
            "sendInitialEvents requires resourceVersionMatch=NotOlderThan and allowWatchBookmarks=true",
        );
    }
    let (from, initial_events) = {
        let st = state.lock().unwrap();
        let asked = q
            .get("resourceVersion")
            .filter(|s| !s.is_empty() && *s != "0" && !initial);
        let from: u64 = match asked {
            Some(s) => match s.parse() {
                Ok(n) => n,
                Err(_) => return status(400, "BadRequest", "invalid resourceVersion"),
            },
            None => st.rv,
        };
        let mut events: Vec<Value> = Vec::new();
        if initial {
            events.extend(
                st.pods
                    .values()
                    .filter(|p| filter.matches(p))
                    .map(|p| json!({"type": "ADDED", "object": p})),
            );
            events.push(
                json!({"type": "BOOKMARK", "object": {"kind": "Pod", "apiVersion": "v1",
                "metadata": {"resourceVersion": from.to_string(),
                    "annotations": {"k8s.io/initial-events-end": "true"}}}}),
            );
        }
        (from, events)
    };
    let timeout = q
        .get("timeoutSeconds")
        .and_then(|t| t.parse().ok())
        .map_or(Duration::from_secs(1800), Duration::from_secs);
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(64);
    let (state, mut changed, mut cut) = (Arc::clone(state), changed.subscribe(), cut.subscribe());
    cut.mark_unchanged();
    tokio::spawn(async move {
        let line = |v: Value| Bytes::from(format!("{v}\n"));
        let mut sent = from;
        let compacted = state.lock().unwrap().compacted;
        if from < compacted {
            let err = json!({"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1",
                "metadata": {}, "status": "Failure",
                "message": format!("too old resource version: {from} ({})", compacted + 1),
                "reason": "Expired", "code": 410}});
            let _ = tx.send(line(err)).await;
            return;
        }
        for e in initial_events {
            if tx.send(line(e)).await.is_err() {
                return;
            }
        }
        let end = tokio::time::Instant::now() + timeout;
        let mut bookmark = tokio::time::interval(Duration::from_secs(10));
        bookmark.tick().await;
        let mut flood_tick = tokio::time::interval(FLOOD_TICK);
        flood_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut template: Vec<String> = Vec::new();
        loop {
            let out: Vec<Value> = {
                let st = state.lock().unwrap();
                let v = st
                    .events
                    .iter()
                    .filter(|(rv, _, _)| *rv > sent)
                    .filter(|(_, _, p)| filter.matches(p))
                    .map(|(_, t, p)| json!({"type": t, "object": p}))
                    .collect();
                sent = st.rv;
                v
            };
            for e in out {
                if tx.send(line(e)).await.is_err() {
                    return;
                }
            }
            tokio::select! {
                _ = changed.changed() => {}
                _ = cut.changed() => return,
                _ = tokio::time::sleep_until(end) => return,
                _ = flood_tick.tick() => {
                    let Some(batch) = flood_batch(&state, &filter, &mut template) else {
                        continue;
                    };
                    let n = batch.1;
                    if tx.send(batch.0).await.is_err() {
                        return;
                    }
                    state.lock().unwrap().flooded += n;
                }
                _ = bookmark.tick(), if bookmarks => {
                    let b = json!({"type": "BOOKMARK", "object": {"kind": "Pod", "apiVersion": "v1",
                        "metadata": {"resourceVersion": sent.to_string(),
                            "annotations": {"k8s.io/initial-events-end": "false"}}}});
                    if tx.send(line(b)).await.is_err() {
                        return;
                    }
                }
            }
        }
    });
    Response::builder()
        .header("content-type", "application/json")
        .header("transfer-encoding", "chunked")
        .body(Body::new(Lines(rx)))
        .unwrap()
}

/// How often a flooding watch sends a batch.
const FLOOD_TICK: Duration = Duration::from_millis(10);

/// The next batch of flood events for a watch (its lines, how many), while a flood lasts:
/// MODIFIED events of the first pod the watch sees, each with a new resourceVersion. The
/// pod is serialised once (`template`: its text split where the version goes).
fn flood_batch(
    state: &Mutex<State>,
    filter: &Filter,
    template: &mut Vec<String>,
) -> Option<(Bytes, u64)> {
    let mut st = state.lock().unwrap();
    let (per_second, until) = st.flood?;
    if std::time::Instant::now() >= until {
        st.flood = None;
        return None;
    }
    if template.is_empty() {
        let mut pod = st.pods.values().find(|p| filter.matches(p))?.clone();
        pod["metadata"]["resourceVersion"] = "@RV@".into();
        pod["metadata"]["annotations"]["flood"] = "@RV@".into();
        let ev = json!({"type": "MODIFIED", "object": pod}).to_string();
        *template = ev.split("@RV@").map(str::to_string).collect();
    }
    let n = (per_second * FLOOD_TICK.as_millis() as u64 / 1000).max(1);
    let size: usize = template.iter().map(String::len).sum::<usize>() + 40;
    let mut out = String::with_capacity(size * n as usize);
    for _ in 0..n {
        st.rv += 1;
        let rv = st.rv.to_string();
        out.push_str(&template.join(&rv));
        out.push('\n');
    }
    Some((Bytes::from(out), n))
}

/// A pod as the API server holds it once scheduled on `node` and running: one container per
/// name in `containers` (each `(name, [(port name, port)])`), all Ready.
pub fn pod(
    ns: &str,
    name: &str,
    uid: &str,
    node: &str,
    ip: &str,
    labels: Value,
    containers: &[(&str, &[(&str, u16)])],
) -> Value {
    let specs: Vec<Value> = containers
        .iter()
        .map(|(c, ports)| {
            let ports: Vec<Value> = ports
                .iter()
                .map(|(n, p)| json!({"name": n, "containerPort": p, "protocol": "TCP"}))
                .collect();
            json!({"name": c, "image": "pprofsvc", "ports": ports})
        })
        .collect();
    let statuses: Vec<Value> = containers
        .iter()
        .map(|(c, _)| {
            json!({"name": c, "ready": true, "restartCount": 0, "image": "pprofsvc",
                "imageID": "", "started": true,
                "state": {"running": {"startedAt": "2026-12-01T00:00:00Z"}}})
        })
        .collect();
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "uid": uid, "labels": labels,
            "creationTimestamp": "2026-12-01T00:00:00Z"},
        "spec": {"nodeName": node, "containers": specs},
        "status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
            "containerStatuses": statuses}})
}
