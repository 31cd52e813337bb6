//! What the page's server keeps, given back: room made in the memory budget for a request
//! (what is kept and unused goes first, least recently used first), and everything kept
//! dropped when the page has been idle.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::StatusCode;

use super::state::{Problem, ROOM_WAIT, Ui};

impl Ui {
    /// Whether any profile or flamegraph is kept.
    pub fn holds_any(&self) -> bool {
        !crate::sync::lock(&self.cache).is_empty() || !crate::sync::lock(&self.drawn).is_empty()
    }

    /// Drops every kept profile and flamegraph no request is using, and gives the memory
    /// the allocator keeps free back to the system.
    pub fn release(&self) {
        while self.evict_one() {}
        crate::procstat::give_back_free_memory();
    }

    /// `bytes` more for `held` (a new reservation when None), beside `pinned` bytes this
    /// request holds already (the other profile of a compare): what is kept and unused goes
    /// first, least recently used first; then the request waits (at most `ROOM_WAIT`) for
    /// others to finish; else 503. What can never fit is refused at once, with its figure.
    pub(super) fn room(
        &self,
        held: Option<crate::budget::Reservation>,
        bytes: u64,
        pinned: u64,
    ) -> Result<crate::budget::Reservation, Problem> {
        let start = Instant::now();
        let mut held = held;
        let total = self.memory.total();
        let asked = bytes.saturating_add(held.as_ref().map_or(0, |h| h.bytes()));
        if asked.saturating_add(pinned) > total {
            let mib = |b: u64| b.div_ceil(1 << 20);
            let beside = if pinned > 0 {
                format!(" beside the {} MiB the other profile holds", mib(pinned))
            } else {
                String::new()
            };
            return Err(Problem {
                status: StatusCode::SERVICE_UNAVAILABLE,
                message: format!(
                    "this profile needs {} MiB to read{beside}, more than the page's memory \
                     budget of {} MiB (ui --memory-mb)",
                    mib(asked),
                    total >> 20
                ),
            });
        }
        let mut trimmed = false;
        loop {
            // The process's resident memory must leave the room too: estimates fall short
            // and the allocator keeps what was freed, so the reservations alone let it pass
            // the budget (1,125 MiB resident with 50 large profiles under --memory-mb 1024).
            let resident = crate::procstat::self_rss().unwrap_or(0);
            let fits = resident.saturating_add(bytes) <= self.ceiling;
            let got = fits
                && match held.as_mut() {
                    Some(h) => h.grow(bytes),
                    None => {
                        held = self.memory.try_reserve(bytes);
                        held.is_some()
                    }
                };
            if got {
                break;
            }
            if self.evict_one() {
                if !fits {
                    // What it held goes back to the system before resident memory is read.
                    crate::procstat::give_back_free_memory();
                }
                trimmed = !fits;
                continue;
            }
            if !fits && !trimmed {
                // What was given back may still sit with the allocator.
                crate::procstat::give_back_free_memory();
                trimmed = true;
                continue;
            }
            if start.elapsed() > ROOM_WAIT {
                return Err(Problem {
                    status: StatusCode::SERVICE_UNAVAILABLE,
                    message: format!(
                        "the profiles being read and kept hold the page's memory budget \
                         ({} MiB, ui --memory-mb); try again shortly",
                        self.memory.total() >> 20
                    ),
                });
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        held.ok_or_else(|| Problem::unprocessable("no room".into()))
    }

    /// Gives back the least recently used kept profile or flamegraph no request is using;
    /// false when there is none.
    fn evict_one(&self) -> bool {
        let mut drawn = crate::sync::lock(&self.drawn);
        let mut cache = crate::sync::lock(&self.cache);
        let svg = drawn
            .iter()
            .enumerate()
            .filter(|(_, d)| Arc::strong_count(&d.2) == 1)
            .min_by_key(|(_, d)| d.3)
            .map(|(i, d)| (i, d.3));
        let profile = cache
            .iter()
            .enumerate()
            .filter(|(_, c)| {
                // In use: by a request, or by a kept flamegraph of it.
                Arc::strong_count(&c.3)
                    == 1 + drawn.iter().filter(|d| Arc::ptr_eq(&d.0, &c.3)).count()
            })
            .min_by_key(|(_, c)| c.4)
            .map(|(i, c)| (i, c.4));
        match (svg, profile) {
            (Some((i, a)), Some((_, b))) if a <= b => {
                drawn.remove(i);
                true
            }
            (_, Some((j, _))) => {
                let gone = cache.remove(j);
                drawn.retain(|d| !Arc::ptr_eq(&d.0, &gone.3));
                true
            }
            (Some((i, _)), None) => {
                drawn.remove(i);
                true
            }
            (None, None) => false,
        }
    }
}
