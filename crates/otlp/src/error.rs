//! The crate's one error type: a request refused before it is decoded (its bytes, its
//! fields and the memory decoding would take), or a decoded request that does not make
//! pprof profiles.

/// What is wrong with an OTLP profiles request.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum Error {
    // Found by `scan`, before decoding:
    #[error("malformed protobuf: {0}")]
    Malformed(&'static str),
    #[error("malformed protobuf: {0}")]
    Wire(#[from] pprof::wire::WireError),
    #[error("more than {0} fields and elements (the request's budget)")]
    Fields(u64),
    #[error("decoding it would take about {estimate} bytes, over the {budget} allowed")]
    Memory { estimate: u64, budget: u64 },
    // Found by `import`, in a decoded request:
    #[error("{at}: {what} {index} is outside the dictionary's {table} ({len} entries)")]
    Index {
        at: String,
        what: &'static str,
        index: i64,
        table: &'static str,
        len: usize,
    },
    #[error("{at}: a sample has {values} values; an OTLP profile has one sample type")]
    Values { at: String, values: usize },
    #[error("the request has profiles and no dictionary")]
    NoDictionary,
}
