//! The result written over the current profile's own bytes: its samples with their values
//! made deltas (or dropped when nothing changed), every other field as it was.

use super::*;

/// Writes one region of the current profile's top-level fields over itself: samples with
/// their cumulative values replaced (and dropped when every value is zero), time and
/// duration left out, everything else as it was. Output never runs ahead of input unless a
/// sample grows (a negative delta takes ten bytes); from there on the output goes to a
/// buffer of its own. Returns how many bytes are in place at the region's start and that
/// buffer.
pub(super) fn rewrite(
    region: &mut [u8],
    first_sample: usize,
    slots: &[u64],
    prev: &Prev,
    cur_t: &Tables,
    cum: &[usize],
) -> R<(usize, Vec<u8>)> {
    let mut w = 0usize;
    let mut spill: Vec<u8> = Vec::new();
    let mut spilled = false;
    let mut tmp: Vec<u8> = Vec::with_capacity(256);
    let mut packed: Vec<u8> = Vec::with_capacity(64);
    let mut values = [0i64; MAX_TYPES];
    let mut j = first_sample;
    let mut r = 0usize;
    while r < region.len() {
        let start = r;
        let mut f = Fields {
            buf: &*region,
            at: r,
        };
        let (_, field) = f.read_field()?;
        let end = f.at;
        r = end;
        let out: &[u8] = match field {
            Field::Varint(9 | 10, _) => continue,
            Field::Bytes(2, m) => {
                let SampleView { n, values_at, .. } =
                    sample_fast::<true, false>(m, cur_t, &mut values)?;
                let slot = slots.get(j).copied().unwrap_or(NONE);
                j += 1;
                if !delta_packed(&mut values, n, slot, prev, cum, &mut packed) {
                    continue;
                }
                let values_field = 1 + varint_len(packed.len() as u64) + packed.len();
                if let Some((vs, ve)) = values_at
                    && ve - vs == values_field
                    && !spilled
                {
                    // The usual case: the values take as many bytes as before, so the
                    // message is moved as it was and its values overwritten.
                    let at = end - m.len() - start + vs + 1 + varint_len(packed.len() as u64);
                    if w != start {
                        region.copy_within(start..end, w);
                    }
                    region[w + at..w + at + packed.len()].copy_from_slice(&packed);
                    w += end - start;
                    continue;
                }
                reencode(m, values_at, &packed, values_field, &mut tmp)?;
                &tmp
            }
            _ => {
                // As it was.
                if !spilled {
                    region.copy_within(start..end, w);
                    w += end - start;
                } else {
                    spill.extend_from_slice(&region[start..end]);
                }
                continue;
            }
        };
        if !spilled && w + out.len() <= end {
            region[w..w + out.len()].copy_from_slice(out);
            w += out.len();
        } else {
            spilled = true;
            spill.extend_from_slice(out);
        }
    }
    Ok((w, spill))
}

/// Makes a sample's cumulative values (the first `n` of `values`) deltas against its previous `slot` (when it had one)
/// and packs them into `packed`; false when every value is zero (the sample is dropped).
#[inline(always)]
fn delta_packed(
    values: &mut [i64; MAX_TYPES],
    n: usize,
    slot: u64,
    prev: &Prev,
    cum: &[usize],
    packed: &mut Vec<u8>,
) -> bool {
    if slot != NONE {
        let p = prev.values(slot as usize);
        for (k, &c) in cum.iter().enumerate() {
            values[c] = values[c].wrapping_sub(p[k]);
        }
    }
    let values = &values[..n];
    if values.iter().all(|&x| x == 0) {
        return false;
    }
    packed.clear();
    for &x in values {
        put_varint(packed, x as u64);
    }
    true
}

/// A sample whose values no longer take the bytes they took, written anew into `tmp`: its
/// other fields as they were, in order, and `packed` as its values.
#[inline(never)]
fn reencode(
    m: &[u8],
    values_at: Option<(usize, usize)>,
    packed: &[u8],
    values_field: usize,
    tmp: &mut Vec<u8>,
) -> R<()> {
    tmp.clear();
    let (head, tail): (&[u8], &[u8]) = match values_at {
        Some((vs, ve)) => (&m[..vs], &m[ve..]),
        None => {
            // Values spread over several fields: the other fields, in order.
            let mut g = Fields::new(m);
            let mut rest = Vec::with_capacity(m.len());
            while let Some(x) = g.next_field() {
                let (st, y) = x?;
                if !matches!(y, Field::Bytes(2, _) | Field::Varint(2, _)) {
                    rest.extend_from_slice(&m[st..g.at]);
                }
            }
            tmp.push(0x12);
            put_varint(tmp, (rest.len() + values_field) as u64);
            tmp.extend_from_slice(&rest);
            (&[], &[])
        }
    };
    if values_at.is_some() {
        tmp.push(0x12);
        put_varint(tmp, (head.len() + values_field + tail.len()) as u64);
        tmp.extend_from_slice(head);
    }
    tmp.push(0x12);
    put_varint(tmp, packed.len() as u64);
    tmp.extend_from_slice(packed);
    tmp.extend_from_slice(tail);
    Ok(())
}
