//! The pprof crate's errors that more than one of its modules return: a profile that cannot be
//! decoded, a flamegraph that cannot be drawn.

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum DecodeError {
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
}

/// Why a flamegraph was not drawn.
#[derive(Debug, thiserror::Error)]
pub enum DrawError {
    /// Nothing to draw, and why.
    #[error("{0}: nothing to draw")]
    Empty(&'static str),
    #[error("cannot merge the stacks: {0}")]
    Merge(std::io::Error),
    /// inferno's error, which includes writing the SVG out.
    #[error("cannot draw the flamegraph: {0}")]
    Draw(std::io::Error),
}
