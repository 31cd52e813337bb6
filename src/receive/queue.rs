//! The durable queue between acknowledging an upload and processing it: records appended to
//! segment files by one writer thread that syncs once per batch (group commit), so an upload
//! is on disk before its 2xx whatever the rate; a record is done once processed (each done
//! record's index appended to `<segment>.done`, so records done out of order are not
//! processed again), a segment whose records are all done is deleted, and what was not done
//! is replayed at the next start (also after kill -9), read one record at a time. The bytes
//! not yet done are bounded (`cache_capacity_mb`): past it an upload is refused with 503 and
//! counted, so the client keeps it and retries.
//!
//! Record: `APQ2`, payload length (u32 LE), CRC-32 of the payload (u64 LE), payload. A
//! torn record at a segment's end (a crash mid-write, before its sync) fails its length or
//! checksum and is dropped with the rest of that segment: it was never acknowledged.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

const MAGIC: &[u8; 4] = b"APQ2";
const HEADER: usize = 16;
/// A segment is closed past this size and a new one begun.
const SEGMENT_BYTES: u64 = 8 << 20;
/// A batch syncs at most this much at once.
const BATCH_BYTES: usize = 8 << 20;

/// Where a record is: its segment and its index in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct RecordId {
    pub segment: u64,
    pub index: u32,
}

#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    #[error("the queue is full ({used} of {capacity} bytes wait to be processed)")]
    Full { used: u64, capacity: u64 },
    #[error("the queue cannot be written: {0}")]
    Io(String),
    /// The queue's directory or a segment of it cannot be read at start.
    #[error("{0}")]
    Open(String),
}

impl From<String> for QueueError {
    fn from(message: String) -> QueueError {
        QueueError::Open(message)
    }
}

/// The payload's checksum: CRC-32 (zlib's, vectorised), widened to the field's 8 bytes.
fn checksum(data: &[u8]) -> u64 {
    let mut c = flate2::Crc::new();
    c.update(data);
    u64::from(c.sum())
}

struct Append {
    payload: Vec<u8>,
    done: tokio::sync::oneshot::Sender<Result<RecordId, QueueError>>,
}

#[derive(Default)]
struct Segment {
    /// Records written to it.
    written: u32,
    done: Vec<bool>,
    /// Records done so far.
    done_count: u32,
    /// Payload bytes of each record, released when done.
    sizes: Vec<u64>,
    /// The writer moved on: once all is done, the files go.
    closed: bool,
    /// `<segment>.done`, held open for appending: one u32 (LE) per record done.
    done_file: Option<std::fs::File>,
}

impl Segment {
    fn all_done(&self) -> bool {
        self.closed && self.done_count == self.written
    }
}

struct Shared {
    dir: PathBuf,
    capacity: u64,
    used: AtomicU64,
    segments: Mutex<BTreeMap<u64, Segment>>,
}

/// The queue's handle: append (async, answered after the sync) and mark done.
#[derive(Clone)]
pub struct Queue {
    tx: tokio::sync::mpsc::Sender<Append>,
    shared: Arc<Shared>,
}

/// A record found at start that was not done: where it is, read with `Queue::read`.
pub struct Replayed {
    pub id: RecordId,
    offset: u64,
    len: u32,
}

fn seg_path(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("{n:012}.seg"))
}

fn done_path(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("{n:012}.done"))
}

/// One segment's valid records (stopping at a torn one), as (payload offset, length): each
/// payload is read and checked in turn into one buffer, so a segment is never held whole.
fn scan_segment(path: &Path) -> std::io::Result<Vec<(u64, u32)>> {
    let mut f = std::io::BufReader::new(std::fs::File::open(path)?);
    let mut out = Vec::new();
    let mut at = 0u64;
    let mut payload = Vec::new();
    loop {
        let mut head = [0u8; HEADER];
        if f.read_exact(&mut head).is_err() || &head[..4] != MAGIC {
            break;
        }
        let len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
        let sum = u64::from_le_bytes(head[8..16].try_into().unwrap_or_default());
        payload.resize(len as usize, 0);
        if f.read_exact(&mut payload).is_err() || checksum(&payload) != sum {
            break;
        }
        out.push((at + HEADER as u64, len));
        at += HEADER as u64 + u64::from(len);
    }
    Ok(out)
}

/// The indices `<segment>.done` lists.
fn read_done(path: &Path) -> std::collections::HashSet<u32> {
    std::fs::read(path)
        .unwrap_or_default()
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

impl Queue {
    /// Opens the queue in `dir` (made if missing): the records not done are returned to be
    /// processed again, and a writer thread starts on a new segment.
    pub fn open(dir: &Path, capacity: u64) -> Result<(Queue, Vec<Replayed>), QueueError> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut numbers: Vec<u64> = std::fs::read_dir(dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                name.strip_suffix(".seg")?.parse().ok()
            })
            .collect();
        numbers.sort_unstable();
        let mut segments = BTreeMap::new();
        let mut replay = Vec::new();
        let mut used = 0;
        for &n in &numbers {
            let records = scan_segment(&seg_path(dir, n))
                .map_err(|e| format!("{}: {e}", seg_path(dir, n).display()))?;
            let finished = read_done(&done_path(dir, n));
            let mut seg = Segment {
                written: records.len() as u32,
                closed: true,
                ..Default::default()
            };
            for (i, (offset, len)) in records.into_iter().enumerate() {
                let done = finished.contains(&(i as u32));
                seg.done.push(done);
                seg.done_count += u32::from(done);
                seg.sizes.push(if done { 0 } else { u64::from(len) });
                if !done {
                    used += u64::from(len);
                    replay.push(Replayed {
                        id: RecordId {
                            segment: n,
                            index: i as u32,
                        },
                        offset,
                        len,
                    });
                }
            }
            if seg.all_done() {
                let _ = std::fs::remove_file(seg_path(dir, n));
                let _ = std::fs::remove_file(done_path(dir, n));
            } else {
                segments.insert(n, seg);
            }
        }
        let next = numbers.last().map_or(1, |n| n + 1);
        let shared = Arc::new(Shared {
            dir: dir.to_path_buf(),
            capacity,
            used: AtomicU64::new(used),
            segments: Mutex::new(segments),
        });
        // Up to 1024 appends wait for the writer; more wait in their handlers.
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Append>(1024);
        let s = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("receive-queue".into())
            .spawn(move || writer(&s, next, &mut rx))
            .map_err(|e| format!("cannot start the queue's writer: {e}"))?;
        Ok((Queue { tx, shared }, replay))
    }

    /// The payload of a record found at start, read now and checked again.
    pub fn read(&self, r: &Replayed) -> std::io::Result<Vec<u8>> {
        use std::os::unix::fs::FileExt;
        let f = std::fs::File::open(seg_path(&self.shared.dir, r.id.segment))?;
        let mut head = [0u8; HEADER];
        f.read_exact_at(&mut head, r.offset - HEADER as u64)?;
        let mut payload = vec![0u8; r.len as usize];
        f.read_exact_at(&mut payload, r.offset)?;
        let sum = u64::from_le_bytes(head[8..16].try_into().unwrap_or_default());
        if checksum(&payload) != sum {
            return Err(std::io::Error::other("the record changed on disk"));
        }
        Ok(payload)
    }

    /// Bytes waiting to be processed.
    pub fn used(&self) -> u64 {
        self.shared.used.load(Ordering::Relaxed)
    }

    /// Appends a record; resolves once it is synced to disk.
    pub async fn append(&self, payload: Vec<u8>) -> Result<RecordId, QueueError> {
        let len = payload.len() as u64;
        let capacity = self.shared.capacity;
        // Reserve the bytes first: concurrent appends cannot overshoot the capacity.
        let reserved = self
            .shared
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
                (u + len <= capacity).then_some(u + len)
            });
        if let Err(used) = reserved {
            return Err(QueueError::Full { used, capacity });
        }
        let (done, rx) = tokio::sync::oneshot::channel();
        let sent = self.tx.send(Append { payload, done }).await;
        let r = match sent {
            Ok(()) => rx
                .await
                .unwrap_or_else(|_| Err(QueueError::Io("the writer stopped".into()))),
            _ => Err(QueueError::Io("the writer stopped".into())),
        };
        if r.is_err() {
            self.shared.used.fetch_sub(len, Ordering::AcqRel);
        }
        r
    }

    /// The record was processed: its bytes are released, and its segment deleted once every
    /// record in it is done.
    pub fn done(&self, id: RecordId) {
        let s = &self.shared;
        let mut segs = crate::sync::lock(&s.segments);
        let Some(seg) = segs.get_mut(&id.segment) else {
            return;
        };
        let i = id.index as usize;
        if i >= seg.done.len() || seg.done[i] {
            return;
        }
        seg.done[i] = true;
        seg.done_count += 1;
        s.used.fetch_sub(seg.sizes[i], Ordering::AcqRel);
        seg.sizes[i] = 0;
        if seg.all_done() {
            segs.remove(&id.segment);
            let _ = std::fs::remove_file(seg_path(&s.dir, id.segment));
            let _ = std::fs::remove_file(done_path(&s.dir, id.segment));
        } else {
            // Not synced: after a crash of the machine a few done records may be processed
            // again; after a crash of agentprof (kill -9) the page cache keeps it.
            if seg.done_file.is_none() {
                seg.done_file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(done_path(&s.dir, id.segment))
                    .ok();
            }
            if let Some(f) = seg.done_file.as_mut() {
                let _ = f.write_all(&id.index.to_le_bytes());
            }
        }
    }
}

/// The next segment to append to: the full one closed (and removed, when every record in it
/// is stored), a new one created, its name durable before anything in it is acknowledged.
fn roll(
    s: &Shared,
    number: &mut u64,
    file: &mut Option<(std::fs::File, u64)>,
) -> std::io::Result<()> {
    if file.take().is_some() {
        let mut segs = crate::sync::lock(&s.segments);
        if let Some(seg) = segs.get_mut(number) {
            seg.closed = true;
            if seg.all_done() {
                segs.remove(number);
                let _ = std::fs::remove_file(seg_path(&s.dir, *number));
                let _ = std::fs::remove_file(done_path(&s.dir, *number));
            }
        }
        *number += 1;
    }
    let f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(seg_path(&s.dir, *number))?;
    // The new segment's name is durable before anything in it is acknowledged.
    std::fs::File::open(&s.dir)?.sync_all()?;
    crate::sync::lock(&s.segments).insert(*number, Segment::default());
    *file = Some((f, 0));
    Ok(())
}

/// The writer: takes what waits, writes it, syncs once, answers every append of the batch.
fn writer(s: &Shared, mut number: u64, rx: &mut tokio::sync::mpsc::Receiver<Append>) {
    let mut file: Option<(std::fs::File, u64)> = None;
    while let Some(first) = rx.blocking_recv() {
        let mut batch = vec![first];
        let mut bytes = batch[0].payload.len();
        while bytes < BATCH_BYTES {
            match rx.try_recv() {
                Ok(a) => {
                    bytes += a.payload.len();
                    batch.push(a);
                }
                Err(_) => break,
            }
        }
        let mut ids = Vec::with_capacity(batch.len());
        let result = (|| -> std::io::Result<()> {
            for a in &batch {
                if file.as_ref().is_none_or(|(_, size)| *size >= SEGMENT_BYTES) {
                    roll(s, &mut number, &mut file)?;
                }
                let Some((f, size)) = file.as_mut() else {
                    return Err(std::io::Error::other("no segment"));
                };
                let mut head = [0u8; HEADER];
                head[..4].copy_from_slice(MAGIC);
                head[4..8].copy_from_slice(&(a.payload.len() as u32).to_le_bytes());
                head[8..16].copy_from_slice(&checksum(&a.payload).to_le_bytes());
                f.write_all(&head)?;
                f.write_all(&a.payload)?;
                *size += (HEADER + a.payload.len()) as u64;
                let mut segs = crate::sync::lock(&s.segments);
                let seg = segs.entry(number).or_default();
                ids.push(RecordId {
                    segment: number,
                    index: seg.written,
                });
                seg.written += 1;
                seg.done.push(false);
                seg.sizes.push(a.payload.len() as u64);
            }
            if let Some((f, _)) = &file {
                f.sync_data()?;
            }
            Ok(())
        })();
        match result {
            Ok(()) => {
                for (a, id) in batch.into_iter().zip(ids) {
                    let _ = a.done.send(Ok(id));
                }
            }
            Err(e) => {
                // What was written of a failed batch is dropped from the books: it was not
                // acknowledged, so the next start need not replay it either way.
                let mut segs = crate::sync::lock(&s.segments);
                for id in &ids {
                    if let Some(seg) = segs.get_mut(&id.segment) {
                        seg.done[id.index as usize] = true;
                        seg.done_count += 1;
                        seg.sizes[id.index as usize] = 0;
                    }
                }
                drop(segs);
                file = None;
                for a in batch {
                    let _ = a.done.send(Err(QueueError::Io(e.to_string())));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
    }

    #[test]
    fn records_not_done_are_replayed_and_done_segments_go() {
        let dir = tempfile::tempdir().expect("dir");
        let rt = rt();
        let ids: Vec<RecordId> = {
            let (q, replay) = Queue::open(dir.path(), 1 << 20).expect("open");
            assert!(replay.is_empty());
            let ids = rt.block_on(async {
                let mut ids = Vec::new();
                for i in 0..5u8 {
                    ids.push(q.append(vec![i; 100]).await.expect("append"));
                }
                ids
            });
            assert_eq!(q.used(), 500);
            q.done(ids[0]);
            q.done(ids[2]);
            assert_eq!(q.used(), 300);
            ids
        };
        // Reopened (as after kill -9): records 1, 3, 4 come back; 0 and 2 (done out of
        // order) are not processed again.
        let (q, replay) = Queue::open(dir.path(), 1 << 20).expect("reopen");
        let got: Vec<(RecordId, u8)> = replay
            .iter()
            .map(|r| (r.id, q.read(r).expect("read")[0]))
            .collect();
        assert_eq!(got, vec![(ids[1], 1), (ids[3], 3), (ids[4], 4)]);
        for r in &replay {
            q.done(r.id);
        }
        assert_eq!(q.used(), 0);
        // The old segment is gone once all of it is done.
        assert!(!seg_path(dir.path(), ids[0].segment).exists());
    }

    #[test]
    fn a_full_queue_refuses_and_a_torn_tail_is_dropped() {
        let dir = tempfile::tempdir().expect("dir");
        let rt = rt();
        let (q, _) = Queue::open(dir.path(), 250).expect("open");
        rt.block_on(async {
            q.append(vec![1; 100]).await.expect("1");
            q.append(vec![2; 100]).await.expect("2");
            let e = q.append(vec![3; 100]).await.expect_err("full");
            assert!(
                matches!(
                    e,
                    QueueError::Full {
                        used: 200,
                        capacity: 250
                    }
                ),
                "{e}"
            );
        });
        drop(q);
        // A crash in the middle of a third record's write.
        let seg = std::fs::read_dir(dir.path())
            .expect("dir")
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|x| x == "seg"))
            .expect("segment");
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&seg)
            .expect("open");
        f.write_all(b"APQ2\x64\0\0\0partial").expect("write");
        drop(f);
        let (_, replay) = Queue::open(dir.path(), 250).expect("reopen");
        assert_eq!(replay.len(), 2);
    }
}
