//! What the Agent does around a check, compared with a reference: the check run on the real
//! datadog_checks_base under its stub aggregator (what the check itself submits), plus what
//! the Agent's loader adds (`service:` from the instance, else from init_config; for a
//! Python check nothing else). Instance tags reach a Python check's submissions only when
//! the check passes them; one instance whose constructor fails does not stop the others.

use std::collections::BTreeSet;

use crate::support::{Sandbox, metric_values, venv_python};

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

/// `agent check`'s own spellings run as they do under the Agent.
#[test]
fn the_agents_check_flags() {
    let Some(python) = venv_python() else { return };
    let sb = Sandbox::new();
    sb.write("checks/svc.py", CHECK);
    sb.write("conf.d/svc.yaml", CONF);
    let state = sb.file("state");
    let env = [("AGENTPROF_STATE_DIR", state.to_str().unwrap())];
    // --check-times, -l, -d, --instance-filter, a --discovery-* flag.
    let r = sb.run_env(
        &[
            "check",
            "svc",
            "--python",
            &python,
            "--check-times",
            "2",
            "-l",
            "info",
            "-d",
            "10",
            "--instance-filter",
            r#".name == "named" or .service == "own""#,
            "--discovery-timeout",
            "5",
            "--json",
        ],
        &env,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains(
            "--discovery-timeout is accepted for `agent check` users and changes nothing"
        ),
        "{}",
        r.stderr
    );
    let doc = r.json();
    let runs: Vec<(u64, u64)> = doc["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["instance"].as_u64().unwrap(), r["run"].as_u64().unwrap()))
        .collect();
    assert_eq!(runs, vec![(1, 1), (3, 1), (1, 2), (3, 2)], "{runs:?}");
    // -l off keeps none of the check's records; -l critical none of its warnings.
    for level in ["off", "critical"] {
        let doc = sb
            .run_env(
                &[
                    "check",
                    "svc",
                    "--python",
                    &python,
                    "--instance",
                    "0",
                    "-l",
                    level,
                    "--json",
                ],
                &env,
            )
            .json();
        assert_eq!(doc["runs"][0]["logs"], serde_json::json!([]), "{level}");
    }
    // --check-rate: two runs.
    let doc = sb
        .run_env(
            &[
                "check",
                "svc",
                "--python",
                &python,
                "--instance",
                "0",
                "--check-rate",
                "--json",
            ],
            &env,
        )
        .json();
    assert_eq!(doc["runs"].as_array().unwrap().len(), 2);
    // A filter agentprof does not read, or one that selects nothing: exit 2, saying why.
    for (filter, says) in [
        ("not .name", "jq's `not` is a filter of its input"),
        (".name == \"nope\"", "selects none of svc's 4 instances"),
    ] {
        let r = sb.run(&[
            "check",
            "svc",
            "--python",
            &python,
            "--instance-filter",
            filter,
        ]);
        assert_eq!(r.code, 2, "{filter}: {}", r.stderr);
        assert!(
            r.stderr.contains("--instance-filter") && r.stderr.contains(says),
            "{}",
            r.stderr
        );
    }
}

#[test]
fn profile_memory_and_its_m_options() {
    let Some(python) = venv_python() else { return };
    let sb = Sandbox::new();
    sb.write(
        "checks/keep.py",
        "from datadog_checks.base import AgentCheck\nKEEP = []\n\n\ndef grow():\n    KEEP.append(bytearray(256 * 1024))\n\n\n\
         class Keep(AgentCheck):\n    def check(self, instance):\n        grow()\n        self.gauge('kept', len(KEEP))\n",
    );
    sb.write("conf.d/keep.yaml", "instances: [{}]\n");
    let run = |extra: &[&str]| {
        let mut args = vec![
            "check", "keep", "--python", &python, "-t", "2", "-m", "--json",
        ];
        args.extend_from_slice(extra);
        let r = sb.run(&args);
        assert_eq!(r.code, 0, "{extra:?}: {}", r.stderr);
        r.json()
    };
    // By file, one row, only the check's file.
    let doc = run(&[
        "--m-sort",
        "filename",
        "--m-limit",
        "1",
        "--m-filters",
        "*/keep.py",
    ]);
    let top = doc["runs"][1]["memory_profile"]["top"].as_array().unwrap();
    assert_eq!(top.len(), 1, "{top:?}");
    assert!(
        top[0]["file"].as_str().unwrap().ends_with("keep.py"),
        "{top:?}"
    );
    assert_eq!(top[0]["line"], 0);
    assert!(top[0]["size"].as_i64().unwrap() >= 256 * 1024, "{top:?}");
    // By traceback, with frames: grow() at line 6, called from check() at line 11.
    let doc = run(&[
        "--m-sort",
        "traceback",
        "--m-frames",
        "4",
        "--m-filters",
        "*/keep.py",
    ]);
    let top = &doc["runs"][1]["memory_profile"]["top"][0];
    let frames: Vec<&str> = top["traceback"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    assert!(
        frames.len() >= 2 && frames[0].ends_with("keep.py:6") && frames[1].ends_with("keep.py:11"),
        "{frames:?}"
    );
    // The --m-* options need -m.
    let r = sb.run(&["check", "keep", "--python", &python, "--m-limit", "3"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
}

/// `--m-filters` keeps an allocation by the frame that made it, as datadog_checks_base's
/// profiler does: one made inside textwrap for keep.py is not keep.py's. And the tracebacks
/// of `--m-sort traceback` hold the check's frames only, never agentprof's host's.
#[test]
fn memory_filters_match_the_allocating_frame_and_tracebacks_are_the_checks() {
    let Some(python) = venv_python() else { return };
    let sb = Sandbox::new();
    sb.write(
        "checks/keep.py",
        "import textwrap\nfrom datadog_checks.base import AgentCheck\nKEEP = []\n\n\n\
         class Keep(AgentCheck):\n    def check(self, instance):\n        KEEP.append(bytearray(256 * 1024))\n\
         \x20       KEEP.append(textwrap.indent('x\\n' * 20000, '  '))\n",
    );
    sb.write("conf.d/keep.yaml", "instances: [{}]\n");
    let top = |extra: &[&str]| {
        let mut args = vec![
            "check",
            "keep",
            "--python",
            &python,
            "-t",
            "2",
            "-m",
            "--json",
            "--m-frames",
            "5",
            "--m-sort",
            "traceback",
        ];
        args.extend_from_slice(extra);
        let r = sb.run(&args);
        assert_eq!(r.code, 0, "{extra:?}: {}", r.stderr);
        r.json()["runs"][1]["memory_profile"]["top"]
            .as_array()
            .unwrap()
            .clone()
    };
    let all = top(&[]);
    let frames = |row: &serde_json::Value| -> Vec<String> {
        row["traceback"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap().to_string())
            .collect()
    };
    assert!(
        all.iter().any(|r| frames(r)[0].contains("textwrap")),
        "textwrap's allocation is there unfiltered: {all:?}"
    );
    for row in &all {
        assert!(frames(row).iter().all(|f| !f.starts_with('<')), "{row}");
    }
    let mine = top(&["--m-filters", "*/keep.py"]);
    assert!(!mine.is_empty());
    for row in &mine {
        assert!(frames(row)[0].contains("keep.py:"), "{row}");
    }
}

#[test]
fn flare_writes_the_report_with_secrets_scrubbed() {
    let Some(python) = venv_python() else { return };
    let sb = Sandbox::new();
    sb.write(
        "checks/leaky.py",
        "from datadog_checks.base import AgentCheck\n\n\nclass Leaky(AgentCheck):\n    def check(self, instance):\n\
         \x20       self.warning('cannot reach http://admin:hunter2@db:5432/ with password: s3cr3t')\n",
    );
    sb.write("conf.d/leaky.yaml", "instances: [{}]\n");
    let state = sb.file("state");
    let r = sb.run_env(
        &["check", "leaky", "--python", &python, "--flare"],
        &[("AGENTPROF_STATE_DIR", state.to_str().unwrap())],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    // What was printed is the report as it is; the flare file is scrubbed.
    assert!(r.stdout.contains("hunter2"), "{}", r.stdout);
    let dir = state.join("checks");
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("check_leaky_") && n.ends_with(".log"))
        })
        .expect("the flare file");
    assert!(r.stderr.contains(file.to_str().unwrap()), "{}", r.stderr);
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("http://admin:********@db:5432/"), "{text}");
    assert!(
        !text.contains("hunter2") && !text.contains("s3cr3t"),
        "{text}"
    );
    assert!(text.contains("leaky"), "{text}");
}

/// A user at a terminal: runs its arguments on a pseudo-terminal, answers pdb's prompt with
/// `p answer`, waits for 42 (or, with $PDB_SAY, `command|what to wait for;…`), continues,
/// and reads to the end.
const PDB_USER: &str = r#"import os, pty, select, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.environ["NO_COLOR"] = "1"
    os.execv(sys.argv[1], sys.argv[1:])
out = b""
def read_until(token, limit=120, since=0):
    global out
    end = time.monotonic() + limit
    while token not in out[since:]:
        left = end - time.monotonic()
        if left <= 0:
            sys.exit("timed out waiting for %r: %r" % (token, out[-2000:]))
        if not select.select([fd], [], [], left)[0]:
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            chunk = b""
        if not chunk:
            sys.exit("ended before %r: %r" % (token, out[-2000:]))
        out += chunk
read_until(b"(Pdb) ")
for step in os.environ.get("PDB_SAY", "p answer|42").split(";"):
    say, _, want = step.partition("|")
    since = len(out)
    os.write(fd, say.encode() + b"\n")
    read_until((want or "(Pdb) ").encode(), since=since)
os.write(fd, b"c\n")
# The rest, to the end: every holder of the terminal has closed it when agentprof is done.
end = time.monotonic() + 120
while time.monotonic() < end:
    if not select.select([fd], [], [], 1)[0]:
        continue
    try:
        chunk = os.read(fd, 4096)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
_, status = os.waitpid(pid, 0)
sys.stdout.write(out.decode(errors="replace"))
sys.exit(os.waitstatus_to_exitcode(status))
"#;

/// A sandbox with `bp.py` (its check() at lines 5-7) configured, and the pdb user's script.
fn breakpoint_sandbox() -> (Sandbox, std::path::PathBuf) {
    let sb = Sandbox::new();
    sb.write(
        "checks/bp.py",
        "from datadog_checks.base import AgentCheck\n\n\nclass Bp(AgentCheck):\n    def check(self, instance):\n\
         \x20       answer = 6 * 7\n        self.gauge('bp.answer', answer)\n",
    );
    sb.write("conf.d/bp.yaml", "instances: [{}]\n");
    let user = sb.write("pdb_user.py", PDB_USER);
    (sb, user)
}

/// `agentprof check bp -b LINE --python PYTHON` and `extra`, run by the pdb user on a
/// pseudo-terminal, who says `say` (see PDB_USER).
fn at_breakpoint(
    sb: &Sandbox,
    user: &std::path::Path,
    python: &str,
    line: &str,
    say: &str,
    extra: &[&str],
) -> std::process::Output {
    std::process::Command::new(python)
        .arg(user)
        .args([
            env!("CARGO_BIN_EXE_agentprof"),
            "check",
            "bp",
            "-b",
            line,
            "--python",
            python,
        ])
        .args(extra)
        .env("PDB_SAY", say)
        .current_dir(sb.path())
        .output()
        .unwrap()
}

/// `-b LINE` stops in pdb on the terminal, where the user prints a local and continues; the
/// run then finishes as usual and agentprof exits.
#[test]
fn breakpoint_stops_in_pdb_on_the_terminal() {
    let Some(python) = venv_python() else { return };
    let (sb, user) = breakpoint_sandbox();
    let out = at_breakpoint(&sb, &user, &python, "7", "p answer|42", &["--json"]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("bp.py(7)check()"), "{stdout}");
    // The report's JSON after pdb's lines: the gauge the run sent once continued.
    let report = &stdout[stdout.find("{\r\n").expect("the JSON report")..];
    let report = report.replace("\r\n", "\n");
    let doc: serde_json::Value = serde_json::from_str(report.trim()).unwrap();
    assert_eq!(doc["metrics"][0]["metric"], "bp.answer", "{doc}");
    assert_eq!(doc["metrics"][0]["value"], 42.0, "{doc}");
    // Without a terminal (a session of its own, whatever runs the tests): refused before
    // any run.
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_agentprof"));
    cmd.args(["check", "bp", "-b", "7", "--python", &python])
        .current_dir(sb.path())
        .stdin(std::process::Stdio::null());
    use std::os::unix::process::CommandExt;
    // SAFETY: setsid is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("pdb needs a terminal"), "{stderr}");
}

/// `-b 0` and `-b -1` are the check method's first statement and last line, as the Agent
/// takes them; pdb's `w` shows the check's frames, not agentprof's host; a line outside the
/// method is refused before any run, with the method's lines.
#[test]
fn breakpoint_0_and_minus_1_and_a_line_outside_check() {
    let Some(python) = venv_python() else { return };
    let (sb, user) = breakpoint_sandbox();
    let at = |line: &str, say: &str| {
        let out = at_breakpoint(&sb, &user, &python, line, say, &[]);
        let shown = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "-b {line}: {shown}");
        shown
    };
    let first = at("0", "w|(Pdb) ");
    assert!(first.contains("bp.py(6)check()"), "{first}");
    assert!(
        !first.contains("<stdin>"),
        "`w` shows the host's frames: {first}"
    );
    assert!(
        first.contains("run()"),
        "the base class's run() is the check's: {first}"
    );
    let last = at("-1", "p answer|42");
    assert!(last.contains("bp.py(7)check()"), "{last}");
    let shown = crate::agent_flags::on_a_pty(
        80,
        &["check", "bp", "-b", "2", "--python", &python],
        sb.path(),
    );
    assert!(
        shown.contains("Line 2 is not part of the check method") && shown.contains("bp.py:5-7"),
        "{shown}"
    );
    assert!(!shown.contains("pdb stops"), "{shown}");
}

/// Under `start`, an instance whose constructor fails is reported once and not scheduled,
/// as the Agent's collector does; the check's other instances run on their interval.
#[test]
fn start_schedules_only_the_instances_that_loaded() {
    let Some(python) = venv_python() else { return };
    let sb = Sandbox::new();
    sb.write("checks/svc.py", CHECK);
    sb.write(
        "conf.d/svc.yaml",
        "instances:\n  - min_collection_interval: 1\n  - fail: 1\n    min_collection_interval: 1\n",
    );
    let r = sb.run(&[
        "start",
        "--python",
        &python,
        "--duration",
        "2500ms",
        "--json",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    let errors = doc["config_errors"].to_string();
    assert!(
        errors.contains("instances[1] did not load and is not scheduled")
            && errors.contains("ValueError: bad instance: 1"),
        "{errors}"
    );
    let svc = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "svc")
        .unwrap();
    assert!(svc["runs"].as_u64().unwrap() >= 1, "{svc}");
    assert_eq!(svc["errors"], 0, "{svc}");
}

/// A Python check with no configuration runs nothing, as `agent check` finds no valid check:
/// exit 2, where agentprof looked and the line to write; with only the example beside it,
/// the copy to make.
#[test]
fn a_python_check_without_configuration_does_not_run() {
    let sb = Sandbox::new();
    sb.write(
        "checks/solo.py",
        "from datadog_checks.base import AgentCheck\n\nclass Solo(AgentCheck):\n    def check(self, _):\n        self.gauge('solo.ran', 1)\n",
    );
    let r = sb.run(&["check", "solo", "--json"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    assert!(
        r.stderr.contains("conf.d/solo.d/conf.yaml: does not exist")
            && r.stderr.contains("no valid check found")
            && r.stderr.contains("`instances: [{}]`"),
        "{}",
        r.stderr
    );
    sb.write("conf.d/solo.d/conf.yaml.example", "instances:\n  - {}\n");
    let r = sb.run(&["check", "solo"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("copy conf.d/solo.d/conf.yaml.example to conf.d/solo.d/conf.yaml"),
        "{}",
        r.stderr
    );
    sb.write("conf.d/solo.d/conf.yaml", "instances:\n  - {}\n");
    let r = sb.run(&["check", "solo", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(metric_values(&r.json(), "solo.ran"), vec![1.0]);
}
