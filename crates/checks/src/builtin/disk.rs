//! `disk`: space and inodes of mounted filesystems and time spent on each disk, as the
//! integrations-core disk check reports them with its defaults: every mount with a device
//! (tmpfs and devtmpfs included) and a size, less CD-ROMs, tracefs and binfmt_misc;
//! system.disk.* in KiB, `utilized` a percentage to one decimal as psutil rounds it,
//! `in_use` that over 100; system.fs.inodes.*; system.disk.read_time/write_time(_pct).

use std::collections::{HashMap, HashSet};

use regex::Regex;
use serde::Deserialize;

use crate::Check;
use crate::Error;
use crate::metrics::Sink;
use crate::metrics::level::DEBUG;

use super::{Builtin, read_procfs, regex_list};

pub const OPTIONS: &[&str] = &[
    "use_mount",
    "all_partitions",
    "include_all_devices",
    "tag_by_filesystem",
    "tag_by_label",
    "lowercase_device_tag",
    "min_disk_size",
    "file_system_include",
    "file_system_exclude",
    "device_include",
    "device_exclude",
    "mount_point_include",
    "mount_point_exclude",
    "excluded_filesystems",
    "excluded_disks",
    "excluded_disk_re",
    "excluded_mountpoint_re",
];

/// The integration's default exclusions: CD-ROMs and tracefs by filesystem, binfmt_misc by
/// mount point (reading it can hang). Its regexes `iso9660$` and `tracefs$` (any case) and
/// `(/host)?/proc/sys/fs/binfmt_misc$`, matched from the start, are these comparisons:
/// compiling the regexes was a large share of a `check disk`.
fn excluded_by_default(fstype: &str, mount: &str) -> bool {
    fstype.eq_ignore_ascii_case("iso9660")
        || fstype.eq_ignore_ascii_case("tracefs")
        || mount.strip_prefix("/host").unwrap_or(mount) == "/proc/sys/fs/binfmt_misc"
}

#[derive(Debug, Deserialize)]
#[serde(default)]
pub struct DiskInstance {
    use_mount: bool,
    all_partitions: bool,
    /// Every mount, not only device-backed filesystem types (the integration's default).
    include_all_devices: bool,
    tag_by_filesystem: bool,
    /// `label:` and `device_label:` tags from the filesystems' labels.
    tag_by_label: bool,
    lowercase_device_tag: bool,
    /// MiB; filesystems of this size or smaller are skipped (0: empty ones, like /proc).
    min_disk_size: f64,
    file_system_include: Vec<String>,
    file_system_exclude: Vec<String>,
    device_include: Vec<String>,
    device_exclude: Vec<String>,
    mount_point_include: Vec<String>,
    mount_point_exclude: Vec<String>,
    /// Legacy forms, still found in old configs.
    excluded_filesystems: Vec<String>,
    excluded_disks: Vec<String>,
    excluded_disk_re: Option<String>,
    excluded_mountpoint_re: Option<String>,
}

impl Default for DiskInstance {
    fn default() -> Self {
        DiskInstance {
            use_mount: false,
            all_partitions: false,
            include_all_devices: true,
            tag_by_filesystem: false,
            tag_by_label: true,
            lowercase_device_tag: false,
            min_disk_size: 0.0,
            file_system_include: Vec::new(),
            file_system_exclude: Vec::new(),
            device_include: Vec::new(),
            device_exclude: Vec::new(),
            mount_point_include: Vec::new(),
            mount_point_exclude: Vec::new(),
            excluded_filesystems: Vec::new(),
            excluded_disks: Vec::new(),
            excluded_disk_re: None,
            excluded_mountpoint_re: None,
        }
    }
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

/// `patterns` and then `extra` (each once), as one anchored regex.
fn with_extras(
    option: &'static str,
    patterns: &[String],
    extra: impl IntoIterator<Item = String>,
    ignore_case: bool,
) -> Result<Option<Regex>, Error> {
    let mut all: Vec<String> = patterns.iter().filter(|p| !p.is_empty()).cloned().collect();
    for e in extra {
        if !all.contains(&e) {
            all.push(e);
        }
    }
    regex_list(option, &all, ignore_case)
}

impl Builtin for DiskCheck {
    type Instance = DiskInstance;

    fn new(opts: DiskInstance) -> Result<Self, Error> {
        if !(opts.min_disk_size.is_finite() && opts.min_disk_size >= 0.0) {
            return Err(Error::option(
                "min_disk_size",
                format!("{} must be 0 or more (MiB)", opts.min_disk_size),
            ));
        }
        let fs_extra = opts.excluded_filesystems.iter().map(|f| format!("{f}$"));
        let dev_extra = opts
            .excluded_disks
            .iter()
            .map(|d| format!("{d}$"))
            .chain(opts.excluded_disk_re.clone());
        let mnt_extra = opts.excluded_mountpoint_re.clone();
        Ok(DiskCheck {
            fs_include: regex_list("file_system_include", &opts.file_system_include, true)?,
            fs_exclude: with_extras(
                "file_system_exclude",
                &opts.file_system_exclude,
                fs_extra,
                true,
            )?,
            dev_include: regex_list("device_include", &opts.device_include, false)?,
            dev_exclude: with_extras("device_exclude", &opts.device_exclude, dev_extra, false)?,
            mnt_include: regex_list("mount_point_include", &opts.mount_point_include, false)?,
            mnt_exclude: with_extras(
                "mount_point_exclude",
                &opts.mount_point_exclude,
                mnt_extra,
                false,
            )?,
            opts,
        })
    }
}

fn matches(value: Option<&str>, re: &Option<Regex>) -> bool {
    matches!((value, re), (Some(v), Some(r)) if r.is_match(v))
}

/// One line of /proc/mounts: the device, where it is mounted and its filesystem type.
struct Mount {
    device: String,
    mount: String,
    fstype: String,
}

/// The mounts of a /proc/mounts text (fstab's format: the kernel writes a space, tab,
/// newline or backslash in a field as `\040`, `\011`, `\012`, `\134`). A line of fewer
/// than three fields is skipped.
fn mounts(text: &[u8]) -> Vec<Mount> {
    text.split(|&b| b == b'\n')
        .filter_map(|line| {
            let mut f = line
                .split(|&b| b == b' ' || b == b'\t')
                .filter(|f| !f.is_empty())
                .map(unescape_octal);
            Some(Mount {
                device: f.next()?,
                mount: f.next()?,
                fstype: f.next()?,
            })
        })
        .collect()
}

/// A /proc/mounts field with its `\NNN` octal escapes made the bytes they stand for.
fn unescape_octal(field: &[u8]) -> String {
    if !field.contains(&b'\\') {
        return String::from_utf8_lossy(field).into_owned();
    }
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        let octal = field
            .get(i + 1..i + 4)
            .filter(|d| field[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)))
            .and_then(|d| u8::from_str_radix(std::str::from_utf8(d).ok()?, 8).ok());
        match octal {
            Some(b) => {
                out.push(b);
                i += 4;
            }
            None => {
                out.push(field[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Filesystem types backed by a device (those /proc/filesystems does not mark `nodev`).
fn physical_fs_types() -> HashSet<String> {
    let raw = read_procfs("/proc/filesystems", 4 << 10).unwrap_or_default();
    String::from_utf8_lossy(&raw)
        .lines()
        .filter(|l| !l.starts_with("nodev"))
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

/// Filesystem labels by device path, from /dev/disk/by-label (what blkid reports, without
/// running it): `/dev/vda1` -> the `label:` and `device_label:` tags.
fn device_labels() -> HashMap<String, [String; 2]> {
    let mut out = HashMap::new();
    let Ok(entries) = std::fs::read_dir("/dev/disk/by-label") else {
        return out;
    };
    for e in entries.flatten() {
        let (Ok(target), Some(name)) = (
            std::fs::canonicalize(e.path()),
            e.file_name().to_str().map(unescape_label),
        ) else {
            continue;
        };
        out.insert(
            target.to_string_lossy().into_owned(),
            [format!("label:{name}"), format!("device_label:{name}")],
        );
    }
    out
}

/// udev writes a label's unsafe bytes as `\xHH` in its link name.
fn unescape_label(s: &str) -> String {
    let mut out = Vec::with_capacity(s.len());
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && b.get(i + 1) == Some(&b'x')
            && let Some(v) = s
                .get(i + 2..i + 4)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(v);
            i += 4;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// psutil's percentage: used over what a user can have, to one decimal.
fn percent(used: f64, free: f64) -> f64 {
    let total = used + free;
    if total > 0.0 {
        (used / total * 1000.0).round() / 10.0
    } else {
        0.0
    }
}

impl DiskCheck {
    /// The integration's exclusion rules, in its order.
    fn excluded(&self, device: Option<&str>, fstype: &str, mount: &str) -> bool {
        if device.is_none() && !self.opts.all_partitions {
            return true;
        }
        // Secure NFS mounts read `/path (deleted)`: the integration drops the last word.
        let mount = mount.rsplit_once(' ').map_or(mount, |(m, _)| m);
        let excluded = excluded_by_default(fstype, mount)
            || matches(Some(fstype), &self.fs_exclude)
            || matches(device, &self.dev_exclude)
            || matches(Some(mount), &self.mnt_exclude);
        let included = self.fs_include.as_ref().is_none_or(|r| r.is_match(fstype))
            && (device.is_none()
                || self
                    .dev_include
                    .as_ref()
                    .is_none_or(|r| device.is_some_and(|d| r.is_match(d))))
            && self.mnt_include.as_ref().is_none_or(|r| r.is_match(mount));
        excluded || !included
    }

    fn tags(
        &self,
        device: &str,
        mount: &str,
        fstype: &str,
        labels: &HashMap<String, [String; 2]>,
    ) -> Vec<String> {
        let mut t = Vec::with_capacity(6);
        if self.opts.tag_by_filesystem {
            t.push(fstype.to_string());
            t.push(format!("filesystem:{fstype}"));
        }
        if let Some(l) = labels.get(device) {
            t.extend(l.iter().cloned());
        }
        let name = if self.opts.use_mount { mount } else { device };
        let name = if self.opts.lowercase_device_tag {
            name.to_lowercase()
        } else {
            name.to_string()
        };
        t.push(format!("device:{name}"));
        t.push(format!(
            "device_name:{}",
            device.rsplit('/').next().unwrap_or(device)
        ));
        t
    }

    /// Per-disk time spent reading and writing, from /proc/diskstats (milliseconds).
    fn latency(&self, sink: &mut Sink) {
        // Room for a few hundred devices.
        let Ok(raw) = read_procfs("/proc/diskstats", 32 << 10) else {
            return;
        };
        let Ok(text) = std::str::from_utf8(&raw) else {
            return;
        };
        for line in text.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (Some(name), Some(rt), Some(wt)) = (f.get(2), f.get(6), f.get(10)) else {
                continue;
            };
            let (Ok(rt), Ok(wt)) = (rt.parse::<f64>(), wt.parse::<f64>()) else {
                continue;
            };
            let name = if self.opts.lowercase_device_tag {
                name.to_lowercase()
            } else {
                name.to_string()
            };
            let t = [format!("device:{name}"), format!("device_name:{name}")];
            sink.monotonic_count("system.disk.read_time", rt, &t);
            sink.monotonic_count("system.disk.write_time", wt, &t);
            // The integration's "percent" (its own comment says it is not one): ms * 100 / 1000.
            sink.rate("system.disk.read_time_pct", rt * 100.0 / 1000.0, &t);
            sink.rate("system.disk.write_time_pct", wt * 100.0 / 1000.0, &t);
        }
    }
}

impl Check for DiskCheck {
    fn run(&mut self, sink: &mut Sink) -> Result<(), Error> {
        // Room for a node's few hundred mounts.
        let text = read_procfs("/proc/mounts", 32 << 10).map_err(|e| Error::File {
            what: "cannot read /proc/mounts".into(),
            reason: e.to_string(),
        })?;
        let mounts = mounts(&text);
        let physical = if self.opts.include_all_devices {
            HashSet::new()
        } else {
            physical_fs_types()
        };
        let labels = if self.opts.tag_by_label {
            device_labels()
        } else {
            HashMap::new()
        };
        for m in &mounts {
            let (device, mount, fstype) = (&m.device, &m.mount, &m.fstype);
            if !self.opts.include_all_devices && !physical.contains(fstype) {
                sink.log(DEBUG, || {
                    format!("skipping {mount} ({fstype}): not a device filesystem (include_all_devices: true reports it)")
                });
                continue;
            }
            let dev = Some(device.as_str()).filter(|d| !d.is_empty() && *d != "none");
            if self.excluded(dev, fstype, mount) {
                sink.log(DEBUG, || {
                    format!("skipping {mount} ({fstype}, device {device}): excluded by the instance's options or the integration's defaults")
                });
                continue;
            }
            // A mount that cannot be read (permission, gone) is skipped, as the integration
            // skips it.
            let st = match rustix::fs::statvfs(mount.as_str()) {
                Ok(st) => st,
                Err(e) => {
                    sink.log(DEBUG, || format!("skipping {mount}: statvfs: {e}"));
                    continue;
                }
            };
            let frsize = st.f_frsize as f64;
            let total = st.f_blocks as f64 * frsize;
            if total <= self.opts.min_disk_size * 1024.0 * 1024.0 {
                sink.log(DEBUG, || {
                    format!("skipping {mount}: {total} bytes, not above min_disk_size")
                });
                continue;
            }
            sink.log(DEBUG, || {
                format!("reporting {mount} ({fstype}, device {device})")
            });
            let used = (st.f_blocks.saturating_sub(st.f_bfree)) as f64 * frsize;
            let free = st.f_bavail as f64 * frsize;
            let t = self.tags(device, mount, fstype, &labels);
            let pct = percent(used, free);
            sink.gauge("system.disk.total", total / 1024.0, &t);
            sink.gauge("system.disk.used", used / 1024.0, &t);
            sink.gauge("system.disk.free", free / 1024.0, &t);
            sink.gauge("system.disk.utilized", pct, &t);
            sink.gauge("system.disk.in_use", pct / 100.0, &t);
            let (itotal, ifree) = (st.f_files as f64, st.f_ffree as f64);
            if st.f_files != 0 {
                let iused = itotal - ifree;
                sink.gauge("system.fs.inodes.total", itotal, &t);
                sink.gauge("system.fs.inodes.free", ifree, &t);
                sink.gauge("system.fs.inodes.used", iused, &t);
                sink.gauge("system.fs.inodes.utilized", iused / itotal * 100.0, &t);
                sink.gauge("system.fs.inodes.in_use", iused / itotal, &t);
            }
        }
        self.latency(sink);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mounts_are_read_as_procfs_reads_them() {
        let text = b"/dev/vda / ext4 rw,relatime 0 0\n\
            /dev/sdb1 /media/my\\040disk\\011x vfat rw 0 0\n\
            //srv/share /mnt/back\\134slash cifs rw 0 0\n\
            short line\n\n\
            tmpfs /run/a\\08b tmpfs rw 0 0\n";
        let owned: Vec<[String; 3]> = mounts(text)
            .into_iter()
            .map(|m| [m.device, m.mount, m.fstype])
            .collect();
        assert_eq!(
            owned,
            [
                ["/dev/vda", "/", "ext4"],
                ["/dev/sdb1", "/media/my disk\tx", "vfat"],
                ["//srv/share", "/mnt/back\\slash", "cifs"],
                // Not an octal escape (8 is not an octal digit): kept as it is.
                ["tmpfs", "/run/a\\08b", "tmpfs"],
            ]
            .map(|r| r.map(String::from))
        );
        // The live table, as procfs parses it.
        let live = mounts(&std::fs::read("/proc/mounts").unwrap());
        let theirs = procfs::mounts().unwrap();
        assert_eq!(live.len(), theirs.len());
        for (m, p) in live.iter().zip(&theirs) {
            assert_eq!(
                (&m.device, &m.mount, &m.fstype),
                (&p.fs_spec, &p.fs_file, &p.fs_vfstype)
            );
        }
    }

    #[test]
    fn the_default_exclusions_are_the_integrations_regexes() {
        // As the integration compiles them: case-insensitive for filesystems, from the start.
        let fs = regex_list("fs", &["iso9660$".into(), "tracefs$".into()], true)
            .unwrap()
            .unwrap();
        let mnt = regex_list("mnt", &["(/host)?/proc/sys/fs/binfmt_misc$".into()], false)
            .unwrap()
            .unwrap();
        for t in [
            "iso9660", "ISO9660", "Iso9660", "tracefs", "TraceFS", "ext4", "xiso9660", "iso9660x",
            "tracefs ", "", "udf",
        ] {
            assert_eq!(
                excluded_by_default(t, "/data"),
                fs.is_match(t),
                "filesystem {t:?}"
            );
        }
        for m in [
            "/proc/sys/fs/binfmt_misc",
            "/host/proc/sys/fs/binfmt_misc",
            "/host/host/proc/sys/fs/binfmt_misc",
            "/proc/sys/fs/binfmt_misc/x",
            "/x/proc/sys/fs/binfmt_misc",
            "/proc/sys/fs",
            "/",
        ] {
            assert_eq!(
                excluded_by_default("ext4", m),
                mnt.is_match(m),
                "mount point {m:?}"
            );
        }
    }
}
