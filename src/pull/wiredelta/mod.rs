//! Deltas computed on the protobuf wire bytes, without decoding either profile into
//! messages: the tables (strings, functions, locations) are read in place, every sample's
//! stack becomes a 64-bit key (the frames' function, file and line, and the labels), the
//! previous values of the cumulative types are looked up by key and subtracted, and the
//! samples are rewritten over the current profile's own bytes, location ids and labels
//! as they were. Per stack, a key of each profile and the previous cumulative values
//! are kept (20 bytes); nothing is allocated per frame, and no second copy of the profile
//! is made (a fresh page costs more than the arithmetic done on it).

/// Values per sample this handles (heap has 4 types, the others 2).
pub(super) const MAX_TYPES: usize = 8;
/// Cumulative types per profile this handles (heap and allocs have 2, mutex and block 2).
pub(super) const MAX_CUM: usize = 2;

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum WireError {
    #[error("not a valid pprof profile: {0}")]
    Malformed(&'static str),
    #[error("not a valid pprof profile: {0}")]
    Wire(#[from] crate::pprof::wire::WireError),
    #[error("the baseline's sample types differ")]
    TypesDiffer,
    #[error("more than {MAX_TYPES} sample types")]
    TooManyTypes,
    /// Stacks of the baseline with cumulative values that the new snapshot does not have:
    /// counters never lose a stack, so the process restarted (or the snapshots are out of
    /// order), and a delta would silently drop those values.
    #[error(
        "{stacks} stacks of the baseline ({values} in its first cumulative type) are not in the newer snapshot: the process restarted or the snapshots are out of order, so there is no delta to take"
    )]
    BaseOnly { stacks: usize, values: i64 },
}

pub(super) type R<T> = Result<T, WireError>;

mod prev;
mod rewrite;
mod tables;
mod wire;
use prev::*;
use rewrite::rewrite;
use tables::*;
use wire::*;

/// `current` minus `previous` for the cumulative sample types (raw protobuf in, raw out),
/// written over `current`'s own bytes. Stacks whose values all become zero are left out;
/// the result covers the time from the previous profile to the current one.
///
/// Both profiles are parsed at once on two threads, and the result is written in two halves
/// on two threads. Nothing is allocated per stack but its key and the previous stack's
/// cumulative values.
pub fn delta(previous: Vec<u8>, mut current: Vec<u8>) -> R<Vec<u8>> {
    let (prev, cur_t, mut slots) = parse_both(previous, &current)?;
    let cum = cum_of(&cur_t)?;
    let taken = match_slots(&prev, &mut slots);
    let (stacks, values) = base_only(&prev, &taken);
    if stacks > 0 {
        return Err(WireError::BaseOnly { stacks, values });
    }
    // The result is written in two halves, each over its own bytes, on two threads.
    let nb = cur_t.blocks.len();
    let (split, half) = if nb >= 2 {
        (cur_t.blocks[nb / 2], nb / 2 * BLOCK)
    } else {
        (current.len(), cur_t.samples)
    };
    let (a, b) = current.split_at_mut(split);
    let (first, second) = std::thread::scope(|scope| {
        let h = scope.spawn(|| rewrite(b, half, &slots, &prev, &cur_t, &cum));
        let first = rewrite(a, 0, &slots, &prev, &cur_t, &cum);
        (
            first,
            h.join()
                .unwrap_or(Err(WireError::Malformed("the writer failed"))),
        )
    });
    let ((w1, spill1), (w2, spill2)) = (first?, second?);
    let mut out = if spill1.is_empty() && spill2.is_empty() {
        current.copy_within(split..split + w2, w1);
        current.truncate(w1 + w2);
        current
    } else {
        let mut out = Vec::with_capacity(w1 + spill1.len() + w2 + spill2.len() + 32);
        out.extend_from_slice(&current[..w1]);
        out.extend_from_slice(&spill1);
        out.extend_from_slice(&current[split..split + w2]);
        out.extend_from_slice(&spill2);
        out
    };
    let (t0, t1) = (prev.tables.time_nanos, cur_t.time_nanos);
    let (time, duration) = if t0 > 0 && t1 > t0 {
        (t0, t1 - t0)
    } else {
        (t1, cur_t.duration_nanos)
    };
    if time != 0 {
        out.push(9 << 3);
        put_varint(&mut out, time as u64);
    }
    if duration != 0 {
        out.push(10 << 3);
        put_varint(&mut out, duration as u64);
    }
    Ok(out)
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::pprof::Pprof;
    use crate::pprof::{Limits, decode_raw};
    use prost::Message;

    fn totals(p: &Pprof) -> Vec<i64> {
        (0..p.sample_types().len())
            .map(|i| p.proto.sample.iter().map(|s| s.value[i]).sum())
            .collect()
    }

    /// The wire delta and the message delta agree, on the fixtures of dd-trace-go uploads
    /// (a profile against itself leaves only in-use values) and on profiles that differ.
    #[test]
    fn agrees_with_the_message_delta() {
        for f in ["delta-heap.pprof", "delta-mutex.pprof", "delta-block.pprof"] {
            let raw = std::fs::read(
                std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("tests/fixtures/dd-trace-go-upload")
                    .join(f),
            )
            .expect("fixture");
            let p = Pprof::new(decode_raw(&raw, &Limits::default()).expect("decode")).expect("ok");
            // "Now" is the fixture with every value doubled.
            let mut doubled = p.to_proto();
            for s in &mut doubled.sample {
                for v in &mut s.value {
                    *v *= 2;
                }
            }
            doubled.time_nanos = p.proto.time_nanos + 60_000_000_000;
            let now_raw = doubled.encode_to_vec();
            let now = Pprof::new(doubled).expect("ok");
            let by_messages =
                Pprof::new(super::super::delta::reference::delta(&now, &p).expect("delta"))
                    .expect("ok");
            let wire = delta(raw.clone(), now_raw.clone()).expect("wire delta");
            let by_wire =
                Pprof::new(decode_raw(&wire, &Limits::default()).expect("decode")).expect("ok");
            assert_eq!(totals(&by_wire), totals(&by_messages), "{f}");
            assert_eq!(
                by_wire.proto.sample.len(),
                by_messages.proto.sample.len(),
                "{f}"
            );
            assert_eq!(by_wire.proto.time_nanos, p.proto.time_nanos, "{f}");
            assert_eq!(by_wire.proto.duration_nanos, 60_000_000_000, "{f}");
            // The same, with the stacks now in another order (the lookups then go through
            // the Bloom filter, searches and the table).
            let mut shuffled = Pprof::new(decode_raw(&now_raw, &Limits::default()).expect("d"))
                .expect("ok")
                .to_proto();
            shuffled.sample.reverse();
            let third = shuffled.sample.len() / 3;
            shuffled.sample.rotate_left(third);
            let by_wire = delta(raw.clone(), shuffled.encode_to_vec()).expect("wire delta");
            let by_wire =
                Pprof::new(decode_raw(&by_wire, &Limits::default()).expect("decode")).expect("ok");
            assert_eq!(totals(&by_wire), totals(&by_messages), "{f}, reordered");
            // Against itself: only what is in use stays.
            let same = Pprof::new(
                decode_raw(
                    &delta(raw.clone(), raw.clone()).expect("delta"),
                    &Limits::default(),
                )
                .expect("decode"),
            )
            .expect("ok");
            let types = same.sample_types();
            for (i, t) in totals(&same).iter().enumerate() {
                if super::super::delta::is_cumulative(types[i].0) {
                    assert_eq!(*t, 0, "{f} {}", types[i].0);
                }
            }
        }
    }

    /// A heap profile of `n` stacks `depth` frames deep over 20 functions (all different up
    /// to 20^depth), between two stacks that differ only in their frame's address (two
    /// allocations on one line: one key).
    fn many_stacks(n: usize, scale: i64, depth: u32) -> crate::pprof::proto::Profile {
        use crate::pprof::proto::{Function, Line, Location, Profile, Sample, ValueType};
        let mut strings: Vec<String> = [
            "",
            "alloc_objects",
            "count",
            "alloc_space",
            "bytes",
            "inuse_objects",
            "inuse_space",
            "main.go",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let mut function = Vec::new();
        let mut location = Vec::new();
        for i in 0..20u64 {
            strings.push(format!("main.f{i}"));
            function.push(Function {
                id: i + 1,
                name: strings.len() as i64 - 1,
                filename: 7,
                ..Default::default()
            });
            location.push(Location {
                id: i + 1,
                address: 0x1000 + i * 16,
                line: vec![Line {
                    function_id: i + 1,
                    line: 10 + i as i64,
                    column: 0,
                }],
                ..Default::default()
            });
        }
        // Locations 21 and 22: main.f0 line 99 both, two addresses.
        for id in [21u64, 22] {
            location.push(Location {
                id,
                address: 0x9000 + id,
                line: vec![Line {
                    function_id: 1,
                    line: 99,
                    column: 0,
                }],
                ..Default::default()
            });
        }
        let vt = |t, u| ValueType { r#type: t, unit: u };
        let mut sample = vec![Sample {
            location_id: vec![21, 2],
            value: vec![10 * scale, 100 * scale, 1, 8],
            label: vec![],
        }];
        for k in 0..n as u64 {
            sample.push(Sample {
                location_id: (0..depth).map(|d| k / 20u64.pow(d) % 20 + 1).collect(),
                value: vec![(k as i64 + 1) * scale, (k as i64 + 1) * 64 * scale, 1, 64],
                label: vec![],
            });
        }
        sample.push(Sample {
            location_id: vec![22, 2],
            value: vec![50 * scale, 500 * scale, 1, 8],
            label: vec![],
        });
        Profile {
            sample_type: vec![vt(1, 2), vt(3, 4), vt(5, 2), vt(6, 4)],
            sample,
            function,
            location,
            string_table: strings,
            time_nanos: 1_000_000_000 * scale,
            ..Default::default()
        }
    }

    fn by_stack(p: &Pprof) -> std::collections::BTreeMap<Vec<(String, i64)>, Vec<i64>> {
        let mut m = std::collections::BTreeMap::new();
        for (si, s) in p.proto.sample.iter().enumerate() {
            let frames = p
                .sample_locs(si)
                .iter()
                .flat_map(|&l| p.loc_lines[l as usize].clone())
                .map(|(f, line)| {
                    let name = f.map_or("", |f| p.str(p.proto.function[f].name));
                    (name.to_string(), line)
                })
                .collect();
            let e = m.entry(frames).or_insert_with(|| vec![0; s.value.len()]);
            for (a, b) in e.iter_mut().zip(&s.value) {
                *a += b;
            }
        }
        m
    }

    /// Stacks listed in another order than before go through the Bloom filter, the searches
    /// and the table; a stack that appears twice (one key) takes the previous profile's
    /// values once per occurrence, not twice from the first. Here the second occurrence
    /// takes the larger previous value, so its delta is negative and the sample grows: the
    /// output no longer fits in the current profile's bytes and goes on in a buffer.
    #[test]
    fn reordered_and_repeated_stacks_are_each_subtracted_once() {
        let before = many_stacks(300, 1, 2);
        let mut after = many_stacks(300, 3, 2);
        after.sample.reverse();
        let raw_before = before.encode_to_vec();
        let base = Pprof::new(before).expect("ok");
        let now = Pprof::new(after.clone()).expect("ok");
        let reference =
            Pprof::new(super::super::delta::reference::delta(&now, &base).expect("delta"))
                .expect("ok");
        let wire = delta(raw_before, after.encode_to_vec()).expect("wire delta");
        let wire = Pprof::new(decode_raw(&wire, &Limits::default()).expect("decode")).expect("ok");
        let (got, want) = (by_stack(&wire), by_stack(&reference));
        let differ: Vec<_> = want
            .iter()
            .filter(|(k, v)| got.get(*k) != Some(v))
            .collect();
        assert!(
            differ.is_empty() && got.len() == want.len(),
            "differ: {differ:?}"
        );
        assert_eq!(totals(&wire), totals(&reference));
        // The repeated stack, now first and last: the first (the previous profile's last,
        // 150 allocations now) against the previous first (10); the last (30 now), found
        // through the table, against the previous last (50).
        let (first, last) = (
            &wire.proto.sample[0],
            wire.proto.sample.last().expect("some"),
        );
        assert_eq!([first.value[0], last.value[0]], [150 - 10, 30 - 50]);
    }

    /// Writers other than Go may put the tables before the samples or between them: the
    /// result is the same, each field in its place.
    #[test]
    fn samples_between_other_fields() {
        let before = many_stacks(40, 1, 2);
        let after = many_stacks(40, 2, 2);
        let expected = delta(before.encode_to_vec(), after.encode_to_vec()).expect("delta");
        // The current profile as strings, half the samples, locations, the other half,
        // functions, then the rest.
        let part = |f: &dyn Fn(&mut crate::pprof::proto::Profile)| {
            let mut p = crate::pprof::proto::Profile::default();
            f(&mut p);
            p.encode_to_vec()
        };
        let half = after.sample.len() / 2;
        let mut mixed = Vec::new();
        mixed.extend(part(&|p| p.string_table = after.string_table.clone()));
        mixed.extend(part(&|p| p.sample = after.sample[..half].to_vec()));
        mixed.extend(part(&|p| p.location = after.location.clone()));
        mixed.extend(part(&|p| p.sample = after.sample[half..].to_vec()));
        mixed.extend(part(&|p| p.function = after.function.clone()));
        mixed.extend(part(&|p| {
            p.sample_type = after.sample_type.clone();
            p.time_nanos = after.time_nanos;
        }));
        let got = delta(before.encode_to_vec(), mixed).expect("delta");
        let decode = |b: &[u8]| decode_raw(b, &Limits::default()).expect("decode");
        assert_eq!(decode(&got), decode(&expected));
    }

    /// The previous profile's entries are its stacks' keys and cumulative values, whether
    /// written over its own bytes (samples of 40 bytes and more) or, once they would catch
    /// up with the reading (small samples), into a buffer of their own; values over 32 bits
    /// are kept whole.
    #[test]
    fn previous_entries_over_the_profile_or_beside_it() {
        let heap = std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/dd-trace-go-upload/delta-heap.pprof"),
        )
        .expect("fixture");
        let mut small = many_stacks(100, 1, 2);
        small.sample[7].value[1] = 1 << 40;
        small.sample[9].value[0] = -3;
        for (raw, over) in [(heap, true), (small.encode_to_vec(), false)] {
            let t = tables(&raw).expect("tables");
            let cum = cum_of(&t).expect("cum");
            let mut expected = Vec::new();
            let mut f = Fields::new(&raw);
            let mut v = [0i64; MAX_TYPES];
            while let Some(x) = f.next_field() {
                if let (_, Field::Bytes(2, m)) = x.expect("field") {
                    let key = sample(m, &t, &mut v).expect("sample").key;
                    expected.push((key, [v[cum[0]], v[cum[1]]]));
                }
            }
            let (prev, _, _) = parse_both(raw.clone(), &raw).expect("parse");
            assert_eq!(prev.own.iter().all(Option::is_none), over);
            let got: Vec<_> = (0..prev.len())
                .map(|i| (prev.key(i), prev.values(i)))
                .collect();
            assert_eq!(got, expected);
        }
    }

    /// A profile of many blocks: the threads take blocks in turn and write the halves of the
    /// result over their own bytes; the result is the message-level delta's, stack by stack.
    #[test]
    fn profiles_of_many_blocks() {
        let n = 5 * BLOCK + 123;
        let before = many_stacks(n, 1, 4);
        let mut after = many_stacks(n, 3, 4);
        // New stacks first, as Go lists them (699 new ones, each a last stack called from one
        // more frame), and a stretch of stacks out of their order.
        after.sample[2 * BLOCK..3 * BLOCK].reverse();
        let mut fresh: Vec<_> = after.sample[n - 700..n - 1].to_vec();
        for s in &mut fresh {
            s.location_id.push(21);
        }
        after.sample.splice(0..0, fresh);
        // Some stacks no longer in use and without new allocations: left out.
        for s in after.sample.iter_mut().skip(1000).step_by(7) {
            s.value = vec![s.value[0] / 3, s.value[1] / 3, 0, 0];
        }
        let base = Pprof::new(before.clone()).expect("ok");
        let now = Pprof::new(after.clone()).expect("ok");
        let reference =
            Pprof::new(super::super::delta::reference::delta(&now, &base).expect("delta"))
                .expect("ok");
        let wire = delta(before.encode_to_vec(), after.encode_to_vec()).expect("wire delta");
        let big = Limits {
            fields: 10_000_000,
            ..Limits::default()
        };
        let wire = Pprof::new(decode_raw(&wire, &big).expect("decode")).expect("ok");
        assert!(
            wire.proto.sample.len() < n - 500,
            "{}",
            wire.proto.sample.len()
        );
        // The repeated stack stays two samples; the message-level delta merges them.
        assert_eq!(wire.proto.sample.len(), reference.proto.sample.len() + 1);
        let (got, want) = (by_stack(&wire), by_stack(&reference));
        let differ: Vec<_> = want
            .iter()
            .filter(|(k, v)| got.get(*k) != Some(v))
            .take(5)
            .collect();
        assert!(
            differ.is_empty() && got.len() == want.len(),
            "differ: {differ:?}"
        );
    }

    /// A baseline stack the newer snapshot lacks (a restarted process, snapshots out of order)
    /// refuses the delta with the reason instead of a silently smaller total; a stack that
    /// only stopped growing is still there, and is no reason.
    #[test]
    fn a_stack_only_the_baseline_has_refuses_the_delta() {
        let before = many_stacks(50, 2, 3);
        let mut after = many_stacks(50, 3, 3);
        after.sample.remove(17);
        after.sample.remove(30);
        match delta(before.encode_to_vec(), after.encode_to_vec()) {
            Err(WireError::BaseOnly { stacks, values }) => {
                assert_eq!(stacks, 2);
                assert!(values > 0);
            }
            other => panic!("{other:?}"),
        }
        let same = many_stacks(50, 2, 3);
        assert!(delta(before.encode_to_vec(), same.encode_to_vec()).is_ok());
    }

    /// Labels are part of a stack's identity: the same frames with another label are another
    /// stack, and the same label is the same stack whatever the string table's order.
    #[test]
    fn labels_tell_stacks_apart() {
        use crate::pprof::proto::Label;
        let with_labels = |scale: i64, swap: bool| {
            let mut p = many_stacks(3, scale, 2);
            // Two strings for label keys, in either order in the string table.
            let (a, b) = (p.string_table.len() as i64, p.string_table.len() as i64 + 1);
            let (x, y) = if swap { (b, a) } else { (a, b) };
            p.string_table
                .push(if swap { "span" } else { "bytes" }.into());
            p.string_table
                .push(if swap { "bytes" } else { "span" }.into());
            let label = |key: i64, num: i64| Label {
                key,
                num,
                ..Default::default()
            };
            // Frames of sample 1, with three label sets.
            let frames = p.sample[1].location_id.clone();
            p.sample = [
                vec![label(x, 64)],
                vec![label(x, 128)],
                vec![label(x, 64), label(y, 7)],
            ]
            .into_iter()
            .enumerate()
            .map(|(i, labels)| crate::pprof::proto::Sample {
                location_id: frames.clone(),
                value: vec![(i as i64 + 1) * scale, 10 * scale, 1, 64],
                label: labels,
            })
            .collect();
            p
        };
        let before = with_labels(1, false);
        let mut after = with_labels(5, true);
        after.sample.reverse();
        let got = delta(before.encode_to_vec(), after.encode_to_vec()).expect("delta");
        let got = decode_raw(&got, &Limits::default()).expect("decode");
        // Reversed: label sets 3, 2, 1, each less its own previous values.
        let allocs: Vec<i64> = got.sample.iter().map(|s| s.value[0]).collect();
        assert_eq!(allocs, [15 - 3, 10 - 2, 5 - 1]);
        // Keys differ by label value and by label count.
        let t = tables(&before.encode_to_vec()).expect("tables");
        let raw = before.encode_to_vec();
        let mut keys = Vec::new();
        let mut f = Fields::new(&raw);
        let mut v = [0i64; MAX_TYPES];
        while let Some(x) = f.next_field() {
            if let (_, Field::Bytes(2, m)) = x.expect("field") {
                keys.push(
                    sample_fast::<false, true>(m, &t, &mut v)
                        .expect("sample")
                        .key,
                );
            }
        }
        assert!(keys[0] != keys[1] && keys[0] != keys[2] && keys[1] != keys[2]);
    }
}
