//! How much of what agentprof writes is kept: under an output directory (receive's, pull's,
//! k8s's), the oldest files are deleted once the files together are over a size, or once
//! they are older than an age. The record files (`uploads.jsonl`, `captures.jsonl`) are
//! kept; they say what was written, also of what is gone.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The bounds: none set keeps everything.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Retention {
    pub max_bytes: Option<u64>,
    pub max_age: Option<Duration>,
}

/// What one pass deleted.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Deleted {
    pub files: u64,
    pub bytes: u64,
}

/// Record files kept whatever their size.
const RECORDS: &[&str] = &["uploads.jsonl", "captures.jsonl"];

impl Retention {
    pub fn is_set(&self) -> bool {
        self.max_bytes.is_some() || self.max_age.is_some()
    }

    /// Deletes under `dir` the oldest files past the bounds, then the directories left empty.
    pub fn enforce(&self, dir: &Path) -> Deleted {
        let mut deleted = Deleted::default();
        if !self.is_set() {
            return deleted;
        }
        let mut files = Vec::new();
        walk(dir, &mut files, 0);
        // Oldest first.
        files.sort_by_key(|(modified, _, _)| *modified);
        let mut total: u64 = files.iter().map(|(_, size, _)| size).sum();
        let now = SystemTime::now();
        for (modified, size, path) in files {
            let too_old = self
                .max_age
                .is_some_and(|age| now.duration_since(modified).is_ok_and(|d| d > age));
            let too_big = self.max_bytes.is_some_and(|max| total > max);
            if !too_old && !too_big {
                break;
            }
            if std::fs::remove_file(&path).is_ok() {
                total = total.saturating_sub(size);
                deleted.files += 1;
                deleted.bytes += size;
                if let Some(parent) = path.parent()
                    && parent != dir
                {
                    // Only empty directories go; a non-empty one refuses.
                    let _ = std::fs::remove_dir(parent);
                }
            }
        }
        deleted
    }
}

/// How often a long-running command checks its output directory.
pub const EVERY: Duration = Duration::from_secs(60);

/// Keeps `dir` within `r` on the current tokio runtime: at once, then every [`EVERY`], on
/// the blocking pool; `deleted` is told of each pass that deleted something.
pub fn keep_within(r: Retention, dir: PathBuf, deleted: impl Fn(Deleted) + Send + 'static) {
    if !r.is_set() {
        return;
    }
    tokio::spawn(async move {
        loop {
            let d = dir.clone();
            let done = tokio::task::spawn_blocking(move || r.enforce(&d))
                .await
                .unwrap_or_default();
            if done.files > 0 {
                deleted(done);
            }
            tokio::time::sleep(EVERY).await;
        }
    });
}

/// Every regular file under `dir` but the record files and files being written, with its
/// modification time and size; at most 8 levels down.
fn walk(dir: &Path, out: &mut Vec<(SystemTime, u64, PathBuf)>, depth: usize) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let Ok(ft) = e.file_type() else { continue };
        let path = e.path();
        let name = e.file_name();
        let name = name.to_string_lossy();
        if ft.is_dir() && depth < 8 {
            walk(&path, out, depth + 1);
        } else if ft.is_file()
            && !(depth == 0 && RECORDS.contains(&name.as_ref()))
            && !name.ends_with(".partial")
            && let Ok(m) = e.metadata()
        {
            out.push((
                m.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                m.len(),
                path,
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_files_go_first_and_the_records_stay() {
        let dir = tempfile::tempdir().expect("dir");
        let d = dir.path();
        std::fs::write(d.join("uploads.jsonl"), vec![b'x'; 5000]).expect("w");
        for (i, svc) in ["a", "b", "c", "d"].iter().enumerate() {
            std::fs::create_dir_all(d.join(svc)).expect("mkdir");
            let f = d.join(svc).join("cpu.pb.gz");
            std::fs::write(&f, vec![0u8; 1000]).expect("w");
            let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + i as u64 * 60);
            std::fs::File::options()
                .write(true)
                .open(&f)
                .and_then(|f| f.set_modified(t))
                .expect("mtime");
        }
        let r = Retention {
            max_bytes: Some(2500),
            max_age: None,
        };
        assert_eq!(
            r.enforce(d),
            Deleted {
                files: 2,
                bytes: 2000
            }
        );
        assert!(
            !d.join("a").exists() && !d.join("b").exists(),
            "oldest gone, with their dirs"
        );
        assert!(d.join("c/cpu.pb.gz").exists() && d.join("d/cpu.pb.gz").exists());
        assert!(d.join("uploads.jsonl").exists());
        // By age: everything here is years old.
        let old = Retention {
            max_bytes: None,
            max_age: Some(Duration::from_secs(86_400)),
        };
        assert_eq!(old.enforce(d).files, 2);
        assert_eq!(Retention::default().enforce(d), Deleted::default());
    }
}
