//! OTLP profiles (`v1development`, the OpenTelemetry Collector's profiles signal) as
//! agentprof sends and receives them: the messages (`proto`), OTLP/JSON (`json`), pprof
//! profiles into a request (`export`) and a request into pprof profiles (`import`), and the
//! bound a request is held to before it is decoded (`scan`). It knows nothing of servers or
//! the command line.

#![warn(unnameable_types)]

mod error;
pub mod export;
pub mod import;
pub mod json;
pub mod proto;
mod scalars;
pub mod scan;

pub use error::Error;

/// The path OTLP/HTTP profiles are posted to.
pub const PATH: &str = "/v1development/profiles";

#[cfg(test)]
mod tests;
