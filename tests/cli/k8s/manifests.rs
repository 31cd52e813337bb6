//! deploy/kubernetes/ parsed strictly into k8s-openapi's types: every field a manifest has
//! must survive the round trip (a misspelt or misplaced field would be dropped, and fails
//! here), and what the DaemonSet needs is there.

use std::path::Path;

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ServiceAccount};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use serde_json::Value;

fn docs(file: &str) -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("deploy/kubernetes")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|d| {
            let v: serde_yaml_ng::Value = serde::Deserialize::deserialize(d).unwrap();
            serde_json::to_value(v).unwrap()
        })
        .filter(|v| !v.is_null())
        .collect()
}

/// `v` as type T and back: equal to `v`, or the field T does not know is named.
fn strict<T: serde::de::DeserializeOwned + serde::Serialize>(v: &Value) -> T {
    let t: T = serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{e}: {v}"));
    let back = serde_json::to_value(&t).unwrap();
    assert_eq!(&back, v, "a field did not survive the round trip");
    t
}

#[test]
fn the_manifests_are_valid_kubernetes_objects() {
    let ns = docs("00-namespace.yaml");
    let _: Namespace = strict(&ns[0]);
    let rbac = docs("10-rbac.yaml");
    assert_eq!(rbac.len(), 5);
    let _: ServiceAccount = strict(&rbac[0]);
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let rules_of = |rules: Option<Vec<k8s_openapi::api::rbac::v1::PolicyRule>>| {
        rules
            .unwrap()
            .into_iter()
            .map(|r| (r.api_groups.unwrap(), r.resources.unwrap(), r.verbs))
            .collect::<Vec<(Vec<String>, Vec<String>, Vec<String>)>>()
    };
    let cluster: ClusterRole = strict(&rbac[1]);
    assert_eq!(
        rules_of(cluster.rules),
        [
            (s(&[""]), s(&["pods"]), s(&["get", "list", "watch"])),
            (s(&[""]), s(&["nodes/stats"]), s(&["get"])),
        ],
        "cluster-wide: only what agentprof k8s reads"
    );
    let _: ClusterRoleBinding = strict(&rbac[2]);
    // Leases only in agentprof's own namespace, through a Role.
    let role: Role = strict(&rbac[3]);
    assert_eq!(role.metadata.namespace.as_deref(), Some("agentprof"));
    assert_eq!(
        rules_of(role.rules),
        [(
            s(&["coordination.k8s.io"]),
            s(&["leases"]),
            s(&["get", "create", "update"])
        )],
    );
    let binding: RoleBinding = strict(&rbac[4]);
    assert_eq!(binding.metadata.namespace.as_deref(), Some("agentprof"));
    assert_eq!(binding.role_ref.kind, "Role");
    let cm: ConfigMap = strict(&docs("20-configmap.yaml")[0]);
    let profile = &cm.data.unwrap()["profile.yaml"];
    let rules = agentprof::k8s::config::K8sConfig::parse(Path::new("profile.yaml"), profile)
        .unwrap()
        .unwrap();
    assert_eq!(rules.rules.len(), 1);
    let ds: DaemonSet = strict(&docs("30-daemonset.yaml")[0]);
    let pod = ds.spec.template.spec.unwrap();
    let c = &pod.containers[0];
    let env: Vec<(String, String)> = c
        .env
        .iter()
        .flatten()
        .filter_map(|e| {
            let f = e.value_from.as_ref()?.field_ref.as_ref()?;
            Some((e.name.clone(), f.field_path.clone()))
        })
        .collect();
    assert!(
        env.contains(&("NODE_NAME".into(), "spec.nodeName".into())),
        "{env:?}"
    );
    assert!(
        env.contains(&("NODE_IP".into(), "status.hostIP".into())),
        "{env:?}"
    );
    let sc = c.security_context.as_ref().unwrap();
    assert_eq!(sc.read_only_root_filesystem, Some(true));
    assert_eq!(sc.allow_privilege_escalation, Some(false));
    assert_eq!(pod.security_context.unwrap().run_as_non_root, Some(true));
    let probe = |p: &Option<k8s_openapi::api::core::v1::Probe>| {
        p.as_ref()
            .unwrap()
            .http_get
            .as_ref()
            .unwrap()
            .path
            .clone()
            .unwrap()
    };
    assert_eq!(probe(&c.liveness_probe), "/healthz");
    assert_eq!(probe(&c.readiness_probe), "/readyz");
    let res = c.resources.as_ref().unwrap();
    assert!(res.limits.as_ref().unwrap().contains_key("memory"));
    assert!(res.requests.as_ref().unwrap().contains_key("cpu"));
    // The args are ones agentprof accepts.
    let mut argv = vec!["agentprof".to_string()];
    argv.extend(c.args.clone().unwrap());
    use clap::Parser;
    agentprof::cli::Cli::try_parse_from(&argv).unwrap();
    let _: NetworkPolicy = strict(&docs("examples/networkpolicy.yaml")[0]);
}
