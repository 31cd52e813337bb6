//! The worker process and its channel: two pipes on fds 3 (agentprof -> worker) and 4
//! (worker -> agentprof), length-prefixed JSON messages and one-byte marks around each run.
//! Every read has a deadline, so a hung worker is found and stopped, never waited on forever.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::Error;
use crate::RunOptions;
use crate::procstat::{Probe, Target};
use crate::profile::RunCost;

/// Largest reply accepted from the worker.
const MAX_REPLY: u32 = 256 * 1024 * 1024;
/// How long the worker may take to answer anything but the run itself.
const REPLY_TIMEOUT: Duration = Duration::from_secs(60);

pub struct Worker {
    child: Child,
    /// What a SIGKILL goes to: the worker's process group (`-pid`), or the worker alone
    /// when it stays in agentprof's group (on the terminal, for pdb).
    kill_target: i32,
    to: File,
    from: File,
    probe: Probe,
}

/// How a run is profiled.
pub enum Sampling {
    Off,
    CProfile,
    /// By a thread in the worker, at this frequency.
    InWorker(u32),
    /// From outside, by this reader, at this frequency.
    Outside(Box<super::sampler::Reader>, u32),
}

/// What an outside sampler gave back: the reader and the run's samples (None: its thread
/// failed).
pub enum Sampled {
    Nothing,
    Outside(Option<Box<(Box<super::sampler::Reader>, super::sampler::Samples)>>),
}

/// A measured run: the worker's reply and the run's cost.
pub struct Measured {
    pub reply: Value,
    pub cost: RunCost,
}

fn pipe() -> Result<(OwnedFd, OwnedFd), Error> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills the two-element array we own.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(Error::WorkerStart {
            what: "cannot create a pipe".into(),
            source: std::io::Error::last_os_error(),
        });
    }
    // SAFETY: both descriptors were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// How the worker is asked to count a run: `null`, `"valgrind"` or `{"perf": [type, config]}`.
fn counting(c: Option<crate::Counting>) -> Value {
    match c {
        None => Value::Null,
        Some(crate::Counting::Valgrind) => "valgrind".into(),
        Some(crate::Counting::Perf { kind, config }) => {
            serde_json::json!({ "perf": [kind, config] })
        }
    }
}

/// `python` (under `wrapper` when one is given) reading the host program from its stdin,
/// with the channel's fds 3 and 4 named, its stdout to agentprof's stderr, in a process group
/// of its own unless `terminal`.
fn host_command(
    python: &str,
    wrapper: &[String],
    stdout_to_stderr: std::os::fd::OwnedFd,
    terminal: bool,
) -> Command {
    let mut cmd = match wrapper.split_first() {
        Some((program, args)) => {
            let mut c = Command::new(program);
            c.args(args).arg(python);
            c
        }
        None => Command::new(python),
    };
    cmd.args(["-u", "-", "3", "4", "agentprof-python-host"])
        .stdin(Stdio::piped())
        .stdout(Stdio::from(stdout_to_stderr))
        .stderr(Stdio::inherit());
    if !terminal {
        cmd.process_group(0);
    }
    cmd
}

impl Worker {
    /// Starts `python` running the host program; with `wrapper` (a program and its
    /// arguments, such as valgrind's), the interpreter runs under it. The worker has a
    /// process group of its own (a Ctrl-C is agentprof's to handle), unless `terminal`: a
    /// worker that talks to the user on the terminal (pdb) stays in agentprof's foreground
    /// group, where reading the terminal does not stop it.
    pub fn spawn(python: &str, wrapper: &[String], terminal: bool) -> Result<Worker, Error> {
        let (child_in, to) = pipe()?;
        let (from, child_out) = pipe()?;
        let stdout_to_stderr =
            std::io::stderr()
                .as_fd()
                .try_clone_to_owned()
                .map_err(|source| Error::WorkerStart {
                    what: "cannot duplicate stderr".into(),
                    source,
                })?;
        let (ci, co) = (child_in.as_raw_fd(), child_out.as_raw_fd());
        // SAFETY: getpid has no preconditions.
        let agentprof = unsafe { libc::getpid() };
        let mut cmd = host_command(python, wrapper, stdout_to_stderr, terminal);
        // SAFETY: only async-signal-safe fcntl/dup2/close calls between fork and exec. The
        // ends are first moved above 10 (either may already be fd 3 or 4), then dup2'd to 3
        // and 4, which clears close-on-exec: exactly fds 3 and 4 reach the worker.
        unsafe {
            cmd.pre_exec(move || {
                // The worker dies with agentprof, however agentprof ends (SIGKILL, a signal
                // with its default action). The signal comes when the thread that started
                // the worker ends: the main thread or a check's thread, each living as long
                // as the worker is used. If agentprof is already gone, do not run at all.
                #[cfg(target_os = "linux")]
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0
                    || libc::getppid() != agentprof
                {
                    return Err(std::io::Error::other("agentprof ended"));
                }
                #[cfg(not(target_os = "linux"))]
                let _ = agentprof;
                let a = libc::fcntl(ci, libc::F_DUPFD, 10);
                let b = libc::fcntl(co, libc::F_DUPFD, 10);
                if a < 0 || b < 0 || libc::dup2(a, 3) < 0 || libc::dup2(b, 4) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                libc::close(a);
                libc::close(b);
                Ok(())
            });
        }
        let child = cmd.spawn().map_err(|source| match source.kind() {
            std::io::ErrorKind::NotFound => Error::PythonNotFound(python.to_string()),
            _ => Error::WorkerStart {
                what: format!("cannot start `{python}`"),
                source,
            },
        })?;
        drop((child_in, child_out));
        let mut child = child;
        // Python reads the program to the end of its stdin, then runs it.
        if let Some(mut stdin) = child.stdin.take()
            && let Err(e) = stdin.write_all(super::HOST.as_bytes())
        {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error::WorkerStart {
                what: format!("cannot hand the host program to `{python}`"),
                source: e,
            });
        }
        let pid = child.id() as i32;
        if !terminal {
            crate::signal::adopt_group(pid);
        }
        let probe = Probe::new(Target::Pid(child.id()));
        Ok(Worker {
            child,
            kill_target: if terminal { pid } else { -pid },
            to: File::from(to),
            from: File::from(from),
            probe,
        })
    }

    fn send(&mut self, msg: &Value) -> Result<(), Error> {
        let body = serde_json::to_vec(msg).map_err(|e| Error::WorkerChannel(e.to_string()))?;
        let mut frame = (body.len() as u32).to_be_bytes().to_vec();
        frame.extend_from_slice(&body);
        self.to
            .write_all(&frame)
            .map_err(|e| Error::WorkerChannel(format!("the Python worker stopped listening: {e}")))
    }

    fn wait_readable(&self, deadline: Instant) -> Result<(), Error> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Error::WorkerTimeout);
            }
            let mut pfd = libc::pollfd {
                fd: self.from.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            let ms = left.as_millis().min(i32::MAX as u128) as i32;
            // SAFETY: one pollfd we own.
            let r = unsafe { libc::poll(&mut pfd, 1, ms.max(1)) };
            if r > 0 {
                return Ok(());
            }
            if r < 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                return Err(Error::WorkerChannel(format!(
                    "poll: {}",
                    std::io::Error::last_os_error()
                )));
            }
        }
    }

    fn read_exact(&mut self, buf: &mut [u8], deadline: Instant) -> Result<(), Error> {
        let mut got = 0;
        while got < buf.len() {
            self.wait_readable(deadline)?;
            match self.from.read(&mut buf[got..]) {
                Ok(0) => return Err(Error::WorkerExited(self.how_it_ended())),
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(Error::WorkerChannel(format!(
                        "reading from the Python worker: {e}"
                    )));
                }
            }
        }
        Ok(())
    }

    /// How the worker ended, once its channel closed: its status or signal (SIGSEGV from a
    /// crashed interpreter, SIGKILL from the OOM killer), waited for at most 1 s.
    fn how_it_ended(&mut self) -> String {
        let until = Instant::now() + Duration::from_secs(1);
        while Instant::now() < until {
            match self.child.try_wait() {
                Ok(Some(status)) => return ended(status),
                Ok(None) => std::thread::sleep(Duration::from_millis(5)),
                Err(_) => break,
            }
        }
        String::new()
    }

    fn recv(&mut self, timeout: Duration) -> Result<Value, Error> {
        let deadline = Instant::now() + timeout;
        let mut len = [0u8; 4];
        self.read_exact(&mut len, deadline)?;
        let n = u32::from_be_bytes(len);
        if n > MAX_REPLY {
            return Err(Error::WorkerChannel(format!(
                "the Python worker sent a {n}-byte reply; the limit is {MAX_REPLY}"
            )));
        }
        let mut body = vec![0u8; n as usize];
        self.read_exact(&mut body, deadline)?;
        serde_json::from_slice(&body)
            .map_err(|e| Error::WorkerChannel(format!("the Python worker sent bad JSON: {e}")))
    }

    pub fn request(&mut self, msg: &Value, timeout: Duration) -> Result<Value, Error> {
        self.send(msg)?;
        self.recv(timeout)
    }

    fn expect_mark(&mut self, mark: u8, deadline: Instant) -> Result<(), Error> {
        let mut b = [0u8; 1];
        self.read_exact(&mut b, deadline)?;
        if b[0] != mark {
            return Err(Error::WorkerChannel(format!(
                "the Python worker is out of step (got {:?})",
                b[0] as char
            )));
        }
        Ok(())
    }

    fn send_mark(&mut self, mark: u8) -> Result<(), Error> {
        self.to
            .write_all(&[mark])
            .map_err(|e| Error::WorkerChannel(format!("the Python worker stopped listening: {e}")))
    }

    /// Runs instance `index`: snapshots at the exact start and end, then the submissions;
    /// profiled as `sampling` says. An outside sampler runs from before the run starts to
    /// after it ended or failed (its samples of the host's own frames are left out), so a
    /// run that timed out keeps the samples it had.
    pub fn run(
        &mut self,
        index: usize,
        opts: RunOptions,
        timeout: Duration,
        sampling: Sampling,
    ) -> (Result<Measured, Error>, Sampled) {
        let (cprofile, in_worker, outside) = match sampling {
            Sampling::Off => (false, None, None),
            Sampling::CProfile => (true, None, None),
            Sampling::InWorker(hz) => (false, Some(hz), None),
            Sampling::Outside(reader, hz) => (false, None, Some((reader, hz))),
        };
        let pid = self.pid();
        let running = outside.map(|(reader, hz)| super::sampler::Running::start(reader, pid, hz));
        let marks = running.as_ref().and_then(|r| r.as_ref().ok());
        let outcome = self.run_marked(index, opts, timeout, cprofile, in_worker, marks);
        let sampled = match running {
            None => Sampled::Nothing,
            Some(Ok(r)) => Sampled::Outside(r.finish().map(Box::new)),
            Some(Err(_)) => Sampled::Outside(None),
        };
        (outcome, sampled)
    }

    fn run_marked(
        &mut self,
        index: usize,
        opts: RunOptions,
        timeout: Duration,
        cprofile: bool,
        sample_hz: Option<u32>,
        sampler: Option<&super::sampler::Running>,
    ) -> Result<Measured, Error> {
        self.send(&serde_json::json!({"op": "run", "instance": index, "profile": cprofile, "sample_hz": sample_hz, "memory": opts.memory, "memory_lines": opts.memory_lines, "log_level": opts.log_level, "count": counting(opts.count)}))?;
        self.expect_mark(b'r', Instant::now() + REPLY_TIMEOUT)?;
        settled(self.child.id());
        let peak_reset = self.probe.reset_peak_rss();
        let before = self.probe.before();
        self.send_mark(b'g')?;
        let started = Instant::now();
        if let Some(s) = sampler {
            s.run_started();
        }
        match self.expect_mark(b'd', started + timeout) {
            Ok(()) => {
                if let Some(s) = sampler {
                    s.run_ended();
                }
            }
            Err(Error::WorkerTimeout) => {
                return Err(Error::RunTimeout {
                    after: crate::duration::human(timeout),
                });
            }
            Err(e) => return Err(e),
        }
        settled(self.child.id());
        let after = self.probe.after();
        self.send_mark(b'c')?;
        let reply = self.recv(REPLY_TIMEOUT)?;
        let cost = super::cost_of(&before, &after, &reply, peak_reset);
        Ok(Measured { reply, cost })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills the worker's process group and reaps it; how it ended, for the error message.
    pub fn stop(mut self) -> String {
        let pid = self.child.id() as i32;
        if let Ok(Some(status)) = self.child.try_wait() {
            crate::signal::release_group(pid);
            return describe(status);
        }
        // SAFETY: signals the process group this worker leads (or the worker alone).
        unsafe { libc::kill(self.kill_target, libc::SIGKILL) };
        crate::signal::release_group(pid);
        match self.child.wait() {
            Ok(status) if status.code().is_some() => describe(status),
            _ => String::new(),
        }
    }
}

/// Waits (at most 20 ms) until the worker sleeps in its read of the next mark. The kernel
/// counts a write in /proc/PID/io when the syscall returns, which can be after agentprof has
/// read the mark it wrote: a snapshot taken at once could miss the worker's own mark write
/// (a run's write count then came out one short, now and then).
fn settled(pid: u32) {
    #[cfg(target_os = "linux")]
    {
        let path = format!("/proc/{pid}/stat");
        let end = Instant::now() + Duration::from_millis(20);
        while Instant::now() < end {
            let Ok(stat) = std::fs::read_to_string(&path) else {
                return;
            };
            let state = stat
                .rfind(')')
                .and_then(|i| stat[i + 1..].trim_start().chars().next());
            if state != Some('R') {
                return;
            }
            std::thread::sleep(Duration::from_micros(50));
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = pid;
}

/// " with status N" or " on signal N (NAME)": how the worker ended, after "exited".
fn ended(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => format!(" with status {c}"),
        (None, Some(s)) => {
            let name = match s {
                libc::SIGSEGV => "SIGSEGV: the interpreter crashed",
                libc::SIGABRT => "SIGABRT: the interpreter aborted",
                libc::SIGBUS => "SIGBUS",
                libc::SIGKILL => "SIGKILL: killed, often by the kernel's out-of-memory killer",
                libc::SIGTERM => "SIGTERM",
                _ => "a signal",
            };
            format!(" on signal {s} ({name})")
        }
        _ => String::new(),
    }
}

/// " (the worker exited …)" as [`ended`] says it, for a message about a stopped worker.
fn describe(status: std::process::ExitStatus) -> String {
    match ended(status) {
        how if how.is_empty() => how,
        how => format!(" (the worker exited{how})"),
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let pid = self.child.id() as i32;
        if let Ok(None) = self.child.try_wait() {
            // SAFETY: as in `stop`.
            unsafe { libc::kill(self.kill_target, libc::SIGKILL) };
            let _ = self.child.wait();
        }
        crate::signal::release_group(pid);
    }
}
