//! `agentprof gate`: performance gates for CI. Timings are compared with statistics (they
//! drift on shared runners), figures that do not drift (call counts, allocations, metric
//! names) exactly.

pub mod stats;
