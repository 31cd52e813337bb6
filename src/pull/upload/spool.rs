//! The spool: uploads on disk waiting to be sent, oldest first, within a size; each written
//! whole, and a spooled one the intake refused for good set aside under `refused/`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{UploadError, UploadStats};

/// Uploads on disk waiting to be sent, oldest first, within a size; each written whole
/// (a temporary name, then renamed), so a crash never leaves a cut one.
pub struct Spool {
    dir: PathBuf,
    limit: u64,
    seq: AtomicU64,
    stats: Arc<UploadStats>,
    /// The keys of keyed uploads waiting here and of those sent (`sent.keys`, the last
    /// [`SENT_KEPT`]): a keyed upload put again while it waits or after it was sent (a
    /// receiver replaying what it forwarded before a kill -9) is not sent twice.
    keys: std::sync::Mutex<Keys>,
}

#[derive(Default)]
struct Keys {
    pending: std::collections::HashSet<String>,
    sent: std::collections::HashSet<String>,
    /// `sent` oldest first, to forget the oldest past [`SENT_KEPT`].
    order: std::collections::VecDeque<String>,
}

impl Keys {
    fn remember_sent(&mut self, key: &str) {
        if self.sent.insert(key.to_string()) {
            self.order.push_back(key.to_string());
        }
    }

    fn trim(&mut self, to: usize) {
        while self.order.len() > to {
            if let Some(old) = self.order.pop_front() {
                self.sent.remove(&old);
            }
        }
    }
}

/// Keys of sent uploads remembered (about 100 bytes each).
const SENT_KEPT: usize = 100_000;

/// A key as it may stand in a file name: hex digits only, at most 64.
fn valid_key(key: &str) -> bool {
    !key.is_empty() && key.len() <= 64 && key.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The key of a spooled upload's file name (`<time>-<seq>-k<key>.upload`).
fn key_of(f: &Path) -> Option<&str> {
    let stem = f.file_stem()?.to_str()?;
    let (_, key) = stem.rsplit_once("-k")?;
    valid_key(key).then_some(key)
}

impl Spool {
    pub fn new(dir: PathBuf, limit: u64, stats: Arc<UploadStats>) -> Spool {
        let mut keys = Keys::default();
        for k in std::fs::read_to_string(dir.join("sent.keys"))
            .unwrap_or_default()
            .lines()
            .filter(|k| valid_key(k))
        {
            keys.remember_sent(k);
        }
        keys.trim(SENT_KEPT);
        let spool = Spool {
            dir,
            limit,
            seq: AtomicU64::new(0),
            stats,
            keys: std::sync::Mutex::new(keys),
        };
        let pending: std::collections::HashSet<String> = spool
            .files()
            .iter()
            .filter_map(|f| key_of(f).map(str::to_string))
            .collect();
        crate::sync::lock(&spool.keys).pending = pending;
        spool
    }

    /// Whether a keyed upload is waiting or was sent already.
    fn has(&self, key: &str) -> bool {
        let keys = crate::sync::lock(&self.keys);
        keys.pending.contains(key) || keys.sent.contains(key)
    }

    /// Whether the spooled upload `f` has a key noted as sent.
    pub(super) fn was_sent(&self, f: &Path) -> bool {
        key_of(f).is_some_and(|k| crate::sync::lock(&self.keys).sent.contains(k))
    }

    /// A spooled upload's file goes without being sent (dropped, set aside, unreadable): its
    /// key no longer waits.
    pub(super) fn forget(&self, f: &Path) {
        if let Some(k) = key_of(f) {
            crate::sync::lock(&self.keys).pending.remove(k);
        }
    }

    /// A spooled upload was sent: its key (if any) is noted before its file goes, so putting
    /// it again sends nothing. The journal is rewritten with the last [`SENT_KEPT`] keys when
    /// it grows past twice that.
    pub(super) fn sent(&self, f: &Path) {
        let Some(key) = key_of(f) else {
            return;
        };
        let mut keys = crate::sync::lock(&self.keys);
        keys.pending.remove(key);
        keys.remember_sent(key);
        let journal = self.dir.join("sent.keys");
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&journal)
            .and_then(|mut j| std::io::Write::write_all(&mut j, format!("{key}\n").as_bytes()));
        if appended.is_err() || keys.order.len() > 2 * SENT_KEPT {
            keys.trim(SENT_KEPT);
            let text: String = keys.order.iter().map(|k| format!("{k}\n")).collect();
            let _ = crate::files::replace(&journal, text.as_bytes());
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub(super) fn files(&self) -> Vec<PathBuf> {
        let Ok(rd) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut files: Vec<PathBuf> = rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "upload"))
            .collect();
        files.sort();
        files
    }

    /// Uploads waiting.
    pub fn pending(&self) -> usize {
        self.files().len()
    }

    /// Writes an upload (body, content type, headers) to the spool; the oldest go first
    /// when the spool would be over its size.
    pub fn put(
        &self,
        body: &[u8],
        ctype: &str,
        headers: &[(String, String)],
    ) -> Result<(), UploadError> {
        self.put_keyed(None, body, ctype, headers)
    }

    /// As `put`, for an upload with a key (hex digits, e.g. a digest of what it holds): when
    /// one with the key waits in the spool or was sent, nothing is written.
    pub fn put_keyed(
        &self,
        key: Option<&str>,
        body: &[u8],
        ctype: &str,
        headers: &[(String, String)],
    ) -> Result<(), UploadError> {
        let key = key.filter(|k| valid_key(k));
        if key.is_some_and(|k| self.has(k)) {
            return Ok(());
        }
        std::fs::create_dir_all(&self.dir).map_err(|source| UploadError::Spool {
            path: self.dir.clone(),
            source,
        })?;
        let mut stem = format!(
            "{:020}-{:06}",
            jiff::Timestamp::now().as_nanosecond(),
            self.seq.fetch_add(1, Ordering::Relaxed) % 1_000_000
        );
        if let Some(k) = key {
            stem.push_str("-k");
            stem.push_str(k);
        }
        // The first line: the content type alone, or (with headers) a JSON object of both.
        let head = if headers.is_empty() {
            ctype.to_string()
        } else {
            serde_json::json!({"content_type": ctype, "headers": headers}).to_string()
        };
        let mut data = Vec::with_capacity(body.len() + head.len() + 1);
        data.extend(head.as_bytes());
        data.push(b'\n');
        data.extend(body);
        let tmp = self.dir.join(format!("{stem}.partial"));
        let name = self.dir.join(format!("{stem}.upload"));
        std::fs::write(&tmp, &data)
            .and_then(|()| std::fs::rename(&tmp, &name))
            .map_err(|source| {
                let _ = std::fs::remove_file(&tmp);
                UploadError::Spool {
                    path: name.clone(),
                    source,
                }
            })?;
        self.stats.spooled.fetch_add(1, Ordering::Relaxed);
        if let Some(k) = key {
            crate::sync::lock(&self.keys).pending.insert(k.to_string());
        }
        // Oldest first out until the spool fits.
        let mut files = self.files();
        let size = |f: &Path| std::fs::metadata(f).map(|m| m.len()).unwrap_or(0);
        let mut total: u64 = files.iter().map(|f| size(f)).sum();
        while total > self.limit && files.len() > 1 {
            let f = files.remove(0);
            total -= size(&f);
            let _ = std::fs::remove_file(&f);
            self.forget(&f);
            self.stats.dropped.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// A spooled upload the intake refused for good, moved under `refused/` (kept for a
    /// person to look at, never sent again; the oldest go first past 16 of them).
    pub(super) fn set_aside(&self, f: &Path) {
        self.forget(f);
        let dir = self.dir.join("refused");
        let _ = std::fs::create_dir_all(&dir);
        if let Some(name) = f.file_name() {
            let _ = std::fs::rename(f, dir.join(name));
        }
        let _ = std::fs::remove_file(f);
        if let Ok(rd) = std::fs::read_dir(&dir) {
            let mut kept: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
            kept.sort();
            while kept.len() > 16 {
                let _ = std::fs::remove_file(kept.remove(0));
            }
        }
    }
}

type Spooled = (String, Vec<(String, String)>, Vec<u8>);

pub(super) fn read_spooled(f: &Path) -> Option<Spooled> {
    let data = std::fs::read(f).ok()?;
    let nl = data.iter().position(|&b| b == b'\n')?;
    let head = String::from_utf8(data[..nl].to_vec()).ok()?;
    let (ctype, headers) = if head.starts_with('{') {
        let v: serde_json::Value = serde_json::from_str(&head).ok()?;
        (
            v["content_type"].as_str()?.to_string(),
            serde_json::from_value(v["headers"].clone()).ok()?,
        )
    } else {
        (head, Vec::new())
    };
    Some((ctype, headers, data[nl + 1..].to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_keyed_upload_is_spooled_once_and_never_again_once_sent() {
        let dir = tempfile::tempdir().expect("dir");
        let spool = || Spool::new(dir.path().to_path_buf(), 1 << 20, Arc::default());
        let s = spool();
        let key = "0123456789abcdef0123456789abcdef";
        s.put_keyed(Some(key), b"one", "text/plain", &[])
            .expect("put");
        s.put_keyed(Some(key), b"one", "text/plain", &[])
            .expect("again");
        assert_eq!(s.files().len(), 1, "put twice, spooled once");
        // A restart finds it waiting.
        let s = spool();
        s.put_keyed(Some(key), b"one", "text/plain", &[])
            .expect("after a restart");
        let files = s.files();
        assert_eq!(files.len(), 1);
        s.sent(&files[0]);
        std::fs::remove_file(&files[0]).expect("sent");
        // Sent, before and after a restart: put again, nothing is spooled.
        for s in [s, spool()] {
            s.put_keyed(Some(key), b"one", "text/plain", &[])
                .expect("put");
            assert!(s.files().is_empty());
        }
        // Unkeyed uploads are spooled each time; other keys too.
        let s = spool();
        s.put(b"x", "text/plain", &[]).expect("put");
        s.put(b"x", "text/plain", &[]).expect("put");
        s.put_keyed(Some("ab"), b"y", "text/plain", &[])
            .expect("put");
        assert_eq!(s.files().len(), 3);
        // A key that is no hex is no key.
        s.put_keyed(Some("../x"), b"z", "text/plain", &[])
            .expect("put");
        s.put_keyed(Some("../x"), b"z", "text/plain", &[])
            .expect("put");
        assert_eq!(s.files().len(), 5);
    }
}
