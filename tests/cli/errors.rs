//! Bad input: what is wrong and where, exit 2 for usage and configuration, exit 1 for a run
//! that failed, and nothing already collected is lost.

use crate::support::Sandbox;

#[test]
fn unknown_check_names_the_closest_first() {
    let r = Sandbox::new().run(&["check", "dsk"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .contains("unknown check `dsk`; did you mean `disk`?"),
        "{}",
        r.stderr
    );
    // Known checks in name order, and where they were looked for as absolute paths.
    assert!(
        r.stderr.contains("known checks: cpu, disk, io, load,"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("looked for dsk: configurations in /"),
        "{}",
        r.stderr
    );
    assert!(r.stdout.is_empty());
}

#[test]
fn malformed_yaml_gives_file_line_and_column() {
    let sb = Sandbox::new();
    sb.write(
        "conf.d/disk.yaml",
        "init_config:\ninstances:\n  - use_mount: true\n   tags: [a\n",
    );
    let r = sb.run(&["check", "disk"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("conf.d/disk.yaml:4:"), "{}", r.stderr);
    let sb = Sandbox::new();
    sb.write("agentprof.yaml", "hostname: [\n");
    let r = sb.run(&["check", "disk"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("agentprof.yaml:"), "{}", r.stderr);
}

#[test]
fn wrong_type_names_the_option_and_unknown_options_warn() {
    let sb = Sandbox::new();
    sb.write("conf.d/disk.yaml", "instances:\n  - use_mount: sometimes\n");
    let r = sb.run(&["check", "disk"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("conf.d/disk.yaml:2:") && r.stderr.contains("use_mount"),
        "{}",
        r.stderr
    );

    sb.write("conf.d/disk.yaml", "instances:\n  - use_mout: true\n");
    let r = sb.run(&["check", "disk"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("disk.yaml:2: unknown option `instances[0].use_mout`, ignored (did you mean `use_mount`?)"),
        "{}",
        r.stderr
    );

    sb.write(
        "conf.d/disk.yaml",
        "instances:\n  - mount_point_exclude: ['(']\n",
    );
    let r = sb.run(&["check", "disk"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .contains("instances[0].mount_point_exclude: not a valid regular expression"),
        "{}",
        r.stderr
    );

    sb.write("conf.d/disk.yaml", "instances:\n  - run_timeout: -1\n");
    let r = sb.run(&["check", "disk"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("instances[0].run_timeout"),
        "{}",
        r.stderr
    );

    sb.write("conf.d/disk.yaml", "instances:\n  - tags: ['a,b']\n");
    let r = sb.run(&["check", "disk"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("`a,b` is not a valid tag"),
        "{}",
        r.stderr
    );
}

#[test]
fn bad_flags_name_the_flag() {
    let sb = Sandbox::new();
    for (args, flag) in [
        (&["check", "disk", "--times", "0"][..], "--times"),
        (&["check", "disk", "--pause", "soon"][..], "--pause"),
        (&["check", "disk", "--top", "0"][..], "--top"),
        (
            &["check", "disk", "--pprof", "/no/such/dir/x.pb.gz"][..],
            "--pprof",
        ),
        (
            &["check", "disk", "--config", "/no/such/agentprof.yaml"][..],
            "--config",
        ),
        (&["check", "disk", "--instance", "3"][..], "--instance"),
    ] {
        let r = sb.run(args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(flag), "{args:?}: {}", r.stderr);
    }
}

#[test]
fn a_failing_run_exits_1_and_other_instances_still_print() {
    let sb = Sandbox::new();
    sb.write(
        "conf.d/process.yaml",
        "instances:\n  - name: gone\n    pid_file: /no/such/file.pid\n  - name: all\n    search_string: [All]\n",
    );
    let r = sb.run(&["check", "process", "--json"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let doc = r.json();
    assert_eq!(doc["runs"][0]["status"], "error");
    assert!(
        doc["runs"][0]["error"]
            .as_str()
            .unwrap()
            .contains("/no/such/file.pid")
    );
    assert_eq!(doc["runs"][1]["status"], "ok");
    assert!(
        doc["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["metric"] == "system.processes.number")
    );

    let r = sb.run(&["check", "process"]);
    assert_eq!(r.code, 1);
    assert!(
        r.stdout.contains("instances[0] run 1: error:"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("system.processes.number"), "{}", r.stdout);
}

#[test]
fn process_check_without_config_says_what_is_required() {
    let r = Sandbox::new().run(&["check", "process"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("name: required"), "{}", r.stderr);
}

#[test]
fn directories_from_flags_must_exist_and_broken_plugins_say_why() {
    let sb = Sandbox::new();
    for flag in ["--confd", "--checks"] {
        let r = sb.run(&["check", "disk", flag, "/no/such/dir"]);
        assert_eq!(r.code, 2);
        assert!(
            r.stderr
                .contains(&format!("{flag}: /no/such/dir is not a directory")),
            "{}",
            r.stderr
        );
    }
    // A Python file without an AgentCheck subclass cannot be loaded: a configuration error
    // that says why, and no report of a run that never happened.
    sb.write(
        "checks/mycheck.py",
        "from datadog_checks.base import AgentCheck\n",
    );
    sb.write("conf.d/mycheck.yaml", "instances: [{}]\n");
    let r = sb.run(&["check", "mycheck", "--json"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    assert!(
        r.stderr.contains("mycheck.py: no check class"),
        "{}",
        r.stderr
    );
}

#[test]
fn oversized_and_bomb_configs_are_refused_before_they_cost_memory() {
    let sb = Sandbox::new();
    let big = format!(
        "instances:\n  - tags: [a:b]\n#{}\n",
        "x".repeat(5 * 1024 * 1024)
    );
    sb.write("conf.d/disk.yaml", &big);
    let r = sb.run(&["check", "disk"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("conf.d/disk.yaml: larger than 4 MiB"),
        "{}",
        r.stderr
    );

    // A billion laughs: aliases that expand to 10^12 strings.
    let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..12 {
        let refs = vec![format!("*a{}", i - 1); 10].join(", ");
        bomb.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
    }
    bomb.push_str("instances:\n  - tags: *a11\n");
    sb.write("conf.d/disk.yaml", &bomb);
    let r = sb.run(&["check", "disk"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .contains("conf.d/disk.yaml: repetition limit exceeded"),
        "{}",
        r.stderr
    );

    let r = sb.run(&["check", "disk", "--times", "2000000"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("--times"), "{}", r.stderr);
}

/// A closed stdout (`| head`) ends a command quietly, as Unix tools do: exit 0, nothing on
/// stderr, no panic.
#[test]
fn a_closed_stdout_ends_the_command_quietly() {
    let sb = Sandbox::new();
    let man = sb.file("man");
    let profile = crate::support::fixture("cpu.pprof");
    let cases: Vec<Vec<String>> = vec![
        vec!["man".into(), "--out".into(), man.display().to_string()],
        vec!["top".into(), "--json".into(), profile.display().to_string()],
        vec!["completions".into(), "bash".into()],
    ];
    for args in cases {
        // The reading end is closed before agentprof writes anything: every write fails
        // with EPIPE, as it does once `head` has read its lines and exited.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_agentprof"))
            .args(&args)
            .current_dir(sb.path())
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: {err}");
    }
}

/// Started with its standard descriptors closed (a daemon manager, `>&-`), agentprof fills
/// them with /dev/null, as std's own start does: no socket or file it opens takes their
/// place (where a stray print would land in it), and it runs and exits as usual.
#[test]
fn closed_standard_descriptors_are_filled_with_dev_null() {
    use std::os::unix::process::CommandExt;
    let sb = Sandbox::new();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_agentprof"));
    cmd.args(["receive", "--listen", "127.0.0.1:0", "--duration", "3s"])
        .args(["--out", "out", "--queue", "queue"])
        .current_dir(sb.path());
    // SAFETY: only close(2), async-signal-safe, between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            for fd in 0..3 {
                libc::close(fd);
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    let fd = |n: u32| std::fs::read_link(format!("/proc/{}/fd/{n}", child.id()));
    // Listening: its queue files and socket are open by now.
    let started = std::time::Instant::now();
    while !sb.path().join("queue").exists() && started.elapsed().as_secs() < 10 {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    for n in 0..3 {
        assert_eq!(
            fd(n).unwrap(),
            std::path::PathBuf::from("/dev/null"),
            "fd {n}"
        );
    }
    assert_eq!(child.wait().unwrap().code(), Some(0));
}

/// Numbers past any sensible duration (and below zero) are configuration errors with the
/// file and line, never a panic converting them to a Duration.
#[test]
fn huge_and_negative_durations_in_configuration_are_refused_with_file_and_line() {
    let sb = Sandbox::new();
    for key in ["run_timeout", "min_collection_interval"] {
        for value in ["1e20", "1e300", "18446744073709551615", "-3", "0"] {
            sb.write(
                "conf.d/uptime.yaml",
                &format!("instances:\n  - {key}: {value}\n"),
            );
            for cmd in [&["check", "uptime"][..], &["start", "--duration", "1s"][..]] {
                let r = sb.run(cmd);
                assert_eq!(r.code, 2, "{key}: {value} ({cmd:?}): {}", r.stderr);
                assert!(
                    r.stderr.contains("conf.d/uptime.yaml:2:")
                        && r.stderr.contains(&format!("instances[0].{key}")),
                    "{key}: {value}: {}",
                    r.stderr
                );
                assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
            }
        }
    }
}

/// Every file a user names is read through a bound that holds while reading: /dev/zero and
/// /dev/urandom end with a clear error at the limit instead of reading until memory runs out.
#[test]
fn endless_files_are_refused_at_the_limit_while_reading() {
    let sb = Sandbox::new();
    sb.write("conf.d/uptime.yaml", "instances:\n  - {}\n");
    let cases: &[(&[&str], &str)] = &[
        (
            &["top", "/dev/zero", "--max-size-mb", "1"],
            "/dev/zero: more than the 1048576-byte limit (raise it with --max-size-mb)",
        ),
        (
            &["top", "/dev/urandom", "--max-size-mb", "1"],
            "/dev/urandom: more than the 1048576-byte limit",
        ),
        (
            &["pull", "http://127.0.0.1:1", "--tls-ca", "/dev/zero"],
            "--tls-ca: /dev/zero: more than the 1048576-byte limit",
        ),
        (
            &["gate", "uptime", "--baseline", "/dev/zero", "--times", "3"],
            "/dev/zero: more than the",
        ),
    ];
    for (args, says) in cases {
        let t = std::time::Instant::now();
        let r = sb.run(args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{args:?}: {}", r.stderr);
        assert!(
            t.elapsed() < std::time::Duration::from_secs(10),
            "{args:?}: {:?}",
            t.elapsed()
        );
    }
}

/// A configuration nested tens of thousands of levels deep (under the size cap) is refused
/// before the YAML parser sees it: at once, with the line, not after minutes of parsing.
#[test]
fn deeply_nested_configuration_is_refused_early() {
    let sb = Sandbox::new();
    let flow = format!("instances:\n  - tags: {}\n", "[".repeat(40_000));
    let mut block = String::from("instances:\n  - a:\n");
    for depth in 0..600 {
        block.push_str(&" ".repeat(6 + depth));
        block.push_str("b:\n");
    }
    for (what, text, line) in [("brackets", flow, 2), ("blocks", block, 0)] {
        sb.write("conf.d/uptime.yaml", &text);
        let t = std::time::Instant::now();
        let r = sb.run(&["check", "uptime"]);
        assert!(
            t.elapsed() < std::time::Duration::from_secs(2),
            "{what}: {:?}",
            t.elapsed()
        );
        assert_eq!(r.code, 2, "{what}: {}", r.stderr);
        assert!(
            r.stderr.contains("nested more than 64 levels"),
            "{what}: {}",
            r.stderr
        );
        if line > 0 {
            assert!(
                r.stderr.contains(&format!("uptime.yaml:{line}:")),
                "{}",
                r.stderr
            );
        }
    }
}

/// A conf.d entry that cannot be a configuration file is named with why, never passed over
/// for the default instance: `check` fails (exit 2), `start` says the check was not started.
#[test]
fn unreadable_confd_entries_are_named_not_ignored() {
    use std::os::unix::fs::symlink;
    type Make = Box<dyn Fn(&std::path::Path)>;
    let cases: Vec<(&str, Make, &str)> = vec![
        (
            "dangling",
            Box::new(|p| symlink("/no/such/file", p).unwrap()),
            "symbolic link to nothing",
        ),
        (
            "loop",
            Box::new(|p| symlink(p, p).unwrap()),
            "symbolic link loop",
        ),
        (
            "dir",
            Box::new(|p| std::fs::create_dir(p).unwrap()),
            "is a directory",
        ),
        (
            "zero",
            Box::new(|p| symlink("/dev/zero", p).unwrap()),
            "not a regular file",
        ),
        (
            "fifo",
            Box::new(|p| {
                let c = std::ffi::CString::new(p.to_str().unwrap()).unwrap();
                // SAFETY: mkfifo on a path we own.
                assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
            }),
            "not a regular file",
        ),
    ];
    for (what, make, says) in cases {
        let sb = Sandbox::new();
        make(&sb.file("conf.d/uptime.yaml"));
        let r = sb.run(&["check", "uptime"]);
        assert_eq!(r.code, 2, "{what}: {}", r.stderr);
        assert!(
            r.stderr.contains("conf.d/uptime.yaml") && r.stderr.contains(says),
            "{what}: {}",
            r.stderr
        );
        sb.write(
            "conf.d/load.yaml",
            "instances:\n  - min_collection_interval: 1\n",
        );
        let r = sb.run(&["start", "--duration", "1s"]);
        assert_eq!(r.code, 0, "{what}: {}", r.stderr);
        assert!(
            r.stderr.contains("uptime not started") && r.stderr.contains(says),
            "{what}: {}",
            r.stderr
        );
    }
}

/// A small file that decodes to millions of samples is refused by the memory budget before
/// any of them is allocated (it once took 3.3 GB, or aborted under an address-space limit).
#[test]
fn a_sample_bomb_is_refused_by_the_memory_budget_before_decoding() {
    use std::io::Write;
    let sb = Sandbox::new();
    // 2,000,000 samples of one location: 16 MB of protobuf, a few KiB gzipped.
    let sample = [0x12u8, 0x06, 0x0a, 0x01, 0x01, 0x12, 0x01, 0x01];
    let mut raw = vec![0x0a, 0x04, 0x08, 0x01, 0x10, 0x02];
    for _ in 0..2_000_000 {
        raw.extend_from_slice(&sample);
    }
    for s in ["", "samples", "count"] {
        raw.push(0x32);
        raw.push(s.len() as u8);
        raw.extend_from_slice(s.as_bytes());
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&raw).unwrap();
    let path = sb.write_bytes("bomb.pb.gz", &gz.finish().unwrap());
    let r = sb.run(&["top", path.to_str().unwrap(), "--max-memory-mb", "100"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("over the 100 MiB memory budget (2000000 samples)")
            && r.stderr.contains("--max-memory-mb"),
        "{}",
        r.stderr
    );
}

/// Type errors speak the words of someone writing YAML, with the file and line.
#[test]
fn type_errors_speak_the_users_words() {
    let sb = Sandbox::new();
    for (text, says) in [
        (
            "instances:\n  - run_timeout: soon\n",
            "uptime.yaml:2:18: instances[0].run_timeout: invalid type: string \"soon\", expected a number",
        ),
        (
            "instances:\n  - tags: {a: 1}\n",
            "uptime.yaml:2:11: instances[0].tags: invalid type: a mapping, expected a list",
        ),
    ] {
        sb.write("conf.d/uptime.yaml", text);
        let r = sb.run(&["check", "uptime"]);
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert!(r.stderr.contains(says), "{}", r.stderr);
        assert!(
            !r.stderr.contains("f64") && !r.stderr.contains("sequence"),
            "{}",
            r.stderr
        );
    }
}

/// Refusals say what is wrong in words: a cut zstd or gzip stream, a pstats dump or a TOML
/// file given to `top`, https to a plain-HTTP server.
#[test]
fn refusals_say_what_is_wrong_in_words() {
    let sb = Sandbox::new();
    let raw = std::fs::read(crate::support::fixture("cpu.pprof")).unwrap();
    let zst =
        ruzstd::encoding::compress_to_vec(&raw[..], ruzstd::encoding::CompressionLevel::Fastest);
    let cut = sb.write_bytes("cut.zst", &zst[..zst.len() - 20]);
    let mut pstats = vec![0xfb, 0xa9, 0x03];
    pstats.extend_from_slice(b"\xfa\x08<string>");
    let cases = [
        (cut, "the data ends early (cut?)"),
        (
            sb.write("x.toml", "[inputs.profile]\nurl = \"x\"\n"),
            "a TOML document",
        ),
        (sb.write_bytes("x.pstats", &pstats), "a Python pstats dump"),
    ];
    for (path, says) in cases {
        let r = sb.run(&["top", path.to_str().unwrap()]);
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert!(r.stderr.contains(says), "{}", r.stderr);
        assert!(
            !r.stderr.contains("Error {") && !r.stderr.contains("kind:"),
            "{}",
            r.stderr
        );
    }
    // A plain HTTP server answers a TLS hello as it answers anything it cannot parse.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for mut s in listener.incoming().flatten().take(4) {
            let mut hello = [0u8; 512];
            let _ = s.read(&mut hello);
            let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
        }
    });
    let r = sb.run(&["pull", &format!("https://{addr}"), "--types", "heap"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        format!("{}{}", r.stdout, r.stderr).contains("answered plain HTTP on an https URL"),
        "{}{}",
        r.stdout,
        r.stderr
    );
}

/// Values that pass a type check and would then crash, spin or forge output are refused at
/// load, exit 2, saying where: a host name holding a newline (it goes into every DogStatsD
/// datagram), a rotation count that would stat four billion files, a concurrency no
/// semaphore can hold.
#[test]
fn values_that_would_crash_spin_or_inject_are_refused_at_load() {
    let sb = Sandbox::new();
    let r = sb.run_env(
        &["check", "uptime"],
        &[("DD_HOSTNAME", "evil\nfake.metric:666|g")],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("DD_HOSTNAME") && r.stderr.contains("not a host name"),
        "{}",
        r.stderr
    );
    assert!(!r.stdout.contains("fake.metric"), "{}", r.stdout);
    sb.write("agentprof.yaml", "hostname: \"a|b\"\n");
    let r = sb.run(&["check", "uptime"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("agentprof.yaml") && r.stderr.contains("hostname"),
        "{}",
        r.stderr
    );
    sb.write(
        "agentprof.yaml",
        "log_file: a.log\nlog_file_max_size: 1000\nlog_file_max_rolls: 4294967295\n",
    );
    let t = std::time::Instant::now();
    let r = sb.run(&["start", "--duration", "3s"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("log_file_max_rolls") && r.stderr.contains("outside 0 to 1000"),
        "{}",
        r.stderr
    );
    assert!(
        t.elapsed() < std::time::Duration::from_secs(3),
        "{:?}",
        t.elapsed()
    );
    std::fs::remove_file(sb.file("agentprof.yaml")).unwrap();
    for (init, rule) in [
        ("  kubernetes_max_concurrency: 2305843009213693952\n", ""),
        ("", "    max_concurrency: 2305843009213693952\n"),
    ] {
        sb.write(
            "conf.d/profile.yaml",
            &format!("init_config:\n{init}kubernetes:\n  - port: 6060\n{rule}"),
        );
        let r = sb.run(&[
            "k8s",
            "targets",
            "--confd",
            "conf.d",
            "--node",
            "n",
            "--kubeconfig",
            "none",
        ]);
        assert_eq!(r.code, 2, "{}", r.stderr);
        assert!(
            r.stderr.contains("outside 1 to 1024") && r.stderr.contains("profile.yaml"),
            "{}",
            r.stderr
        );
    }
}
