//! A command builder for the built binary, a temp dir per test, and JSON helpers.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }
}

/// The agentprof the servers' tests start: this build's, or `$AGENTPROF_BIN` (so a release
/// binary's memory can be measured by the same test:
/// `AGENTPROF_BIN=target/release/agentprof cargo test … -- --nocapture`).
pub fn server_bin() -> PathBuf {
    std::env::var_os("AGENTPROF_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_agentprof")))
}

/// A scratch directory the command runs in, with its own conf.d.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir(dir.path().join("conf.d")).expect("conf.d");
        Sandbox { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn file(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Runs git in the sandbox (a repository there, committed as `t`); panics when it fails.
    pub fn git(&self, args: &[&str]) {
        git_in(self.dir.path(), args);
    }

    pub fn write(&self, rel: &str, text: &str) -> PathBuf {
        let p = self.file(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(&p, text).expect("write");
        p
    }

    pub fn write_bytes(&self, rel: &str, bytes: &[u8]) -> PathBuf {
        let p = self.file(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(&p, bytes).expect("write");
        p
    }

    /// An executable `checks/NAME`: a shell script with `body`.
    pub fn plugin(&self, name: &str, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = self.write(&format!("checks/{name}"), &format!("#!/bin/sh\n{body}"));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        path
    }

    pub fn run(&self, args: &[&str]) -> Run {
        self.run_env(args, &[])
    }

    pub fn run_env(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_agentprof"));
        cmd.args(args)
            .current_dir(self.path())
            .env_remove("AGENTPROF_CONFIG")
            .env_remove("DD_HOSTNAME")
            .env_remove("DD_TAGS")
            .env("NO_COLOR", "1")
            // What agentprof caches (the ui's rollups) stays in the sandbox.
            .env("XDG_CACHE_HOME", self.file(".cache"));
        for (k, v) in env {
            cmd.env(k, v);
        }
        let Output {
            status,
            stdout,
            stderr,
        } = cmd.output().expect("run agentprof");
        Run {
            code: status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        }
    }
}

/// The values of `metric` in a `check --json` document.
pub fn metric_values(doc: &serde_json::Value, metric: &str) -> Vec<f64> {
    doc["metrics"]
        .as_array()
        .expect("metrics")
        .iter()
        .filter(|m| m["metric"] == metric)
        .map(|m| m["value"].as_f64().expect("value"))
        .collect()
}

/// True when Go can be used; in CI (where `.ci/run` installs it) its absence is a failure.
#[track_caller]
pub fn require_go() -> bool {
    if has_go() {
        return true;
    }
    skip("go is not installed, so there is no go tool pprof to compare with");
    false
}

/// dd-trace-java's agent jar, as `.ci/run` fetches it into the local Maven repository
/// (`$AGENTPROF_DD_JAVA_AGENT` names another), with a `java` to run it; in CI its absence
/// is a failure.
#[track_caller]
pub fn dd_java_agent() -> Option<PathBuf> {
    let jar =
        std::env::var_os("AGENTPROF_DD_JAVA_AGENT")
            .map(PathBuf::from)
            .or_else(|| {
                let home = std::env::var_os("HOME")?;
                Some(Path::new(&home).join(
                    ".m2/repository/com/datadoghq/dd-java-agent/1.68.1/dd-java-agent-1.68.1.jar",
                ))
            })
            .filter(|j| j.is_file());
    let java = Command::new("java")
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success());
    if let (Some(jar), true) = (&jar, java) {
        return Some(jar.clone());
    }
    skip("java or dd-java-agent 1.68.1 is missing (.ci/run installs them)");
    None
}

/// The system's Chromium and Node with tests/browser's playwright-core (`.ci/run` installs
/// them; `$AGENTPROF_CHROMIUM` names another Chromium); in CI their absence is a failure.
#[track_caller]
pub fn browser() -> Option<PathBuf> {
    let chromium = std::env::var_os("AGENTPROF_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    let playwright = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/browser/node_modules/playwright-core/package.json");
    let node = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let mut missing = Vec::new();
    if !chromium.is_file() {
        missing.push(format!(
            "Chromium at {} (apt-get install chromium)",
            chromium.display()
        ));
    }
    if !node {
        missing.push("node (apt-get install nodejs npm)".to_string());
    }
    if !playwright.is_file() {
        missing.push(
            "tests/browser/node_modules (cd tests/browser && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci)"
                .to_string(),
        );
    }
    if missing.is_empty() {
        return Some(chromium);
    }
    skip(&format!(
        "missing for the browser tests: {} (.ci/run installs them)",
        missing.join("; ")
    ));
    None
}

/// `tests/browser/<script>` run by node on `plan` (written to the sandbox's plan.json): what
/// it printed, as JSON; panics with its output when it failed or printed no JSON.
pub fn run_browser(sb: &Sandbox, script: &str, plan: &serde_json::Value) -> serde_json::Value {
    sb.write("plan.json", &plan.to_string());
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/browser")
        .join(script);
    let out = Command::new("node")
        .arg(&script)
        .arg(sb.file("plan.json"))
        .output()
        .expect("node runs");
    let seen: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert!(out.status.success(), "{seen:#}");
    seen
}

/// The Go program of `tests/go/<which>`, built once per test process (Go's build cache
/// makes a later process's build quick); None when Go is missing (a failure under CI).
pub fn go_peer(which: &'static str) -> Option<PathBuf> {
    static BINS: std::sync::Mutex<Vec<(&str, PathBuf)>> = std::sync::Mutex::new(Vec::new());
    if !require_go() {
        return None;
    }
    let mut bins = BINS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, b)) = bins.iter().find(|(w, _)| *w == which) {
        return Some(b.clone());
    }
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(which);
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/go")
        .join(which);
    let st = Command::new("go")
        .args(["build", "-o"])
        .arg(&out)
        .arg(".")
        .current_dir(&src)
        .status()
        .expect("go build");
    assert!(st.success(), "go build of tests/go/{which} failed");
    bins.push((which, out.clone()));
    Some(out)
}

/// `go ARGS…`: stdout, or None when go failed.
pub fn go(args: &[&str]) -> Option<String> {
    let out = Command::new("go").args(args).output().expect("go");
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `go tool pprof -proto ARGS… FILES…`: the profile go writes (its merge of FILES, or a diff
/// with `-diff_base`); a go that fails fails the test with its stderr.
pub fn go_proto(args: &[&str], files: &[&Path]) -> Vec<u8> {
    let out = Command::new("go")
        .args(["tool", "pprof", "-proto"])
        .args(args)
        .args(files)
        .output()
        .expect("go");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// What `go tool pprof -top` prints as a CPU profile's share of its duration: the percentage
/// after "Total samples = …" in its header ("95.97" of "Duration: 1s, Total samples = 960ms
/// (95.97%)").
pub fn go_cpu_percent(file: &Path) -> String {
    let top = go(&["tool", "pprof", "-top", file.to_str().expect("utf-8 path")])
        .expect("go tool pprof -top reads the CPU profile");
    top.lines()
        .find_map(|l| l.strip_prefix("Duration: "))
        .and_then(|l| l.rsplit_once('('))
        .map(|(_, p)| {
            p.trim_end_matches(')')
                .trim_end_matches('%')
                .trim()
                .to_string()
        })
        .unwrap_or_else(|| panic!("no Duration line in go tool pprof's header:\n{top}"))
}

/// The share `go tool pprof -focus=RE` keeps of `sample_index` (every node shown): the
/// percentage of "Showing nodes accounting for X, 26.41% of Y total".
pub fn go_focus_percent(file: &Path, re: &str, sample_index: &str) -> f64 {
    let (focus, index) = (
        format!("-focus={re}"),
        format!("-sample_index={sample_index}"),
    );
    let path = file.to_str().expect("utf-8 path");
    let top = go(&[
        "tool",
        "pprof",
        "-top",
        "-nodecount=1000000",
        "-nodefraction=0",
        &index,
        &focus,
        path,
    ])
    .expect("go tool pprof -top reads the profile");
    top.lines()
        .find_map(|l| l.strip_prefix("Showing nodes accounting for "))
        .and_then(|l| l.split(", ").nth(1)?.split('%').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no share in go tool pprof's header:\n{top}"))
}

/// The total of `sample_index` in nanoseconds as `go tool pprof -unit=ns -top` prints it
/// ("… 100% of 990000000ns total").
pub fn go_total_ns(file: &Path, sample_index: &str) -> f64 {
    go_total(file, sample_index, "ns")
}

/// `go tool pprof`'s total of `sample_index` in `unit` (`ns`, `B`, or `` for a count): the
/// "of N total" of its `-top` header.
pub fn go_total(file: &Path, sample_index: &str, unit: &str) -> f64 {
    let index = format!("-sample_index={sample_index}");
    let unit_flag = format!("-unit={}", if unit.is_empty() { "minimum" } else { unit });
    let path = file.to_str().expect("utf-8 path");
    let top = go(&["tool", "pprof", &index, &unit_flag, "-top", path])
        .expect("go tool pprof -top reads the profile");
    let suffix = format!("{unit} total");
    // An empty profile's total is a bare "0 total", without the unit.
    top.lines()
        .find_map(|l| {
            let total = l.split(" of ").nth(1)?;
            total
                .strip_suffix(suffix.as_str())
                .or_else(|| total.strip_suffix(" total").filter(|n| *n == "0"))
        })
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no total in go tool pprof's header:\n{top}"))
}

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/dd-trace-go-upload")
        .join(name)
}

pub fn has_go() -> bool {
    Command::new("go")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// What a loopback server answers: status line, extra headers, body, and a delay first.
#[derive(Clone)]
pub struct Reply {
    pub status: &'static str,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub delay: Duration,
}

pub fn reply(status: &'static str, body: impl Into<Vec<u8>>) -> Reply {
    Reply {
        status,
        headers: Vec::new(),
        body: body.into(),
        delay: Duration::ZERO,
    }
}

/// One request seen: path, headers (lower-cased names), body.
pub type Seen = (String, Vec<(String, String)>, Vec<u8>);

/// Requests as `serve_noting` logs them: each with the status it was answered with.
pub type Noted = Arc<Mutex<Vec<(Seen, &'static str)>>>;

/// A loopback HTTP/1.1 server answering by path (query cut off), a thread per connection;
/// requests are numbered in the order they arrive.
pub fn serve(
    route: impl Fn(&str, usize) -> Reply + Send + Sync + 'static,
) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let addr = serve_into(route, move |s, _| log.lock().unwrap().push(s));
    (addr, seen)
}

/// As `serve`, each request logged with the status it was answered (or, for a reply with a
/// delay, is to be answered) with.
pub fn serve_noting(
    route: impl Fn(&str, usize) -> Reply + Send + Sync + 'static,
) -> (String, Noted) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let addr = serve_into(route, move |s, status| {
        log.lock().unwrap().push((s, status))
    });
    (addr, seen)
}

fn serve_into(
    route: impl Fn(&str, usize) -> Reply + Send + Sync + 'static,
    record: impl Fn(Seen, &'static str) + Send + Sync + 'static,
) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let log = Arc::new(record);
    let route = Arc::new(route);
    std::thread::spawn(move || {
        for (n, stream) in listener.incoming().enumerate() {
            let Ok(stream) = stream else { continue };
            let (log, route) = (Arc::clone(&log), Arc::clone(&route));
            std::thread::spawn(move || {
                let mut r = BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                if r.read_line(&mut line).is_err() {
                    return;
                }
                let path = line
                    .split_whitespace()
                    .nth(1)
                    .unwrap_or_default()
                    .to_string();
                let mut headers = Vec::new();
                loop {
                    let mut h = String::new();
                    if r.read_line(&mut h).is_err() || h.trim().is_empty() {
                        break;
                    }
                    if let Some((k, v)) = h.trim().split_once(':') {
                        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
                    }
                }
                let len: usize = headers
                    .iter()
                    .find(|(k, _)| k == "content-length")
                    .map_or(0, |(_, v)| v.parse().unwrap());
                let mut body = vec![0u8; len];
                let _ = r.read_exact(&mut body);
                let p = path.split('?').next().unwrap_or_default().to_string();
                let rep = route(&p, n);
                log((path, headers, body), rep.status);
                std::thread::sleep(rep.delay);
                let mut s = stream;
                let mut head = format!(
                    "HTTP/1.1 {}\r\nContent-Length: {}\r\nConnection: close\r\n",
                    rep.status,
                    rep.body.len()
                );
                for (k, v) in &rep.headers {
                    head.push_str(&format!("{k}: {v}\r\n"));
                }
                head.push_str("\r\n");
                let _ = s.write_all(head.as_bytes());
                let _ = s.write_all(&rep.body);
            });
        }
    });
    addr
}

/// A loopback server that accepts connections and never answers; its address.
pub fn hung_server() -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming().flatten() {
            held.push(s);
        }
    });
    addr
}

/// Tests that burn CPU (the Go test service) and tests that time runs (the gate) take this
/// lock, so a timing is never taken while another test saturates the cores.
pub fn cpu_exclusive() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// The venv interpreter with datadog-checks-base: $AGENTPROF_TEST_PYTHON, else the one
/// `scripts/test-venv.sh` finds or creates (so `cargo test` needs nothing set). When it cannot
/// be had, a test fails under CI and says "skipped: why" otherwise.
#[track_caller]
pub fn venv_python() -> Option<String> {
    static VENV: std::sync::OnceLock<Result<String, String>> = std::sync::OnceLock::new();
    let found = VENV.get_or_init(|| {
        if let Ok(p) = std::env::var("AGENTPROF_TEST_PYTHON")
            && !p.is_empty()
        {
            return Ok(p);
        }
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/test-venv.sh");
        match Command::new(&script).output() {
            Ok(o) if o.status.success() => {
                Ok(String::from_utf8_lossy(&o.stdout).trim().to_string())
            }
            Ok(o) => Err(format!(
                "{} failed: {}",
                script.display(),
                String::from_utf8_lossy(&o.stderr).trim()
            )),
            Err(e) => Err(format!("cannot run {}: {e}", script.display())),
        }
    });
    match found {
        Ok(p) => Some(p.clone()),
        Err(why) => {
            skip(&format!("no venv with datadog-checks-base: {why}"));
            None
        }
    }
}

/// Whether the tests that stand for an issue's acceptance figures run at that size
/// (`AGENTPROF_ACCEPTANCE=1`, as `scripts/bench_exactly_once.sh` runs them: kill -9 ten times,
/// 300 holders beside 100 honest uploads, a 10-minute outage) rather than the size a CI run
/// affords. Either way they assert the same things.
pub fn acceptance() -> bool {
    std::env::var("AGENTPROF_ACCEPTANCE").is_ok_and(|v| v.trim() == "1")
}

/// Runs git in `dir` as `t`, new repositories on `main`; panics when it fails.
pub fn git_in(dir: &Path, args: &[&str]) {
    let st = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(["-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(
        st.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&st.stderr)
    );
}

/// Whether this run is CI's: `CI` set to anything but an empty value, `0` or `false`.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !matches!(v.trim(), "" | "0" | "false" | "FALSE" | "False"))
}

/// A test that cannot run here because `why` (a peer is missing): a failure under CI;
/// otherwise the reason is added to `target/skipped-tests.txt` under this `cargo test`'s
/// process id, and the last test target (`tests/skipped.rs`) prints the count and the
/// reasons, so a green run says how many tests did nothing.
#[track_caller]
pub fn skip(why: &str) {
    let at = std::panic::Location::caller();
    let test = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    assert!(
        !in_ci(),
        "{test}: {why} (CI installs it; a test never skips there)"
    );
    eprintln!("skipped: {why}");
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/skipped-tests.txt");
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)
    {
        use std::io::Write;
        let why = why.replace('\n', " ");
        let _ = writeln!(
            f,
            "{}\t{test} ({}:{}): {why}",
            std::os::unix::process::parent_id(),
            at.file(),
            at.line()
        );
    }
}

/// A `/proc/PID/status` figure in KiB (`VmHWM:`, `VmRSS:`); 0 when it cannot be read.
pub fn proc_status_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// A loopback intake that answers its first request 429 with `Retry-After: 1`, the next
/// `failures` 503, and 200 after that; the requests it saw.
pub fn throttling_then_failing(failures: usize) -> (String, Arc<Mutex<Vec<Seen>>>) {
    serve(move |_, n| {
        let mut r = match n {
            0 => reply("429 Too Many Requests", ""),
            n if n <= failures => reply("503 Service Unavailable", "down"),
            _ => reply("200 OK", ""),
        };
        if n == 0 {
            r.headers.push(("Retry-After".into(), "1".into()));
        }
        r
    })
}
