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
        crate::support::skip("openssl is missing (.ci/run installs it)");
        return None;
    };
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    Some((cert, key))
}

/// A certificate authority in `dir` (`ca.pem`, `ca-key.pem`) and a serving certificate for
/// 127.0.0.1 it signed (`NAME.pem`, `NAME-key.pem`), as kubeadm lays out an API server's:
/// `(ca, cert, key)`. Called again with another NAME, the same CA signs another certificate
/// (a rotation); with another `dir`, another CA.
pub fn ca_signed(dir: &Path, name: &str) -> (PathBuf, PathBuf, PathBuf) {
    let (ca, ca_key) = (dir.join("ca.pem"), dir.join("ca-key.pem"));
    let run = |args: &[&str]| {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("openssl");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    if !ca.exists() {
        run(&[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=agentprof-test-ca",
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
            "-keyout",
            "ca-key.pem",
            "-out",
            "ca.pem",
        ]);
    }
    let (cert, key) = (
        dir.join(format!("{name}.pem")),
        dir.join(format!("{name}-key.pem")),
    );
    let csr = format!("{name}.csr");
    let ext = format!("{name}.ext");
    run(&[
        "req",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-subj",
        "/CN=kube-apiserver",
        "-keyout",
        &format!("{name}-key.pem"),
        "-out",
        &csr,
    ]);
    std::fs::write(
        dir.join(&ext),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=critical,CA:FALSE\n\
         extendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    run(&[
        "x509",
        "-req",
        "-in",
        &csr,
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca-key.pem",
        "-CAcreateserial",
        "-days",
        "2",
        "-extfile",
        &ext,
        "-out",
        &format!("{name}.pem"),
    ]);
    let _ = ca_key;
    (ca, cert, key)
}

/// Serves `app` over HTTPS on 127.0.0.1 (a free port) until the test process ends.
pub fn serve(app: axum::Router, cert: &Path, key: &Path) -> SocketAddr {
    serve_with(app, cert, key, None)
}

/// What a test does to a server's connections: `down` closes every new connection at once
/// (a server that is gone), `cut` ends every open one.
#[derive(Default)]
pub struct Gate {
    pub down: std::sync::atomic::AtomicBool,
    cut: std::sync::Mutex<Option<tokio::sync::watch::Sender<u64>>>,
    /// The TLS side new connections get, when it was changed from the one served first.
    acceptor: std::sync::Mutex<Option<tokio_rustls::TlsAcceptor>>,
}

impl Gate {
    /// Ends every open connection.
    pub fn cut(&self) {
        if let Some(tx) = self.cut.lock().unwrap().as_ref() {
            tx.send_modify(|n| *n += 1);
        }
    }

    /// New connections get this certificate chain and key (open ones keep theirs).
    pub fn set_certificate(&self, cert: &Path, key: &Path) {
        let config = server_config(cert, key, None);
        *self.acceptor.lock().unwrap() = Some(tokio_rustls::TlsAcceptor::from(Arc::new(config)));
    }

    /// Gone (every connection closed, new ones refused) or back.
    pub fn set_down(&self, down: bool) {
        self.down.store(down, std::sync::atomic::Ordering::SeqCst);
        if down {
            self.cut();
        }
    }
}

/// As `serve`, its connections under `gate`; the certificate chain is `cert`'s file
/// (the leaf first, then any intermediates).
pub fn serve_gated(app: axum::Router, cert: &Path, key: &Path, gate: Arc<Gate>) -> SocketAddr {
    serve_inner(app, cert, key, None, Some(gate))
}

/// As `serve`; with `client_ca`, a client must present a certificate it signed (mutual
/// TLS), else the handshake fails.
pub fn serve_with(
    app: axum::Router,
    cert: &Path,
    key: &Path,
    client_ca: Option<&Path>,
) -> SocketAddr {
    serve_inner(app, cert, key, client_ca, None)
}

fn serve_inner(
    app: axum::Router,
    cert: &Path,
    key: &Path,
    client_ca: Option<&Path>,
    gate: Option<Arc<Gate>>,
) -> SocketAddr {
    let config = server_config(cert, key, client_ca);
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    on_thread(move |l| async move {
        let (cut_tx, cut_rx) = tokio::sync::watch::channel(0u64);
        if let Some(g) = &gate {
            *g.cut.lock().unwrap() = Some(cut_tx);
        }
        loop {
            let Ok((tcp, _)) = l.accept().await else {
                continue;
            };
            if gate
                .as_ref()
                .is_some_and(|g| g.down.load(std::sync::atomic::Ordering::SeqCst))
            {
                drop(tcp);
                continue;
            }
            let current = gate
                .as_ref()
                .and_then(|g| g.acceptor.lock().unwrap().clone());
            let (acceptor, app) = (current.unwrap_or_else(|| acceptor.clone()), app.clone());
            let mut cut = cut_rx.clone();
            cut.mark_unchanged();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let svc = hyper_util::service::TowerToHyperService::new(app);
                let conn = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(tls), svc);
                tokio::select! {
                    _ = conn => {}
                    _ = cut.changed() => {}
                }
            });
        }
    })
}

/// A server's TLS configuration: `cert`'s chain and `key`; with `client_ca`, clients must
/// present a certificate it signed.
fn server_config(cert: &Path, key: &Path, client_ca: Option<&Path>) -> rustls::ServerConfig {
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
    builder.with_single_cert(certs, key).unwrap()
}

/// A listener on 127.0.0.1 (a free port) served by `serve` on a runtime of its own, on a
/// thread of its own, until the test process ends; its address.
pub fn on_thread<F, Fut>(serve: F) -> SocketAddr
where
    F: FnOnce(tokio::net::TcpListener) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()>,
{
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            serve(tokio::net::TcpListener::from_std(listener).unwrap()).await;
        });
    });
    addr
}
