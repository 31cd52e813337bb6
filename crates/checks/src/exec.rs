//! Exec plugins: any executable that prints DogStatsD datagrams on stdout. The instance's
//! configuration arrives as JSON on stdin (and `command:` as arguments); a non-zero exit fails
//! the run with the tail of stderr; the per-instance timeout kills the whole process group.
//!
//! The cost is the plugin's own, measured on the child: CPU from its rusage (children it
//! waited for included), I/O from /proc read after it exits but before it is reaped. Memory,
//! threads, fds and sockets are read at two ptrace stops, right after its exec and at its
//! exit (`exec_trace`), so they are exact. Where ptrace is refused they are sampled every
//! 5 ms instead, and peak RSS is the sampled VmHWM unless rusage's figure (max of the parent's
//! mark at spawn and the child's) is above agentprof's own mark.
//!
//! The run ends when the plugin exits: its descendants at its exit stop (setsid escapees
//! included) and its process group are killed, so nothing it started outlives the run or
//! holds its output open.

use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::Deserialize;

#[cfg(target_os = "linux")]
use super::exec_trace::TraceEvent;
#[cfg(not(target_os = "linux"))]
use super::exec_trace_none::TraceEvent;
use crate::Error;
use crate::metrics::{Sink, dogstatsd};
use crate::procstat::{Probe, ProcessSnapshot, Target};
use crate::profile::{PeakScope, RunCost};

use super::{ExternalCheck, ExternalRun, RunOptions};

/// stdout kept per run; more is cut with a warning.
const MAX_STDOUT: u64 = 16 * 1024 * 1024;
/// Tail of stderr kept for the error message.
const STDERR_TAIL: usize = 4096;
/// Tail of stderr kept as the plugin's log records (`check -l`).
const STDERR_LOG: usize = 64 * 1024;
/// How often a running plugin's figures are sampled.
const SAMPLE_EVERY: Duration = Duration::from_millis(5);

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ExecInstance {
    /// Arguments passed to the plugin.
    command: Vec<String>,
}

pub struct ExecCheck {
    program: PathBuf,
    args: Vec<String>,
    /// `{"init_config": …, "instance": …}`, written to stdin.
    stdin: Vec<u8>,
}

impl ExecCheck {
    pub fn new(
        program: &Path,
        init_config: &serde_yaml_ng::Value,
        instance: &serde_yaml_ng::Value,
        opts: ExecInstance,
    ) -> ExecCheck {
        let doc = serde_json::json!({ "init_config": init_config, "instance": instance });
        ExecCheck {
            program: program.to_path_buf(),
            args: opts.command,
            stdin: serde_json::to_vec(&doc).unwrap_or_default(),
        }
    }
}

/// What a reader thread has read so far, readable while it is still blocked: a plugin that
/// exits while a child it started holds the pipe open must not hold the run.
#[derive(Default)]
struct Collected {
    bytes: Vec<u8>,
    total: u64,
}

#[derive(Clone, Copy)]
enum Keep {
    /// The first N bytes (stdout, parsed).
    Head(usize),
    /// The last N bytes (stderr, for the error message).
    Tail(usize),
}

fn spawn_reader(
    pipe: Option<impl Read + Send + 'static>,
    keep: Keep,
) -> (
    std::sync::Arc<std::sync::Mutex<Collected>>,
    std::thread::JoinHandle<()>,
) {
    let shared = std::sync::Arc::new(std::sync::Mutex::new(Collected::default()));
    let out = std::sync::Arc::clone(&shared);
    let handle = std::thread::spawn(move || {
        let Some(mut r) = pipe else { return };
        let mut buf = [0u8; 8192];
        loop {
            let n = match r.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => return,
            };
            let mut c = crate::sync::lock(&out);
            c.total += n as u64;
            match keep {
                Keep::Head(max) => {
                    let room = max.saturating_sub(c.bytes.len());
                    c.bytes.extend_from_slice(&buf[..n.min(room)]);
                }
                Keep::Tail(max) => {
                    c.bytes.extend_from_slice(&buf[..n]);
                    if c.bytes.len() > 2 * max {
                        let cut = c.bytes.len() - max;
                        c.bytes.drain(..cut);
                    }
                }
            }
        }
    });
    (shared, handle)
}

/// Once the plugin has exited, the run is over: processes it left behind (in its process
/// group, or escaped from it with `setsid`, found at its exit stop) are killed, and its
/// output is taken as far as it came. The message says what was done.
fn end_of_output(
    pid: i32,
    readers: &[&std::thread::JoinHandle<()>],
    left_behind: &[(i32, u64)],
) -> Option<String> {
    let done = |within: Duration| {
        let t = Instant::now();
        while !readers.iter().all(|h| h.is_finished()) {
            if t.elapsed() >= within {
                return false;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        true
    };
    #[cfg(target_os = "linux")]
    let alive: Vec<i32> = left_behind
        .iter()
        .filter(|(p, started)| super::exec_trace::start_time(*p) == Some(*started))
        .map(|(p, _)| *p)
        .collect();
    #[cfg(not(target_os = "linux"))]
    let alive: Vec<i32> = left_behind.iter().map(|(p, _)| *p).collect();
    if alive.is_empty() && done(Duration::from_millis(100)) {
        return None;
    }
    // SAFETY: signals the process group the plugin led (it has exited, its children remain)
    // and the processes that were its descendants at its exit, checked by start time.
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
        for p in &alive {
            libc::kill(*p, libc::SIGKILL);
        }
    }
    let held = !done(Duration::from_millis(500));
    let mut msg = if alive.is_empty() {
        "the plugin exited leaving processes in its process group that held its output open; they were killed".to_string()
    } else {
        format!(
            "the plugin exited leaving {} process(es) running (in its process group or escaped from it with setsid); they were killed",
            alive.len()
        )
    };
    if held {
        msg.push_str("; a process agentprof could not find still holds its output open, and the run ended without it");
    }
    Some(msg)
}

fn taken(c: &std::sync::Arc<std::sync::Mutex<Collected>>) -> (Vec<u8>, u64) {
    let mut c = crate::sync::lock(c);
    (std::mem::take(&mut c.bytes), c.total)
}

/// Waits for `pid` to exit without reaping it, so /proc still has its final I/O counters.
fn wait_exit_keep_zombie(pid: i32) {
    // SAFETY: waitid writes into the zeroed siginfo we own.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        while libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOWAIT,
        ) != 0
        {
            if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                break;
            }
        }
    }
}

/// Reaps `pid`; its exit status and resource usage.
fn reap(pid: i32) -> Option<(i32, libc::rusage)> {
    // SAFETY: wait4 writes into the status and rusage we own.
    unsafe {
        let mut status = 0;
        let mut usage: libc::rusage = std::mem::zeroed();
        loop {
            let r = libc::wait4(pid, &mut status, 0, &mut usage);
            if r == pid {
                return Some((status, usage));
            }
            if r < 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return None;
        }
    }
}

fn describe_status(status: i32) -> Option<String> {
    if libc::WIFEXITED(status) {
        match libc::WEXITSTATUS(status) {
            0 => None,
            code => Some(format!("exited with status {code}")),
        }
    } else if libc::WIFSIGNALED(status) {
        Some(format!("killed by signal {}", libc::WTERMSIG(status)))
    } else {
        Some(format!("ended with wait status {status}"))
    }
}

fn self_peak_rss() -> u64 {
    Probe::new(Target::SelfProcess)
        .after()
        .peak_rss
        .unwrap_or(u64::MAX)
}

/// A started plugin: its process and the channel its lifecycle arrives on.
struct Started {
    child: Child,
    events: mpsc::Receiver<TraceEvent>,
    /// True when the figures come from ptrace stops at exec and exit (else: samples).
    traced: bool,
}

impl ExecCheck {
    fn command(&self) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.args(&self.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        cmd
    }

    /// Starts the plugin under ptrace for exact figures; where the kernel refuses tracing,
    /// untraced, with a thread that says when it exited.
    fn start(&self) -> std::io::Result<Started> {
        #[cfg(target_os = "linux")]
        {
            let events = super::exec_trace::spawn(self.command());
            match events.recv() {
                Ok(TraceEvent::Spawned(Ok(child))) => {
                    return Ok(Started {
                        child,
                        events,
                        traced: true,
                    });
                }
                // EPERM from PTRACE_TRACEME: tracing is not allowed here; run untraced.
                Ok(TraceEvent::Spawned(Err(e))) if e.raw_os_error() == Some(libc::EPERM) => {}
                Ok(TraceEvent::Spawned(Err(e))) => return Err(e),
                _ => return Err(std::io::Error::other("the tracer thread failed")),
            }
        }
        let child = self.command().spawn()?;
        let pid = child.id() as i32;
        let (tx, events) = mpsc::channel();
        std::thread::spawn(move || {
            wait_exit_keep_zombie(pid);
            let _ = tx.send(TraceEvent::Ended(Instant::now()));
        });
        Ok(Started {
            child,
            events,
            traced: false,
        })
    }
}

impl ExternalCheck for ExecCheck {
    fn invocation(&self) -> Option<super::Invocation> {
        Some(super::Invocation {
            program: self.program.clone(),
            args: self.args.clone(),
            stdin: self.stdin.clone(),
        })
    }

    fn run(&mut self, sink: &mut Sink, timeout: Duration, _opts: RunOptions) -> ExternalRun {
        let started_at = crate::duration::unix_now();
        let t0 = Instant::now();
        let Started {
            mut child,
            events,
            traced,
        } = match self.start() {
            Ok(s) => s,
            Err(e) => {
                return ExternalRun {
                    result: Err(Error::Run(format!(
                        "cannot start {}: {e}",
                        self.program.display()
                    ))),
                    started_at,
                    cost: RunCost::default(),
                    memory: None,
                };
            }
        };
        let pid = child.id() as i32;
        let mut probe = Probe::new(Target::Pid(child.id()));

        let stdin = child.stdin.take();
        let input = self.stdin.clone();
        let writer = std::thread::spawn(move || {
            if let Some(mut s) = stdin {
                // A plugin that does not read its stdin closes it: that is fine.
                let _ = s.write_all(&input);
            }
        });
        let (out_buf, out_reader) =
            spawn_reader(child.stdout.take(), Keep::Head(MAX_STDOUT as usize));
        let (err_buf, err_reader) = spawn_reader(child.stderr.take(), Keep::Tail(STDERR_LOG));

        let Watched {
            first,
            last,
            left_behind,
            timed_out,
            ended,
        } = watch(&events, &mut probe, traced, t0, timeout, pid);
        let wall_s = ended.duration_since(t0).as_secs_f64();
        // Zombie: final I/O counters, including the children it reaped.
        let final_io = probe.after().io;
        let reaped = reap(pid);
        // agentprof's own high-water mark now is at least what the child inherited at spawn.
        let own_peak = self_peak_rss();
        let lingering = end_of_output(pid, &[&out_reader, &err_reader], &left_behind);
        if writer.is_finished() {
            let _ = writer.join();
        }
        if let Some(w) = lingering {
            sink.warning(w);
        }
        let tail = read_output(&out_buf, &err_buf, sink);

        let (first, last) = (first.unwrap_or_default(), last.unwrap_or_default());
        let mut cost = if traced {
            traced_cost(&first, &last, wall_s, reaped.map(|r| r.1))
        } else {
            cost_of(&first, &last, wall_s, own_peak, reaped.map(|r| r.1))
        };
        cost.io = match (first.io, final_io) {
            (Some(a), Some(b)) => Some(b.since(&a)),
            _ => None,
        };
        let result = self.outcome(timed_out, timeout, reaped.map(|r| r.0), &tail);
        ExternalRun {
            result,
            started_at,
            cost,
            memory: None,
        }
    }
}

/// The plugin's stdout parsed into the sink as DogStatsD lines (with a warning when it was
/// cut at `MAX_STDOUT`); returns the tail of its stderr, trimmed.
fn read_output(
    out_buf: &std::sync::Arc<std::sync::Mutex<Collected>>,
    err_buf: &std::sync::Arc<std::sync::Mutex<Collected>>,
    sink: &mut Sink,
) -> String {
    let (stdout, stdout_len) = taken(out_buf);
    let (mut stderr_tail, stderr_len) = taken(err_buf);
    if stderr_tail.len() > STDERR_LOG {
        stderr_tail.drain(..stderr_tail.len() - STDERR_LOG);
    }
    stderr_records(&stderr_tail, stderr_len, sink);
    if stderr_tail.len() > STDERR_TAIL {
        stderr_tail.drain(..stderr_tail.len() - STDERR_TAIL);
    }
    dogstatsd::parse_into(&String::from_utf8_lossy(&stdout), sink);
    if stdout_len > MAX_STDOUT {
        sink.warning(format!(
            "stdout was {stdout_len} bytes; only the first {} MiB were read",
            MAX_STDOUT >> 20
        ));
    }
    String::from_utf8_lossy(&stderr_tail).trim().to_string()
}

/// The plugin's stderr as its log: a line that starts with a level word (`DEBUG`, `INFO`,
/// `WARN`/`WARNING`, `ERROR`, `CRITICAL`/`FATAL`, any case, then `:` or a space, optionally in
/// brackets) is a record of that level, any other line an INFO record.
fn stderr_records(tail: &[u8], total: u64, sink: &mut Sink) {
    use crate::metrics::level::{DEBUG, INFO, WARNING};
    let text = String::from_utf8_lossy(tail);
    let mut lines = text.lines();
    if total > tail.len() as u64 {
        // The first line kept is most likely cut.
        lines.next();
        let lost = total - tail.len() as u64;
        sink.log(INFO, || {
            format!("({lost} earlier bytes of stderr not kept)")
        });
    }
    for line in lines.map(str::trim_end).filter(|l| !l.trim().is_empty()) {
        let word = line
            .trim_start_matches('[')
            .split(|c: char| !c.is_ascii_alphabetic())
            .next()
            .unwrap_or_default()
            .to_ascii_uppercase();
        let level = match word.as_str() {
            "DEBUG" | "TRACE" => DEBUG,
            "INFO" => INFO,
            "WARN" | "WARNING" => WARNING,
            "ERROR" => 40,
            "CRITICAL" | "FATAL" => 50,
            _ => INFO,
        };
        sink.log(level, || line.to_string());
    }
}

/// What watching a plugin run saw. Traced: the snapshots at exec and at exit. Untraced: the
/// first and last samples.
struct Watched {
    first: Option<ProcessSnapshot>,
    last: Option<ProcessSnapshot>,
    /// The processes it left behind (pid, start time).
    left_behind: Vec<(i32, u64)>,
    timed_out: bool,
    ended: Instant,
}

/// Waits for the plugin to end, sampling it every `SAMPLE_EVERY` when it is not traced; at
/// `timeout` its process group is killed.
fn watch(
    events: &mpsc::Receiver<TraceEvent>,
    probe: &mut Probe,
    traced: bool,
    t0: Instant,
    timeout: Duration,
    pid: i32,
) -> Watched {
    let mut first = if traced { None } else { Some(probe.after()) };
    let mut last = first.clone();
    let mut left_behind = Vec::new();
    let mut timed_out = false;
    let ended = loop {
        match events.recv_timeout(SAMPLE_EVERY) {
            Ok(TraceEvent::Exec(s)) => first = Some(s),
            Ok(TraceEvent::Exit(s, left)) => {
                last = Some(s);
                left_behind = left;
            }
            Ok(TraceEvent::Ended(at)) => break at,
            Ok(TraceEvent::Spawned(_)) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break Instant::now(),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if t0.elapsed() >= timeout && !timed_out {
                    timed_out = true;
                    // SAFETY: signals the process group this plugin leads.
                    unsafe { libc::kill(-pid, libc::SIGKILL) };
                } else if !traced {
                    let s = probe.after();
                    if s.rss.is_some() {
                        last = Some(s);
                    }
                }
            }
        }
    };
    Watched {
        first,
        last,
        left_behind,
        timed_out,
        ended,
    }
}

impl ExecCheck {
    /// The run's result: a timeout, the exit status when it is not 0 (with the end of stderr),
    /// or a lost status.
    fn outcome(
        &self,
        timed_out: bool,
        timeout: Duration,
        status: Option<i32>,
        tail: &str,
    ) -> Result<(), Error> {
        let with_tail = |msg: String| -> Error {
            if tail.is_empty() {
                Error::Run(msg)
            } else {
                Error::Run(format!("{msg}; stderr ends with:\n{tail}"))
            }
        };
        if timed_out {
            return Err(with_tail(format!(
                "timed out after {} (instance timeout); the process group was killed",
                crate::duration::human(timeout)
            )));
        }
        match status.map(describe_status) {
            Some(None) => Ok(()),
            Some(Some(why)) => Err(with_tail(format!("{} {why}", self.program.display()))),
            None => Err(Error::Run("the plugin's exit status was lost".into())),
        }
    }
}

/// The cost from the snapshots at exec and at exit: memory, threads, fds and sockets exactly
/// the plugin's at those two instants, peak RSS its own high-water mark (of the last program
/// it exec'd), CPU from its rusage. A figure a stop could not read stays `n/a`.
fn traced_cost(
    at_exec: &ProcessSnapshot,
    at_exit: &ProcessSnapshot,
    wall_s: f64,
    usage: Option<libc::rusage>,
) -> RunCost {
    let scope = at_exit.peak_rss.map(|_| PeakScope::Run);
    cost_from(at_exec, at_exit, wall_s, usage, (at_exit.peak_rss, scope))
}

/// The figures of a run from its first and last snapshots, its rusage and its peak.
fn cost_from(
    first: &ProcessSnapshot,
    last: &ProcessSnapshot,
    wall_s: f64,
    usage: Option<libc::rusage>,
    (peak_rss, peak_scope): (Option<u64>, Option<PeakScope>),
) -> RunCost {
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    RunCost {
        wall_s,
        cpu_user_s: usage.map(|u| tv(u.ru_utime)),
        cpu_system_s: usage.map(|u| tv(u.ru_stime)),
        // An exited child's rusage total is its exact runtime; only the split is sampled.
        cpu_total_s: usage.map(|u| tv(u.ru_utime) + tv(u.ru_stime)),
        rss_before: first.rss,
        rss_after: last.rss,
        vms_before: first.vms,
        vms_after: last.vms,
        peak_rss,
        peak_scope,
        io: None,
        threads: last.threads,
        open_fds: last.open_fds,
        connections: last.connections,
    }
}

fn cost_of(
    first: &ProcessSnapshot,
    last: &ProcessSnapshot,
    wall_s: f64,
    own_peak: u64,
    usage: Option<libc::rusage>,
) -> RunCost {
    // rusage's mark is max(agentprof's mark at spawn, the child's): above agentprof's own
    // mark it is the child's exact peak; otherwise only the sampled mark is the child's.
    let rusage_peak = usage
        .map(|u| u.ru_maxrss as u64 * 1024)
        .filter(|&r| r > own_peak);
    let peak = match (rusage_peak, last.peak_rss.or(first.peak_rss)) {
        (Some(r), _) => (Some(r), Some(PeakScope::Run)),
        (None, Some(sampled)) => (Some(sampled), Some(PeakScope::Sampled)),
        (None, None) => (None, None),
    };
    cost_from(first, last, wall_s, usage, peak)
}
