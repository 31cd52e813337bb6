//! Which endpoints of a pod the rules make targets, and why every other pod or container is
//! not one. The same evaluation feeds the running collector and `agentprof k8s targets`, so
//! what the report says is what the collector does.

use std::collections::BTreeMap;
use std::net::IpAddr;

use k8s_openapi::api::core::v1::{Container, Pod};
use serde::Serialize;

use super::config::{Port, Rule};
use super::schedule::target_id;
use super::tags::PodFacts;
use super::trigger::Limits;

/// Why a pod, a container or a rule's endpoint is not collected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Skip {
    /// No rule's namespaces and selector match the pod.
    NoMatchingRule,
    /// The pod's phase is not Running.
    NotRunning,
    /// The pod is being deleted.
    Terminating,
    /// The pod has no pod IP, or one that is not an address.
    NoPodIp,
    /// The container is not Ready and Running (collection waits for it).
    NotReady,
    /// The rule's container is not in the pod.
    NoSuchContainer,
    /// No container declares the rule's TCP port (by name, or by number in a pod of several).
    NoSuchPort,
    /// More than one container declares the port.
    AmbiguousPort,
    /// An earlier rule collects the same endpoint.
    OverlappingRule,
    /// A tag the upload protocol cannot carry was dropped (the target is still collected).
    InvalidTag,
}

impl Skip {
    pub fn as_str(self) -> &'static str {
        match self {
            Skip::NoMatchingRule => "no_matching_rule",
            Skip::NotRunning => "not_running",
            Skip::Terminating => "terminating",
            Skip::NoPodIp => "no_pod_ip",
            Skip::NotReady => "not_ready",
            Skip::NoSuchContainer => "no_such_container",
            Skip::NoSuchPort => "no_such_port",
            Skip::AmbiguousPort => "ambiguous_port",
            Skip::OverlappingRule => "overlapping_rule",
            Skip::InvalidTag => "invalid_tag",
        }
    }
}

/// One endpoint a rule collects.
#[derive(Debug, Clone, Serialize)]
pub struct Found {
    /// `podUID/container/endpoint`.
    pub id: String,
    /// The rule's index in profile.yaml's `kubernetes:` list.
    pub rule: usize,
    pub container: String,
    /// `scheme://podIP:port/path`.
    pub endpoint: String,
    pub port: u16,
    /// The container is Ready and Running; a target that is not waits, keeping its state.
    pub ready: bool,
    #[serde(skip)]
    pub facts: PodFacts,
    #[serde(skip)]
    pub limits: Limits,
    /// Tags of this target the upload protocol cannot carry (dropped).
    pub invalid_tags: usize,
}

/// A pod, container or endpoint that is not collected, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    pub reason: Skip,
    pub rule: Option<usize>,
    pub container: Option<String>,
    pub detail: String,
}

/// Everything the rules make of one pod.
#[derive(Debug, Clone, Serialize)]
pub struct PodReport {
    pub namespace: String,
    pub pod: String,
    pub uid: String,
    pub phase: String,
    pub pod_ip: Option<String>,
    pub targets: Vec<Found>,
    pub skipped: Vec<Skipped>,
}

fn skip(reason: Skip, rule: Option<usize>, container: Option<&str>, detail: String) -> Skipped {
    Skipped {
        reason,
        rule,
        container: container.map(str::to_string),
        detail,
    }
}

/// The rules whose namespaces and selector match the pod, in configured order.
fn matching<'r>(rules: &'r [Rule], ns: &str, labels: &BTreeMap<String, String>) -> Vec<&'r Rule> {
    rules
        .iter()
        .filter(|r| r.namespaces.is_empty() || r.namespaces.iter().any(|n| n == ns))
        .filter(|r| r.selector.matches(labels))
        .collect()
}

/// Declares `c` a TCP port matching `port`? Returns its number.
fn declared(c: &Container, port: &Port) -> Option<u16> {
    c.ports.iter().flatten().find_map(|p| {
        let tcp = p.protocol.as_deref().is_none_or(|x| x == "TCP");
        let n = u16::try_from(p.container_port).ok()?;
        let hit = match port {
            Port::Number(want) => n == *want,
            Port::Name(want) => p.name.as_deref() == Some(want.as_str()),
        };
        (tcp && hit).then_some(n)
    })
}

/// The container and port number the rule collects in this pod.
fn locate(rule: &Rule, containers: &[Container]) -> Result<(String, u16), Skipped> {
    let idx = Some(rule.index);
    let pool: Vec<&Container> = match &rule.container {
        Some(name) => match containers.iter().find(|c| &c.name == name) {
            Some(c) => vec![c],
            None => {
                return Err(skip(
                    Skip::NoSuchContainer,
                    idx,
                    Some(name),
                    format!("the pod has no container {name:?}"),
                ));
            }
        },
        None => containers.iter().collect(),
    };
    let owners: Vec<(&Container, u16)> = pool
        .iter()
        .filter_map(|c| declared(c, &rule.port).map(|n| (*c, n)))
        .collect();
    let shown = match &rule.port {
        Port::Number(n) => n.to_string(),
        Port::Name(n) => format!("{n:?}"),
    };
    match (owners.as_slice(), &rule.port) {
        ([(c, n)], _) => Ok((c.name.clone(), *n)),
        ([], Port::Number(n)) if pool.len() == 1 => Ok((pool[0].name.clone(), *n)),
        ([], Port::Number(_)) => Err(skip(
            Skip::AmbiguousPort,
            idx,
            None,
            format!(
                "{} containers and none declares TCP port {shown}: set the rule's container",
                pool.len()
            ),
        )),
        ([], Port::Name(_)) => Err(skip(
            Skip::NoSuchPort,
            idx,
            rule.container.as_deref(),
            format!("no container declares a TCP port named {shown}"),
        )),
        (many, _) => Err(skip(
            Skip::AmbiguousPort,
            idx,
            None,
            format!(
                "TCP port {shown} is declared by {}: set the rule's container",
                many.iter()
                    .map(|(c, _)| c.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
    }
}

/// The container's limits from the pod spec (percentage thresholds need them).
fn limits(c: Option<&Container>) -> Limits {
    let get = |k: &str| {
        c.and_then(|c| c.resources.as_ref())
            .and_then(|r| r.limits.as_ref())
            .and_then(|l| l.get(k))
            .and_then(|q| super::rule::quantity(&q.0).ok())
    };
    Limits {
        cpu_millicores: get("cpu").map(|cores| cores * 1000.0),
        mem_bytes: get("memory").map(|b| b as u64),
    }
}

/// Ready and Running, from the pod's status.
fn container_ready(pod: &Pod, name: &str) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|v| v.iter().find(|c| c.name == name))
        .is_some_and(|c| c.ready && c.state.as_ref().is_some_and(|s| s.running.is_some()))
}

/// The owning workload, with a ReplicaSet's Deployment resolved from the pod-template-hash
/// suffix (no API call: the ReplicaSet's name is the Deployment's and the hash).
fn workload(pod: &Pod) -> (Option<String>, Option<String>) {
    let Some(owner) = pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
    else {
        return (None, None);
    };
    if owner.kind == "ReplicaSet"
        && let Some(hash) = pod
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("pod-template-hash"))
        && let Some(dep) = owner.name.strip_suffix(&format!("-{hash}"))
        && !dep.is_empty()
    {
        return (Some("Deployment".into()), Some(dep.to_string()));
    }
    (Some(owner.kind.clone()), Some(owner.name.clone()))
}

/// What the rules make of `pod` on `node` in `cluster`.
pub fn evaluate(rules: &[Rule], pod: &Pod, cluster: &str, node: &str) -> PodReport {
    let meta = &pod.metadata;
    let status = pod.status.as_ref();
    let mut report = PodReport {
        namespace: meta.namespace.clone().unwrap_or_default(),
        pod: meta.name.clone().unwrap_or_default(),
        uid: meta.uid.clone().unwrap_or_default(),
        phase: status
            .and_then(|s| s.phase.clone())
            .unwrap_or_else(|| "Unknown".into()),
        pod_ip: status.and_then(|s| s.pod_ip.clone()),
        targets: Vec::new(),
        skipped: Vec::new(),
    };
    let labels = meta.labels.clone().unwrap_or_default();
    let rules = matching(rules, &report.namespace, &labels);
    let host = match collectable(!rules.is_empty(), pod, &report) {
        Ok(host) => host,
        Err((kind, detail)) => {
            report.skipped.push(skip(kind, None, None, detail));
            return report;
        }
    };
    let containers = pod
        .spec
        .as_ref()
        .map(|s| s.containers.as_slice())
        .unwrap_or_default();
    let (workload_kind, workload_name) = workload(pod);
    let annotations = meta.annotations.clone().unwrap_or_default();
    let mut claimed: BTreeMap<String, usize> = BTreeMap::new();
    for rule in rules {
        let (container, port) = match locate(rule, containers) {
            Ok(x) => x,
            Err(s) => {
                report.skipped.push(s);
                continue;
            }
        };
        let endpoint = format!("{}://{host}:{port}{}", rule.scheme, rule.path);
        let key = format!("{container} {endpoint}");
        if let Some(first) = claimed.get(&key) {
            report.skipped.push(skip(
                Skip::OverlappingRule,
                Some(rule.index),
                Some(&container),
                format!(
                    "rule {first} already collects {endpoint} (the first configured rule wins)"
                ),
            ));
            continue;
        }
        claimed.insert(key, rule.index);
        let facts = PodFacts {
            cluster: cluster.to_string(),
            namespace: report.namespace.clone(),
            pod_name: report.pod.clone(),
            pod_uid: report.uid.clone(),
            node_name: node.to_string(),
            container: container.clone(),
            workload_kind: workload_kind.clone(),
            workload_name: workload_name.clone(),
            // Only what the tags read: a pod's annotations can be hundreds of KiB, and a
            // target lives as long as its pod.
            labels: used(&labels, |k| {
                rule.pod_label_as_tags.contains_key(k) || super::tags::STANDARD_LABELS.contains(&k)
            }),
            annotations: used(&annotations, |k| {
                rule.pod_annotation_as_tags.contains_key(k)
            }),
        };
        add_target(&mut report, pod, rule, facts, endpoint, port);
    }
    report
}

/// The entries of `map` whose key `keep` accepts.
fn used(map: &BTreeMap<String, String>, keep: impl Fn(&str) -> bool) -> BTreeMap<String, String> {
    map.iter()
        .filter(|(k, _)| keep(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The host part of the pod's endpoints, when the pod can be collected at all: some rule
/// matches it, it is not being deleted, it runs and has an address. Else why not.
fn collectable(matched: bool, pod: &Pod, report: &PodReport) -> Result<String, (Skip, String)> {
    if !matched {
        return Err((
            Skip::NoMatchingRule,
            "no rule's namespaces and selector match".into(),
        ));
    }
    if pod.metadata.deletion_timestamp.is_some() {
        return Err((Skip::Terminating, "the pod is being deleted".into()));
    }
    if report.phase != "Running" {
        return Err((Skip::NotRunning, format!("phase {}", report.phase)));
    }
    let ip = &report.pod_ip;
    let Some(addr) = ip.as_deref().and_then(|s| s.parse::<IpAddr>().ok()) else {
        let detail = match ip {
            Some(s) => format!("pod IP {s:?} is not an address"),
            None => "no pod IP yet".into(),
        };
        return Err((Skip::NoPodIp, detail));
    };
    Ok(match addr {
        IpAddr::V4(a) => a.to_string(),
        IpAddr::V6(a) => format!("[{a}]"),
    })
}

/// One rule's target in one container, with what would hold its collection back: tags the
/// upload protocol cannot carry (dropped), a container not Ready (collection waits).
fn add_target(
    report: &mut PodReport,
    pod: &Pod,
    rule: &Rule,
    facts: PodFacts,
    endpoint: String,
    port: u16,
) {
    let container = facts.container.clone();
    let invalid = super::tags::capture_tags(rule, &facts, None).invalid;
    if invalid > 0 {
        report.skipped.push(skip(
            Skip::InvalidTag,
            Some(rule.index),
            Some(&container),
            format!("{invalid} tag(s) the upload protocol cannot carry are dropped"),
        ));
    }
    let ready = container_ready(pod, &container);
    if !ready {
        report.skipped.push(skip(
            Skip::NotReady,
            Some(rule.index),
            Some(&container),
            "the container is not Ready and Running: collection waits".into(),
        ));
    }
    let containers = pod
        .spec
        .as_ref()
        .map(|s| s.containers.as_slice())
        .unwrap_or_default();
    report.targets.push(Found {
        id: target_id(&report.uid, &container, &endpoint),
        rule: rule.index,
        limits: limits(containers.iter().find(|c| c.name == container)),
        container,
        endpoint,
        port,
        ready,
        facts,
        invalid_tags: invalid,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A rule from its fields, `port: 6060` unless `fields` gives one.
    fn rule(fields: &str) -> Rule {
        let fields = if fields.contains("port:") {
            fields.to_string()
        } else {
            format!("    port: 6060\n{fields}")
        };
        let text = format!("kubernetes:\n  - node_local: true\n{fields}");
        match crate::k8s::config::K8sConfig::parse(std::path::Path::new("p.yaml"), &text) {
            Ok(Some(mut c)) => c.rules.remove(0),
            other => panic!("{other:?}"),
        }
    }

    fn pod(json: serde_json::Value) -> Pod {
        serde_json::from_value(json).expect("pod")
    }

    fn base(containers: serde_json::Value) -> serde_json::Value {
        let names: Vec<String> = containers
            .as_array()
            .expect("list")
            .iter()
            .map(|c| c["name"].as_str().expect("name").to_string())
            .collect();
        serde_json::json!({
            "metadata": {"name": "web-7d4b9c-x2x", "namespace": "shop", "uid": "u-1",
                "labels": {"app": "web", "pod-template-hash": "7d4b9c"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                    "name": "web-7d4b9c", "uid": "rs", "controller": true}]},
            "spec": {"containers": containers},
            "status": {"phase": "Running", "podIP": "10.0.0.7",
                "containerStatuses": names.iter().map(|n| serde_json::json!({
                    "name": n, "ready": true, "restartCount": 0, "image": "i", "imageID": "",
                    "state": {"running": {}}})).collect::<Vec<_>>()}
        })
    }

    #[test]
    fn a_single_container_pod_need_not_declare_a_numeric_port() {
        let r = rule("    port: 6060\n");
        let p = pod(base(serde_json::json!([{"name": "app"}])));
        let rep = evaluate(&[r], &p, "c", "n1");
        assert_eq!(rep.targets.len(), 1, "{rep:?}");
        let t = &rep.targets[0];
        assert_eq!(t.endpoint, "http://10.0.0.7:6060/debug/pprof");
        assert_eq!(t.id, "u-1/app/http://10.0.0.7:6060/debug/pprof");
        assert_eq!(t.facts.workload_kind.as_deref(), Some("Deployment"));
        assert_eq!(t.facts.workload_name.as_deref(), Some("web"));
        assert!(t.ready);
    }

    /// A target keeps only the labels and annotations its tags read: a pod's annotations can
    /// be hundreds of KiB, and the target lives as long as the pod.
    #[test]
    fn a_target_keeps_only_the_labels_and_annotations_its_tags_read() {
        let r = rule(
            "    pod_label_as_tags:\n      team: team\n    pod_annotation_as_tags:\n      \
             owner: owner\n",
        );
        let mut j = base(serde_json::json!([{"name": "app"}]));
        j["metadata"]["labels"]["team"] = "db".into();
        j["metadata"]["labels"]["app.kubernetes.io/version"] = "1.2".into();
        j["metadata"]["annotations"] = serde_json::json!({"owner": "ana",
            "kubectl.kubernetes.io/last-applied-configuration": "x".repeat(200_000)});
        let rep = evaluate(&[r], &pod(j), "c", "n1");
        let f = &rep.targets[0].facts;
        let keys = |m: &BTreeMap<String, String>| m.keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(&f.labels), ["app.kubernetes.io/version", "team"]);
        assert_eq!(keys(&f.annotations), ["owner"]);
    }

    #[test]
    fn a_numeric_port_in_several_containers_needs_exactly_one_owner() {
        let two = serde_json::json!([
            {"name": "app", "ports": [{"containerPort": 6060}]},
            {"name": "side", "ports": [{"containerPort": 6060, "protocol": "UDP"}]}]);
        let rep = evaluate(&[rule("    port: 6060\n")], &pod(base(two)), "c", "n");
        assert_eq!(rep.targets[0].container, "app", "a UDP port does not count");
        let none = serde_json::json!([{"name": "a"}, {"name": "b"}]);
        let rep = evaluate(&[rule("    port: 6060\n")], &pod(base(none)), "c", "n");
        assert!(rep.targets.is_empty());
        assert_eq!(rep.skipped[0].reason, Skip::AmbiguousPort);
        let both = serde_json::json!([
            {"name": "a", "ports": [{"containerPort": 6060}]},
            {"name": "b", "ports": [{"containerPort": 6060}]}]);
        let rep = evaluate(
            &[rule("    port: 6060\n")],
            &pod(base(both.clone())),
            "c",
            "n",
        );
        assert_eq!(rep.skipped[0].reason, Skip::AmbiguousPort);
        assert!(rep.skipped[0].detail.contains("a, b"), "{rep:?}");
        // Naming the container settles it.
        let rep = evaluate(
            &[rule("    port: 6060\n    container: b\n")],
            &pod(base(both)),
            "c",
            "n",
        );
        assert_eq!(rep.targets[0].container, "b");
    }

    #[test]
    fn a_named_port_must_be_declared_and_the_first_rule_wins_an_overlap() {
        let c = serde_json::json!([{"name": "app", "ports": [{"name": "pprof", "containerPort": 6061}]}]);
        let mut first = rule("    port: pprof\n");
        first.index = 0;
        let mut second = rule("    port: 6061\n");
        second.index = 1;
        let mut third = rule("    port: metrics\n");
        third.index = 2;
        let rep = evaluate(&[first, second, third], &pod(base(c)), "c", "n");
        assert_eq!(rep.targets.len(), 1);
        assert_eq!(rep.targets[0].rule, 0);
        assert_eq!(rep.targets[0].port, 6061);
        let reasons: Vec<_> = rep.skipped.iter().map(|s| (s.reason, s.rule)).collect();
        assert_eq!(
            reasons,
            [
                (Skip::OverlappingRule, Some(1)),
                (Skip::NoSuchPort, Some(2))
            ]
        );
    }

    #[test]
    fn pod_states_that_are_not_targets_say_why() {
        let r = [rule("    port: 6060\n")];
        let mut j = base(serde_json::json!([{"name": "app"}]));
        j["status"]["phase"] = "Pending".into();
        assert_eq!(
            evaluate(&r, &pod(j), "c", "n").skipped[0].reason,
            Skip::NotRunning
        );
        let mut j = base(serde_json::json!([{"name": "app"}]));
        j["status"]["podIP"] = serde_json::Value::Null;
        assert_eq!(
            evaluate(&r, &pod(j), "c", "n").skipped[0].reason,
            Skip::NoPodIp
        );
        let mut j = base(serde_json::json!([{"name": "app"}]));
        j["metadata"]["deletionTimestamp"] = "2026-12-01T10:00:00Z".into();
        assert_eq!(
            evaluate(&r, &pod(j), "c", "n").skipped[0].reason,
            Skip::Terminating
        );
        let mut j = base(serde_json::json!([{"name": "app"}]));
        j["status"]["containerStatuses"][0]["ready"] = false.into();
        let rep = evaluate(&r, &pod(j), "c", "n");
        assert!(!rep.targets[0].ready, "kept as a target, suspended");
        assert_eq!(rep.skipped[0].reason, Skip::NotReady);
        let mut j = base(serde_json::json!([{"name": "app"}]));
        j["metadata"]["namespace"] = "other".into();
        let ns = [rule("    port: 6060\n    namespaces: [shop]\n")];
        assert_eq!(
            evaluate(&ns, &pod(j), "c", "n").skipped[0].reason,
            Skip::NoMatchingRule
        );
    }

    #[test]
    fn limits_come_from_the_container_spec() {
        let c = serde_json::json!([{"name": "app",
            "resources": {"limits": {"cpu": "500m", "memory": "256Mi"}}}]);
        let rep = evaluate(&[rule("    port: 6060\n")], &pod(base(c)), "c", "n");
        let l = rep.targets[0].limits;
        assert_eq!(l.cpu_millicores, Some(500.0));
        assert_eq!(l.mem_bytes, Some(256 << 20));
        let ipv6 = {
            let mut j = base(serde_json::json!([{"name": "app"}]));
            j["status"]["podIP"] = "fd00::7".into();
            j
        };
        let rep = evaluate(&[rule("    port: 6060\n")], &pod(ipv6), "c", "n");
        assert_eq!(rep.targets[0].endpoint, "http://[fd00::7]:6060/debug/pprof");
    }
}
