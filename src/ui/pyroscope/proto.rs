//! The messages of Pyroscope's query API (`querier.v1`, `types.v1`) that agentprof answers,
//! as prost types for the protobuf encoding and serde types for Connect's JSON encoding
//! (protojson: lowerCamelCase names, the proto names also read, 64-bit integers written as
//! strings and read as strings or numbers, enums by name or number). Field numbers follow
//! Pyroscope's `api/querier/v1/querier.proto` and `api/types/v1/types.proto`.

use serde::{Deserialize, Serialize};

/// protojson's 64-bit integers: written as strings, read from strings or numbers.
mod int64 {
    use serde::{Deserialize, Deserializer, Serializer};

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        N(i64),
        F(f64),
        S(String),
    }

    crate::error::message_error! {
        /// A JSON number or string that is not a 64-bit integer.
        NotAnInteger
    }

    fn read(e: Either) -> Result<i64, NotAnInteger> {
        match e {
            Either::N(n) => Ok(n),
            Either::F(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => Ok(f as i64),
            Either::F(f) => Err(NotAnInteger(format!("{f} is not a 64-bit integer"))),
            Either::S(s) => s
                .trim()
                .parse()
                .map_err(|_| NotAnInteger(format!("{s:?} is not a 64-bit integer"))),
        }
    }

    pub fn serialize<S: Serializer>(v: &i64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&v.to_string())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
        read(Either::deserialize(d)?).map_err(serde::de::Error::custom)
    }

    pub mod option {
        use serde::{Deserialize, Deserializer, Serializer};

        pub fn serialize<S: Serializer>(v: &Option<i64>, s: S) -> Result<S::Ok, S::Error> {
            match v {
                Some(v) => s.serialize_str(&v.to_string()),
                None => s.serialize_none(),
            }
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
            match Option::<super::Either>::deserialize(d)? {
                Some(e) => super::read(e).map(Some).map_err(serde::de::Error::custom),
                None => Ok(None),
            }
        }
    }

    pub mod vec {
        use serde::ser::SerializeSeq;
        use serde::{Deserialize, Deserializer, Serializer};

        pub fn serialize<S: Serializer>(v: &[i64], s: S) -> Result<S::Ok, S::Error> {
            let mut seq = s.serialize_seq(Some(v.len()))?;
            for x in v {
                seq.serialize_element(&x.to_string())?;
            }
            seq.end()
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<i64>, D::Error> {
            Vec::<super::Either>::deserialize(d)?
                .into_iter()
                .map(|e| super::read(e).map_err(serde::de::Error::custom))
                .collect()
        }
    }
}

/// An enum of the JSON encoding: its value's name or number.
mod named_enum {
    use serde::{Deserialize, Deserializer};

    #[derive(Deserialize)]
    #[serde(untagged)]
    pub enum Either {
        N(i32),
        S(String),
    }

    /// `names[i]` is value i's name.
    pub fn read<'de, D: Deserializer<'de>>(d: D, names: &[&str]) -> Result<i32, D::Error> {
        match Either::deserialize(d)? {
            Either::N(n) => Ok(n),
            Either::S(s) => names
                .iter()
                .position(|n| *n == s)
                .map(|i| i as i32)
                .ok_or_else(|| {
                    serde::de::Error::custom(format!("{s:?} is none of {}", names.join(", ")))
                }),
        }
    }
}

pub const PROFILE_FORMATS: [&str; 3] = [
    "PROFILE_FORMAT_UNSPECIFIED",
    "PROFILE_FORMAT_FLAMEGRAPH",
    "PROFILE_FORMAT_TREE",
];
pub const AGGREGATIONS: [&str; 2] = [
    "TIME_SERIES_AGGREGATION_TYPE_SUM",
    "TIME_SERIES_AGGREGATION_TYPE_AVERAGE",
];

fn profile_format<'de, D: serde::Deserializer<'de>>(d: D) -> Result<i32, D::Error> {
    named_enum::read(d, &PROFILE_FORMATS)
}

fn aggregation<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<i32>, D::Error> {
    named_enum::read(d, &AGGREGATIONS).map(Some)
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct LabelPair {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub value: String,
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct ProfileType {
    #[prost(string, tag = "1")]
    #[serde(rename = "ID")]
    pub id: String,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(string, tag = "4")]
    #[serde(rename = "sampleType", alias = "sample_type")]
    pub sample_type: String,
    #[prost(string, tag = "5")]
    #[serde(rename = "sampleUnit", alias = "sample_unit")]
    pub sample_unit: String,
    #[prost(string, tag = "6")]
    #[serde(rename = "periodType", alias = "period_type")]
    pub period_type: String,
    #[prost(string, tag = "7")]
    #[serde(rename = "periodUnit", alias = "period_unit")]
    pub period_unit: String,
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct Labels {
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<LabelPair>,
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct Point {
    #[prost(double, tag = "1")]
    pub value: f64,
    /// Milliseconds since the epoch.
    #[prost(int64, tag = "2")]
    #[serde(with = "int64")]
    pub timestamp: i64,
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct Series {
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<LabelPair>,
    #[prost(message, repeated, tag = "2")]
    pub points: Vec<Point>,
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct LabelValuesRequest {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, repeated, tag = "2")]
    pub matchers: Vec<String>,
    #[prost(int64, tag = "3")]
    #[serde(with = "int64")]
    pub start: i64,
    #[prost(int64, tag = "4")]
    #[serde(with = "int64")]
    pub end: i64,
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct Names {
    #[prost(string, repeated, tag = "1")]
    pub names: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct LabelNamesRequest {
    #[prost(string, repeated, tag = "1")]
    pub matchers: Vec<String>,
    #[prost(int64, tag = "2")]
    #[serde(with = "int64")]
    pub start: i64,
    #[prost(int64, tag = "3")]
    #[serde(with = "int64")]
    pub end: i64,
}

/// A stack trace selector: only the stacks that begin (at the root) with these functions.
#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct StackTraceSelector {
    #[prost(message, repeated, tag = "1")]
    #[serde(rename = "callSite", alias = "call_site")]
    pub call_site: Vec<Location>,
    #[prost(message, optional, tag = "2")]
    #[serde(rename = "goPgo", alias = "go_pgo")]
    pub go_pgo: Option<GoPgo>,
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct Location {
    #[prost(string, tag = "1")]
    pub name: String,
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct GoPgo {
    #[prost(uint32, tag = "1")]
    #[serde(rename = "keepLocations", alias = "keep_locations")]
    pub keep_locations: u32,
    #[prost(bool, tag = "2")]
    #[serde(rename = "aggregateCallees", alias = "aggregate_callees")]
    pub aggregate_callees: bool,
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct ProfileTypesRequest {
    #[prost(int64, tag = "1")]
    #[serde(with = "int64")]
    pub start: i64,
    #[prost(int64, tag = "2")]
    #[serde(with = "int64")]
    pub end: i64,
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct ProfileTypesResponse {
    #[prost(message, repeated, tag = "1")]
    #[serde(rename = "profileTypes", alias = "profile_types")]
    pub profile_types: Vec<ProfileType>,
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct SeriesRequest {
    #[prost(string, repeated, tag = "1")]
    pub matchers: Vec<String>,
    #[prost(string, repeated, tag = "2")]
    #[serde(rename = "labelNames", alias = "label_names")]
    pub label_names: Vec<String>,
    #[prost(int64, tag = "3")]
    #[serde(with = "int64")]
    pub start: i64,
    #[prost(int64, tag = "4")]
    #[serde(with = "int64")]
    pub end: i64,
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct SeriesResponse {
    #[prost(message, repeated, tag = "2")]
    #[serde(rename = "labelsSet", alias = "labels_set")]
    pub labels_set: Vec<Labels>,
}

/// What SelectMergeStacktraces, SelectMergeProfile and each side of a Diff select.
#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct SelectMergeStacktracesRequest {
    #[prost(string, tag = "1")]
    #[serde(rename = "profileTypeID", alias = "profile_typeID")]
    pub profile_type_id: String,
    #[prost(string, tag = "2")]
    #[serde(rename = "labelSelector", alias = "label_selector")]
    pub label_selector: String,
    #[prost(int64, tag = "3")]
    #[serde(with = "int64")]
    pub start: i64,
    #[prost(int64, tag = "4")]
    #[serde(with = "int64")]
    pub end: i64,
    #[prost(int64, optional, tag = "5")]
    #[serde(
        rename = "maxNodes",
        alias = "max_nodes",
        with = "int64::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_nodes: Option<i64>,
    #[prost(int32, tag = "6")]
    #[serde(deserialize_with = "profile_format")]
    pub format: i32,
    #[prost(message, optional, tag = "7")]
    #[serde(rename = "stackTraceSelector", alias = "stack_trace_selector")]
    pub stack_trace_selector: Option<StackTraceSelector>,
    #[prost(string, repeated, tag = "8")]
    #[serde(rename = "profileIdSelector", alias = "profile_id_selector")]
    pub profile_id_selector: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct SelectMergeProfileRequest {
    #[prost(string, tag = "1")]
    #[serde(rename = "profileTypeID", alias = "profile_typeID")]
    pub profile_type_id: String,
    #[prost(string, tag = "2")]
    #[serde(rename = "labelSelector", alias = "label_selector")]
    pub label_selector: String,
    #[prost(int64, tag = "3")]
    #[serde(with = "int64")]
    pub start: i64,
    #[prost(int64, tag = "4")]
    #[serde(with = "int64")]
    pub end: i64,
    #[prost(int64, optional, tag = "5")]
    #[serde(
        rename = "maxNodes",
        alias = "max_nodes",
        with = "int64::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_nodes: Option<i64>,
    #[prost(message, optional, tag = "6")]
    #[serde(rename = "stackTraceSelector", alias = "stack_trace_selector")]
    pub stack_trace_selector: Option<StackTraceSelector>,
    #[prost(string, repeated, tag = "7")]
    #[serde(rename = "profileIdSelector", alias = "profile_id_selector")]
    pub profile_id_selector: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct Level {
    #[prost(int64, repeated, tag = "1")]
    #[serde(with = "int64::vec")]
    pub values: Vec<i64>,
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct FlameGraph {
    #[prost(string, repeated, tag = "1")]
    pub names: Vec<String>,
    #[prost(message, repeated, tag = "2")]
    pub levels: Vec<Level>,
    #[prost(int64, tag = "3")]
    #[serde(with = "int64")]
    pub total: i64,
    #[prost(int64, tag = "4")]
    #[serde(rename = "maxSelf", alias = "max_self", with = "int64")]
    pub max_self: i64,
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct SelectMergeStacktracesResponse {
    #[prost(message, optional, tag = "1")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flamegraph: Option<FlameGraph>,
    /// Pyroscope's own tree bytes (format TREE): not written by agentprof.
    #[prost(bytes = "vec", tag = "2")]
    #[serde(skip)]
    pub tree: Vec<u8>,
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct SelectSeriesRequest {
    #[prost(string, tag = "1")]
    #[serde(rename = "profileTypeID", alias = "profile_typeID")]
    pub profile_type_id: String,
    #[prost(string, tag = "2")]
    #[serde(rename = "labelSelector", alias = "label_selector")]
    pub label_selector: String,
    #[prost(int64, tag = "3")]
    #[serde(with = "int64")]
    pub start: i64,
    #[prost(int64, tag = "4")]
    #[serde(with = "int64")]
    pub end: i64,
    #[prost(string, repeated, tag = "5")]
    #[serde(rename = "groupBy", alias = "group_by")]
    pub group_by: Vec<String>,
    /// Seconds.
    #[prost(double, tag = "6")]
    pub step: f64,
    #[prost(int32, optional, tag = "7")]
    #[serde(
        deserialize_with = "aggregation",
        skip_serializing_if = "Option::is_none"
    )]
    pub aggregation: Option<i32>,
    #[prost(message, optional, tag = "8")]
    #[serde(rename = "stackTraceSelector", alias = "stack_trace_selector")]
    pub stack_trace_selector: Option<StackTraceSelector>,
    #[prost(int64, optional, tag = "9")]
    #[serde(with = "int64::option", skip_serializing_if = "Option::is_none")]
    pub limit: Option<i64>,
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct SelectSeriesResponse {
    #[prost(message, repeated, tag = "1")]
    pub series: Vec<Series>,
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct DiffRequest {
    #[prost(message, optional, tag = "1")]
    pub left: Option<SelectMergeStacktracesRequest>,
    #[prost(message, optional, tag = "2")]
    pub right: Option<SelectMergeStacktracesRequest>,
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct FlameGraphDiff {
    #[prost(string, repeated, tag = "1")]
    pub names: Vec<String>,
    #[prost(message, repeated, tag = "2")]
    pub levels: Vec<Level>,
    #[prost(int64, tag = "3")]
    #[serde(with = "int64")]
    pub total: i64,
    #[prost(int64, tag = "4")]
    #[serde(rename = "maxSelf", alias = "max_self", with = "int64")]
    pub max_self: i64,
    #[prost(int64, tag = "5")]
    #[serde(rename = "leftTicks", with = "int64")]
    pub left_ticks: i64,
    #[prost(int64, tag = "6")]
    #[serde(rename = "rightTicks", with = "int64")]
    pub right_ticks: i64,
}

#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(default)]
pub struct DiffResponse {
    #[prost(message, optional, tag = "1")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flamegraph: Option<FlameGraphDiff>,
}

/// A profile in protojson (the JSON encoding of `google.v1.Profile`).
pub fn profile_json(p: &crate::pprof::proto::Profile) -> serde_json::Value {
    use serde_json::{Value, json};
    let s = |n: i64| Value::String(n.to_string());
    let u = |n: u64| Value::String(n.to_string());
    let vt = |v: &crate::pprof::proto::ValueType| json!({"type": s(v.r#type), "unit": s(v.unit)});
    json!({
        "sampleType": p.sample_type.iter().map(vt).collect::<Vec<_>>(),
        "sample": p.sample.iter().map(|x| json!({
            "locationId": x.location_id.iter().map(|&i| u(i)).collect::<Vec<_>>(),
            "value": x.value.iter().map(|&v| s(v)).collect::<Vec<_>>(),
            "label": x.label.iter().map(|l| json!({"key": s(l.key), "str": s(l.str), "num": s(l.num), "numUnit": s(l.num_unit)})).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "mapping": p.mapping.iter().map(|m| json!({
            "id": u(m.id), "memoryStart": u(m.memory_start), "memoryLimit": u(m.memory_limit),
            "fileOffset": u(m.file_offset), "filename": s(m.filename), "buildId": s(m.build_id),
            "hasFunctions": m.has_functions, "hasFilenames": m.has_filenames,
            "hasLineNumbers": m.has_line_numbers, "hasInlineFrames": m.has_inline_frames,
        })).collect::<Vec<_>>(),
        "location": p.location.iter().map(|l| json!({
            "id": u(l.id), "mappingId": u(l.mapping_id), "address": u(l.address),
            "line": l.line.iter().map(|x| json!({"functionId": u(x.function_id), "line": s(x.line), "column": s(x.column)})).collect::<Vec<_>>(),
            "isFolded": l.is_folded,
        })).collect::<Vec<_>>(),
        "function": p.function.iter().map(|f| json!({
            "id": u(f.id), "name": s(f.name), "systemName": s(f.system_name),
            "filename": s(f.filename), "startLine": s(f.start_line),
        })).collect::<Vec<_>>(),
        "stringTable": p.string_table,
        "dropFrames": s(p.drop_frames), "keepFrames": s(p.keep_frames),
        "timeNanos": s(p.time_nanos), "durationNanos": s(p.duration_nanos),
        "periodType": p.period_type.as_ref().map(vt),
        "period": s(p.period),
        "comment": p.comment.iter().map(|&c| s(c)).collect::<Vec<_>>(),
        "defaultSampleType": s(p.default_sample_type),
    })
}
