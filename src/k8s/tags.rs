//! The tags of a capture: the pod's identity (which mappings never override), the rule's and
//! the mapped labels' and annotations' tags, `service`/`env`/`version` in the reference's
//! precedence, and for a resource trigger what fired. A tag the upload protocol cannot carry
//! (tags are comma-separated: a name with a comma, colon or newline, a value with a comma or
//! newline) is dropped and counted, as `invalid_tag`.

use std::collections::BTreeMap;

use super::config::Rule;
use super::trigger::{Fired, Level};

/// What is known of the pod a capture comes from.
#[derive(Debug, Clone, Default)]
pub struct PodFacts {
    pub cluster: String,
    pub namespace: String,
    pub pod_name: String,
    pub pod_uid: String,
    pub node_name: String,
    pub container: String,
    /// The owner, with a ReplicaSet's Deployment resolved (`Deployment`, `StatefulSet`, …).
    pub workload_kind: Option<String>,
    pub workload_name: Option<String>,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
}

/// The standard labels service and version fall back to.
pub const STANDARD_LABELS: &[&str] = &["app.kubernetes.io/name", "app.kubernetes.io/version"];

/// The identity tags, which nothing else may set.
pub const IDENTITY: &[&str] = &[
    "cluster_name_k8s",
    "namespace",
    "pod_name",
    "pod_uid",
    "node_name",
    "container_name",
    "workload_kind",
    "workload_name",
];

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tagged {
    /// `name:value`, sorted by name, one per name.
    pub tags: Vec<String>,
    pub service: String,
    pub env: Option<String>,
    pub version: Option<String>,
    /// Tags dropped because the upload protocol cannot carry them.
    pub invalid: usize,
}

fn name_ok(k: &str) -> bool {
    !k.is_empty() && !k.contains([',', ':', '\n'])
}

fn value_ok(v: &str) -> bool {
    !v.contains([',', '\n'])
}

/// Sets a tag the upload protocol can carry; counts one it cannot.
fn put(tags: &mut BTreeMap<String, String>, invalid: &mut usize, k: &str, v: &str) {
    if !name_ok(k) || !value_ok(v) {
        *invalid += 1;
        return;
    }
    tags.insert(k.to_string(), v.to_string());
}

/// The tags `map` (source key → tag name) takes from `from`; never an identity tag.
fn mapped(
    from: &BTreeMap<String, String>,
    map: &BTreeMap<String, String>,
    tags: &mut BTreeMap<String, String>,
    invalid: &mut usize,
) {
    for (src, to) in map {
        if let Some(v) = from.get(src)
            && !IDENTITY.contains(&to.as_str())
        {
            put(tags, invalid, to, v);
        }
    }
}

/// The capture's tags for `rule` on `pod`, and for a trigger, what fired.
pub fn capture_tags(rule: &Rule, pod: &PodFacts, fired: Option<&Fired>) -> Tagged {
    let mut out = Tagged::default();
    let mut tags: BTreeMap<String, String> = BTreeMap::new();
    // Lowest first, each later source overriding: rule tags, label mappings, annotation
    // mappings; identity last, over everything.
    for (k, v) in &rule.tags {
        put(&mut tags, &mut out.invalid, k, v);
    }
    mapped(
        &pod.labels,
        &rule.pod_label_as_tags,
        &mut tags,
        &mut out.invalid,
    );
    mapped(
        &pod.annotations,
        &rule.pod_annotation_as_tags,
        &mut tags,
        &mut out.invalid,
    );
    // service, env and version: explicit fields, annotation mappings, label mappings, rule
    // tags (all in `tags` by now, in that order of strength), then the standard labels, then
    // derived defaults.
    let standard = |key: &str| match key {
        "service" => pod.labels.get(STANDARD_LABELS[0]),
        "version" => pod.labels.get(STANDARD_LABELS[1]),
        _ => None,
    };
    let pick = |key: &str, explicit: &Option<String>| -> Option<String> {
        explicit
            .clone()
            .or_else(|| tags.get(key).cloned())
            .or_else(|| standard(key).cloned())
            .filter(|v| !v.is_empty() && value_ok(v))
    };
    out.service = pick("service", &rule.service)
        .or_else(|| pod.workload_name.clone())
        .unwrap_or_else(|| pod.pod_name.clone());
    out.env = pick("env", &rule.env);
    out.version = pick("version", &rule.version);
    for (k, v) in [
        ("service", Some(out.service.clone())),
        ("env", out.env.clone()),
        ("version", out.version.clone()),
    ] {
        match v {
            Some(v) => put(&mut tags, &mut out.invalid, k, &v),
            None => {
                tags.remove(k);
            }
        }
    }
    identity_tags(pod, &mut tags, &mut out.invalid);
    if let Some(f) = fired {
        trigger_tags(f, &mut tags, &mut out.invalid);
    }
    out.tags = tags.into_iter().map(|(k, v)| format!("{k}:{v}")).collect();
    out
}

/// Who the capture is of: the pod's identity, over any tag of the same name.
fn identity_tags(pod: &PodFacts, tags: &mut BTreeMap<String, String>, invalid: &mut usize) {
    let identity = [
        ("cluster_name_k8s", Some(pod.cluster.as_str())),
        ("namespace", Some(pod.namespace.as_str())),
        ("pod_name", Some(pod.pod_name.as_str())),
        ("pod_uid", Some(pod.pod_uid.as_str())),
        ("node_name", Some(pod.node_name.as_str())),
        ("container_name", Some(pod.container.as_str())),
        ("workload_kind", pod.workload_kind.as_deref()),
        ("workload_name", pod.workload_name.as_deref()),
    ];
    for (k, v) in identity {
        tags.remove(k);
        if let Some(v) = v.filter(|v| !v.is_empty()) {
            put(tags, invalid, k, v);
        }
    }
}

/// What fired, for a trigger's capture.
fn trigger_tags(f: &Fired, tags: &mut BTreeMap<String, String>, invalid: &mut usize) {
    for (k, v) in [
        ("trigger_metric", f.metric.to_string()),
        ("trigger_value", format!("{:.2}", f.value)),
        ("trigger_threshold", format!("{}", f.threshold)),
        ("trigger_unit", f.unit.to_string()),
        ("trigger_source", f.source.to_string()),
        (
            "trigger_level",
            match f.level {
                Level::Normal => "normal",
                Level::Emergency => "emergency",
            }
            .to_string(),
        ),
        (
            "trigger_type",
            if f.unit == "percent" {
                "base_limit"
            } else {
                "absolute"
            }
            .to_string(),
        ),
    ] {
        put(tags, invalid, k, &v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::k8s::config::test_rule as rule;

    fn pod() -> PodFacts {
        PodFacts {
            cluster: "prod-eu".into(),
            namespace: "shop".into(),
            pod_name: "web-7d9f-abcde".into(),
            pod_uid: "5f1c-uid".into(),
            node_name: "node-1".into(),
            container: "app".into(),
            workload_kind: Some("Deployment".into()),
            workload_name: Some("web".into()),
            labels: [
                ("app.kubernetes.io/name", "web-frontend"),
                ("app.kubernetes.io/version", "1.4.2"),
                ("team", "checkout"),
                ("bad", "a,b"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
            annotations: [
                ("ad.datadoghq.com/service", "web-annotated"),
                ("owner", "x\ny"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        }
    }

    fn tag<'a>(t: &'a Tagged, k: &str) -> Option<&'a str> {
        t.tags
            .iter()
            .find_map(|x| x.strip_prefix(k).and_then(|r| r.strip_prefix(':')))
    }

    #[test]
    fn identity_tags_and_the_precedence_of_service_env_version() {
        // Nothing configured: the standard labels, then the workload.
        let t = capture_tags(&rule(""), &pod(), None);
        assert_eq!(t.service, "web-frontend");
        assert_eq!(t.version.as_deref(), Some("1.4.2"));
        assert_eq!(t.env, None);
        for (k, v) in [
            ("cluster_name_k8s", "prod-eu"),
            ("namespace", "shop"),
            ("pod_name", "web-7d9f-abcde"),
            ("pod_uid", "5f1c-uid"),
            ("node_name", "node-1"),
            ("container_name", "app"),
            ("workload_kind", "Deployment"),
            ("workload_name", "web"),
        ] {
            assert_eq!(tag(&t, k), Some(v), "{k}");
        }
        // Rule tags < label mappings < annotation mappings < explicit fields.
        let r = rule(
            "    tags:\n      service: from-tags\n      env: staging\n    pod_label_as_tags:\n      team: service\n    pod_annotation_as_tags:\n      ad.datadoghq.com/service: service\n",
        );
        assert_eq!(capture_tags(&r, &pod(), None).service, "web-annotated");
        assert_eq!(
            capture_tags(&r, &pod(), None).env.as_deref(),
            Some("staging")
        );
        let r2 = rule(
            "    service: explicit\n    pod_annotation_as_tags:\n      ad.datadoghq.com/service: service\n",
        );
        assert_eq!(capture_tags(&r2, &pod(), None).service, "explicit");
        let r3 = rule(
            "    tags:\n      service: from-tags\n    pod_label_as_tags:\n      team: service\n",
        );
        assert_eq!(capture_tags(&r3, &pod(), None).service, "checkout");
        // No standard label: the workload's name, then the pod's.
        let mut bare = pod();
        bare.labels.clear();
        assert_eq!(capture_tags(&rule(""), &bare, None).service, "web");
        bare.workload_name = None;
        assert_eq!(
            capture_tags(&rule(""), &bare, None).service,
            "web-7d9f-abcde"
        );
    }

    #[test]
    fn mappings_never_override_identity_and_bad_tags_are_dropped_and_counted() {
        let r = rule(
            "    pod_label_as_tags:\n      team: pod_name\n      bad: bad_label\n    pod_annotation_as_tags:\n      owner: owner\n",
        );
        let t = capture_tags(&r, &pod(), None);
        assert_eq!(tag(&t, "pod_name"), Some("web-7d9f-abcde"));
        assert_eq!(tag(&t, "bad_label"), None);
        assert_eq!(tag(&t, "owner"), None);
        assert_eq!(t.invalid, 2, "a comma in one value, a newline in the other");
        assert!(
            t.tags.windows(2).all(|w| w[0] < w[1]),
            "sorted, one per name"
        );
    }

    #[test]
    fn a_trigger_says_what_fired() {
        let fired = Fired {
            level: Level::Emergency,
            metric: "memory",
            value: 96.0,
            threshold: 95.0,
            unit: "percent",
            source: "kubelet_stats_summary",
            samples: 1,
            needed: 1,
        };
        let t = capture_tags(&rule(""), &pod(), Some(&fired));
        for (k, v) in [
            ("trigger_metric", "memory"),
            ("trigger_value", "96.00"),
            ("trigger_threshold", "95"),
            ("trigger_unit", "percent"),
            ("trigger_source", "kubelet_stats_summary"),
            ("trigger_level", "emergency"),
            ("trigger_type", "base_limit"),
        ] {
            assert_eq!(tag(&t, k), Some(v), "{k}");
        }
    }
}
