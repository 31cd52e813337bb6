//! The accept loop's table of open connections: each one's peer, socket and activity, and
//! at the cap, which one to close to make room (one whose client hung up, else an idle one of
//! the peer that holds the most, else the slowest sender).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use super::ServerStats;

/// What the accept loop knows of one open connection.
struct Entry {
    peer: IpAddr,
    /// Its socket, to ask the kernel whether it holds bytes not yet read.
    fd: std::os::fd::RawFd,
    activity: Arc<Activity>,
}

/// What the kernel says of a connection's socket when the cap is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Socket {
    /// The client has closed its side: nothing it asked can be answered any more.
    HungUp,
    /// Bytes sent and not read yet: a request a busy server has not reached.
    Unread,
    Quiet,
}

/// [`Socket`] of each of `fds`, in one `poll` that does not wait.
fn sockets(fds: &[std::os::fd::RawFd]) -> Vec<Socket> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let hangup = libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR;
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let hangup = libc::POLLHUP | libc::POLLERR;
    let mut polled: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN | hangup,
            revents: 0,
        })
        .collect();
    // SAFETY: `polled` is a live array of `polled.len()` pollfd structs, which poll reads and
    // writes (revents) within; a timeout of 0 returns at once. The fds are sockets of open
    // connections (an entry leaves the table when its connection ends); a number reused
    // meanwhile would answer for another socket, never unsafely.
    let r = unsafe { libc::poll(polled.as_mut_ptr(), polled.len() as libc::nfds_t, 0) };
    polled
        .iter()
        .map(|p| {
            if r <= 0 {
                Socket::Quiet
            } else if p.revents & hangup != 0 {
                Socket::HungUp
            } else if p.revents & libc::POLLIN != 0 {
                Socket::Unread
            } else {
                Socket::Quiet
            }
        })
        .collect()
}

/// A connection's requests in progress and when it last finished one; `close` asks it to go.
pub(super) struct Activity {
    pub(super) in_flight: AtomicUsize,
    /// The table's epoch, which `idle_since_ms` counts from.
    pub(super) epoch: Instant,
    /// Milliseconds since `epoch` when it was accepted or last finished a request.
    pub(super) idle_since_ms: AtomicU64,
    /// Set before `close` by the accept loop when the client hung up or sends too slowly:
    /// it is dropped at once, request or not.
    pub(super) dropped: std::sync::atomic::AtomicBool,
    /// Milliseconds since `epoch` when it was accepted.
    pub(super) accepted_ms: u64,
    /// Bytes read from it and written to it.
    pub(super) bytes: AtomicU64,
    pub(super) close: tokio::sync::Notify,
    /// The request in progress (the last begun): milliseconds since `epoch` when it began
    /// (`u64::MAX`: none yet), `bytes` then, and the body length it stated (`u64::MAX`: none).
    pub(super) request_ms: AtomicU64,
    pub(super) request_bytes: AtomicU64,
    pub(super) declared: AtomicU64,
}

impl Activity {
    pub(super) fn begin_request(&self, declared: Option<u64>) {
        self.request_bytes
            .store(self.bytes.load(Ordering::Relaxed), Ordering::Relaxed);
        self.declared
            .store(declared.unwrap_or(u64::MAX), Ordering::Relaxed);
        self.request_ms
            .store(self.epoch.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    /// When the request in progress would have its whole body, in milliseconds from its
    /// start, at the rate it has come so far; None before `MEASURE_AFTER_MS` of it, for a
    /// body of unstated length, or with no request in progress.
    fn projected_ms(&self, now: u64) -> Option<u64> {
        if self.in_flight.load(Ordering::Acquire) == 0 {
            return None;
        }
        let begun = self.request_ms.load(Ordering::Relaxed);
        let declared = self.declared.load(Ordering::Relaxed);
        let elapsed = now.checked_sub(begun)?;
        if elapsed < MEASURE_AFTER_MS || declared == u64::MAX {
            return None;
        }
        let got = self
            .bytes
            .load(Ordering::Relaxed)
            .saturating_sub(self.request_bytes.load(Ordering::Relaxed));
        let left = declared.saturating_sub(got);
        if left == 0 {
            return None;
        }
        // At `got` bytes in `elapsed` ms (none yet counts as one byte, to project at all).
        let rate_per_ms = got.max(1) as f64 / elapsed as f64;
        Some(elapsed.saturating_add((left as f64 / rate_per_ms).min(u64::MAX as f64 / 2.0) as u64))
    }
}

/// A connection's place in the table: its id, and its activity shared with it.
pub(super) struct Slot {
    pub(super) id: u64,
    pub(super) activity: Arc<Activity>,
}

/// The open connections, by id, and the signal that one ended.
pub(super) struct Table {
    epoch: Instant,
    next: AtomicU64,
    open: std::sync::Mutex<HashMap<u64, Entry>>,
    pub(super) freed: tokio::sync::Notify,
}

impl Default for Table {
    fn default() -> Self {
        Table {
            epoch: Instant::now(),
            next: AtomicU64::new(0),
            open: std::sync::Mutex::new(HashMap::new()),
            freed: tokio::sync::Notify::new(),
        }
    }
}

/// A connection that has been open this long and carried less than `SLOW_RATE` bytes a
/// second on average is a slow sender: at the cap it is closed before anyone waits.
const SLOW_AFTER_MS: u64 = 2_000;
const SLOW_RATE: u64 = 1024;
/// A request's rate is judged after this long of it.
const MEASURE_AFTER_MS: u64 = 1_000;
/// A connection counts as idle after this long without a request: at the cap the accept
/// loop makes room ahead of the next client, and a client just accepted may not have sent
/// its request yet (on a loaded machine, a few hundred milliseconds).
const IDLE_AFTER_MS: u64 = 1_000;

impl Table {
    pub(super) fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    pub(super) fn len(&self) -> usize {
        crate::sync::lock(&self.open).len()
    }

    /// Closes one connection to make room at the cap: one whose client hung up (it can be
    /// answered no more); else an idle one — no request in progress for `IDLE_AFTER_MS`,
    /// nothing sent that is not read yet — of the peer address that holds the most (the one idle longest), else
    /// anyone's idle longest; else one whose request, at the rate its body comes, would not
    /// have it all within `deadline` of its start (the peer that holds the most first, then
    /// the one that would take longest): it would be cut at the deadline anyway, having held
    /// its slot all along; else the slowest sender, open `SLOW_AFTER_MS` at under `SLOW_RATE`
    /// bytes a second. False when none is any of these: everyone is busy and quick enough,
    /// and the new connection waits.
    pub(super) fn make_room(&self, stats: &ServerStats, deadline: std::time::Duration) -> bool {
        let mut open = crate::sync::lock(&self.open);
        let now = self.now_ms();
        let deadline_ms = deadline.as_millis() as u64;
        let ids: Vec<u64> = open.keys().copied().collect();
        let fds: Vec<std::os::fd::RawFd> = ids.iter().map(|id| open[id].fd).collect();
        let states = sockets(&fds);
        let mut by_peer: HashMap<IpAddr, usize> = HashMap::new();
        for e in open.values() {
            *by_peer.entry(e.peer).or_default() += 1;
        }
        let hoarder = by_peer.iter().max_by_key(|(_, n)| **n).map(|(p, _)| *p);
        let listed = || ids.iter().zip(&states).map(|(id, s)| (*id, *s, &open[id]));
        let hung_up = listed()
            .find(|(_, s, _)| *s == Socket::HungUp)
            .map(|(id, _, _)| id);
        let idle = || {
            listed()
                .filter(|(_, s, e)| {
                    // Quiet for a moment at least: one just accepted has had no time to send
                    // its request yet.
                    let since = e.activity.idle_since_ms.load(Ordering::Relaxed);
                    *s == Socket::Quiet
                        && e.activity.in_flight.load(Ordering::Acquire) == 0
                        && now.saturating_sub(since) >= IDLE_AFTER_MS
                })
                .min_by_key(|(id, _, e)| {
                    (
                        Some(e.peer) != hoarder,
                        e.activity.idle_since_ms.load(Ordering::Relaxed),
                        *id,
                    )
                })
                .map(|(id, _, _)| id)
        };
        let hopeless = || {
            listed()
                .filter_map(|(id, _, e)| {
                    let projected = e.activity.projected_ms(now)?;
                    (projected > deadline_ms).then_some((
                        Some(e.peer) != hoarder,
                        std::cmp::Reverse(projected),
                        id,
                    ))
                })
                .min()
                .map(|(_, _, id)| id)
        };
        let slowest = || {
            listed()
                .filter_map(|(id, _, e)| {
                    let age = now.saturating_sub(e.activity.accepted_ms);
                    let rate = e.activity.bytes.load(Ordering::Relaxed) * 1000 / age.max(1);
                    (age >= SLOW_AFTER_MS && rate < SLOW_RATE).then_some((rate, id))
                })
                .min()
                .map(|(_, id)| id)
        };
        let (evict, hard) = match (hung_up, idle()) {
            (Some(id), _) => (id, true),
            (None, Some(id)) => (id, false),
            (None, None) => match hopeless().or_else(slowest) {
                Some(id) => (id, true),
                None => return false,
            },
        };
        if let Some(e) = open.remove(&evict) {
            e.activity.dropped.store(hard, Ordering::Release);
            e.activity.close.notify_one();
            stats.evicted_idle.fetch_add(1, Ordering::Relaxed);
        }
        true
    }

    /// A place for a new connection from `peer` (room was made before it was accepted).
    pub(super) fn admit(&self, peer: IpAddr, fd: std::os::fd::RawFd) -> Slot {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let now = self.now_ms();
        let activity = Arc::new(Activity {
            in_flight: AtomicUsize::new(0),
            epoch: self.epoch,
            idle_since_ms: AtomicU64::new(now),
            dropped: std::sync::atomic::AtomicBool::new(false),
            accepted_ms: now,
            bytes: AtomicU64::new(0),
            close: tokio::sync::Notify::new(),
            request_ms: AtomicU64::new(u64::MAX),
            request_bytes: AtomicU64::new(0),
            declared: AtomicU64::new(u64::MAX),
        });
        crate::sync::lock(&self.open).insert(
            id,
            Entry {
                peer,
                fd,
                activity: Arc::clone(&activity),
            },
        );
        Slot { id, activity }
    }

    pub(super) fn remove(&self, id: u64) {
        crate::sync::lock(&self.open).remove(&id);
        self.freed.notify_one();
    }
}
