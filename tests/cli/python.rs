//! Python checks: the real `datadog_checks_base` (the test venv of scripts/test-venv.sh, or
//! $AGENTPROF_TEST_PYTHON) and the built-in compatible AgentCheck on plain python3; pstats numbers
//! against Python's own pstats; isolation from prints, exceptions, hangs and crashes.

use crate::support::{Sandbox, metric_values};

pub use crate::support::venv_python;

const DEMO: &str = r#"
import time

from datadog_checks.base import AgentCheck

__version__ = "1.2.3"

class DemoCheck(AgentCheck):
    def check(self, instance):
        n = int(self.read_persistent_cache("runs") or 0) + 1
        self.write_persistent_cache("runs", str(n))
        print("a check that prints")
        self.gauge("demo.gauge", 1.5, tags=["env:" + instance.get("env", "none")])
        self.count("demo.count", 2)
        self.monotonic_count("demo.mono", 10 * n)
        self.rate("demo.rate", 10 * time.time())
        for v in range(1, 101):
            self.histogram("demo.hist", v)
        self.service_check("demo.up", AgentCheck.WARNING, tags=["a:b"], message="slowish")
        self.event({"msg_title": "hello", "msg_text": "world", "alert_type": "info", "tags": ["e:1"]})
        self.warning("careful: %s", "thing")
        self.gauge("demo.cache_runs", n)
"#;

fn demo_sandbox() -> Sandbox {
    let sb = Sandbox::new();
    sb.write("checks/demo.py", DEMO);
    sb.write(
        "conf.d/demo.yaml",
        "init_config:\ninstances:\n  - env: dev\n    tags: [team:x]\n",
    );
    sb
}

fn assert_demo(sb: &Sandbox, python: &str, base: &str) {
    let state = sb.file("state");
    let run = |args: &[&str]| {
        let mut all = vec!["check", "demo", "--python", python, "--json"];
        all.extend_from_slice(args);
        sb.run_env(&all, &[("AGENTPROF_STATE_DIR", state.to_str().unwrap())])
    };
    // Half a second between the runs: the rate's error is the jitter between reading the
    // counter and stamping it, over the time between the runs (at 0.1 s apart, a loaded CI
    // machine's few milliseconds made 10.22 of 10).
    let r = run(&["-t", "2", "--pause", "500ms"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // The check's print went to stderr, not into the JSON.
    assert!(r.stderr.contains("a check that prints"), "{}", r.stderr);
    let doc = r.json();
    assert_eq!(doc["kind"], "python");
    assert_eq!(doc["version"], "1.2.3");
    assert_eq!(doc["python"]["class"], "DemoCheck");
    assert!(
        doc["python"]["base"].as_str().unwrap().starts_with(base),
        "{}",
        doc["python"]
    );
    assert!(doc["python"]["start_s"].as_f64().unwrap() > 0.0);
    let at = |name: &str, run: u64| -> Vec<f64> {
        doc["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["metric"] == name && m["run"] == run)
            .map(|m| m["value"].as_f64().unwrap())
            .collect()
    };
    assert_eq!(at("demo.gauge", 1), vec![1.5]);
    let g = doc["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "demo.gauge")
        .unwrap();
    // Only what the check passed: the Agent's Python loader does not add instance tags.
    assert_eq!(g["tags"], serde_json::json!(["env:dev"]));
    assert_eq!(at("demo.count", 2), vec![2.0]);
    // monotonic_count and rate: nothing on the first run, the change on the second.
    assert!(at("demo.mono", 1).is_empty());
    assert_eq!(at("demo.mono", 2), vec![10.0]);
    assert!(at("demo.rate", 1).is_empty());
    // A counter growing 10/s reads 10/s: the time is the submissions' own. (The value is
    // read a little before the submission is stamped, as with the Agent; runs half a second
    // apart make that a few per mille, hence the margin.)
    let rate = at("demo.rate", 2);
    assert!(
        rate.len() == 1 && (rate[0] - 10.0).abs() < 0.2,
        "rate {rate:?}"
    );
    assert_eq!(at("demo.hist.max", 1), vec![100.0]);
    assert_eq!(at("demo.hist.median", 1), vec![50.0]);
    assert_eq!(at("demo.hist.avg", 1), vec![50.5]);
    assert_eq!(at("demo.hist.95percentile", 1), vec![95.0]);
    assert_eq!(at("demo.hist.count", 1), vec![100.0]);
    let sc = &doc["service_checks"][0];
    assert_eq!(
        (
            sc["name"].as_str(),
            sc["status"].as_u64(),
            sc["message"].as_str()
        ),
        (Some("demo.up"), Some(1), Some("slowish"))
    );
    assert_eq!(doc["events"][0]["title"], "hello");
    assert_eq!(doc["events"][0]["text"], "world");
    assert!(
        doc["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().ends_with("careful: thing"))
    );
    assert_eq!(at("demo.cache_runs", 2), vec![2.0]);
    // The persistent cache outlives the worker: a new agentprof run goes on counting.
    let doc = run(&[]).json();
    assert_eq!(metric_values(&doc, "demo.cache_runs"), vec![3.0]);
    // The run's cost is the worker's.
    let c = &doc["runs"][0];
    assert!(c["memory"]["rss_before"].as_u64().unwrap() > 4 << 20);
    // The worker's CPU over the run: some, and no more than the run's wall time allows its
    // one Python thread (the GIL) plus the two clocks' reading apart.
    let (cpu, wall) = (
        c["cpu"]["total_s"].as_f64().unwrap(),
        c["run_time_s"].as_f64().unwrap(),
    );
    assert!(cpu > 0.0 && cpu <= wall + 0.01, "cpu {cpu} wall {wall}");
    assert!(c["threads"].as_u64().unwrap() >= 1);
}

#[test]
fn a_check_on_the_real_datadog_checks_base() {
    let Some(python) = venv_python() else { return };
    let sb = demo_sandbox();
    assert_demo(&sb, &python, "datadog_checks_base ");
}

#[test]
fn the_same_check_on_plain_python_through_the_builtin_agentcheck() {
    let sb = demo_sandbox();
    // -I: isolated, so a datadog_checks_base installed for the user cannot be picked up.
    sb.write("py.sh", "#!/bin/sh\nexec python3 -I \"$@\"\n");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(sb.file("py.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_demo(
        &sb,
        sb.file("py.sh").to_str().unwrap(),
        "agentprof compatible",
    );
}

#[test]
fn pstats_numbers_are_pythons_own() {
    let sb = Sandbox::new();
    sb.write(
        "checks/fib.py",
        "from checks import AgentCheck\n\ndef fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n\n\
         class Fib(AgentCheck):\n    def check(self, instance):\n        self.gauge('fib', fib(15))\n",
    );
    sb.write("conf.d/fib.yaml", "instances: [{}]\n");
    let dump = sb.file("fib.prof");
    let r = sb.run(&[
        "check",
        "fib",
        "-t",
        "3",
        "--top",
        "8",
        "--pstats",
        dump.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let ours: Vec<&str> = r
        .stdout
        .lines()
        .skip_while(|l| !l.contains("function calls"))
        .collect();
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import pstats,sys; pstats.Stats(sys.argv[1]).sort_stats('cumulative').print_stats(8)",
        ])
        .arg(&dump)
        .output()
        .unwrap();
    let theirs = String::from_utf8_lossy(&out.stdout);
    let theirs: Vec<&str> = theirs
        .lines()
        .skip_while(|l| !l.contains("function calls"))
        .collect();
    // Same header, same rows, same numbers: 6 header lines and 8 rows.
    assert!(
        ours.len() >= 14 && theirs.len() >= 14,
        "{ours:?}\n{theirs:?}"
    );
    for (a, b) in ours.iter().zip(theirs.iter()).take(14) {
        assert_eq!(a.trim_end(), b.trim_end());
    }
    assert!(
        ours.iter().any(|l| l.contains("fib)") && l.contains('/')),
        "recursion shown as calls/primitive"
    );
    // A flamegraph from cProfile's caller edges.
    let svg = sb.file("fib.svg");
    let r = sb.run(&[
        "check",
        "fib",
        "-t",
        "2",
        "--profile=cprofile",
        "--flamegraph",
        svg.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let svg = std::fs::read_to_string(svg).unwrap();
    assert!(
        svg.contains("<svg") && svg.contains("fib (fib.py:3)"),
        "flamegraph without fib"
    );
    // JSON rows carry pstats' ncalls string.
    let doc = sb
        .run(&["check", "fib", "--profile=cprofile", "--json"])
        .json();
    assert_eq!(doc["profile"]["kind"], "pstats");
    let fib = doc["profile"]["top"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["function"] == "fib")
        .unwrap();
    assert_eq!(fib["ncalls"], "1973/1");
}

#[test]
fn exceptions_hangs_and_crashes_fail_the_run_not_agentprof() {
    let sb = Sandbox::new();
    sb.write(
        "checks/flaky.py",
        "import os, time\nfrom checks import AgentCheck\n\n\
         class Flaky(AgentCheck):\n    def check(self, instance):\n        mode = instance['mode']\n\
         \x20       if mode == 'raise':\n            raise ValueError('no data from the device')\n\
         \x20       if mode == 'hang':\n            time.sleep(60)\n\
         \x20       if mode == 'crash':\n            os._exit(7)\n\
         \x20       if mode == 'segv':\n            import ctypes; ctypes.string_at(0)\n\
         \x20       if mode == 'killed':\n            os.kill(os.getpid(), 9)\n        self.gauge('flaky.ok', 1)\n",
    );
    sb.write(
        "conf.d/flaky.yaml",
        "instances:\n  - mode: raise\n  - mode: hang\n    run_timeout: 1\n  - mode: crash\n  - mode: segv\n  - mode: killed\n  - mode: fine\n",
    );
    let t = std::time::Instant::now();
    let r = sb.run(&["check", "flaky", "--json"]);
    assert!(t.elapsed().as_secs_f64() < 10.0, "took {:?}", t.elapsed());
    assert_eq!(r.code, 1, "{}", r.stderr);
    let doc = r.json();
    let err = |i: usize| {
        doc["runs"][i]["error"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    assert!(
        err(0).contains("ValueError: no data from the device") && err(0).contains("Traceback"),
        "{}",
        err(0)
    );
    assert!(err(1).contains("timed out after 1.00s"), "{}", err(1));
    assert!(
        err(2).contains("exited") && err(2).contains("status 7"),
        "{}",
        err(2)
    );
    // A crashed interpreter and a kill (as the OOM killer's) are named, not "exited".
    assert!(err(3).contains("signal 11 (SIGSEGV"), "{}", err(3));
    assert!(err(4).contains("signal 9 (SIGKILL"), "{}", err(4));
    // The worker is started again: the last instance still runs.
    assert_eq!(doc["runs"][5]["status"], "ok");
    assert_eq!(metric_values(&doc, "flaky.ok"), vec![1.0]);
}

#[test]
fn invalid_submissions_are_warned_and_skipped() {
    let sb = Sandbox::new();
    sb.write(
        "checks/sloppy.py",
        "from checks import AgentCheck\n\nclass Sloppy(AgentCheck):\n    def check(self, instance):\n\
         \x20       self.gauge('a', float('nan'))\n        self.gauge('b', 'seven')\n\
         \x20       self.gauge('c', 1, tags=['ok:1', 5, 'bad,tag'])\n        self.service_check('d', 9)\n",
    );
    sb.write("conf.d/sloppy.yaml", "instances: [{}]\n");
    let r = sb.run(&["check", "sloppy", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    assert_eq!(doc["metrics"].as_array().unwrap().len(), 1);
    assert_eq!(doc["metrics"][0]["tags"], serde_json::json!(["ok:1"]));
    let w = doc["warnings"].to_string();
    for needle in [
        "not a finite number",
        "'seven' is not a number",
        "tag 5 is not a string",
        "bad,tag",
        "status 9",
    ] {
        assert!(w.contains(needle), "{needle} in {w}");
    }
}

#[test]
fn memory_tracing_and_the_leak_signal_find_a_leaking_line() {
    let sb = Sandbox::new();
    sb.write(
        "checks/leaky.py",
        "from checks import AgentCheck\nKEEP = []\n\nclass Leaky(AgentCheck):\n    def check(self, instance):\n\
         \x20       KEEP.append(bytearray(2 * 1024 * 1024))\n        self.gauge('leaky.kept', len(KEEP))\n",
    );
    sb.write("conf.d/leaky.yaml", "instances: [{}]\n");
    let r = sb.run(&["check", "leaky", "-t", "20", "--memory", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    let last = &doc["runs"][19]["memory_profile"];
    let top = &last["top"][0];
    assert!(
        top["file"].as_str().unwrap().ends_with("leaky.py") && top["line"] == 6,
        "{last}"
    );
    assert!(top["size"].as_i64().unwrap() >= 2 << 20);
    // agentprof's own host code is not among the check's lines.
    for run in doc["runs"].as_array().unwrap() {
        for line in run["memory_profile"]["top"].as_array().unwrap() {
            let file = line["file"].as_str().unwrap_or_default();
            assert!(!file.starts_with('<'), "{line}");
        }
    }
    let growth = &doc["memory_growth"][0];
    assert!(growth["size"].as_i64().unwrap() >= 10 << 20, "{growth}");
    let leak = &doc["leak"][0];
    assert_eq!(leak["steady_growth"], true, "{leak}");
    let slope = leak["rss_slope_bytes_per_run"].as_f64().unwrap();
    assert!(
        slope > 1.5 * (1 << 20) as f64 && slope < 3.0 * (1 << 20) as f64,
        "{slope}"
    );
    // 5 runs: the same growth is not called a leak yet; the report says how many runs are.
    let text = sb.run(&["check", "leaky", "-t", "5", "--memory"]).stdout;
    assert!(!text.contains("a leak?"), "{text}");
    assert!(
        text.contains("too few runs") && text.contains("20 runs needed"),
        "{text}"
    );
    assert!(text.contains("leaky.py:6"), "{text}");
    // Not a Python check: refused, saying what to use instead.
    let r = sb.run(&["check", "uptime", "--memory"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("--memory: uptime is not a Python check"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_missing_interpreter_is_a_usage_error() {
    let sb = Sandbox::new();
    sb.write("checks/demo.py", DEMO);
    let r = sb.run(&["check", "demo", "--python", "/no/such/python"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .contains("--python: Python interpreter `/no/such/python` not found"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_python_runs_figures_are_what_the_check_did() {
    let sb = Sandbox::new();
    let out = sb.file("out.bin");
    sb.write(
        "checks/busy.py",
        &format!(
            "import os, time\nfrom checks import AgentCheck\nKEEP = []\n\n\
             class Busy(AgentCheck):\n    def check(self, instance):\n\
             \x20       if instance.get('warm'):\n            return\n\
             \x20       KEEP.append(bytearray(8 * 1024 * 1024))\n\
             \x20       t = time.process_time()\n\
             \x20       while time.process_time() - t < 0.1:\n            pass\n\
             \x20       fd = os.open({out:?}, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)\n\
             \x20       for _ in range(16):\n            os.write(fd, b'x' * 65536)\n\
             \x20       os.fsync(fd)\n        os.close(fd)\n",
            out = out.display().to_string()
        ),
    );
    // Instance 0 warms the worker up; instance 1 is measured.
    sb.write("conf.d/busy.yaml", "instances:\n  - warm: true\n  - {}\n");
    let r = sb.run(&["check", "busy", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    let run = &doc["runs"][1];
    let rss_diff = run["memory"]["rss_diff"].as_i64().unwrap();
    assert!(
        (8 << 20..10 << 20).contains(&rss_diff),
        "rss diff {rss_diff}"
    );
    let cpu = run["cpu"]["user_s"].as_f64().unwrap() + run["cpu"]["system_s"].as_f64().unwrap();
    assert!(
        cpu >= 0.099 && cpu <= run["run_time_s"].as_f64().unwrap() + 0.01,
        "cpu {cpu}"
    );
    // Exactly the check's own 16 writes: the worker's protocol marks are accounted for.
    assert_eq!(run["io"]["write_count"], 16, "{run}");
    assert!(
        run["io"]["write_bytes"].as_u64().unwrap() >= 1 << 20,
        "{run}"
    );
    assert_eq!(run["io"]["read_count"], 0, "{run}");
}

/// An integration laid out as integrations-core lays one out, installed into the test venv
/// with `pip install -e` (once; the package lives in the cargo target directory).
fn install_acme(python: &str) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let root = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("integrations/acme");
        let pkg = root.join("datadog_checks/acme");
        let files: &[(&str, &str)] = &[
            (
                "pyproject.toml",
                "[build-system]\nrequires = [\"hatchling>=0.13.0\"]\nbuild-backend = \"hatchling.build\"\n\n[project]\nname = \"datadog-acme\"\ndynamic = [\"version\"]\n\n[tool.hatch.version]\npath = \"datadog_checks/acme/__about__.py\"\n\n[tool.hatch.build.targets.wheel]\ninclude = [\"/datadog_checks/acme\"]\ndev-mode-dirs = [\".\"]\n",
            ),
            (
                "datadog_checks/__init__.py",
                "__path__ = __import__('pkgutil').extend_path(__path__, __name__)  # type: ignore\n",
            ),
            (
                "datadog_checks/acme/__init__.py",
                "from .__about__ import __version__\nfrom .check import AcmeCheck\n\n__all__ = ['__version__', 'AcmeCheck']\n",
            ),
            ("datadog_checks/acme/__about__.py", "__version__ = '2.3.4'\n"),
            (
                "datadog_checks/acme/check.py",
                r#"from datadog_checks.base import AgentCheck

from .config_models import ConfigMixin


class AcmeCheck(AgentCheck, ConfigMixin):
    __NAMESPACE__ = 'acme'

    def check(self, _):
        self.gauge('port', self.config.port, tags=['host:' + self.config.host])
        self.gauge('shared_timeout', self.shared_config.timeout)
        self.warning('acme is only a test')
"#,
            ),
            (
                "datadog_checks/acme/config_models/__init__.py",
                r#"from .instance import InstanceConfig
from .shared import SharedConfig


class ConfigMixin:
    _config_model_instance: InstanceConfig
    _config_model_shared: SharedConfig

    @property
    def config(self) -> InstanceConfig:
        return self._config_model_instance

    @property
    def shared_config(self) -> SharedConfig:
        return self._config_model_shared
"#,
            ),
            (
                "datadog_checks/acme/config_models/instance.py",
                "from typing import Optional\n\nfrom pydantic import BaseModel, ConfigDict\n\n\nclass InstanceConfig(BaseModel):\n    model_config = ConfigDict(frozen=True, extra='allow')\n    host: str\n    port: int = 8080\n    tags: Optional[tuple[str, ...]] = None\n",
            ),
            (
                "datadog_checks/acme/config_models/shared.py",
                "from pydantic import BaseModel, ConfigDict\n\n\nclass SharedConfig(BaseModel):\n    model_config = ConfigDict(frozen=True, extra='allow')\n    timeout: float = 10.0\n",
            ),
            (
                "datadog_checks/acme/data/conf.yaml.example",
                "init_config:\n  timeout: 5\ninstances:\n  - host: localhost\n    port: 8080\n",
            ),
        ];
        for (rel, text) in files {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, text).unwrap();
        }
        assert!(pkg.is_dir());
        let out = std::process::Command::new(python)
            .args(["-m", "pip", "install", "-q", "--disable-pip-version-check"])
            .args(["--no-build-isolation", "--no-deps", "-e"])
            .arg(&root)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "pip install -e: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    });
}

#[test]
fn an_installed_integration_runs_by_name_with_its_config_model() {
    let Some(python) = venv_python() else { return };
    install_acme(&python);
    let sb = Sandbox::new();
    // No conf.d file: as the Agent, nothing runs (exit 2); agentprof says where it looked
    // and points to the shipped example.
    let r = sb.run(&["check", "acme", "--python", &python, "--json"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    assert!(
        r.stderr.contains("schedules no Python check without one"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("conf.d/acme.d/conf.yaml"), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("datadog_checks/acme/data/conf.yaml.example"),
        "{}",
        r.stderr
    );
    sb.write(
        "conf.d/acme.d/conf.yaml",
        "init_config:\n  timeout: 7\ninstances:\n  - host: db1\n    port: 5432\n",
    );
    let r = sb.run(&["check", "acme", "--python", &python, "--json"]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let doc = r.json();
    assert_eq!(doc["kind"], "python");
    assert_eq!(doc["version"], "2.3.4");
    assert_eq!(doc["python"]["class"], "AcmeCheck");
    assert_eq!(doc["python"]["module"], "datadog_checks.acme");
    // self.config and self.shared_config came from the integration's own config models.
    assert_eq!(metric_values(&doc, "acme.port"), vec![5432.0]);
    assert_eq!(metric_values(&doc, "acme.shared_timeout"), vec![7.0]);
    let port = doc["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "acme.port")
        .unwrap();
    assert_eq!(port["tags"], serde_json::json!(["host:db1"]));
    assert!(
        doc["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().ends_with("acme is only a test")),
        "{}",
        doc["warnings"]
    );
    // `list` shows it with its version and what the name runs.
    let r = sb.run(&["list", "--python", &python, "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let rows = r.json()["checks"].as_array().unwrap().clone();
    let acme = rows.iter().find(|c| c["name"] == "acme").unwrap();
    assert_eq!(acme["version"], "2.3.4");
    assert_eq!(acme["resolves_to"], "datadog_checks.acme");
    // datadog-checks-base's own packages hold no check: `stubs` is not an integration.
    let names: Vec<&str> = rows.iter().filter_map(|c| c["name"].as_str()).collect();
    assert!(!names.contains(&"stubs"), "{names:?}");
    // A built-in keeps its name unless an interpreter is chosen: `disk` stays built-in here.
    let disk = rows.iter().find(|c| c["name"] == "disk").unwrap();
    assert_eq!(disk["kind"], "builtin");
}

#[test]
fn a_check_that_cannot_be_loaded_is_a_configuration_error_with_file_and_line() {
    let sb = Sandbox::new();
    let cases: &[(&str, &str, &str)] = &[
        (
            "syntax",
            "def broken(:\n    pass\n",
            "syntax.py:1: SyntaxError",
        ),
        (
            "importer",
            "import os\nimport no_such_module_here\n",
            "importer.py:2: ModuleNotFoundError: No module named 'no_such_module_here'",
        ),
        (
            "noclass",
            "from datadog_checks.base import AgentCheck\nX = 1\n",
            "no subclass of AgentCheck",
        ),
    ];
    for (name, body, expected) in cases {
        sb.write(&format!("checks/{name}.py"), body);
        sb.write(&format!("conf.d/{name}.yaml"), "instances: [{}]\n");
        let r = sb.run(&["check", name]);
        assert_eq!(r.code, 2, "{name}: {}\n{}", r.stdout, r.stderr);
        assert!(r.stderr.contains(expected), "{name}: {}", r.stderr);
        // No cost table of a run that never happened.
        assert!(r.stdout.is_empty(), "{name}: {}", r.stdout);
    }
    // A re-exported class is the Agent's choice too: the leaf subclass, wherever defined.
    sb.write(
        "checks/impl_mod.py",
        "from datadog_checks.base import AgentCheck\nclass Base(AgentCheck):\n    pass\nclass Leaf(Base):\n    def check(self, _):\n        self.gauge('leaf.ok', 1)\n",
    );
    sb.write("checks/reexport.py", "from impl_mod import Leaf\n");
    sb.write("conf.d/reexport.yaml", "instances: [{}]\n");
    let r = sb.run(&["check", "reexport", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.json()["python"]["class"], "Leaf");
    // A plugin file without its executable bit is named as such, not as an unknown check.
    sb.write("checks/noexec", "#!/bin/sh\necho 'x:1|g'\n");
    let r = sb.run(&["check", "noexec"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("is not executable"), "{}", r.stderr);
}

/// A counter growing exactly 10/s: its rate at run 2 is 10 whatever the first run's import
/// took (the Agent divides by the time between the submissions, not between the runs), and
/// its historate emits the rates between submissions every other run.
#[test]
fn a_rate_is_per_second_between_submissions_and_historate_histograms_rates() {
    let sb = Sandbox::new();
    sb.write(
        "checks/counter.py",
        "import time\ntime.sleep(0.3)  # a slow import, inside run 1's window\nfrom datadog_checks.base import AgentCheck\n\nclass Counter(AgentCheck):\n    def check(self, _):\n        time.sleep(0.05)\n        now = time.time()\n        self.rate('c.rate', 10 * now)\n        self.historate('c.historate', 10 * now)\n",
    );
    sb.write("conf.d/counter.yaml", "instances: [{}]\n");
    // 250 ms between runs: the submissions are ~0.3 s apart, so a few milliseconds of
    // scheduling delay between the check's clock and its submission (a loaded machine)
    // stays within 1 %; dividing by the time between runs would be off by the 0.3 s import.
    let r = sb.run(&["check", "counter", "-t", "4", "--pause", "250", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    let at = |name: &str, run: u64| -> Vec<f64> {
        doc["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["metric"] == name && m["run"] == run)
            .map(|m| m["value"].as_f64().unwrap())
            .collect()
    };
    assert!(at("c.rate", 1).is_empty());
    for run in 2..=4 {
        let rate = at("c.rate", run);
        assert_eq!(rate.len(), 1, "run {run}");
        assert!((rate[0] - 10.0).abs() < 0.1, "run {run}: {rate:?}");
    }
    // historate: nothing at run 1, the rate's histogram at run 2, a fresh start at run 3.
    assert!(at("c.historate.max", 1).is_empty());
    let h = at("c.historate.max", 2);
    assert!(h.len() == 1 && (h[0] - 10.0).abs() < 0.1, "{h:?}");
    assert_eq!(at("c.historate.count", 2), vec![1.0]);
    assert!(at("c.historate.max", 3).is_empty());
    assert_eq!(at("c.historate.count", 4), vec![1.0]);
}

/// CPU of a run comes from the worker's CPU clock: a run that burns 2 ms never reads more CPU
/// than wall time, however the kernel's ticks split it into user and system.
#[test]
fn a_runs_cpu_is_the_cpu_clock_and_never_exceeds_its_wall_time() {
    let sb = Sandbox::new();
    sb.write(
        "checks/burn.py",
        "import time\nfrom datadog_checks.base import AgentCheck\n\nclass Burn(AgentCheck):\n    def check(self, _):\n        t = time.process_time()\n        while time.process_time() - t < 0.002:\n            pass\n        self.gauge('burn.ok', 1)\n",
    );
    sb.write("conf.d/burn.yaml", "instances: [{}]\n");
    let r = sb.run(&["check", "burn", "-t", "30", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for run in r.json()["runs"].as_array().unwrap() {
        let wall = run["run_time_s"].as_f64().unwrap();
        let cpu = run["cpu"]["total_s"].as_f64().unwrap();
        assert!(cpu >= 0.002 && cpu <= wall + 1e-6, "cpu {cpu} wall {wall}");
    }
}

/// An integration with a built-in's name (here on PYTHONPATH, as the Agent's loader finds
/// anything on sys.path) replaces the built-in only when an interpreter was chosen; without
/// one, `check uptime` stays the built-in and starts no Python.
#[test]
fn an_installed_integration_replaces_a_builtin_only_when_an_interpreter_is_chosen() {
    let Some(python) = venv_python() else { return };
    let sb = Sandbox::new();
    sb.write(
        "pp/datadog_checks/uptime/__init__.py",
        "from datadog_checks.base import AgentCheck\n\nclass Uptime(AgentCheck):\n    def check(self, _):\n        self.gauge('system.uptime', 42)\n",
    );
    sb.write(
        "pp/datadog_checks/__init__.py",
        "__path__ = __import__('pkgutil').extend_path(__path__, __name__)\n",
    );
    sb.write("conf.d/uptime.yaml", "instances: [{}]\n");
    let pp = sb.file("pp");
    let env = [("PYTHONPATH", pp.to_str().unwrap())];
    let r = sb.run_env(&["check", "uptime", "--python", &python, "--json"], &env);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    assert_eq!(doc["kind"], "python");
    assert_eq!(doc["python"]["module"], "datadog_checks.uptime");
    assert_eq!(metric_values(&doc, "system.uptime"), vec![42.0]);
    let doc = sb.run_env(&["check", "uptime", "--json"], &env).json();
    assert_eq!(doc["kind"], "builtin");
}

/// A tag that is not valid Unicode (a lone surrogate) loses nothing else of the run: it is
/// repaired with a warning, and the metrics submitted before and after it stand.
#[test]
fn a_tag_that_is_not_valid_unicode_loses_nothing_else() {
    let sb = Sandbox::new();
    sb.write(
        "checks/surrogate.py",
        "from datadog_checks.base import AgentCheck\n\nclass S(AgentCheck):\n    def check(self, _):\n        self.gauge('s.before', 1)\n        self.gauge('s.bad', 2, tags=['k:\\udcff'])\n        self.service_check('s.up', 0, message='m\\udcff')\n        self.gauge('s.after', 3)\n",
    );
    sb.write("conf.d/surrogate.yaml", "instances: [{}]\n");
    let r = sb.run(&["check", "surrogate", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    assert_eq!(metric_values(&doc, "s.before"), vec![1.0]);
    assert_eq!(metric_values(&doc, "s.bad"), vec![2.0]);
    assert_eq!(metric_values(&doc, "s.after"), vec![3.0]);
    assert!(
        doc["warnings"].to_string().contains("not valid Unicode"),
        "{}",
        doc["warnings"]
    );
}

/// `ps` shows the Python worker as a short line that says what it is, not the 27 KB host
/// program as a `-c` argument: the check reads its own /proc/self/cmdline.
#[test]
fn the_worker_shows_a_short_command_line() {
    let sb = Sandbox::new();
    sb.write(
        "checks/argv.py",
        "from checks import AgentCheck\n\n\
         class Argv(AgentCheck):\n    def check(self, instance):\n\
         \x20       line = open('/proc/self/cmdline', 'rb').read().split(b'\\0')\n\
         \x20       self.gauge('argv.bytes', sum(len(a) + 1 for a in line))\n\
         \x20       self.gauge('argv.named', 1 if b'agentprof-python-host' in line else 0)\n",
    );
    sb.write("conf.d/argv.yaml", "instances:\n  - {}\n");
    let r = sb.run(&["check", "argv", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    let bytes = metric_values(&doc, "argv.bytes");
    assert!(
        bytes[0] < 200.0,
        "the worker's command line is {bytes:?} bytes"
    );
    assert_eq!(metric_values(&doc, "argv.named"), vec![1.0]);
}

/// The Python workers agentprof started whose working directory is `dir` (this test's
/// sandbox: other tests' workers run elsewhere).
fn workers_in(dir: &std::path::Path) -> Vec<u32> {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    procs
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let here = std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|c| c == dir);
            here && cmd
                .split(|b| *b == 0)
                .any(|a| a == b"agentprof-python-host")
        })
        .collect()
}

/// However agentprof ends while a Python check runs — `check` or `start`, SIGTERM, SIGINT or
/// SIGKILL — its worker ends with it (a parent-death signal; the process groups ended when
/// the command returns). It used to stay alive under PID 1 for good.
#[test]
fn no_python_worker_outlives_agentprof() {
    let cases: &[(&[&str], i32)] = &[
        (&["check", "sleepy"], libc::SIGTERM),
        (&["check", "sleepy"], libc::SIGINT),
        (&["check", "sleepy"], libc::SIGKILL),
        (&["start", "--duration", "60s"], libc::SIGTERM),
        (&["start", "--duration", "60s"], libc::SIGINT),
        (&["start", "--duration", "60s"], libc::SIGKILL),
    ];
    let runs: Vec<_> = cases
        .iter()
        .map(|&(args, sig)| {
            let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
            std::thread::spawn(move || one_stop(&args, sig))
        })
        .collect();
    for r in runs {
        r.join().unwrap();
    }
}

fn one_stop(args: &[String], sig: i32) {
    use std::time::{Duration, Instant};
    let sb = Sandbox::new();
    sb.write(
        "checks/sleepy.py",
        "import time\nfrom checks import AgentCheck\n\n\
         class Sleepy(AgentCheck):\n    def check(self, instance):\n\
         \x20       open('running', 'w').close()\n\
         \x20       time.sleep(30)\n",
    );
    sb.write("conf.d/sleepy.yaml", "instances:\n  - {}\n");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_agentprof"))
        .args(args)
        .current_dir(sb.path())
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let dir = std::fs::canonicalize(sb.path()).unwrap();
    let t0 = Instant::now();
    // The check is in its run (it wrote `running`), its worker alive.
    while !sb.file("running").exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(20) && child.try_wait().unwrap().is_none(),
            "{args:?}: the check never ran"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!workers_in(&dir).is_empty(), "{args:?}: no worker found");
    unsafe { libc::kill(child.id() as i32, sig) };
    let end = Instant::now() + Duration::from_secs(15);
    while child.try_wait().unwrap().is_none() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50));
    }
    let exited = child.try_wait().unwrap().is_some();
    let _ = child.kill();
    let _ = child.wait();
    let gone = Instant::now() + Duration::from_secs(3);
    let mut left = workers_in(&dir);
    while !left.is_empty() && Instant::now() < gone {
        std::thread::sleep(Duration::from_millis(50));
        left = workers_in(&dir);
    }
    for pid in &left {
        unsafe { libc::kill(*pid as i32, libc::SIGKILL) };
    }
    assert!(
        exited,
        "{args:?}: agentprof did not end within 15 s of signal {sig}"
    );
    assert!(
        left.is_empty(),
        "{args:?}, signal {sig}: workers {left:?} outlived agentprof"
    );
}

/// A check whose constructor still takes the legacy `agentConfig` (the old `prometheus`
/// check) is built as the Agent builds it, with a deprecation warning; `get_version()` is an
/// Agent 7 version (agentprof.yaml's `agent_version` sets another; a value that is not a
/// version is refused).
#[test]
fn a_legacy_constructor_gets_agent_config_and_checks_see_an_agent_version() {
    let sb = Sandbox::new();
    sb.write(
        "checks/legacy.py",
        "import datadog_agent\nfrom checks import AgentCheck\n\n\
         class Legacy(AgentCheck):\n\
         \x20   def __init__(self, name, init_config, agentConfig, instances=None):\n\
         \x20       AgentCheck.__init__(self, name, init_config, instances)\n\
         \x20       self.agent_config = agentConfig\n\
         \x20   def check(self, instance):\n\
         \x20       self.gauge('legacy.hostname_in_config', 1 if 'hostname' in self.agent_config else 0)\n\
         \x20       self.gauge('legacy.agent_major', int(datadog_agent.get_version().split('.')[0]))\n",
    );
    sb.write("conf.d/legacy.yaml", "instances:\n  - {}\n");
    let r = sb.run(&["check", "legacy", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("deprecated agentConfig"), "{}", r.stderr);
    let doc = r.json();
    assert_eq!(metric_values(&doc, "legacy.hostname_in_config"), vec![1.0]);
    assert_eq!(metric_values(&doc, "legacy.agent_major"), vec![7.0]);

    sb.write("agentprof.yaml", "agent_version: 6.53.1\n");
    let r = sb.run(&["check", "legacy", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(metric_values(&r.json(), "legacy.agent_major"), vec![6.0]);

    sb.write("agentprof.yaml", "agent_version: seven\n");
    let r = sb.run(&["check", "legacy"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("agent_version: \"seven\" is not an Agent version"),
        "{}",
        r.stderr
    );
}

/// datadog-checks-base installed without its `[deps]` extra cannot be imported: agentprof
/// runs the check on its own compatible AgentCheck and says so once, with the import error
/// and the command that fixes it (it used to fall back without a word).
#[test]
fn an_unimportable_datadog_checks_base_is_said_with_its_fix() {
    let sb = Sandbox::new();
    sb.write("site/datadog_checks/__init__.py", "");
    sb.write(
        "site/datadog_checks/base/__init__.py",
        "raise ImportError(\"No module named 'cachetools'\")\n",
    );
    sb.write(
        "checks/plain.py",
        "from datadog_checks.base import AgentCheck\n\n\
         class Plain(AgentCheck):\n    def check(self, instance):\n\
         \x20       self.gauge('plain.ok', 1)\n",
    );
    sb.write("conf.d/plain.yaml", "instances:\n  - {}\n  - {}\n");
    let site = sb.file("site");
    let r = sb.run_env(
        &["check", "plain", "--json", "-t", "3"],
        &[("PYTHONPATH", site.to_str().unwrap())],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    // 3 runs of each of 2 instances.
    assert_eq!(metric_values(&r.json(), "plain.ok").len(), 6);
    assert_eq!(
        r.stderr
            .matches("cannot be imported (No module named 'cachetools')")
            .count(),
        1,
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("pip install 'datadog-checks-base[deps]'"),
        "{}",
        r.stderr
    );
}

/// An instance's `timeout` is the check's own (integrations use it for an HTTP or DNS
/// timeout): it reaches the check and does not stop the run. agentprof's deadline is
/// `run_timeout`, in the instance or in init_config, and `check --run-timeout` over both.
#[test]
fn an_instances_timeout_is_the_checks_and_run_timeout_is_agentprofs() {
    let sb = Sandbox::new();
    sb.write(
        "checks/slowish.py",
        "import time\nfrom checks import AgentCheck\n\n\
         class Slowish(AgentCheck):\n    def check(self, instance):\n\
         \x20       time.sleep(float(instance.get('sleep', 0)))\n\
         \x20       self.gauge('slowish.timeout', float(instance.get('timeout', -1)))\n",
    );
    // timeout: 0.2 is the check's; the run takes 0.5 s and succeeds.
    sb.write(
        "conf.d/slowish.yaml",
        "instances:\n  - timeout: 0.2\n    sleep: 0.5\n",
    );
    let r = sb.run(&["check", "slowish", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(metric_values(&r.json(), "slowish.timeout"), vec![0.2]);
    // init_config's run_timeout is agentprof's: the same run now fails at 0.2 s.
    sb.write(
        "conf.d/slowish.yaml",
        "init_config:\n  run_timeout: 0.2\ninstances:\n  - timeout: 5\n    sleep: 0.5\n",
    );
    let r = sb.run(&["check", "slowish", "--json"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.json()["runs"][0]["error"]
            .as_str()
            .unwrap_or("")
            .contains("timed out after"),
        "{}",
        r.stdout
    );
    // --run-timeout is over the configuration's: 5 s lets the run finish.
    let r = sb.run(&["check", "slowish", "--json", "--run-timeout", "5s"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(metric_values(&r.json(), "slowish.timeout"), vec![5.0]);
    let r = sb.run(&["check", "slowish", "--run-timeout", "0"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("--run-timeout: must be above 0"),
        "{}",
        r.stderr
    );
}

/// What a check sets with `set_metadata` (redisdb, mcache and apache set their server's
/// version) is shown, as `agent check` shows it: in the table and in `--json`, per instance,
/// after datadog_checks_base's own transformation (`version` → `version.raw`, `.major`…).
#[test]
fn check_metadata_is_shown_in_the_table_and_json() {
    let Some(python) = venv_python() else { return };
    let sb = Sandbox::new();
    sb.write(
        "checks/versioned.py",
        "from datadog_checks.base import AgentCheck\n\n\
         class Versioned(AgentCheck):\n    def check(self, instance):\n\
         \x20       self.set_metadata('version', instance['v'])\n\
         \x20       self.gauge('versioned.up', 1)\n",
    );
    sb.write(
        "conf.d/versioned.yaml",
        "instances:\n  - v: 7.2.4\n  - v: 6.0.16\n",
    );
    let r = sb.run(&["check", "versioned", "--python", &python, "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    let rows = doc["metadata"].as_array().cloned().unwrap_or_default();
    let find = |inst: u64, name: &str| -> Option<String> {
        rows.iter()
            .find(|m| m["instance"] == inst && m["name"] == name)
            .and_then(|m| m["value"].as_str().map(str::to_string))
    };
    assert_eq!(find(0, "version.raw").as_deref(), Some("7.2.4"), "{rows:?}");
    assert_eq!(find(0, "version.major").as_deref(), Some("7"), "{rows:?}");
    assert_eq!(
        find(1, "version.raw").as_deref(),
        Some("6.0.16"),
        "{rows:?}"
    );
    let r = sb.run(&["check", "versioned", "--python", &python]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("Metadata")
            && r.stdout.contains("version.raw")
            && r.stdout.contains("7.2.4"),
        "{}",
        r.stdout
    );
}

/// `--profile` of a Python check leaves out a warm-up run of each instance (the first run's
/// imports dominated the profile) and says so; `--profile-first-run` keeps it. (Sampled:
/// each function runs for milliseconds, many sampling periods.)
#[test]
fn the_profile_leaves_out_a_warm_up_run_unless_asked() {
    let sb = Sandbox::new();
    sb.write(
        "checks/warm.py",
        "import time\nfrom checks import AgentCheck\n\nSEEN = []\n\n\
         def spin(s):\n    end = time.perf_counter() + s\n    while time.perf_counter() < end:\n        pass\n    return 1\n\n\
         def first_run_only():\n    return spin(0.03)\n\n\
         def every_run():\n    return spin(0.005)\n\n\
         class Warm(AgentCheck):\n    def check(self, instance):\n\
         \x20       if not SEEN:\n            SEEN.append(first_run_only())\n\
         \x20       self.gauge('warm.v', every_run())\n",
    );
    sb.write("conf.d/warm.yaml", "instances:\n  - {}\n");
    let functions = |args: &[&str]| -> (Vec<String>, serde_json::Value) {
        let r = sb.run(args);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let doc = r.json();
        let names = doc["profile"]["top"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"].as_str().unwrap().to_string())
            .collect();
        (names, doc["profile"]["warm_up_excluded"].clone())
    };
    let (names, excluded) = functions(&[
        "check",
        "warm",
        "--profile",
        "-t",
        "3",
        "--top",
        "200",
        "--json",
    ]);
    assert!(names.iter().any(|n| n == "every_run"), "{names:?}");
    assert!(!names.iter().any(|n| n == "first_run_only"), "{names:?}");
    assert_eq!(excluded, true);
    let (names, excluded) = functions(&[
        "check",
        "warm",
        "--profile",
        "--profile-first-run",
        "-t",
        "3",
        "--top",
        "200",
        "--json",
    ]);
    assert!(names.iter().any(|n| n == "first_run_only"), "{names:?}");
    assert_eq!(excluded, false);
    let r = sb.run(&["check", "warm", "--profile", "-t", "3"]);
    assert!(
        r.stdout.contains("after a warm-up run left out"),
        "{}",
        r.stdout
    );
}

/// A check's own log records (`self.log.debug/info/warning`) are kept with the run they
/// belong to, in order, from `--log-level` up (warning by default), in the table and in
/// `--json` — on the real datadog_checks_base and on agentprof's compatible AgentCheck.
#[test]
fn a_checks_log_records_are_shown_with_their_level_and_run() {
    let check = |base: &str| {
        format!(
            "from {base} import AgentCheck\n\n\
             class Talky(AgentCheck):\n    def check(self, instance):\n\
             \x20       self.log.debug('looking at %s', 'db1')\n\
             \x20       self.log.info('found %d rows', 3)\n\
             \x20       self.log.warning('slow answer')\n\
             \x20       self.gauge('talky.up', 1)\n"
        )
    };
    let mut cases: Vec<(String, Option<String>)> = vec![("checks".into(), None)];
    if let Some(p) = venv_python() {
        cases.push(("datadog_checks.base".into(), Some(p)));
    }
    for (base, python) in cases {
        let sb = Sandbox::new();
        sb.write("checks/talky.py", &check(&base));
        sb.write("conf.d/talky.yaml", "instances:\n  - {}\n");
        let mut args = vec!["check", "talky", "--json", "-t", "2"];
        if let Some(p) = &python {
            args.extend(["--python", p.as_str()]);
        }
        let r = sb.run(&args);
        assert_eq!(r.code, 0, "{base}: {}", r.stderr);
        let doc = r.json();
        let logs = |run: usize| -> Vec<(String, String)> {
            doc["runs"][run]["logs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| {
                    (
                        l["level"].as_str().unwrap().to_string(),
                        l["message"].as_str().unwrap().to_string(),
                    )
                })
                .collect()
        };
        // Warning by default: one record a run, with its run.
        assert_eq!(logs(0).len(), 1, "{base}: {:?}", logs(0));
        assert_eq!(logs(0)[0].0, "WARNING");
        assert!(
            logs(1)[0].1.contains("slow answer"),
            "{base}: {:?}",
            logs(1)
        );
        args.extend(["--log-level", "debug"]);
        let r = sb.run(&args);
        assert_eq!(r.code, 0, "{base}: {}", r.stderr);
        let doc = r.json();
        let levels: Vec<&str> = doc["runs"][0]["logs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["level"].as_str().unwrap())
            .collect();
        assert_eq!(levels, ["DEBUG", "INFO", "WARNING"], "{base}");
        let text = doc["runs"][0]["logs"].to_string();
        assert!(
            text.contains("looking at db1") && text.contains("found 3 rows"),
            "{text}"
        );
        // The table shows them under the instance, with their run and level.
        let mut table_args: Vec<&str> = args.iter().copied().filter(|a| *a != "--json").collect();
        table_args.retain(|a| !a.is_empty());
        let r = sb.run(&table_args);
        assert!(
            r.stdout.contains("Log") && r.stdout.contains("run 2 INFO"),
            "{base}: {}",
            r.stdout
        );
    }
}

/// A Python check receives its instance as the Agent hands it over: conf.d read as YAML 1.1
/// (unquoted `yes`/`on`/`y` are True, `off` False, `0755` is 493, `0x1F` 31, `1_000` 1000;
/// quoted ones stay text), and each file of `conf.d/NAME.d/` with its own `init_config`.
/// (agentprof used to pass `yes`, `on`, `0755`, `1_000` on as strings.)
#[test]
fn a_python_check_gets_yaml_1_1_values_and_each_files_init_config() {
    let sb = Sandbox::new();
    sb.write(
        "checks/yaml11.py",
        "from checks import AgentCheck\n\n\
         class Yaml11(AgentCheck):\n\
         \x20   def check(self, instance):\n\
         \x20       for k, v in instance.items():\n\
         \x20           n = float(v) if isinstance(v, (int, float)) else 0.0\n\
         \x20           self.gauge('yaml.%s.%s' % (k, type(v).__name__), n)\n\
         \x20       self.gauge('yaml.init.' + str(self.init_config.get('which')), 1)\n",
    );
    sb.write(
        "conf.d/yaml11.d/conf.yaml",
        "init_config:\n  which: first\ninstances:\n  - a_yes: yes\n    a_on: on\n    a_y: y\n    a_off: off\n    \
         a_octal: 0755\n    a_hex: 0x1F\n    a_underscores: 1_000\n    a_float: 1_000.5\n    \
         q_yes: 'yes'\n    q_octal: \"0755\"\n    a_word: yesterday\n    a_null: ~\n",
    );
    sb.write(
        "conf.d/yaml11.d/second.yaml",
        "init_config:\n  which: second\ninstances:\n  - {b_no: NO}\n",
    );
    let r = sb.run(&["check", "yaml11", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    for (metric, value) in [
        ("yaml.a_yes.bool", 1.0),
        ("yaml.a_on.bool", 1.0),
        ("yaml.a_y.bool", 1.0),
        ("yaml.a_off.bool", 0.0),
        ("yaml.a_octal.int", 493.0),
        ("yaml.a_hex.int", 31.0),
        ("yaml.a_underscores.int", 1000.0),
        ("yaml.a_float.float", 1000.5),
        ("yaml.q_yes.str", 0.0),
        ("yaml.q_octal.str", 0.0),
        ("yaml.a_word.str", 0.0),
        ("yaml.a_null.NoneType", 0.0),
        ("yaml.b_no.bool", 0.0),
        ("yaml.init.first", 1.0),
        ("yaml.init.second", 1.0),
    ] {
        assert_eq!(
            metric_values(&doc, metric),
            vec![value],
            "{metric}: {}",
            doc["metrics"]
        );
    }
}
