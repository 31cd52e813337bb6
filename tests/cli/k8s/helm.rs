//! deploy/helm/agentprof with a real Helm v4 (helm.sh/helm/v4 from the Go module proxy,
//! built once per machine by scripts/helm.sh): `helm lint` is clean, the rendered objects
//! are the plain manifests' (least privilege: leases only through a Role in the release's
//! namespace), values that make no sense fail `helm template` with the value's name, and the
//! chart installs on a real kube-apiserver where the ServiceAccount holds what it should
//! and nothing else.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{ConfigMap, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use serde_json::Value;

use super::realcluster::{RealCluster, kube_apiserver};
use crate::support::{Sandbox, skip};

fn chart() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/helm/agentprof")
}

/// Helm, built by scripts/helm.sh if it is not yet (.ci/run builds it first); None (a
/// failure under CI) when it cannot be had.
#[track_caller]
fn helm() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let go = Command::new("go")
        .arg("version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !go {
        skip("go is not installed, so Helm cannot be built");
        return None;
    }
    let out = Command::new(root.join("scripts/helm.sh"))
        .current_dir(root)
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    if !out.status.success() {
        skip("scripts/helm.sh failed");
        return None;
    }
    Some(PathBuf::from(String::from_utf8(out.stdout).unwrap().trim()))
}

/// `helm ARGS`: its exit and its stdout and stderr together.
fn run(helm: &Path, args: &[&str]) -> (bool, String) {
    let out = Command::new(helm)
        .args(args)
        .env(
            "HELM_CACHE_HOME",
            std::env::temp_dir().join("agentprof-helm-cache"),
        )
        .env(
            "HELM_CONFIG_HOME",
            std::env::temp_dir().join("agentprof-helm-config"),
        )
        .env(
            "HELM_DATA_HOME",
            std::env::temp_dir().join("agentprof-helm-data"),
        )
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// The chart rendered with the test values and `more` flags.
fn template(helm: &Path, more: &[&str]) -> (bool, String) {
    let chart = chart();
    let values = chart.join("ci/test-values.yaml");
    let mut args = vec![
        "template",
        "agentprof",
        chart.to_str().unwrap(),
        "-n",
        "agentprof",
        "-f",
        values.to_str().unwrap(),
    ];
    args.extend_from_slice(more);
    run(helm, &args)
}

fn strict<T: serde::de::DeserializeOwned>(v: &Value) -> T {
    serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{e}: {v:#}"))
}

#[test]
fn the_chart_lints_renders_least_privilege_and_refuses_values_that_make_no_sense() {
    let Some(helm) = helm() else { return };
    let values = chart().join("ci/test-values.yaml");
    let (ok, out) = run(
        &helm,
        &[
            "lint",
            chart().to_str().unwrap(),
            "--strict",
            "-f",
            values.to_str().unwrap(),
        ],
    );
    assert!(ok && out.contains("0 chart(s) failed"), "{out}");

    let (ok, out) = template(&helm, &[]);
    assert!(ok, "{out}");
    let docs: Vec<Value> = out
        .split("\n---")
        .filter(|d| d.lines().any(|l| l.starts_with("kind:")))
        .map(|d| serde_yaml_ng::from_str(d).unwrap())
        .collect();
    let of = |kind: &str| -> Vec<&Value> { docs.iter().filter(|d| d["kind"] == kind).collect() };
    let _: ServiceAccount = strict(of("ServiceAccount")[0]);
    let cluster: ClusterRole = strict(of("ClusterRole")[0]);
    let resources: Vec<String> = cluster
        .rules
        .unwrap()
        .into_iter()
        .flat_map(|r| r.resources.unwrap())
        .collect();
    assert_eq!(
        resources,
        ["pods", "nodes/stats"],
        "cluster-wide: only reads"
    );
    let _: ClusterRoleBinding = strict(of("ClusterRoleBinding")[0]);
    let role: Role = strict(of("Role")[0]);
    assert_eq!(role.metadata.namespace.as_deref(), Some("agentprof"));
    let rule = &role.rules.unwrap()[0];
    assert_eq!(rule.resources.as_deref(), Some(&["leases".to_string()][..]));
    let binding: RoleBinding = strict(of("RoleBinding")[0]);
    assert_eq!(binding.role_ref.kind, "Role");
    let cm: ConfigMap = strict(of("ConfigMap")[0]);
    let profile = &cm.data.unwrap()["profile.yaml"];
    let rules = agentprof::k8s::config::K8sConfig::parse(Path::new("profile.yaml"), profile)
        .unwrap()
        .unwrap();
    assert_eq!(rules.rules.len(), 1);
    let ds: DaemonSet = strict(of("DaemonSet")[0]);
    let pod = ds.spec.template.spec.unwrap();
    let c = &pod.containers[0];
    assert_eq!(c.image.as_deref(), Some("registry.example/agentprof:0.1.0"));
    // The same pod as deploy/kubernetes/30-daemonset.yaml's: non-root, read-only, nothing kept.
    let plain: Value = serde_yaml_ng::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/kubernetes/30-daemonset.yaml"),
        )
        .unwrap(),
    )
    .unwrap();
    let plain: DaemonSet = strict(&plain);
    let plain_pod = plain.spec.template.spec.unwrap();
    assert_eq!(pod.security_context, plain_pod.security_context);
    assert_eq!(c.security_context, plain_pod.containers[0].security_context);
    assert_eq!(c.resources, plain_pod.containers[0].resources);
    assert_eq!(c.env, plain_pod.containers[0].env);

    // Targets and placement from values.
    let (ok, out) = template(
        &helm,
        &[
            "--set",
            "otlp.url=http://otel:4318",
            "--set",
            "upload.url=http://receive:9529/profiling/v1/input",
            "--set",
            "metrics.port=9494",
            "--set-json",
            r#"tolerations=[{"operator":"Exists"}]"#,
        ],
    );
    assert!(ok, "{out}");
    for want in [
        "- --otlp=http://otel:4318",
        "- --upload=http://receive:9529/profiling/v1/input",
        "- --metrics-listen=0.0.0.0:9494",
        "containerPort: 9494",
        "operator: Exists",
    ] {
        assert!(out.contains(want), "{want} not in:\n{out}");
    }

    // Values that make no sense fail, naming the value.
    for (set, says) in [
        ("image.repository=", "image.repository must be set"),
        (
            "image.repository=Not An Image",
            "image.repository \"Not An Image\" is not an image reference",
        ),
        (
            "resources.limits.memory=-128Mi",
            "at '/resources/limits/memory'",
        ),
        (
            "resources.requests.cpu=lots",
            "at '/resources/requests/cpu'",
        ),
        ("metrics.port=0", "at '/metrics/port'"),
        ("imag.repository=x", "'imag' not allowed"),
        ("upload.url=ftp://x", "at '/upload/url'"),
    ] {
        let (ok, out) = template(&helm, &["--set", set]);
        assert!(!ok, "{set} was accepted:\n{out}");
        assert!(out.contains(says), "{set}: {out}");
    }
    let (ok, out) = run(&helm, &["template", "agentprof", chart().to_str().unwrap()]);
    assert!(!ok && out.contains("image.repository must be set"), "{out}");
}

#[test]
fn the_chart_installs_on_a_real_kube_apiserver_with_least_privilege() {
    let Some(helm) = helm() else { return };
    let bin = match kube_apiserver() {
        Ok(b) => b,
        Err(why) => return skip(&why),
    };
    let sb = Sandbox::new();
    let c = RealCluster::start(bin, sb.path());
    let values = chart().join("ci/test-values.yaml");
    let admin = c.admin.to_str().unwrap().to_string();
    let (ok, out) = run(
        &helm,
        &[
            "install",
            "agentprof",
            chart().to_str().unwrap(),
            "-n",
            "profiling",
            "--create-namespace",
            "-f",
            values.to_str().unwrap(),
            "--kubeconfig",
            &admin,
        ],
    );
    assert!(ok && out.contains("STATUS: deployed"), "{out}");
    let (ds, _) = c.kubectl(
        &[
            "-n",
            "profiling",
            "get",
            "daemonset",
            "agentprof",
            "-o",
            "name",
        ],
        None,
    );
    assert_eq!(ds.trim(), "daemonset.apps/agentprof");
    let can = |args: &[&str]| {
        let mut all = vec!["auth", "can-i"];
        all.extend_from_slice(args);
        all.push("--as=system:serviceaccount:profiling:agentprof");
        let (yes, text) = c.kubectl_status(&all);
        assert!(
            text.starts_with("yes") || text.starts_with("no"),
            "{args:?}: {text}"
        );
        yes
    };
    assert!(can(&["update", "leases", "-n", "profiling"]));
    assert!(!can(&["update", "leases", "-n", "kube-system"]));
    assert!(can(&["list", "pods", "--all-namespaces"]));
    assert!(can(&["get", "nodes", "--subresource=stats"]));
    assert!(!can(&["get", "nodes", "--subresource=proxy"]));
    assert!(!can(&["get", "secrets", "-n", "profiling"]));
    let (ok, out) = run(
        &helm,
        &[
            "uninstall",
            "agentprof",
            "-n",
            "profiling",
            "--kubeconfig",
            &admin,
        ],
    );
    assert!(ok, "{out}");
}
