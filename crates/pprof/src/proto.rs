//! profile.proto (github.com/google/pprof/proto/profile.proto) as prost derive types; no
//! protoc at build time. Field numbers follow the .proto exactly.

#[derive(Clone, PartialEq, prost::Message)]
pub struct Profile {
    #[prost(message, repeated, tag = "1")]
    pub sample_type: Vec<ValueType>,
    #[prost(message, repeated, tag = "2")]
    pub sample: Vec<Sample>,
    #[prost(message, repeated, tag = "3")]
    pub mapping: Vec<Mapping>,
    #[prost(message, repeated, tag = "4")]
    pub location: Vec<Location>,
    #[prost(message, repeated, tag = "5")]
    pub function: Vec<Function>,
    #[prost(string, repeated, tag = "6")]
    pub string_table: Vec<String>,
    #[prost(int64, tag = "7")]
    pub drop_frames: i64,
    #[prost(int64, tag = "8")]
    pub keep_frames: i64,
    #[prost(int64, tag = "9")]
    pub time_nanos: i64,
    #[prost(int64, tag = "10")]
    pub duration_nanos: i64,
    #[prost(message, optional, tag = "11")]
    pub period_type: Option<ValueType>,
    #[prost(int64, tag = "12")]
    pub period: i64,
    #[prost(int64, repeated, tag = "13")]
    pub comment: Vec<i64>,
    #[prost(int64, tag = "14")]
    pub default_sample_type: i64,
    #[prost(int64, tag = "15")]
    pub doc_url: i64,
}

/// [`Profile`] without its samples: field 2 is not declared, so prost skips each sample
/// without reading it. `decode::decode_pprof` reads the samples itself, their location ids
/// into one array.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct ProfileWithoutSamples {
    #[prost(message, repeated, tag = "1")]
    pub sample_type: Vec<ValueType>,
    #[prost(message, repeated, tag = "3")]
    pub mapping: Vec<Mapping>,
    #[prost(message, repeated, tag = "4")]
    pub location: Vec<Location>,
    #[prost(message, repeated, tag = "5")]
    pub function: Vec<Function>,
    #[prost(string, repeated, tag = "6")]
    pub string_table: Vec<String>,
    #[prost(int64, tag = "7")]
    pub drop_frames: i64,
    #[prost(int64, tag = "8")]
    pub keep_frames: i64,
    #[prost(int64, tag = "9")]
    pub time_nanos: i64,
    #[prost(int64, tag = "10")]
    pub duration_nanos: i64,
    #[prost(message, optional, tag = "11")]
    pub period_type: Option<ValueType>,
    #[prost(int64, tag = "12")]
    pub period: i64,
    #[prost(int64, repeated, tag = "13")]
    pub comment: Vec<i64>,
    #[prost(int64, tag = "14")]
    pub default_sample_type: i64,
    #[prost(int64, tag = "15")]
    pub doc_url: i64,
}

impl ProfileWithoutSamples {
    pub(crate) fn with_samples(self, sample: Vec<Sample>) -> Profile {
        let ProfileWithoutSamples {
            sample_type,
            mapping,
            location,
            function,
            string_table,
            drop_frames,
            keep_frames,
            time_nanos,
            duration_nanos,
            period_type,
            period,
            comment,
            default_sample_type,
            doc_url,
        } = self;
        Profile {
            sample_type,
            sample,
            mapping,
            location,
            function,
            string_table,
            drop_frames,
            keep_frames,
            time_nanos,
            duration_nanos,
            period_type,
            period,
            comment,
            default_sample_type,
            doc_url,
        }
    }
}

#[derive(Clone, Copy, PartialEq, prost::Message)]
pub struct ValueType {
    #[prost(int64, tag = "1")]
    pub r#type: i64,
    #[prost(int64, tag = "2")]
    pub unit: i64,
}

/// A sample. Its `Message` is written here, not derived: a packed list is counted before it
/// is read, so each of a large profile's millions of lists is allocated once at its size
/// (the derived code pushes one element at a time, growing each list as it goes).
#[derive(Clone, PartialEq, Default, Debug)]
pub struct Sample {
    /// Field 1.
    pub location_id: Vec<u64>,
    /// Field 2.
    pub value: Vec<i64>,
    /// Field 3.
    pub label: Vec<Label>,
}

impl prost::Message for Sample {
    fn encode_raw(&self, buf: &mut impl prost::bytes::BufMut) {
        prost::encoding::uint64::encode_packed(1, &self.location_id, buf);
        prost::encoding::int64::encode_packed(2, &self.value, buf);
        prost::encoding::message::encode_repeated(3, &self.label, buf);
    }

    fn merge_field(
        &mut self,
        tag: u32,
        wire_type: prost::encoding::WireType,
        buf: &mut impl prost::bytes::Buf,
        ctx: prost::encoding::DecodeContext,
    ) -> Result<(), prost::DecodeError> {
        match tag {
            1 => merge_varints(
                wire_type,
                &mut self.location_id,
                buf,
                ctx,
                |v| v,
                |w, o, b, c| prost::encoding::uint64::merge_repeated(w, o, b, c),
            ),
            2 => merge_varints(
                wire_type,
                &mut self.value,
                buf,
                ctx,
                |v| v as i64,
                |w, o, b, c| prost::encoding::int64::merge_repeated(w, o, b, c),
            ),
            3 => prost::encoding::message::merge_repeated(wire_type, &mut self.label, buf, ctx),
            _ => prost::encoding::skip_field(wire_type, tag, buf, ctx),
        }
    }

    fn encoded_len(&self) -> usize {
        prost::encoding::uint64::encoded_len_packed(1, &self.location_id)
            + prost::encoding::int64::encoded_len_packed(2, &self.value)
            + prost::encoding::message::encoded_len_repeated(3, &self.label)
    }

    fn clear(&mut self) {
        self.location_id.clear();
        self.value.clear();
        self.label.clear();
    }
}

/// A packed list of varints appended to `out`, its elements counted first (a byte under 0x80
/// ends each) and room made for them. Anything else — one unpacked element, a list split
/// over buffers, a malformed list — goes to prost's own reader (`slow`), which reports what
/// is wrong as it does for every other field.
fn merge_varints<T, B: prost::bytes::Buf>(
    wire_type: prost::encoding::WireType,
    out: &mut Vec<T>,
    buf: &mut B,
    ctx: prost::encoding::DecodeContext,
    conv: impl Fn(u64) -> T,
    slow: impl FnOnce(
        prost::encoding::WireType,
        &mut Vec<T>,
        &mut B,
        prost::encoding::DecodeContext,
    ) -> Result<(), prost::DecodeError>,
) -> Result<(), prost::DecodeError> {
    if wire_type == prost::encoding::WireType::LengthDelimited {
        let chunk = buf.chunk();
        let mut at = 0;
        if let Some(len) = varint(chunk, &mut at).and_then(|l| usize::try_from(l).ok())
            && let Some(body) = at.checked_add(len).and_then(|end| chunk.get(at..end))
            && body.last().is_none_or(|&b| b < 0x80)
        {
            let before = out.len();
            out.reserve_exact(body.iter().filter(|&&b| b < 0x80).count());
            let mut p = 0;
            while p < body.len() {
                match varint(body, &mut p) {
                    Some(v) => out.push(conv(v)),
                    None => break,
                }
            }
            if p == body.len() {
                buf.advance(at + len);
                return Ok(());
            }
            out.truncate(before);
        }
    }
    slow(wire_type, out, buf, ctx)
}

pub use crate::wire::{put_varint, varint, varint_len};

#[derive(Clone, Copy, PartialEq, prost::Message)]
pub struct Label {
    #[prost(int64, tag = "1")]
    pub key: i64,
    #[prost(int64, tag = "2")]
    pub str: i64,
    #[prost(int64, tag = "3")]
    pub num: i64,
    #[prost(int64, tag = "4")]
    pub num_unit: i64,
}

#[derive(Clone, Copy, PartialEq, prost::Message)]
pub struct Mapping {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(uint64, tag = "2")]
    pub memory_start: u64,
    #[prost(uint64, tag = "3")]
    pub memory_limit: u64,
    #[prost(uint64, tag = "4")]
    pub file_offset: u64,
    #[prost(int64, tag = "5")]
    pub filename: i64,
    #[prost(int64, tag = "6")]
    pub build_id: i64,
    #[prost(bool, tag = "7")]
    pub has_functions: bool,
    #[prost(bool, tag = "8")]
    pub has_filenames: bool,
    #[prost(bool, tag = "9")]
    pub has_line_numbers: bool,
    #[prost(bool, tag = "10")]
    pub has_inline_frames: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Location {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(uint64, tag = "2")]
    pub mapping_id: u64,
    #[prost(uint64, tag = "3")]
    pub address: u64,
    #[prost(message, repeated, tag = "4")]
    pub line: Vec<Line>,
    #[prost(bool, tag = "5")]
    pub is_folded: bool,
}

#[derive(Clone, Copy, PartialEq, prost::Message)]
pub struct Line {
    #[prost(uint64, tag = "1")]
    pub function_id: u64,
    #[prost(int64, tag = "2")]
    pub line: i64,
    #[prost(int64, tag = "3")]
    pub column: i64,
}

#[derive(Clone, Copy, PartialEq, prost::Message)]
pub struct Function {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(int64, tag = "2")]
    pub name: i64,
    #[prost(int64, tag = "3")]
    pub system_name: i64,
    #[prost(int64, tag = "4")]
    pub filename: i64,
    #[prost(int64, tag = "5")]
    pub start_line: i64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    /// The sample as prost derives it: what the hand-written reader must match.
    #[derive(Clone, PartialEq, prost::Message)]
    struct Derived {
        #[prost(uint64, repeated, tag = "1")]
        location_id: Vec<u64>,
        #[prost(int64, repeated, tag = "2")]
        value: Vec<i64>,
        #[prost(message, repeated, tag = "3")]
        label: Vec<Label>,
    }

    fn same(bytes: &[u8]) {
        let ours = Sample::decode(bytes);
        let theirs = Derived::decode(bytes);
        match (&ours, &theirs) {
            (Ok(o), Ok(t)) => {
                assert_eq!(o.location_id, t.location_id, "{bytes:02x?}");
                assert_eq!(o.value, t.value, "{bytes:02x?}");
                assert_eq!(o.label, t.label, "{bytes:02x?}");
                assert_eq!(o.encode_to_vec(), t.encode_to_vec(), "{bytes:02x?}");
            }
            (Err(_), Err(_)) => {}
            _ => panic!("{bytes:02x?}: ours {ours:?}, prost's {theirs:?}"),
        }
    }

    #[test]
    fn the_sample_reader_reads_what_prost_reads_and_refuses_what_it_refuses() {
        let max = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
        let over = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02];
        let mut cases: Vec<Vec<u8>> = vec![
            vec![],
            vec![0x0a, 0x00],                   // an empty packed list
            vec![0x0a, 0x03, 0x01, 0x96, 0x01], // [1, 150]
            vec![0x08, 0x05, 0x08, 0x07],       // unpacked 5, 7
            vec![0x0a, 0x01, 0x01, 0x08, 0x02, 0x0a, 0x01, 0x03], // packed and not, mixed
            vec![0x0a, 0x02, 0x96],             // runs past the end
            vec![0x0a, 0x02, 0x01, 0x96],       // the last element cut short
            vec![0x0a, 0x05, 0x01],             // the length past the buffer
            vec![0x0d, 0x01, 0x02, 0x03, 0x04], // field 1 as fixed32
            vec![0x1a, 0x04, 0x08, 0x01, 0x10, 0x02], // a label
            vec![0x22, 0x01, 0x05],             // an unknown field, skipped
        ];
        for field in [0x0a, 0x12] {
            let mut v = vec![field, 10];
            v.extend_from_slice(&max);
            cases.push(v);
            let mut v = vec![field, 10];
            v.extend_from_slice(&over);
            cases.push(v);
            // -1 as int64 (ten bytes), then 2
            let mut v = vec![field, 11];
            v.extend_from_slice(&max);
            v.push(0x02);
            cases.push(v);
        }
        for c in &cases {
            same(c);
        }
        // Every prefix and every one-byte change of a real sample list.
        let real = Derived {
            location_id: vec![1, 300, 70_000, u64::MAX, 0],
            value: vec![-1, 0, 1 << 40, i64::MIN],
            label: vec![Label {
                key: 1,
                str: 2,
                num: -3,
                num_unit: 4,
            }],
        }
        .encode_to_vec();
        for n in 0..=real.len() {
            same(&real[..n]);
        }
        for i in 0..real.len() {
            for b in [0x00, 0x01, 0x7f, 0x80, 0xff] {
                let mut v = real.clone();
                v[i] = b;
                same(&v);
            }
        }
    }
}
