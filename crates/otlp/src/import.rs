//! An OTLP request into pprof profiles. The OTLP profiles of one `ScopeProfiles` that
//! follow each other with the same time, duration and period, and samples of the same
//! stacks and attributes in the same order (as `Export` writes a pprof profile of several
//! sample types), become one pprof profile with their sample types side by side; any other
//! becomes a pprof profile of its own. Every index is checked against its table: a request
//! that points outside one is refused with where.

use std::collections::HashMap;

use pprof::proto as pp;

use crate::Error;
use crate::export::keys;
use crate::proto::{
    AnyValue, ExportProfilesServiceRequest, KeyValue, Profile, ProfilesDictionary, Value,
};

/// One pprof profile read from a request.
#[derive(Debug, Clone)]
pub struct Imported {
    /// The resource's attributes, each value as text.
    pub resource: Vec<(String, String)>,
    /// The instrumentation scope's name (`agentprof`, `com.grafana.pyroscope/go` …).
    pub scope: String,
    /// The profile-level attributes that are not pprof's own fields, as text.
    pub attributes: Vec<(String, String)>,
    pub profile: pp::Profile,
    /// `original_payload_format` and `original_payload`, when the sender attached them.
    pub original: Option<(String, Vec<u8>)>,
}

fn check(
    at: &dyn Fn() -> String,
    what: &'static str,
    table: &'static str,
    i: i32,
    len: usize,
) -> Result<usize, Error> {
    if i < 0 || i as usize >= len {
        return Err(Error::Index {
            at: at(),
            what,
            index: i as i64,
            table,
            len,
        });
    }
    Ok(i as usize)
}

/// Text of an attribute value (strings as they are; numbers, booleans; arrays and lists as
/// JSON-like text).
pub fn value_text(v: Option<&AnyValue>, strings: &[String]) -> String {
    match v.and_then(|v| v.value.as_ref()) {
        None => String::new(),
        Some(Value::StringValue(s)) => s.clone(),
        Some(Value::StringValueStrindex(i)) => {
            strings.get(*i as usize).cloned().unwrap_or_default()
        }
        Some(Value::BoolValue(b)) => b.to_string(),
        Some(Value::IntValue(n)) => n.to_string(),
        Some(Value::DoubleValue(f)) => f.to_string(),
        Some(Value::BytesValue(b)) => b.iter().map(|x| format!("{x:02x}")).collect(),
        Some(Value::ArrayValue(a)) => format!(
            "[{}]",
            a.values
                .iter()
                .map(|v| value_text(Some(v), strings))
                .collect::<Vec<_>>()
                .join(",")
        ),
        Some(Value::KvlistValue(l)) => format!(
            "{{{}}}",
            l.values
                .iter()
                .map(|kv| format!(
                    "{}={}",
                    key_text(kv, strings),
                    value_text(kv.value.as_ref(), strings)
                ))
                .collect::<Vec<_>>()
                .join(",")
        ),
    }
}

fn key_text(kv: &KeyValue, strings: &[String]) -> String {
    if kv.key.is_empty() && kv.key_strindex > 0 {
        strings
            .get(kv.key_strindex as usize)
            .cloned()
            .unwrap_or_default()
    } else {
        kv.key.clone()
    }
}

/// The pprof profiles of a request, with their resources and scopes.
pub fn import(req: &ExportProfilesServiceRequest) -> Result<Vec<Imported>, Error> {
    let empty = ProfilesDictionary::default();
    let any = req
        .resource_profiles
        .iter()
        .flat_map(|r| &r.scope_profiles)
        .any(|s| !s.profiles.is_empty());
    let dict = match &req.dictionary {
        Some(d) => d,
        None if any => return Err(Error::NoDictionary),
        None => &empty,
    };
    let strings = &dict.string_table;
    let mut out = Vec::new();
    for (ri, rp) in req.resource_profiles.iter().enumerate() {
        let resource: Vec<(String, String)> = rp
            .resource
            .iter()
            .flat_map(|r| &r.attributes)
            .map(|kv| {
                (
                    key_text(kv, strings),
                    value_text(kv.value.as_ref(), strings),
                )
            })
            .collect();
        for (si, sp) in rp.scope_profiles.iter().enumerate() {
            let scope = sp
                .scope
                .as_ref()
                .map(|s| s.name.clone())
                .unwrap_or_default();
            let mut i = 0;
            while i < sp.profiles.len() {
                let mut j = i + 1;
                while j < sp.profiles.len() && same_shape(&sp.profiles[i], &sp.profiles[j]) {
                    j += 1;
                }
                let base = format!("resource {ri}, scope {si}");
                let group: Vec<(usize, &Profile)> = (i..j).map(|k| (k, &sp.profiles[k])).collect();
                let (profile, attributes) = Builder::new(dict).build(&group, &base)?;
                let original = group
                    .iter()
                    .map(|(_, p)| p)
                    .find(|p| !p.original_payload.is_empty())
                    .map(|p| {
                        (
                            p.original_payload_format.clone(),
                            p.original_payload.clone(),
                        )
                    });
                out.push(Imported {
                    resource: resource.clone(),
                    scope: scope.clone(),
                    attributes,
                    profile,
                    original,
                });
                i = j;
            }
        }
    }
    Ok(out)
}

/// Whether `b` is another sample type of the pprof profile `a` came from.
fn same_shape(a: &Profile, b: &Profile) -> bool {
    a.time_unix_nano == b.time_unix_nano
        && a.duration_nano == b.duration_nano
        && a.period == b.period
        && a.period_type == b.period_type
        && a.attribute_indices == b.attribute_indices
        && a.samples.len() == b.samples.len()
        && a.samples.iter().zip(&b.samples).all(|(x, y)| {
            x.stack_index == y.stack_index
                && x.attribute_indices == y.attribute_indices
                && x.link_index == y.link_index
                && x.timestamps_unix_nano == y.timestamps_unix_nano
        })
}

/// One pprof profile being built from a dictionary: its own string table and ids, given
/// as the dictionary's entries are first used.
struct Builder<'a> {
    dict: &'a ProfilesDictionary,
    p: pp::Profile,
    strings: HashMap<i32, i64>,
    texts: HashMap<String, i64>,
    functions: HashMap<usize, u64>,
    mappings: HashMap<usize, u64>,
    locations: HashMap<usize, u64>,
}

impl<'a> Builder<'a> {
    fn new(dict: &'a ProfilesDictionary) -> Builder<'a> {
        let mut b = Builder {
            dict,
            p: pp::Profile::default(),
            strings: HashMap::new(),
            texts: HashMap::new(),
            functions: HashMap::new(),
            mappings: HashMap::new(),
            locations: HashMap::new(),
        };
        b.text("");
        b
    }

    fn text(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.texts.get(s) {
            return i;
        }
        let i = self.p.string_table.len() as i64;
        self.p.string_table.push(s.to_string());
        self.texts.insert(s.to_string(), i);
        i
    }

    fn string(
        &mut self,
        i: i32,
        at: &dyn Fn() -> String,
        what: &'static str,
    ) -> Result<i64, Error> {
        if let Some(&s) = self.strings.get(&i) {
            return Ok(s);
        }
        let k = check(at, what, "string table", i, self.dict.string_table.len())?;
        let s = self.text(&self.dict.string_table[k].clone());
        self.strings.insert(i, s);
        Ok(s)
    }

    fn attribute(
        &self,
        i: i32,
        at: &dyn Fn() -> String,
    ) -> Result<(String, &'a crate::proto::KeyValueAndUnit), Error> {
        let k = check(
            at,
            "attribute index",
            "attribute table",
            i,
            self.dict.attribute_table.len(),
        )?;
        let a = &self.dict.attribute_table[k];
        check(
            at,
            "attribute key",
            "string table",
            a.key_strindex,
            self.dict.string_table.len(),
        )?;
        Ok((self.dict.string_table[a.key_strindex as usize].clone(), a))
    }

    fn function(&mut self, i: i32, at: &dyn Fn() -> String) -> Result<u64, Error> {
        let k = check(
            at,
            "function index",
            "function table",
            i,
            self.dict.function_table.len(),
        )?;
        if let Some(&id) = self.functions.get(&k) {
            return Ok(id);
        }
        let f = &self.dict.function_table[k];
        let func = pp::Function {
            id: self.p.function.len() as u64 + 1,
            name: self.string(f.name_strindex, at, "function name")?,
            system_name: self.string(f.system_name_strindex, at, "function system name")?,
            filename: self.string(f.filename_strindex, at, "function file name")?,
            start_line: f.start_line,
        };
        let id = func.id;
        self.p.function.push(func);
        self.functions.insert(k, id);
        Ok(id)
    }

    fn mapping(&mut self, i: i32, at: &dyn Fn() -> String) -> Result<u64, Error> {
        if i == 0 {
            return Ok(0);
        }
        let k = check(
            at,
            "mapping index",
            "mapping table",
            i,
            self.dict.mapping_table.len(),
        )?;
        if let Some(&id) = self.mappings.get(&k) {
            return Ok(id);
        }
        let m = &self.dict.mapping_table[k];
        let mut mp = pp::Mapping {
            id: self.p.mapping.len() as u64 + 1,
            memory_start: m.memory_start,
            memory_limit: m.memory_limit,
            file_offset: m.file_offset,
            filename: self.string(m.filename_strindex, at, "mapping file name")?,
            ..Default::default()
        };
        for &a in &m.attribute_indices {
            let (key, attr) = self.attribute(a, at)?;
            let on = matches!(
                attr.value.as_ref().and_then(|v| v.value.as_ref()),
                Some(Value::BoolValue(true))
            );
            match key.as_str() {
                keys::BUILD_ID => {
                    let t = value_text(attr.value.as_ref(), &self.dict.string_table);
                    mp.build_id = self.text(&t);
                }
                keys::HAS_FUNCTIONS => mp.has_functions = on,
                keys::HAS_FILENAMES => mp.has_filenames = on,
                keys::HAS_LINE_NUMBERS => mp.has_line_numbers = on,
                keys::HAS_INLINE_FRAMES => mp.has_inline_frames = on,
                _ => {}
            }
        }
        let id = mp.id;
        self.p.mapping.push(mp);
        self.mappings.insert(k, id);
        Ok(id)
    }

    fn location(&mut self, i: i32, at: &dyn Fn() -> String) -> Result<u64, Error> {
        let k = check(
            at,
            "location index",
            "location table",
            i,
            self.dict.location_table.len(),
        )?;
        if let Some(&id) = self.locations.get(&k) {
            return Ok(id);
        }
        let l = &self.dict.location_table[k];
        let mut loc = pp::Location {
            id: 0,
            mapping_id: self.mapping(l.mapping_index, at)?,
            address: l.address,
            line: Vec::with_capacity(l.lines.len()),
            is_folded: false,
        };
        for ln in &l.lines {
            loc.line.push(pp::Line {
                function_id: self.function(ln.function_index, at)?,
                line: ln.line,
                column: ln.column,
            });
        }
        for &a in &l.attribute_indices {
            let (key, attr) = self.attribute(a, at)?;
            if key == keys::IS_FOLDED {
                loc.is_folded = matches!(
                    attr.value.as_ref().and_then(|v| v.value.as_ref()),
                    Some(Value::BoolValue(true))
                );
            }
        }
        loc.id = self.p.location.len() as u64 + 1;
        let id = loc.id;
        self.p.location.push(loc);
        self.locations.insert(k, id);
        Ok(id)
    }

    fn label(&mut self, a: i32, at: &dyn Fn() -> String) -> Result<pp::Label, Error> {
        let (key, attr) = self.attribute(a, at)?;
        let key = self.text(&key);
        let mut label = pp::Label {
            key,
            ..Default::default()
        };
        match attr.value.as_ref().and_then(|v| v.value.as_ref()) {
            Some(Value::IntValue(n)) => {
                label.num = *n;
                label.num_unit = if attr.unit_strindex != 0 {
                    self.string(attr.unit_strindex, at, "attribute unit")?
                } else {
                    0
                };
            }
            _ => {
                let t = value_text(attr.value.as_ref(), &self.dict.string_table);
                label.str = self.text(&t);
            }
        }
        Ok(label)
    }

    /// The pprof profile of `group` (the OTLP profiles of one pprof profile, one sample
    /// type each) and the profile-level attributes that are not pprof's own fields.
    fn build(
        mut self,
        group: &[(usize, &Profile)],
        base: &str,
    ) -> Result<(pp::Profile, Vec<(String, String)>), Error> {
        let Some(&(first_k, first)) = group.first() else {
            return Ok((self.p, Vec::new()));
        };
        for &(k, prof) in group {
            let at = || format!("{base}, profile {k}");
            let st = prof.sample_type.clone().unwrap_or_default();
            let vt = pp::ValueType {
                r#type: self.string(st.type_strindex, &at, "sample type")?,
                unit: self.string(st.unit_strindex, &at, "sample unit")?,
            };
            self.p.sample_type.push(vt);
        }
        let at0 = format!("{base}, profile {first_k}");
        let attributes = self.header(first, &|| at0.clone())?;
        for si in 0..first.samples.len() {
            let sample = self.sample(group, si, base)?;
            self.p.sample.push(sample);
        }
        Ok((self.p, attributes))
    }

    /// The period, time and duration of `first`, and its attributes: pprof's own fields
    /// (`pprof.profile.*`) set, the others returned as text.
    fn header(
        &mut self,
        first: &Profile,
        at: &dyn Fn() -> String,
    ) -> Result<Vec<(String, String)>, Error> {
        if let Some(pt) = &first.period_type {
            self.p.period_type = Some(pp::ValueType {
                r#type: self.string(pt.type_strindex, at, "period type")?,
                unit: self.string(pt.unit_strindex, at, "period unit")?,
            });
        }
        self.p.period = first.period;
        self.p.time_nanos = i64::try_from(first.time_unix_nano).unwrap_or(i64::MAX);
        self.p.duration_nanos = i64::try_from(first.duration_nano).unwrap_or(i64::MAX);
        let mut attributes = Vec::new();
        for &a in &first.attribute_indices {
            let (key, attr) = self.attribute(a, at)?;
            let t = value_text(attr.value.as_ref(), &self.dict.string_table);
            match key.as_str() {
                keys::COMMENT => {
                    let c = self.text(&t);
                    self.p.comment.push(c);
                }
                keys::DROP_FRAMES => self.p.drop_frames = self.text(&t),
                keys::KEEP_FRAMES => self.p.keep_frames = self.text(&t),
                keys::DEFAULT_SAMPLE_TYPE => self.p.default_sample_type = self.text(&t),
                keys::DOC_URL => self.p.doc_url = self.text(&t),
                _ => attributes.push((key, t)),
            }
        }
        Ok(attributes)
    }

    /// Sample `si` of the group: the first profile's stack, attributes and link, and each
    /// profile's value.
    fn sample(
        &mut self,
        group: &[(usize, &Profile)],
        si: usize,
        base: &str,
    ) -> Result<pp::Sample, Error> {
        let (first_k, first) = group[0];
        let smp = &first.samples[si];
        let at = || format!("{base}, profile {first_k}, sample {si}");
        let sk = check(
            &at,
            "stack index",
            "stack table",
            smp.stack_index,
            self.dict.stack_table.len(),
        )?;
        let stack = &self.dict.stack_table[sk];
        let mut location_id = Vec::with_capacity(stack.location_indices.len());
        for &l in &stack.location_indices {
            location_id.push(self.location(l, &at)?);
        }
        let mut label = Vec::with_capacity(smp.attribute_indices.len());
        for &a in &smp.attribute_indices {
            label.push(self.label(a, &at)?);
        }
        if smp.link_index != 0 {
            let li = check(
                &at,
                "link index",
                "link table",
                smp.link_index,
                self.dict.link_table.len(),
            )?;
            let link = &self.dict.link_table[li];
            for (k, v) in [("trace_id", &link.trace_id), ("span_id", &link.span_id)] {
                let key = self.text(k);
                let hex: String = v.iter().map(|b| format!("{b:02x}")).collect();
                let str = self.text(&hex);
                label.push(pp::Label {
                    key,
                    str,
                    ..Default::default()
                });
            }
        }
        let mut value = Vec::with_capacity(group.len());
        for &(k, prof) in group {
            let v = &prof.samples[si].values;
            if v.len() > 1 {
                return Err(Error::Values {
                    at: format!("{base}, profile {k}, sample {si}"),
                    values: v.len(),
                });
            }
            value.push(v.first().copied().unwrap_or(0));
        }
        Ok(pp::Sample {
            location_id,
            value,
            label,
        })
    }
}
