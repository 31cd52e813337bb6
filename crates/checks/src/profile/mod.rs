//! What a run costs: the `RunRecord` every kind of check yields, the process figures taken
//! around it, and the call profile sampled while it ran.

mod callprofile;
mod flamegraph;
pub mod leak;
mod pprof_out;
mod pstats;
mod record;
mod sampler;
#[cfg(target_os = "linux")]
mod symtab;
mod top;

pub use callprofile::{CallProfile, Frame, ProfileKind, Sample};
pub use flamegraph::{folded, write_flamegraph};
pub use pprof_out::{Strings, encode_gzip, to_proto};
pub use pstats::PstatsReport;
pub use record::{AllocLine, MemoryProfile, PeakScope, RunCost, RunRecord, RunStatus};
#[cfg(test)]
pub(crate) use sampler::tests as sampler_tests;
pub use sampler::{
    NamingCost, RUN_THREAD_NAME, Sampler, ThreadId, measured_run, naming_cost, prefetch_line_tables,
};
pub use top::{TopRow, TopTable, call_top};
