//! The pre-scan: the protobuf wire format walked before anything is decoded, counting
//! fields, packed elements and strings against a memory budget, so that no input makes the
//! decoder allocate past it.

use super::super::wire::{Fields, WireError, WireValue, varint};
use super::Limits;
use crate::Error;

/// Where a length-delimited field leads: a nested message, packed varints, or plain bytes.
#[derive(Clone, Copy)]
enum Msg {
    Profile,
    Sample,
    Location,
    /// Messages with scalar fields only (ValueType, Mapping, Function, Line, Label).
    Flat,
}

fn nested(msg: Msg, field: u64) -> Option<Option<Msg>> {
    // Some(Some(m)): nested message; Some(None): packed scalars; None: bytes/string.
    match (msg, field) {
        (Msg::Profile, 1 | 3 | 5 | 11) => Some(Some(Msg::Flat)),
        (Msg::Profile, 2) => Some(Some(Msg::Sample)),
        (Msg::Profile, 4) => Some(Some(Msg::Location)),
        (Msg::Profile, 13) => Some(None),
        (Msg::Sample, 1 | 2) => Some(None),
        (Msg::Sample, 3) => Some(Some(Msg::Flat)),
        (Msg::Location, 4) => Some(Some(Msg::Flat)),
        _ => None,
    }
}

/// What decoding takes, per part of the profile, in bytes: the decoded structs (a sample is
/// three vectors), each vector's allocation, and agentprof's own index of the profile built
/// after it (what a sample took when it was measured: docs/details.md, "Measured choices").
const SAMPLE_BYTES: u64 = 200;
const MESSAGE_BYTES: u64 = 96;
const ELEMENT_BYTES: u64 = 12;
const STRING_BYTES: u64 = 48;

/// Fields and elements counted, and the memory decoding them is estimated to take.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Scan {
    pub count: u64,
    pub memory: u64,
    pub samples: u64,
    /// The location ids the samples list packed (room is made for them in one array).
    pub sample_locations: u64,
    /// The profile's locations, functions and strings (room is made for them before decoding).
    pub locations: u64,
    pub functions: u64,
    pub strings: u64,
    /// A string of the string table is not UTF-8 (go tool pprof reads it with U+FFFD).
    pub strings_not_utf8: bool,
}

/// Counts every field, nested field and packed element of `buf` against `budget`, without
/// allocating, and estimates the memory decoding them takes; a cut or malformed message is
/// reported as such.
pub fn prescan(buf: &[u8], budget: u64) -> Result<u64, Error> {
    let mut s = Scan::default();
    scan(buf, Msg::Profile, budget, &mut s, 0)?;
    Ok(s.count)
}

/// `prescan` with the memory estimate, checked against `limits.memory` before allocation.
pub fn memory_estimate(buf: &[u8], limits: &Limits) -> Result<Scan, Error> {
    let mut s = Scan::default();
    scan(buf, Msg::Profile, limits.fields, &mut s, 0)?;
    within_memory(s, limits)
}

fn within_memory(s: Scan, limits: &Limits) -> Result<Scan, Error> {
    if s.memory > limits.memory {
        return Err(Error::Memory {
            estimate: s.memory,
            budget: limits.memory,
            samples: s.samples,
        });
    }
    Ok(s)
}

/// The pre-scan of a profile that arrives in pieces (while it is decompressed on another
/// thread): each call scans the top-level fields the bytes so far hold whole; `finish` the
/// rest. The same counts, estimate and errors as [`memory_estimate`] of the whole.
#[derive(Debug, Default)]
pub(crate) struct Incremental {
    s: Scan,
    /// Where the next top-level field starts.
    at: usize,
    /// The first error met (scanning stops there).
    failed: Option<Error>,
}

impl Incremental {
    /// Scans the whole top-level fields of `buf` (the bytes so far) not scanned yet.
    pub fn advance(&mut self, buf: &[u8], budget: u64) {
        self.step(buf, budget, false);
    }

    /// The scan of the whole of `buf`, within `limits`.
    pub fn finish(mut self, buf: &[u8], limits: &Limits) -> Result<Scan, Error> {
        self.step(buf, limits.fields, true);
        match self.failed {
            Some(e) => Err(e),
            None => within_memory(self.s, limits),
        }
    }

    fn step(&mut self, buf: &[u8], budget: u64, whole: bool) {
        while self.failed.is_none() && self.at < buf.len() {
            let mut fields = Fields::new(&buf[self.at..]);
            let Some(item) = fields.next() else {
                return;
            };
            let (field, value) = match item {
                Ok(f) => f,
                // Cut short here may be whole once more bytes come.
                Err(WireError::Key | WireError::Varint | WireError::Length)
                | Err(WireError::PastEnd | WireError::Fixed64 | WireError::Fixed32)
                    if !whole =>
                {
                    return;
                }
                Err(WireError::FieldZero { key, .. }) => {
                    let at = self.at;
                    self.failed = Some(Error::Malformed(
                        WireError::FieldZero { at, key }.to_string(),
                    ));
                    return;
                }
                Err(e) => {
                    self.failed = Some(Error::Malformed(e.to_string()));
                    return;
                }
            };
            self.at += fields.offset();
            if let Err(e) = one_field(field, value, Msg::Profile, budget, &mut self.s, 0) {
                self.failed = Some(e);
            }
        }
    }
}

fn malformed(what: &str) -> Error {
    Error::Malformed(what.to_string())
}

fn scan(buf: &[u8], msg: Msg, budget: u64, s: &mut Scan, depth: u32) -> Result<(), Error> {
    if depth > 3 {
        return Err(malformed("nested too deep"));
    }
    for item in Fields::new(buf) {
        let (field, value) = item.map_err(|e| Error::Malformed(e.to_string()))?;
        one_field(field, value, msg, budget, s, depth)?;
    }
    Ok(())
}

/// One field of a `msg` at `depth`: counted, and its message or packed list scanned.
#[inline(always)]
fn one_field(
    field: u64,
    value: WireValue,
    msg: Msg,
    budget: u64,
    s: &mut Scan,
    depth: u32,
) -> Result<(), Error> {
    s.count += 1;
    if s.count > budget {
        return Err(Error::Budget { budget });
    }
    let WireValue::Bytes(body) = value else {
        return Ok(());
    };
    if matches!(msg, Msg::Profile) {
        match field {
            4 => s.locations += 1,
            5 => s.functions += 1,
            6 => {
                s.strings += 1;
                if !s.strings_not_utf8 && std::str::from_utf8(body).is_err() {
                    s.strings_not_utf8 = true;
                }
            }
            _ => {}
        }
    }
    match nested(msg, field) {
        Some(Some(inner)) => {
            if matches!(inner, Msg::Sample) {
                s.samples += 1;
                s.memory += SAMPLE_BYTES;
            } else {
                s.memory += MESSAGE_BYTES;
            }
            scan(body, inner, budget, s, depth + 1)?
        }
        Some(None) => {
            let before = s.count;
            scan_packed(body, budget, s)?;
            if matches!(msg, Msg::Sample) && field == 1 {
                s.sample_locations += s.count - before;
            }
        }
        None => s.memory += STRING_BYTES + body.len() as u64,
    }
    Ok(())
}

/// A packed repeated varint field: each element counts against the budget.
fn scan_packed(body: &[u8], budget: u64, s: &mut Scan) -> Result<(), Error> {
    let mut p = 0;
    while p < body.len() {
        varint(body, &mut p).ok_or_else(|| malformed("truncated packed varint"))?;
        s.count += 1;
        s.memory += ELEMENT_BYTES;
        if s.count > budget {
            return Err(Error::Budget { budget });
        }
    }
    Ok(())
}
