//! The memory every upload in flight may hold together, in bytes: its body as it is read,
//! its attachments decompressed, the profiles decoded for their top tables, from the first
//! byte read until it is stored. An upload reserves what it will hold before it holds it
//! (a compressed part's stated size, checked as it decompresses); when the budget has no
//! room, the upload is answered 503 with Retry-After, never 202. What one upload may hold
//! decompressed is bounded too (`upload_decompressed_mb`).

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Permits are KiB: a semaphore holds at most `usize::MAX >> 3` of them, and a u32 of KiB is
/// 4 TiB, more than any budget.
const UNIT: u64 = 1024;

fn units(bytes: u64) -> u32 {
    u32::try_from(bytes.div_ceil(UNIT)).unwrap_or(u32::MAX)
}

/// The budget of all uploads in flight.
#[derive(Clone)]
pub struct Budget {
    permits: Arc<Semaphore>,
    total: u64,
}

impl Budget {
    pub fn new(bytes: u64) -> Budget {
        let n = usize::try_from(bytes.div_ceil(UNIT)).unwrap_or(usize::MAX >> 4);
        Budget {
            permits: Arc::new(Semaphore::new(n.min(Semaphore::MAX_PERMITS))),
            total: bytes,
        }
    }

    /// Bytes of the budget.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Bytes held by uploads in flight now.
    pub fn used(&self) -> u64 {
        let free = self.permits.available_permits() as u64 * UNIT;
        self.total.saturating_sub(free)
    }

    /// A reservation of `bytes`, waiting for room (for the queue's replay, which has no
    /// client to answer 503; more than the whole budget is cut to it).
    pub async fn reserve(&self, bytes: u64) -> Reservation {
        let n = units(bytes.min(self.total)).max(1);
        match Arc::clone(&self.permits).acquire_many_owned(n).await {
            Ok(permit) => Reservation {
                budget: self.clone(),
                permit,
            },
            // The semaphore is never closed.
            Err(_) => unreachable!("the budget's semaphore is never closed"),
        }
    }

    /// A reservation of `bytes` now, or None when the budget has no room for them.
    pub fn try_reserve(&self, bytes: u64) -> Option<Reservation> {
        let permit = Arc::clone(&self.permits)
            .try_acquire_many_owned(units(bytes).max(1))
            .ok()?;
        Some(Reservation {
            budget: self.clone(),
            permit,
        })
    }
}

/// What one upload holds of the budget; given back when it is dropped.
pub struct Reservation {
    budget: Budget,
    permit: OwnedSemaphorePermit,
}

impl Reservation {
    /// Bytes reserved.
    pub fn bytes(&self) -> u64 {
        self.permit.num_permits() as u64 * UNIT
    }

    /// `bytes` more, or false (nothing taken) when the budget has no room.
    pub fn grow(&mut self, bytes: u64) -> bool {
        match self.budget.try_reserve(bytes) {
            Some(more) => {
                self.permit.merge(more.permit);
                true
            }
            None => false,
        }
    }

    /// Gives back what is held beyond `bytes`.
    pub fn shrink_to(&mut self, bytes: u64) {
        let keep = units(bytes).max(1) as usize;
        let have = self.permit.num_permits();
        if have > keep {
            drop(self.permit.split(have - keep));
        }
    }
}

/// What a compressed attachment says it holds decompressed, before it is decompressed:
/// gzip's ISIZE (the last member's size mod 2^32), a zstd frame's content size, an lz4
/// frame's content size, or the bytes themselves when uncompressed. None when it does not
/// say; the decompression is bounded by what was reserved either way.
pub fn stated_size(data: &[u8]) -> Option<u64> {
    use crate::pprof::decode::{Compression, sniff};
    match sniff(data) {
        Compression::None => Some(data.len() as u64),
        Compression::Gzip => {
            let tail: [u8; 4] = data.get(data.len().checked_sub(4)?..)?.try_into().ok()?;
            Some(u64::from(u32::from_le_bytes(tail)))
        }
        Compression::Zstd => zstd_content_size(data),
        Compression::Lz4 => lz4_content_size(data),
    }
}

/// A zstd frame header's Frame_Content_Size (RFC 8878 3.1.1.1), when present.
fn zstd_content_size(d: &[u8]) -> Option<u64> {
    let fhd = *d.get(4)?;
    let fcs_flag = fhd >> 6;
    let single_segment = fhd & 0x20 != 0;
    let did_flag = fhd & 0x03;
    let mut at = 5 + usize::from(!single_segment);
    at += [0, 1, 2, 4][usize::from(did_flag)];
    let size = match (fcs_flag, single_segment) {
        (0, false) => return None,
        (0, true) => 1,
        (1, _) => 2,
        (2, _) => 4,
        _ => 8,
    };
    let b = d.get(at..at + size)?;
    let mut v = 0u64;
    for (i, x) in b.iter().enumerate() {
        v |= u64::from(*x) << (8 * i);
    }
    Some(if size == 2 { v + 256 } else { v })
}

/// An lz4 frame descriptor's Content Size, when its flag says it is there.
fn lz4_content_size(d: &[u8]) -> Option<u64> {
    let flg = *d.get(4)?;
    if flg & 0x08 == 0 {
        return None;
    }
    let b: [u8; 8] = d.get(6..14)?.try_into().ok()?;
    Some(u64::from_le_bytes(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_come_out_of_one_budget_and_go_back() {
        let b = Budget::new(1 << 20);
        let mut a = b.try_reserve(600 << 10).expect("room");
        assert!(b.try_reserve(600 << 10).is_none(), "no room for a second");
        assert!(a.grow(300 << 10));
        assert!(!a.grow(300 << 10));
        assert_eq!(b.used(), 900 << 10);
        a.shrink_to(100 << 10);
        assert_eq!(b.used(), 100 << 10);
        drop(a);
        assert_eq!(b.used(), 0);
    }

    #[test]
    fn compressed_parts_say_their_size_before_they_are_decompressed() {
        let raw = vec![7u8; 300_000];
        let gz = crate::pprof::gzip_fast(&raw);
        assert_eq!(stated_size(&gz), Some(300_000));
        let mut lz = lz4_flex::frame::FrameEncoder::with_frame_info(
            lz4_flex::frame::FrameInfo::new().content_size(Some(300_000)),
            Vec::new(),
        );
        std::io::Write::write_all(&mut lz, &raw).expect("lz4");
        let lz = lz.finish().expect("lz4");
        assert_eq!(stated_size(&lz), Some(300_000));
        // A zstd frame with a single segment and a 4-byte content size: 300,000.
        let mut zs = vec![0x28, 0xb5, 0x2f, 0xfd, 0b1010_0000];
        zs.extend_from_slice(&300_000u32.to_le_bytes());
        assert_eq!(stated_size(&zs), Some(300_000));
        assert_eq!(stated_size(b"plain"), Some(5));
    }
}
