//! Integration tests: the built binary, run as a user runs it.
#![allow(clippy::unwrap_used)]

mod agent_flags;
mod agent_semantics;
mod architecture;
mod check;
mod ci_docs;
mod errors;
mod exec;
mod first_hour;
mod flame_labels;
mod gate;
mod gate_check;
mod generated;
mod k8s;
mod otlp;
mod pprof;
mod pprof_fidelity;
mod pprof_views;
mod profile;
mod pull;
mod pyroscope;
mod pyroscope_query;
mod python;
mod python_sampling;
mod readme;
mod receive;
mod receive_bounds;
mod receive_hostile;
mod receive_whole;
mod shipped;
mod start;
mod support;
mod ui;
mod ui_bounds;
mod ui_figures;
mod ui_range;
