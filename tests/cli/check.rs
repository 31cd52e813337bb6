//! `agentprof check` on every built-in check: JSON fields present and sane, runs, rates,
//! instances, collector.log, list.

use crate::support::{Sandbox, metric_values};

fn assert_run_sane(run: &serde_json::Value) {
    assert_eq!(run["status"], "ok", "{run}");
    assert!(run["error"].is_null());
    let wall = run["run_time_s"].as_f64().unwrap();
    assert!(wall > 0.0 && wall < 30.0, "run_time_s {wall}");
    for k in [
        "rss_before",
        "rss_after",
        "vms_before",
        "vms_after",
        "peak_rss",
    ] {
        let v = run["memory"][k]
            .as_u64()
            .unwrap_or_else(|| panic!("memory.{k} in {run}"));
        assert!(v > 1024 * 1024, "memory.{k} = {v}");
    }
    let rss_diff = run["memory"]["rss_diff"].as_i64().unwrap();
    assert_eq!(
        rss_diff,
        run["memory"]["rss_after"].as_i64().unwrap()
            - run["memory"]["rss_before"].as_i64().unwrap()
    );
    assert!(
        run["memory"]["peak_rss"].as_u64() >= run["memory"]["rss_after"].as_u64().map(|v| v / 2)
    );
    // The run thread's CPU clock over the run: never more than the run's wall time (plus the
    // two clocks' reading apart), and split by the kernel into user and system.
    let cpu = &run["cpu"];
    let total = cpu["total_s"].as_f64().unwrap();
    assert!(
        total > 0.0 && total <= wall + 0.002,
        "cpu {cpu} over {wall} s"
    );
    let split = cpu["user_s"].as_f64().unwrap() + cpu["system_s"].as_f64().unwrap();
    assert!(split <= wall + 0.02, "cpu {cpu} over {wall} s");
    // What a built-in does: it reads procfs (at least one read call) and writes nothing,
    // opens no connection, and runs on the one run thread beside the main thread.
    let io = &run["io"];
    assert!(io["read_count"].as_u64().unwrap() >= 1, "io {io}");
    assert_eq!(io["write_count"].as_u64(), Some(0), "io {io}");
    assert_eq!(io["write_bytes"].as_u64(), Some(0), "io {io}");
    assert_eq!(
        run["threads"].as_u64(),
        Some(2),
        "the main thread and the run thread"
    );
    assert_eq!(run["connections"].as_u64(), Some(0), "{run}");
}

#[test]
fn every_builtin_check_reports_metrics_and_cost() {
    let sb = Sandbox::new();
    sb.write(
        "conf.d/process.yaml",
        "instances:\n  - name: all\n    search_string: [All]\n",
    );
    sb.write(
        "conf.d/network.yaml",
        "instances:\n  - collect_connection_state: true\n    excluded_interfaces: []\n",
    );
    let expect: &[(&str, &[&str])] = &[
        (
            "disk",
            &[
                "system.disk.total",
                "system.disk.used",
                "system.disk.free",
                "system.disk.in_use",
                "system.fs.inodes.total",
            ],
        ),
        (
            "cpu",
            &[
                "system.cpu.user",
                "system.cpu.system",
                "system.cpu.idle",
                "system.cpu.iowait",
                "system.cpu.stolen",
                "system.cpu.guest",
                "system.cpu.num_cores",
            ],
        ),
        (
            "memory",
            &[
                "system.mem.total",
                "system.mem.free",
                "system.mem.usable",
                "system.swap.total",
            ],
        ),
        (
            "io",
            &[
                "system.io.r_s",
                "system.io.w_s",
                "system.io.rkb_s",
                "system.io.wkb_s",
                "system.io.await",
                "system.io.util",
            ],
        ),
        (
            "load",
            &[
                "system.load.1",
                "system.load.5",
                "system.load.15",
                "system.load.norm.1",
            ],
        ),
        (
            "network",
            &[
                "system.net.bytes_rcvd",
                "system.net.bytes_sent",
                "system.net.packets_in.count",
                "system.net.packets_out.error",
                "system.net.tcp4.listening",
            ],
        ),
        ("uptime", &["system.uptime"]),
        (
            "process",
            &[
                "system.processes.number",
                "system.processes.mem.rss",
                "system.processes.threads",
                "system.processes.open_file_descriptors",
                "system.processes.cpu.pct",
                "system.processes.ioread_bytes",
            ],
        ),
    ];
    for (check, metrics) in expect {
        // process's cpu.pct needs a second between runs (/proc counts 10 ms ticks).
        let pause = if *check == "process" { "1s" } else { "50ms" };
        let r = sb.run(&["check", check, "--json", "-t", "2", "--pause", pause]);
        assert_eq!(r.code, 0, "{check}: {}", r.stderr);
        let doc = r.json();
        assert_eq!(doc["check"], *check);
        assert_eq!(doc["kind"], "builtin");
        assert_eq!(doc["schema_version"], 1);
        let runs = doc["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 2, "{check}");
        runs.iter().for_each(assert_run_sane);
        for m in *metrics {
            let run2: Vec<_> = doc["metrics"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|x| x["metric"] == *m && x["run"] == 2)
                .collect();
            assert!(!run2.is_empty(), "{check}: {m} missing in run 2");
            for x in run2 {
                assert!(x["value"].as_f64().unwrap().is_finite());
                assert!(x["host"].as_str().is_some_and(|h| !h.is_empty()));
                assert!(x["type"].is_string());
            }
        }
    }
}

#[test]
fn metric_values_match_the_system() {
    let sb = Sandbox::new();
    sb.write(
        "conf.d/disk.yaml",
        "instances:\n  - use_mount: true\n    tag_by_filesystem: true\n",
    );
    let doc = sb.run(&["check", "disk", "--json"]).json();
    let root: Vec<&serde_json::Value> = doc["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| {
            m["metric"] == "system.disk.total"
                && m["tags"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|t| t == "device:/")
        })
        .collect();
    assert_eq!(root.len(), 1, "system.disk.total for / in {doc}");
    assert!(
        root[0]["tags"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t.as_str().unwrap().starts_with("filesystem:"))
    );
    // statvfs as Python's os module reports it: f_blocks * f_frsize.
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import os; s=os.statvfs('/'); print(s.f_blocks*s.f_frsize/1024)",
        ])
        .output()
        .expect("python3");
    let expected: f64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    let got = root[0]["value"].as_f64().unwrap();
    assert!(
        (got - expected).abs() / expected < 0.02,
        "disk.total {got} KiB vs statvfs {expected} KiB"
    );

    let doc = sb.run(&["check", "memory", "--json"]).json();
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let kb: f64 = meminfo
        .lines()
        .next()
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(metric_values(&doc, "system.mem.total"), vec![kb / 1024.0]);

    let doc = sb.run(&["check", "cpu", "--json"]).json();
    let cores = std::fs::read_to_string("/proc/stat")
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("cpu") && !l.starts_with("cpu "))
        .count();
    assert_eq!(
        metric_values(&doc, "system.cpu.num_cores"),
        vec![cores as f64]
    );
    // A single run has no previous sample for the 7 percentages and the context switches.
    assert!(metric_values(&doc, "system.cpu.user").is_empty());
    assert_eq!(doc["runs"][0]["awaiting_previous"], 8);
    // load.norm is load over the CPUs online, the count /proc/stat lists.
    let doc = sb.run(&["check", "load", "--json"]).json();
    let (load, norm) = (
        metric_values(&doc, "system.load.1")[0],
        metric_values(&doc, "system.load.norm.1")[0],
    );
    assert!(
        (norm * cores as f64 - load).abs() < 1e-9,
        "{load} / {cores} ≠ {norm}"
    );
}

#[test]
fn times_runs_n_times_and_rate_runs_twice_a_second_apart() {
    let sb = Sandbox::new();
    let doc = sb
        .run(&["check", "uptime", "--json", "--times", "3"])
        .json();
    let runs: Vec<u64> = doc["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run"].as_u64().unwrap())
        .collect();
    assert_eq!(runs, vec![1, 2, 3]);
    assert_eq!(metric_values(&doc, "system.uptime").len(), 3);

    let doc = sb.run(&["check", "network", "--json", "-r"]).json();
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    let gap = runs[1]["started_at"].as_f64().unwrap() - runs[0]["started_at"].as_f64().unwrap();
    assert!(gap >= 1.0, "runs {gap}s apart");
    let rates: Vec<&serde_json::Value> = doc["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["metric"] == "system.net.bytes_rcvd")
        .collect();
    assert!(!rates.is_empty());
    assert!(
        rates
            .iter()
            .all(|m| m["type"] == "gauge" && m["run"] == 2 && m["value"].as_f64().unwrap() >= 0.0)
    );
}

#[test]
fn instance_tags_hostname_and_global_tags_apply() {
    let sb = Sandbox::new();
    sb.write("agentprof.yaml", "hostname: box-1\ntags: [env:test]\n");
    sb.write(
        "conf.d/uptime.yaml",
        "instances:\n  - tags: [team:a]\n  - tags: [team:b]\n    service: web\n",
    );
    let doc = sb.run(&["check", "uptime", "--json"]).json();
    let ms = doc["metrics"].as_array().unwrap();
    assert_eq!(ms.len(), 2);
    assert_eq!(ms[0]["host"], "box-1");
    assert_eq!(ms[0]["tags"], serde_json::json!(["env:test", "team:a"]));
    assert_eq!(
        ms[1]["tags"],
        serde_json::json!(["env:test", "service:web", "team:b"])
    );
    let doc = sb
        .run_env(
            &["check", "uptime", "--json", "--instance", "1"],
            &[("DD_HOSTNAME", "from-env")],
        )
        .json();
    assert_eq!(doc["runs"].as_array().unwrap().len(), 1);
    assert_eq!(doc["runs"][0]["instance"], 1);
    assert_eq!(doc["metrics"][0]["host"], "from-env");
}

#[test]
fn human_output_is_plain_when_piped_and_shows_cost() {
    let sb = Sandbox::new();
    let r = sb.run(&["check", "disk"]);
    assert_eq!(r.code, 0);
    assert!(!r.stdout.contains('\x1b'), "escape codes in piped output");
    for needle in [
        "Metrics",
        "system.disk.total",
        "Cost of each run",
        "memory before (RSS)",
        "difference (VMS)",
        "peak RSS",
        "connections (TCP+UDP)",
        "wall time",
    ] {
        assert!(
            r.stdout.contains(needle),
            "{needle} missing in:\n{}",
            r.stdout
        );
    }
    let bordered = sb.run(&["check", "disk", "--table"]);
    assert!(bordered.stdout.contains("+----"), "{}", bordered.stdout);
}

#[test]
fn collector_log_block_is_appended() {
    let sb = Sandbox::new();
    let log = sb.file("collector.log");
    let log_s = log.to_str().unwrap();
    assert_eq!(
        sb.run(&["check", "disk", "-t", "2", "--log", log_s]).code,
        0
    );
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 14, "{text}");
    let head = regex_lite(lines[0]);
    assert!(head, "header {}", lines[0]);
    let labels = [
        "Memory Before (RSS): ",
        "Memory After (RSS): ",
        "Difference (RSS): ",
        "Memory Before (VMS): ",
        "Memory After (VMS): ",
        "Difference (VMS): ",
    ];
    for (line, label) in lines[1..7].iter().zip(labels) {
        let v = line.strip_prefix(label).unwrap_or_else(|| panic!("{line}"));
        v.parse::<i64>().unwrap_or_else(|_| panic!("{line}"));
    }
    let before: i64 = lines[1].rsplit(' ').next().unwrap().parse().unwrap();
    let after: i64 = lines[2].rsplit(' ').next().unwrap().parse().unwrap();
    let diff: i64 = lines[3].rsplit(' ').next().unwrap().parse().unwrap();
    assert_eq!(after - before, diff);
    // log_file in agentprof.yaml does the same, appending.
    sb.write("agentprof.yaml", "log_file: collector.log\n");
    assert_eq!(sb.run(&["check", "uptime"]).code, 0);
    assert_eq!(std::fs::read_to_string(&log).unwrap().lines().count(), 21);
}

/// `YYYY-MM-DD HH:MM:SS TZ | INFO | check | disk`
fn regex_lite(line: &str) -> bool {
    let parts: Vec<&str> = line.split(" | ").collect();
    let ts: Vec<&str> = parts[0].split(' ').collect();
    parts.len() == 4
        && parts[1] == "INFO"
        && parts[2] == "check"
        && parts[3] == "disk"
        && ts.len() == 3
        && ts[0].len() == 10
        && ts[1].len() == 8
        && !ts[2].is_empty()
}

#[test]
fn list_shows_every_builtin_and_its_config() {
    let sb = Sandbox::new();
    sb.write(
        "conf.d/disk.yaml",
        "instances:\n  - {}\n  - use_mount: true\n",
    );
    let r = sb.run(&["list"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for name in [
        "cpu", "disk", "io", "load", "memory", "network", "process", "uptime",
    ] {
        assert!(
            r.stdout.lines().any(|l| l.trim_start().starts_with(name)),
            "{name} in\n{}",
            r.stdout
        );
    }
    let doc: serde_json::Value = serde_json::from_str(&sb.run(&["list", "--json"]).stdout).unwrap();
    let disk = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "disk")
        .unwrap();
    assert_eq!(disk["instances"], 2);
    assert!(
        disk["source"]["path"]
            .as_str()
            .unwrap()
            .ends_with("disk.yaml")
    );
    let up = doc["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "uptime")
        .unwrap();
    assert_eq!(up["source"]["type"], "default");
}

/// Back-to-back runs: /proc's 10 ms ticks over a millisecond window once read 654 % on two
/// cores. The percentage waits for a window of a second and never exceeds every core busy.
#[test]
fn process_cpu_pct_is_never_above_every_core_busy() {
    let sb = Sandbox::new();
    sb.write(
        "conf.d/process.yaml",
        "instances:\n  - name: all\n    search_string: [All]\n    exact_match: false\n",
    );
    let r = sb.run(&["check", "process", "-t", "30", "--pause", "50ms", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    let cores = std::thread::available_parallelism().unwrap().get() as f64;
    let pct: Vec<(u64, f64)> = doc["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["metric"] == "system.processes.cpu.pct")
        .map(|m| (m["run"].as_u64().unwrap(), m["value"].as_f64().unwrap()))
        .collect();
    assert!(
        !pct.is_empty(),
        "30 runs 50 ms apart span more than a second"
    );
    let starts: Vec<f64> = doc["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["started_at"].as_f64().unwrap())
        .collect();
    for (run, v) in &pct {
        assert!((0.0..=100.0 * cores).contains(v), "run {run}: {v}%");
        // A value only once a second has passed since the baseline (run 1 at least).
        assert!(starts[*run as usize - 1] - starts[0] >= 0.95, "run {run}");
    }
}

/// Two instances run three times: the header counts two instances and each instance's
/// sections appear once (runs interleave instances; they were once counted per run).
#[test]
fn several_instances_and_runs_print_each_instance_once() {
    let sb = Sandbox::new();
    sb.write(
        "conf.d/uptime.yaml",
        "instances:\n  - tags: [a:1]\n  - tags: [a:2]\n",
    );
    let r = sb.run(&["check", "uptime", "-t", "3"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let header = r.stdout.lines().next().unwrap();
    assert!(header.ends_with("2 instances × 3 runs"), "{header}");
    for inst in 0..2 {
        let label =
            format!("Cost of each run (measured on agentprof's own process) — instances[{inst}]");
        assert_eq!(r.stdout.matches(&label).count(), 1, "{}", r.stdout);
    }
}

/// `disk` with no configuration reports what the integrations-core disk check reports by
/// default: every mount with a device and a size (tmpfs and devtmpfs too), less CD-ROMs,
/// tracefs and binfmt_misc, with inode utilisation and per-disk read/write time. The expected
/// set comes from /proc/mounts and Python's os.statvfs.
#[test]
fn disk_defaults_are_the_integrations() {
    let sb = Sandbox::new();
    let doc = sb.run(&["check", "disk", "--json"]).json();
    let expected = std::process::Command::new("python3")
        .arg("-c")
        .arg(
            "import os, re\nout = set()\nfor line in open('/proc/mounts'):\n    dev, mnt, fs = line.split()[:3]\n    mnt = mnt.encode().decode('unicode_escape')\n    if dev in ('', 'none') or re.match('iso9660$|tracefs$', fs, re.I) or re.match('(/host)?/proc/sys/fs/binfmt_misc$', mnt):\n        continue\n    try:\n        st = os.statvfs(mnt)\n    except OSError:\n        continue\n    if st.f_blocks * st.f_frsize > 0:\n        out.add(dev)\nprint('\\n'.join(sorted(out)))\n",
        )
        .output()
        .unwrap();
    let expected: std::collections::BTreeSet<String> = String::from_utf8_lossy(&expected.stdout)
        .lines()
        .map(|l| format!("device:{l}"))
        .collect();
    let got: std::collections::BTreeSet<String> = doc["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["metric"] == "system.disk.total")
        .filter_map(|m| {
            m["tags"]
                .as_array()
                .unwrap()
                .iter()
                .find_map(|t| t.as_str().filter(|t| t.starts_with("device:")))
                .map(str::to_string)
        })
        .collect();
    assert_eq!(got, expected);
    let names: std::collections::BTreeSet<&str> = doc["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["metric"].as_str().unwrap())
        .collect();
    for m in [
        "system.disk.utilized",
        "system.disk.in_use",
        "system.fs.inodes.utilized",
        "system.fs.inodes.in_use",
    ] {
        assert!(names.contains(m), "{m} missing: {names:?}");
    }
    // read_time/write_time are monotonic counts and their _pct rates: from run 2 on.
    let doc = sb
        .run(&["check", "disk", "--json", "-t", "2", "--pause", "100ms"])
        .json();
    for name in [
        "system.disk.read_time",
        "system.disk.write_time",
        "system.disk.read_time_pct",
        "system.disk.write_time_pct",
    ] {
        assert!(
            doc["metrics"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m["metric"] == name && m["run"] == 2),
            "{name}"
        );
    }
}

/// The binary is an ordinary one: position-independent (its code at a random address on
/// every run), with the system's loader, linked against the system's libc. `.ci/run` checks
/// the release build the README installs the same way (scripts/check-binary.sh).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn the_binary_is_position_independent_and_uses_the_systems_libc() {
    let elf = std::fs::read(env!("CARGO_BIN_EXE_agentprof")).unwrap();
    assert_eq!(&elf[..4], b"\x7fELF");
    assert_eq!(elf[4], 2, "a 64-bit ELF");
    let u16_at = |at: usize| u16::from_le_bytes([elf[at], elf[at + 1]]);
    let u64_at = |at: usize| u64::from_le_bytes(elf[at..at + 8].try_into().unwrap());
    assert_eq!(u16_at(16), 3, "ET_DYN: a position-independent executable");
    let (phoff, phentsize, phnum) = (u64_at(32) as usize, u16_at(54) as usize, u16_at(56));
    let interp = (0..phnum as usize).any(|i| {
        let at = phoff + i * phentsize;
        u32::from_le_bytes(elf[at..at + 4].try_into().unwrap()) == 3
    });
    assert!(interp, "a PT_INTERP header: started by the system's loader");
    let sb = Sandbox::new();
    let r = sb.run_env(&["--version"], &[("LD_TRACE_LOADED_OBJECTS", "1")]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("libc.so.6 => /"), "{}", r.stdout);
}

/// As the Agent: `NAME.d/conf.yaml.default` is the configuration when there is no
/// `conf.yaml`, and `conf.yaml` wins over it.
#[test]
fn conf_yaml_default_is_read_when_there_is_no_conf_yaml() {
    let sb = Sandbox::new();
    sb.write(
        "conf.d/uptime.d/conf.yaml.default",
        "instances:\n  - tags: [from:default]\n",
    );
    let tags = |r: &crate::support::Run| -> String { r.json()["metrics"][0]["tags"].to_string() };
    let r = sb.run(&["check", "uptime", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(tags(&r).contains("from:default"), "{}", tags(&r));
    let r = sb.run(&["list", "--json"]);
    let rows = r.json()["checks"].as_array().unwrap().clone();
    let uptime = rows.iter().find(|c| c["name"] == "uptime").unwrap();
    assert!(uptime.to_string().contains("conf.yaml.default"), "{uptime}");
    sb.write(
        "conf.d/uptime.d/conf.yaml",
        "instances:\n  - tags: [from:conf]\n",
    );
    let r = sb.run(&["check", "uptime", "--json"]);
    assert!(tags(&r).contains("from:conf"), "{}", tags(&r));
}

/// Flags that only a Python check uses are refused on the others, not silently ignored.
#[test]
fn python_only_flags_are_refused_on_other_checks() {
    let sb = Sandbox::new();
    // (`--log-level` applies to every check: tests/cli/agent_flags.rs.)
    for (args, says) in [
        (
            &["check", "uptime", "--profile", "--profile-first-run"][..],
            "--profile-first-run: uptime is not a Python check",
        ),
        (
            &["check", "uptime", "-b", "3"][..],
            "--breakpoint: uptime is not a Python check",
        ),
    ] {
        let r = sb.run(args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{args:?}: {}", r.stderr);
    }
}

/// The Agent loads every `*.yaml` in `conf.d/NAME.d/` (each file's own instances) and
/// `NAME.yaml` beside them; `conf.yaml.default` only when there is no other file, and
/// `auto_conf.yaml` (an Autodiscovery template) not as a configuration. `list` names every
/// file read. (agentprof used to read `conf.yaml` alone and pass the others over in silence.)
#[test]
fn every_yaml_file_in_name_d_is_read_and_list_names_them() {
    let sb = Sandbox::new();
    sb.write(
        "conf.d/uptime.d/conf.yaml",
        "instances:\n  - tags: [from:conf]\n",
    );
    sb.write(
        "conf.d/uptime.d/team-b.yaml",
        "instances:\n  - tags: [from:team_b]\n  - tags: [from:team_b2]\n",
    );
    sb.write(
        "conf.d/uptime.d/conf.yaml.default",
        "instances:\n  - tags: [from:default]\n",
    );
    sb.write(
        "conf.d/uptime.d/auto_conf.yaml",
        "ad_identifiers: [redis]\ninstances:\n  - tags: [from:auto]\n",
    );
    sb.write("conf.d/uptime.d/notes.txt", "not a configuration\n");
    let r = sb.run(&["check", "uptime", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    let mut froms: Vec<String> = doc["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["tags"].as_array().unwrap().clone())
        .filter_map(|t| {
            t.as_str()
                .and_then(|t| t.strip_prefix("from:"))
                .map(str::to_string)
        })
        .collect();
    froms.sort();
    froms.dedup();
    assert_eq!(froms, ["conf", "team_b", "team_b2"], "{}", doc["metrics"]);
    assert_eq!(doc["config"]["type"], "files", "{}", doc["config"]);
    let paths = doc["config"]["path"].to_string();
    assert!(
        paths.contains("conf.yaml") && paths.contains("team-b.yaml"),
        "{paths}"
    );
    assert!(
        !paths.contains("auto_conf") && !paths.contains("default"),
        "{paths}"
    );

    let r = sb.run(&["list", "--json"]);
    let rows = r.json()["checks"].as_array().unwrap().clone();
    let uptime = rows.iter().find(|c| c["name"] == "uptime").unwrap();
    assert_eq!(uptime["instances"], 3, "{uptime}");
    assert!(uptime.to_string().contains("team-b.yaml"), "{uptime}");
    let text = sb.run(&["list"]).stdout;
    assert!(text.contains("team-b.yaml"), "{text}");

    // A file in NAME.d that cannot be read is an error, not passed over.
    sb.write("conf.d/uptime.d/broken.yaml", "instances: [\n");
    let r = sb.run(&["check", "uptime"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("broken.yaml:"), "{}", r.stderr);
}

/// conf.d files are YAML 1.1 as the Agent reads them: `use_mount: yes` is a boolean (it was
/// refused as "invalid type: string"), `min_disk_size: 1_000` a number; a quoted 'yes' is
/// text, and a boolean option given text says what to do.
#[test]
fn builtin_options_read_yaml_1_1_values() {
    let sb = Sandbox::new();
    sb.write(
        "conf.d/disk.yaml",
        "instances:\n  - use_mount: yes\n    all_partitions: off\n    min_disk_size: 0_0\n",
    );
    let r = sb.run(&["check", "disk", "--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let tags = r.json()["metrics"].to_string();
    assert!(
        tags.contains("device:/"),
        "use_mount: yes tags by mount point: {tags}"
    );

    sb.write("conf.d/disk.yaml", "instances:\n  - use_mount: 'yes'\n");
    let r = sb.run(&["check", "disk"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("disk.yaml:2:"), "{}", r.stderr);
    assert!(r.stderr.contains("use_mount"), "{}", r.stderr);
}

/// Memory stays bounded whatever `-t`: what the runs sent goes to a spool (`--json`) or is
/// dropped once a later run of the instance replaces it in the table. Under a 64 MiB data
/// limit (heap and anonymous maps), 2,000 runs of `disk` complete in both modes; before,
/// `--json` kept every run's metrics as values (2.19 GB at 10,000 runs).
#[test]
fn many_runs_fit_a_fixed_memory_limit() {
    use std::os::unix::process::CommandExt;
    let sb = Sandbox::new();
    for json in [true, false] {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_agentprof"));
        cmd.args(["check", "disk", "-t", "2000"])
            .current_dir(sb.path())
            .env("NO_COLOR", "1");
        if json {
            cmd.arg("--json");
        }
        // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                let limit = libc::rlimit {
                    rlim_cur: 64 << 20,
                    rlim_max: 64 << 20,
                };
                if libc::setrlimit(libc::RLIMIT_DATA, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "json {json}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        if json {
            let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            let runs = doc["runs"].as_array().unwrap();
            assert_eq!(runs.len(), 2000);
            assert_eq!(runs[1999]["run"], 2000);
            let metrics = doc["metrics"].as_array().unwrap();
            let count = |run: u64| metrics.iter().filter(|m| m["run"] == run).count();
            // The first run has no rates yet; every later one sends the same series.
            let (first, second, last) = (count(1), count(2), count(2000));
            assert!(first > 0 && second == last, "{first} {second} {last}");
            assert_eq!(metrics.len(), first + second * 1999);
        } else {
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(text.contains("Metrics (run 2000 of 2000)"), "{text}");
            assert!(text.contains("system.disk.total"), "{text}");
        }
    }
}
