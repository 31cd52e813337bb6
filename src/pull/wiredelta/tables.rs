//! The profile's tables read in place (strings, functions, locations by id) and each
//! sample read off the wire: its values and its stack's 64-bit key.

use super::wire::*;
use super::*;
/// A table indexed by a message id: dense ids in a vector, sparse ones in a map.
pub(super) struct ById {
    pub(super) dense: Vec<u64>,
    pub(super) sparse: KeyMap<u64>,
}

impl ById {
    pub(super) fn new() -> Self {
        ById {
            dense: Vec::new(),
            sparse: KeyMap::default(),
        }
    }
    pub(super) fn insert(&mut self, id: u64, v: u64) {
        if id < 1 << 22 {
            let i = id as usize;
            if self.dense.len() <= i {
                self.dense.resize(i + 1, 0);
            }
            self.dense[i] = v;
        } else {
            self.sparse.insert(id, v);
        }
    }
    #[inline]
    pub(super) fn get(&self, id: u64) -> u64 {
        if id < 1 << 22 {
            self.dense.get(id as usize).copied().unwrap_or(0)
        } else {
            self.sparse.get(&id).copied().unwrap_or(0)
        }
    }
}

/// What the tables of one profile say: per location a hash of its frames, the sample types,
/// and the profile's time.
pub(super) struct Tables {
    pub(super) locations: ById,
    pub(super) types: Vec<(u64, u64)>,
    pub(super) time_nanos: i64,
    pub(super) duration_nanos: i64,
    pub(super) strings: Vec<u64>,
    /// Sample messages.
    pub(super) samples: usize,
    /// Where the field of every `BLOCK`-th sample starts: block k's samples are the ones
    /// from `blocks[k]` to `blocks[k + 1]` (or the end).
    pub(super) blocks: Vec<usize>,
}

/// Samples per block: the unit of work the threads take in turn, so that the one that runs
/// faster does more of it.
pub(super) const BLOCK: usize = 4096;

impl Tables {
    pub(super) fn block(&self, k: usize, len: usize) -> (usize, usize) {
        (
            self.blocks[k],
            self.blocks.get(k + 1).copied().unwrap_or(len),
        )
    }
}

pub(super) fn tables(buf: &[u8]) -> R<Tables> {
    let mut strings: Vec<u64> = Vec::new();
    let mut functions: Vec<(u64, u64, u64)> = Vec::new(); // id, name idx, file idx
    let mut locations: Vec<&[u8]> = Vec::new();
    let mut types = Vec::new();
    let mut time_nanos = 0;
    let mut duration_nanos = 0;
    let mut samples = 0;
    let mut blocks = Vec::new();
    let mut f = Fields::new(buf);
    loop {
        // Runs of samples, the bulk of a profile, stepped over without the field reader.
        while buf.get(f.at) == Some(&0x12) {
            if samples % BLOCK == 0 {
                blocks.push(f.at);
            }
            let mut at = f.at + 1;
            let len = varint(buf, &mut at)? as usize;
            f.at = at
                .checked_add(len)
                .filter(|&e| e <= buf.len())
                .ok_or(WireError::Malformed("a field runs past the end"))?;
            samples += 1;
        }
        let Some(field) = f.next_field() else {
            break;
        };
        let (start, field) = field?;
        match field {
            Field::Bytes(6, s) => strings.push(hash_bytes(s)),
            Field::Bytes(5, m) => functions.push(function(m)?),
            Field::Bytes(4, m) => locations.push(m),
            Field::Bytes(1, m) => types.push(value_type(m)?),
            Field::Varint(9, v) => time_nanos = v as i64,
            Field::Varint(10, v) => duration_nanos = v as i64,
            Field::Bytes(2, _) => {
                if samples % BLOCK == 0 {
                    blocks.push(start);
                }
                samples += 1;
            }
            _ => {}
        }
    }
    let s = |i: u64| strings.get(i as usize).copied().unwrap_or(0);
    let mut funcs = ById::new();
    for &(id, name, file) in &functions {
        funcs.insert(id, mix(s(name), s(file)) | 1);
    }
    let mut locs = ById::new();
    for m in locations {
        let (id, h) = location_key(m, &funcs)?;
        locs.insert(id, h);
    }
    let types = types.into_iter().map(|(t, u)| (s(t), s(u))).collect();
    Ok(Tables {
        locations: locs,
        types,
        time_nanos,
        duration_nanos,
        strings,
        samples,
        blocks,
    })
}

/// A Function message: its id, name and file (string indexes).
fn function(m: &[u8]) -> R<(u64, u64, u64)> {
    let (mut id, mut name, mut file) = (0, 0, 0);
    let mut g = Fields::new(m);
    while let Some(x) = g.next_field() {
        match x?.1 {
            Field::Varint(1, v) => id = v,
            Field::Varint(2, v) => name = v,
            Field::Varint(4, v) => file = v,
            _ => {}
        }
    }
    Ok((id, name, file))
}

/// A ValueType message: its type and unit (string indexes).
fn value_type(m: &[u8]) -> R<(u64, u64)> {
    let (mut t, mut u) = (0, 0);
    let mut g = Fields::new(m);
    while let Some(x) = g.next_field() {
        match x?.1 {
            Field::Varint(1, v) => t = v,
            Field::Varint(2, v) => u = v,
            _ => {}
        }
    }
    Ok((t, u))
}

/// A Location message: its id and the key of what it stands for, its lines' functions (by
/// their keys) and line numbers, or its address when it has no lines or no function.
fn location_key(m: &[u8], funcs: &ById) -> R<(u64, u64)> {
    let (mut id, mut address) = (0, 0);
    let mut h = 0x2545_f491_4f6c_dd1du64;
    let mut lines = 0;
    let mut g = Fields::new(m);
    while let Some(x) = g.next_field() {
        match x?.1 {
            Field::Varint(1, v) => id = v,
            Field::Varint(3, v) => address = v,
            Field::Bytes(4, line) => {
                lines += 1;
                let (mut fid, mut ln) = (0, 0);
                let mut l = Fields::new(line);
                while let Some(y) = l.next_field() {
                    match y?.1 {
                        Field::Varint(1, v) => fid = v,
                        Field::Varint(2, v) => ln = v,
                        _ => {}
                    }
                }
                let fh = funcs.get(fid);
                // No function: the address is all there is.
                h = mix(mix(h, if fh == 0 { address } else { fh }), ln);
            }
            _ => {}
        }
    }
    if lines == 0 {
        h = mix(h, address);
    }
    Ok((id, h))
}

/// One sample message read: its key, how many values, and where its values field is
/// (None when the values are spread over several fields).
pub(super) struct SampleView {
    pub(super) key: u64,
    pub(super) n: usize,
    pub(super) values_at: Option<(usize, usize)>,
}

/// Adds the frames of a packed location-ids field to a stack's hash: each location's hash
/// times a multiplier of its position, summed (no multiply waits on the one before). Kept
/// out of line, so that its few values stay in registers.
#[inline(never)]
pub(super) fn frames(body: &[u8], locations: &ById, mut sum: u64, mut k: u64) -> R<(u64, u64)> {
    let dense = &locations.dense[..];
    let mut i = 0;
    while i < body.len() {
        // Location ids take one or two bytes in nearly every profile.
        let b = body[i];
        let id = if b < 0x80 {
            i += 1;
            u64::from(b)
        } else if let Some(&c) = body.get(i + 1)
            && c < 0x80
        {
            i += 2;
            u64::from(b & 0x7f) | (u64::from(c) << 7)
        } else {
            varint(body, &mut i)?
        };
        let lh = match dense.get(id as usize) {
            Some(&x) => x,
            None => locations.get(id),
        };
        sum = sum.wrapping_add(lh.wrapping_mul(k));
        k = k.wrapping_add(FRAME_STEP);
    }
    Ok((sum, k))
}

/// Adds one field of a label (key, str and unit are string indexes: the strings' hashes are
/// added; num as it is) to a sample's label sum.
#[inline(always)]
pub(super) fn label_field(sum: u64, k: u64, field: u64, v: u64, t: &Tables) -> (u64, u64) {
    let v = if field == 3 {
        v
    } else {
        t.strings.get(v as usize).copied().unwrap_or(0)
    };
    (
        sum.wrapping_add((v ^ field.wrapping_mul(LABEL_FIELD)).wrapping_mul(k)),
        k.wrapping_add(FRAME_STEP),
    )
}

/// Told apart: which field of a label a value is, and where one label ends (even, as
/// `FRAME_STEP`).
pub(super) const LABEL_FIELD: u64 = 0xd6e8_feb8_6659_fd93;
pub(super) const LABEL_STEP: u64 = 0x3c6e_f372_fe94_f82a;

/// The multiplier of a stack's first frame, and how it changes from frame to frame (even, so
/// that every multiplier is odd; twice an odd number, so that no two frames' multipliers are
/// close in their low bits).
pub(super) const FRAME_K: u64 = 0x9e37_79b9_7f4a_7c15;
pub(super) const FRAME_STEP: u64 = 0x2545_f491_4f6c_dd1e;

/// `sample` for the layout Go and most writers use (packed location ids, packed values,
/// labels, in any order), without the generic field reader; anything else goes to `sample`.
/// With `VALUES` false the values are counted, not read; with `KEY` false the frames and
/// labels are stepped over (the key is then meaningless).
#[inline(always)]
pub(super) fn sample_fast<const VALUES: bool, const KEY: bool>(
    m: &[u8],
    t: &Tables,
    values: &mut [i64; MAX_TYPES],
) -> R<SampleView> {
    let h = 0x6a09_e667_f3bc_c908u64;
    let mut n = 0usize;
    let mut values_at = None;
    let mut at = 0usize;
    // Each frame's hash times a constant of its position, summed: no multiply waits on the
    // one before.
    let (mut sum, mut k) = (0u64, FRAME_K);
    // The labels' fields, the same way, in a sum of their own.
    let (mut lsum, mut lk) = (0u64, FRAME_K);
    while at < m.len() {
        let start = at;
        let key = m[at];
        at += 1;
        if !matches!(key, 0x0a | 0x12 | 0x1a) {
            return sample(m, t, values);
        }
        let len = varint(m, &mut at)? as usize;
        let end = at
            .checked_add(len)
            .filter(|&e| e <= m.len())
            .ok_or(WireError::Malformed("a field runs past the end"))?;
        let body = &m[at..end];
        match key {
            0x0a if !KEY => {}
            0x0a => (sum, k) = frames(body, &t.locations, sum, k)?,
            0x12 => {
                if values_at.is_some() {
                    return sample(m, t, values);
                }
                values_at = Some((start, end));
                if VALUES {
                    let mut i = 0;
                    while i < body.len() {
                        let v = varint(body, &mut i)? as i64;
                        if n < MAX_TYPES {
                            values[n] = v;
                        }
                        n += 1;
                    }
                } else {
                    if body.last().is_some_and(|&b| b >= 0x80) {
                        return Err(WireError::Malformed("truncated varint"));
                    }
                    n = body.iter().filter(|&&b| b < 0x80).count();
                }
            }
            _ if !KEY => {}
            _ => {
                let mut i = 0;
                while i < body.len() {
                    let k = body[i];
                    i += 1;
                    if k & 7 != 0 {
                        return sample(m, t, values);
                    }
                    let v = varint(body, &mut i)?;
                    (lsum, lk) = label_field(lsum, lk, u64::from(k >> 3), v, t);
                }
                lk = lk.wrapping_add(LABEL_STEP);
            }
        }
        at = end;
    }
    if n > MAX_TYPES {
        return Err(WireError::TooManyTypes);
    }
    Ok(SampleView {
        key: mix(fold(fold(h, sum ^ k), lsum ^ lk), n as u64),
        n,
        values_at,
    })
}

/// The key of one sample message and its values (read into `values`).
#[inline]
pub(super) fn sample(m: &[u8], t: &Tables, values: &mut [i64; MAX_TYPES]) -> R<SampleView> {
    let (mut sum, mut k) = (0u64, FRAME_K);
    // The labels' fields, the same way, in a sum of their own.
    let (mut lsum, mut lk) = (0u64, FRAME_K);
    let h = 0x6a09_e667_f3bc_c908u64;
    let mut n = 0;
    let mut values_at = None;
    let mut value_fields = 0;
    let mut g = Fields::new(m);
    while let Some(x) = g.next_field() {
        let (start, f) = x?;
        match f {
            Field::Bytes(1, packed) => {
                let mut at = 0;
                while at < packed.len() {
                    let lh = t.locations.get(varint(packed, &mut at)?);
                    sum = sum.wrapping_add(lh.wrapping_mul(k));
                    k = k.wrapping_add(FRAME_STEP);
                }
            }
            Field::Varint(1, id) => {
                sum = sum.wrapping_add(t.locations.get(id).wrapping_mul(k));
                k = k.wrapping_add(FRAME_STEP);
            }
            Field::Bytes(2, packed) => {
                value_fields += 1;
                values_at = Some((start, g.at));
                let mut at = 0;
                while at < packed.len() {
                    let v = varint(packed, &mut at)? as i64;
                    if n < MAX_TYPES {
                        values[n] = v;
                    }
                    n += 1;
                }
            }
            Field::Varint(2, v) => {
                value_fields += 2;
                if n < MAX_TYPES {
                    values[n] = v as i64;
                }
                n += 1;
            }
            Field::Bytes(3, label) => {
                let mut l = Fields::new(label);
                while let Some(y) = l.next_field() {
                    if let (_, Field::Varint(k, v)) = y? {
                        (lsum, lk) = label_field(lsum, lk, k, v, t);
                    }
                }
                lk = lk.wrapping_add(LABEL_STEP);
            }
            _ => {}
        }
    }
    if n > MAX_TYPES {
        return Err(WireError::TooManyTypes);
    }
    Ok(SampleView {
        key: mix(fold(fold(h, sum ^ k), lsum ^ lk), n as u64),
        n,
        values_at: (value_fields == 1).then_some(values_at).flatten(),
    })
}

/// Which sample types only grow, by position.
pub(super) fn cumulative(types: &[(u64, u64)], names: &[u64]) -> Vec<usize> {
    types
        .iter()
        .enumerate()
        .filter(|(_, (t, _))| names.contains(t))
        .map(|(i, _)| i)
        .collect()
}
