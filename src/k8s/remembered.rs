//! What the collector keeps of its targets while it does not lead: each target's schedule
//! phase, trigger history, cooldown and failures, by pod UID, for when the lease comes back.

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

use super::trigger::Monitor;

/// What a target keeps across a lost and re-taken lease (and the relist that follows), by its
/// id (`podUID/container/endpoint`): its schedule's phase, its trigger history and cooldown,
/// its failures. A pod's UID is never reused, so the state is its own.
pub(super) struct Remembered {
    pub(super) rule: usize,
    pub(super) grid: Instant,
    pub(super) monitor: Option<Monitor>,
    pub(super) failures: u32,
    pub(super) backoff_until: Option<Instant>,
    pub(super) seq: u64,
    /// When it was forgotten by the collector.
    pub(super) at: Instant,
}

/// Targets remembered at most (the oldest are forgotten first): an id and a few KiB of
/// trigger history each, some tens of MiB at the very most.
const REMEMBERED: usize = 10_000;

/// The targets remembered, by id.
#[derive(Default)]
pub(super) struct Memory(HashMap<String, Remembered>);

impl Memory {
    pub(super) fn keep(&mut self, id: String, r: Remembered) {
        self.0.insert(id, r);
    }

    /// What `id` left, when it was collected under the same rule.
    pub(super) fn take(&mut self, id: &str, rule: usize) -> Option<Remembered> {
        self.0.remove(id).filter(|r| r.rule == rule)
    }

    /// Forgets what nothing needs any more: state older than `horizon`, then the oldest
    /// past `REMEMBERED` entries.
    pub(super) fn prune(&mut self, now: Instant, horizon: Duration) {
        self.0
            .retain(|_, r| now.saturating_duration_since(r.at) < horizon);
        if self.0.len() > REMEMBERED {
            let mut by_age: Vec<(Instant, String)> =
                self.0.iter().map(|(id, r)| (r.at, id.clone())).collect();
            by_age.sort();
            let over = by_age.len() - REMEMBERED;
            for (_, id) in by_age.into_iter().take(over) {
                self.0.remove(&id);
            }
        }
    }
}
