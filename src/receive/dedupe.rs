//! Stored exactly once: each upload's digest (SHA-256 of what it holds: tags, times, family,
//! event.json's other keys, every attachment's name and bytes) is written in its
//! uploads.jsonl line, and an upload whose digest was stored recently is acknowledged and
//! not stored again. That covers the two ways one upload could be stored twice:
//!
//! - a kill -9 after an upload's line was written and before the queue marked its record
//!   done: the next start replays the record, finds its digest in the file's tail, and only
//!   marks it done;
//! - a kill -9 after a record was made durable and before its 202 went out: the client sends
//!   it again, and the retry's digest is the replayed one's.
//!
//! The digests of the uploads.jsonl lines of the last [`TAIL`] bytes are read at start; the
//! last [`KEPT`] are kept in memory (about 4 MiB).

use std::collections::{HashSet, VecDeque};
use std::io::{BufRead, Read, Seek, SeekFrom};
use std::path::Path;

use super::form::Upload;

/// The end of uploads.jsonl read at start for digests (about 40,000 uploads).
const TAIL: u64 = 64 << 20;
/// Digests remembered.
const KEPT: usize = 100_000;

/// The digest of what an upload holds, as 32 hex digits (the first 128 bits of SHA-256).
pub fn digest(up: &Upload) -> String {
    let mut h = ring::digest::Context::new(&ring::digest::SHA256);
    let mut field = |bytes: &[u8]| {
        h.update(&(bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    for t in &up.tags {
        field(t.as_bytes());
    }
    field(b"|");
    let time = |t: Option<jiff::Timestamp>| t.map_or(0, |t| t.as_nanosecond());
    field(&time(up.start).to_le_bytes());
    field(&time(up.end).to_le_bytes());
    field(up.family.as_deref().unwrap_or_default().as_bytes());
    field(
        up.event
            .as_ref()
            .map(|e| e.to_string())
            .unwrap_or_default()
            .as_bytes(),
    );
    for a in &up.attachments {
        field(a.name.as_bytes());
        field(&a.data);
    }
    let d = h.finish();
    d.as_ref()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The digests stored recently, and those being stored now.
pub struct Seen {
    set: HashSet<String>,
    order: VecDeque<String>,
    /// Being stored by a worker: a second copy waits for the first's outcome.
    claimed: HashSet<String>,
}

impl Seen {
    /// The digests of the last lines of `<out>/uploads.jsonl` (none when it is missing).
    pub fn load(out: &Path) -> Seen {
        let mut seen = Seen {
            set: HashSet::new(),
            order: VecDeque::new(),
            claimed: HashSet::new(),
        };
        let Ok(mut f) = std::fs::File::open(out.join("uploads.jsonl")) else {
            return seen;
        };
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        let from = len.saturating_sub(TAIL);
        if f.seek(SeekFrom::Start(from)).is_err() {
            return seen;
        }
        // Line by line, so that reading it holds one line, not the tail. A cut first line
        // (the tail began inside it) has no digest to find, or a whole one.
        let mut lines = std::io::BufReader::with_capacity(64 << 10, f.take(TAIL));
        let mut line = Vec::new();
        while lines.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
            if let Some(d) = digest_in(&line) {
                seen.remember(d.to_string());
            }
            line.clear();
        }
        seen
    }

    /// Claims `d` for storing: false when it was stored recently or is being stored.
    pub fn claim(&mut self, d: &str) -> bool {
        if self.set.contains(d) || self.claimed.contains(d) {
            return false;
        }
        self.claimed.insert(d.to_string());
        true
    }

    /// The claim's outcome: stored (remembered) or not (another copy may store it).
    pub fn release(&mut self, d: &str, stored: bool) {
        self.claimed.remove(d);
        if stored {
            self.remember(d.to_string());
        }
    }

    /// Whether `d` is stored (recently) or being stored.
    #[cfg(test)]
    pub fn has(&self, d: &str) -> bool {
        self.set.contains(d) || self.claimed.contains(d)
    }

    fn remember(&mut self, d: String) {
        if self.set.insert(d.clone()) {
            self.order.push_back(d);
            while self.order.len() > KEPT {
                if let Some(old) = self.order.pop_front() {
                    self.set.remove(&old);
                }
            }
        }
    }
}

/// The `"digest":"…"` value of an uploads.jsonl line.
fn digest_in(line: &[u8]) -> Option<&str> {
    const KEY: &[u8] = b"\"digest\":\"";
    let at = line.windows(KEY.len()).position(|w| w == KEY)? + KEY.len();
    let rest = &line[at..];
    let end = rest.iter().position(|&b| b == b'"')?;
    let d = std::str::from_utf8(&rest[..end]).ok()?;
    (d.len() == 32 && d.bytes().all(|b| b.is_ascii_hexdigit())).then_some(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_of_uploads_jsonl_gives_its_digests() {
        let dir = tempfile::tempdir().expect("dir");
        let d1 = "0123456789abcdef0123456789abcdef";
        let d2 = "fedcba9876543210fedcba9876543210";
        std::fs::write(
            dir.path().join("uploads.jsonl"),
            format!(
                "{{\"service\":\"a\",\"digest\":\"{d1}\"}}\n{{\"service\":\"b\"}}\n\
                 {{\"digest\":\"not-hex\"}}\n{{\"x\":1,\"digest\":\"{d2}\",\"y\":2}}\n"
            ),
        )
        .expect("write");
        let mut seen = Seen::load(dir.path());
        assert!(seen.has(d1) && seen.has(d2));
        assert!(!seen.claim(d1));
        let new = "00000000000000000000000000000001";
        assert!(seen.claim(new));
        assert!(!seen.claim(new), "claimed twice");
        seen.release(new, false);
        assert!(seen.claim(new), "free again after a failed store");
        seen.release(new, true);
        assert!(!seen.claim(new));
        assert!(!Seen::load(&dir.path().join("none")).has(d1));
    }
}
