//! Writing a capture under a new name, never over another file: what `pull`, `k8s`,
//! `receive` and `start`'s profiles write.
//!
//! The bytes go to a temporary name of this process's own (`.<stem>.<pid>.<n>.partial`),
//! are synced, and are then hard-linked to `<stem>.<ext>`: the link fails when the name is
//! taken, by another process or by an earlier capture of the same second, and the next name
//! is tried (`<stem>-2.<ext>`, `-3`, …). A reader (the ui, `go tool pprof`) never sees a cut
//! file, and two writers of one name both keep theirs. Where the filesystem has no hard links,
//! the final name is created exclusively instead (the same guarantee, minus the whole-or-
//! nothing view while it is written).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Names tried before giving up: `<stem>.<ext>`, then `-2` to `-1000`.
const ATTEMPTS: u32 = 1000;

/// Writes `bytes` to `dir/<stem>.<ext>`, or to the first `dir/<stem>-<n>.<ext>` not taken;
/// the path written.
pub fn write_new(dir: &Path, stem: &str, ext: &str, bytes: &[u8]) -> std::io::Result<PathBuf> {
    write(dir, stem, ext, bytes, false)
}

/// As `write_new`, except that a name holding exactly `bytes` already is taken as the file
/// written: `receive` storing an upload again after a kill -9 cut its first store short finds
/// the files that store wrote instead of writing a second set.
pub fn write_new_or_same(
    dir: &Path,
    stem: &str,
    ext: &str,
    bytes: &[u8],
) -> std::io::Result<PathBuf> {
    write(dir, stem, ext, bytes, true)
}

/// Whether `path` holds exactly `bytes`.
fn holds(path: &Path, bytes: &[u8]) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.len() == bytes.len() as u64)
        && std::fs::read(path).is_ok_and(|b| b == bytes)
}

fn write(
    dir: &Path,
    stem: &str,
    ext: &str,
    bytes: &[u8],
    same_is_written: bool,
) -> std::io::Result<PathBuf> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let tmp = dir.join(format!(
        ".{stem}.{}.{}.partial",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_data()
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    let mut result = Err(std::io::Error::other(format!(
        "{ATTEMPTS} files named {stem}[-N].{ext} already"
    )));
    for n in 1..=ATTEMPTS {
        let path = dir.join(name(stem, n, ext));
        match std::fs::hard_link(&tmp, &path) {
            Ok(()) => {
                result = Ok(path);
                break;
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                if same_is_written && holds(&path, bytes) {
                    result = Ok(path);
                    break;
                }
            }
            // No hard links here (some network and FUSE filesystems): create the name
            // exclusively and write it.
            Err(_) => {
                result = create_exclusive(dir, stem, ext, bytes);
                break;
            }
        }
    }
    let _ = std::fs::remove_file(&tmp);
    result
}

/// Replaces `path` with `bytes` whole: written to a temporary name of this process's own
/// beside it, synced, and renamed over it (for agentprof's own state files, not captures).
pub fn replace(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(
        ".{}.{}.partial",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let tmp = PathBuf::from(tmp);
    let written = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_data()?;
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

fn name(stem: &str, n: u32, ext: &str) -> String {
    if n == 1 {
        format!("{stem}.{ext}")
    } else {
        format!("{stem}-{n}.{ext}")
    }
}

fn create_exclusive(dir: &Path, stem: &str, ext: &str, bytes: &[u8]) -> std::io::Result<PathBuf> {
    for n in 1..=ATTEMPTS {
        let path = dir.join(name(stem, n, ext));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(mut f) => {
                let written = f.write_all(bytes).and_then(|()| f.sync_data());
                if let Err(e) = written {
                    let _ = std::fs::remove_file(&path);
                    return Err(e);
                }
                return Ok(path);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other(format!(
        "{ATTEMPTS} files named {stem}[-N].{ext} already"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_taken_name_is_never_written_over() {
        let dir = tempfile::tempdir().expect("dir");
        let a = write_new(dir.path(), "cpu-2026", "pb.gz", b"first").expect("a");
        let b = write_new(dir.path(), "cpu-2026", "pb.gz", b"second").expect("b");
        let c = write_new(dir.path(), "cpu-2026", "pb.gz", b"third").expect("c");
        assert_eq!(a, dir.path().join("cpu-2026.pb.gz"));
        assert_eq!(b, dir.path().join("cpu-2026-2.pb.gz"));
        assert_eq!(c, dir.path().join("cpu-2026-3.pb.gz"));
        assert_eq!(std::fs::read(&a).expect("read"), b"first");
        assert_eq!(std::fs::read(&b).expect("read"), b"second");
        // No temporary file is left behind.
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .expect("list")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 3, "{names:?}");
    }

    #[test]
    fn writers_of_one_name_at_once_all_keep_theirs() {
        let dir = tempfile::tempdir().expect("dir");
        let paths: Vec<PathBuf> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8u8)
                .map(|i| {
                    let d = dir.path();
                    s.spawn(move || write_new(d, "heap", "pb.gz", &[i; 64]).expect("write"))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("join"))
                .collect()
        });
        let mut contents: Vec<u8> = paths
            .iter()
            .map(|p| std::fs::read(p).expect("read")[0])
            .collect();
        contents.sort_unstable();
        assert_eq!(contents, (0..8).collect::<Vec<u8>>());
    }

    #[test]
    fn the_same_bytes_under_a_taken_name_are_taken_as_written() {
        let dir = tempfile::tempdir().expect("dir");
        let a = write_new_or_same(dir.path(), "cpu", "pb.gz", b"one").expect("a");
        let again = write_new_or_same(dir.path(), "cpu", "pb.gz", b"one").expect("again");
        assert_eq!(a, again);
        let other = write_new_or_same(dir.path(), "cpu", "pb.gz", b"two").expect("other");
        assert_eq!(other, dir.path().join("cpu-2.pb.gz"));
        assert_eq!(std::fs::read_dir(dir.path()).expect("list").count(), 2);
    }

    #[test]
    fn exclusive_creation_takes_the_next_free_name() {
        let dir = tempfile::tempdir().expect("dir");
        std::fs::write(dir.path().join("x.txt"), b"there").expect("write");
        let p = create_exclusive(dir.path(), "x", "txt", b"new").expect("create");
        assert_eq!(p, dir.path().join("x-2.txt"));
        assert_eq!(
            std::fs::read(dir.path().join("x.txt")).expect("read"),
            b"there"
        );
    }
}
