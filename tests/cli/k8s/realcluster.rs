//! A real control plane for the k8s tests and `examples/k8s_real_bench.rs`: kube-apiserver (k8s.io/kubernetes from the Go module proxy, built
//! once per machine by scripts/kube-apiserver.sh) on 127.0.0.1, backed by Debian's etcd,
//! with `--authorization-mode=Node,RBAC`, a static token file for the admin, service-account
//! signing keys (so `kubectl create token` mints the DaemonSet's token) and an audit log of
//! every request. deploy/kubernetes/ is applied as a user applies it; agentprof runs as the
//! DaemonSet's ServiceAccount; pods are created with kubectl and their status set through
//! the status subresource; their pprof endpoints are real Go services on 127.0.N.M. The
//! kubelet stays the loopback one (the API server refuses to proxy to a loopback node).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// A free TCP port on 127.0.0.1 (bound and released: the server that takes it comes soon).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The kube-apiserver binary, built by scripts/kube-apiserver.sh if it is not yet (.ci/run
/// builds it first); Err names what is missing to run a real control plane.
pub fn kube_apiserver() -> Result<PathBuf, String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let have = |c: &str| {
        Command::new(c)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok()
    };
    for (tool, why) in [
        ("etcd", "Debian's etcd-server"),
        ("kubectl", "kubectl"),
        ("go", "go (builds kube-apiserver)"),
    ] {
        if !have(tool) {
            return Err(format!("{why} is not installed"));
        }
    }
    let out = Command::new(root.join("scripts/kube-apiserver.sh"))
        .current_dir(root)
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    if !out.status.success() {
        return Err("scripts/kube-apiserver.sh failed".into());
    }
    Ok(PathBuf::from(String::from_utf8(out.stdout).unwrap().trim()))
}

pub struct RealCluster {
    dir: PathBuf,
    bin: PathBuf,
    pub port: u16,
    etcd_port: u16,
    etcd: Child,
    apiserver: Option<Child>,
    pub ca: PathBuf,
    pub admin: PathBuf,
}

impl Drop for RealCluster {
    fn drop(&mut self) {
        if let Some(mut a) = self.apiserver.take() {
            let _ = a.kill();
            let _ = a.wait();
        }
        let _ = self.etcd.kill();
        let _ = self.etcd.wait();
    }
}

impl RealCluster {
    /// etcd and kube-apiserver under `dir`, ready.
    pub fn start(bin: PathBuf, dir: &Path) -> RealCluster {
        let dir = dir.join("cluster");
        std::fs::create_dir_all(&dir).unwrap();
        let (ca, _, _) = super::tls::ca_signed(&dir, "apiserver");
        let openssl = |args: &[&str]| {
            let st = Command::new("openssl")
                .args(args)
                .current_dir(&dir)
                .stderr(Stdio::null())
                .status()
                .unwrap();
            assert!(st.success());
        };
        openssl(&["genrsa", "-out", "sa.key", "2048"]);
        openssl(&["rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub"]);
        std::fs::write(
            dir.join("tokens.csv"),
            "admin-token,admin,admin-uid,system:masters\n",
        )
        .unwrap();
        std::fs::write(
            dir.join("audit-policy.yaml"),
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\n\
             rules:\n- level: Metadata\n",
        )
        .unwrap();
        let etcd_port = free_port();
        let etcd = Command::new("etcd")
            .arg("--data-dir")
            .arg(dir.join("etcd"))
            .arg(format!("--listen-client-urls=http://127.0.0.1:{etcd_port}"))
            .arg(format!(
                "--advertise-client-urls=http://127.0.0.1:{etcd_port}"
            ))
            .arg(format!(
                "--listen-peer-urls=http://127.0.0.1:{}",
                free_port()
            ))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("etcd.log")).unwrap())
            .spawn()
            .unwrap();
        let admin = dir.join("admin.kubeconfig");
        let mut c = RealCluster {
            dir,
            bin,
            port: free_port(),
            etcd_port,
            etcd,
            apiserver: None,
            ca,
            admin,
        };
        c.kubeconfig(&c.admin.clone(), "admin-token", "default");
        c.start_apiserver();
        c
    }

    pub fn url(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }

    /// Starts kube-apiserver (again, on the same port) and waits until it is ready.
    pub fn start_apiserver(&mut self) {
        let d = &self.dir;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(d.join("kube-apiserver.log"))
            .unwrap();
        let child = Command::new(&self.bin)
            .current_dir(d)
            .arg(format!(
                "--etcd-servers=http://127.0.0.1:{}",
                self.etcd_port
            ))
            .args(["--bind-address=127.0.0.1", "--advertise-address=127.0.0.1"])
            .arg(format!("--secure-port={}", self.port))
            .arg("--endpoint-reconciler-type=none")
            .args([
                "--tls-cert-file=apiserver.pem",
                "--tls-private-key-file=apiserver-key.pem",
            ])
            .args(["--client-ca-file=ca.pem", "--token-auth-file=tokens.csv"])
            .arg("--authorization-mode=Node,RBAC")
            .arg("--service-account-issuer=https://kubernetes.default.svc.cluster.local")
            .args([
                "--service-account-key-file=sa.pub",
                "--service-account-signing-key-file=sa.key",
            ])
            .arg("--service-cluster-ip-range=10.96.0.0/12")
            .args([
                "--audit-log-path=audit.log",
                "--audit-policy-file=audit-policy.yaml",
            ])
            .arg("--cert-dir=certs")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        self.apiserver = Some(child);
        let client = self.admin_client();
        let t0 = Instant::now();
        loop {
            let ok = client
                .get(format!("{}/readyz", self.url()))
                .bearer_auth("admin-token")
                .send()
                .is_ok_and(|r| r.status().is_success());
            if ok {
                return;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "kube-apiserver not ready in 60 s; see {}",
                d.join("kube-apiserver.log").display()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Stops kube-apiserver (SIGTERM, as a control-plane restart does).
    pub fn stop_apiserver(&mut self) {
        if let Some(mut a) = self.apiserver.take() {
            unsafe { libc::kill(a.id() as i32, libc::SIGTERM) };
            let _ = a.wait();
        }
    }

    /// Compacts etcd's history up to now: watches from an older resourceVersion get 410.
    pub fn compact_etcd(&self) {
        let c = reqwest::blocking::Client::new();
        let base = format!("http://127.0.0.1:{}/v3/kv", self.etcd_port);
        let r: Value = serde_json::from_str(
            &c.post(format!("{base}/range"))
                .body(r#"{"key":"AA=="}"#)
                .send()
                .unwrap()
                .text()
                .unwrap(),
        )
        .unwrap();
        let rev = r["header"]["revision"].as_str().unwrap().to_string();
        let st = c
            .post(format!("{base}/compaction"))
            .body(format!(r#"{{"revision":"{rev}","physical":true}}"#))
            .send()
            .unwrap()
            .status();
        assert!(st.is_success(), "{st}");
    }

    fn admin_client(&self) -> reqwest::blocking::Client {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let pem = std::fs::read(&self.ca).unwrap();
        reqwest::blocking::Client::builder()
            .tls_certs_only(reqwest::Certificate::from_pem_bundle(&pem).unwrap())
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap()
    }

    /// A kubeconfig at `path` for this cluster whose user is `token`.
    pub fn kubeconfig(&self, path: &Path, token: &str, namespace: &str) {
        std::fs::write(
            path,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: real\n  cluster:\n    \
                 server: {}\n    certificate-authority: {}\ncontexts:\n- name: real\n  \
                 context:\n    cluster: real\n    user: u\n    namespace: {namespace}\n\
                 current-context: real\nusers:\n- name: u\n  user:\n    token: {token}\n",
                self.url(),
                self.ca.display()
            ),
        )
        .unwrap();
    }

    /// kubectl as the admin; its output (stdout, stderr), panicking when it fails.
    /// kubectl's exit and its stdout and stderr together, whatever the exit.
    pub fn kubectl_status(&self, args: &[&str]) -> (bool, String) {
        let out = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&self.admin)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    }

    pub fn kubectl(&self, args: &[&str], stdin: Option<&str>) -> (String, String) {
        let mut child = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&self.admin)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        if let Some(s) = stdin {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(s.as_bytes()).unwrap();
        }
        drop(child.stdin.take());
        let out = child.wait_with_output().unwrap();
        let (o, e) = (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        );
        assert!(out.status.success(), "kubectl {args:?}: {o}{e}");
        (o, e)
    }

    /// Sets a pod's status through the status subresource: Running on `ip`, Ready or not.
    pub fn set_running(&self, ns: &str, name: &str, ip: &str, ready: bool) {
        let now = jiff::Timestamp::now().to_string();
        let flag = if ready { "True" } else { "False" };
        let status = json!({"status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
            "hostIP": "127.0.0.1", "startTime": now,
            "conditions": [{"type": "Ready", "status": flag, "lastTransitionTime": now},
                {"type": "ContainersReady", "status": flag, "lastTransitionTime": now}],
            "containerStatuses": [{"name": "app", "ready": ready, "restartCount": 0,
                "image": "pprofsvc", "imageID": "", "started": true,
                "state": {"running": {"startedAt": now}}}]}});
        let r = self
            .admin_client()
            .patch(format!(
                "{}/api/v1/namespaces/{ns}/pods/{name}/status",
                self.url()
            ))
            .bearer_auth("admin-token")
            .header("content-type", "application/merge-patch+json")
            .body(status.to_string())
            .send()
            .unwrap();
        assert!(r.status().is_success(), "{}", r.text().unwrap());
    }

    /// The audit log's events (ResponseStarted for watches, ResponseComplete for all).
    pub fn audit(&self) -> Vec<Value> {
        std::fs::read_to_string(self.dir.join("audit.log"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }
}

/// A pod of `app` in `ns` on `node`, its container `app` declaring the pprof port.
pub fn pod_manifest(ns: &str, name: &str, app: &str, node: &str, port: u16) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": {"app": app}},
        "spec": {"nodeName": node, "automountServiceAccountToken": false,
            "containers": [{"name": "app", "image": "pprofsvc",
                "ports": [{"name": "pprof", "containerPort": port, "protocol": "TCP"}]}]}})
}

/// The requests of `user` in the audit log: (verb, resource, code, requestURI, stage).
pub fn requests_of<'a>(audit: &'a [Value], user: &str) -> Vec<&'a Value> {
    audit
        .iter()
        .filter(|e| e["user"]["username"] == user)
        .collect()
}
