//! What a run costs, checked against what a check really did: memory it kept or only touched,
//! CPU it burnt, reads and writes it made, threads, files and sockets it left open.
//!
//! These checks run inside the test process (as built-in checks run inside agentprof), so
//! this is its own test binary with one test doing the cases in turn: nothing else in the
//! process may open files, start threads or do I/O meanwhile.
#![allow(clippy::unwrap_used)]

use std::io::{Read, Write};
use std::time::Duration;

use agentprof::checks::{Check, LoadedCheck, Runner};
use agentprof::config::{AgentConfig, InstanceCommon, LoadOptions};
use agentprof::metrics::Sink;
use agentprof::profile::RunRecord;

const MIB: usize = 1024 * 1024;

/// A check that does `work` once per run.
struct Doing<F: FnMut() + Send>(F);

impl<F: FnMut() + Send> Check for Doing<F> {
    fn run(&mut self, _sink: &mut Sink) -> Result<(), agentprof::checks::Error> {
        (self.0)();
        Ok(())
    }
}

/// Runs `check` twice on one runner: a warm-up run, then the measured one.
fn run_twice(check: impl Check + 'static) -> (RunRecord, RunRecord) {
    let config = AgentConfig::load(&LoadOptions {
        config: None,
        confd: Some(std::env::temp_dir()),
        checks: None,
        python: None,
    })
    .unwrap();
    let loaded = LoadedCheck::in_process(
        "measured",
        vec![(InstanceCommon::default(), Box::new(check) as Box<dyn Check>)],
    );
    let mut runner = Runner::new(loaded, &config, None, None, false);
    let warm = runner.run(0, 1);
    let rec = runner.run(0, 2);
    assert!(rec.error.is_none(), "{:?}", rec.error);
    (warm, rec)
}

/// The measured run, after a warm-up run of the same code.
fn run_once(check: impl Check + 'static) -> RunRecord {
    run_twice(check).1
}

fn thread_cpu_s() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

fn touch(mib: usize) -> Vec<u8> {
    let mut v = vec![0u8; mib * MIB];
    for i in (0..v.len()).step_by(4096) {
        v[i] = 1;
    }
    v
}

#[test]
fn run_figures_match_what_the_check_did() {
    // Open fds: the entries of /proc/self/fd, less the one each listing reads through.
    let listed = std::fs::read_dir("/proc/self/fd").unwrap().count() as u64 - 1;
    let snap = agentprof::procstat::snapshot(agentprof::procstat::Target::SelfProcess);
    // The snapshot's probe holds three fds of its own (the /proc/self directory, io, status).
    assert_eq!(snap.open_fds, Some(listed + 3), "{snap:?}");

    // Memory kept: 8 MiB more after each run.
    let mut kept: Vec<Vec<u8>> = Vec::new();
    let rec = run_once(Doing(move || kept.push(touch(8))));
    let c = &rec.cost;
    let diff = c.rss_diff().unwrap();
    assert!(
        diff >= 8 * MIB as i64 - 256 * 1024 && diff < 10 * MIB as i64,
        "rss diff {diff}"
    );
    assert!(c.vms_diff().unwrap() >= 8 * MIB as i64);
    assert!(c.peak_rss.unwrap() >= c.rss_after.unwrap());

    // Memory only touched: 32 MiB at the peak, given back before the run ends.
    let rec = run_once(Doing(|| drop(std::hint::black_box(touch(32)))));
    let c = &rec.cost;
    let peak_rise = c.peak_rss.unwrap() as i64 - c.rss_before.unwrap() as i64;
    assert!(peak_rise >= 31 * MIB as i64, "peak rose {peak_rise}");
    assert!(
        c.rss_diff().unwrap().abs() < 2 * MIB as i64,
        "rss diff {:?}",
        c.rss_diff()
    );

    // CPU: 80 ms of the run thread's own CPU (not wall time: the machine may be busy).
    let rec = run_once(Doing(|| {
        let start = thread_cpu_s();
        let mut x = 0u64;
        while thread_cpu_s() - start < 0.08 {
            for _ in 0..1000 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(1));
            }
        }
    }));
    let c = &rec.cost;
    let cpu = c.cpu_user_s.unwrap() + c.cpu_system_s.unwrap();
    assert!(
        cpu >= 0.079 && cpu <= c.wall_s + 0.01,
        "cpu {cpu} for wall {}",
        c.wall_s
    );

    // Sleeping: wall time without CPU.
    let rec = run_once(Doing(|| std::thread::sleep(Duration::from_millis(50))));
    let c = &rec.cost;
    assert!(c.wall_s >= 0.05);
    assert!(c.cpu_user_s.unwrap() + c.cpu_system_s.unwrap() < 0.01);

    // I/O: exactly the check's own read and write calls.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let path = dir.path().join("data");
    std::fs::write(&path, vec![7u8; MIB]).unwrap();
    let (wpath, rpath) = (dir.path().join("out"), path.clone());
    let rec = run_once(Doing(move || {
        let mut f = std::fs::File::create(&wpath).unwrap();
        for _ in 0..16 {
            f.write_all(&[1u8; 64 * 1024]).unwrap();
        }
        f.sync_all().unwrap();
        let mut r = std::fs::File::open(&rpath).unwrap();
        let mut buf = vec![0u8; 64 * 1024];
        for _ in 0..16 {
            r.read_exact(&mut buf).unwrap();
        }
    }));
    let io = rec.cost.io.unwrap();
    assert_eq!(io.write_count, 16, "{io:?}");
    assert_eq!(io.read_count, 16, "{io:?}");
    assert!(io.write_bytes >= MIB as u64, "{io:?}");

    // Threads, files and sockets left open by a run: the warm-up run opens nothing, the
    // measured one leaves a thread, a file, a TCP listener and a UDP socket open.
    let mut held: Vec<Box<dyn Send>> = Vec::new();
    let mut first = true;
    let (warm, rec) = run_twice(Doing(move || {
        if std::mem::take(&mut first) {
            return;
        }
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        held.push(Box::new(tx));
        held.push(Box::new(std::thread::spawn(move || {
            let _ = rx.recv();
        })));
        held.push(Box::new(std::fs::File::open("/proc/self/stat").unwrap()));
        held.push(Box::new(
            std::net::TcpListener::bind("127.0.0.1:0").unwrap(),
        ));
        held.push(Box::new(std::net::UdpSocket::bind("127.0.0.1:0").unwrap()));
    }));
    let (w, c) = (&warm.cost, &rec.cost);
    assert_eq!(c.threads.unwrap(), w.threads.unwrap() + 1);
    assert_eq!(c.open_fds.unwrap(), w.open_fds.unwrap() + 3);
    assert_eq!(c.connections.unwrap(), w.connections.unwrap() + 2);
}
