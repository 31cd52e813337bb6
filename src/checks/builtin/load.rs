//! `load`: 1, 5 and 15 minute load averages, raw and divided by the number of cores.

use serde::Deserialize;

use crate::checks::Check;
use crate::metrics::Sink;

use super::{Builtin, OptionError};

pub const OPTIONS: &[&str] = &[];

#[derive(Debug, Default, Deserialize)]
pub struct LoadInstance {}

pub struct LoadCheck;

impl Builtin for LoadCheck {
    type Instance = LoadInstance;
    fn new(_: LoadInstance) -> Result<Self, OptionError> {
        Ok(LoadCheck)
    }
}

impl Check for LoadCheck {
    fn run(&mut self, sink: &mut Sink) -> anyhow::Result<()> {
        use procfs::Current;
        let l = procfs::LoadAverage::current()?;
        let cores = procfs::CpuInfo::current()?.num_cores().max(1) as f64;
        for (name, v) in [("1", l.one), ("5", l.five), ("15", l.fifteen)] {
            sink.gauge(&format!("system.load.{name}"), f64::from(v), &[]);
            sink.gauge(
                &format!("system.load.norm.{name}"),
                f64::from(v) / cores,
                &[],
            );
        }
        Ok(())
    }
}
