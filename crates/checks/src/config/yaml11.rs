//! Check configuration as the Agent reads it: YAML 1.1.
//!
//! The Agent loads `conf.d` files with a YAML 1.1 loader and hands each instance to the check
//! as the values that loader resolved: an unquoted `yes`, `on`, `y` are `True`, `no`, `off`,
//! `n` are `False`, `0755` is the octal 493, `0x1F` 31, `1_000` 1000. The YAML 1.2 reader the
//! rest of agentprof uses reads all of those as strings, so a check's file is resolved here,
//! from libyaml's events (the same parser, so the same syntax is accepted), where an unquoted
//! scalar can be told from a quoted one: `'yes'` and `"0755"` stay strings, as they do in the
//! Agent.

use std::collections::HashMap;
use std::mem::MaybeUninit;

use serde_yaml_ng::{Mapping, Number, Value};
use unsafe_libyaml as unsafe_sys;

/// The document in `text` with YAML 1.1's resolution of unquoted scalars and merge keys
/// (`<<: *defaults`) applied; `None` when libyaml refuses the text (the caller reports the
/// YAML 1.2 reader's located error instead) or it holds no document.
pub fn load(text: &str) -> Option<Value> {
    let mut b = Builder {
        events: Events::new(text.as_bytes())?,
        anchors: HashMap::new(),
        nodes: 0,
    };
    loop {
        match b.events.next()? {
            Ev::StreamStart | Ev::DocumentStart => continue,
            Ev::StreamEnd => return None,
            first => {
                let (mut value, _) = b.node(first, 0)?;
                value.apply_merge().ok()?;
                return Some(value);
            }
        }
    }
}

/// A document read both ways — `v11` as YAML 1.1 resolves it, `v12` as the YAML 1.2 reader
/// does (the same tree: one parser, merge keys applied to both) — for typed options the way
/// the Agent's loader fills a Go struct: a boolean or number option takes YAML 1.1's value
/// (`use_mount: yes`), a text option takes the scalar's text (`command: [FILE, 93600]`, or
/// `name: on`).
#[derive(Clone, Copy)]
pub struct Pair<'a> {
    pub v11: &'a Value,
    pub v12: &'a Value,
}

type DeError = serde_yaml_ng::Error;

impl<'de> serde::Deserializer<'de> for Pair<'de> {
    type Error = DeError;

    fn deserialize_any<V: serde::de::Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        match (self.v11, self.v12) {
            (Value::Sequence(a), Value::Sequence(b)) if a.len() == b.len() => {
                v.visit_seq(PairSeq(a.iter().zip(b.iter())))
            }
            (Value::Mapping(a), Value::Mapping(b)) if a.len() == b.len() => v.visit_map(PairMap {
                entries: a.iter().zip(b.iter()),
                value: None,
            }),
            (v11, _) => v11.deserialize_any(v),
        }
    }

    fn deserialize_str<V: serde::de::Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        match self.v12 {
            Value::String(s) => v.visit_borrowed_str(s),
            Value::Number(n) => v.visit_string(n.to_string()),
            Value::Bool(b) => v.visit_string(b.to_string()),
            other => other.deserialize_str(v),
        }
    }

    fn deserialize_string<V: serde::de::Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        self.deserialize_str(v)
    }

    fn deserialize_identifier<V: serde::de::Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        self.deserialize_str(v)
    }

    fn deserialize_option<V: serde::de::Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        if self.v11.is_null() {
            v.visit_none()
        } else {
            v.visit_some(self)
        }
    }

    fn deserialize_enum<V: serde::de::Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, DeError> {
        self.v12.deserialize_enum(name, variants, v)
    }

    fn deserialize_newtype_struct<V: serde::de::Visitor<'de>>(
        self,
        _name: &'static str,
        v: V,
    ) -> Result<V::Value, DeError> {
        v.visit_newtype_struct(self)
    }

    fn deserialize_ignored_any<V: serde::de::Visitor<'de>>(
        self,
        v: V,
    ) -> Result<V::Value, DeError> {
        v.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char bytes byte_buf unit
        unit_struct seq tuple tuple_struct map struct
    }
}

struct PairSeq<I>(I);

impl<'de, I: Iterator<Item = (&'de Value, &'de Value)>> serde::de::SeqAccess<'de> for PairSeq<I> {
    type Error = DeError;

    fn next_element_seed<T: serde::de::DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, DeError> {
        self.0
            .next()
            .map(|(v11, v12)| seed.deserialize(Pair { v11, v12 }))
            .transpose()
    }
}

type Entry<'de> = (&'de Value, &'de Value);

struct PairMap<'de, I> {
    entries: I,
    value: Option<Pair<'de>>,
}

impl<'de, I: Iterator<Item = (Entry<'de>, Entry<'de>)>> serde::de::MapAccess<'de>
    for PairMap<'de, I>
{
    type Error = DeError;

    fn next_key_seed<K: serde::de::DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DeError> {
        let Some(((k11, v11), (k12, v12))) = self.entries.next() else {
            return Ok(None);
        };
        self.value = Some(Pair { v11, v12 });
        seed.deserialize(Pair { v11: k11, v12: k12 }).map(Some)
    }

    fn next_value_seed<T: serde::de::DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<T::Value, DeError> {
        match self.value.take() {
            Some(pair) => seed.deserialize(pair),
            None => Err(serde::de::Error::custom("a value without its key")),
        }
    }
}

/// How an unquoted, untagged scalar resolves under the Agent's YAML 1.1 loader.
pub fn resolve_plain(s: &str) -> Value {
    match s {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            return Value::Bool(true);
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            return Value::Bool(false);
        }
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Value::Number(f64::INFINITY.into());
        }
        "-.inf" | "-.Inf" | "-.INF" => return Value::Number(f64::NEG_INFINITY.into()),
        ".nan" | ".NaN" | ".NAN" => return Value::Number(f64::NAN.into()),
        _ => {}
    }
    let first = s.as_bytes()[0];
    if !(first.is_ascii_digit() || matches!(first, b'+' | b'-' | b'.')) {
        return Value::String(s.to_string());
    }
    let plain: String = s.chars().filter(|&c| c != '_').collect();
    if let Some(n) = int(&plain) {
        return Value::Number(n);
    }
    if float_form(&plain)
        && let Ok(f) = plain.parse::<f64>()
    {
        return Value::Number(f.into());
    }
    Value::String(s.to_string())
}

/// An integer as YAML 1.1 writes one (underscores already removed): decimal, `0x` hex, `0b`
/// binary, a leading `0` (or `0o`) octal, with an optional sign.
fn int(plain: &str) -> Option<Number> {
    let (negative, digits) = match plain.as_bytes().first()? {
        b'-' => (true, &plain[1..]),
        b'+' => (false, &plain[1..]),
        _ => (false, plain),
    };
    if digits.is_empty() || digits.starts_with(['+', '-']) {
        return None;
    }
    let (radix, body) = if let Some(h) = digits.strip_prefix("0x") {
        (16, h)
    } else if let Some(b) = digits.strip_prefix("0b") {
        (2, b)
    } else if let Some(o) = digits.strip_prefix("0o") {
        (8, o)
    } else if digits.len() > 1 && digits.starts_with('0') {
        (8, &digits[1..])
    } else {
        (10, digits)
    };
    if body.is_empty() || body.starts_with(['+', '-']) {
        return None;
    }
    let magnitude = u64::from_str_radix(body, radix).ok()?;
    if negative {
        let v = 0i64.checked_sub_unsigned(magnitude)?;
        Some(Number::from(v))
    } else {
        Some(Number::from(magnitude))
    }
}

/// `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`: the floats YAML 1.1 resolves.
fn float_form(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// Nesting deeper than this is refused (a configuration file is a few levels deep; this
/// bounds the recursion on hostile input).
const MAX_DEPTH: usize = 256;

/// The most nodes a document may expand to, aliases counted at their full size: refuses the
/// "billion laughs" file (anchors of aliases of anchors) before it takes the memory.
const MAX_NODES: usize = 1_000_000;

struct Builder<'a> {
    events: Events<'a>,
    /// Each anchor's value and its size in nodes.
    anchors: HashMap<Vec<u8>, (Value, usize)>,
    nodes: usize,
}

impl Builder<'_> {
    /// The node that starts with `ev`, and its size in nodes.
    fn node(&mut self, ev: Ev, depth: usize) -> Option<(Value, usize)> {
        if depth > MAX_DEPTH {
            return None;
        }
        let (anchor, value, weight) = match ev {
            Ev::Alias(name) => {
                let (v, w) = self.anchors.get(&name)?;
                self.nodes = self.nodes.checked_add(*w)?;
                if self.nodes > MAX_NODES {
                    return None;
                }
                return Some((v.clone(), *w));
            }
            Ev::Scalar {
                anchor,
                tag,
                value,
                plain,
            } => {
                let s = String::from_utf8(value).ok()?;
                let v = match tag.as_deref() {
                    None if plain => resolve_plain(&s),
                    Some(b"tag:yaml.org,2002:int" | b"tag:yaml.org,2002:float")
                    | Some(b"tag:yaml.org,2002:bool" | b"tag:yaml.org,2002:null") => {
                        resolve_plain(&s)
                    }
                    _ => Value::String(s),
                };
                (anchor, v, 1)
            }
            Ev::SequenceStart { anchor } => {
                let mut seq = Vec::new();
                let mut weight = 1;
                loop {
                    match self.events.next()? {
                        Ev::SequenceEnd => break,
                        e => {
                            let (v, w) = self.node(e, depth + 1)?;
                            seq.push(v);
                            weight += w;
                        }
                    }
                }
                (anchor, Value::Sequence(seq), weight)
            }
            Ev::MappingStart { anchor } => {
                let mut map = Mapping::new();
                let mut weight = 1;
                loop {
                    let (key, kw) = match self.events.next()? {
                        Ev::MappingEnd => break,
                        e => self.node(e, depth + 1)?,
                    };
                    let e = self.events.next()?;
                    let (value, vw) = self.node(e, depth + 1)?;
                    map.insert(key, value);
                    weight += kw + vw;
                }
                (anchor, Value::Mapping(map), weight)
            }
            _ => return None,
        };
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            return None;
        }
        if let Some(a) = anchor {
            self.anchors.insert(a, (value.clone(), weight));
        }
        Some((value, weight))
    }
}

/// One libyaml event, copied out of the parser.
enum Ev {
    StreamStart,
    StreamEnd,
    DocumentStart,
    DocumentEnd,
    Alias(Vec<u8>),
    Scalar {
        anchor: Option<Vec<u8>>,
        tag: Option<Vec<u8>>,
        value: Vec<u8>,
        plain: bool,
    },
    SequenceStart {
        anchor: Option<Vec<u8>>,
    },
    SequenceEnd,
    MappingStart {
        anchor: Option<Vec<u8>>,
    },
    MappingEnd,
}

/// libyaml's parser over a borrowed input; freed on drop.
struct Events<'a> {
    parser: Box<MaybeUninit<unsafe_sys::yaml_parser_t>>,
    _input: &'a [u8],
    failed: bool,
}

impl<'a> Events<'a> {
    fn new(input: &'a [u8]) -> Option<Events<'a>> {
        let mut parser = Box::new(MaybeUninit::<unsafe_sys::yaml_parser_t>::uninit());
        // SAFETY: initialize fills the whole struct (it zeroes it first); the input outlives
        // the parser, which reads it only through `next`.
        unsafe {
            if unsafe_sys::yaml_parser_initialize(parser.as_mut_ptr()).fail {
                return None;
            }
            unsafe_sys::yaml_parser_set_encoding(
                parser.as_mut_ptr(),
                unsafe_sys::YAML_UTF8_ENCODING,
            );
            unsafe_sys::yaml_parser_set_input_string(
                parser.as_mut_ptr(),
                input.as_ptr(),
                input.len() as _,
            );
        }
        Some(Events {
            parser,
            _input: input,
            failed: false,
        })
    }

    fn next(&mut self) -> Option<Ev> {
        if self.failed {
            return None;
        }
        let mut event = MaybeUninit::<unsafe_sys::yaml_event_t>::uninit();
        // SAFETY: the parser was initialised in `new`; an event that parsed is read (pointers
        // with their lengths, or NUL-terminated as libyaml documents) and deleted before return.
        unsafe {
            if unsafe_sys::yaml_parser_parse(self.parser.as_mut_ptr(), event.as_mut_ptr()).fail {
                self.failed = true;
                return None;
            }
            let e = &*event.as_ptr();
            let ev = match e.type_ {
                unsafe_sys::YAML_STREAM_START_EVENT => Some(Ev::StreamStart),
                unsafe_sys::YAML_STREAM_END_EVENT => Some(Ev::StreamEnd),
                unsafe_sys::YAML_DOCUMENT_START_EVENT => Some(Ev::DocumentStart),
                unsafe_sys::YAML_DOCUMENT_END_EVENT => Some(Ev::DocumentEnd),
                unsafe_sys::YAML_ALIAS_EVENT => cstr(e.data.alias.anchor).map(Ev::Alias),
                unsafe_sys::YAML_SCALAR_EVENT => {
                    let s = e.data.scalar;
                    let value = if s.value.is_null() {
                        Vec::new()
                    } else {
                        std::slice::from_raw_parts(s.value, s.length as usize).to_vec()
                    };
                    Some(Ev::Scalar {
                        anchor: cstr(s.anchor),
                        tag: cstr(s.tag),
                        value,
                        plain: s.style == unsafe_sys::YAML_PLAIN_SCALAR_STYLE,
                    })
                }
                unsafe_sys::YAML_SEQUENCE_START_EVENT => Some(Ev::SequenceStart {
                    anchor: cstr(e.data.sequence_start.anchor),
                }),
                unsafe_sys::YAML_SEQUENCE_END_EVENT => Some(Ev::SequenceEnd),
                unsafe_sys::YAML_MAPPING_START_EVENT => Some(Ev::MappingStart {
                    anchor: cstr(e.data.mapping_start.anchor),
                }),
                unsafe_sys::YAML_MAPPING_END_EVENT => Some(Ev::MappingEnd),
                _ => None,
            };
            unsafe_sys::yaml_event_delete(event.as_mut_ptr());
            if ev.is_none() {
                self.failed = true;
            }
            ev
        }
    }
}

/// A NUL-terminated string from libyaml, copied.
///
/// # Safety
/// `p` is null or points at a NUL-terminated string.
unsafe fn cstr(p: *const u8) -> Option<Vec<u8>> {
    if p.is_null() {
        return None;
    }
    // SAFETY: as the caller promises.
    let s = unsafe { std::ffi::CStr::from_ptr(p.cast()) };
    Some(s.to_bytes().to_vec())
}

impl Drop for Events<'_> {
    fn drop(&mut self) {
        // SAFETY: initialised in `new` (a parser whose initialisation failed is never built).
        unsafe { unsafe_sys::yaml_parser_delete(self.parser.as_mut_ptr()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(text: &str, key: &str) -> Value {
        load(text).unwrap().get(key).cloned().unwrap()
    }

    #[test]
    fn booleans_as_the_agent_reads_them() {
        for (word, want) in [
            ("yes", true),
            ("Yes", true),
            ("on", true),
            ("ON", true),
            ("y", true),
            ("true", true),
            ("no", false),
            ("off", false),
            ("N", false),
            ("False", false),
        ] {
            assert_eq!(get(&format!("k: {word}"), "k"), Value::Bool(want), "{word}");
        }
    }

    #[test]
    fn integers_octal_hex_binary_and_underscores() {
        for (text, want) in [
            ("0755", 493i64),
            ("0o17", 15),
            ("0x1F", 31),
            ("0b1010", 10),
            ("1_000", 1000),
            ("-1_000", -1000),
            ("+12", 12),
            ("0", 0),
            ("42", 42),
        ] {
            assert_eq!(
                get(&format!("k: {text}"), "k"),
                Value::Number(want.into()),
                "{text}"
            );
        }
        assert_eq!(
            get("k: 1_000.5", "k"),
            Value::Number(1000.5f64.into()),
            "underscores in a float"
        );
        assert_eq!(get("k: 1e3", "k"), Value::Number(1000f64.into()));
    }

    #[test]
    fn quoted_and_tagged_strings_stay_strings() {
        for text in [
            "k: 'yes'",
            "k: \"on\"",
            "k: '0755'",
            "k: !!str 1_000",
            "k: |\n  yes\n",
        ] {
            assert!(get(text, "k").is_string(), "{text}: {:?}", get(text, "k"));
        }
        assert_eq!(get("k: yesterday", "k"), Value::String("yesterday".into()));
        assert_eq!(get("k: 1.2.3", "k"), Value::String("1.2.3".into()));
        assert_eq!(get("k: 0x", "k"), Value::String("0x".into()));
        assert_eq!(get("k: ~", "k"), Value::Null);
        assert_eq!(get("k:", "k"), Value::Null);
    }

    #[test]
    fn anchors_aliases_and_merge_keys() {
        let v = load("base: &b {use_mount: yes, num: 0755}\ninst:\n  <<: *b\n  num: 1\ncopy: *b\n")
            .unwrap();
        assert_eq!(v["inst"]["use_mount"], Value::Bool(true));
        assert_eq!(v["inst"]["num"], Value::Number(1.into()));
        assert_eq!(v["copy"]["num"], Value::Number(493.into()));
        // Keys resolve as values do: the Agent reads a key `n:` as false, `1:` as 1.
        let v = load("n: a\n1: b\n").unwrap();
        assert_eq!(v[&Value::Bool(false)], Value::String("a".into()));
    }

    #[derive(serde::Deserialize, Debug, Default)]
    #[serde(default)]
    struct Opts {
        use_mount: bool,
        min: u32,
        name: String,
        command: Vec<String>,
        tags: Vec<String>,
        size: Option<f64>,
    }

    #[test]
    fn typed_options_take_booleans_as_yaml_1_1_and_text_as_written() {
        let text = "use_mount: yes\nmin: 1_0\nname: on\ncommand: [/etc/hostname, 93600]\ntags: [0755, 'x:y']\nsize: 1_5.5\n";
        let v11 = load(text).unwrap();
        let v12: Value = serde_yaml_ng::from_str(text).unwrap();
        let o: Opts = serde::Deserialize::deserialize(Pair {
            v11: &v11,
            v12: &v12,
        })
        .unwrap();
        assert!(o.use_mount);
        assert_eq!(o.min, 10);
        assert_eq!(o.name, "on");
        assert_eq!(o.command, ["/etc/hostname", "93600"]);
        assert_eq!(o.tags, ["0755", "x:y"]);
        assert_eq!(o.size, Some(15.5));
        let text = "use_mount: maybe\n";
        let (v11, v12) = (load(text).unwrap(), serde_yaml_ng::from_str(text).unwrap());
        let e = <Opts as serde::Deserialize>::deserialize(Pair {
            v11: &v11,
            v12: &v12,
        })
        .unwrap_err();
        assert!(e.to_string().contains("expected a boolean"), "{e}");
    }

    #[test]
    fn refused_or_hostile_text_is_none_not_a_panic() {
        assert!(load("k: [unclosed").is_none());
        assert!(load("").is_none());
        let deep = "[".repeat(10_000);
        assert!(load(&deep).is_none());
        assert!(load("k: *nowhere").is_none());
        let mut laughs = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..10 {
            let p = i - 1;
            laughs.push_str(&format!(
                "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
            ));
        }
        assert!(load(&laughs).is_none(), "a billion laughs is refused");
    }
}
