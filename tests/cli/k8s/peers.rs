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
    crate::support::skip("kubectl is missing (.ci/run installs Debian's kubernetes-client)");
    None
}

/// A pod of node n1 with no port, added after the others.
fn late(name: &str, uid: &str, ip: &str) -> serde_json::Value {
    pod("shop", name, uid, "n1", ip, json!({}), &[("app", &[])])
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
    api.wait_for_watches(1);
    api.put_pod(late("late", "uid-late", "127.0.0.20"));
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

/// The client-go informer of tests/go/informer, built once per test run.
fn informer_binary() -> Option<std::path::PathBuf> {
    static BIN: std::sync::OnceLock<Option<std::path::PathBuf>> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        if !crate::support::require_go() {
            return None;
        }
        let out = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("informer");
        let src = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/go/informer");
        let st = Command::new("go")
            .args(["build", "-o"])
            .arg(&out)
            .arg(".")
            .current_dir(&src)
            .status()
            .expect("go build");
        assert!(st.success(), "go build of the client-go informer failed");
        Some(out)
    })
    .clone()
}

/// A client-go shared informer (v0.37) on one node's pods: it lists, watches, sees adds and
/// deletes, and after its watch is refused and the history compacted (410 Gone) it relists
/// and catches up, with no error the informer calls fatal.
#[test]
fn a_client_go_informer_lists_watches_and_relists_after_410() {
    let Some(bin) = informer_binary() else { return };
    let sb = Sandbox::new();
    let Some(api) = server_with_pods(sb.path()) else {
        return;
    };
    let kc = sb.file("kubeconfig");
    api.kubeconfig(&kc);
    let mut child = Command::new(bin)
        .arg("--kubeconfig")
        .arg(&kc)
        .args(["--node", "n1", "--duration", "60s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<serde_json::Value>();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str(&line) {
                let _ = tx.send(v);
            }
        }
    });
    let mut seen: Vec<serde_json::Value> = Vec::new();
    let mut wait = |what: &str, want: &dyn Fn(&serde_json::Value) -> bool| {
        let end = Instant::now() + Duration::from_secs(30);
        loop {
            if seen.iter().any(want) {
                return;
            }
            match rx.recv_timeout(end.saturating_duration_since(Instant::now())) {
                Ok(v) => seen.push(v),
                Err(_) => panic!("no {what}: {seen:?}\n{:?}", api.log()),
            }
        }
    };
    wait("synced", &|v| v["event"] == "synced");
    api.wait_for_watches(1);
    api.put_pod(late("late", "uid-late", "127.0.0.20"));
    api.delete_pod("shop", "web-2");
    wait("late added", &|v| {
        v["event"] == "add" && v["pod"] == "shop/late"
    });
    wait("web-2 deleted", &|v| {
        v["event"] == "delete" && v["pod"] == "shop/web-2"
    });
    // client-go 0.37 lists as a streaming list (a watch with sendInitialEvents), or with a
    // LIST where a server has no streaming lists: either is a (re)list.
    let relists = || {
        api.log()
            .iter()
            .filter(|l| l.contains("sendInitialEvents=true") || !l.contains("watch=true"))
            .filter(|l| l.contains("/pods"))
            .count()
    };
    let lists = relists();
    assert_eq!(lists, 1, "{:?}", api.log());
    let watches = api.count("watch");
    api.pause_watches(true);
    api.cut_watches();
    api.wait_for_watches(watches + 1);
    api.put_pod(late("later", "uid-later", "127.0.0.21"));
    api.delete_pod("shop", "web-4");
    api.compact();
    api.pause_watches(false);
    wait("later added after the relist", &|v| {
        v["event"] == "add" && v["pod"] == "shop/later"
    });
    wait("web-4 deleted after the relist", &|v| {
        v["event"] == "delete" && v["pod"] == "shop/web-4"
    });
    assert!(relists() > lists, "a relist: {:?}", api.log());
    let mut adds: Vec<&str> = seen
        .iter()
        .filter(|v| v["event"] == "add")
        .map(|v| v["pod"].as_str().unwrap())
        .collect();
    // The informer hands the initial objects over in its store's order.
    adds[..4].sort_unstable();
    assert_eq!(
        adds,
        [
            "shop/web-0",
            "shop/web-2",
            "shop/web-4",
            "shop/web-6",
            "shop/late",
            "shop/later"
        ],
        "only node n1's pods"
    );
    let _ = child.kill();
    let _ = child.wait();
}
