//! pprof profiles into one OTLP request: each pprof profile becomes one `ScopeProfiles`
//! holding one OTLP profile per sample type (the format has one sample type per profile),
//! with the same samples in the same order; every table is shared by the request's
//! profiles, entry 0 of each the zero value. What pprof has and OTLP has no field for goes
//! in attributes named `pprof.*` (docs/otlp.md lists them), so a profile that crosses twice
//! comes back whole.

use std::hash::{BuildHasher, Hash};

use pprof::fasthash::FastMap as HashMap;

use pprof::proto as pp;

use crate::proto::{
    AnyValue, ExportProfilesServiceRequest, Function, InstrumentationScope, KeyValue,
    KeyValueAndUnit, Line, Location, Mapping, Profile, ProfilesDictionary, Resource,
    ResourceProfiles, Sample, ScopeProfiles, Stack, Value, ValueType,
};

/// The attribute keys pprof's own fields cross under.
pub mod keys {
    pub const BUILD_ID: &str = "process.executable.build_id.gnu";
    pub const HAS_FUNCTIONS: &str = "pprof.mapping.has_functions";
    pub const HAS_FILENAMES: &str = "pprof.mapping.has_filenames";
    pub const HAS_LINE_NUMBERS: &str = "pprof.mapping.has_line_numbers";
    pub const HAS_INLINE_FRAMES: &str = "pprof.mapping.has_inline_frames";
    pub const IS_FOLDED: &str = "pprof.location.is_folded";
    pub const COMMENT: &str = "pprof.profile.comment";
    pub const DROP_FRAMES: &str = "pprof.profile.drop_frames";
    pub const KEEP_FRAMES: &str = "pprof.profile.keep_frames";
    pub const DEFAULT_SAMPLE_TYPE: &str = "pprof.profile.default_sample_type";
    pub const DOC_URL: &str = "pprof.profile.doc_url";
}

/// An attribute's value as the dictionary keys it.
#[derive(Clone, PartialEq, Eq, Hash)]
enum AttrValue {
    Str(i32),
    Int(i64),
    Bool(bool),
}

#[derive(Clone, PartialEq, Eq, Hash)]
struct AttrKey {
    key: i32,
    value: AttrValue,
    unit: i32,
}

#[derive(Clone, PartialEq, Eq, Hash)]
struct LocKey {
    mapping: i32,
    address: u64,
    lines: Vec<(i32, i64, i64)>,
    attrs: Vec<i32>,
}

#[derive(Clone, PartialEq, Eq, Hash)]
struct MapKey {
    start: u64,
    limit: u64,
    offset: u64,
    file: i32,
    attrs: Vec<i32>,
}

/// A request being built.
pub struct Export {
    dict: ProfilesDictionary,
    resources: Vec<ResourceProfiles>,
    strings: HashMap<String, i32>,
    functions: HashMap<(i32, i32, i32, i64), i32>,
    mappings: HashMap<MapKey, i32>,
    locations: HashMap<LocKey, i32>,
    stacks: HashMap<Vec<i32>, i32>,
    attributes: HashMap<AttrKey, i32>,
    ids: IdSource,
}

/// What goes with one pprof profile.
pub struct Source<'a> {
    /// Resource attributes (`service.name`, `k8s.pod.name` …), in order.
    pub resource: &'a [(String, String)],
    /// The profile as it was sent or written, carried as `original_payload` when given
    /// (on the first of its OTLP profiles only).
    pub original: Option<&'a [u8]>,
}

impl Default for Export {
    fn default() -> Self {
        Export::new()
    }
}

impl Export {
    pub fn new() -> Export {
        let mut e = Export {
            dict: ProfilesDictionary {
                mapping_table: vec![Mapping::default()],
                location_table: vec![Location::default()],
                function_table: vec![Function::default()],
                link_table: vec![Default::default()],
                string_table: Vec::new(),
                attribute_table: vec![KeyValueAndUnit::default()],
                stack_table: vec![Stack::default()],
            },
            resources: Vec::new(),
            strings: HashMap::default(),
            functions: HashMap::default(),
            mappings: HashMap::default(),
            locations: HashMap::default(),
            stacks: HashMap::default(),
            attributes: HashMap::default(),
            ids: IdSource::new(),
        };
        e.string("");
        e
    }

    /// Profiles added so far.
    pub fn profiles(&self) -> usize {
        self.resources
            .iter()
            .flat_map(|r| &r.scope_profiles)
            .map(|s| s.profiles.len())
            .sum()
    }

    fn string(&mut self, s: &str) -> i32 {
        if let Some(&i) = self.strings.get(s) {
            return i;
        }
        let i = self.dict.string_table.len() as i32;
        self.dict.string_table.push(s.to_string());
        self.strings.insert(s.to_string(), i);
        i
    }

    fn attribute(&mut self, key: &str, value: AttrValue, unit: i32) -> i32 {
        let key = self.string(key);
        let k = AttrKey { key, value, unit };
        if let Some(&i) = self.attributes.get(&k) {
            return i;
        }
        let value = match k.value {
            AttrValue::Str(s) => Value::StringValue(self.dict.string_table[s as usize].clone()),
            AttrValue::Int(n) => Value::IntValue(n),
            AttrValue::Bool(b) => Value::BoolValue(b),
        };
        let i = self.dict.attribute_table.len() as i32;
        self.dict.attribute_table.push(KeyValueAndUnit {
            key_strindex: key,
            value: Some(AnyValue { value: Some(value) }),
            unit_strindex: unit,
        });
        self.attributes.insert(k, i);
        i
    }

    fn str_attribute(&mut self, key: &str, value: &str) -> i32 {
        let v = self.string(value);
        self.attribute(key, AttrValue::Str(v), 0)
    }

    fn interned<K: Hash + Eq, T>(
        map: &mut HashMap<K, i32>,
        table: &mut Vec<T>,
        key: K,
        make: impl FnOnce() -> T,
    ) -> i32 {
        *map.entry(key).or_insert_with(|| {
            table.push(make());
            table.len() as i32 - 1
        })
    }

    /// Adds one pprof profile: one OTLP profile per sample type, under the resource with
    /// `src.resource`'s attributes (made when it is new).
    pub fn add(&mut self, p: &pp::Profile, src: &Source) {
        let strings: Vec<i32> = p.string_table.iter().map(|t| self.string(t)).collect();
        let at = Indices {
            p,
            strings: &strings,
        };
        let functions = self.functions_of(&at);
        let mappings = self.mappings_of(&at);
        let locations = self.locations_of(&at, &functions, &mappings);
        let rows = self.rows_of(&at, &locations);
        let attrs = self.profile_attributes(&at);
        let period_type = p.period_type.as_ref().map(|v| ValueType {
            type_strindex: at.si(v.r#type),
            unit_strindex: at.si(v.unit),
        });
        let mut profiles = Vec::with_capacity(p.sample_type.len());
        for (t, st) in p.sample_type.iter().enumerate() {
            let samples = p
                .sample
                .iter()
                .zip(&rows)
                .map(|(smp, (stack, attrs))| Sample {
                    stack_index: *stack,
                    attribute_indices: attrs.clone(),
                    link_index: 0,
                    values: vec![smp.value.get(t).copied().unwrap_or(0)],
                    timestamps_unix_nano: Vec::new(),
                })
                .collect();
            let original = src.original.filter(|_| t == 0);
            profiles.push(Profile {
                sample_type: Some(ValueType {
                    type_strindex: at.si(st.r#type),
                    unit_strindex: at.si(st.unit),
                }),
                samples,
                time_unix_nano: p.time_nanos.max(0) as u64,
                duration_nano: p.duration_nanos.max(0) as u64,
                period_type: period_type.clone(),
                period: p.period,
                profile_id: self.ids.next().to_vec(),
                dropped_attributes_count: 0,
                original_payload_format: if original.is_some() {
                    "pprof".into()
                } else {
                    String::new()
                },
                original_payload: original.map(<[u8]>::to_vec).unwrap_or_default(),
                attribute_indices: attrs.clone(),
            });
        }
        self.put(src.resource, profiles);
    }

    /// Each pprof function's index in the function table, by its id.
    fn functions_of(&mut self, at: &Indices) -> HashMap<u64, i32> {
        let mut out = HashMap::default();
        for f in &at.p.function {
            let key = (
                at.si(f.name),
                at.si(f.system_name),
                at.si(f.filename),
                f.start_line,
            );
            let i = Self::interned(
                &mut self.functions,
                &mut self.dict.function_table,
                key,
                || Function {
                    name_strindex: key.0,
                    system_name_strindex: key.1,
                    filename_strindex: key.2,
                    start_line: key.3,
                },
            );
            out.insert(f.id, i);
        }
        out
    }

    /// Each pprof mapping's index in the mapping table, by its id (its build id and flags
    /// as attributes).
    fn mappings_of(&mut self, at: &Indices) -> HashMap<u64, i32> {
        let mut out = HashMap::default();
        for m in &at.p.mapping {
            let mut attrs = Vec::new();
            if m.build_id != 0 {
                attrs.push(self.str_attribute(keys::BUILD_ID, at.s(m.build_id)));
            }
            for (on, key) in [
                (m.has_functions, keys::HAS_FUNCTIONS),
                (m.has_filenames, keys::HAS_FILENAMES),
                (m.has_line_numbers, keys::HAS_LINE_NUMBERS),
                (m.has_inline_frames, keys::HAS_INLINE_FRAMES),
            ] {
                if on {
                    attrs.push(self.attribute(key, AttrValue::Bool(true), 0));
                }
            }
            let key = MapKey {
                start: m.memory_start,
                limit: m.memory_limit,
                offset: m.file_offset,
                file: at.si(m.filename),
                attrs,
            };
            let made = key.clone();
            let i = Self::interned(
                &mut self.mappings,
                &mut self.dict.mapping_table,
                key,
                || Mapping {
                    memory_start: made.start,
                    memory_limit: made.limit,
                    file_offset: made.offset,
                    filename_strindex: made.file,
                    attribute_indices: made.attrs,
                },
            );
            out.insert(m.id, i);
        }
        out
    }

    /// Each pprof location's index in the location table, by its id.
    fn locations_of(
        &mut self,
        at: &Indices,
        functions: &HashMap<u64, i32>,
        mappings: &HashMap<u64, i32>,
    ) -> HashMap<u64, i32> {
        let mut out = HashMap::default();
        for l in &at.p.location {
            let attrs = if l.is_folded {
                vec![self.attribute(keys::IS_FOLDED, AttrValue::Bool(true), 0)]
            } else {
                Vec::new()
            };
            let key = LocKey {
                mapping: mappings.get(&l.mapping_id).copied().unwrap_or(0),
                address: l.address,
                lines: l
                    .line
                    .iter()
                    .map(|ln| {
                        let f = functions.get(&ln.function_id).copied().unwrap_or(0);
                        (f, ln.line, ln.column)
                    })
                    .collect(),
                attrs,
            };
            let made = key.clone();
            let i = Self::interned(
                &mut self.locations,
                &mut self.dict.location_table,
                key,
                || Location {
                    mapping_index: made.mapping,
                    address: made.address,
                    lines: made
                        .lines
                        .iter()
                        .map(|&(f, line, column)| Line {
                            function_index: f,
                            line,
                            column,
                        })
                        .collect(),
                    attribute_indices: made.attrs,
                },
            );
            out.insert(l.id, i);
        }
        out
    }

    /// Each sample's stack index and attributes (its labels), shared by every sample
    /// type's profile.
    fn rows_of(&mut self, at: &Indices, locations: &HashMap<u64, i32>) -> Vec<(i32, Vec<i32>)> {
        let mut rows = Vec::with_capacity(at.p.sample.len());
        for smp in &at.p.sample {
            let stack: Vec<i32> = smp
                .location_id
                .iter()
                .map(|id| locations.get(id).copied().unwrap_or(0))
                .collect();
            let made = stack.clone();
            let stack = Self::interned(&mut self.stacks, &mut self.dict.stack_table, stack, || {
                Stack {
                    location_indices: made,
                }
            });
            let attrs: Vec<i32> = smp
                .label
                .iter()
                .map(|lb| {
                    if lb.str != 0 {
                        let v = at.si(lb.str);
                        self.attribute(at.s(lb.key), AttrValue::Str(v), 0)
                    } else {
                        let unit = at.si(lb.num_unit);
                        self.attribute(at.s(lb.key), AttrValue::Int(lb.num), unit)
                    }
                })
                .collect();
            rows.push((stack, attrs));
        }
        rows
    }

    /// The profile's own fields OTLP has none for, as `pprof.profile.*` attributes.
    fn profile_attributes(&mut self, at: &Indices) -> Vec<i32> {
        let p = at.p;
        let mut attrs = Vec::new();
        for c in &p.comment {
            attrs.push(self.str_attribute(keys::COMMENT, at.s(*c)));
        }
        for (i, key) in [
            (p.drop_frames, keys::DROP_FRAMES),
            (p.keep_frames, keys::KEEP_FRAMES),
            (p.default_sample_type, keys::DEFAULT_SAMPLE_TYPE),
            (p.doc_url, keys::DOC_URL),
        ] {
            if i != 0 {
                attrs.push(self.str_attribute(key, at.s(i)));
            }
        }
        attrs
    }

    /// `profiles` as one scope (agentprof's) under the resource of `resource`, made when
    /// it is new.
    fn put(&mut self, resource: &[(String, String)], profiles: Vec<Profile>) {
        let scope = ScopeProfiles {
            scope: Some(InstrumentationScope {
                name: "agentprof".into(),
                version: env!("CARGO_PKG_VERSION").into(),
                attributes: Vec::new(),
                dropped_attributes_count: 0,
            }),
            profiles,
            schema_url: String::new(),
        };
        let attributes: Vec<KeyValue> = resource
            .iter()
            .map(|(k, v)| KeyValue::string(k, v))
            .collect();
        match self.resources.iter_mut().find(|r| {
            r.resource
                .as_ref()
                .is_some_and(|x| x.attributes == attributes)
        }) {
            Some(r) => r.scope_profiles.push(scope),
            None => self.resources.push(ResourceProfiles {
                resource: Some(Resource {
                    attributes,
                    dropped_attributes_count: 0,
                }),
                scope_profiles: vec![scope],
                schema_url: String::new(),
            }),
        }
    }

    pub fn finish(self) -> ExportProfilesServiceRequest {
        ExportProfilesServiceRequest {
            resource_profiles: self.resources,
            dictionary: Some(self.dict),
        }
    }
}

/// A pprof profile with its strings' indices in the request's string table.
struct Indices<'a> {
    p: &'a pp::Profile,
    strings: &'a [i32],
}

impl Indices<'_> {
    /// A string of the pprof profile.
    fn s(&self, i: i64) -> &str {
        self.p
            .string_table
            .get(i as usize)
            .map(String::as_str)
            .unwrap_or("")
    }

    /// A pprof string index as the request's.
    fn si(&self, i: i64) -> i32 {
        self.strings.get(i as usize).copied().unwrap_or(0)
    }
}

/// Profile ids: 16 bytes from the process's randomly keyed hasher and a count, unique
/// within a process and between processes as the hasher's keys are.
struct IdSource {
    state: std::collections::hash_map::RandomState,
    n: u64,
}

impl IdSource {
    fn new() -> IdSource {
        IdSource {
            state: std::collections::hash_map::RandomState::new(),
            n: 0,
        }
    }

    fn next(&mut self) -> [u8; 16] {
        self.n += 1;
        let a = self.state.hash_one((self.n, 1u8));
        let b = self.state.hash_one((self.n, 2u8));
        let mut id = [0u8; 16];
        id[..8].copy_from_slice(&a.to_le_bytes());
        id[8..].copy_from_slice(&b.to_le_bytes());
        id
    }
}
