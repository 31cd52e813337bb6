//! The protobuf wire format read field by field: agentprof's one reader of it, under the
//! decoder's budget scan, the samples read apart, totals, OTLP's scan and `pull`'s deltas on
//! the wire. Each field is its number and its value as its wire type carries it; a field
//! that runs past the end, or a wire type protobuf does not have, is an error that says so.

/// The varint at `buf[*at..]` (at most ten bytes, the last holding bit 63 alone), `at` moved
/// past it; `None` when it is cut short or too long. agentprof's one reader of the wire
/// format's varints (the decoder's budget scan, totals, and `pull`'s deltas on the wire).
#[inline(always)]
pub fn varint(buf: &[u8], at: &mut usize) -> Option<u64> {
    // Most values fit one to three bytes (a large profile's location ids take three).
    if let Some(&b) = buf.get(*at) {
        if b < 0x80 {
            *at += 1;
            return Some(u64::from(b));
        }
        if let Some(&c) = buf.get(*at + 1) {
            if c < 0x80 {
                *at += 2;
                return Some(u64::from(b & 0x7f) | (u64::from(c) << 7));
            }
            if let Some(&d) = buf.get(*at + 2)
                && d < 0x80
            {
                *at += 3;
                return Some(
                    u64::from(b & 0x7f) | (u64::from(c & 0x7f) << 7) | (u64::from(d) << 14),
                );
            }
        }
    }
    let (v, next) = varint_slow(buf, *at)?;
    *at = next;
    Some(v)
}

/// A varint of any length: its value and where the next byte is. (The position by value, so
/// that callers keep theirs in a register.)
#[inline(never)]
fn varint_slow(buf: &[u8], mut at: usize) -> Option<(u64, usize)> {
    let mut v: u64 = 0;
    for shift in (0..64).step_by(7) {
        let b = *buf.get(at)?;
        if shift == 63 && b > 1 {
            return None;
        }
        at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return Some((v, at));
        }
    }
    None
}

/// The bytes `v` takes as a varint.
#[inline]
pub fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// `v` written as a varint.
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A field's value, as its wire type carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireValue<'a> {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 1, little-endian.
    Fixed64(u64),
    /// Wire type 2: a string, bytes, a message or a packed list.
    Bytes(&'a [u8]),
    /// Wire type 5, little-endian.
    Fixed32(u32),
}

impl WireValue<'_> {
    /// Its wire type's number.
    pub(crate) fn wire_type(&self) -> u64 {
        match self {
            WireValue::Varint(_) => 0,
            WireValue::Fixed64(_) => 1,
            WireValue::Bytes(_) => 2,
            WireValue::Fixed32(_) => 5,
        }
    }
}

/// Why a field could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("truncated field key")]
    Key,
    #[error("truncated varint")]
    Varint,
    #[error("truncated fixed64")]
    Fixed64,
    #[error("truncated fixed32")]
    Fixed32,
    #[error("truncated length")]
    Length,
    #[error("a field runs past the end (truncated?)")]
    PastEnd,
    #[error("wire type {wire} of field {field}")]
    WireType { wire: u64, field: u64 },
    /// Field numbers start at 1: a key of field 0 is not protobuf (text, another format, or
    /// bytes read from the wrong place).
    #[error("no protobuf field can start at byte {at} (0x{key:02x})")]
    FieldZero { at: usize, key: u64 },
}

/// The fields of one message's bytes, in order.
#[derive(Debug, Clone)]
pub struct Fields<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Fields<'a> {
    pub fn new(buf: &'a [u8]) -> Fields<'a> {
        Fields { buf, at: 0 }
    }

    /// Where the next field starts.
    #[inline(always)]
    pub fn offset(&self) -> usize {
        self.at
    }

    /// The field at `offset()`, read.
    #[inline(always)]
    fn read(&mut self) -> Result<(u64, WireValue<'a>), WireError> {
        let buf = self.buf;
        let at = self.at;
        let key = varint(buf, &mut self.at).ok_or(WireError::Key)?;
        let field = key >> 3;
        if field == 0 {
            return Err(WireError::FieldZero { at, key });
        }
        let value = match key & 7 {
            0 => WireValue::Varint(varint(buf, &mut self.at).ok_or(WireError::Varint)?),
            2 => {
                let len = varint(buf, &mut self.at).ok_or(WireError::Length)?;
                let end = usize::try_from(len)
                    .ok()
                    .and_then(|l| self.at.checked_add(l))
                    .filter(|&e| e <= buf.len())
                    .ok_or(WireError::PastEnd)?;
                let body = &buf[self.at..end];
                self.at = end;
                WireValue::Bytes(body)
            }
            1 => {
                let b: [u8; 8] = buf
                    .get(self.at..self.at.wrapping_add(8))
                    .and_then(|b| b.try_into().ok())
                    .ok_or(WireError::Fixed64)?;
                self.at += 8;
                WireValue::Fixed64(u64::from_le_bytes(b))
            }
            5 => {
                let b: [u8; 4] = buf
                    .get(self.at..self.at.wrapping_add(4))
                    .and_then(|b| b.try_into().ok())
                    .ok_or(WireError::Fixed32)?;
                self.at += 4;
                WireValue::Fixed32(u32::from_le_bytes(b))
            }
            wire => return Err(WireError::WireType { wire, field }),
        };
        Ok((field, value))
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u64, WireValue<'a>), WireError>;

    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        if self.at >= self.buf.len() {
            return None;
        }
        let item = self.read();
        if item.is_err() {
            // Nothing after an unreadable field can be read.
            self.at = self.buf.len();
        }
        Some(item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_of_every_wire_type_and_the_errors() {
        let mut buf = Vec::new();
        put_varint(&mut buf, 1 << 3);
        put_varint(&mut buf, 300);
        put_varint(&mut buf, (2 << 3) | 2);
        put_varint(&mut buf, 3);
        buf.extend_from_slice(b"abc");
        put_varint(&mut buf, (3 << 3) | 1);
        buf.extend_from_slice(&7u64.to_le_bytes());
        put_varint(&mut buf, (4 << 3) | 5);
        buf.extend_from_slice(&9u32.to_le_bytes());
        let got: Vec<_> = Fields::new(&buf).collect::<Result<_, _>>().unwrap();
        assert_eq!(
            got,
            vec![
                (1, WireValue::Varint(300)),
                (2, WireValue::Bytes(b"abc")),
                (3, WireValue::Fixed64(7)),
                (4, WireValue::Fixed32(9)),
            ]
        );
        for (bytes, err) in [
            (&[0x80][..], WireError::Key),
            (&[0x08, 0x80][..], WireError::Varint),
            (&[0x12, 0x05, b'a'][..], WireError::PastEnd),
            (&[0x12][..], WireError::Length),
            (&[0x19, 0, 0][..], WireError::Fixed64),
            (&[0x25, 0][..], WireError::Fixed32),
            (&[0x0b][..], WireError::WireType { wire: 3, field: 1 }),
            (&[0x01, 2, 3][..], WireError::FieldZero { at: 0, key: 1 }),
        ] {
            let mut f = Fields::new(bytes);
            assert_eq!(f.next(), Some(Err(err)), "{bytes:?}");
            assert_eq!(f.next(), None);
        }
    }
}
