//! A profile's totals read off its protobuf bytes, without decoding it: what `receive`
//! records of every upload and `ui` lists of every capture.

use crate::wire::{Fields, WireValue, varint};

/// What a profile's totals are, read off its protobuf bytes without decoding it: per sample
/// type (type, unit) the sum of its values, the sample records, and `duration_nanos`.
/// For figures of many profiles a second (`agentprof receive`); None for bytes that are not
/// a well-formed profile.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Totals {
    pub types: Vec<(String, String, f64)>,
    pub samples: usize,
    pub time_nanos: i64,
    pub duration_nanos: i64,
    /// Per sample label with string values: per value, the totals (per sample type) of the
    /// samples that carry it — the index a timeline groups and filters by without reading
    /// the profile again.
    pub labels: Vec<LabelTotals>,
}

/// One sample label's values and their totals (per sample type, in the profile's order).
/// A label of more than [`MAX_LABEL_VALUES`] values (a span id) keeps none: `truncated`.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct LabelTotals {
    pub key: String,
    #[serde(default)]
    pub truncated: bool,
    #[serde(default)]
    pub values: Vec<LabelValue>,
}

#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct LabelValue {
    pub value: String,
    pub totals: Vec<f64>,
}

/// Values a label's index keeps at most, and labels at most.
pub const MAX_LABEL_VALUES: usize = 64;
pub(crate) const MAX_LABEL_KEYS: usize = 16;

/// One label's values (by string-table index) with their sums per type.
type ValueSums = Vec<(i64, Vec<i128>)>;

/// Label totals as samples come (by string-table index), bounded as they grow.
#[derive(Default)]
pub(crate) struct LabelSums {
    /// (key, truncated, its values)
    keys: Vec<(i64, bool, ValueSums)>,
}

impl LabelSums {
    /// A sample's string labels (key, str) and values.
    pub(crate) fn add(&mut self, labels: &[(i64, i64)], values: &[i64]) {
        for &(key, val) in labels {
            if val == 0 {
                continue;
            }
            let k = match self.keys.iter().position(|(k, _, _)| *k == key) {
                Some(k) => k,
                None if self.keys.len() < MAX_LABEL_KEYS => {
                    self.keys.push((key, false, Vec::new()));
                    self.keys.len() - 1
                }
                None => continue,
            };
            let (_, truncated, vals) = &mut self.keys[k];
            if *truncated {
                continue;
            }
            let v = match vals.iter().position(|(v, _)| *v == val) {
                Some(v) => v,
                None if vals.len() < MAX_LABEL_VALUES => {
                    vals.push((val, Vec::new()));
                    vals.len() - 1
                }
                None => {
                    *truncated = true;
                    vals.clear();
                    continue;
                }
            };
            let sums = &mut vals[v].1;
            if sums.len() < values.len() {
                sums.resize(values.len(), 0);
            }
            for (s, x) in sums.iter_mut().zip(values) {
                *s += i128::from(*x);
            }
        }
    }

    pub(crate) fn finish(self, s: impl Fn(i64) -> String, types: usize) -> Vec<LabelTotals> {
        let mut out: Vec<LabelTotals> = self
            .keys
            .into_iter()
            .map(|(key, truncated, vals)| {
                let mut values: Vec<LabelValue> = vals
                    .into_iter()
                    .map(|(v, sums)| {
                        let mut totals: Vec<f64> = sums.iter().map(|x| *x as f64).collect();
                        totals.resize(types, 0.0);
                        LabelValue {
                            value: s(v),
                            totals,
                        }
                    })
                    .collect();
                values.sort_by(|a, b| a.value.cmp(&b.value));
                LabelTotals {
                    key: s(key),
                    truncated,
                    values,
                }
            })
            .collect();
        out.sort_by(|a, b| a.key.cmp(&b.key));
        out
    }
}

/// As records keep it (`captures.jsonl`'s and `uploads.jsonl`'s `totals`, docs/json.md):
/// `time_nanos`, `duration_nanos`, `types[]` of `type`, `unit`, `value`.
impl serde::Serialize for Totals {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        #[derive(serde::Serialize)]
        struct Type<'a> {
            r#type: &'a str,
            unit: &'a str,
            value: f64,
        }
        let types: Vec<Type> = self
            .types
            .iter()
            .map(|(t, u, v)| Type {
                r#type: t,
                unit: u,
                value: *v,
            })
            .collect();
        let mut st = s.serialize_struct("Totals", 4)?;
        st.serialize_field("time_nanos", &self.time_nanos)?;
        st.serialize_field("duration_nanos", &self.duration_nanos)?;
        st.serialize_field("types", &types)?;
        // Always written (empty: no sample carries a string label), so a reader tells a
        // record with the index from one written before it.
        st.serialize_field("labels", &self.labels)?;
        st.end()
    }
}

pub fn totals(raw: &[u8]) -> Option<Totals> {
    totals_of(raw, true)
}

/// [`totals`] without the label index (`labels` empty): for a reader of thousands of files
/// that needs only their totals (the index's small pieces, made beside each file's buffers,
/// held a reader's peak resident memory at 3× over 3,000 files).
pub fn totals_without_labels(raw: &[u8]) -> Option<Totals> {
    totals_of(raw, false)
}

fn totals_of(raw: &[u8], with_labels: bool) -> Option<Totals> {
    // Field walks: (field number, wire type, payload or nothing, varint or 0).
    fn fields<'a>(
        buf: &'a [u8],
        mut f: impl FnMut(u64, u64, &'a [u8], u64) -> Option<()>,
    ) -> Option<()> {
        for item in Fields::new(buf) {
            let (num, value) = item.ok()?;
            match value {
                WireValue::Varint(v) => f(num, 0, &[], v)?,
                WireValue::Bytes(b) => f(num, 2, b, 0)?,
                other => f(num, other.wire_type(), &[], 0)?,
            }
        }
        Some(())
    }
    let mut type_idx: Vec<(i64, i64)> = Vec::new();
    let mut sums: Vec<i128> = Vec::new();
    let mut strings: Vec<&[u8]> = Vec::new();
    let mut t = Totals::default();
    let mut label_sums = LabelSums::default();
    // One sample's values and string labels, kept until the sample is read whole.
    let (mut values, mut labels): (Vec<i64>, Vec<(i64, i64)>) = (Vec::new(), Vec::new());
    fields(raw, |num, wt, b, v| {
        match (num, wt) {
            (1, 2) => {
                let (mut ty, mut unit) = (0i64, 0i64);
                fields(b, |n, w, _, v| {
                    match (n, w) {
                        (1, 0) => ty = v as i64,
                        (2, 0) => unit = v as i64,
                        _ => {}
                    }
                    Some(())
                })?;
                type_idx.push((ty, unit));
            }
            (2, 2) => {
                t.samples += 1;
                let mut i = 0usize;
                values.clear();
                labels.clear();
                fields(b, |n, w, pb, v| {
                    if n == 3 && w == 2 {
                        let (mut key, mut str) = (0i64, 0i64);
                        fields(pb, |ln, lw, _, lv| {
                            match (ln, lw) {
                                (1, 0) => key = lv as i64,
                                (2, 0) => str = lv as i64,
                                _ => {}
                            }
                            Some(())
                        })?;
                        labels.push((key, str));
                    }
                    if n == 2 {
                        let mut add = |x: u64| {
                            if sums.len() <= i {
                                sums.resize(i + 1, 0);
                            }
                            sums[i] += i128::from(x as i64);
                            values.push(x as i64);
                            i += 1;
                        };
                        match w {
                            0 => add(v),
                            2 => {
                                let mut at = 0;
                                while at < pb.len() {
                                    add(varint(pb, &mut at)?);
                                }
                            }
                            _ => return None,
                        }
                    }
                    Some(())
                })?;
                if with_labels && !labels.is_empty() {
                    label_sums.add(&labels, &values);
                }
            }
            (6, 2) => strings.push(b),
            (9, 0) => t.time_nanos = v as i64,
            (10, 0) => t.duration_nanos = v as i64,
            _ => {}
        }
        Some(())
    })?;
    let s = |i: i64| {
        usize::try_from(i)
            .ok()
            .and_then(|i| strings.get(i))
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_default()
    };
    t.types = type_idx
        .iter()
        .enumerate()
        .map(|(i, (ty, unit))| (s(*ty), s(*unit), sums.get(i).copied().unwrap_or(0) as f64))
        .collect();
    t.labels = label_sums.finish(s, type_idx.len());
    Some(t)
}
