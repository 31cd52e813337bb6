//! `agentprof k8s` against a real kube-apiserver and etcd (tests/cli/k8s/realcluster.rs),
//! as the DaemonSet's ServiceAccount.

use std::path::Path;
use std::time::Instant;

use serde_json::{Value, json};

use super::realcluster::{RealCluster, kube_apiserver, requests_of};
use crate::support::Sandbox;

fn pod_manifest(name: &str, port: u16) -> Value {
    super::realcluster::pod_manifest("shop", name, "web", super::collect::NODE, port)
}

const SA: &str = "system:serviceaccount:agentprof:agentprof";

/// deploy/kubernetes/ applied to an empty cluster (server-side dry run, then for real) with
/// no Pod Security warning; `k8s targets` and `k8s` as the DaemonSet's ServiceAccount: no
/// 403 anywhere in the audit log, pods listed in pages with the node's field selector, one
/// WATCH, the Lease created and renewed by that identity; pods not Running or not Ready
/// show their skip reason; a pod deleted with kubectl is removed; kube-apiserver restarted
/// after etcd is compacted (the watch gets 410 and relists once), and a pod created then is
/// collected.
#[test]
fn against_a_real_kube_apiserver_as_the_daemonsets_service_account() {
    let t_test = Instant::now();
    let sb = Sandbox::new();
    let bin = match kube_apiserver() {
        Ok(b) => b,
        Err(why) => return crate::support::skip(&why),
    };
    let mut c = RealCluster::start(bin, sb.path());
    let deploy = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/kubernetes/");
    let deploy = deploy.to_str().unwrap();
    // A server-side dry run on the empty cluster fails (the namespace does not exist yet):
    // kubectl's limit, which the README states next to the apply.
    let (ok, text) = c.kubectl_status(&["apply", "--dry-run=server", "-f", deploy]);
    assert!(
        !ok && text.contains("namespaces \"agentprof\" not found"),
        "{text}"
    );
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    assert!(readme.contains("`kubectl apply --dry-run=server -f deploy/kubernetes/` fails"));
    // The README's command on an empty cluster; then the server's own validation of every
    // object as it stands.
    let (out, warnings) = c.kubectl(&["apply", "-f", deploy], None);
    assert!(out.contains("daemonset.apps/agentprof created"), "{out}");
    assert!(!warnings.contains("PodSecurity"), "{warnings}");
    let (dry, _) = c.kubectl(&["apply", "--dry-run=server", "-f", deploy], None);
    assert!(dry.contains("(server dry run)"), "{dry}");
    c.kubectl(&["create", "namespace", "shop"], None);
    c.kubectl(&["-n", "shop", "create", "serviceaccount", "default"], None);
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
    let token = token.trim().to_string();
    let kc = sb.file("sa.kubeconfig");
    c.kubeconfig(&kc, &token, "agentprof");
    // Least privilege, as the API server's authorizer decides: its node's Lease in its own
    // namespace, no Lease elsewhere (kube-system's leader elections), pods read-only.
    let can = |args: &[&str]| {
        let mut all = vec!["auth", "can-i"];
        all.extend_from_slice(args);
        all.push("--as=system:serviceaccount:agentprof:agentprof");
        let (yes, text) = c.kubectl_status(&all);
        assert!(
            text.starts_with("yes") || text.starts_with("no"),
            "{args:?}: {text}"
        );
        yes
    };
    assert!(can(&["update", "leases", "-n", "agentprof"]));
    assert!(can(&["create", "leases", "-n", "agentprof"]));
    assert!(!can(&["update", "leases", "-n", "kube-system"]));
    assert!(!can(&["create", "leases", "-n", "default"]));
    assert!(can(&["watch", "pods", "--all-namespaces"]));
    assert!(!can(&["delete", "pods", "-n", "shop"]));
    assert!(!can(&["get", "secrets", "-n", "agentprof"]));
    // Three Running, Ready pods with real Go services; one Pending, one Running not Ready.
    let port = 16210;
    let mut procs = Vec::new();
    for i in 0..3 {
        let ip = format!("127.0.3.{}", 10 + i);
        procs.push(super::collect::pod_process(&format!("{ip}:{port}")).unwrap());
    }
    let pods: Vec<Value> = (0..5)
        .map(|i| pod_manifest(&format!("web-{i}"), port))
        .collect();
    c.kubectl(
        &["apply", "-f", "-"],
        Some(&json!({"apiVersion": "v1", "kind": "List", "items": pods}).to_string()),
    );
    for i in 0..3 {
        c.set_running(
            "shop",
            &format!("web-{i}"),
            &format!("127.0.3.{}", 10 + i),
            true,
        );
    }
    c.set_running("shop", "web-4", "127.0.3.14", false);
    sb.write("kt", &token);
    let kubelet = super::kubelet::Kubelet::start(sb.path(), &token, super::collect::NODE).unwrap();
    for (i, p) in procs.iter().enumerate() {
        let uid: Value = serde_json::from_str(
            &c.kubectl(
                &[
                    "-n",
                    "shop",
                    "get",
                    "pod",
                    &format!("web-{i}"),
                    "-o",
                    "json",
                ],
                None,
            )
            .0,
        )
        .unwrap();
        let uid = uid["metadata"]["uid"].as_str().unwrap().to_string();
        kubelet.add("shop", &format!("web-{i}"), &uid, "app", p.pid);
    }
    // The cluster's token reaches the kubelet (no kubelet_token_file).
    super::collect::profile_yaml(
        &sb,
        &format!(
            "  kubelet_url: {}\n  kubelet_client_ca: {}\n",
            kubelet.url(),
            kubelet.ca.display()
        ),
        "  - selector: app=web\n    port: pprof\n    interval: 10s\n    \
         scheduled_types: [goroutine]\n    monitor_interval: 2s\n    mem_usage_bytes: 100Gi\n",
    );
    // `k8s targets` as the ServiceAccount: the three targets and why the others are not.
    let targets = sb.run_env(
        &[
            "k8s",
            "targets",
            "--json",
            "--kubeconfig",
            kc.to_str().unwrap(),
            "--node",
            super::collect::NODE,
            "--confd",
            "conf.d",
        ],
        &[("POD_NAMESPACE", "agentprof")],
    );
    assert_eq!(targets.code, 0, "{}", targets.stderr);
    let doc = targets.json();
    // Four targets, one of them waiting for its container to be Ready.
    assert_eq!(doc["targets"], 4, "{doc:#}");
    let reasons: Vec<&str> = doc["pods"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["skipped"].as_array().unwrap().iter())
        .filter_map(|s| s["reason"].as_str())
        .collect();
    assert!(
        reasons.contains(&"not_running"),
        "web-3 is Pending: {doc:#}"
    );
    assert!(
        reasons.contains(&"not_ready"),
        "web-4 is not Ready: {doc:#}"
    );
    let web4 = doc["pods"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pod"] == "web-4")
        .unwrap();
    assert_eq!(
        web4["targets"][0]["ready"], false,
        "web-4 is not Ready: {web4:#}"
    );
    // The collector as the DaemonSet runs it.
    let mut run = super::collect::Running::start_env(
        &sb,
        &kc,
        &[],
        &[
            ("POD_NAMESPACE", "agentprof"),
            ("POD_NAME", "agentprof-node-a"),
        ],
    );
    run.wait("leader", |v| v["event"] == "leader");
    run.wait("synced", |v| v["event"] == "synced" && v["targets"] == 4);
    for i in 0..3 {
        let pod = format!("web-{i}");
        run.wait_for("a capture of each Ready pod", 20, |v| {
            v["event"] == "capture" && v["capture"]["pod"] == pod.as_str()
        });
    }
    let watches_before = requests_of(&c.audit(), SA)
        .iter()
        .filter(|e| e["verb"] == "watch" && e["stage"] == "ResponseStarted")
        .count();
    c.kubectl(
        &["-n", "shop", "delete", "pod", "web-2", "--wait=false"],
        None,
    );
    // Deleted gracefully: terminating (no kubelet confirms it), and no longer a target.
    run.wait("web-2 removed", |v| {
        v["event"] == "removed" && v["target"].as_str().unwrap().contains("127.0.3.12:")
    });
    // A control-plane restart with etcd compacted meanwhile: the watch's version is gone.
    let lists_before = requests_of(&c.audit(), SA)
        .iter()
        .filter(|e| e["verb"] == "list" && e["objectRef"]["resource"] == "pods")
        .count();
    c.stop_apiserver();
    c.compact_etcd();
    let restart = Instant::now();
    c.start_apiserver();
    let p9 = super::collect::pod_process(&format!("127.0.3.19:{port}")).unwrap();
    c.kubectl(
        &["apply", "-f", "-"],
        Some(&pod_manifest("web-9", port).to_string()),
    );
    c.set_running("shop", "web-9", "127.0.3.19", true);
    run.wait_for("web-9 captured", 60, |v| {
        v["event"] == "capture" && v["capture"]["pod"] == "web-9"
    });
    let recovered = restart.elapsed().as_secs_f64();
    let exit = run.sigterm_timed();
    drop(p9);
    let audit = c.audit();
    let mine = requests_of(&audit, SA);
    // No 403: RBAC grants everything agentprof asks. (Right after its restart an API server
    // may refuse a request or two while its authorizer's caches fill: those are not RBAC's.)
    let restarted_at = jiff::Timestamp::now()
        - jiff::SignedDuration::from_secs_f64(restart.elapsed().as_secs_f64());
    let refused: Vec<&&Value> = mine
        .iter()
        .filter(|e| e["responseStatus"]["code"] == 403)
        .filter(|e| {
            let at: jiff::Timestamp = e["requestReceivedTimestamp"]
                .as_str()
                .unwrap()
                .parse()
                .unwrap();
            at < restarted_at || at.duration_since(restarted_at).as_secs_f64() > 10.0
        })
        .collect();
    assert!(refused.is_empty(), "403s: {refused:#?}");
    let lists: Vec<&&Value> = mine
        .iter()
        .filter(|e| e["verb"] == "list" && e["objectRef"]["resource"] == "pods")
        .collect();
    for l in &lists {
        let uri = l["requestURI"].as_str().unwrap();
        assert!(
            uri.contains("fieldSelector=spec.nodeName%3Dnode-a") && uri.contains("limit=50"),
            "{uri}"
        );
    }
    assert!(
        lists.len() > lists_before,
        "the watch's 410 after the restart relisted: {} then {}",
        lists_before,
        lists.len()
    );
    assert_eq!(watches_before, 1, "one WATCH at start");
    assert!(
        !mine
            .iter()
            .any(|e| e["verb"] == "get" && e["objectRef"]["resource"] == "pods"),
        "no per-pod GET"
    );
    let lease = |verb: &str| {
        mine.iter()
            .filter(|e| e["verb"] == verb && e["objectRef"]["resource"] == "leases")
            .count()
    };
    assert!(
        lease("create") == 1 && lease("update") >= 1,
        "{}",
        lease("update")
    );
    let mut by: std::collections::BTreeMap<String, usize> = Default::default();
    for e in &mine {
        if e["stage"] == "ResponseComplete"
            || e["verb"] == "watch" && e["stage"] == "ResponseStarted"
        {
            *by.entry(format!(
                "{} {}",
                e["verb"].as_str().unwrap(),
                e["objectRef"]["resource"].as_str().unwrap_or("-")
            ))
            .or_default() += 1;
        }
    }
    eprintln!(
        "measured: real kube-apiserver: the ServiceAccount's requests {by:?}; a pod created after a restart with etcd compacted captured {recovered:.1} s after the restart; exit {exit:.2} s after SIGTERM; the test took {:.0} s",
        t_test.elapsed().as_secs_f64()
    );
    assert!(exit <= 2.0, "{exit:.2} s");
}
