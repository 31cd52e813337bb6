//! Call profile -> profile.proto -> gzip, the form `go tool pprof` reads.

use std::collections::HashMap;
use std::io::Write;

use flate2::Compression;
use flate2::write::GzEncoder;
use prost::Message;

use super::{CallProfile, Frame, ProfileKind};
use crate::pprof::proto::{Function, Line, Location, Mapping, Profile, Sample, ValueType};

/// A profile.proto string table, each string's index made the first time it is seen.
#[derive(Default)]
pub struct Strings {
    pub table: Vec<String>,
    ids: HashMap<String, i64>,
}

impl Strings {
    pub fn id(&mut self, s: &str) -> i64 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = self.table.len() as i64;
        self.table.push(s.to_string());
        self.ids.insert(s.to_string(), id);
        id
    }
}

/// The location and function tables, each entry made the first time it is seen.
struct Tables<'a> {
    strings: Strings,
    functions: Vec<Function>,
    function_ids: HashMap<(&'a str, Option<&'a str>), u64>,
    locations: Vec<Location>,
    location_ids: HashMap<&'a [usize], u64>,
}

impl<'a> Tables<'a> {
    /// The id of the location of these frames (innermost first).
    fn location(&mut self, profile: &'a CallProfile, loc: &'a [usize]) -> u64 {
        let next = self.locations.len() as u64 + 1;
        let id = *self.location_ids.entry(loc).or_insert(next);
        if id == next {
            let line = loc
                .iter()
                .map(|&fi| {
                    let f = &profile.frames[fi];
                    Line {
                        function_id: self.function(f),
                        line: f.line.map_or(0, i64::from),
                        column: 0,
                    }
                })
                .collect();
            self.locations.push(Location {
                id,
                mapping_id: 1,
                address: 0,
                line,
                is_folded: false,
            });
        }
        id
    }

    fn function(&mut self, f: &'a Frame) -> u64 {
        let key = (f.function.as_str(), f.file.as_deref());
        let next = self.functions.len() as u64 + 1;
        let id = *self.function_ids.entry(key).or_insert(next);
        if id == next {
            let name = self.strings.id(&f.function);
            let system_name = f
                .system_name
                .as_deref()
                .map_or(name, |s| self.strings.id(s));
            self.functions.push(Function {
                id,
                name,
                system_name,
                filename: self.strings.id(f.file.as_deref().unwrap_or("")),
                start_line: 0,
            });
        }
        id
    }
}

/// The profile as profile.proto: `samples/count` and `cpu/nanoseconds` per stack.
pub fn to_proto(profile: &CallProfile) -> Profile {
    let mut strings = Strings::default();
    strings.id("");
    let (samples, cpu, count, ns) = (
        strings.id("samples"),
        strings.id("cpu"),
        strings.id("count"),
        strings.id("nanoseconds"),
    );
    let ProfileKind::Cpu = profile.kind;
    let exe = std::env::current_exe()
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "agentprof".into());
    let mapping = Mapping {
        id: 1,
        filename: strings.id(&exe),
        has_functions: true,
        has_filenames: true,
        has_line_numbers: true,
        has_inline_frames: true,
        ..Default::default()
    };

    let mut t = Tables {
        strings,
        functions: Vec::new(),
        function_ids: HashMap::new(),
        locations: Vec::new(),
        location_ids: HashMap::new(),
    };
    let mut out_samples = Vec::with_capacity(profile.samples.len());
    for s in &profile.samples {
        let ids = s
            .locations
            .iter()
            .map(|loc| t.location(profile, loc))
            .collect();
        out_samples.push(Sample {
            location_id: ids,
            value: vec![s.count as i64, (s.count * profile.period_ns) as i64],
            label: Vec::new(),
        });
    }
    let Tables {
        strings,
        functions,
        locations,
        ..
    } = t;
    Profile {
        sample_type: vec![
            ValueType {
                r#type: samples,
                unit: count,
            },
            ValueType {
                r#type: cpu,
                unit: ns,
            },
        ],
        sample: out_samples,
        mapping: vec![mapping],
        location: locations,
        function: functions,
        string_table: strings.table,
        time_nanos: profile.start_unix_ns,
        duration_nanos: profile.duration_ns as i64,
        period_type: Some(ValueType {
            r#type: cpu,
            unit: ns,
        }),
        period: profile.period_ns as i64,
        ..Default::default()
    }
}

/// Gzip-compressed profile.proto bytes.
pub fn encode_gzip(profile: &CallProfile) -> std::io::Result<Vec<u8>> {
    encode_proto_gzip(&to_proto(profile))
}

/// Gzip-compressed bytes of a profile.proto message.
fn encode_proto_gzip(profile: &Profile) -> std::io::Result<Vec<u8>> {
    let raw = profile.encode_to_vec();
    let mut gz = GzEncoder::new(Vec::with_capacity(raw.len() / 2), Compression::default());
    gz.write_all(&raw)?;
    gz.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_prost() {
        let mut p = CallProfile::new(ProfileKind::Cpu, 1000, 42);
        let a = p.intern(Frame {
            function: "leaf".into(),
            file: Some("src/a.rs".into()),
            line: Some(7),
            ..Frame::default()
        });
        let b = p.intern(Frame {
            function: "root".into(),
            system_name: Some("_ZN4root17h0123456789abcdefE".into()),
            ..Frame::default()
        });
        p.add(vec![vec![a], vec![b]], 3);
        p.add(vec![vec![b]], 1);
        let bytes = to_proto(&p).encode_to_vec();
        let back = Profile::decode(bytes.as_slice()).unwrap();
        assert_eq!(back.sample.len(), 2);
        assert_eq!(back.sample[0].value, vec![3, 3_000_000]);
        let names: Vec<(&str, &str)> = back
            .function
            .iter()
            .map(|f| {
                (
                    back.string_table[f.name as usize].as_str(),
                    back.string_table[f.system_name as usize].as_str(),
                )
            })
            .collect();
        assert_eq!(
            names,
            [("leaf", "leaf"), ("root", "_ZN4root17h0123456789abcdefE")],
            "the mangled symbol is the system name"
        );
        assert_eq!(back.location.len(), 2);
        assert_eq!(back.function.len(), 2);
        assert_eq!(back.period, 1_000_000);
        assert_eq!(back.string_table[0], "");
        let gz = encode_gzip(&p).unwrap();
        assert_eq!(&gz[..2], &[0x1f, 0x8b]);
    }
}
