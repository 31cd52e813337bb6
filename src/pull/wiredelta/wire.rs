//! Reading the protobuf wire format in place (fields, with pprof's varint reader), and the
//! fingerprints stacks are keyed by (pprof's).

use super::{R, WireError};

/// The varint at `buf[*at..]` (pprof's one reader of them), or why the field is malformed.
#[inline(always)]
pub(super) fn varint(buf: &[u8], at: &mut usize) -> R<u64> {
    crate::pprof::proto::varint(buf, at).ok_or(WireError::Malformed(
        "a varint is cut short or longer than 64 bits",
    ))
}

pub(super) use crate::pprof::proto::{put_varint, varint_len};

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

/// Maps keyed by fingerprints (pprof's maps, seeded).
pub(super) type KeyMap<V> = crate::pprof::fasthash::FastMap<u64, V>;

pub(super) use crate::pprof::fasthash::{fold, hash_bytes, mix};
