//! The kubelet's `/stats/summary`, read for what resource triggers need: each container's CPU
//! (`usageNanoCores`, as millicores) and memory (`workingSetBytes`), found by the pod's UID,
//! or by namespace and name when the summary carries no UID (older kubelets). A pod entry or
//! a figure that is not what the kubelet's API says (a negative, fractional or huge number, a
//! missing name) leaves only that pod or that container without data, never the summary.

use serde::{Deserialize, Deserializer};

#[derive(Debug, Deserialize)]
pub struct Summary {
    #[serde(default, deserialize_with = "lenient_list")]
    pods: Vec<PodStats>,
}

/// The entries of a list that read as `T`; the others are left out.
fn lenient_list<'de, D: Deserializer<'de>, T: serde::de::DeserializeOwned>(
    d: D,
) -> Result<Vec<T>, D::Error> {
    let items: Vec<serde_json::Value> = Vec::deserialize(d)?;
    Ok(items
        .into_iter()
        .filter_map(|v| serde_json::from_value(v).ok())
        .collect())
}

/// An object that reads as `T`, else none.
fn lenient_struct<'de, D: Deserializer<'de>, T: serde::de::DeserializeOwned>(
    d: D,
) -> Result<Option<T>, D::Error> {
    Ok(serde_json::from_value(serde_json::Value::deserialize(d)?).ok())
}

/// A count that is a whole number in u64's range; anything else (-5, 1.5, 1e308, a string)
/// is no figure.
fn lenient_u64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(match serde_json::Value::deserialize(d)? {
        serde_json::Value::Number(n) => n.as_u64(),
        _ => None,
    })
}

#[derive(Debug, Deserialize)]
struct PodStats {
    #[serde(rename = "podRef")]
    pub pod_ref: PodRef,
    #[serde(default, deserialize_with = "lenient_list")]
    pub containers: Vec<ContainerStats>,
}

#[derive(Debug, Deserialize)]
struct PodRef {
    pub name: String,
    pub namespace: String,
    #[serde(default)]
    pub uid: String,
}

#[derive(Debug, Deserialize)]
struct ContainerStats {
    pub name: String,
    #[serde(default, deserialize_with = "lenient_struct")]
    pub cpu: Option<Cpu>,
    #[serde(default, deserialize_with = "lenient_struct")]
    pub memory: Option<Memory>,
}

#[derive(Debug, Deserialize)]
struct Cpu {
    #[serde(rename = "usageNanoCores", default, deserialize_with = "lenient_u64")]
    pub usage_nano_cores: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct Memory {
    #[serde(rename = "workingSetBytes", default, deserialize_with = "lenient_u64")]
    pub working_set_bytes: Option<u64>,
}

/// One container's usage in one summary; a figure the kubelet did not give is `None` (never 0).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    pub cpu_millicores: Option<f64>,
    pub mem_bytes: Option<u64>,
}

/// Which container of which pod.
#[derive(Debug, Clone, Copy)]
pub struct ContainerRef<'a> {
    pub namespace: &'a str,
    pub pod: &'a str,
    pub uid: &'a str,
    pub container: &'a str,
}

impl Summary {
    pub fn parse(body: &[u8]) -> Result<Summary, crate::Error> {
        serde_json::from_slice(body).map_err(|source| crate::Error::NotASummary {
            kubelet: None,
            source,
        })
    }

    /// The container's usage, or `None` when the summary does not list it (`stats_not_found`).
    pub fn usage(&self, c: ContainerRef<'_>) -> Option<Usage> {
        let pod = self.pods.iter().find(|p| {
            if !p.pod_ref.uid.is_empty() && !c.uid.is_empty() {
                p.pod_ref.uid == c.uid
            } else {
                p.pod_ref.namespace == c.namespace && p.pod_ref.name == c.pod
            }
        })?;
        let s = pod.containers.iter().find(|x| x.name == c.container)?;
        Some(Usage {
            cpu_millicores: s
                .cpu
                .as_ref()
                .and_then(|x| x.usage_nano_cores)
                .map(|n| n as f64 / 1e6),
            mem_bytes: s.memory.as_ref().and_then(|m| m.working_set_bytes),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One container's figure that is not a u64 leaves only that container without data;
    /// a pod entry without its name leaves only that pod out.
    #[test]
    fn a_bad_figure_costs_one_container_not_the_summary() {
        for bad in ["-5", "1.5", "1e308", "\"12\"", "null", "{}"] {
            let body = format!(
                r#"{{"node": {{"nodeName": "n"}}, "pods": [
                {{"podRef": {{"name": "a", "namespace": "ns", "uid": "ua"}}, "containers": [
                  {{"name": "bad", "cpu": {{"usageNanoCores": {bad}}}, "memory": {{"workingSetBytes": {bad}}}}},
                  {{"name": "good", "cpu": {{"usageNanoCores": 250000000}}, "memory": {{"workingSetBytes": 1048576}}}}]}},
                {{"podRef": {{"namespace": "ns"}}, "containers": []}},
                {{"podRef": {{"name": "b", "namespace": "ns", "uid": "ub"}}, "containers": [
                  {{"name": "c", "memory": {{"workingSetBytes": 7}}}}]}}]}}"#
            );
            let s = Summary::parse(body.as_bytes()).unwrap_or_else(|e| panic!("{bad}: {e}"));
            let c = |pod: &'static str, uid: &'static str, container: &'static str| ContainerRef {
                namespace: "ns",
                pod,
                uid,
                container,
            };
            assert_eq!(
                s.usage(c("a", "ua", "bad")),
                Some(Usage::default()),
                "{bad}"
            );
            let good = s.usage(c("a", "ua", "good")).expect("good");
            assert_eq!(good.cpu_millicores, Some(250.0));
            assert_eq!(good.mem_bytes, Some(1 << 20));
            assert_eq!(
                s.usage(c("b", "ub", "c")).and_then(|u| u.mem_bytes),
                Some(7)
            );
            assert_eq!(s.pods.len(), 2, "the pod without a name is left out");
        }
    }

    fn fixture() -> Summary {
        let body = std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../tests/fixtures/kubelet/stats_summary_gke.json"),
        )
        .expect("fixture");
        Summary::parse(&body).expect("parse")
    }

    #[test]
    fn a_real_summary_gives_each_containers_cpu_and_working_set() {
        let s = fixture();
        assert_eq!(s.pods.len(), 11);
        let agent = ContainerRef {
            namespace: "kube-system",
            pod: "fluentd-gcp-v2.0.10-9q9t4",
            uid: "2edfd4d9-10ce-11e8-bd5a-42010af00137",
            container: "agent",
        };
        let u = s.usage(agent).expect("listed");
        assert_eq!(u.cpu_millicores, Some(12.477758));
        assert_eq!(u.mem_bytes, Some(86_441_984));
        // Another pod's UID with the same name is another pod.
        assert!(
            s.usage(ContainerRef {
                uid: "other",
                ..agent
            })
            .is_none()
        );
        // No UID on our side: matched by namespace and name.
        assert_eq!(s.usage(ContainerRef { uid: "", ..agent }), Some(u));
        assert!(
            s.usage(ContainerRef {
                container: "nope",
                ..agent
            })
            .is_none()
        );
        // A container that reports 0 cores is 0, not missing.
        let scaler = s
            .usage(ContainerRef {
                namespace: "kube-system",
                pod: "fluentd-gcp-scaler-54ccb89d5-pvjz2",
                uid: "",
                container: "fluentd-gcp-scaler",
            })
            .expect("listed");
        assert_eq!(scaler.cpu_millicores, Some(0.0));
    }

    #[test]
    fn an_older_kubelet_without_uids_is_matched_by_name() {
        let body =
            br#"{"node":{"nodeName":"n1"},"pods":[{"podRef":{"name":"web-1","namespace":"shop"},
            "containers":[{"name":"app","cpu":{"usageNanoCores":250000000},"memory":{}}]}]}"#;
        let s = Summary::parse(body).unwrap();
        let u = s
            .usage(ContainerRef {
                namespace: "shop",
                pod: "web-1",
                uid: "5f1c",
                container: "app",
            })
            .unwrap();
        assert_eq!(u.cpu_millicores, Some(250.0));
        assert_eq!(
            u.mem_bytes, None,
            "a figure the kubelet did not give is missing, not 0"
        );
        assert!(Summary::parse(b"<html>").is_err());
    }
}
