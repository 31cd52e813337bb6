//! The memory a server's requests in flight may hold together, in bytes: `receive`'s
//! uploads (a body as it is read, its attachments decompressed, the profiles decoded for
//! their top tables, until it is stored) and `ui`'s profiles (decompressed, decoded, and
//! kept for the next request). What a request will hold is reserved before it is held (a
//! compressed part's stated size, checked as it decompresses); when the budget has no room
//! the request is refused with 503, never answered with memory the server does not have.

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
    /// A reservation that grows past `small` bytes must leave `lane` bytes free, so that
    /// large requests together cannot starve small ones (0: no lane).
    small: u64,
    lane: u64,
}

impl Budget {
    pub fn new(bytes: u64) -> Budget {
        let n = usize::try_from(bytes.div_ceil(UNIT)).unwrap_or(usize::MAX >> 4);
        Budget {
            permits: Arc::new(Semaphore::new(n.min(Semaphore::MAX_PERMITS))),
            total: bytes,
            small: u64::MAX,
            lane: 0,
        }
    }

    /// The same budget with `lane` bytes that only reservations of at most `small` bytes may
    /// take: however many large requests arrive, small ones still find room (`receive`'s
    /// dd-trace uploads hold a few hundred KiB; a sender of large bodies waits or gets 503).
    pub fn with_lane(mut self, small: u64, lane: u64) -> Budget {
        self.small = small;
        self.lane = lane.min(self.total);
        self
    }

    /// Whether a reservation that will hold `after` bytes may take `more` of them now: one
    /// that may use the lane, up to `small`; else only while `lane` bytes stay free. (Checked
    /// before the permits are taken: two large requests at the same instant may each see the
    /// lane free and take a part of it, by at most what they take then.)
    fn lane_allows(&self, lane: bool, after: u64, more: u64) -> bool {
        (lane && after <= self.small)
            || self.permits.available_permits() as u64 * UNIT >= more.saturating_add(self.lane)
    }

    /// Bytes of the budget.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The most a reservation could ever hold once it holds `after` bytes, with nothing else
    /// in flight: the whole budget while it may take the lane (and is small), else the budget
    /// less the lane.
    fn ceiling(&self, lane: bool, after: u64) -> u64 {
        if lane && after <= self.small {
            self.total
        } else {
            self.total - self.lane
        }
    }

    /// Bytes held by uploads in flight now.
    pub fn used(&self) -> u64 {
        let free = self.permits.available_permits() as u64 * UNIT;
        self.total.saturating_sub(free)
    }

    /// Gives the allocator's free memory back to the system after each burst, for good:
    /// every 250 ms, when what the requests hold fell by 32 MiB or more from its highest
    /// since the last time. (The small buffers of a burst's requests are freed into the
    /// allocator's arenas, which otherwise keep them resident for the next burst.)
    pub async fn give_back_after_bursts(self) {
        const TICK: std::time::Duration = std::time::Duration::from_millis(250);
        const FALL: u64 = 32 << 20;
        let mut high = 0;
        loop {
            tokio::time::sleep(TICK).await;
            let now = self.used();
            high = high.max(now);
            if high - now >= FALL {
                let _ = tokio::task::spawn_blocking(crate::procstat::give_back_free_memory).await;
                high = now;
            }
        }
    }

    /// A reservation of `bytes`, waiting for room (for the queue's replay, which has no
    /// client to answer 503; more than the whole budget is cut to it).
    pub async fn reserve(&self, bytes: u64) -> Reservation {
        let n = units(bytes.min(self.total)).max(1);
        match Arc::clone(&self.permits).acquire_many_owned(n).await {
            Ok(permit) => Reservation {
                budget: self.clone(),
                permit,
                lane: true,
            },
            // The semaphore is never closed.
            Err(_) => unreachable!("the budget's semaphore is never closed"),
        }
    }

    /// A reservation of `bytes` now, or None when the budget has no room for them.
    pub fn try_reserve(&self, bytes: u64) -> Option<Reservation> {
        self.try_reserve_in(true, bytes)
    }

    /// As `try_reserve`, for a request that says it is large (or does not say): it leaves the
    /// lane kept for small ones free, from its first byte.
    pub fn try_reserve_large(&self, bytes: u64) -> Option<Reservation> {
        self.try_reserve_in(false, bytes)
    }

    fn try_reserve_in(&self, lane: bool, bytes: u64) -> Option<Reservation> {
        Some(Reservation {
            budget: self.clone(),
            permit: self.take(lane, bytes, bytes)?,
            lane,
        })
    }

    /// `more` bytes' permits for a reservation that will hold `after` bytes, when the budget
    /// (and the lane) has room.
    fn take(&self, lane: bool, after: u64, more: u64) -> Option<OwnedSemaphorePermit> {
        if !self.lane_allows(lane, after, more) {
            return None;
        }
        Arc::clone(&self.permits)
            .try_acquire_many_owned(units(more).max(1))
            .ok()
    }
}

/// What one upload holds of the budget; given back when it is dropped.
pub struct Reservation {
    budget: Budget,
    permit: OwnedSemaphorePermit,
    /// May take the lane kept for small reservations (while it is small).
    lane: bool,
}

impl Reservation {
    /// Bytes reserved.
    pub fn bytes(&self) -> u64 {
        self.permit.num_permits() as u64 * UNIT
    }

    /// `bytes` more, or false (nothing taken) when the budget has no room.
    pub fn grow(&mut self, bytes: u64) -> bool {
        let after = self.bytes().saturating_add(bytes);
        match self.budget.take(self.lane, after, bytes) {
            Some(more) => {
                self.permit.merge(more);
                true
            }
            None => false,
        }
    }

    /// The whole budget this reservation is part of.
    pub fn total(&self) -> u64 {
        self.budget.total()
    }

    /// Whether `bytes` more could ever be held, however long the request waited: false when
    /// they are past what one reservation may take (the budget, less the lane kept for small
    /// uploads unless this one is small). Such a request is refused for good (413), not asked
    /// to retry (503).
    pub fn could_ever_grow(&self, bytes: u64) -> bool {
        let after = self.bytes().saturating_add(bytes);
        after <= self.budget.ceiling(self.lane, after)
    }

    /// What one reservation may hold at most, when it is large: the budget less the lane.
    pub fn large_ceiling(&self) -> u64 {
        self.budget.ceiling(false, u64::MAX)
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

pub use crate::pprof::stated_size;

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
    fn large_reservations_leave_the_lane_to_small_ones() {
        let b = Budget::new(10 << 20).with_lane(1 << 20, 4 << 20);
        // A large one takes what leaves the lane free, and no more.
        let mut big = b.try_reserve(2 << 20).expect("room");
        assert!(big.grow(4 << 20));
        assert!(!big.grow(1 << 10), "into the lane");
        assert!(b.try_reserve(2 << 20).is_none(), "a second large one");
        // Small ones take the lane.
        let smalls: Vec<_> = (0..4)
            .map(|_| b.try_reserve(1 << 20).expect("lane"))
            .collect();
        assert!(b.try_reserve(1 << 10).is_none(), "all of it held");
        drop(smalls);
        // A small one growing past `small` is held to the lane too.
        let mut s = b.try_reserve(512 << 10).expect("room");
        assert!(!s.grow(1 << 20));
        // One that says it is large leaves the lane free from its first byte.
        assert!(b.try_reserve_large(1 << 10).is_none());
        let mut l = b.try_reserve(256 << 10).expect("lane");
        drop(big);
        assert!(s.grow(1 << 20));
        assert!(l.grow(1 << 10));
        assert!(b.try_reserve_large(1 << 10).is_some());
    }

    #[test]
    fn what_could_never_fit_is_told_from_what_does_not_fit_now() {
        let b = Budget::new(10 << 20).with_lane(1 << 20, 4 << 20);
        let big = b.try_reserve_large(1 << 20).expect("room");
        // Up to the budget less the lane, a large one could grow (if others let go).
        assert!(big.could_ever_grow(5 << 20));
        assert!(!big.could_ever_grow((5 << 20) + (1 << 10)));
        assert_eq!(big.large_ceiling(), 6 << 20);
        // A small one may count on the whole budget while it stays small.
        let small = b.try_reserve(1 << 10).expect("room");
        assert!(small.could_ever_grow(512 << 10));
        assert!(!small.could_ever_grow(7 << 20));
        drop((big, small));
        // Without a lane, the whole budget.
        let plain = Budget::new(1 << 20).try_reserve(1).expect("room");
        assert!(plain.could_ever_grow((1 << 20) - 1024));
        assert!(!plain.could_ever_grow(2 << 20));
    }
}
