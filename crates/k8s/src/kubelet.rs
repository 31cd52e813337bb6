//! The node's kubelet `/stats/summary`: directly at `kubelet_url` (default
//! `https://$NODE_IP:10250`), or through the API server's node proxy when no address is
//! known. One query per monitoring round, bounded in time and size.
//!
//! The direct client is kube's, made from the same configuration as the API server's: the
//! kubelet is sent the same credentials (a token file re-read every minute as the cluster
//! rotates it, a kubeconfig's exec plugin or client certificate), or `kubelet_token_file`'s
//! token, read at every query. On a 401 the credentials are read again at once and the query
//! repeated. Over plain HTTP (the read-only port) no credential is sent at all.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::BodyExt;

use super::api::ApiStats;
use super::stats::Summary;
use crate::Error;

/// The largest summary read: a 110-pod node's is a few hundred KiB.
const MAX_SUMMARY: usize = 16 << 20;

/// Where this node's kubelet is read: at its own address (`kubelet_url` or `$NODE_IP`), or
/// through the API server's node proxy.
pub struct Kubelet(Route);

enum Route {
    Direct(Box<Direct>),
    /// `/api/v1/nodes/<node>/proxy/stats/summary` through the API server.
    Proxy {
        client: kube::Client,
        node: String,
    },
}

struct Direct {
    config: kube::Config,
    client: tokio::sync::Mutex<kube::Client>,
    path: String,
    shown: String,
    /// What is sent to authenticate, in words.
    pub credentials: String,
    /// `kubelet_token_file`: its token, read at every query.
    token_file: Option<std::path::PathBuf>,
    stats: Arc<ApiStats>,
}

/// Where the kubelet is, and how agentprof authenticates to it.
pub struct KubeletSettings<'a> {
    pub url: Option<url::Url>,
    pub node_ip: Option<String>,
    pub tls_verify: bool,
    pub client_ca: Option<&'a Path>,
    pub token_file: Option<&'a Path>,
}

/// The kubelet's address: `kubelet_url`, else `https://$NODE_IP:10250`, else none (the node
/// proxy).
fn address(s: &KubeletSettings<'_>) -> Result<Option<url::Url>, Error> {
    if let Some(u) = &s.url {
        return Ok(Some(u.clone()));
    }
    let Some(ip) = s.node_ip.as_deref().filter(|ip| !ip.is_empty()) else {
        return Ok(None);
    };
    let host = if ip.contains(':') {
        format!("[{ip}]")
    } else {
        ip.to_string()
    };
    url::Url::parse(&format!("https://{host}:10250"))
        .map(Some)
        .map_err(|e| Error::setting("$NODE_IP", format!("{host}: {e}")))
}

impl Kubelet {
    pub fn new(
        s: KubeletSettings<'_>,
        cluster: &super::client::Cluster,
        node: &str,
    ) -> Result<Kubelet, Error> {
        let Some(url) = address(&s)? else {
            return Ok(Kubelet(Route::Proxy {
                client: cluster.client.clone(),
                node: node.to_string(),
            }));
        };
        let mut config = cluster.config.clone();
        let port = url.port().map(|p| format!(":{p}")).unwrap_or_default();
        let base = format!("{}://{}{port}", url.scheme(), url.host_str().unwrap_or(""));
        config.cluster_url = base.parse().map_err(|e| {
            Error::setting(
                "kubelet_url",
                format!("{}: {e}", agentprof_checks::redact::url(&url)),
            )
        })?;
        config.tls_server_name = None;
        config.proxy_url = None;
        let plain = url.scheme() == "http";
        let token_file = s.token_file.filter(|_| !plain).map(Path::to_path_buf);
        if plain || token_file.is_some() {
            config.auth_info = Default::default();
        }
        if let Some(f) = &token_file {
            read_token(f)?;
        }
        if let Some(ca) = s.client_ca {
            let pem = agentprof_checks::config::read_limited(ca, 1 << 20, "")
                .map_err(|e| Error::setting("kubelet_client_ca", e.to_string()))?;
            config.root_cert = Some(pem_certificates(&pem, ca)?);
        }
        config.accept_invalid_certs = !s.tls_verify;
        let credentials = match &token_file {
            _ if plain => {
                "no credentials (kubelet_url is plain HTTP: a token would travel in clear text)"
                    .into()
            }
            Some(f) => format!("the bearer token in {} (kubelet_token_file)", f.display()),
            None => super::client::credentials(&config),
        };
        let stats = Arc::new(ApiStats::default());
        let client = super::client::client(config.clone(), &stats)
            .map_err(|e| Error::setting("kubelet_url", format!("a client for it: {e}")))?;
        let path = format!("{}/stats/summary", url.path().trim_end_matches('/'));
        Ok(Kubelet(Route::Direct(Box::new(Direct {
            config,
            client: tokio::sync::Mutex::new(client),
            path,
            shown: agentprof_checks::redact::url(&url),
            credentials,
            token_file,
            stats,
        }))))
    }

    /// Where the summary comes from, for messages.
    pub fn describe(&self) -> String {
        match &self.0 {
            Route::Direct(d) => d.shown.clone(),
            Route::Proxy { node, .. } => format!("the API server's proxy to node {node}"),
        }
    }

    /// What the kubelet is sent to authenticate, for the start line.
    pub fn credentials(&self) -> String {
        match &self.0 {
            Route::Direct(d) => d.credentials.clone(),
            Route::Proxy { .. } => "the API server's (through its node proxy)".into(),
        }
    }

    /// One query, within `timeout`.
    pub async fn summary(&self, timeout: Duration) -> Result<Summary, Error> {
        match tokio::time::timeout(timeout, self.fetch()).await {
            Ok(r) => r,
            Err(_) => Err(Error::KubeletTimeout {
                kubelet: self.describe(),
                after: timeout,
            }),
        }
    }

    async fn fetch(&self) -> Result<Summary, Error> {
        let body = match &self.0 {
            Route::Direct(d) => d.fetch().await?,
            Route::Proxy { client, node } => {
                let req = http::Request::get(format!("/api/v1/nodes/{node}/proxy/stats/summary"))
                    .body(Vec::new())
                    .map_err(|e| Error::request(e.to_string()))?;
                client
                    .request_text(req)
                    .await
                    .map_err(|e| {
                        Error::request(format!(
                            "{}: {}",
                            self.describe(),
                            crate::error::describe(&e, "get", "nodes/proxy")
                        ))
                    })?
                    .into_bytes()
            }
        };
        Summary::parse(&body).map_err(|e| match e {
            Error::NotASummary { source, .. } => Error::NotASummary {
                kubelet: Some(self.describe()),
                source,
            },
            e => e,
        })
    }
}

impl Direct {
    /// The summary's bytes; a 401 reads the credentials again (a rotated token) and asks once
    /// more.
    async fn fetch(&self) -> Result<Vec<u8>, Error> {
        match self.once().await {
            Err(Error::KubeletRequest {
                code: Some(401), ..
            }) => {
                let fresh = super::client::client(self.config.clone(), &self.stats)
                    .map_err(|e| Error::request(format!("kubelet client: {e}")))?;
                *self.client.lock().await = fresh;
                self.once().await
            }
            other => other,
        }
    }

    async fn once(&self) -> Result<Vec<u8>, Error> {
        let client = self.client.lock().await.clone();
        let mut req = http::Request::get(self.path.as_str());
        if let Some(f) = &self.token_file {
            let token = read_token(f).map_err(|e| Error::request(e.to_string()))?;
            req = req.header(http::header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let req = req
            .body(kube::client::Body::empty())
            .map_err(|e| Error::request(e.to_string()))?;
        let resp = client
            .send(req)
            .await
            .map_err(|e| Error::request(format!("{}: {}", self.shown, crate::error::chain(&e))))?;
        let status = resp.status();
        let mut body = resp.into_body();
        let mut bytes = Vec::new();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| Error::request(format!("{}: {e}", self.shown)))?;
            if let Some(chunk) = frame.data_ref() {
                if bytes.len() + chunk.len() > MAX_SUMMARY {
                    return Err(Error::request(format!(
                        "{}: the summary is larger than {} MiB",
                        self.shown,
                        MAX_SUMMARY >> 20
                    )));
                }
                bytes.extend_from_slice(chunk);
            }
        }
        if status.is_success() {
            return Ok(bytes);
        }
        let text = String::from_utf8_lossy(&bytes[..bytes.len().min(200)]).into_owned();
        let hint = match status.as_u16() {
            401 => format!(
                " (sent: {}; the kubelet checks it with the API server)",
                self.credentials
            ),
            403 => format!(
                " (sent: {}; the ClusterRole needs get on nodes/stats)",
                self.credentials
            ),
            _ => String::new(),
        };
        Err(Error::KubeletRequest {
            code: Some(status.as_u16()),
            message: format!(
                "{}: HTTP {status}{hint}: {}",
                self.shown,
                agentprof_checks::redact::printable(text.trim())
            ),
        })
    }
}

/// A token file's token, trimmed (a file written by hand ends in a newline).
fn read_token(f: &Path) -> Result<String, Error> {
    let b = agentprof_checks::config::read_limited(f, 64 << 10, "")
        .map_err(|e| Error::setting("kubelet_token_file", e.to_string()))?;
    let t = String::from_utf8_lossy(&b).trim().to_string();
    if t.is_empty() || t.contains(|c: char| c.is_control()) {
        return Err(Error::setting(
            "kubelet_token_file",
            format!(
                "{}: not a bearer token (empty, or with control characters)",
                f.display()
            ),
        ));
    }
    Ok(t)
}

/// The DER certificates of the PEM bundle read from `ca` (kubelet_client_ca).
fn pem_certificates(pem: &[u8], ca: &Path) -> Result<Vec<Vec<u8>>, Error> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let bad = |e: &dyn std::fmt::Display| {
        Error::setting("kubelet_client_ca", format!("{}: {e}", ca.display()))
    };
    let certs: Vec<Vec<u8>> = CertificateDer::pem_slice_iter(pem)
        .map(|c| c.map(|c| c.to_vec()))
        .collect::<Result<_, _>>()
        .map_err(|e| bad(&e))?;
    if certs.is_empty() {
        return Err(bad(&"no certificate in it"));
    }
    Ok(certs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_setting_is_named_in_its_error() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("token");
        std::fs::write(&empty, "\n").unwrap();
        let setting = |e: Error| match e {
            Error::Setting { setting, .. } => setting,
            e => panic!("not a setting's error: {e:?}"),
        };
        let e = read_token(&empty).unwrap_err();
        assert!(e.to_string().contains("not a bearer token"), "{e}");
        assert_eq!(setting(e), "kubelet_token_file");
        let e = read_token(&dir.path().join("absent")).unwrap_err();
        assert_eq!(setting(e), "kubelet_token_file");
        std::fs::write(&empty, "abc.def\n").unwrap();
        assert_eq!(read_token(&empty).unwrap(), "abc.def");

        let settings = |ip: &str| KubeletSettings {
            url: None,
            node_ip: Some(ip.into()),
            tls_verify: true,
            client_ca: None,
            token_file: None,
        };
        let e = address(&settings("10.0.0.1 bad")).unwrap_err();
        assert_eq!(setting(e), "$NODE_IP");
        assert_eq!(
            address(&settings("fd00::1")).unwrap().unwrap().as_str(),
            "https://[fd00::1]:10250/"
        );
        assert!(address(&settings("")).unwrap().is_none());
    }
}
