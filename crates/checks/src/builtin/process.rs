//! `process`: processes matched by name or command-line pattern, summed as the Agent's process
//! check reports them (system.processes.* tagged process_name:NAME, and the process.up service
//! check).

use std::collections::HashMap;

use crate::Error;

/// The shortest window `system.processes.cpu.pct` is computed over (see `run`).
const CPU_PCT_MIN_WINDOW: std::time::Duration = std::time::Duration::from_secs(1);

/// The machine's online CPUs (not agentprof's own affinity: the processes measured are any).
fn cores() -> usize {
    // SAFETY: sysconf reads a system value.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(n).unwrap_or(1).max(1)
}
use std::time::Instant;

use serde::Deserialize;

use crate::Check;
use crate::metrics::{ServiceCheckStatus, Sink};

use super::Builtin;

pub const OPTIONS: &[&str] = &[
    "name",
    "search_string",
    "exact_match",
    "pid",
    "pid_file",
    "ignore_denied_access",
];

#[derive(Debug, Deserialize)]
#[serde(default)]
pub struct ProcessInstance {
    name: Option<String>,
    search_string: Vec<String>,
    exact_match: bool,
    pid: Option<i32>,
    pid_file: Option<String>,
    ignore_denied_access: bool,
}

impl Default for ProcessInstance {
    fn default() -> Self {
        ProcessInstance {
            name: None,
            search_string: Vec::new(),
            exact_match: true,
            pid: None,
            pid_file: None,
            ignore_denied_access: true,
        }
    }
}

pub struct ProcessCheck {
    name: String,
    opts: ProcessInstance,
    /// CPU seconds per pid at the previous run, to turn into a percentage.
    last_cpu: Option<(Instant, HashMap<i32, f64>)>,
}

impl Builtin for ProcessCheck {
    type Instance = ProcessInstance;
    fn new(opts: ProcessInstance) -> Result<Self, Error> {
        let name = opts
            .name
            .clone()
            .filter(|n| !n.trim().is_empty())
            .ok_or_else(|| {
                Error::option(
                    "name",
                    "required; the process check tags everything with process_name:NAME",
                )
            })?;
        if opts.search_string.is_empty() && opts.pid.is_none() && opts.pid_file.is_none() {
            return Err(Error::option(
                "search_string",
                "required (a list of names or patterns), unless pid or pid_file is set",
            ));
        }
        Ok(ProcessCheck {
            name,
            opts,
            last_cpu: None,
        })
    }
}

impl ProcessCheck {
    fn matches(&self, p: &procfs::process::Process) -> bool {
        if let Some(pid) = self.opts.pid {
            return p.pid == pid;
        }
        if self.opts.search_string.iter().any(|s| s == "All") {
            return true;
        }
        if self.opts.exact_match {
            let Ok(stat) = p.stat() else { return false };
            self.opts.search_string.contains(&stat.comm)
        } else {
            let Ok(cmd) = p.cmdline() else { return false };
            let line = cmd.join(" ");
            !line.is_empty()
                && self
                    .opts
                    .search_string
                    .iter()
                    .any(|s| line.contains(s.as_str()))
        }
    }

    fn pid_from_file(&self) -> Result<Option<i32>, Error> {
        let Some(path) = &self.opts.pid_file else {
            return Ok(None);
        };
        let text = std::fs::read_to_string(path).map_err(|e| pid_file(path, e.to_string()))?;
        let pid = text
            .trim()
            .parse::<i32>()
            .map_err(|_| pid_file(path, format!("`{}` is not a pid", text.trim())))?;
        Ok(Some(pid))
    }
}

/// What the matched processes add up to.
#[derive(Default)]
struct Totals {
    count: u64,
    rss: f64,
    vms: f64,
    threads: f64,
    /// Open fds, when any matched process's could be counted.
    fds: Option<f64>,
    /// syscr, syscw, read_bytes, write_bytes, when any matched process's could be read.
    io: Option<[f64; 4]>,
    /// Each process's lifetime CPU seconds.
    cpu: HashMap<i32, f64>,
    /// Matched processes whose fds could not be counted.
    denied: u32,
}

impl ProcessCheck {
    /// Every process that matches (the pid file's, else the search), agentprof itself left out.
    fn totals(&self, pid_from_file: Option<i32>) -> Result<Totals, procfs::ProcError> {
        let tps = procfs::ticks_per_second() as f64;
        // agentprof reading /proc is not the process the user asked about.
        let me = std::process::id() as i32;
        let mut t = Totals::default();
        for p in procfs::process::all_processes()?.flatten() {
            let hit = p.pid != me
                && match pid_from_file {
                    Some(pid) => p.pid == pid,
                    None => self.matches(&p),
                };
            if !hit {
                continue;
            }
            let Ok(stat) = p.stat() else { continue };
            t.count += 1;
            t.rss += (stat.rss * procfs::page_size()) as f64;
            t.vms += stat.vsize as f64;
            t.threads += stat.num_threads as f64;
            t.cpu.insert(p.pid, (stat.utime + stat.stime) as f64 / tps);
            match p.fd_count() {
                Ok(n) => *t.fds.get_or_insert(0.0) += n as f64,
                Err(_) => t.denied += 1,
            }
            if let Ok(i) = p.io() {
                let io = t.io.get_or_insert([0.0; 4]);
                io[0] += i.syscr as f64;
                io[1] += i.syscw as f64;
                io[2] += i.read_bytes as f64;
                io[3] += i.write_bytes as f64;
            }
        }
        Ok(t)
    }

    /// The CPU the matched processes used since the last run, as a percentage of one core.
    fn cpu_pct(&self, now: Instant, cpu: &HashMap<i32, f64>, sink: &mut Sink, t: &[String]) {
        match &self.last_cpu {
            // /proc counts CPU in 10 ms ticks: over a shorter window than CPU_PCT_MIN_WINDOW a
            // tick's step reads as hundreds of percent. Keep the older baseline until the
            // window is long enough.
            Some((then, _)) if now.duration_since(*then) < CPU_PCT_MIN_WINDOW => {
                sink.awaiting_previous(1);
            }
            Some((then, prev)) => {
                let dt = now.duration_since(*then).as_secs_f64();
                // Only processes seen both times: a new process's lifetime CPU is not this interval's.
                let used: f64 = cpu
                    .iter()
                    .filter_map(|(pid, s)| prev.get(pid).map(|p| (s - p).max(0.0)))
                    .sum();
                // Rounding of each process's ticks can still add up past what the cores can
                // do: never more than every core busy.
                let most = 100.0 * cores() as f64;
                sink.gauge("system.processes.cpu.pct", (used / dt * 100.0).min(most), t);
            }
            None => sink.awaiting_previous(1),
        }
    }
}

impl Check for ProcessCheck {
    fn run(&mut self, sink: &mut Sink) -> Result<(), Error> {
        let now = Instant::now();
        let pid_from_file = self.pid_from_file()?;
        let page_total = {
            use procfs::Current;
            procfs::Meminfo::current()
                .map(|m| m.mem_total as f64)
                .unwrap_or(0.0)
        };
        let totals = self.totals(pid_from_file)?;
        sink.log(crate::metrics::level::DEBUG, || {
            format!(
                "{} processes matched {:?}",
                totals.count, self.opts.search_string
            )
        });
        let t = [format!("process_name:{}", self.name)];
        sink.gauge("system.processes.number", totals.count as f64, &t);
        let (status, msg) = if totals.count > 0 {
            (ServiceCheckStatus::Ok, String::new())
        } else {
            (
                ServiceCheckStatus::Critical,
                format!("no process matched {:?}", self.opts.search_string),
            )
        };
        sink.service_check("process.up", status, &t, &msg);
        if totals.count == 0 {
            self.last_cpu = Some((now, totals.cpu));
            return Ok(());
        }
        sink.gauge("system.processes.mem.rss", totals.rss, &t);
        sink.gauge("system.processes.mem.vms", totals.vms, &t);
        if page_total > 0.0 {
            sink.gauge(
                "system.processes.mem.pct",
                totals.rss / page_total * 100.0,
                &t,
            );
        }
        sink.gauge("system.processes.threads", totals.threads, &t);
        if let Some(fds) = totals.fds {
            sink.gauge("system.processes.open_file_descriptors", fds, &t);
        }
        if totals.denied > 0 && !self.opts.ignore_denied_access {
            sink.warning(format!(
                "access denied to the fds of {} matched process(es)",
                totals.denied
            ));
        }
        if let Some(io) = totals.io {
            sink.rate("system.processes.ioread_count", io[0], &t);
            sink.rate("system.processes.iowrite_count", io[1], &t);
            sink.rate("system.processes.ioread_bytes", io[2], &t);
            sink.rate("system.processes.iowrite_bytes", io[3], &t);
        }
        // A baseline younger than the minimum window is kept, not replaced.
        let keep_older = matches!(&self.last_cpu,
            Some((then, _)) if now.duration_since(*then) < CPU_PCT_MIN_WINDOW);
        self.cpu_pct(now, &totals.cpu, sink, &t);
        if !keep_older {
            self.last_cpu = Some((now, totals.cpu));
        }
        Ok(())
    }
}

/// The instance's `pid_file` could not be read as a pid: its path and why.
fn pid_file(path: &str, reason: String) -> Error {
    Error::File {
        what: format!("pid_file {path}"),
        reason,
    }
}
