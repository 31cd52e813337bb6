//! `memory`: physical memory and swap in MiB, as the Agent's memory check reports them.

use serde::Deserialize;

use crate::Check;
use crate::Error;
use crate::metrics::Sink;

use super::Builtin;

pub const OPTIONS: &[&str] = &[];

#[derive(Debug, Default, Deserialize)]
pub struct MemoryInstance {}

pub struct MemoryCheck;

impl Builtin for MemoryCheck {
    type Instance = MemoryInstance;
    fn new(_: MemoryInstance) -> Result<Self, Error> {
        Ok(MemoryCheck)
    }
}

const MIB: f64 = 1024.0 * 1024.0;

impl Check for MemoryCheck {
    fn run(&mut self, sink: &mut Sink) -> Result<(), Error> {
        use procfs::Current;
        let m = procfs::Meminfo::current()?;
        let mb = |b: u64| b as f64 / MIB;
        let total = m.mem_total;
        let usable = m.mem_available.unwrap_or(m.mem_free + m.buffers + m.cached);
        sink.log(crate::metrics::level::DEBUG, || match m.mem_available {
            Some(_) => "usable memory is the kernel's MemAvailable".to_string(),
            None => "no MemAvailable in /proc/meminfo (kernel before 3.14): usable memory is free + buffers + cached".to_string(),
        });
        sink.gauge("system.mem.total", mb(total), &[]);
        sink.gauge("system.mem.free", mb(m.mem_free), &[]);
        sink.gauge("system.mem.used", mb(total.saturating_sub(m.mem_free)), &[]);
        sink.gauge("system.mem.usable", mb(usable), &[]);
        sink.gauge("system.mem.cached", mb(m.cached), &[]);
        sink.gauge("system.mem.buffered", mb(m.buffers), &[]);
        sink.gauge("system.mem.slab", mb(m.slab), &[]);
        sink.gauge("system.mem.committed_as", mb(m.committed_as), &[]);
        if let Some(s) = m.shmem {
            sink.gauge("system.mem.shared", mb(s), &[]);
        }
        if let Some(p) = m.page_tables {
            sink.gauge("system.mem.page_tables", mb(p), &[]);
        }
        if let Some(c) = m.commit_limit {
            sink.gauge("system.mem.commit_limit", mb(c), &[]);
        }
        if total > 0 {
            sink.gauge("system.mem.pct_usable", usable as f64 / total as f64, &[]);
        }
        sink.gauge("system.swap.total", mb(m.swap_total), &[]);
        sink.gauge("system.swap.free", mb(m.swap_free), &[]);
        sink.gauge(
            "system.swap.used",
            mb(m.swap_total.saturating_sub(m.swap_free)),
            &[],
        );
        sink.gauge("system.swap.cached", mb(m.swap_cached), &[]);
        if m.swap_total > 0 {
            sink.gauge(
                "system.swap.pct_free",
                m.swap_free as f64 / m.swap_total as f64,
                &[],
            );
        }
        Ok(())
    }
}
