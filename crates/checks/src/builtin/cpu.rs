//! `cpu`: share of CPU time per state since the previous run, in percent, as the Agent's cpu
//! check computes it from /proc/stat; the first run only records the counters.

use serde::Deserialize;

use crate::Check;
use crate::Error;
use crate::metrics::Sink;

use super::Builtin;

pub const OPTIONS: &[&str] = &["report_total_percpu"];

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct CpuInstance {
    /// Also report system.cpu.* per core, tagged core:N.
    report_total_percpu: bool,
}

#[derive(Clone, Copy, Default)]
struct Times {
    user: f64,
    system: f64,
    interrupt: f64,
    iowait: f64,
    idle: f64,
    stolen: f64,
    guest: f64,
}

impl Times {
    fn from(c: &procfs::CpuTime) -> Times {
        let o = |v: Option<u64>| v.unwrap_or(0) as f64;
        let irq = o(c.irq) + o(c.softirq);
        Times {
            user: (c.user + c.nice) as f64,
            system: c.system as f64 + irq,
            interrupt: irq,
            iowait: o(c.iowait),
            idle: c.idle as f64,
            stolen: o(c.steal),
            guest: o(c.guest) + o(c.guest_nice),
        }
    }

    fn total(&self) -> f64 {
        self.user + self.system + self.iowait + self.idle + self.stolen
    }
}

pub struct CpuCheck {
    opts: CpuInstance,
    last: Option<(Times, Vec<Times>)>,
}

impl Builtin for CpuCheck {
    type Instance = CpuInstance;
    fn new(opts: CpuInstance) -> Result<Self, Error> {
        Ok(CpuCheck { opts, last: None })
    }
}

fn emit(sink: &mut Sink, now: &Times, prev: &Times, tags: &[String]) {
    let total = now.total() - prev.total();
    if total <= 0.0 {
        return;
    }
    let pct = |a: f64, b: f64| ((a - b) / total * 100.0).max(0.0);
    sink.gauge("system.cpu.user", pct(now.user, prev.user), tags);
    sink.gauge("system.cpu.system", pct(now.system, prev.system), tags);
    sink.gauge(
        "system.cpu.interrupt",
        pct(now.interrupt, prev.interrupt),
        tags,
    );
    sink.gauge("system.cpu.iowait", pct(now.iowait, prev.iowait), tags);
    sink.gauge("system.cpu.idle", pct(now.idle, prev.idle), tags);
    sink.gauge("system.cpu.stolen", pct(now.stolen, prev.stolen), tags);
    sink.gauge("system.cpu.guest", pct(now.guest, prev.guest), tags);
}

impl Check for CpuCheck {
    fn run(&mut self, sink: &mut Sink) -> Result<(), Error> {
        use procfs::CurrentSI;
        let stat = procfs::KernelStats::current()?;
        let total = Times::from(&stat.total);
        let per: Vec<Times> = stat.cpu_time.iter().map(Times::from).collect();
        sink.gauge("system.cpu.num_cores", per.len() as f64, &[]);
        sink.log(crate::metrics::level::DEBUG, || {
            format!("/proc/stat: {} CPUs", per.len())
        });
        sink.monotonic_count("system.cpu.context_switches", stat.ctxt as f64, &[]);
        match &self.last {
            Some((prev, prev_per)) => {
                emit(sink, &total, prev, &[]);
                if self.opts.report_total_percpu {
                    for (i, (now, prev)) in per.iter().zip(prev_per).enumerate() {
                        emit(sink, now, prev, &[format!("core:{i}")]);
                    }
                }
            }
            None => sink.awaiting_previous(7),
        }
        self.last = Some((total, per));
        Ok(())
    }
}
