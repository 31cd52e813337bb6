//! Hourly rollups: the captures of one service and profile type in one ended UTC hour,
//! merged once and kept as a profile in the ui's cache directory, so that a day's merge
//! reads 24 profiles rather than 1,400 captures (as Pyroscope compacts its blocks).
//!
//! A rollup's file is named by its hour and a digest of the captures it holds (each one's
//! id, length and time): a capture added to that hour, rewritten or removed gives another
//! digest, and the rollup is made again from the captures. Merging adds values of the same
//! stack and labels and keeps everything else in the order first seen, and the parts of a
//! merge are added oldest first, so a merge of rollups is, byte for byte, the merge of their
//! captures. Sample-label filters apply to a rollup's samples as to a capture's (its samples
//! keep their labels); a selection by capture tags or labels reads the captures.
//!
//! The directory is `<cache>/rollups/<digest of the ui's directories>/<digest of service and
//! type>/<hour>.<digest>.pb.gz`; writing a rollup removes the other files of its hour and
//! those of hours before the oldest listed capture of its series (removed by retention), so
//! the cache holds about one merged profile per hour of the captures shown.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use super::index::Entry;
use super::select::{Selection, instant};
use crate::pprof::fasthash::fnv64a;

const HOUR: i64 = 3600;

/// Where this ui keeps its rollups, and whether writing them failed (said once).
pub struct Rollups {
    dir: PathBuf,
    failed: AtomicBool,
}

/// A part of a merge, oldest first: one capture, or one ended hour's captures.
pub enum Part<'a> {
    Capture(&'a Entry),
    Hour {
        /// Seconds since the epoch at the hour's start.
        start: i64,
        captures: Vec<&'a Entry>,
    },
}

impl Rollups {
    /// The rollups of the directories `roots` under `cache` (`ui --cache-dir`).
    pub fn new(cache: &Path, roots: &[PathBuf]) -> Rollups {
        let mut key = Vec::new();
        for r in roots {
            key.extend_from_slice(r.as_os_str().as_encoded_bytes());
            key.push(0);
        }
        Rollups {
            dir: cache.join("rollups").join(format!("{:016x}", fnv64a(&key))),
            failed: AtomicBool::new(false),
        }
    }

    /// The directory of one series' rollups.
    fn series_dir(&self, sel: &Selection) -> PathBuf {
        let key = format!("{}\0{}", sel.service, sel.profile_type);
        self.dir.join(format!("{:016x}", fnv64a(key.as_bytes())))
    }

    /// The file of an hour's rollup of `captures`.
    pub fn path(&self, sel: &Selection, start: i64, captures: &[&Entry]) -> PathBuf {
        let mut key = Vec::new();
        for e in captures {
            key.extend_from_slice(e.id.as_bytes());
            key.push(0);
            key.extend_from_slice(&e.bytes.to_le_bytes());
            key.extend_from_slice(e.time.as_bytes());
            key.push(0);
        }
        self.series_dir(sel)
            .join(format!("{}.{:016x}.pb.gz", hour_name(start), fnv64a(&key)))
    }

    /// Keeps `gz` (a gzipped profile) as the rollup at `path`, written whole under another
    /// name and renamed, then removes the other rollups of its hour and those of hours
    /// before `oldest` (the series' oldest listed capture, seconds). A failure is said once
    /// on stderr and merges go on from the captures.
    pub fn store(&self, path: &Path, gz: &[u8], oldest: Option<i64>) {
        if self.failed.load(Ordering::Relaxed) {
            return;
        }
        if let Err(e) = write_whole(path, gz) {
            if !self.failed.swap(true, Ordering::Relaxed) {
                eprintln!(
                    "agentprof ui: cannot keep hourly rollups in {} ({e}): each merge reads its captures (ui --cache-dir, --no-cache)",
                    self.dir.display()
                );
            }
            return;
        }
        let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str()))
        else {
            return;
        };
        let hour = name.split('.').next().unwrap_or_default();
        let oldest = oldest.map(|t| hour_name(t.div_euclid(HOUR) * HOUR));
        let Ok(files) = std::fs::read_dir(dir) else {
            return;
        };
        for f in files.flatten() {
            let other = f.file_name();
            let Some(other) = other.to_str() else {
                continue;
            };
            let stale = if other.starts_with('.') {
                // Another ui's file being written, unless it was left by one that stopped.
                f.metadata()
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| t.elapsed().ok())
                    .is_some_and(|age| age.as_secs() > HOUR as u64)
            } else {
                let h = other.split('.').next().unwrap_or_default();
                (h == hour && other != name) || oldest.as_deref().is_some_and(|o| h < o)
            };
            if stale {
                let _ = std::fs::remove_file(f.path());
            }
        }
    }

    /// Whether rollups can be kept (writing has not failed).
    pub fn usable(&self) -> bool {
        !self.failed.load(Ordering::Relaxed)
    }
}

/// `20261206T13`: sorts as the hours do.
fn hour_name(start: i64) -> String {
    jiff::Timestamp::from_second(start)
        .map(|t| t.strftime("%Y%m%dT%H").to_string())
        .unwrap_or_else(|_| format!("{start}"))
}

fn write_whole(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("rollup");
    let tmp = dir.join(format!(".{name}.tmp.{}", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// The parts `captures` (a selection's, oldest first) are merged from: each hour that
/// ended before `now`, lies wholly inside the selection's range and holds two captures or
/// more as one rollup, the others capture by capture. All captures one by one when the
/// selection picks captures by their tags or labels (a rollup holds a whole hour).
pub fn plan<'a>(sel: &Selection, captures: Vec<&'a Entry>, now: jiff::Timestamp) -> Vec<Part<'a>> {
    if !sel.tags.is_empty() || !sel.matchers.is_empty() {
        return captures.into_iter().map(Part::Capture).collect();
    }
    let now = now.as_second();
    let from = sel.from.map(|t| t.as_second());
    let to = sel.to.map(|t| t.as_second());
    let whole = |start: i64| {
        from.is_none_or(|f| f <= start)
            && to.is_none_or(|t| start + HOUR <= t)
            && start + HOUR <= now
    };
    let mut parts: Vec<Part<'a>> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut run: Vec<&'a Entry> = Vec::new();
    let mut run_start = None;
    let flush =
        |run: &mut Vec<&'a Entry>, start: Option<i64>, parts: &mut Vec<Part<'a>>| match start {
            Some(s) if run.len() >= 2 => parts.push(Part::Hour {
                start: s,
                captures: std::mem::take(run),
            }),
            _ => parts.extend(run.drain(..).map(Part::Capture)),
        };
    for e in captures {
        let start = instant(&e.time)
            .map(|t| t.as_second().div_euclid(HOUR) * HOUR)
            .filter(|s| whole(*s));
        if start != run_start || start.is_none() {
            flush(&mut run, run_start, &mut parts);
            // An hour seen before (captures whose times sort out of order) is read capture
            // by capture: one rollup file per hour.
            run_start = start.filter(|s| seen.insert(*s));
        }
        run.push(e);
    }
    flush(&mut run, run_start, &mut parts);
    parts
}

/// The oldest capture of a series, in seconds (for [`Rollups::store`]'s pruning).
pub fn oldest(sel: &Selection, entries: &[Entry]) -> Option<i64> {
    let series = Selection {
        from: None,
        to: None,
        tags: Vec::new(),
        labels: Vec::new(),
        matchers: Vec::new(),
        service: sel.service.clone(),
        profile_type: sel.profile_type.clone(),
    };
    entries
        .iter()
        .filter(|e| series.takes(e))
        .filter_map(|e| instant(&e.time))
        .map(|t| t.as_second())
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str, time: &str) -> Entry {
        Entry {
            id: id.into(),
            path: String::new(),
            kind: "pprof",
            profile_type: "cpu".into(),
            service: Some("web".into()),
            namespace: None,
            pod: None,
            container: None,
            time: time.into(),
            bytes: 100,
            cause: None,
            trigger: None,
            tags: Vec::new(),
            record: None,
            figures: None,
        }
    }

    fn sel(from: Option<&str>, to: Option<&str>) -> Selection {
        Selection {
            service: "web".into(),
            profile_type: "cpu".into(),
            from: from.map(|t| t.parse().unwrap()),
            to: to.map(|t| t.parse().unwrap()),
            tags: Vec::new(),
            labels: Vec::new(),
            matchers: Vec::new(),
        }
    }

    fn shape(parts: &[Part]) -> Vec<String> {
        parts
            .iter()
            .map(|p| match p {
                Part::Capture(e) => e.id.clone(),
                Part::Hour { start, captures } => format!(
                    "{}:{}",
                    hour_name(*start),
                    captures
                        .iter()
                        .map(|e| e.id.as_str())
                        .collect::<Vec<_>>()
                        .join("+")
                ),
            })
            .collect()
    }

    /// Whole ended hours inside the range become rollups, in order; an hour cut by the
    /// range's ends, the hour still running, a lone capture and a selection by tags are
    /// read capture by capture.
    #[test]
    fn ended_whole_hours_inside_the_range_are_rolled_up_in_order() {
        let entries = [
            entry("a", "2026-12-06T09:50:00Z"),
            entry("b", "2026-12-06T10:00:00Z"),
            entry("c", "2026-12-06T10:59:59Z"),
            entry("d", "2026-12-06T11:30:00Z"),
            entry("e", "2026-12-06T12:10:00Z"),
            entry("f", "2026-12-06T12:20:00Z"),
            entry("g", "2026-12-06T13:05:00Z"),
            entry("h", "2026-12-06T13:06:00Z"),
        ];
        let now: jiff::Timestamp = "2026-12-06T13:30:00Z".parse().unwrap();
        let all: Vec<&Entry> = entries.iter().collect();
        let parts = plan(&sel(Some("2026-12-06T09:30:00Z"), None), all.clone(), now);
        assert_eq!(
            shape(&parts),
            ["a", "20261206T10:b+c", "d", "20261206T12:e+f", "g", "h"]
        );
        let parts = plan(
            &sel(Some("2026-12-06T10:00:00Z"), Some("2026-12-06T12:15:00Z")),
            all.clone(),
            now,
        );
        assert_eq!(
            shape(&parts),
            ["a", "20261206T10:b+c", "d", "e", "f", "g", "h"]
        );
        let mut tagged = sel(None, None);
        tagged.tags.push(("pod".into(), "x".into()));
        assert_eq!(plan(&tagged, all, now).len(), 8);
    }

    /// A rollup's name changes with any of its captures; storing one removes the other of
    /// its hour and the hours before the oldest capture.
    #[test]
    fn a_rollup_is_named_by_its_captures_and_replaces_its_hours_other() {
        let dir = std::env::temp_dir().join(format!("agentprof-rollup-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let r = Rollups::new(&dir, &[PathBuf::from("/data")]);
        let s = sel(None, None);
        let (a, b) = (
            entry("a", "2026-12-06T10:00:00Z"),
            entry("b", "2026-12-06T10:30:00Z"),
        );
        let start = "2026-12-06T10:00:00Z"
            .parse::<jiff::Timestamp>()
            .unwrap()
            .as_second();
        let one = r.path(&s, start, &[&a, &b]);
        let mut b2 = entry("b", "2026-12-06T10:30:00Z");
        b2.bytes = 101;
        let two = r.path(&s, start, &[&a, &b2]);
        assert_ne!(one, two);
        let old = r.path(&s, start - 3 * HOUR, &[&a, &b]);
        r.store(&old, b"old", None);
        r.store(&one, b"one", None);
        assert!(old.is_file() && one.is_file());
        r.store(&two, b"two", Some(start));
        assert!(!one.exists() && !old.exists(), "{one:?} {old:?}");
        assert_eq!(std::fs::read(&two).unwrap(), b"two");
        assert!(r.usable());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
