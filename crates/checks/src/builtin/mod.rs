//! Built-in system checks in Rust, with the Datadog Agent's metric names, units and types so
//! dashboards keep working. One file per check; each declares its options so typos warn.

#[cfg(target_os = "linux")]
mod cpu;
#[cfg(target_os = "linux")]
mod disk;
#[cfg(target_os = "linux")]
mod io;
#[cfg(target_os = "linux")]
mod load;
#[cfg(target_os = "linux")]
mod memory;
#[cfg(target_os = "linux")]
mod network;
#[cfg(target_os = "linux")]
mod process;
#[cfg(target_os = "linux")]
mod uptime;

use regex::{Regex, RegexBuilder};
use serde::de::DeserializeOwned;

use crate::Error;
use crate::config::CheckConf;

use super::Check;

/// Builds a check's instances from its configuration file (or its defaults when `None`).
pub type BuildFn = fn(Option<&CheckConf>) -> Result<Vec<Box<dyn Check>>, Error>;

/// A built-in check: its name, what it does, its instance options and how to build it.
pub struct BuiltinSpec {
    pub name: &'static str,
    pub summary: &'static str,
    pub options: &'static [&'static str],
    pub build: BuildFn,
    /// The instances it runs without a file: the Agent's `NAME.d/conf.yaml.default`, which
    /// its package enables (none: the check needs a configuration, as `process`).
    pub default_conf: Option<&'static str>,
}

/// The Agent's `conf.yaml.default` of most system checks: one instance of defaults.
const AGENT_DEFAULT: Option<&str> = Some("init_config:\ninstances:\n  - {}\n");

impl BuiltinSpec {
    /// Its default configuration as a file read from `NAME.d/conf.yaml.default`, the name the
    /// Agent gives it (its messages name that file); none when the check needs one written.
    pub fn default_conf(&self) -> Option<CheckConf> {
        let text = self.default_conf?;
        let path = std::path::PathBuf::from(format!("{}.d/conf.yaml.default", self.name));
        CheckConf::parse(&path, text.to_string()).ok()
    }
}

/// A built-in check type, built from its typed instance options.
pub trait Builtin: Check + Sized + 'static {
    type Instance: DeserializeOwned + Default;
    /// Validates the options.
    fn new(instance: Self::Instance) -> Result<Self, Error>;
}

/// Builds every instance of `C` from its file, or its default instance when there is none.
pub fn build<C: Builtin>(conf: Option<&CheckConf>) -> Result<Vec<Box<dyn Check>>, Error> {
    let instances = match conf {
        Some(c) => c.typed_instances::<C::Instance>()?,
        None => vec![C::Instance::default()],
    };
    instances
        .into_iter()
        .enumerate()
        .map(|(i, inst)| {
            C::new(inst)
                .map(|c| Box::new(c) as Box<dyn Check>)
                .map_err(|e| match conf {
                    Some(c) => Error::config(&c.path, format!("instances[{i}].{e}")),
                    None => Error::config("(default instance)", e),
                })
        })
        .collect()
}

/// Compiles a list of regexes into one, anchored at the start as the Agent's `re.match`.
pub fn regex_list(
    option: &'static str,
    patterns: &[String],
    ignore_case: bool,
) -> Result<Option<Regex>, Error> {
    if patterns.is_empty() {
        return Ok(None);
    }
    let joined = patterns
        .iter()
        .map(|p| format!("(?:{p})"))
        .collect::<Vec<_>>()
        .join("|");
    RegexBuilder::new(&format!("^(?:{joined})"))
        .case_insensitive(ignore_case)
        .size_limit(1 << 20)
        .build()
        .map(Some)
        .map_err(|e| Error::option(option, format!("not a valid regular expression: {e}")))
}

/// A procfs file read whole. procfs reports a size of 0, so `fs::read` starts with a 32-byte
/// read and doubles (/proc/mounts took eight reads): this reads into room for `hint` bytes
/// first, growing only past it.
pub fn read_procfs(path: &str, hint: usize) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut raw = Vec::with_capacity(hint);
    std::fs::File::open(path)?.read_to_end(&mut raw)?;
    Ok(raw)
}

#[cfg(target_os = "linux")]
pub static BUILTINS: &[BuiltinSpec] = &[
    BuiltinSpec {
        name: "cpu",
        summary: "CPU time split (user, system, idle, iowait, stolen, guest) in percent",
        options: cpu::OPTIONS,
        build: build::<cpu::CpuCheck>,
        default_conf: AGENT_DEFAULT,
    },
    BuiltinSpec {
        name: "disk",
        summary: "space and inodes of each mounted filesystem",
        options: disk::OPTIONS,
        build: build::<disk::DiskCheck>,
        default_conf: Some("init_config:\ninstances:\n  - use_mount: false\n"),
    },
    BuiltinSpec {
        name: "io",
        summary: "per-device I/O rates, latency and utilisation (iostat -x)",
        options: io::OPTIONS,
        build: build::<io::IoCheck>,
        default_conf: AGENT_DEFAULT,
    },
    BuiltinSpec {
        name: "load",
        summary: "load averages, raw and per core",
        options: load::OPTIONS,
        build: build::<load::LoadCheck>,
        default_conf: AGENT_DEFAULT,
    },
    BuiltinSpec {
        name: "memory",
        summary: "physical memory and swap",
        options: memory::OPTIONS,
        build: build::<memory::MemoryCheck>,
        default_conf: AGENT_DEFAULT,
    },
    BuiltinSpec {
        name: "network",
        summary: "per-interface traffic and errors; TCP/UDP connection states",
        options: network::OPTIONS,
        build: build::<network::NetworkCheck>,
        default_conf: Some("init_config:\ninstances:\n  - collect_connection_state: false\n"),
    },
    BuiltinSpec {
        name: "process",
        summary: "CPU, memory, threads, fds and I/O of processes matched by name or pattern",
        options: process::OPTIONS,
        build: build::<process::ProcessCheck>,
        default_conf: None,
    },
    BuiltinSpec {
        name: "uptime",
        summary: "seconds since boot",
        options: uptime::OPTIONS,
        build: build::<uptime::UptimeCheck>,
        default_conf: AGENT_DEFAULT,
    },
];

#[cfg(not(target_os = "linux"))]
fn unsupported(_conf: Option<&CheckConf>) -> Result<Vec<Box<dyn Check>>, Error> {
    Err(Error::flag(
        "check",
        "the built-in system checks read /proc and run on Linux only for now",
    ))
}

#[cfg(not(target_os = "linux"))]
pub static BUILTINS: &[BuiltinSpec] = &[
    BuiltinSpec {
        name: "cpu",
        summary: "CPU time split (Linux only)",
        options: &[],
        build: unsupported,
        default_conf: AGENT_DEFAULT,
    },
    BuiltinSpec {
        name: "disk",
        summary: "filesystem space (Linux only)",
        options: &[],
        build: unsupported,
        default_conf: AGENT_DEFAULT,
    },
    BuiltinSpec {
        name: "io",
        summary: "device I/O (Linux only)",
        options: &[],
        build: unsupported,
        default_conf: AGENT_DEFAULT,
    },
    BuiltinSpec {
        name: "load",
        summary: "load averages (Linux only)",
        options: &[],
        build: unsupported,
        default_conf: AGENT_DEFAULT,
    },
    BuiltinSpec {
        name: "memory",
        summary: "memory and swap (Linux only)",
        options: &[],
        build: unsupported,
        default_conf: AGENT_DEFAULT,
    },
    BuiltinSpec {
        name: "network",
        summary: "interfaces (Linux only)",
        options: &[],
        build: unsupported,
        default_conf: AGENT_DEFAULT,
    },
    BuiltinSpec {
        name: "process",
        summary: "processes (Linux only)",
        options: &[],
        build: unsupported,
        default_conf: AGENT_DEFAULT,
    },
    BuiltinSpec {
        name: "uptime",
        summary: "uptime (Linux only)",
        options: &[],
        build: unsupported,
        default_conf: AGENT_DEFAULT,
    },
];

#[cfg(test)]
#[cfg(target_os = "linux")]
mod tests {
    use std::os::unix::fs::FileExt;

    /// Read syscalls this thread made so far (/proc/thread-self/io's `syscr`), sampled with
    /// one `pread` of a file opened in advance: it counts itself once it returns.
    fn reads(io: &std::fs::File) -> u64 {
        let mut buf = [0u8; 512];
        let n = io.read_at(&mut buf, 0).unwrap();
        let text = std::str::from_utf8(&buf[..n]).unwrap();
        let line = text.lines().find_map(|l| l.strip_prefix("syscr: "));
        line.unwrap().trim().parse().unwrap()
    }

    #[test]
    fn a_procfs_file_is_read_whole_in_two_reads() {
        let io = std::fs::File::open("/proc/thread-self/io").unwrap();
        let before = reads(&io);
        let ours = super::read_procfs("/proc/mounts", 32 << 10).unwrap();
        let during = reads(&io) - before - 1;
        // Its text, then the end of the file: where `fs::read` took eight reads.
        assert_eq!(during, 2, "read /proc/mounts in {during} reads");
        assert_eq!(ours, std::fs::read("/proc/mounts").unwrap());
    }
}
