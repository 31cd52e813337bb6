//! `disk`: space and inodes of mounted filesystems, as the Agent's disk check reports them
//! (system.disk.* in KiB, in_use as a fraction; system.fs.inodes.*).

use std::collections::HashSet;

use regex::Regex;
use serde::Deserialize;

use crate::checks::Check;
use crate::metrics::Sink;

use super::{Builtin, regex_list};

pub const OPTIONS: &[&str] = &[
    "use_mount",
    "all_partitions",
    "tag_by_filesystem",
    "min_disk_size",
    "file_system_include",
    "file_system_exclude",
    "device_include",
    "device_exclude",
    "mount_point_include",
    "mount_point_exclude",
    "excluded_filesystems",
    "excluded_disks",
];

/// Filesystems the Agent leaves out unless told otherwise (its `iso9660$`, `tracefs$`),
/// matched by name: compiling a regex for them would double the check's heap.
const DEFAULT_FS_EXCLUDE: &[&str] = &["iso9660", "tracefs"];

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct DiskInstance {
    use_mount: bool,
    all_partitions: bool,
    tag_by_filesystem: bool,
    /// MiB; smaller filesystems are skipped.
    min_disk_size: f64,
    file_system_include: Vec<String>,
    file_system_exclude: Vec<String>,
    device_include: Vec<String>,
    device_exclude: Vec<String>,
    mount_point_include: Vec<String>,
    mount_point_exclude: Vec<String>,
    /// Legacy exact-name lists, still found in old configs.
    excluded_filesystems: Vec<String>,
    excluded_disks: Vec<String>,
}

pub struct DiskCheck {
    opts: DiskInstance,
    fs_include: Option<Regex>,
    fs_exclude: Option<Regex>,
    dev_include: Option<Regex>,
    dev_exclude: Option<Regex>,
    mnt_include: Option<Regex>,
    mnt_exclude: Option<Regex>,
}

impl Builtin for DiskCheck {
    type Instance = DiskInstance;

    fn new(opts: DiskInstance) -> Result<Self, String> {
        if opts.min_disk_size.is_nan() || opts.min_disk_size < 0.0 {
            return Err(format!(
                "min_disk_size: {} must be 0 or more (MiB)",
                opts.min_disk_size
            ));
        }
        Ok(DiskCheck {
            fs_include: regex_list("file_system_include", &opts.file_system_include, true)?,
            fs_exclude: regex_list("file_system_exclude", &opts.file_system_exclude, true)?,
            dev_include: regex_list("device_include", &opts.device_include, false)?,
            dev_exclude: regex_list("device_exclude", &opts.device_exclude, false)?,
            mnt_include: regex_list("mount_point_include", &opts.mount_point_include, false)?,
            mnt_exclude: regex_list("mount_point_exclude", &opts.mount_point_exclude, false)?,
            opts,
        })
    }
}

fn allowed(value: &str, include: &Option<Regex>, exclude: &Option<Regex>) -> bool {
    include.as_ref().is_none_or(|r| r.is_match(value))
        && !exclude.as_ref().is_some_and(|r| r.is_match(value))
}

/// Filesystem types backed by a device (those /proc/filesystems does not mark `nodev`).
fn physical_fs_types() -> HashSet<String> {
    std::fs::read_to_string("/proc/filesystems")
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.starts_with("nodev"))
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

impl Check for DiskCheck {
    fn run(&mut self, sink: &mut Sink) -> anyhow::Result<()> {
        let mounts = procfs::mounts()?;
        let physical = if self.opts.all_partitions {
            HashSet::new()
        } else {
            physical_fs_types()
        };
        for m in mounts {
            let (device, mount, fstype) = (&m.fs_spec, &m.fs_file, &m.fs_vfstype);
            if !self.opts.all_partitions
                && (!physical.contains(fstype) || device == "none" || device.is_empty())
            {
                continue;
            }
            if DEFAULT_FS_EXCLUDE.iter().any(|f| fstype.ends_with(f))
                || self.opts.excluded_filesystems.contains(fstype)
                || self.opts.excluded_disks.contains(device)
            {
                continue;
            }
            if !allowed(fstype, &self.fs_include, &self.fs_exclude)
                || !allowed(device, &self.dev_include, &self.dev_exclude)
                || !allowed(mount, &self.mnt_include, &self.mnt_exclude)
            {
                continue;
            }
            let st = match rustix::fs::statvfs(mount.as_str()) {
                Ok(st) => st,
                Err(e) => {
                    sink.warning(format!("{mount}: statvfs failed: {e}"));
                    continue;
                }
            };
            let frsize = st.f_frsize as f64;
            let total = st.f_blocks as f64 * frsize;
            if total == 0.0 && !self.opts.all_partitions {
                continue;
            }
            if total < self.opts.min_disk_size * 1024.0 * 1024.0 {
                continue;
            }
            let used = (st.f_blocks.saturating_sub(st.f_bfree)) as f64 * frsize;
            let free = st.f_bavail as f64 * frsize;
            let device_tag = if self.opts.use_mount {
                mount.as_str()
            } else {
                device.as_str()
            };
            let device_name = device.rsplit('/').next().unwrap_or(device);
            let mut t = vec![
                format!("device:{device_tag}"),
                format!("device_name:{device_name}"),
            ];
            if self.opts.tag_by_filesystem {
                t.push(format!("filesystem:{fstype}"));
            }
            sink.gauge("system.disk.total", total / 1024.0, &t);
            sink.gauge("system.disk.used", used / 1024.0, &t);
            sink.gauge("system.disk.free", free / 1024.0, &t);
            if used + free > 0.0 {
                let in_use = used / (used + free);
                sink.gauge("system.disk.in_use", in_use, &t);
                sink.gauge("system.disk.utilized", in_use * 100.0, &t);
            }
            let (itotal, ifree) = (st.f_files as f64, st.f_ffree as f64);
            if itotal > 0.0 {
                sink.gauge("system.fs.inodes.total", itotal, &t);
                sink.gauge("system.fs.inodes.free", ifree, &t);
                sink.gauge("system.fs.inodes.used", itotal - ifree, &t);
                sink.gauge("system.fs.inodes.in_use", (itotal - ifree) / itotal, &t);
            }
        }
        Ok(())
    }
}
