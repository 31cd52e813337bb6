//! `uptime`: seconds since the machine booted.

use serde::Deserialize;

use crate::Check;
use crate::Error;
use crate::metrics::Sink;

use super::Builtin;

pub const OPTIONS: &[&str] = &[];

#[derive(Debug, Default, Deserialize)]
pub struct UptimeInstance {}

pub struct UptimeCheck;

impl Builtin for UptimeCheck {
    type Instance = UptimeInstance;
    fn new(_: UptimeInstance) -> Result<Self, Error> {
        Ok(UptimeCheck)
    }
}

impl Check for UptimeCheck {
    fn run(&mut self, sink: &mut Sink) -> Result<(), Error> {
        use procfs::Current;
        let up = procfs::Uptime::current()?;
        sink.log(crate::metrics::level::DEBUG, || {
            format!("/proc/uptime: {} s since boot", up.uptime)
        });
        sink.gauge("system.uptime", up.uptime, &[]);
        Ok(())
    }
}
