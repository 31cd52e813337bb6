//! Snapshots of one process's figures — memory, CPU, I/O, threads, fds, sockets — taken at the
//! exact start and end of a run. A figure the OS cannot give is `None` (shown as n/a), never 0.

#![warn(unnameable_types)]

#[cfg(target_os = "linux")]
mod linux;
#[cfg(not(target_os = "linux"))]
mod other;

#[cfg(target_os = "linux")]
pub use linux::{Probe, give_back_free_memory, return_large_frees, self_rss, snapshot};
#[cfg(not(target_os = "linux"))]
pub use other::{Probe, give_back_free_memory, return_large_frees, self_rss, snapshot};

use serde::Serialize;

/// Which process to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// agentprof itself: built-in checks run in it, as in the Agent's developer mode.
    SelfProcess,
    Pid(u32),
}

/// psutil's io_counters: storage bytes and read/write system calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct IoCounters {
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub read_count: u64,
    pub write_count: u64,
}

impl IoCounters {
    /// The change from `before` to `self`; counters never go back, so saturate rather than wrap.
    pub fn since(&self, before: &IoCounters) -> IoCounters {
        IoCounters {
            read_bytes: self.read_bytes.saturating_sub(before.read_bytes),
            write_bytes: self.write_bytes.saturating_sub(before.write_bytes),
            read_count: self.read_count.saturating_sub(before.read_count),
            write_count: self.write_count.saturating_sub(before.write_count),
        }
    }
}

/// A process's figures at one instant.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProcessSnapshot {
    pub rss: Option<u64>,
    pub vms: Option<u64>,
    /// Highest RSS since the process started or since the last `reset_peak_rss`.
    pub peak_rss: Option<u64>,
    pub cpu_user_s: Option<f64>,
    pub cpu_system_s: Option<f64>,
    /// The process's CPU clock (ns resolution), where it can be read: the precise total that
    /// the tick-sampled user/system split adds up to.
    pub cpu_total_s: Option<f64>,
    pub io: Option<IoCounters>,
    pub threads: Option<u64>,
    pub open_fds: Option<u64>,
    /// Open TCP and UDP sockets (IPv4 and IPv6, any state) owned by the process.
    pub connections: Option<u64>,
}
