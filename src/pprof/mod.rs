//! The pprof format (profile.proto): prost-derived types and gzip encoding of call profiles,
//! so `go tool pprof` and every pprof viewer read what agentprof writes.

pub mod decode;
pub mod diff;
mod encode;
pub mod fasthash;
mod file;
pub mod filter;
mod fold;
pub mod graph;
pub mod legacy;
pub mod measure;
pub mod model;
pub mod names;
pub mod peek;
pub mod proto;
pub mod report;
pub mod source;

pub use encode::{encode_gzip, gzip_fast, to_proto};
pub use file::load;
