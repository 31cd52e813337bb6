//! Snapshots where there is no procfs (macOS and others), through sysinfo. Figures sysinfo
//! cannot give (threads, fds, sockets, peak RSS reset) stay `None` and print as n/a.

use sysinfo::{Pid, ProcessRefreshKind, ProcessesToUpdate, System};

use super::{ProcessSnapshot, Target};

/// agentprof's resident memory now, bytes.
pub fn self_rss() -> Option<u64> {
    snapshot(Target::SelfProcess).rss
}

pub fn snapshot(target: Target) -> ProcessSnapshot {
    let pid = match target {
        Target::SelfProcess => Pid::from_u32(std::process::id()),
        Target::Pid(p) => Pid::from_u32(p),
    };
    let mut sys = System::new();
    sys.refresh_processes_specifics(
        ProcessesToUpdate::Some(&[pid]),
        true,
        ProcessRefreshKind::everything(),
    );
    let Some(p) = sys.process(pid) else {
        return ProcessSnapshot::default();
    };
    ProcessSnapshot {
        rss: Some(p.memory()),
        vms: Some(p.virtual_memory()),
        peak_rss: None,
        cpu_user_s: None,
        cpu_total_s: None,
        cpu_system_s: None,
        // sysinfo has bytes but no operation counts: report none rather than half.
        io: None,
        threads: None,
        open_fds: None,
        connections: None,
    }
}

/// Snapshots of one process before and after runs; sysinfo has no cheaper partial read.
pub struct Probe {
    target: Target,
}

impl Probe {
    pub fn new(target: Target) -> Probe {
        Probe { target }
    }

    pub fn before(&mut self) -> ProcessSnapshot {
        snapshot(self.target)
    }

    pub fn after(&mut self) -> ProcessSnapshot {
        snapshot(self.target)
    }

    /// There is no portable way to reset a process's peak RSS.
    pub fn reset_peak_rss(&self) -> bool {
        false
    }
}

/// Gives the memory the allocator holds free back to the system: nothing to do where the
/// allocator returns it itself.
pub fn give_back_free_memory() {}

/// Large frees go back to the system: the allocators of these systems do so themselves.
pub fn return_large_frees() {}
