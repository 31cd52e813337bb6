//! The loopback API server is checked with real clients: kubectl lists, gets and watches it;
//! a client-go informer lists in pages and watches it through a relist after 410 Gone.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use super::apiserver::{ApiServer, pod};
use crate::support::Sandbox;

/// kubectl on PATH; under CI its absence fails the test.
pub fn kubectl() -> Option<String> {
    let ok = Command::new("kubectl")
        .args(["version", "--client"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        return Some("kubectl".into());
    }
    assert!(
        std::env::var("CI").is_err(),
        "kubectl is missing (.ci/run installs Debian's kubernetes-client)"
    );
    eprintln!("skipped: kubectl is not installed");
    None
}

fn server_with_pods(dir: &std::path::Path) -> Option<ApiServer> {
    let api = ApiServer::start(dir, "t0ken")?;
    for i in 0..7 {
        let node = if i % 2 == 0 { "n1" } else { "n2" };
        api.put_pod(pod(
            "shop",
            &format!("web-{i}"),
            &format!("uid-{i}"),
            node,
            &format!("127.0.0.{}", i + 2),
            json!({"app": "web"}),
            &[("app", &[("pprof", 6060)])],
        ));
    }
    Some(api)
}

#[test]
fn kubectl_lists_pages_gets_and_watches_the_loopback_api_server() {
    let Some(kubectl) = kubectl() else { return };
    let sb = Sandbox::new();
    let Some(api) = server_with_pods(sb.path()) else {
        return;
    };
    let kc = sb.file("kubeconfig");
    api.kubeconfig(&kc);
    let run = |args: &[&str]| {
        let o = Command::new(&kubectl)
            .arg("--kubeconfig")
            .arg(&kc)
            .args(args)
            .output()
            .unwrap();
        (
            o.status.success(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    // Paged: kubectl asks for pages of 2 and follows the continue tokens.
    let (ok, out, err) = run(&[
        "get",
        "pods",
        "-A",
        "--chunk-size=2",
        "--field-selector",
        "spec.nodeName=n1",
        "-o",
        "name",
    ]);
    assert!(ok, "{out}\n{err}\n{:?}", api.log());
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        ["pod/web-0", "pod/web-2", "pod/web-4", "pod/web-6"],
        "{err}"
    );
    assert_eq!(api.counts()["list pods"], 2, "{:?}", api.log());
    let (ok, out, err) = run(&["get", "pod", "-n", "shop", "web-3", "-o", "json"]);
    assert!(ok, "{err}\n{:?}", api.log());
    let p: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(p["status"]["podIP"], "127.0.0.5");
    let (ok, _, err) = run(&["get", "pod", "-n", "shop", "nope"]);
    assert!(
        !ok && err.contains("pods \"nope\" not found"),
        "{err}\n{:?}",
        api.log()
    );
    // A field the API server does not index is refused, as by the real one.
    let (ok, _, err) = run(&["get", "pods", "-A", "--field-selector", "spec.bogus=x"]);
    assert!(!ok && err.contains("field label not supported"), "{err}");
    // A wrong token is refused.
    let bad = sb.file("bad-kubeconfig");
    std::fs::write(
        &bad,
        std::fs::read_to_string(&kc)
            .unwrap()
            .replace("t0ken", "wrong"),
    )
    .unwrap();
    let o = Command::new(&kubectl)
        .arg("--kubeconfig")
        .arg(&bad)
        .args(["get", "pods", "-A"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("nauthorized"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Watching: kubectl lists, then prints the changes as they happen.
    let mut child = Command::new(&kubectl)
        .arg("--kubeconfig")
        .arg(&kc)
        .args(["get", "pods", "-n", "shop", "-w", "-o", "name"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while api.count("watch") == 0 && t0.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(50));
    }
    api.put_pod(pod(
        "shop",
        "late",
        "uid-late",
        "n1",
        "127.0.0.20",
        json!({}),
        &[("app", &[])],
    ));
    api.delete_pod("shop", "web-1");
    std::thread::sleep(Duration::from_millis(800));
    let _ = child.kill();
    let o = child.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines.len(),
        9,
        "7 listed, then the added and the deleted: {out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(lines[7], "pod/late");
    assert_eq!(lines[8], "pod/web-1");
}
