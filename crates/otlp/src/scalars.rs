//! OTLP/JSON's scalars, read by serde for the messages (`proto`) and the values (`json`):
//! 64-bit integers as decimal strings or numbers, `bytes` as base64, ids as hex.

use base64::Engine;
use serde::Deserialize;
use serde::de::{self, Deserializer};

/// A 64-bit integer as OTLP/JSON writes it: a string of digits, or a number.
#[derive(Deserialize)]
#[serde(untagged)]
enum Int {
    Signed(i64),
    Unsigned(u64),
    Text(String),
}

fn wide<E: de::Error>(v: Int) -> Result<i128, E> {
    match v {
        Int::Signed(n) => Ok(n.into()),
        Int::Unsigned(n) => Ok(n.into()),
        Int::Text(s) => s
            .trim()
            .parse::<i128>()
            .map_err(|_| E::custom(format!("{s:?} is not an integer"))),
    }
}

pub(crate) fn int64<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    let n = wide(Int::deserialize(d)?)?;
    i64::try_from(n).map_err(|_| de::Error::custom(format!("{n} is out of int64's range")))
}

pub(crate) fn uint64<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let n = wide(Int::deserialize(d)?)?;
    u64::try_from(n).map_err(|_| de::Error::custom(format!("{n} is out of uint64's range")))
}

pub(crate) fn i64s<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<i64>, D::Error> {
    Vec::<Int>::deserialize(d)?
        .into_iter()
        .map(|v| {
            let n = wide(v)?;
            i64::try_from(n).map_err(|_| de::Error::custom(format!("{n} is out of int64's range")))
        })
        .collect()
}

pub(crate) fn u64s<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u64>, D::Error> {
    Vec::<Int>::deserialize(d)?
        .into_iter()
        .map(|v| {
            let n = wide(v)?;
            u64::try_from(n).map_err(|_| de::Error::custom(format!("{n} is out of uint64's range")))
        })
        .collect()
}

pub(crate) fn b64<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
    let s = String::deserialize(d)?;
    base64::engine::general_purpose::STANDARD
        .decode(s.trim())
        .or_else(|_| base64::engine::general_purpose::URL_SAFE.decode(s.trim()))
        .map_err(|e| de::Error::custom(format!("not base64: {e}")))
}

pub(crate) fn hex<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
    let s = String::deserialize(d)?;
    let s = s.trim();
    if s.len() % 2 != 0 {
        return Err(de::Error::custom(format!("{s:?} is not hex (odd length)")));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| {
            s.get(i..i + 2)
                .and_then(|b| u8::from_str_radix(b, 16).ok())
                .ok_or_else(|| de::Error::custom(format!("{s:?} is not hex")))
        })
        .collect()
}
