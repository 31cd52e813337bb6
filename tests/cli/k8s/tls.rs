//! HTTPS for the loopback API server and kubelet: a self-signed certificate for 127.0.0.1
//! made by openssl, and an axum router served over rustls on a runtime of its own.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// A certificate and key for 127.0.0.1 in `dir`: `(cert.pem, key.pem)`, good for a server
/// and as a client certificate. None (a skip) only outside CI when openssl is missing.
pub fn certificate(dir: &Path) -> Option<(PathBuf, PathBuf)> {
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let made = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
        ])
        .args(["-nodes", "-days", "2", "-subj", "/CN=127.0.0.1"])
        .args(["-addext", "subjectAltName=IP:127.0.0.1"])
        // An end-entity certificate trusted as itself (webpki refuses a CA as a server's).
        .args(["-addext", "basicConstraints=critical,CA:FALSE"])
        .args(["-addext", "extendedKeyUsage=serverAuth,clientAuth"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output();
    let Ok(made) = made else {
        assert!(std::env::var_os("CI").is_none(), "CI installs openssl");
        eprintln!("skipped: no openssl");
        return None;
    };
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    Some((cert, key))
}

/// Serves `app` over HTTPS on 127.0.0.1 (a free port) until the test process ends.
pub fn serve(app: axum::Router, cert: &Path, key: &Path) -> SocketAddr {
    serve_with(app, cert, key, None)
}

/// As `serve`; with `client_ca`, a client must present a certificate it signed (mutual
/// TLS), else the handshake fails.
pub fn serve_with(
    app: axum::Router,
    cert: &Path,
    key: &Path,
    client_ca: Option<&Path>,
) -> SocketAddr {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let pem = |p: &Path| -> Vec<CertificateDer<'static>> {
        CertificateDer::pem_file_iter(p)
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let certs = pem(cert);
    let key = PrivateKeyDer::from_pem_file(key).unwrap();
    let builder = rustls::ServerConfig::builder();
    let builder = match client_ca {
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            for c in pem(ca) {
                roots.add(c).unwrap();
            }
            let verifier = rustls::server::WebPkiClientVerifier::builder(Arc::new(roots))
                .build()
                .unwrap();
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let config = builder.with_single_cert(certs, key).unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let l = tokio::net::TcpListener::from_std(listener).unwrap();
            loop {
                let Ok((tcp, _)) = l.accept().await else {
                    continue;
                };
                let (acceptor, app) = (acceptor.clone(), app.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let svc = hyper_util::service::TowerToHyperService::new(app);
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(tls), svc)
                        .await;
                });
            }
        });
    });
    addr
}
