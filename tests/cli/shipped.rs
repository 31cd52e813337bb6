//! The checks shipped in checks/: run as users run them, against real servers and files.

use std::io::{Read, Write};
use std::net::TcpListener;

use crate::support::{Sandbox, metric_values};

fn shipped() -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("checks")
        .display()
        .to_string()
}

/// A loopback HTTP server answering every request with `status` and `body`, `n` times.
fn http_server(status: &'static str, body: &'static str, n: usize) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(n) {
            let Ok(mut s) = stream else { continue };
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ = write!(
                s,
                "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    format!("http://{addr}/health")
}

#[test]
fn http_check_measures_an_endpoint() {
    let sb = Sandbox::new();
    let up = http_server("200 OK", "{\"status\": \"ok\"}", 1);
    let down = http_server("503 Service Unavailable", "busy", 1);
    sb.write(
        "conf.d/http_check.yaml",
        &format!(
            "instances:\n  - url: {up}\n    name: up\n    content_match: 'ok'\n  - url: {down}\n    name: down\n  - url: http://127.0.0.1:1/\n    name: closed\n    request_timeout: 2\n"
        ),
    );
    let r = sb.run(&["check", "http_check", "--checks", &shipped(), "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    let rt = metric_values(&doc, "network.http.response_time");
    assert_eq!(rt.len(), 2, "up and down answered");
    assert!(rt.iter().all(|t| *t > 0.0 && *t < 2.0));
    let sc: Vec<(String, u64)> = doc["service_checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["tags"].to_string(), s["status"].as_u64().unwrap()))
        .collect();
    assert!(
        sc.iter().any(|(t, s)| t.contains("instance:up") && *s == 0),
        "{sc:?}"
    );
    assert!(
        sc.iter()
            .any(|(t, s)| t.contains("instance:down") && *s == 2),
        "{sc:?}"
    );
    assert!(
        sc.iter()
            .any(|(t, s)| t.contains("instance:closed") && *s == 2),
        "{sc:?}"
    );
    assert_eq!(
        metric_values(&doc, "network.http.cant_connect")
            .iter()
            .sum::<f64>(),
        1.0
    );
}

#[test]
fn http_check_reads_the_tls_certificate_expiry() {
    if std::process::Command::new("openssl")
        .arg("version")
        .output()
        .is_err()
    {
        crate::support::skip("openssl is missing (.ci/run installs it)");
        return;
    }
    let sb = Sandbox::new();
    let (cert, key) = (sb.file("cert.pem"), sb.file("key.pem"));
    let ok = std::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "10",
            "-subj",
            "/CN=localhost",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .unwrap();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    // A real TLS server: Python's http.server behind ssl, on a free loopback port.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let server = format!(
        "import http.server, ssl\n\
         ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); ctx.load_cert_chain({c:?}, {k:?})\n\
         srv = http.server.HTTPServer(('127.0.0.1', {port}), http.server.SimpleHTTPRequestHandler)\n\
         srv.socket = ctx.wrap_socket(srv.socket, server_side=True)\n\
         srv.serve_forever()\n",
        c = cert.display().to_string(),
        k = key.display().to_string(),
    );
    let mut child = std::process::Command::new("python3")
        .args(["-c", &server])
        .current_dir(sb.path())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "TLS server did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    sb.write(
        "conf.d/http_check.yaml",
        &format!("instances:\n  - url: https://localhost:{port}/\n    tls_verify: false\n"),
    );
    let r = sb.run(&["check", "http_check", "--checks", &shipped(), "--json"]);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    let days = metric_values(&doc, "http.ssl.days_left");
    assert_eq!(days.len(), 1, "{doc}");
    assert!(days[0] > 9.0 && days[0] <= 10.0, "{days:?}");
    let cert_sc = doc["service_checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "http.ssl_cert")
        .unwrap();
    assert_eq!(
        cert_sc["status"], 1,
        "10 days left is a warning (days_warning 14)"
    );
}

#[test]
fn directory_check_counts_sizes_and_ages_files() {
    let sb = Sandbox::new();
    sb.write("spool/a.csv", "12345");
    sb.write("spool/b.csv", "123");
    sb.write("spool/skip.tmp", "1234567890");
    let old = std::fs::File::options()
        .write(true)
        .open(sb.file("spool/a.csv"))
        .unwrap();
    old.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(3600))
        .unwrap();
    sb.write(
        "conf.d/directory.yaml",
        &format!(
            "instances:\n  - directory: {}\n    name: spool\n    pattern: '*.csv'\n",
            sb.file("spool").display()
        ),
    );
    let r = sb.run(&["check", "directory", "--checks", &shipped(), "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    assert_eq!(
        metric_values(&doc, "system.disk.directory.files"),
        vec![2.0]
    );
    assert_eq!(
        metric_values(&doc, "system.disk.directory.bytes"),
        vec![8.0]
    );
    let age = metric_values(&doc, "system.disk.directory.oldest_file_age")[0];
    assert!((3599.0..3700.0).contains(&age), "{age}");
    let m = doc["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "system.disk.directory.files")
        .unwrap();
    assert_eq!(m["tags"], serde_json::json!(["dir_name:spool"]));
}

/// `timeout:` (the option the Agent's http_check reads) bounds the request: a server that
/// accepts and never answers is a CRITICAL `timed out` within it, not a run that hangs. And an
/// http:// URL builds no SSL context: the check's own profile never enters
/// `ssl.create_default_context` (loading the CA store cost every run about 20 ms of CPU).
#[test]
fn http_check_honours_timeout_and_builds_no_tls_for_http() {
    let sb = Sandbox::new();
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = silent.local_addr().unwrap();
    let up = http_server("200 OK", "ok", 3);
    sb.write(
        "conf.d/http_check.yaml",
        &format!(
            "instances:\n  - url: http://{addr}/\n    name: silent\n    timeout: 1\n  - url: {up}\n    name: up\n"
        ),
    );
    let r = sb.run(&[
        "check",
        "http_check",
        "--checks",
        &shipped(),
        "--instance",
        "0",
        "--json",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    // The run's own time: the 1 s timeout, not the 10 s default.
    let took = doc["runs"][0]["run_time_s"].as_f64().unwrap();
    assert!((1.0..9.0).contains(&took), "{took}");
    let sc = &doc["service_checks"][0];
    assert_eq!(sc["status"], 2, "{sc}");
    assert!(
        sc["message"].as_str().unwrap().contains("timed out"),
        "{sc}"
    );
    drop(silent);
    let r = sb.run(&[
        "check",
        "http_check",
        "--checks",
        &shipped(),
        "--instance",
        "1",
        "-t",
        "3",
        "--profile",
        "--json",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let profile = r.stdout.to_string();
    assert!(
        profile.contains("http_check.py"),
        "the profile lists the check's calls"
    );
    assert!(!profile.contains("create_default_context"), "{profile}");
}
