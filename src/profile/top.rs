//! The top-N functions of a call profile, as `check --profile` and the agent show them:
//! flat is the time a function was the leaf, cum the time it was anywhere on the stack,
//! counted once per sample even when it recurses. `pprof::report::call_top` computes them
//! with the nodes and sums of every other top agentprof prints.

use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TopRow {
    pub function: String,
    pub file: Option<String>,
    pub line: Option<u32>,
    /// Samples with this function as the leaf.
    pub flat: u64,
    /// Samples with this function anywhere on the stack.
    pub cum: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TopTable {
    pub total_samples: u64,
    /// Functions seen in all; the table shows the first `rows.len()`.
    pub functions: usize,
    pub rows: Vec<TopRow>,
}
