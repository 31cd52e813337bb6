//! Linux snapshots through procfs; CPU of agentprof itself from getrusage for microsecond
//! resolution (a few-millisecond check is below /proc/stat's 10 ms ticks).
//!
//! A snapshot costs tens of microseconds (the fd list; a socket's protocol is asked of the
//! socket itself, so the host's socket tables are never read) and its own reads
//! and allocations must not be billed to the run. So the slow figures are taken first before
//! a run and last after it, and the counters that move with every syscall (CPU, I/O) are read
//! nearest to the run: I/O with a single `pread` on a file opened in advance, whose own read
//! is accounted for exactly.

use std::collections::HashSet;
use std::fs::File;
use std::os::unix::fs::FileExt;

use procfs::FromBufRead;
use procfs::process::{Io, Process};

use super::{IoCounters, ProcessSnapshot, Target};

/// Takes snapshots of one process, before and after runs.
pub struct Probe {
    target: Target,
    proc: Option<Process>,
    io_file: Option<File>,
    status_file: Option<File>,
    /// /proc/PID/fd
    fd_dir: String,
    buf: Vec<u8>,
}

impl Probe {
    pub fn new(target: Target) -> Probe {
        let (proc, dir) = match target {
            Target::SelfProcess => (Process::myself().ok(), "/proc/self".to_string()),
            Target::Pid(pid) => (Process::new(pid as i32).ok(), format!("/proc/{pid}")),
        };
        Probe {
            target,
            proc,
            io_file: File::open(format!("{dir}/io")).ok(),
            status_file: File::open(format!("{dir}/status")).ok(),
            fd_dir: format!("{dir}/fd"),
            // /proc/PID/status is 1.5 KB; its memory lines and Threads come in its first 1.2.
            buf: vec![0; 4096],
        }
    }

    /// Figures right before a run: slow ones first, syscall counters last.
    pub fn before(&mut self) -> ProcessSnapshot {
        let mut snap = ProcessSnapshot::default();
        self.fds_and_sockets(&mut snap);
        self.status(&mut snap);
        snap.io = self.io().map(|mut io| {
            // The pread that sampled these counters is counted once it returns: bill it here,
            // not to the run.
            if self.target == Target::SelfProcess {
                io.read_count += 1;
            }
            io
        });
        self.cpu(&mut snap);
        snap
    }

    /// Figures right after a run: syscall counters first, slow ones last.
    pub fn after(&mut self) -> ProcessSnapshot {
        let mut snap = ProcessSnapshot::default();
        self.cpu(&mut snap);
        snap.io = self.io();
        self.status(&mut snap);
        self.fds_and_sockets(&mut snap);
        snap
    }

    /// Resets the kernel's peak-RSS mark (VmHWM) so the next snapshot's peak is the run's own.
    /// Returns false when the kernel refuses (before Linux 4.0, or no permission).
    pub fn reset_peak_rss(&self) -> bool {
        let path = match self.target {
            Target::SelfProcess => "/proc/self/clear_refs".to_string(),
            Target::Pid(pid) => format!("/proc/{pid}/clear_refs"),
        };
        std::fs::write(path, b"5").is_ok()
    }

    /// Memory and threads from /proc/PID/status, read with one pread of the file opened in
    /// advance (procfs would open it and parse its fifty-odd fields at every snapshot).
    fn status(&mut self, snap: &mut ProcessSnapshot) {
        let Some(file) = self.status_file.as_ref() else {
            return;
        };
        if let Ok(n) = file.read_at(&mut self.buf, 0) {
            status_fields(&self.buf[..n], snap);
        }
    }

    fn io(&mut self) -> Option<IoCounters> {
        let file = self.io_file.as_ref()?;
        let n = file.read_at(&mut self.buf, 0).ok()?;
        let io = Io::from_buf_read(&self.buf[..n]).ok()?;
        Some(IoCounters {
            read_bytes: io.read_bytes,
            write_bytes: io.write_bytes,
            read_count: io.syscr,
            write_count: io.syscw,
        })
    }

    fn cpu(&self, snap: &mut ProcessSnapshot) {
        let (user, system) = match self.target {
            Target::SelfProcess => self_cpu(),
            Target::Pid(_) => match self.proc.as_ref().and_then(|p| p.stat().ok()) {
                Some(stat) => {
                    let tps = procfs::ticks_per_second() as f64;
                    (Some(stat.utime as f64 / tps), Some(stat.stime as f64 / tps))
                }
                None => (None, None),
            },
        };
        snap.cpu_user_s = user;
        snap.cpu_system_s = system;
        if self.target == Target::SelfProcess {
            snap.cpu_total_s = self_cpu_clock();
        }
    }

    /// Open fds and, of their sockets, the TCP and UDP ones.
    fn fds_and_sockets(&self, snap: &mut ProcessSnapshot) {
        let Some(proc) = &self.proc else { return };
        let listed = match self.target {
            Target::SelfProcess => self.own_fds(),
            Target::Pid(_) => self.fds_by_link(),
        };
        let Some(fds) = listed else {
            return;
        };
        snap.open_fds = Some(fds.count);
        snap.connections = if fds.unnamed.is_empty() {
            Some(fds.inet)
        } else {
            // A kernel that does not name its sockets: those are looked up in the tables.
            inet_socket_count(proc, &fds.unnamed).map(|n| n + fds.inet)
        };
    }

    /// Another process's fds: one `readlink` per entry of /proc/PID/fd (procfs's listing
    /// takes four syscalls per fd); a socket's link is `socket:[inode]`, and its protocol
    /// is asked through the same path.
    fn fds_by_link(&self) -> Option<Fds> {
        let entries = std::fs::read_dir(&self.fd_dir).ok()?;
        let mut fds = Fds::default();
        let mut path = self.fd_dir.clone();
        path.push('/');
        let base = path.len();
        for entry in entries.flatten() {
            path.truncate(base);
            path.push_str(&entry.file_name().to_string_lossy());
            // An fd closed since the listing was read is not counted.
            let Ok(link) = std::fs::read_link(&path) else {
                continue;
            };
            fds.count += 1;
            if let Some(inode) = socket_inode(link.as_os_str().as_encoded_bytes()) {
                path.push('\0');
                let name = SocketName::of_path(path.as_bytes());
                path.pop();
                fds.add_socket(name, inode);
            }
        }
        Some(fds)
    }

    /// agentprof's own fds: the listing is read through a directory fd whose number is known,
    /// so it is not counted, and each fd is asked with `fstat` on the fd itself (a socket's
    /// inode is its `st_ino`), where a `readlink` walks /proc/self/fd/N to print its target.
    fn own_fds(&self) -> Option<Fds> {
        use rustix::fs::{Dir, Mode, OFlags};
        use std::os::fd::AsRawFd;
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let listing = rustix::fs::open(self.fd_dir.as_str(), flags, Mode::empty()).ok()?;
        let own = listing.as_raw_fd();
        let mut dir = Dir::new(listing).ok()?;
        let mut fds = Fds::default();
        while let Some(entry) = dir.read() {
            let Ok(entry) = entry else { break };
            let name = entry.file_name().to_bytes();
            let Some(fd) = std::str::from_utf8(name).ok().and_then(|n| n.parse().ok()) else {
                continue; // "." and ".."
            };
            if fd == own {
                continue;
            }
            // SAFETY: fstat writes into the stat buffer we own; an fd closed since the listing
            // was read fails (EBADF) and is not counted.
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            if unsafe { libc::fstat(fd, &mut st) } != 0 {
                continue;
            }
            fds.count += 1;
            if st.st_mode & libc::S_IFMT == libc::S_IFSOCK {
                fds.add_socket(SocketName::of_fd(fd), st.st_ino);
            }
        }
        Some(fds)
    }
}

/// A process's open fds, and how many of its sockets are TCP or UDP.
#[derive(Debug, Default)]
struct Fds {
    count: u64,
    inet: u64,
    /// Sockets whose protocol the kernel did not name (their inodes).
    unnamed: HashSet<u64>,
}

impl Fds {
    fn add_socket(&mut self, name: SocketName, inode: u64) {
        match name {
            SocketName::Inet => self.inet += 1,
            SocketName::Other => {}
            SocketName::Unknown => {
                self.unnamed.insert(inode);
            }
        }
    }
}

/// A socket's protocol as the kernel names it in the `system.sockprotoname` attribute of
/// the socket itself ("TCP", "UDPv6", "UNIX-STREAM", "NETLINK"…): one syscall per socket,
/// where matching inodes against /proc/net/{tcp,udp}{,6} reads every socket of the host (on
/// a host with 10,000 sockets, a megabyte of text before and after every run).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SocketName {
    Inet,
    Other,
    /// The attribute could not be read (a kernel without it).
    Unknown,
}

const SOCKPROTONAME: &[u8] = b"system.sockprotoname\0";

impl SocketName {
    fn of_fd(fd: i32) -> SocketName {
        let mut buf = [0u8; 32];
        // SAFETY: the name is NUL-terminated and fgetxattr writes at most buf.len() bytes.
        let n = unsafe {
            libc::fgetxattr(
                fd,
                SOCKPROTONAME.as_ptr().cast(),
                buf.as_mut_ptr().cast(),
                buf.len(),
            )
        };
        Self::from_reply(n, &buf)
    }

    /// `path` ends with its NUL.
    fn of_path(path: &[u8]) -> SocketName {
        debug_assert_eq!(path.last(), Some(&0));
        let mut buf = [0u8; 32];
        // SAFETY: both strings are NUL-terminated and getxattr writes at most buf.len() bytes.
        let n = unsafe {
            libc::getxattr(
                path.as_ptr().cast(),
                SOCKPROTONAME.as_ptr().cast(),
                buf.as_mut_ptr().cast(),
                buf.len(),
            )
        };
        Self::from_reply(n, &buf)
    }

    fn from_reply(n: isize, buf: &[u8]) -> SocketName {
        let Ok(n) = usize::try_from(n) else {
            return SocketName::Unknown;
        };
        let name = &buf[..n.min(buf.len())];
        if name.starts_with(b"TCP") || name.starts_with(b"UDP") || name.starts_with(b"MPTCP") {
            SocketName::Inet
        } else {
            SocketName::Other
        }
    }
}

/// The inode of a `socket:[12345]` fd link.
fn socket_inode(link: &[u8]) -> Option<u64> {
    let digits = link.strip_prefix(b"socket:[")?.strip_suffix(b"]")?;
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// All figures at once, for a process that is not being timed.
pub fn snapshot(target: Target) -> ProcessSnapshot {
    Probe::new(target).after()
}

/// agentprof's resident memory now, bytes: /proc/self/status alone, for a figure taken
/// around work that is not a check's run (no fd or socket tables read).
pub fn self_rss() -> Option<u64> {
    let text = std::fs::read("/proc/self/status").ok()?;
    let mut snap = ProcessSnapshot::default();
    status_fields(&text, &mut snap);
    snap.rss
}

/// How many of `sockets` (inodes) are TCP or UDP sockets in the process's network namespace.
fn inet_socket_count(proc: &Process, sockets: &HashSet<u64>) -> Option<u64> {
    if sockets.is_empty() {
        return Some(0);
    }
    let inodes = |t: &[u64]| t.iter().filter(|i| sockets.contains(i)).count() as u64;
    let tables = [
        proc.tcp()
            .map(|t| t.iter().map(|e| e.inode).collect::<Vec<_>>()),
        proc.tcp6().map(|t| t.iter().map(|e| e.inode).collect()),
        proc.udp().map(|t| t.iter().map(|e| e.inode).collect()),
        proc.udp6().map(|t| t.iter().map(|e| e.inode).collect()),
    ];
    let readable: Vec<Vec<u64>> = tables.into_iter().flatten().collect();
    // No table readable (no /proc/net): the count is unknown, not zero.
    (!readable.is_empty()).then(|| readable.iter().map(|t| inodes(t)).sum())
}

/// agentprof's CPU clock: exact, where rusage's user/system split is tick-sampled.
fn self_cpu_clock() -> Option<f64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9)
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

/// VmRSS, VmSize, VmHWM (kB, as bytes) and Threads of a /proc/PID/status text.
fn status_fields(text: &[u8], snap: &mut ProcessSnapshot) {
    for line in text.split(|&b| b == b'\n') {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        let value = || {
            let v = std::str::from_utf8(&line[colon + 1..]).ok()?.trim();
            v.strip_suffix(" kB")
                .unwrap_or(v)
                .trim()
                .parse::<u64>()
                .ok()
        };
        match &line[..colon] {
            b"VmRSS" => snap.rss = value().map(|kb| kb * 1024),
            b"VmSize" => snap.vms = value().map(|kb| kb * 1024),
            b"VmHWM" => snap.peak_rss = value().map(|kb| kb * 1024),
            b"Threads" => snap.threads = value(),
            _ => {}
        }
    }
}

/// Has every allocation of 64 KiB or more mapped on its own, so that it goes back to the
/// system when freed (glibc otherwise raises that threshold after the first large free, up
/// to 32 MiB, and keeps freed buffers resident): for the servers, whose large buffers —
/// an upload's body as it grows, the network's read buffers, a decompressed profile — come
/// and go with their requests, so their resident memory follows what the requests hold.
/// Nothing where the C library is not glibc.
pub fn return_large_frees() {
    #[cfg(target_env = "gnu")]
    // SAFETY: mallopt only sets one of the allocator's parameters; called before the
    // server's threads start.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 64 << 10);
    }
}

/// Gives the memory the allocator holds free back to the system (glibc's `malloc_trim`;
/// nothing where the C library has none): for a server that dropped its caches.
pub fn give_back_free_memory() {
    #[cfg(target_env = "gnu")]
    // SAFETY: malloc_trim takes no pointer and only walks the allocator's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_links_give_their_inode() {
        assert_eq!(socket_inode(b"socket:[15620]"), Some(15620));
        assert_eq!(socket_inode(b"pipe:[15620]"), None);
        assert_eq!(socket_inode(b"socket:[]"), None);
        assert_eq!(socket_inode(b"socket:[12"), None);
        assert_eq!(socket_inode(b"/dev/null"), None);
    }

    #[test]
    fn status_lines_are_read_as_procfs_reads_them() {
        let text = b"Name:\tagentprof\nVmPeak:\t   12000 kB\nVmSize:\t   11904 kB\nVmHWM:\t    4096 kB\nVmRSS:\t    3868 kB\nThreads:\t2\nSigQ:\t0/127\n";
        let mut s = ProcessSnapshot::default();
        status_fields(text, &mut s);
        assert_eq!(s.vms, Some(11904 * 1024));
        assert_eq!(s.peak_rss, Some(4096 * 1024));
        assert_eq!(s.rss, Some(3868 * 1024));
        assert_eq!(s.threads, Some(2));
        // This process's own file (other tests' threads move its figures meanwhile, so only
        // that each figure is found where procfs finds it).
        let mut live = ProcessSnapshot::default();
        Probe::new(Target::SelfProcess).status(&mut live);
        let p = Process::myself().unwrap().status().unwrap();
        assert_eq!(live.vms.map(|b| b / 1024 > 0), Some(true));
        assert_eq!(
            live.rss.is_some() && live.peak_rss.is_some(),
            p.vmrss.is_some()
        );
        assert!(live.threads.unwrap() >= 1 && p.threads >= 1);
    }

    #[test]
    fn self_snapshot_has_every_figure() {
        let s = snapshot(Target::SelfProcess);
        assert!(s.rss.unwrap() > 0);
        assert!(s.vms.unwrap() >= s.rss.unwrap());
        assert!(s.threads.unwrap() >= 1);
        assert!(s.open_fds.unwrap() >= 3);
        assert!(s.cpu_user_s.is_some());
        assert!(s.io.is_some());
    }

    #[test]
    fn nothing_between_snapshots_costs_no_io() {
        let mut p = Probe::new(Target::SelfProcess);
        let before = p.before();
        let after = p.after();
        // Other tests run threads of this process meanwhile; this one did no I/O itself, so
        // only those can show. Retry a few times to find a quiet moment.
        let quiet = (0..20).any(|_| {
            let b = p.before();
            let a = p.after();
            a.io.unwrap().since(&b.io.unwrap()).read_count == 0
        });
        assert!(quiet, "{before:?} {after:?}");
    }

    #[test]
    fn a_read_between_snapshots_is_counted_once() {
        let mut p = Probe::new(Target::SelfProcess);
        let f = File::open("/proc/self/stat").unwrap();
        let mut buf = [0u8; 64];
        let exact = (0..20).any(|_| {
            let b = p.before();
            let _ = f.read_at(&mut buf, 0);
            let a = p.after();
            a.io.unwrap().since(&b.io.unwrap()).read_count == 1
        });
        assert!(exact);
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
    fn own_fds_are_asked_on_the_fd_and_agree_with_their_links() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let probe = Probe::new(Target::SelfProcess);
        let own = probe.own_fds().unwrap();
        let linked = probe.fds_by_link().unwrap();
        // Other tests in this binary open and close fds meanwhile: both listings see this
        // one's, the probe's three and the standard three.
        assert!(own.count >= 7 && linked.count >= 7, "{own:?} {linked:?}");
        assert!(own.inet >= 1 && linked.inet >= 1, "{own:?} {linked:?}");
        assert!(own.unnamed.is_empty() && linked.unnamed.is_empty());
        drop(listener);
    }

    #[test]
    fn a_sockets_protocol_is_named_by_the_socket_itself() {
        use std::os::fd::AsRawFd;
        let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let udp6 = std::net::UdpSocket::bind("[::1]:0");
        let (unix, _peer) = std::os::unix::net::UnixStream::pair().unwrap();
        let path = |fd: i32| format!("/proc/self/fd/{fd}\0");
        let fd = tcp.as_raw_fd();
        assert_eq!(SocketName::of_fd(fd), SocketName::Inet);
        assert_eq!(SocketName::of_path(path(fd).as_bytes()), SocketName::Inet);
        if let Ok(u) = &udp6 {
            assert_eq!(SocketName::of_fd(u.as_raw_fd()), SocketName::Inet);
        }
        assert_eq!(SocketName::of_fd(unix.as_raw_fd()), SocketName::Other);
        assert_eq!(
            SocketName::of_path(path(unix.as_raw_fd()).as_bytes()),
            SocketName::Other
        );
        // A file has no such attribute: unknown, so it would be looked up in the tables.
        let f = File::open("/proc/self/stat").unwrap();
        assert_eq!(SocketName::of_fd(f.as_raw_fd()), SocketName::Unknown);
    }

    /// A snapshot reads nothing that grows with the host's sockets: with another process
    /// holding 3,000 TCP sockets, agentprof's own snapshot still reads only its status and
    /// io files (it used to read /proc/net/tcp{,6} and udp{,6} whole: 150 bytes a socket,
    /// before and after every run).
    #[test]
    fn a_snapshot_reads_nothing_that_grows_with_the_hosts_sockets() {
        use std::io::{BufRead, BufReader};
        let mut holder = std::process::Command::new("python3")
            .args([
                "-c",
                "import resource, socket, sys\n\
                 soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n\
                 resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))\n\
                 socks = []\n\
                 for _ in range(3000):\n\
                 \x20   s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(1); socks.append(s)\n\
                 print('ready', flush=True)\n\
                 sys.stdin.read()\n",
            ])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3 (the test needs it to hold sockets)");
        let mut line = String::new();
        BufReader::new(holder.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "ready");
        let _tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let me = Process::myself().unwrap();
        // Other tests' threads read meanwhile: the least of twenty tries is this one's.
        let least = (0..20)
            .map(|_| {
                let before = me.io().unwrap().rchar;
                let s = snapshot(Target::SelfProcess);
                assert!(s.connections.unwrap() >= 1);
                me.io().unwrap().rchar - before
            })
            .min()
            .unwrap();
        let _ = holder.kill();
        let _ = holder.wait();
        eprintln!("measured: a snapshot with 3,000 sockets on the host read {least} bytes");
        // Reading /proc/self/io itself is in the figure (about 200 bytes); status is 1.5 KB.
        assert!(least < 16 * 1024, "a snapshot read {least} bytes");
    }

    #[test]
    fn missing_process_is_all_none() {
        let s = snapshot(Target::Pid(u32::MAX / 2));
        assert_eq!(s, ProcessSnapshot::default());
    }
}
