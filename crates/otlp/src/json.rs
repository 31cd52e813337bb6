//! OTLP/JSON as the OTLP specification writes it: field names in lowerCamelCase, 64-bit
//! integers as decimal strings or numbers, `bytes` as base64, trace, span and profile ids
//! as hex, a oneof as the one key it holds. Unknown fields are skipped.

use serde::Deserialize;
use serde::de::Deserializer;

use crate::proto::{AnyValue, ArrayValue, ExportProfilesServiceRequest, KeyValueList, Value};
use crate::scalars::{b64, int64};

/// A request in OTLP/JSON.
pub fn from_json(bytes: &[u8]) -> Result<ExportProfilesServiceRequest, serde_json::Error> {
    serde_json::from_slice(bytes)
}

/// An AnyValue as JSON writes it: `{"stringValue": "…"}`, `{"intValue": "3"}` …
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct AnyJson {
    string_value: Option<String>,
    bool_value: Option<bool>,
    #[serde(deserialize_with = "some_int")]
    int_value: Option<i64>,
    double_value: Option<f64>,
    array_value: Option<ArrayValue>,
    kvlist_value: Option<KeyValueList>,
    #[serde(deserialize_with = "some_b64")]
    bytes_value: Option<Vec<u8>>,
    string_value_strindex: Option<i32>,
}

fn some_int<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    int64(d).map(Some)
}

fn some_b64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<u8>>, D::Error> {
    b64(d).map(Some)
}

impl<'de> Deserialize<'de> for AnyValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<AnyValue, D::Error> {
        let j = AnyJson::deserialize(d)?;
        let value = if let Some(s) = j.string_value {
            Some(Value::StringValue(s))
        } else if let Some(b) = j.bool_value {
            Some(Value::BoolValue(b))
        } else if let Some(n) = j.int_value {
            Some(Value::IntValue(n))
        } else if let Some(f) = j.double_value {
            Some(Value::DoubleValue(f))
        } else if let Some(a) = j.array_value {
            Some(Value::ArrayValue(a))
        } else if let Some(k) = j.kvlist_value {
            Some(Value::KvlistValue(k))
        } else if let Some(b) = j.bytes_value {
            Some(Value::BytesValue(b))
        } else {
            j.string_value_strindex.map(Value::StringValueStrindex)
        };
        Ok(AnyValue { value })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_spec_s_json_forms() {
        let j = br#"{"resourceProfiles":[{"resource":{"attributes":[
            {"key":"service.name","value":{"stringValue":"api"}},
            {"key":"n","value":{"intValue":"7"}}]},
          "scopeProfiles":[{"scope":{"name":"s"},"profiles":[{
            "sampleType":{"typeStrindex":1,"unitStrindex":2},
            "samples":[{"stackIndex":1,"values":["5", 6],"timestampsUnixNano":["1700000000000000000"]}],
            "timeUnixNano":"1700000000000000000","durationNano":10,"period":"10000000",
            "profileId":"0102030405060708090a0b0c0d0e0f10",
            "originalPayloadFormat":"pprof","originalPayload":"AAEC"}]}]}],
          "dictionary":{"stringTable":["","cpu","nanoseconds"],
            "stackTable":[{},{"locationIndices":[1]}]}}"#;
        let r = from_json(j).expect("parses");
        let p = &r.resource_profiles[0].scope_profiles[0].profiles[0];
        assert_eq!(p.samples[0].values, vec![5, 6]);
        assert_eq!(
            p.samples[0].timestamps_unix_nano,
            vec![1_700_000_000_000_000_000]
        );
        assert_eq!(p.time_unix_nano, 1_700_000_000_000_000_000);
        assert_eq!(p.period, 10_000_000);
        assert_eq!(p.profile_id.len(), 16);
        assert_eq!(p.original_payload, vec![0, 1, 2]);
        let attrs = &r.resource_profiles[0]
            .resource
            .as_ref()
            .expect("resource")
            .attributes;
        assert_eq!(attrs[1].value, Some(AnyValue::int(7)));
        let d = r.dictionary.expect("dictionary");
        assert_eq!(d.stack_table[1].location_indices, vec![1]);
    }

    #[test]
    fn says_what_is_wrong() {
        let e = from_json(
            br#"{"resourceProfiles":[{"scopeProfiles":[{"profiles":[{"period":"x"}]}]}]}"#,
        )
        .expect_err("not an integer");
        assert!(e.to_string().contains("not an integer"), "{e}");
        let e = from_json(
            br#"{"resourceProfiles":[{"scopeProfiles":[{"profiles":[{"profileId":"zz"}]}]}]}"#,
        )
        .expect_err("not hex");
        assert!(e.to_string().contains("not hex"), "{e}");
    }
}
