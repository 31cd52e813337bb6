//! The crate's one error type: what a profile, a report, a merge, a diff, a filter or a
//! drawing could not be made of, by kind, so a caller matches a variant (a size over its
//! limit is a 413, a sample index the profile lacks is the user's to change) instead of
//! reading a message. The protobuf reader's own `wire::WireError` stays a small `Copy` value
//! of its hot loop; decoding reports it as `Malformed`.

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    // A profile that cannot be read:
    #[error("{size} bytes is over the {limit}-byte size limit")]
    TooLarge { size: u64, limit: u64 },
    #[error("decompresses to more than {limit} bytes (the decompressed limit); refused")]
    TooLargeDecompressed { limit: u64 },
    #[error("{0} data is corrupt: {1}")]
    Corrupt(&'static str, String),
    #[error("holds more than {budget} protobuf fields and elements (the parsing budget); refused")]
    Budget { budget: u64 },
    #[error(
        "decoding it would take about {} MiB, over the {} MiB memory budget ({samples} samples); refused",
        estimate >> 20,
        budget >> 20
    )]
    Memory {
        estimate: u64,
        budget: u64,
        samples: u64,
    },
    #[error("not a pprof profile: {0}")]
    NotAProfile(String),
    #[error("not a valid pprof profile: {0}")]
    Malformed(String),
    #[error("empty input")]
    Empty,
    #[error(
        "a legacy (pre-protobuf) profile that cannot be read: {0}; if go tool pprof reads it, convert it: `go tool pprof -proto FILE > out.pb.gz`"
    )]
    Legacy(String),
    // A `-sample_index` the profile does not have:
    #[error("the profile has no sample types")]
    NoSampleTypes,
    #[error("sample index {asked} is outside the range [0..{last}]")]
    SampleIndexOutOfRange { asked: String, last: usize },
    #[error("sample index {asked:?} must be one of: {}", .types.join(", "))]
    UnknownSampleIndex { asked: String, types: Vec<String> },
    /// `-peek` or `-list` matched no function (go tool pprof's words).
    #[error("no matches found for regexp: {0}")]
    NoMatches(String),
    /// Two profiles that do not report the same thing; the message names both sides' types.
    #[error("{0}")]
    Mismatch(String),
    /// A name filter (`-focus`, `-ignore`, …) that does not compile: which one, and why.
    #[error("parsing {name} regexp: {message}")]
    Filter { name: &'static str, message: String },
    // A profile that cannot be merged with those before it:
    #[error("incompatible sample types: {first} and {other}")]
    SampleTypes { first: String, other: String },
    #[error("incompatible period types: {first} and {other}")]
    PeriodTypes { first: String, other: String },
    #[error("nothing to merge")]
    NothingToMerge,
    /// The merge did not check as a profile (a reference of a source that checked, lost).
    #[error("the merged profile does not check: {0}")]
    MergedInvalid(String),
    // A flamegraph that was not drawn:
    /// Nothing to draw, and why.
    #[error("{0}: nothing to draw")]
    NothingToDraw(&'static str),
    /// inferno's error folding the stacks (`Error::fold_stacks`).
    #[error("cannot merge the stacks: {message}")]
    FoldStacks {
        kind: std::io::ErrorKind,
        message: String,
    },
    /// inferno's error, which includes writing the SVG out (`Error::draw`).
    #[error("cannot draw the flamegraph: {message}")]
    Draw {
        kind: std::io::ErrorKind,
        message: String,
    },
}

impl Error {
    /// inferno's error drawing a flamegraph (writing it out included).
    pub fn draw(e: std::io::Error) -> Error {
        Error::Draw {
            kind: e.kind(),
            message: e.to_string(),
        }
    }

    /// inferno's error folding stacks for a flamegraph.
    pub fn fold_stacks(e: std::io::Error) -> Error {
        Error::FoldStacks {
            kind: e.kind(),
            message: e.to_string(),
        }
    }

    /// A sample index the profile does not have (the user's `--sample-index` to change).
    pub fn is_sample_index(&self) -> bool {
        matches!(
            self,
            crate::Error::NoSampleTypes
                | crate::Error::SampleIndexOutOfRange { .. }
                | crate::Error::UnknownSampleIndex { .. }
        )
    }
}
