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
        use crate::pprof::wire::WireValue;
        let start = self.at;
        let mut fields = crate::pprof::wire::Fields::new(&self.buf[start..]);
        let Some(item) = fields.next() else {
            return Err(WireError::Malformed("a field runs past the end"));
        };
        let (num, value) = item?;
        self.at = start + fields.offset();
        let f = match value {
            WireValue::Varint(v) => Field::Varint(num, v),
            WireValue::Bytes(b) => Field::Bytes(num, b),
            WireValue::Fixed64(_) | WireValue::Fixed32(_) => Field::Other,
        };
        Ok((start, f))
    }
}

/// Maps keyed by fingerprints (pprof's maps, seeded).
pub(super) type KeyMap<V> = crate::pprof::fasthash::FastMap<u64, V>;

pub(super) use crate::pprof::fasthash::{fold, hash_bytes, mix};
