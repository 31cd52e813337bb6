//! Reading the protobuf wire format in place (varints, fields) and the hashes stacks are
//! keyed by.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::{R, WireError};

#[inline(always)]
pub(super) fn varint(buf: &[u8], at: &mut usize) -> R<u64> {
    // Most values fit one or two bytes.
    if let Some(&b) = buf.get(*at) {
        if b < 0x80 {
            *at += 1;
            return Ok(u64::from(b));
        }
        if let Some(&c) = buf.get(*at + 1)
            && c < 0x80
        {
            *at += 2;
            return Ok(u64::from(b & 0x7f) | (u64::from(c) << 7));
        }
    }
    let (v, next) = varint_slow(buf, *at)?;
    *at = next;
    Ok(v)
}

/// A varint of any length; returns the value and where the next byte is. (Takes the position
/// by value so that callers keep theirs in a register.)
#[inline(never)]
pub(super) fn varint_slow(buf: &[u8], mut at: usize) -> R<(u64, usize)> {
    let mut v: u64 = 0;
    let mut shift = 0;
    loop {
        let b = *buf
            .get(at)
            .ok_or(WireError::Malformed("truncated varint"))?;
        at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok((v, at));
        }
        shift += 7;
        if shift >= 64 {
            return Err(WireError::Malformed("varint too long"));
        }
    }
}

/// One field: number, and either a varint value or a byte range.
pub(super) enum Field<'a> {
    Varint(u64, u64),
    Bytes(u64, &'a [u8]),
    Other,
}

pub(super) struct Fields<'a> {
    pub(super) buf: &'a [u8],
    pub(super) at: usize,
}

impl<'a> Fields<'a> {
    pub(super) fn new(buf: &'a [u8]) -> Self {
        Fields { buf, at: 0 }
    }

    /// The next field and where it started.
    #[inline(always)]
    pub(super) fn next_field(&mut self) -> Option<R<(usize, Field<'a>)>> {
        if self.at >= self.buf.len() {
            return None;
        }
        Some(self.read_field())
    }

    #[inline(always)]
    pub(super) fn read_field(&mut self) -> R<(usize, Field<'a>)> {
        let start = self.at;
        let key = varint(self.buf, &mut self.at)?;
        let (num, wire) = (key >> 3, key & 7);
        let f = match wire {
            0 => Field::Varint(num, varint(self.buf, &mut self.at)?),
            2 => {
                let len = varint(self.buf, &mut self.at)? as usize;
                let end = self
                    .at
                    .checked_add(len)
                    .filter(|&e| e <= self.buf.len())
                    .ok_or(WireError::Malformed("a field runs past the end"))?;
                let b = &self.buf[self.at..end];
                self.at = end;
                Field::Bytes(num, b)
            }
            1 | 5 => {
                self.at += if wire == 1 { 8 } else { 4 };
                if self.at > self.buf.len() {
                    return Err(WireError::Malformed("truncated field"));
                }
                Field::Other
            }
            _ => return Err(WireError::Malformed("unknown wire type")),
        };
        Ok((start, f))
    }
}

/// A fast 64-bit mix (the keys are hashes already; the map only needs to spread them).
#[derive(Default)]
pub(super) struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = mix(self.0, u64::from(b));
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

pub(super) type KeyMap<V> = HashMap<u64, V, BuildHasherDefault<PassThrough>>;

#[inline(always)]
pub(super) fn mix(h: u64, v: u64) -> u64 {
    // A multiply-xorshift step with good avalanche (as in splitmix64).
    let mut x = (h ^ v).wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

pub(super) fn hash_bytes(b: &[u8]) -> u64 {
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

/// A cheap step for combining many values (FxHash's); `mix` finishes the key.
#[inline(always)]
pub(super) fn fold(h: u64, v: u64) -> u64 {
    (h.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95)
}

#[inline]
pub(super) fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

pub(super) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}
