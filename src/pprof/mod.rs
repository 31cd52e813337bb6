//! The pprof format (profile.proto): prost-derived types and gzip encoding of call profiles,
//! so `go tool pprof` and every pprof viewer read what agentprof writes.

mod encode;
pub mod proto;

pub use encode::{encode_gzip, to_proto};
