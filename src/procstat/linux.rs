//! Linux snapshots through procfs; CPU of agentprof itself from getrusage for microsecond
//! resolution (a few-millisecond check is below /proc/stat's 10 ms ticks).

use std::collections::HashSet;

use procfs::process::{FDTarget, Process};

use super::{IoCounters, ProcessSnapshot, Target};

fn process(target: Target) -> Option<Process> {
    match target {
        Target::SelfProcess => Process::myself().ok(),
        Target::Pid(pid) => Process::new(pid as i32).ok(),
    }
}

/// Takes every figure it can; each one that fails is left `None`.
pub fn snapshot(target: Target) -> ProcessSnapshot {
    let mut snap = ProcessSnapshot::default();
    let Some(proc) = process(target) else {
        return snap;
    };
    if let Ok(status) = proc.status() {
        snap.rss = status.vmrss.map(|kb| kb * 1024);
        snap.vms = status.vmsize.map(|kb| kb * 1024);
        snap.peak_rss = status.vmhwm.map(|kb| kb * 1024);
        snap.threads = Some(status.threads);
    }
    match target {
        Target::SelfProcess => {
            let (user, system) = self_cpu();
            snap.cpu_user_s = user;
            snap.cpu_system_s = system;
        }
        Target::Pid(_) => {
            if let Ok(stat) = proc.stat() {
                let tps = procfs::ticks_per_second() as f64;
                snap.cpu_user_s = Some(stat.utime as f64 / tps);
                snap.cpu_system_s = Some(stat.stime as f64 / tps);
            }
        }
    }
    snap.io = proc.io().ok().map(|io| IoCounters {
        read_bytes: io.read_bytes,
        write_bytes: io.write_bytes,
        read_count: io.syscr,
        write_count: io.syscw,
    });
    if let Ok(fds) = proc.fd() {
        let mut count = 0u64;
        let mut sockets = HashSet::new();
        for fd in fds.flatten() {
            count += 1;
            if let FDTarget::Socket(inode) = fd.target {
                sockets.insert(inode);
            }
        }
        snap.open_fds = Some(count);
        snap.connections = inet_socket_count(&proc, &sockets);
    }
    snap
}

/// How many of `sockets` (inodes) are TCP or UDP sockets in the process's network namespace.
fn inet_socket_count(proc: &Process, sockets: &HashSet<u64>) -> Option<u64> {
    if sockets.is_empty() {
        return Some(0);
    }
    let mut n = 0u64;
    let mut any = false;
    if let Ok(t) = proc.tcp() {
        any = true;
        n += t.iter().filter(|e| sockets.contains(&e.inode)).count() as u64;
    }
    if let Ok(t) = proc.tcp6() {
        any = true;
        n += t.iter().filter(|e| sockets.contains(&e.inode)).count() as u64;
    }
    if let Ok(t) = proc.udp() {
        any = true;
        n += t.iter().filter(|e| sockets.contains(&e.inode)).count() as u64;
    }
    if let Ok(t) = proc.udp6() {
        any = true;
        n += t.iter().filter(|e| sockets.contains(&e.inode)).count() as u64;
    }
    any.then_some(n)
}

fn self_cpu() -> (Option<f64>, Option<f64>) {
    // SAFETY: getrusage writes into the zeroed struct we own.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) };
    if rc != 0 {
        return (None, None);
    }
    let secs = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    (Some(secs(usage.ru_utime)), Some(secs(usage.ru_stime)))
}

/// Resets the kernel's peak-RSS mark (VmHWM) so the next snapshot's peak is the run's own.
/// Returns false when the kernel refuses (before Linux 4.0, or no permission).
pub fn reset_peak_rss(target: Target) -> bool {
    let path = match target {
        Target::SelfProcess => "/proc/self/clear_refs".to_string(),
        Target::Pid(pid) => format!("/proc/{pid}/clear_refs"),
    };
    std::fs::write(path, b"5").is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn self_snapshot_has_every_figure() {
        let s = snapshot(Target::SelfProcess);
        assert!(s.rss.unwrap() > 0);
        assert!(s.vms.unwrap() >= s.rss.unwrap());
        assert!(s.threads.unwrap() >= 1);
        assert!(s.open_fds.unwrap() >= 3);
        assert!(s.cpu_user_s.is_some());
    }

    #[test]
    fn connections_count_real_sockets() {
        let before = snapshot(Target::SelfProcess).connections.unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        let during = snapshot(Target::SelfProcess).connections.unwrap();
        // Other tests in this binary may open sockets concurrently; ours add at least 4.
        assert!(during >= before + 4, "before {before}, during {during}");
        drop((listener, udp, client, server));
    }

    #[test]
    fn missing_process_is_all_none() {
        let s = snapshot(Target::Pid(u32::MAX / 2));
        assert_eq!(s, ProcessSnapshot::default());
    }
}
