//! The pprof format (profile.proto) as agentprof reads, reports and writes it: the
//! prost-derived types, decoding within limits, the model every report is built on, the
//! reports `go tool pprof` prints (top, peek, list, diff, flamegraph) with its numbers, and
//! gzip. It knows nothing of checks, servers or the command line: the rest of agentprof
//! depends on it, never the other way round (the compiler holds that, as a crate).

pub mod decode;
pub mod diff;
mod encode;
mod error;
pub mod fasthash;
pub mod filter;
mod flame;
mod fold;
pub mod graph;
mod labels;
pub mod legacy;
mod measure;
pub mod merge;
pub mod model;
mod names;
pub mod peek;
pub mod proto;
mod recolor;
pub mod report;
pub mod source;
mod source_path;
pub mod text;
mod totals;
pub mod views;
pub mod wire;

pub use encode::gzip_fast;
