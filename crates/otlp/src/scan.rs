//! What decoding a request will take, counted before anything is decoded: every message
//! and packed element of the request, walked by its schema without allocating, against a
//! budget of fields and an estimate of the memory the decoded messages take. A cut or
//! malformed message is reported as such.

use pprof::wire::{Fields, WireValue};

use crate::Error;

/// Counted fields and the estimated memory of the decoded request.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Scan {
    pub fields: u64,
    pub memory: u64,
}

#[derive(Clone, Copy)]
enum Msg {
    Request,
    Resource,
    ResourceAttrs,
    Scope,
    ScopeInfo,
    KeyValue,
    AnyValue,
    List,
    Profile,
    ValueType,
    Sample,
    Dictionary,
    Mapping,
    Location,
    Line,
    Function,
    Link,
    Attribute,
    Stack,
}

/// A message's decoded size, roughly (its struct and the vectors' headers).
fn size(m: Msg) -> u64 {
    match m {
        Msg::Profile => 200,
        Msg::Sample => 88,
        Msg::Location | Msg::Mapping => 72,
        Msg::AnyValue | Msg::KeyValue | Msg::Attribute => 64,
        _ => 48,
    }
}

/// What field `f` of message `m` holds: a message (Some), or bytes or a packed list (None).
fn nested(m: Msg, f: u64) -> Option<Msg> {
    use Msg::*;
    Some(match (m, f) {
        (Request, 1) => Resource,
        (Request, 2) => Dictionary,
        (Resource, 1) => ResourceAttrs,
        (Resource, 2) => Scope,
        (ResourceAttrs, 1) => KeyValue,
        (Scope, 1) => ScopeInfo,
        (Scope, 2) => Profile,
        (ScopeInfo, 3) => KeyValue,
        (KeyValue, 2) | (Attribute, 2) => AnyValue,
        (AnyValue, 5) | (AnyValue, 6) => List,
        (List, 1) => AnyValue,
        (Profile, 1) | (Profile, 5) => ValueType,
        (Profile, 2) => Sample,
        (Dictionary, 1) => Mapping,
        (Dictionary, 2) => Location,
        (Dictionary, 3) => Function,
        (Dictionary, 4) => Link,
        (Dictionary, 6) => Attribute,
        (Dictionary, 7) => Stack,
        (Location, 3) => Line,
        // Everything else is a scalar, a string, bytes or a packed list.
        _ => return None,
    })
}

/// Counts `buf` (an `ExportProfilesServiceRequest`) against `fields` and `memory`.
pub fn scan(buf: &[u8], fields: u64, memory: u64) -> Result<Scan, Error> {
    let mut s = Scan::default();
    walk(buf, Msg::Request, fields, &mut s, 0)?;
    if s.memory > memory {
        return Err(Error::Memory {
            estimate: s.memory,
            budget: memory,
        });
    }
    Ok(s)
}

fn walk(buf: &[u8], msg: Msg, budget: u64, s: &mut Scan, depth: u32) -> Result<(), Error> {
    // AnyValue lists nest; the spec's values seldom go past a few levels.
    if depth > 24 {
        return Err(Error::Malformed("nested too deep"));
    }
    s.memory += size(msg);
    for item in Fields::new(buf) {
        let (field, value) = item?;
        s.fields += 1;
        if s.fields > budget {
            return Err(Error::Fields(budget));
        }
        let WireValue::Bytes(body) = value else {
            continue;
        };
        match nested(msg, field) {
            Some(m) => walk(body, m, budget, s, depth + 1)?,
            None => {
                // Bytes, a string, or a packed list: each element of a list may
                // become 8 bytes; a string is its bytes and a header.
                s.fields += body.len() as u64 / 2;
                s.memory += 24 + 8 * body.len() as u64;
                if s.fields > budget {
                    return Err(Error::Fields(budget));
                }
            }
        }
    }
    Ok(())
}
