//! `agentprof receive`: the endpoint dd-trace profilers upload to (DataKit's
//! `/profiling/v1/input`, port 9529): each upload checked, made durable, then stored under
//! `<out>/<service>/`, listed in `<out>/uploads.jsonl` with its `profiling_metrics`, and
//! printed.

pub mod config;
mod dedupe;
pub mod form;
pub mod forward;
pub mod http;
mod ingest;
mod intake;
pub mod metrics;
mod multipart;
pub mod queue;
mod reject;
pub mod run;
pub mod store;
