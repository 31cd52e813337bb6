//! `agentprof check` as a check author who knows `agent check` uses it: the Agent's flags and
//! defaults on every kind of check, and messages that lead to a command that works (each
//! test runs the command the message gives).

use crate::support::{Sandbox, reply, serve, venv_python};

#[test]
fn check_rate_overrides_times_and_pause_as_the_agent_does() {
    let sb = Sandbox::new();
    let r = sb.run(&[
        "check", "uptime", "--json", "-r", "-t", "5", "--pause", "10",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "-r runs twice, whatever -t says");
    let gap = runs[1]["started_at"].as_f64().unwrap() - runs[0]["started_at"].as_f64().unwrap();
    assert!(
        gap >= 1.0,
        "runs {gap}s apart: -r pauses 1000 ms, not --pause 10"
    );
    assert!(
        r.stderr.contains("--check-times 5 is overridden to 2")
            && r.stderr.contains("--pause 10 is overridden"),
        "{}",
        r.stderr
    );
    // Nothing said when nothing is overridden.
    let r = sb.run(&["check", "uptime", "--json", "-r"]);
    assert!(!r.stderr.contains("overridden"), "{}", r.stderr);
}

#[test]
fn built_ins_run_the_agents_conf_yaml_default() {
    let sb = Sandbox::new();
    // The Agent's disk.d/conf.yaml.default is `instances: [{use_mount: false}]`.
    let r = sb.run(&[
        "check",
        "disk",
        "--json",
        "--instance-filter",
        ".use_mount == false",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.json()["metrics"].as_array().unwrap().is_empty());
    let r = sb.run(&[
        "check",
        "network",
        "--json",
        "--instance-filter",
        ".collect_connection_state == false",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // A file of the user's replaces the default, as in the Agent.
    sb.write("conf.d/disk.yaml", "instances:\n  - use_mount: true\n");
    let r = sb.run(&["check", "disk", "--instance-filter", ".use_mount == false"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
}

#[test]
fn init_config_typos_warn_with_their_line() {
    let sb = Sandbox::new();
    sb.write(
        "conf.d/uptime.yaml",
        "init_config:\n  servce: web\n  min_collection_intervl: 5\ninstances:\n  - {}\n",
    );
    let r = sb.run(&["check", "uptime"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for want in [
        "conf.d/uptime.yaml:2: unknown option `init_config.servce`, ignored (did you mean `service`?)",
        "conf.d/uptime.yaml:3: unknown option `init_config.min_collection_intervl`, ignored (did you mean `min_collection_interval`?)",
    ] {
        assert!(r.stderr.contains(want), "{want}\n{}", r.stderr);
    }
    // A plugin's own keys are its business: only near misses of the common ones warn, and
    // `tags` is not said to be read by the Agent for a Python check.
    sb.plugin("ex", "echo 'ex.up:1|g'\n");
    sb.write(
        "conf.d/ex.yaml",
        "init_config:\n  servce: web\n  own: 1\ninstances:\n  - tgs: [a:b]\n",
    );
    let r = sb.run(&["check", "ex"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("conf.d/ex.yaml:2: init_config.servce: did you mean `service`?"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("own"), "{}", r.stderr);
    assert!(
        r.stderr.contains("a Python check reads them itself")
            && !r.stderr.contains("the Agent reads `tags`"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_missing_integration_is_said_with_what_installs_it() {
    let sb = Sandbox::new();
    let r = sb.run(&["check", "etcd"]);
    assert_eq!(r.code, 2);
    // The PyPI wheel datadog-etcd is the Agent's packaging and holds no code.
    assert!(
        !r.stderr.contains("pip install datadog-etcd"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("./etcd") && r.stderr.contains("--python"),
        "{}",
        r.stderr
    );
}

/// A fresh clone (or after `agentprof init`): `check http_check` points at the example that
/// is there, and copying it as said (with a URL of this test) runs the check.
#[test]
fn http_check_without_configuration_points_at_its_example() {
    let Some(python) = venv_python() else { return };
    let sb = Sandbox::new();
    assert_eq!(sb.run(&["init"]).code, 0);
    let r = sb.run(&["check", "http_check", "--python", &python]);
    assert_eq!(r.code, 2);
    let cp = "cp conf.d/http_check.yaml.example conf.d/http_check.yaml";
    assert!(r.stderr.contains(cp), "{}", r.stderr);
    assert!(!r.stderr.contains("instances: [{}]"), "{}", r.stderr);
    let (addr, _) = serve(|_, _| reply("200 OK", "ok"));
    let example = std::fs::read_to_string(sb.file("conf.d/http_check.yaml.example")).unwrap();
    let url = "https://example.internal/health";
    assert!(example.contains(url));
    sb.write(
        "conf.d/http_check.yaml",
        &example.replace(url, &format!("http://{addr}/health")),
    );
    let r = sb.run(&["check", "http_check", "--python", &python, "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    let can_connect = doc["service_checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "http.can_connect")
        .cloned();
    assert_eq!(can_connect.map(|s| s["status"].clone()), Some(0.into()));
    // After init, the unknown-check message no longer says to run it.
    let r = sb.run(&["check", "etcd"]);
    assert!(!r.stderr.contains("agentprof init"), "{}", r.stderr);
}

/// After `agentprof init` (as in a clone): `list` says which shipped checks need a file rather
/// than "error", and `start` says to copy an example, not to run init again.
#[test]
fn after_init_list_and_start_say_what_to_copy() {
    let sb = Sandbox::new();
    assert_eq!(sb.run(&["init"]).code, 0);
    let r = sb.run(&["list"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let row = |name: &str| {
        r.stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_default()
            .to_string()
    };
    for name in ["directory", "http_check", "process"] {
        let line = row(name);
        assert!(
            line.contains("(none)") && line.contains("needs a file") && !line.contains("error"),
            "{line}"
        );
    }
    assert!(row("disk").contains(" 1 "), "{}", row("disk"));
    let doc = sb.run(&["list", "--json"]).json();
    let dir = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "directory")
        .cloned()
        .unwrap();
    assert_eq!(dir["needs_configuration"], true);
    let r = sb.run(&["start", "--duration", "1s"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("NAME.yaml.example to NAME.yaml") && !r.stderr.contains("agentprof init"),
        "{}",
        r.stderr
    );
}

/// Runs agentprof on a pseudo-terminal of `cols` columns (python3's pty module), colour on;
/// what the terminal received.
pub fn on_a_pty(cols: u16, args: &[&str], dir: &std::path::Path) -> String {
    const PTY: &str = r#"
import os, pty, sys, fcntl, termios, struct, select
cols = int(sys.argv[1]); argv = sys.argv[2:]
pid, fd = pty.fork()
if pid == 0:
    fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 24, cols, 0, 0))
    env = dict(os.environ); env.pop("NO_COLOR", None)
    os.execvpe(argv[0], argv, env)
out = b""
while True:
    try:
        r, _, _ = select.select([fd], [], [], 120)
        if not r: break
        chunk = os.read(fd, 65536)
    except OSError:
        break
    if not chunk: break
    out += chunk
os.waitpid(pid, 0)
sys.stdout.write(out.decode("utf-8", "replace"))
"#;
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(PTY)
        .arg(cols.to_string())
        .arg(env!("CARGO_BIN_EXE_agentprof"))
        .args(args)
        .current_dir(dir)
        .env_remove("AGENTPROF_CONFIG")
        .output()
        .expect("python3 runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_terminal_of_zero_columns_gets_whole_rows() {
    let sb = Sandbox::new();
    for cols in [0, 10] {
        let shown = on_a_pty(cols, &["check", "uptime"], sb.path());
        let row = shown
            .lines()
            .find(|l| l.contains("system.uptime"))
            .unwrap_or_else(|| panic!("{cols} columns:\n{shown}"));
        assert!(row.contains("gauge"), "{cols} columns: {row}\n{shown}");
    }
    // A terminal with room still gets its table fitted: nothing is cut at 80 columns.
    let shown = on_a_pty(80, &["check", "uptime"], sb.path());
    assert!(
        shown
            .lines()
            .any(|l| l.contains("system.uptime") && l.contains("gauge")),
        "{shown}"
    );
}

/// `-l` works on every kind of check, as `agent check -l` does: a built-in's own records, an
/// exec plugin's stderr lines by their level word.
#[test]
fn log_level_applies_to_built_ins_and_exec_plugins() {
    let sb = Sandbox::new();
    let logs = |doc: &serde_json::Value| -> Vec<(String, String)> {
        doc["runs"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|r| r["logs"].as_array().cloned().unwrap_or_default())
            .map(|l| {
                (
                    l["level"].as_str().unwrap().to_string(),
                    l["message"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    for name in ["disk", "uptime", "load", "memory", "cpu"] {
        let r = sb.run(&["check", name, "-l", "debug", "--json"]);
        assert_eq!(r.code, 0, "{name}: {}", r.stderr);
        let got = logs(&r.json());
        assert!(
            got.iter().any(|(level, _)| level == "DEBUG"),
            "{name}: {got:?}"
        );
        // The default level (warning) keeps none of them.
        let r = sb.run(&["check", name, "--json"]);
        assert!(logs(&r.json()).is_empty(), "{name}");
    }
    sb.plugin(
        "chatty",
        "echo 'starting' >&2\necho 'WARNING: slow disk' >&2\necho '[debug] x=1' >&2\necho 'c.up:1|g'\n",
    );
    let at = |level: &str| {
        let r = sb.run(&["check", "chatty", "-l", level, "--json"]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        logs(&r.json())
    };
    assert_eq!(
        at("warn"),
        vec![("WARNING".to_string(), "WARNING: slow disk".to_string())]
    );
    assert_eq!(
        at("debug"),
        vec![
            ("INFO".to_string(), "starting".to_string()),
            ("WARNING".to_string(), "WARNING: slow disk".to_string()),
            ("DEBUG".to_string(), "[debug] x=1".to_string()),
        ]
    );
    assert!(at("off").is_empty());
}

/// `--instance-filter` selects what jq selects (the Agent runs the filter with a jq
/// implementation): each filter run by agentprof on five instances and by jq on each.
#[test]
fn instance_filter_selects_what_jq_selects() {
    let instances = [
        r#"{"name": "a", "port": 8080, "tls": {"verify": false}, "tags": ["x"]}"#,
        r#"{"name": "b", "port": 80, "tls": {"verify": true}, "tags": ["y", "x"]}"#,
        r#"{"name": "c", "port": 443}"#,
        r#"{"port": "8080", "enabled": null}"#,
        r#"{"name": "e", "enabled": false, "port": 9000}"#,
    ];
    let filters = [
        r#".name == "a""#,
        ".port > 1000 and .name",
        ".tls.verify | not",
        "select(.port == 80)",
        r#"select(.tags[0] == "x") | .port > 100"#,
        ".enabled",
        ".enabled | not",
        "(.name == \"c\" or .port == \"8080\") | not",
        ".tls | .verify == false",
        ". | .name != null",
        ".port <= 443",
        "select(.name) | .port",
    ];
    let jq_selects = |filter: &str, instance: &str| -> Option<bool> {
        let mut child = std::process::Command::new("jq")
            .args(["-c", filter])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .ok()?;
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(instance.as_bytes())
            .unwrap();
        let out = child.wait_with_output().ok()?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        Some(
            text.lines()
                .any(|l| !matches!(l.trim(), "false" | "null" | "")),
        )
    };
    if jq_selects(".", "{}").is_none() {
        crate::support::skip("no jq (CI installs it): the reference for --instance-filter");
        return;
    }
    let sb = Sandbox::new();
    sb.plugin("many", "cat >/dev/null\necho 'm.up:1|g'\n");
    let conf = instances
        .iter()
        .map(|i| format!("  - {i}\n"))
        .collect::<String>();
    sb.write("conf.d/many.yaml", &format!("instances:\n{conf}"));
    for filter in filters {
        let want: Vec<u64> = (0..instances.len() as u64)
            .filter(|&i| jq_selects(filter, instances[i as usize]) == Some(true))
            .collect();
        let r = sb.run(&["check", "many", "--json", "--instance-filter", filter]);
        let got: Vec<u64> = if r.code == 2 && r.stderr.contains("selects none") {
            Vec::new()
        } else {
            assert_eq!(r.code, 0, "{filter}: {}", r.stderr);
            r.json()["runs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|run| run["instance"].as_u64().unwrap())
                .collect()
        };
        assert_eq!(got, want, "{filter}");
    }
}

/// Where agentprof deliberately differs from the Agent, it says so in one line: one failing
/// instance of two fails the command (exit 1).
#[test]
fn a_failed_instance_fails_the_command_and_says_why_in_one_line() {
    let sb = Sandbox::new();
    sb.plugin(
        "two",
        "if grep -q bad; then echo boom >&2; exit 3; fi\necho 't.up:1|g'\n",
    );
    sb.write("conf.d/two.yaml", "instances:\n  - {}\n  - {bad: 1}\n");
    let r = sb.run(&["check", "two", "-t", "2"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let said: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.contains("unlike `agent check`"))
        .collect();
    assert_eq!(said.len(), 1, "{}", r.stderr);
    assert!(
        said[0].contains("2 of 4 runs failed (instances[1])"),
        "{}",
        said[0]
    );
    // All well: nothing said.
    sb.write("conf.d/two.yaml", "instances:\n  - {}\n");
    let r = sb.run(&["check", "two"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stderr.contains("unlike"), "{}", r.stderr);
}

/// The route the unknown-integration message gives: a Python that has `datadog_checks.NAME`
/// (here on PYTHONPATH, as `pip install ./NAME` from a checkout would put it), named with
/// --python, runs it.
#[test]
fn an_integration_in_the_python_given_runs() {
    let Some(python) = venv_python() else { return };
    let sb = Sandbox::new();
    sb.write(
        "site/datadog_checks/etcd/__init__.py",
        "from .check import EtcdCheck\n__version__ = '9.9.9'\n",
    );
    sb.write(
        "site/datadog_checks/etcd/check.py",
        "from datadog_checks.base import AgentCheck\n\n\nclass EtcdCheck(AgentCheck):\n    def check(self, instance):\n        self.gauge('etcd.up', 1)\n",
    );
    sb.write("conf.d/etcd.d/conf.yaml", "instances: [{}]\n");
    let site = sb.file("site");
    let without = sb.run(&["check", "etcd", "--python", &python]);
    assert_eq!(without.code, 2, "{}", without.stderr);
    assert!(without.stderr.contains("--python"), "{}", without.stderr);
    let r = sb.run_env(
        &["check", "etcd", "--python", &python, "--json"],
        &[("PYTHONPATH", site.to_str().unwrap())],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        crate::support::metric_values(&r.json(), "etcd.up"),
        vec![1.0]
    );
}
