//! What the Agent does around a check, compared with a reference: the check run on the real
//! datadog_checks_base under its stub aggregator (what the check itself submits), plus what
//! the Agent's loader adds (`service:` from the instance, else from init_config; for a
//! Python check nothing else). Instance tags reach a Python check's submissions only when
//! the check passes them; one instance whose constructor fails does not stop the others.

use std::collections::BTreeSet;

use crate::support::{Sandbox, venv_python};

const CHECK: &str = r#"from datadog_checks.base import AgentCheck


class Svc(AgentCheck):
    def __init__(self, name, init_config, instances):
        super().__init__(name, init_config, instances)
        if self.instance.get("fail"):
            raise ValueError("bad instance: %s" % self.instance["fail"])

    def check(self, instance):
        self.gauge("svc.passed", 1, tags=list(instance.get("tags", [])) + ["own:1"])
        self.gauge("svc.forgot", 1)
        self.service_check("svc.up", AgentCheck.OK)
        self.log.warning("id=%s", self.check_id)
"#;

const CONF: &str = "init_config:\n  service: from-init\ninstances:\n  - tags: [team:a]\n  - tags: [team:b]\n    service: own\n  - fail: 1\n  - name: named\n    tags: [team:c]\n";

/// What the stub aggregator records for each loadable instance, with the tag the Agent's
/// loader adds: `(instance, kind, name, sorted tags)`.
const REFERENCE: &str = r#"
import importlib.util, json, sys, yaml
from datadog_checks.base.stubs import aggregator
spec = importlib.util.spec_from_file_location("svc", sys.argv[1])
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
conf = yaml.safe_load(open(sys.argv[2]))
init = conf.get("init_config") or {}
out = []
for i, inst in enumerate(conf["instances"]):
    try:
        check = mod.Svc("svc", init, [inst])
    except Exception:
        continue
    aggregator.reset()
    check.run()
    service = inst.get("service") or init.get("service")
    extra = ["service:%s" % service] if service else []
    for name, stubs in aggregator._metrics.items():
        for m in stubs:
            out.append([i, "metric", name, sorted(list(m.tags) + extra)])
    for name, stubs in aggregator._service_checks.items():
        for s in stubs:
            out.append([i, "service_check", name, sorted(list(s.tags) + extra)])
print(json.dumps(out))
"#;

type Series = BTreeSet<(u64, String, String, Vec<String>)>;

fn series(rows: &serde_json::Value) -> Series {
    rows.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let tags = r[3].as_array().unwrap();
            (
                r[0].as_u64().unwrap(),
                r[1].as_str().unwrap().to_string(),
                r[2].as_str().unwrap().to_string(),
                tags.iter()
                    .map(|t| t.as_str().unwrap().to_string())
                    .collect(),
            )
        })
        .collect()
}

#[test]
fn a_python_checks_series_are_what_the_agent_would_send() {
    let Some(python) = venv_python() else { return };
    let sb = Sandbox::new();
    let check = sb.write("checks/svc.py", CHECK);
    let conf = sb.write("conf.d/svc.yaml", CONF);
    sb.write("reference.py", REFERENCE);
    let reference = std::process::Command::new(&python)
        .arg(sb.file("reference.py"))
        .arg(&check)
        .arg(&conf)
        .output()
        .unwrap();
    assert!(
        reference.status.success(),
        "{}",
        String::from_utf8_lossy(&reference.stderr)
    );
    let want = series(&serde_json::from_slice(&reference.stdout).unwrap());

    let r = sb.run(&["check", "svc", "--python", &python, "--json"]);
    // One instance did not load: the others ran, and the check says so (exit 1).
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("instances[2] did not load")
            && r.stderr.contains("svc.py:8: ValueError: bad instance: 1"),
        "{}",
        r.stderr
    );
    let doc = r.json();
    let mut got = Series::new();
    for (kind, key, field) in [
        ("metric", "metrics", "metric"),
        ("service_check", "service_checks", "name"),
    ] {
        for m in doc[key].as_array().unwrap() {
            let mut tags: Vec<String> = m["tags"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_str().unwrap().to_string())
                .collect();
            tags.sort();
            got.insert((
                m["instance"].as_u64().unwrap(),
                kind.to_string(),
                m[field].as_str().unwrap().to_string(),
                tags,
            ));
        }
    }
    assert_eq!(got, want);
    // The reference's own words for what it checked: a forgotten tag stays forgotten.
    assert!(want.contains(&(
        0,
        "metric".into(),
        "svc.forgot".into(),
        vec!["service:from-init".into()]
    )));
    assert!(want.contains(&(
        1,
        "service_check".into(),
        "svc.up".into(),
        vec!["service:own".into()]
    )));

    // The failed instance: each of its runs an error naming it; the JSON lists it.
    let failed = &doc["python"]["failed_instances"];
    assert_eq!(failed[0]["instance"], 2, "{failed}");
    let errors: Vec<&serde_json::Value> = doc["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| !r["error"].is_null())
        .collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0]["instance"], 2);

    // The check id as the Agent forms it: NAME:HASH, NAME:INSTANCE_NAME:HASH with `name:`.
    let ids: Vec<String> = doc["runs"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["logs"].as_array().cloned().unwrap_or_default())
        .filter_map(|l| {
            l["message"]
                .as_str()
                .and_then(|m| m.split("id=").nth(1))
                .map(str::to_string)
        })
        .collect();
    assert_eq!(ids.len(), 3, "{ids:?}");
    let hex = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_hexdigit());
    assert!(ids[0].strip_prefix("svc:").is_some_and(hex), "{ids:?}");
    assert!(
        ids[2].strip_prefix("svc:named:").is_some_and(hex),
        "{ids:?}"
    );
    assert_ne!(ids[0], ids[1]);
    // Stable across runs of agentprof (it keys the persistent cache).
    let again = sb
        .run(&["check", "svc", "--python", &python, "--json"])
        .json();
    let first_again = again["runs"][0]["logs"][0]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(first_again.ends_with(&ids[0]), "{first_again} {ids:?}");
}

#[test]
fn every_instance_failing_is_a_load_error_naming_them() {
    let Some(python) = venv_python() else { return };
    let sb = Sandbox::new();
    sb.write("checks/svc.py", CHECK);
    sb.write("conf.d/svc.yaml", "instances:\n  - fail: 1\n  - fail: 2\n");
    let r = sb.run(&["check", "svc", "--python", &python]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("instances[0]: ") && r.stderr.contains("instances[1]: "),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("ValueError: bad instance: 2"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_builtin_gets_instance_tags_and_init_configs_service() {
    let sb = Sandbox::new();
    sb.write(
        "conf.d/uptime.yaml",
        "init_config:\n  service: from-init\ninstances:\n  - tags: [team:a]\n  - service: own\n",
    );
    let doc = sb.run(&["check", "uptime", "--json"]).json();
    let ms = doc["metrics"].as_array().unwrap();
    assert_eq!(
        ms[0]["tags"],
        serde_json::json!(["service:from-init", "team:a"])
    );
    assert_eq!(ms[1]["tags"], serde_json::json!(["service:own"]));
}

#[test]
fn typos_of_the_keys_the_agent_reads_are_warned_for_a_python_check() {
    let Some(python) = venv_python() else { return };
    let sb = Sandbox::new();
    sb.write("checks/svc.py", CHECK);
    sb.write(
        "conf.d/svc.yaml",
        "instances:\n  - min_colection_interval: 30\n    tgs: [a:b]\n    names: [x]\n    url: http://x\n",
    );
    let r = sb.run(&["check", "svc", "--python", &python]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains(
            "conf.d/svc.yaml:2: instances[0].min_colection_interval: did you mean `min_collection_interval`?"
        ),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("instances[0].tgs: did you mean `tags`?"),
        "{}",
        r.stderr
    );
    // The check's own keys are its business.
    assert!(
        !r.stderr.contains("names") && !r.stderr.contains("url"),
        "{}",
        r.stderr
    );
}
