//! A fast hasher for the integer keys of profile tables (ids, node pairs): one multiply-mix
//! per word, seeded per process so crafted input cannot aim for collisions it cannot see.

use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;

#[inline(always)]
fn mix(h: u64, v: u64) -> u64 {
    let x = (h ^ v).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    x ^ (x >> 29)
}

#[derive(Default)]
pub struct FastHasher(u64);

impl Hasher for FastHasher {
    #[inline]
    fn finish(&self) -> u64 {
        let x = self.0.wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x ^ (x >> 31)
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for c in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            self.0 = mix(self.0, u64::from_le_bytes(w));
        }
    }
    #[inline]
    fn write_u64(&mut self, v: u64) {
        self.0 = mix(self.0, v);
    }
    #[inline]
    fn write_u32(&mut self, v: u32) {
        self.0 = mix(self.0, u64::from(v));
    }
    #[inline]
    fn write_usize(&mut self, v: usize) {
        self.0 = mix(self.0, v as u64);
    }
}

#[derive(Clone, Copy)]
pub struct FastState(u64);

impl Default for FastState {
    fn default() -> Self {
        static SEED: OnceLock<u64> = OnceLock::new();
        FastState(
            *SEED.get_or_init(|| {
                std::collections::hash_map::RandomState::new().hash_one(0x5eed_u64)
            }),
        )
    }
}

impl BuildHasher for FastState {
    type Hasher = FastHasher;
    #[inline]
    fn build_hasher(&self) -> FastHasher {
        FastHasher(self.0)
    }
}

pub type FastMap<K, V> = std::collections::HashMap<K, V, FastState>;
