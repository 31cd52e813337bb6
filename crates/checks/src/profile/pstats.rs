//! A Python check's call profile: cProfile's statistics as pstats reads them, whether they
//! came from the worker or from a dump file (ui).

/// cProfile statistics, in pstats' order and numbers.
#[derive(Debug, Clone, Default)]
pub struct PstatsReport {
    pub functions: usize,
    pub total_calls: u64,
    pub prim_calls: u64,
    pub total_tt: f64,
    /// file, line, function, primitive calls, calls, tottime, cumtime
    pub rows: Vec<(String, u32, String, u64, u64, f64, f64)>,
    /// `root;…;leaf microseconds` lines for a flamegraph.
    pub folded: Vec<String>,
}
