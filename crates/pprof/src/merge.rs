//! Profiles merged into one, as `go tool pprof A B C` (and `-proto`) merges them: their
//! sample types must be the same, mappings, functions and locations that are the same are
//! kept once, samples with the same stack and labels have their values added, and the
//! header is the sources' together (earliest time, durations added, largest period, the
//! comments each once). Profiles are added one at a time, so a range of a thousand captures
//! holds one decoded capture beside what is merged so far.

use crate::Error;
use crate::fasthash::FastMap;
use crate::model::Pprof;
use crate::proto::{Function, Label, Line, Location, Mapping, Profile, Sample, ValueType};

type MappingKey = (u64, u64, u64, u32, u32);
type FunctionKey = (u32, u32, u32, i64);
type LocationKey = (u64, u64, bool, Vec<(u64, i64, i64)>);
type SampleKey = (Vec<u64>, Vec<(u32, u32, i64, u32)>);

/// What is merged so far.
#[derive(Default)]
pub struct Merger {
    strings: Vec<String>,
    string_ids: FastMap<String, u32>,
    types: Vec<(u32, u32)>,
    period_type: Option<(u32, u32)>,
    mappings: Vec<Mapping>,
    mapping_ids: FastMap<MappingKey, u64>,
    functions: Vec<Function>,
    function_ids: FastMap<FunctionKey, u64>,
    locations: Vec<Location>,
    location_ids: FastMap<LocationKey, u64>,
    samples: Vec<Sample>,
    sample_ids: FastMap<SampleKey, usize>,
    time_nanos: i64,
    duration_nanos: i64,
    period: i64,
    comments: Vec<u32>,
    doc_url: u32,
    drop_frames: u32,
    keep_frames: u32,
    default_sample_type: u32,
    /// Profiles added.
    pub added: usize,
    /// Bytes of the strings, and of the stacks of the samples kept (for [`Merger::heap_bytes`]).
    string_bytes: u64,
    stack_ids: u64,
}

impl Merger {
    pub fn new() -> Merger {
        let mut m = Merger::default();
        m.intern("");
        m
    }

    fn intern(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.string_ids.get(s) {
            return i;
        }
        let i = self.strings.len() as u32;
        self.strings.push(s.to_string());
        self.string_ids.insert(s.to_string(), i);
        self.string_bytes += 2 * s.len() as u64 + 64;
        i
    }

    /// `p`'s string `i` interned, through `memo` (`p`'s string index → the merge's id).
    fn intern_at(&mut self, p: &Pprof, i: i64, memo: &mut [u32]) -> u32 {
        let slot = usize::try_from(i).ok().filter(|&i| i < memo.len());
        if let Some(at) = slot
            && memo[at] != u32::MAX
        {
            return memo[at];
        }
        let id = self.intern(p.str(i));
        if let Some(at) = slot {
            memo[at] = id;
        }
        id
    }

    /// What the merge holds, roughly (its tables, keys and maps), to charge a budget with.
    pub fn heap_bytes(&self) -> u64 {
        let v = self.types.len().max(1) as u64;
        self.string_bytes
            + self.mappings.len() as u64 * 160
            + self.functions.len() as u64 * 120
            + self.locations.len() as u64 * 200
            + self.samples.len() as u64 * (150 + 16 * v)
            + self.stack_ids * 16
    }

    fn type_name(&self, t: &[(u32, u32)]) -> String {
        t.iter()
            .map(|(a, b)| {
                format!(
                    "{}/{}",
                    self.strings[*a as usize], self.strings[*b as usize]
                )
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Adds a profile's samples (those whose values are all zero are left out, as go's
    /// merge does) and its header.
    pub fn add(&mut self, p: &Pprof) -> Result<(), Error> {
        self.add_where(p, |_| true)
    }

    /// [`Merger::add`] of the samples `keep` takes (by position in `p`).
    pub fn add_where(&mut self, p: &Pprof, keep: impl Fn(usize) -> bool) -> Result<(), Error> {
        let s = |i: i64| p.str(i);
        let types: Vec<(u32, u32)> = p
            .proto
            .sample_type
            .iter()
            .map(|v| (self.intern(s(v.r#type)), self.intern(s(v.unit))))
            .collect();
        let period_type = p
            .proto
            .period_type
            .map(|v| (self.intern(s(v.r#type)), self.intern(s(v.unit))));
        if self.added == 0 {
            self.types = types;
            self.period_type = period_type;
            self.default_sample_type = self.intern(s(p.proto.default_sample_type));
        } else {
            if types != self.types {
                return Err(Error::SampleTypes {
                    first: self.type_name(&self.types),
                    other: self.type_name(&types),
                });
            }
            let (a, b) = (
                self.period_type.unwrap_or((0, 0)),
                period_type.unwrap_or((0, 0)),
            );
            if a != b {
                return Err(Error::PeriodTypes {
                    first: self.type_name(&[a]),
                    other: self.type_name(&[b]),
                });
            }
        }
        self.header(p);
        let mapping_of = self.map_mappings(p);
        let function_of = self.map_functions(p);
        let location_of = self.map_locations(p, &mapping_of, &function_of);
        // Each of `p`'s strings interned once, though its samples' labels repeat them.
        let mut memo = vec![u32::MAX; p.proto.string_table.len()];
        for (i, sample) in p.proto.sample.iter().enumerate() {
            if sample.value.iter().all(|v| *v == 0) || !keep(i) {
                continue;
            }
            let stack: Vec<u64> = p
                .sample_locs(i)
                .iter()
                .map(|&l| location_of[l as usize])
                .collect();
            self.add_sample(p, stack, sample, &mut memo);
        }
        self.added += 1;
        Ok(())
    }

    /// One sample of `p` on the merge's `stack`: its values added to the sample of the same
    /// stack and labels, or a sample of its own.
    fn add_sample(&mut self, p: &Pprof, stack: Vec<u64>, sample: &Sample, memo: &mut [u32]) {
        let mut labels: Vec<(u32, u32, i64, u32)> = sample
            .label
            .iter()
            .map(|l| {
                (
                    self.intern_at(p, l.key, memo),
                    self.intern_at(p, l.str, memo),
                    l.num,
                    self.intern_at(p, l.num_unit, memo),
                )
            })
            .collect();
        labels.sort_unstable();
        let key = (stack, labels);
        if let Some(&at) = self.sample_ids.get(&key) {
            for (v, add) in self.samples[at].value.iter_mut().zip(&sample.value) {
                *v = v.wrapping_add(*add);
            }
            return;
        }
        self.stack_ids += key.0.len() as u64 * 2;
        self.samples.push(Sample {
            location_id: key.0.clone(),
            value: sample.value.clone(),
            label: key
                .1
                .iter()
                .map(|&(k, v, num, unit)| Label {
                    key: k.into(),
                    str: v.into(),
                    num,
                    num_unit: unit.into(),
                })
                .collect(),
        });
        self.sample_ids.insert(key, self.samples.len() - 1);
    }

    fn header(&mut self, p: &Pprof) {
        let h = &p.proto;
        if self.added == 0 || h.time_nanos < self.time_nanos {
            self.time_nanos = h.time_nanos;
        }
        self.duration_nanos = self.duration_nanos.saturating_add(h.duration_nanos);
        if self.period == 0 || self.period < h.period {
            self.period = h.period;
        }
        for c in &h.comment {
            let c = self.intern(p.str(*c));
            if !self.comments.contains(&c) {
                self.comments.push(c);
            }
        }
        if self.doc_url == 0 {
            self.doc_url = self.intern(p.str(h.doc_url));
        }
        if self.drop_frames == 0 {
            self.drop_frames = self.intern(p.str(h.drop_frames));
        }
        if self.keep_frames == 0 {
            self.keep_frames = self.intern(p.str(h.keep_frames));
        }
    }

    /// Each mapping's id in the merge, by its position in `p`.
    fn map_mappings(&mut self, p: &Pprof) -> Vec<u64> {
        p.proto
            .mapping
            .iter()
            .map(|m| {
                let file = self.intern(p.str(m.filename));
                let build = self.intern(p.str(m.build_id));
                let key = (m.memory_start, m.memory_limit, m.file_offset, file, build);
                if let Some(&id) = self.mapping_ids.get(&key) {
                    return id;
                }
                let id = self.mappings.len() as u64 + 1;
                self.mappings.push(Mapping {
                    id,
                    filename: file.into(),
                    build_id: build.into(),
                    ..*m
                });
                self.mapping_ids.insert(key, id);
                id
            })
            .collect()
    }

    /// Each function's id in the merge, by its position in `p`.
    fn map_functions(&mut self, p: &Pprof) -> Vec<u64> {
        p.proto
            .function
            .iter()
            .map(|f| {
                let name = self.intern(p.str(f.name));
                let system = self.intern(p.str(f.system_name));
                let file = self.intern(p.str(f.filename));
                let key = (name, system, file, f.start_line);
                if let Some(&id) = self.function_ids.get(&key) {
                    return id;
                }
                let id = self.functions.len() as u64 + 1;
                self.functions.push(Function {
                    id,
                    name: name.into(),
                    system_name: system.into(),
                    filename: file.into(),
                    start_line: f.start_line,
                });
                self.function_ids.insert(key, id);
                id
            })
            .collect()
    }

    /// Each location's id in the merge, by its position in `p`.
    fn map_locations(&mut self, p: &Pprof, mapping_of: &[u64], function_of: &[u64]) -> Vec<u64> {
        p.proto
            .location
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let mapping = p.loc_mapping[i].map_or(0, |m| mapping_of[m]);
                let lines: Vec<(u64, i64, i64)> = l
                    .line
                    .iter()
                    .zip(&p.loc_lines[i])
                    .map(|(line, (f, _))| (f.map_or(0, |f| function_of[f]), line.line, line.column))
                    .collect();
                let key = (mapping, l.address, l.is_folded, lines);
                if let Some(&id) = self.location_ids.get(&key) {
                    return id;
                }
                let id = self.locations.len() as u64 + 1;
                self.locations.push(Location {
                    id,
                    mapping_id: mapping,
                    address: l.address,
                    line: key
                        .3
                        .iter()
                        .map(|&(function_id, line, column)| Line {
                            function_id,
                            line,
                            column,
                        })
                        .collect(),
                    is_folded: l.is_folded,
                });
                self.location_ids.insert(key, id);
                id
            })
            .collect()
    }

    /// The merged profile, checked as any profile read is.
    pub fn finish(self) -> Result<Pprof, Error> {
        if self.added == 0 {
            return Err(Error::NothingToMerge);
        }
        let vt = |(t, u): (u32, u32)| ValueType {
            r#type: t.into(),
            unit: u.into(),
        };
        let proto = Profile {
            sample_type: self.types.iter().copied().map(vt).collect(),
            sample: self.samples,
            mapping: self.mappings,
            location: self.locations,
            function: self.functions,
            string_table: self.strings,
            drop_frames: self.drop_frames.into(),
            keep_frames: self.keep_frames.into(),
            time_nanos: self.time_nanos,
            duration_nanos: self.duration_nanos,
            period_type: self.period_type.map(vt),
            period: self.period,
            comment: self.comments.iter().map(|&c| c.into()).collect(),
            default_sample_type: self.default_sample_type.into(),
            doc_url: self.doc_url.into(),
        };
        // Every reference was made here, to what was added: it checks.
        Pprof::new(proto).map_err(|e| Error::MergedInvalid(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(funcs: &[&[&str]], values: &[i64], time: i64, dur: i64) -> Pprof {
        let mut strings = vec![String::new(), "cpu".into(), "nanoseconds".into()];
        let mut s = |x: &str| {
            if let Some(i) = strings.iter().position(|y| y == x) {
                return i as i64;
            }
            strings.push(x.into());
            strings.len() as i64 - 1
        };
        let mut function = Vec::new();
        let mut location = Vec::new();
        let mut sample = Vec::new();
        for (stack, v) in funcs.iter().zip(values) {
            let mut ids = Vec::new();
            for name in stack.iter() {
                let n = s(name);
                let id = match function.iter().position(|f: &Function| f.name == n) {
                    Some(i) => i as u64 + 1,
                    None => {
                        function.push(Function {
                            id: function.len() as u64 + 1,
                            name: n,
                            ..Default::default()
                        });
                        location.push(Location {
                            id: location.len() as u64 + 1,
                            line: vec![Line {
                                function_id: function.len() as u64,
                                line: 1,
                                column: 0,
                            }],
                            ..Default::default()
                        });
                        function.len() as u64
                    }
                };
                ids.push(id);
            }
            sample.push(Sample {
                location_id: ids,
                value: vec![*v],
                label: vec![],
            });
        }
        let proto = Profile {
            sample_type: vec![ValueType { r#type: 1, unit: 2 }],
            sample,
            location,
            function,
            string_table: strings,
            time_nanos: time,
            duration_nanos: dur,
            ..Default::default()
        };
        Pprof::new(proto).unwrap()
    }

    #[test]
    fn same_stacks_add_up_and_the_header_is_both() {
        let a = profile(&[&["f", "main"], &["g", "main"]], &[10, 5], 200, 10);
        let b = profile(
            &[&["g", "main"], &["h", "main"], &["f", "x"]],
            &[1, 2, 0],
            100,
            30,
        );
        let mut m = Merger::new();
        m.add(&a).unwrap();
        m.add(&b).unwrap();
        let p = m.finish().unwrap();
        assert_eq!(
            p.proto.sample.len(),
            3,
            "f, g and h under main; the zero sample left out"
        );
        let total: i64 = p.proto.sample.iter().map(|s| s.value[0]).sum();
        assert_eq!(total, 18);
        assert_eq!(p.proto.function.len(), 5);
        assert_eq!((p.proto.time_nanos, p.proto.duration_nanos), (100, 40));
    }

    #[test]
    fn other_sample_types_are_refused() {
        let a = profile(&[&["f"]], &[1], 0, 0);
        let mut proto = profile(&[&["f"]], &[1], 0, 0).to_proto();
        proto.string_table[2] = "count".into();
        let b = Pprof::new(proto).unwrap();
        let mut m = Merger::new();
        m.add(&a).unwrap();
        assert_eq!(
            m.add(&b).unwrap_err().to_string(),
            "incompatible sample types: cpu/nanoseconds and cpu/count"
        );
        assert!(matches!(Merger::new().finish(), Err(Error::NothingToMerge)));
    }
}
