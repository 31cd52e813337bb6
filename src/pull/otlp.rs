//! Captures as OTLP profiles (`--otlp URL`): each collection's pprof profiles in one
//! `ExportProfilesServiceRequest` (protobuf, gzip) POSTed to an OpenTelemetry Collector's
//! `/v1development/profiles`, through the same uploader as dd-trace uploads (retries,
//! Retry-After, the spool). The resource carries the collection's tags under the OTel
//! semantic conventions' names; docs/otlp.md lists them.

use reqwest::Url;

/// Where OTLP profiles go, with the headers every request carries (credentials, never
/// spooled) and whether the pprof profile rides along as `original_payload`.
#[derive(Debug, Clone, PartialEq)]
pub struct OtlpTarget {
    pub url: Url,
    pub headers: Vec<(String, String)>,
    pub original_payload: bool,
}

/// What is wrong with an OTLP destination given, or with an upload made into a request.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum OtlpError {
    #[error("not a URL ({0})")]
    NotUrl(String),
    #[error("scheme {0}: use http or https")]
    Scheme(String),
    #[error("{0:?}: write it as NAME=VALUE")]
    HeaderForm(String),
    #[error("{0:?} is not a header name")]
    HeaderName(String),
    #[error("the value of {0} is not a header value")]
    HeaderValue(String),
    /// An attachment that is not a profile agentprof reads.
    #[error("{name}: {error}")]
    Profile {
        name: String,
        error: crate::pprof::Error,
    },
}

/// An endpoint as given: a URL with no path gets the profiles signal's
/// (`/v1development/profiles`), as the collector's exporters do with `endpoint`; one with a
/// path is used as it is.
pub fn endpoint(text: &str) -> Result<Url, OtlpError> {
    let mut u = Url::parse(text).map_err(|e| OtlpError::NotUrl(e.to_string()))?;
    match u.scheme() {
        "http" | "https" => {}
        s => return Err(OtlpError::Scheme(s.to_string())),
    }
    if u.path() == "/" || u.path().is_empty() {
        u.set_path(otlp::PATH);
    }
    Ok(u)
}

/// `K=V` of `--otlp-header`: a header name and value HTTP accepts.
pub fn header(text: &str) -> Result<(String, String), OtlpError> {
    let (k, v) = text
        .split_once('=')
        .ok_or_else(|| OtlpError::HeaderForm(text.to_string()))?;
    let k = k.trim();
    reqwest::header::HeaderName::from_bytes(k.as_bytes())
        .map_err(|_| OtlpError::HeaderName(k.to_string()))?;
    reqwest::header::HeaderValue::from_str(v.trim())
        .map_err(|_| OtlpError::HeaderValue(k.to_string()))?;
    Ok((k.to_string(), v.trim().to_string()))
}

/// The resource attribute a tag becomes: the OTel semantic conventions' name where there is
/// one, else the tag's own name; `profile_seq` (a count, not an identity) stays out.
fn attribute(key: &str, value: &str) -> Option<(String, String)> {
    let name = match key {
        "service" => "service.name",
        "version" => "service.version",
        "env" => "deployment.environment.name",
        "host" => "host.name",
        "runtime" => "process.runtime.name",
        "pod_name" => "k8s.pod.name",
        "pod_uid" => "k8s.pod.uid",
        "namespace" | "kube_namespace" => "k8s.namespace.name",
        "node_name" | "kube_node" => "k8s.node.name",
        "container_name" | "kube_container_name" => "container.name",
        "cluster_name_k8s" | "kube_cluster_name" => "k8s.cluster.name",
        "profile_seq" => return None,
        k => k,
    };
    Some((name.to_string(), value.to_string()))
}

/// The resource attributes of an upload's tags (`service:api` → `service.name=api`); a
/// workload's kind and name become `k8s.<kind>.name` (`k8s.deployment.name` …).
pub fn resource(tags: &[String]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let tag = |k: &str| {
        tags.iter()
            .find_map(|t| t.split_once(':').filter(|(a, _)| *a == k).map(|(_, v)| v))
    };
    for t in tags {
        let (k, v) = t.split_once(':').unwrap_or((t.as_str(), ""));
        if k == "workload_kind" || k == "workload_name" {
            continue;
        }
        if let Some(a) = attribute(k, v)
            && !out.iter().any(|(n, _)| *n == a.0)
        {
            out.push(a);
        }
    }
    if let (Some(kind), Some(name)) = (tag("workload_kind"), tag("workload_name")) {
        out.push((
            format!("k8s.{}.name", kind.to_ascii_lowercase()),
            name.to_string(),
        ));
    }
    out
}

/// The request (gzip) of an upload's pprof attachments (`name.pprof`, bytes) under the
/// resource of its tags, or None when it has none; Err names the profile that does not
/// decode.
pub fn request(
    attachments: &[(String, Vec<u8>)],
    tags: &[String],
    original_payload: bool,
) -> Result<Option<Vec<u8>>, OtlpError> {
    use prost::Message;
    let resource = resource(tags);
    let mut export = otlp::export::Export::new();
    let limits = crate::pprof::Limits::local();
    for (name, bytes) in attachments {
        if !name.ends_with(".pprof") {
            continue;
        }
        let p = crate::pprof::decode(bytes, &limits).map_err(|error| OtlpError::Profile {
            name: name.clone(),
            error,
        })?;
        export.add(
            &p,
            &otlp::export::Source {
                resource: &resource,
                original: original_payload.then_some(bytes.as_slice()),
            },
        );
    }
    if export.profiles() == 0 {
        return Ok(None);
    }
    let raw = export.finish().encode_to_vec();
    Ok(Some(crate::pprof::gzip_fast(&raw)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_become_the_semantic_conventions_attributes() {
        let tags: Vec<String> = [
            "service:api",
            "env:prod",
            "version:1.2",
            "host:n1",
            "runtime:go",
            "profile_seq:4",
            "pod_name:api-7",
            "namespace:shop",
            "node_name:n1",
            "container_name:app",
            "workload_kind:Deployment",
            "workload_name:api",
            "team:core",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let r = resource(&tags);
        let get = |k: &str| r.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("service.name"), Some("api"));
        assert_eq!(get("deployment.environment.name"), Some("prod"));
        assert_eq!(get("service.version"), Some("1.2"));
        assert_eq!(get("host.name"), Some("n1"));
        assert_eq!(get("k8s.pod.name"), Some("api-7"));
        assert_eq!(get("k8s.namespace.name"), Some("shop"));
        assert_eq!(get("k8s.node.name"), Some("n1"));
        assert_eq!(get("container.name"), Some("app"));
        assert_eq!(get("k8s.deployment.name"), Some("api"));
        assert_eq!(get("team"), Some("core"));
        assert_eq!(get("profile_seq"), None);
    }

    #[test]
    fn an_endpoint_without_a_path_gets_the_signal_s() {
        assert_eq!(
            endpoint("http://c:4318").map(|u| u.to_string()),
            Ok("http://c:4318/v1development/profiles".into())
        );
        assert_eq!(
            endpoint("https://c/custom/path").map(|u| u.to_string()),
            Ok("https://c/custom/path".into())
        );
        assert!(endpoint("ftp://c").is_err());
        assert_eq!(
            header("Authorization=Bearer x"),
            Ok(("Authorization".into(), "Bearer x".into()))
        );
        assert!(header("novalue").is_err());
        assert!(header("bad name=x").is_err());
    }
}
