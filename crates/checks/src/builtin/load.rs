//! `load`: 1, 5 and 15 minute load averages, raw and divided by the number of cores.

use serde::Deserialize;

use crate::Check;
use crate::Error;
use crate::metrics::Sink;

use super::Builtin;

pub const OPTIONS: &[&str] = &[];

#[derive(Debug, Default, Deserialize)]
pub struct LoadInstance {}

pub struct LoadCheck;

impl Builtin for LoadCheck {
    type Instance = LoadInstance;
    fn new(_: LoadInstance) -> Result<Self, Error> {
        Ok(LoadCheck)
    }
}

impl Check for LoadCheck {
    fn run(&mut self, sink: &mut Sink) -> Result<(), Error> {
        use procfs::Current;
        let l = procfs::LoadAverage::current()?;
        let cores = online_cpus()?;
        sink.log(crate::metrics::level::DEBUG, || {
            format!(
                "/proc/loadavg: {} {} {} over {cores} online CPUs",
                l.one, l.five, l.fifteen
            )
        });
        for (name, v) in [("1", l.one), ("5", l.five), ("15", l.fifteen)] {
            sink.gauge(&format!("system.load.{name}"), f64::from(v), &[]);
            sink.gauge(
                &format!("system.load.norm.{name}"),
                f64::from(v) / cores,
                &[],
            );
        }
        Ok(())
    }
}

/// CPUs online, as the Agent's `psutil.cpu_count()` counts them: from the kernel's online
/// list through sysconf, not by formatting /proc/cpuinfo at every run (which costs ten times
/// as much).
fn online_cpus() -> Result<f64, procfs::ProcError> {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    if n > 0 {
        return Ok(n as f64);
    }
    use procfs::Current;
    Ok(procfs::CpuInfo::current()?.num_cores().max(1) as f64)
}
