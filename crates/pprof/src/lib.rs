//! The pprof format (profile.proto) as agentprof reads, reports and writes it: the
//! prost-derived types, decoding within limits, the model every report is built on, the
//! reports `go tool pprof` prints (top, peek, list, diff, flamegraph) with its numbers, and
//! gzip. It knows nothing of checks, servers or the command line: the rest of agentprof
//! depends on it, never the other way round (the compiler holds that, as a crate).

// Every type a public item names can be named by the crate's users too.
#![warn(unnameable_types)]

mod decode;
mod diff;
mod encode;
mod error;
pub mod fasthash;
mod filter;
mod flame;
mod fold;
mod graph;
mod labels;
mod legacy;
mod measure;
mod merge;
mod model;
mod names;
mod peek;
pub mod proto;
mod recolor;
mod report;
mod source;
mod source_path;
mod text;
mod totals;
mod views;
pub mod wire;

// The public API, named here; the modules are internals. `proto` (profile.proto's types),
// `wire` (the protobuf field reader otlp and pull share) and `fasthash` stay modules of their own.
pub use decode::{
    Compression, LabelTotals, LabelValue, Limits, MAX_LABEL_VALUES, Scan, Totals, decode,
    decode_pprof, decode_raw, decode_scanned, decompress, describe_non_profile, memory_estimate,
    prescan, sniff, stated_size, totals, totals_without_labels,
};
pub use diff::{
    DiffReport, DiffRow, DiffRowText, Look, common_index, diff, diff_with, write_diff_flamegraph,
    write_flamegraph, write_flamegraph_look,
};
pub use encode::gzip_fast;
pub use error::Error;
pub use filter::{Found, Matched, NameFilter, compile as compile_regex, find as find_matching};
pub use graph::Nodes;
pub use merge::Merger;
pub use model::Pprof;
pub use peek::{PeekEdge, PeekEntry, PeekReport, peek};
pub use report::{TopNode, TopOptions, TopReport, TopRow, top, top_filtered, top_nodes, top_with};
pub use source::{ListReport, Routine, SourceAccess, SourceLine, list};
pub use text::{flame_frame, is_unsafe};
pub use views::{GraphSize, Side, write_call_graph, write_sandwich};

/// A legacy (pre-protobuf) text profile as go tool pprof reads it; `Ok(None)` when the bytes
/// are none of its formats.
pub fn parse_legacy(raw: &[u8]) -> Result<Option<proto::Profile>, Error> {
    legacy::parse(raw).map_err(|e| Error::Legacy(e.0))
}
