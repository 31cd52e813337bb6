use std::time::Duration;

use super::*;
use crate::k8s::rule::quantity;

fn parse(text: &str) -> Result<Option<K8sConfig>, UsageError> {
    K8sConfig::parse(Path::new("conf.d/profile.yaml"), text)
}

fn err(text: &str) -> String {
    parse(text).unwrap_err().to_string()
}

const DATAKIT: &str = r#"init_config:
  kubernetes_max_concurrency: 3
  kubernetes_delta_cache_mb: 48
  upload_url: http://127.0.0.1:9529/profiling/v1/input
instances:
  - url: http://127.0.0.1:6060
kubernetes:
  - node_local: true
    namespaces: [guancedb]
    selector: "app.kubernetes.io/name=guancedb,app.kubernetes.io/component=select"
    container: select
    port: pprof
    path: /debug/pprof
    interval: 10m
    scheduled_types: [heap, goroutine]
    trigger_types: [cpu, heap, goroutine]
    profile_duration: 30s
    emergency_duration: 10s
    request_timeout: 45s
    monitor_interval: 10s
    trigger_window: 1m
    cooldown: 10m
    max_concurrency: 2
    cpu_usage_base_limit: 80
    mem_usage_base_limit: 80
    cpu_emergency_base_limit: 95
    mem_emergency_base_limit: 95
    tags:
      team: database
    pod_label_as_tags:
      app.kubernetes.io/component: component
"#;

#[test]
fn datakits_example_reads_with_every_value() {
    let c = parse(DATAKIT).unwrap().unwrap();
    assert_eq!((c.max_concurrency, c.delta_cache_mb), (3, 48));
    let r = &c.rules[0];
    assert_eq!(r.port, Port::Name("pprof".into()));
    assert_eq!(r.profile_duration, Duration::from_secs(30));
    assert_eq!(r.emergency_duration, Duration::from_secs(10));
    assert_eq!(r.request_timeout, Duration::from_secs(45));
    assert_eq!(r.normal.cpu_pct, Some(80.0));
    assert_eq!(r.emergency.mem_pct, Some(95.0));
    assert_eq!(r.tags["team"], "database");
    assert_eq!(
        r.pod_label_as_tags["app.kubernetes.io/component"],
        "component"
    );
    assert_eq!(
        r.selector,
        agentprof_k8s::Selector::parse(
            "app.kubernetes.io/name=guancedb,app.kubernetes.io/component=select"
        )
        .unwrap()
    );
}

#[test]
fn defaults_are_datakits() {
    let c = parse("kubernetes:\n  - port: 6060\n").unwrap().unwrap();
    assert_eq!((c.max_concurrency, c.delta_cache_mb), (2, 32));
    assert!(c.kubelet_tls_verify);
    let r = &c.rules[0];
    assert_eq!(r.port, Port::Number(6060));
    assert_eq!(r.path, "/debug/pprof");
    assert_eq!(r.scheme, "http");
    assert_eq!(r.interval, Duration::from_secs(600));
    assert_eq!(r.scheduled_types, ["heap", "goroutine"]);
    assert!(r.trigger_types.is_empty(), "no threshold, no triggers");
    assert_eq!(r.profile_duration, Duration::from_secs(10));
    assert_eq!(r.emergency_duration, r.profile_duration);
    assert_eq!(r.request_timeout, Duration::from_secs(15));
    assert_eq!(r.monitor_interval, Duration::from_secs(10));
    assert_eq!(r.trigger_window, Duration::from_secs(60));
    assert_eq!(r.cooldown, Duration::from_secs(600));
    assert_eq!(r.max_concurrency, 2);
    assert_eq!(r.body_size_limit_mb, 32);
    // A threshold turns the default trigger types on; a 40 s CPU recording moves the timeout.
    let c = parse(
        "kubernetes:\n  - port: \"6060\"\n    mem_usage_bytes: 512Mi\n    profile_duration: 40s\n",
    )
    .unwrap()
    .unwrap();
    let r = &c.rules[0];
    assert_eq!(r.trigger_types, ["cpu", "heap", "goroutine"]);
    assert_eq!(r.normal.mem_bytes, Some(512 << 20));
    assert_eq!(r.request_timeout, Duration::from_secs(45));
    let tls = parse("kubernetes:\n  - port: 8443\n    tls_open: true\n")
        .unwrap()
        .unwrap();
    assert_eq!(tls.rules[0].scheme, "https");
    assert!(
        parse("instances: []\n").unwrap().is_none(),
        "no rules, nothing to read"
    );
}

#[test]
fn bad_values_are_refused_at_their_line_and_column_with_the_rule_index() {
    let two = |second: &str| format!("kubernetes:\n  - port: 6060\n  - port: pprof\n{second}");
    for (text, at, says) in [
        (
            two("    interval: 5s\n"),
            "4:5",
            "kubernetes[1]: interval: 5s is shorter than the least allowed, 10s",
        ),
        (
            two("    node_local: false\n"),
            "4:5",
            "only true is supported",
        ),
        (
            two("    selector: \"env in prod\"\n"),
            "4:5",
            "kubernetes[1]: selector:",
        ),
        (two("    path: debug/pprof\n"), "4:5", "must start with /"),
        (
            two("    profile_duration: 500ms\n"),
            "4:5",
            "profile_duration",
        ),
        (
            two("    monitor_interval: 20s\n    trigger_window: 10s\n"),
            "5:5",
            "trigger_window",
        ),
        (
            two("    cpu_usage_base_limit: 120\n"),
            "4:5",
            "not a percentage",
        ),
        (
            two("    cpu_usage_base_limit: 90\n    cpu_emergency_base_limit: 80\n"),
            "5:5",
            "below the normal threshold",
        ),
        (
            two("    trigger_types: [cpu]\n"),
            "4:5",
            "no threshold is set",
        ),
        (
            two("    scheduled_types: [heap, memory]\n"),
            "4:5",
            "\"memory\" is not one of",
        ),
        (
            two("    request_timeout: 5s\n    scheduled_types: [cpu]\n"),
            "4:5",
            "must exceed the longest CPU recording",
        ),
        (two("    tags:\n      \"a,b\": x\n"), "4:5", "tags"),
        (two("    namespaces: [Bad_NS]\n"), "4:5", "namespace"),
        (two("    max_concurrency: 0\n"), "4:5", "outside 1 to 1024"),
        (two("    tls_cert: c.pem\n"), "4:5", "go together"),
        // The TLS files are read and parsed at load, not at the first capture.
        (
            two("    tls_ca: /nonexistent/ca.pem\n"),
            "4:5",
            "kubernetes[1]: tls_ca: /nonexistent/ca.pem",
        ),
        (
            two("    tls_cert: /nonexistent/c.pem\n    tls_key: /nonexistent/k.pem\n"),
            "4:5",
            "kubernetes[1]: tls_cert: /nonexistent/c.pem",
        ),
        (
            two("    mem_usage_bytes: 12Q\n"),
            "4:5",
            "unknown quantity suffix",
        ),
    ] {
        let e = err(&text);
        assert!(
            e.starts_with(&format!("conf.d/profile.yaml:{at}: ")),
            "{e}\n{text}"
        );
        assert!(e.contains(says), "{e}");
    }
    let e = err("kubernetes:\n  - port: 70000\n");
    assert!(
        e.contains("kubernetes[0]: port: 70000 is outside 1 to 65535"),
        "{e}"
    );
    let e = err("kubernetes:\n  - port: Pprof_Port\n");
    assert!(e.contains("neither a number nor a port name"), "{e}");
    let e = err("kubernetes:\n  - path: /x\n");
    assert!(e.contains("port: required"), "{e}");
    // A misspelt key is named with the line, column and the keys that exist.
    let e = err("kubernetes:\n  - port: 6060\n    intervall: 1m\n");
    assert!(
        e.contains(":3:5") && e.contains("intervall") && e.contains("interval"),
        "{e}"
    );
    let e = err("init_config:\n  kubernetes_max_concurrency: 0\nkubernetes:\n  - port: 1\n");
    assert!(
        e.contains(":2:") && e.contains("kubernetes_max_concurrency"),
        "{e}"
    );
    let e = err("init_config:\n  upload_url: ftp://x\nkubernetes:\n  - port: 1\n");
    assert!(e.contains("scheme ftp"), "{e}");
    let e = err("init_config:\n  retention_mb: 0\nkubernetes:\n  - port: 1\n");
    assert!(
        e.contains(":2:") && e.contains("retention_mb: 0 is outside"),
        "{e}"
    );
    let e = err("init_config:\n  retention_days: 4000\nkubernetes:\n  - port: 1\n");
    assert!(
        e.contains("retention_days: 4000 is outside 1 to 3650"),
        "{e}"
    );
}

/// The output directory is bounded by default: 768 MiB, inside the shipped DaemonSet's 1 GiB
/// emptyDir with the 64 MiB upload spool beside it.
#[test]
fn the_output_is_bounded_by_default_inside_the_daemonsets_volume() {
    let c = parse("kubernetes:\n  - port: 1\n").unwrap().unwrap();
    assert_eq!(c.retention.max_bytes, Some(768 << 20));
    assert_eq!(c.retention.max_age, None);
    let c =
        parse("init_config:\n  retention_mb: 100\n  retention_days: 7\nkubernetes:\n  - port: 1\n")
            .unwrap()
            .unwrap();
    assert_eq!(c.retention.max_bytes, Some(100 << 20));
    assert_eq!(c.retention.max_age, Some(Duration::from_secs(7 * 86_400)));
    let ds = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/kubernetes/30-daemonset.yaml"),
    )
    .unwrap();
    assert!(
        ds.contains("sizeLimit: 1Gi"),
        "the volume the default is sized for"
    );
}

#[test]
fn quantities_read_as_kubernetes_writes_them() {
    assert_eq!(quantity("512Mi").unwrap(), 536_870_912.0);
    assert_eq!(quantity("1.5G").unwrap(), 1.5e9);
    assert_eq!(quantity("250m").unwrap(), 0.25);
    assert_eq!(quantity("1500").unwrap(), 1500.0);
    assert!(quantity("lots").is_err());
    // CPU: `500m` is half a core, 500 millicores; a bare number is millicores.
    let c = parse("kubernetes:\n  - port: 1\n    cpu_usage_millicores: 500m\n    cpu_emergency_millicores: 900\n")
        .unwrap()
        .unwrap();
    assert_eq!(c.rules[0].normal.cpu_millicores, Some(500.0));
    assert_eq!(c.rules[0].emergency.cpu_millicores, Some(900.0));
}

#[test]
fn the_shipped_example_is_a_valid_configuration() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("conf.d/profile.yaml.example");
    let text = std::fs::read_to_string(&path).expect("example");
    let c = K8sConfig::parse(&path, &text)
        .expect("valid")
        .expect("has rules");
    assert_eq!(c.rules.len(), 1);
    let r = &c.rules[0];
    assert_eq!(r.port, Port::Name("pprof".into()));
    assert_eq!(r.container.as_deref(), Some("select"));
    assert_eq!(r.profile_duration, Duration::from_secs(30));
    assert_eq!(r.emergency_duration, Duration::from_secs(10));
    assert_eq!(r.request_timeout, Duration::from_secs(45));
    assert_eq!(r.normal.cpu_pct, Some(80.0));
    assert_eq!(r.emergency.mem_pct, Some(95.0));
}
