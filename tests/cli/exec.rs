//! Exec plugins: DogStatsD on stdout, configuration on stdin, failures, timeouts, overrides.

use crate::support::{Sandbox, metric_values};

#[test]
fn plugin_metrics_service_checks_events_and_its_own_cost() {
    let sb = Sandbox::new();
    let out = sb.file("written.bin");
    sb.plugin(
        "demo.sh",
        &format!(
            "cfg=$(cat)\n\
             v=$(echo \"$cfg\" | sed -n 's/.*\"value\":\\([0-9]*\\).*/\\1/p')\n\
             echo \"demo.value:$v|g|#from:stdin\"\n\
             echo \"demo.args:$#|g\"\n\
             echo \"demo.hits:2|c|@0.5\"\n\
             echo \"demo.lat:10:20:30|ms\"\n\
             echo \"_sc|demo.up|1|#a:b|m:slow\"\n\
             echo \"_e{{4,3}}:boot|now|t:warning\"\n\
             echo 'not a datagram'\n\
             head -c 1048576 /dev/zero > {}\n\
             sync {}\n",
            out.display(),
            out.display()
        ),
    );
    sb.write(
        "conf.d/demo.yaml",
        "instances:\n  - value: 7\n    command: [one, two]\n    tags: [team:x]\n",
    );
    let r = sb.run(&["check", "demo", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    assert_eq!(doc["kind"], "exec");
    assert!(doc["version"].is_null());
    assert_eq!(metric_values(&doc, "demo.value"), vec![7.0]);
    assert_eq!(metric_values(&doc, "demo.args"), vec![2.0]);
    assert_eq!(metric_values(&doc, "demo.hits"), vec![4.0]);
    assert_eq!(metric_values(&doc, "demo.lat.max"), vec![30.0]);
    let m = doc["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "demo.value")
        .unwrap();
    assert_eq!(m["tags"], serde_json::json!(["from:stdin", "team:x"]));
    assert_eq!(doc["service_checks"][0]["status"], 1);
    assert_eq!(doc["service_checks"][0]["message"], "slow");
    assert_eq!(doc["events"][0]["title"], "boot");
    assert_eq!(doc["events"][0]["alert_type"], "warning");
    assert!(
        doc["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("not a datagram"))
    );
    let run = &doc["runs"][0];
    assert!(
        run["cpu"]["user_s"].as_f64().unwrap() + run["cpu"]["system_s"].as_f64().unwrap() > 0.0
    );
    assert!(
        run["io"]["write_bytes"].as_u64().unwrap() >= 1_048_576,
        "{run}"
    );
    assert!(run["memory"]["rss_before"].as_u64().unwrap() > 0);
    assert_eq!(run["threads"], 1);
    let r = sb.run(&["check", "demo"]);
    assert!(
        r.stdout.contains("measured on the plugin's process"),
        "{}",
        r.stdout
    );
}

#[test]
fn a_failing_plugin_exits_1_with_its_stderr() {
    let sb = Sandbox::new();
    sb.plugin(
        "bad",
        "echo 'ok.metric:1|g'\necho 'disk on fire' >&2\nexit 3\n",
    );
    let r = sb.run(&["check", "bad", "--json"]);
    assert_eq!(r.code, 1);
    let doc = r.json();
    let err = doc["runs"][0]["error"].as_str().unwrap();
    assert!(
        err.contains("exited with status 3") && err.contains("disk on fire"),
        "{err}"
    );
    // What it printed before failing is still reported.
    assert_eq!(metric_values(&doc, "ok.metric"), vec![1.0]);
}

#[test]
fn a_hanging_plugin_and_its_children_are_killed_at_the_timeout() {
    let sb = Sandbox::new();
    let pidfile = sb.file("child.pid");
    sb.plugin(
        "hang",
        &format!("sleep 60 &\necho $! > {}\nwait\n", pidfile.display()),
    );
    sb.write("conf.d/hang.yaml", "instances:\n  - run_timeout: 1\n");
    let t = std::time::Instant::now();
    let r = sb.run(&["check", "hang", "--json"]);
    assert!(t.elapsed().as_secs_f64() < 5.0, "took {:?}", t.elapsed());
    assert_eq!(r.code, 1);
    let doc = r.json();
    assert!(
        doc["runs"][0]["error"]
            .as_str()
            .unwrap()
            .contains("timed out after 1.00s")
    );
    let child: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    let alive = std::fs::read_to_string(format!("/proc/{child}/stat"))
        .is_ok_and(|s| s.split_whitespace().nth(2).is_none_or(|st| st != "Z"));
    assert!(!alive, "the plugin's child {child} outlived the timeout");
}

#[test]
fn a_plugin_overrides_the_builtin_of_the_same_name() {
    let sb = Sandbox::new();
    sb.plugin("uptime.sh", "echo 'custom.uptime:1|g'\n");
    let doc = sb.run(&["check", "uptime", "--json"]).json();
    assert_eq!(doc["kind"], "exec");
    assert_eq!(metric_values(&doc, "custom.uptime"), vec![1.0]);
    let list: serde_json::Value =
        serde_json::from_str(&sb.run(&["list", "--json"]).stdout).unwrap();
    let up = list["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "uptime")
        .unwrap();
    assert_eq!(up["kind"], "exec");
    assert_eq!(up["overrides_builtin"], true);
    let text = sb.run(&["list"]).stdout;
    assert!(text.contains("overrides the built-in"), "{text}");
    // A profile of another process cannot be sampled; a file that promises one is refused.
    let r = sb.run(&["check", "uptime", "--pprof", "x.pb.gz"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("--pprof: uptime is an exec plugin"),
        "{}",
        r.stderr
    );
}

#[test]
fn the_shipped_file_age_plugin_reports_age_and_freshness() {
    let sb = Sandbox::new();
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let fresh = sb.write("fresh.txt", "hello");
    sb.write(
        "conf.d/file_age.yaml",
        &format!(
            "instances:\n  - command: [{}, 3600]\n  - command: [{}/missing.txt]\n",
            fresh.display(),
            sb.path().display()
        ),
    );
    let checks = repo.join("checks");
    let r = sb.run(&[
        "check",
        "file_age",
        "--checks",
        checks.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    let age = metric_values(&doc, "file_age.seconds");
    assert_eq!(age.len(), 1);
    assert!(age[0] >= 0.0 && age[0] < 60.0, "{age:?}");
    assert_eq!(metric_values(&doc, "file_age.bytes"), vec![5.0]);
    let sc = doc["service_checks"].as_array().unwrap();
    assert_eq!(sc.len(), 2);
    assert_eq!(sc[0]["status"], 0);
    assert_eq!(sc[1]["status"], 2);
    assert!(
        sc[1]["message"]
            .as_str()
            .unwrap()
            .contains("does not exist")
    );
}

/// A plugin that allocates and touches 64 MiB, then exits: its figures are its own, read at
/// its exec and at its exit, never a sample taken during fork/exec (which once read 4 KiB).
#[test]
fn a_plugins_memory_is_read_at_its_exec_and_its_exit() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    let path = sb.write(
        "checks/big",
        "#!/usr/bin/env python3\nimport os\nb = bytearray(64 << 20)\nfor i in range(0, len(b), 4096):\n    b[i] = 1\nos.write(1, b'big.done:1|g\\n')\nos._exit(0)  # exit holding the 64 MiB\n",
    );
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    let r = sb.run(&["check", "big", "-t", "5", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    for run in doc["runs"].as_array().unwrap() {
        let m = &run["memory"];
        let (before, after, peak) = (
            m["rss_before"].as_u64().unwrap(),
            m["rss_after"].as_u64().unwrap(),
            m["peak_rss"].as_u64().unwrap(),
        );
        assert!(peak >= 64 << 20, "{m}");
        assert!(after >= 64 << 20 && after <= peak, "{m}");
        // At exec the new program has a few pages of stack and nothing else yet: not
        // agentprof's memory inherited through fork, not a partly-loaded interpreter.
        assert!(before > 0 && before < 1 << 20, "{m}");
        assert_eq!(m["peak_rss_scope"], "run");
    }
    assert_eq!(metric_values(&doc, "big.done"), vec![1.0; 5]);
}

/// A plugin receives its whole instance, so its own options are not "unknown" to agentprof.
#[test]
fn a_plugins_own_options_raise_no_unknown_option_warning() {
    let sb = Sandbox::new();
    sb.plugin("opts", "cat >/dev/null\necho 'opts.ok:1|g'\n");
    sb.write(
        "conf.d/opts.yaml",
        "instances:\n  - endpoint: http://x\n    retries: 3\n    tags: [a:b]\n",
    );
    let r = sb.run(&["check", "opts"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stderr.contains("unknown"), "{}", r.stderr);
    // A built-in still says so, with the file and line.
    sb.write("conf.d/uptime.yaml", "instances:\n  - colour: blue\n");
    let r = sb.run(&["check", "uptime"]);
    assert!(r.stderr.contains("colour"), "{}", r.stderr);
}

/// A plugin that exits while a child it started keeps its stdout open: the run ends when the
/// plugin exits (its output kept), and what it left running is killed and said, whether in
/// its process group, escaped with `setsid`, or a daemon with its output closed.
#[test]
fn a_plugins_lingering_children_cannot_hold_the_run() {
    let sb = Sandbox::new();
    sb.plugin("linger", "sleep 37 &\necho 'linger.ok:1|g'\n");
    sb.plugin("escape", "setsid sleep 38 &\necho 'escape.ok:1|g'\n");
    sb.plugin(
        "daemon",
        "setsid sh -c 'exec sleep 39 </dev/null >/dev/null 2>&1' &\nsleep 0.2\necho 'daemon.ok:1|g'\n",
    );
    for (name, marker) in [
        ("linger", "sleep 37"),
        ("escape", "sleep 38"),
        ("daemon", "sleep 39"),
    ] {
        let t = std::time::Instant::now();
        let r = sb.run(&["check", name, "--json"]);
        assert!(
            t.elapsed() < std::time::Duration::from_secs(2),
            "{name}: {:?}",
            t.elapsed()
        );
        assert_eq!(r.code, 0, "{name}: {}", r.stderr);
        let doc = r.json();
        assert_eq!(
            metric_values(&doc, &format!("{name}.ok")),
            vec![1.0],
            "{name}"
        );
        let warnings = doc["warnings"].to_string();
        assert!(warnings.contains("were killed"), "{name}: {warnings}");
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(!running(marker), "{name}: {marker} still runs");
    }
}

/// A plugin printing 300,000 distinct gauges: 100,000 are kept, the rest dropped and said,
/// and agentprof stays within its memory budget.
#[test]
fn a_flood_of_distinct_series_is_bounded_and_said() {
    let sb = Sandbox::new();
    sb.plugin(
        "flood",
        "awk 'BEGIN { for (i = 0; i < 300000; i++) printf \"flood.m%d:1|g\\n\", i }'\n",
    );
    let r = sb.run(&["check", "flood", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    assert_eq!(doc["metrics"].as_array().unwrap().len(), 100_000);
    assert!(
        doc["warnings"]
            .to_string()
            .contains("200000 metric submissions past the limit of 100000 a run were dropped"),
        "{}",
        doc["warnings"]
    );
}

/// True when a process whose command line is `marker` (words joined by spaces) is running.
fn running(marker: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        std::fs::read(e.path().join("cmdline")).is_ok_and(|c| {
            let words: Vec<String> = c
                .split(|b| *b == 0)
                .filter(|w| !w.is_empty())
                .map(|w| String::from_utf8_lossy(w).into_owned())
                .collect();
            words.join(" ") == marker
        })
    })
}

/// DogStatsD distributions are kept as the Agent keeps them, one sketch per series: the row
/// says `distribution`, `--json` carries the sketch's count, sum, min, max, average and
/// percentiles, and the percentiles of 1..=1000 (known exactly) are within the sketch's 1/128.
#[test]
fn distributions_are_sketches_with_their_percentiles() {
    let sb = Sandbox::new();
    sb.plugin(
        "lat.sh",
        "i=1\nwhile [ $i -le 1000 ]; do echo \"req.latency:$i|d|#route:/a\"; i=$((i+1)); done\n\
         echo 'req.size:100|d|@0.5'\n",
    );
    sb.write("conf.d/lat.yaml", "instances:\n  - {}\n");
    let r = sb.run(&["check", "lat", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    let m: Vec<&serde_json::Value> = doc["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["metric"] == "req.latency")
        .collect();
    assert_eq!(m.len(), 1, "one series, not histogram aggregates: {m:?}");
    assert_eq!(m[0]["type"], "distribution");
    assert_eq!(m[0]["value"], 1000.0);
    let s = &m[0]["sketch"];
    assert_eq!(
        (&s["count"], &s["sum"], &s["min"], &s["max"], &s["avg"]),
        (
            &1000.0.into(),
            &500500.0.into(),
            &1.0.into(),
            &1000.0.into(),
            &500.5.into()
        ),
        "{s}"
    );
    for (p, exact) in [
        ("p50", 500.0),
        ("p75", 750.0),
        ("p90", 900.0),
        ("p95", 950.0),
        ("p99", 990.0),
    ] {
        let got = s[p].as_f64().unwrap();
        assert!(
            (got - exact).abs() <= exact / 128.0,
            "{p}: {got} for {exact}"
        );
    }
    // A value sent at @0.5 stands for two.
    let size = doc["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["metric"] == "req.size")
        .unwrap();
    assert_eq!(
        (&size["value"], &size["sketch"]["sum"]),
        (&2.0.into(), &200.0.into())
    );
    let table = sb.run(&["check", "lat"]);
    assert!(table.stdout.contains("distribution"), "{}", table.stdout);
    let row = table
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("req.latency") && l.contains("500500"))
        .unwrap_or_else(|| panic!("no sketch row:\n{}", table.stdout));
    assert!(row.contains("route:/a"), "{row}");
}

/// Escape sequences, a terminal title and NUL in what a plugin prints: a metric name holding
/// them is refused (as `|` and space are), and whatever else of it is printed — a service
/// check's message, an event, a warning — is shown escaped, never acted on.
#[test]
fn what_a_plugin_sends_never_acts_on_the_terminal() {
    let sb = Sandbox::new();
    sb.plugin(
        "evil.sh",
        "printf 'clear\\033[2Jscreen:1|g\\n'\n\
         printf 'nul\\000name:1|g\\n'\n\
         printf 'ok.metric:1|g\\n'\n\
         printf '_sc|evil.up|0|m:\\033]0;owned\\007 fine\\n'\n\
         printf '_e{4,9}:boom|\\033[31mred\\033[0m\\n'\n",
    );
    sb.write("conf.d/evil.yaml", "instances:\n  - {}\n");
    let r = sb.run(&["check", "evil"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for bad in ['\u{1b}', '\u{7}', '\0'] {
        assert!(
            !r.stdout.contains(bad),
            "{bad:?} reached the terminal:\n{}",
            r.stdout
        );
        assert!(
            !r.stderr.contains(bad),
            "{bad:?} reached the terminal:\n{}",
            r.stderr
        );
    }
    assert!(r.stdout.contains("ok.metric"), "{}", r.stdout);
    assert!(
        !r.stdout
            .lines()
            .any(|l| l.trim_start().starts_with("clear")),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("\\u{1b}]0;owned\\u{7} fine"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("bad metric name"), "{}", r.stdout);
}
