//! A decoded profile with its references checked and resolved to indexes: every string,
//! location, function and mapping a sample points at exists, and every sample has one value
//! per sample type — the checks `go tool pprof` makes before it reports anything.

use super::fasthash::FastMap;
use crate::Error;

use super::proto::Profile;

/// A checked profile: `proto` plus index tables.
pub struct Pprof {
    pub proto: Profile,
    /// Per location (by position in `proto.location`): its mapping's position, if any.
    pub loc_mapping: Vec<Option<usize>>,
    /// Per location: (function position or None, line) for each line, innermost first.
    pub loc_lines: Vec<Vec<(Option<usize>, i64)>>,
    /// Every sample's location positions, leaf first, one sample after the other (one
    /// allocation, not one per sample); `sample_span[i]` is where sample `i`'s are.
    sample_loc: Vec<u32>,
    sample_span: Vec<(usize, usize)>,
}

fn bad(what: String) -> Error {
    Error::Malformed(what)
}

/// The string table's size, to check the indexes that name a string.
#[derive(Clone, Copy)]
struct Strings(i64);

impl Strings {
    fn check(self, i: i64, what: &str) -> Result<(), Error> {
        let n = self.0;
        if i < 0 || i >= n.max(1) || (n == 0 && i != 0) {
            return Err(bad(format!("{what} names string {i}; the table has {n}")));
        }
        Ok(())
    }
}

/// Positions by id. Go's runtime numbers mappings, functions and locations 1, 2, 3…: then a
/// position is the id - 1 and no two can share an id; only other numberings need a map.
struct Ids {
    dense: bool,
    len: usize,
    map: FastMap<u64, usize>,
}

impl Ids {
    /// The ids of `items` (`what`: "mapping", "function", "location"), none 0, none twice.
    fn new<T>(items: &[T], id: impl Fn(&T) -> u64, what: &str) -> Result<Ids, Error> {
        let dense = items.iter().enumerate().all(|(i, t)| id(t) == i as u64 + 1);
        let mut map = FastMap::default();
        if !dense {
            map.reserve(items.len());
            for (i, t) in items.iter().enumerate() {
                let id = id(t);
                if id == 0 {
                    return Err(bad(format!("a {what} has id 0")));
                }
                if map.insert(id, i).is_some() {
                    return Err(bad(format!("two {what}s have id {id}")));
                }
            }
        }
        Ok(Ids {
            dense,
            len: items.len(),
            map,
        })
    }

    #[inline]
    fn get(&self, id: u64) -> Option<usize> {
        if self.dense {
            let i = usize::try_from(id.checked_sub(1)?).ok()?;
            (i < self.len).then_some(i)
        } else {
            self.map.get(&id).copied()
        }
    }
}

/// The string table's size, the locations' positions by id, and each location's mapping
/// and lines: every reference but the samples' checked.
fn tables(proto: &Profile) -> Result<(Strings, Ids, LocationTables), Error> {
    let strings = Strings(proto.string_table.len() as i64);
    check_strings(proto, strings)?;
    let mappings = Ids::new(&proto.mapping, |m| m.id, "mapping")?;
    let functions = Ids::new(&proto.function, |f| f.id, "function")?;
    let locations = Ids::new(&proto.location, |l| l.id, "location")?;
    Ok((
        strings,
        locations,
        location_tables(proto, &mappings, &functions)?,
    ))
}

/// Every sample's location positions, and where each sample's are among them.
type SampleTables = (Vec<u32>, Vec<(usize, usize)>);
/// Per location: its mapping's position and its lines' (function position, line).
type LocationTables = (Vec<Option<usize>>, Vec<Vec<(Option<usize>, i64)>>);

/// What one heap allocation of `cap` elements of `T` takes: its bytes and the allocator's
/// header and rounding (16 bytes, as glibc's malloc does), nothing for an empty vector.
pub(crate) fn alloc_bytes<T>(cap: usize) -> u64 {
    let bytes = (cap * std::mem::size_of::<T>()) as u64;
    if bytes == 0 {
        0
    } else {
        bytes.next_multiple_of(16) + 16
    }
}

impl Pprof {
    /// The bytes the decoded profile holds on the heap, counted allocation by allocation:
    /// what the ui charges for keeping it.
    pub fn heap_bytes(&self) -> u64 {
        let p = &self.proto;
        let samples: u64 = p
            .sample
            .iter()
            .map(|s| {
                alloc_bytes::<u64>(s.location_id.capacity())
                    + alloc_bytes::<i64>(s.value.capacity())
                    + alloc_bytes::<crate::proto::Label>(s.label.capacity())
            })
            .sum();
        let lines: u64 = p
            .location
            .iter()
            .map(|l| alloc_bytes::<crate::proto::Line>(l.line.capacity()))
            .sum();
        let strings: u64 = p
            .string_table
            .iter()
            .map(|s| alloc_bytes::<u8>(s.capacity()))
            .sum();
        let loc_lines: u64 = self
            .loc_lines
            .iter()
            .map(|l| alloc_bytes::<(Option<usize>, i64)>(l.capacity()))
            .sum();
        samples
            + lines
            + strings
            + loc_lines
            + alloc_bytes::<crate::proto::Sample>(p.sample.capacity())
            + alloc_bytes::<crate::proto::Location>(p.location.capacity())
            + alloc_bytes::<crate::proto::Function>(p.function.capacity())
            + alloc_bytes::<crate::proto::Mapping>(p.mapping.capacity())
            + alloc_bytes::<String>(p.string_table.capacity())
            + alloc_bytes::<crate::proto::ValueType>(p.sample_type.capacity())
            + alloc_bytes::<i64>(p.comment.capacity())
            + alloc_bytes::<Option<usize>>(self.loc_mapping.capacity())
            + alloc_bytes::<Vec<(Option<usize>, i64)>>(self.loc_lines.capacity())
            + alloc_bytes::<u32>(self.sample_loc.capacity())
            + alloc_bytes::<(usize, usize)>(self.sample_span.capacity())
    }

    /// The profile checked and indexed. Each sample's `location_id` is emptied once its
    /// positions are in `sample_loc` (read them with [`Pprof::sample_locs`]): a large
    /// profile's ids are much of its memory, and they are not kept twice.
    pub fn new(mut proto: Profile) -> Result<Pprof, Error> {
        let (strings, locations, (loc_mapping, loc_lines)) = tables(&proto)?;
        let (sample_loc, sample_span) = sample_tables(&proto, &locations, strings)?;
        for s in &mut proto.sample {
            s.location_id = Vec::new();
        }
        Ok(Pprof {
            proto,
            loc_mapping,
            loc_lines,
            sample_loc,
            sample_span,
        })
    }

    /// [`Pprof::new`] of a profile whose samples' location ids were read into one array
    /// (`ids[span.0..span.1]` for each sample, in `spans`), their own `location_id` left
    /// empty: the ids become positions where they are.
    pub(crate) fn with_location_ids(
        proto: Profile,
        mut ids: Vec<u32>,
        spans: Vec<(usize, usize)>,
    ) -> Result<Pprof, Error> {
        let (strings, locations, (loc_mapping, loc_lines)) = tables(&proto)?;
        for (n, (s, &(a, b))) in proto.sample.iter().zip(&spans).enumerate() {
            check_sample(n, s, proto.sample_type.len(), strings)?;
            for id in &mut ids[a..b] {
                *id = locations
                    .get(u64::from(*id))
                    .ok_or_else(|| unknown_location(n, *id))? as u32;
            }
        }
        Ok(Pprof {
            proto,
            loc_mapping,
            loc_lines,
            sample_loc: ids,
            sample_span: spans,
        })
    }

    /// Sample `i`'s location ids, leaf first (what its `location_id` held before it was
    /// emptied).
    pub fn location_ids(&self, i: usize) -> Vec<u64> {
        self.sample_locs(i)
            .iter()
            .map(|&l| self.proto.location[l as usize].id)
            .collect()
    }

    /// The profile as a whole message again, every sample's `location_id` filled (to encode
    /// it, or to change it and check it anew).
    pub fn to_proto(&self) -> Profile {
        let mut p = self.proto.clone();
        for (i, s) in p.sample.iter_mut().enumerate() {
            s.location_id = self.location_ids(i);
        }
        p
    }

    /// Sample `i`'s location positions, leaf first.
    #[inline]
    pub fn sample_locs(&self, i: usize) -> &[u32] {
        let (a, b) = self.sample_span[i];
        &self.sample_loc[a..b]
    }

    /// This profile with other lines per location and only the samples given (each with its
    /// location positions, leaf first): what a filter leaves.
    pub(super) fn filtered(
        &self,
        loc_lines: Vec<Vec<(Option<usize>, i64)>>,
        samples: impl Iterator<Item = (usize, Vec<u32>)>,
    ) -> Pprof {
        let mut sample = Vec::new();
        let mut sample_loc = Vec::new();
        let mut sample_span = Vec::new();
        for (si, locs) in samples {
            let s = &self.proto.sample[si];
            sample.push(super::proto::Sample {
                location_id: Vec::new(),
                value: s.value.clone(),
                label: s.label.clone(),
            });
            let start = sample_loc.len();
            sample_loc.extend_from_slice(&locs);
            sample_span.push((start, sample_loc.len()));
        }
        let proto = Profile {
            sample_type: self.proto.sample_type.clone(),
            sample,
            mapping: self.proto.mapping.clone(),
            location: self.proto.location.clone(),
            function: self.proto.function.clone(),
            string_table: self.proto.string_table.clone(),
            drop_frames: self.proto.drop_frames,
            keep_frames: self.proto.keep_frames,
            time_nanos: self.proto.time_nanos,
            duration_nanos: self.proto.duration_nanos,
            period_type: self.proto.period_type,
            period: self.proto.period,
            comment: self.proto.comment.clone(),
            default_sample_type: self.proto.default_sample_type,
            doc_url: self.proto.doc_url,
        };
        Pprof {
            proto,
            loc_mapping: self.loc_mapping.clone(),
            loc_lines,
            sample_loc,
            sample_span,
        }
    }

    /// Drops the first `n` locations of sample `i` (the leaf side), as pruning frames does.
    pub(super) fn drop_leaf_locs(&mut self, i: usize, n: usize) {
        let (a, b) = &mut self.sample_span[i];
        *a = (*a + n).min(*b);
    }

    /// Its totals per sample type, as [`crate::totals::totals`] reads them off the bytes.
    pub fn totals(&self) -> crate::totals::Totals {
        let mut sums = vec![0i128; self.proto.sample_type.len()];
        for s in &self.proto.sample {
            for (sum, v) in sums.iter_mut().zip(&s.value) {
                *sum += i128::from(*v);
            }
        }
        let mut labels = crate::totals::LabelSums::default();
        let mut pairs = Vec::new();
        for s in &self.proto.sample {
            if s.label.is_empty() {
                continue;
            }
            pairs.clear();
            pairs.extend(s.label.iter().map(|l| (l.key, l.str)));
            labels.add(&pairs, &s.value);
        }
        crate::totals::Totals {
            types: self
                .sample_types()
                .iter()
                .zip(sums)
                .map(|((t, u), v)| (t.to_string(), u.to_string(), v as f64))
                .collect(),
            samples: self.proto.sample.len(),
            time_nanos: self.proto.time_nanos,
            duration_nanos: self.proto.duration_nanos,
            labels: labels.finish(|i| self.str(i).to_string(), self.proto.sample_type.len()),
        }
    }

    pub fn str(&self, i: i64) -> &str {
        usize::try_from(i)
            .ok()
            .and_then(|i| self.proto.string_table.get(i))
            .map_or("", String::as_str)
    }

    /// (type, unit) of every sample type.
    pub fn sample_types(&self) -> Vec<(&str, &str)> {
        self.proto
            .sample_type
            .iter()
            .map(|v| (self.str(v.r#type), self.str(v.unit)))
            .collect()
    }

    /// The sample type to report, as `go tool pprof -sample_index`: a name, an index, or
    /// (None) the profile's default sample type, else the last.
    pub fn sample_index(&self, name: Option<&str>) -> Result<usize, Error> {
        let types = self.sample_types();
        if types.is_empty() {
            return Err(Error::NoSampleTypes);
        }
        let Some(name) = name.filter(|n| !n.is_empty()) else {
            let dst = self.str(self.proto.default_sample_type);
            if !dst.is_empty()
                && let Some(i) = types.iter().position(|(t, _)| *t == dst)
            {
                return Ok(i);
            }
            return Ok(types.len() - 1);
        };
        if let Ok(i) = name.parse::<i64>() {
            if i < 0 || i as usize >= types.len() {
                return Err(Error::SampleIndexOutOfRange {
                    asked: name.to_string(),
                    last: types.len() - 1,
                });
            }
            return Ok(i as usize);
        }
        let no_inuse = name.strip_prefix("inuse_").unwrap_or(name);
        types
            .iter()
            .position(|(t, _)| *t == name || *t == no_inuse)
            .ok_or_else(|| Error::UnknownSampleIndex {
                asked: name.to_string(),
                types: types.iter().map(|(t, _)| t.to_string()).collect(),
            })
    }
}

/// Every string index outside the samples and locations names a string of the table.
fn check_strings(proto: &Profile, strings: Strings) -> Result<(), Error> {
    if strings.0 > 0 && !proto.string_table[0].is_empty() {
        return Err(bad("string 0 is not empty".into()));
    }
    for vt in proto.sample_type.iter().chain(proto.period_type.iter()) {
        strings.check(vt.r#type, "a sample type")?;
        strings.check(vt.unit, "a sample type's unit")?;
    }
    for c in &proto.comment {
        strings.check(*c, "a comment")?;
    }
    strings.check(proto.default_sample_type, "default_sample_type")?;
    strings.check(proto.drop_frames, "drop_frames")?;
    strings.check(proto.keep_frames, "keep_frames")?;
    for m in &proto.mapping {
        strings.check(m.filename, "a mapping's file")?;
        strings.check(m.build_id, "a mapping's build id")?;
    }
    for f in &proto.function {
        strings.check(f.name, "a function's name")?;
        strings.check(f.system_name, "a function's system name")?;
        strings.check(f.filename, "a function's file")?;
    }
    Ok(())
}

/// Each location's mapping and lines, resolved to positions.
fn location_tables(
    proto: &Profile,
    mappings: &Ids,
    functions: &Ids,
) -> Result<LocationTables, Error> {
    let mut loc_mapping = Vec::with_capacity(proto.location.len());
    let mut loc_lines = Vec::with_capacity(proto.location.len());
    for l in &proto.location {
        loc_mapping.push(if l.mapping_id == 0 {
            None
        } else {
            Some(mappings.get(l.mapping_id).ok_or_else(|| {
                bad(format!(
                    "location {} names mapping {}, which is not in the profile",
                    l.id, l.mapping_id
                ))
            })?)
        });
        let mut lines = Vec::with_capacity(l.line.len());
        for ln in &l.line {
            let f = if ln.function_id == 0 {
                None
            } else {
                Some(functions.get(ln.function_id).ok_or_else(|| {
                    bad(format!(
                        "location {} names function {}, which is not in the profile",
                        l.id, ln.function_id
                    ))
                })?)
            };
            lines.push((f, ln.line));
        }
        loc_lines.push(lines);
    }
    Ok((loc_mapping, loc_lines))
}

/// Every sample's locations as positions (one allocation for all), checked: one value per
/// sample type, every location there, every label's strings in the table.
fn sample_tables(
    proto: &Profile,
    locations: &Ids,
    strings: Strings,
) -> Result<SampleTables, Error> {
    let types = proto.sample_type.len();
    let all: usize = proto.sample.iter().map(|s| s.location_id.len()).sum();
    let mut sample_loc = Vec::with_capacity(all);
    let mut sample_span = Vec::with_capacity(proto.sample.len());
    for (n, s) in proto.sample.iter().enumerate() {
        check_sample(n, s, types, strings)?;
        let start = sample_loc.len();
        for &id in &s.location_id {
            sample_loc.push(locations.get(id).ok_or_else(|| unknown_location(n, id))? as u32);
        }
        sample_span.push((start, sample_loc.len()));
    }
    Ok((sample_loc, sample_span))
}

/// Sample `n` has one value per sample type, and its labels name strings that exist.
fn check_sample(
    n: usize,
    s: &super::proto::Sample,
    types: usize,
    strings: Strings,
) -> Result<(), Error> {
    if s.value.len() != types {
        return Err(bad(format!(
            "sample {n} has {} values for {types} sample types",
            s.value.len()
        )));
    }
    for l in &s.label {
        strings.check(l.key, "a label key")?;
        strings.check(l.str, "a label value")?;
        strings.check(l.num_unit, "a label unit")?;
    }
    Ok(())
}

fn unknown_location(n: usize, id: impl std::fmt::Display) -> Error {
    bad(format!(
        "sample {n} names location {id}, which is not in the profile"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::{Function, Line, Location, Sample, ValueType};

    /// Two functions and two locations with the ids given, one sample per list of locations.
    fn profile(fn_ids: [u64; 2], loc_ids: [u64; 2], samples: &[&[u64]]) -> Profile {
        Profile {
            sample_type: vec![ValueType { r#type: 1, unit: 2 }],
            string_table: ["", "samples", "count", "main", "work"]
                .map(String::from)
                .to_vec(),
            function: (0..2)
                .map(|i| Function {
                    id: fn_ids[i],
                    name: 3 + i as i64,
                    ..Default::default()
                })
                .collect(),
            location: (0..2)
                .map(|i| Location {
                    id: loc_ids[i],
                    line: vec![Line {
                        function_id: fn_ids[i],
                        line: 1,
                        column: 0,
                    }],
                    ..Default::default()
                })
                .collect(),
            sample: samples
                .iter()
                .map(|l| Sample {
                    location_id: l.to_vec(),
                    value: vec![1],
                    label: vec![],
                })
                .collect(),
            ..Default::default()
        }
    }

    fn error(p: Profile) -> String {
        match Pprof::new(p) {
            Ok(_) => panic!("accepted"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn ids_numbered_from_one_and_ids_numbered_otherwise_resolve_alike() {
        for (f, l) in [([1, 2], [1, 2]), ([7, 3], [90, 12])] {
            let p = Pprof::new(profile(f, l, &[&[l[1], l[0]], &[l[0]]])).expect("valid");
            assert_eq!(p.sample_locs(0), &[1, 0], "{f:?} {l:?}");
            assert_eq!(p.sample_locs(1), &[0]);
            assert_eq!(p.loc_lines[0][0].0, Some(0));
            assert_eq!(p.loc_lines[1][0].0, Some(1));
        }
    }

    #[test]
    fn ids_that_name_nothing_or_twice_are_refused() {
        let e = error(profile([1, 2], [1, 2], &[&[3]]));
        assert!(e.contains("sample 0 names location 3"), "{e}");
        let e = error(profile([1, 2], [5, 9], &[&[1]]));
        assert!(e.contains("names location 1"), "{e}");
        let e = error(profile([1, 2], [4, 4], &[&[4]]));
        assert!(e.contains("two locations have id 4"), "{e}");
        let e = error(profile([2, 2], [1, 2], &[&[1]]));
        assert!(e.contains("two functions have id 2"), "{e}");
        let e = error(profile([1, 2], [0, 1], &[&[1]]));
        assert!(e.contains("a location has id 0"), "{e}");
        let mut p = profile([1, 2], [1, 2], &[&[1]]);
        p.location[1].line[0].function_id = 3;
        let e = error(p);
        assert!(e.contains("location 2 names function 3"), "{e}");
    }

    #[test]
    fn pruned_leaf_frames_leave_the_rest_of_the_sample() {
        let mut p = Pprof::new(profile([1, 2], [1, 2], &[&[2, 1], &[1]])).expect("valid");
        p.drop_leaf_locs(0, 1);
        assert_eq!(p.sample_locs(0), &[0]);
        p.drop_leaf_locs(1, 5);
        assert_eq!(p.sample_locs(1), &[] as &[u32]);
    }
}
