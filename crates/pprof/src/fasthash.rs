//! agentprof's hashing, in one place: the maps' hasher, the fingerprints `pull`'s deltas
//! key stacks by, and FNV-1a for what must hash the same on every machine and release.
//!
//! The maps hash with foldhash, seeded per process, so crafted input cannot aim for
//! collisions it cannot see (the metrics aggregator's maps are the same). A fingerprint is
//! the same for the same input in every profile a process reads, so a stack's key in one
//! profile is its key in the next: `mix` finishes one with good avalanche, `fold` combines
//! many values cheaply before it, `hash_bytes` fingerprints a string.

/// The maps' hasher.
pub(crate) type FastState = foldhash::fast::RandomState;

pub type FastMap<K, V> = std::collections::HashMap<K, V, FastState>;

/// A multiply-xorshift step with good avalanche (as in splitmix64).
#[inline(always)]
pub fn mix(h: u64, v: u64) -> u64 {
    let mut x = (h ^ v).wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A cheap step for combining many values (FxHash's); `mix` finishes the key.
#[inline(always)]
pub fn fold(h: u64, v: u64) -> u64 {
    (h.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95)
}

/// The fingerprint of a string's bytes.
pub fn hash_bytes(b: &[u8]) -> u64 {
    let mut h = 0x517c_c1b7_2722_0a95 ^ b.len() as u64;
    let mut chunks = b.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        h = mix(h, u64::from_le_bytes(w));
    }
    let mut w = [0u8; 8];
    w[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    mix(h, u64::from_le_bytes(w))
}

/// 64-bit FNV-1a: a hash that is the same on every machine and release (names, jitter).
pub fn fnv64a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}
