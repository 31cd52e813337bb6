//! The node's kubelet `/stats/summary`: directly at `kubelet_url` (default
//! `https://$NODE_IP:10250`) with the bearer token, or through the API server's node proxy
//! when no address is known. One query per monitoring round, bounded in time and size.

use std::path::Path;
use std::time::Duration;

use super::stats::Summary;

/// The largest summary read: a 110-pod node's is a few hundred KiB.
const MAX_SUMMARY: usize = 16 << 20;

pub enum Kubelet {
    Direct {
        client: reqwest::Client,
        url: reqwest::Url,
        token: Option<String>,
    },
    /// `/api/v1/nodes/<node>/proxy/stats/summary` through the API server.
    Proxy { client: kube::Client, node: String },
}

/// Where the kubelet is, and how agentprof authenticates to it.
pub struct KubeletSettings<'a> {
    pub url: Option<reqwest::Url>,
    pub node_ip: Option<String>,
    pub tls_verify: bool,
    pub client_ca: Option<&'a Path>,
    pub token_file: Option<&'a Path>,
    pub token: Option<String>,
}

impl Kubelet {
    pub fn new(s: KubeletSettings<'_>, api: &kube::Client, node: &str) -> Result<Kubelet, String> {
        let url = match (s.url, s.node_ip.filter(|ip| !ip.is_empty())) {
            (Some(u), _) => u,
            (None, Some(ip)) => {
                let host = if ip.contains(':') {
                    format!("[{ip}]")
                } else {
                    ip
                };
                reqwest::Url::parse(&format!("https://{host}:10250"))
                    .map_err(|e| format!("$NODE_IP {host}: {e}"))?
            }
            (None, None) => {
                return Ok(Kubelet::Proxy {
                    client: api.clone(),
                    node: node.to_string(),
                });
            }
        };
        let mut url = url;
        url.set_path(&format!(
            "{}/stats/summary",
            url.path().trim_end_matches('/')
        ));
        let token = match s.token_file {
            Some(f) => {
                let b = crate::config::read_limited(f, 64 << 10, "")
                    .map_err(|e| format!("kubelet_token_file: {e}"))?;
                Some(String::from_utf8_lossy(&b).trim().to_string())
            }
            None => s.token,
        };
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut b = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(5))
            .user_agent(concat!("agentprof/", env!("CARGO_PKG_VERSION")));
        if let Some(ca) = s.client_ca {
            let pem = crate::config::read_limited(ca, 1 << 20, "")
                .map_err(|e| format!("kubelet_client_ca: {e}"))?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem)
                .map_err(|e| format!("kubelet_client_ca {}: {e}", ca.display()))?;
            b = b.tls_certs_merge(certs);
        }
        if !s.tls_verify {
            b = b.danger_accept_invalid_certs(true);
        }
        let client = b.build().map_err(|e| format!("kubelet client: {e}"))?;
        Ok(Kubelet::Direct { client, url, token })
    }

    /// Where the summary comes from, for messages.
    pub fn describe(&self) -> String {
        match self {
            Kubelet::Direct { url, .. } => crate::redact::url(url),
            Kubelet::Proxy { node, .. } => format!("the API server's proxy to node {node}"),
        }
    }

    /// One query, within `timeout`.
    pub async fn summary(&self, timeout: Duration) -> Result<Summary, String> {
        match tokio::time::timeout(timeout, self.fetch()).await {
            Ok(r) => r,
            Err(_) => Err(format!(
                "{}: no answer within {}",
                self.describe(),
                crate::duration::human(timeout)
            )),
        }
    }

    async fn fetch(&self) -> Result<Summary, String> {
        let body = match self {
            Kubelet::Direct { client, url, token } => {
                let mut req = client.get(url.clone());
                if let Some(t) = token {
                    req = req.bearer_auth(t);
                }
                let mut resp = req
                    .send()
                    .await
                    .map_err(|e| format!("{}: {}", self.describe(), root(&e)))?;
                let status = resp.status();
                let mut body = Vec::new();
                while let Some(chunk) = resp
                    .chunk()
                    .await
                    .map_err(|e| format!("{}: {}", self.describe(), root(&e)))?
                {
                    if body.len() + chunk.len() > MAX_SUMMARY {
                        return Err(format!(
                            "{}: the summary is larger than {} MiB",
                            self.describe(),
                            MAX_SUMMARY >> 20
                        ));
                    }
                    body.extend_from_slice(&chunk);
                }
                if !status.is_success() {
                    let text = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
                    let hint = if status.as_u16() == 401 || status.as_u16() == 403 {
                        " (the ClusterRole needs get on nodes/stats)"
                    } else {
                        ""
                    };
                    return Err(format!(
                        "{}: HTTP {status}{hint}: {}",
                        self.describe(),
                        text.trim()
                    ));
                }
                body
            }
            Kubelet::Proxy { client, node } => {
                let req = http::Request::get(format!("/api/v1/nodes/{node}/proxy/stats/summary"))
                    .body(Vec::new())
                    .map_err(|e| e.to_string())?;
                client
                    .request_text(req)
                    .await
                    .map_err(|e| format!("{}: {}", self.describe(), super::discover::describe(&e)))?
                    .into_bytes()
            }
        };
        Summary::parse(&body).map_err(|e| format!("{}: {e}", self.describe()))
    }
}

fn root(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(n) = cur.source() {
        cur = n;
    }
    cur.to_string()
}
