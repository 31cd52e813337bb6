//! `network`: per-interface traffic, packets, errors and drops (rates), TCP segment counters,
//! and optionally TCP/UDP connection states, with the Agent's network check names.

use regex::Regex;
use serde::Deserialize;

use crate::checks::Check;
use crate::metrics::Sink;

use super::{Builtin, regex_list};

pub const OPTIONS: &[&str] = &[
    "excluded_interfaces",
    "excluded_interface_re",
    "collect_connection_state",
];

#[derive(Debug, Deserialize)]
#[serde(default)]
pub struct NetworkInstance {
    excluded_interfaces: Vec<String>,
    excluded_interface_re: Option<String>,
    collect_connection_state: bool,
}

impl Default for NetworkInstance {
    fn default() -> Self {
        NetworkInstance {
            excluded_interfaces: vec!["lo".into(), "lo0".into()],
            excluded_interface_re: None,
            collect_connection_state: false,
        }
    }
}

pub struct NetworkCheck {
    excluded: Vec<String>,
    excluded_re: Option<Regex>,
    states: bool,
}

impl Builtin for NetworkCheck {
    type Instance = NetworkInstance;
    fn new(opts: NetworkInstance) -> Result<Self, String> {
        let re: Vec<String> = opts.excluded_interface_re.into_iter().collect();
        Ok(NetworkCheck {
            excluded: opts.excluded_interfaces,
            excluded_re: regex_list("excluded_interface_re", &re, false)?,
            states: opts.collect_connection_state,
        })
    }
}

#[derive(Default)]
struct States {
    established: u32,
    opening: u32,
    closing: u32,
    listening: u32,
    time_wait: u32,
}

impl States {
    fn add(&mut self, s: &procfs::net::TcpState) {
        use procfs::net::TcpState::*;
        match s {
            Established => self.established += 1,
            SynSent | SynRecv | NewSynRecv => self.opening += 1,
            FinWait1 | FinWait2 | Close | CloseWait | LastAck | Closing => self.closing += 1,
            Listen => self.listening += 1,
            TimeWait => self.time_wait += 1,
        }
    }

    fn emit(&self, sink: &mut Sink, family: &str) {
        for (state, n) in [
            ("established", self.established),
            ("opening", self.opening),
            ("closing", self.closing),
            ("listening", self.listening),
            ("time_wait", self.time_wait),
        ] {
            sink.gauge(&format!("system.net.{family}.{state}"), f64::from(n), &[]);
        }
    }
}

impl Check for NetworkCheck {
    fn run(&mut self, sink: &mut Sink) -> anyhow::Result<()> {
        let mut devs: Vec<_> = procfs::net::dev_status()?.into_values().collect();
        devs.sort_by(|a, b| a.name.cmp(&b.name));
        for d in devs {
            if self.excluded.contains(&d.name)
                || self
                    .excluded_re
                    .as_ref()
                    .is_some_and(|r| r.is_match(&d.name))
            {
                continue;
            }
            // The Agent's network check leaves out inactive interfaces: nothing received
            // and nothing sent.
            if d.recv_bytes == 0 && d.sent_bytes == 0 {
                continue;
            }
            let t = [format!("device:{}", d.name)];
            sink.rate("system.net.bytes_rcvd", d.recv_bytes as f64, &t);
            sink.rate("system.net.bytes_sent", d.sent_bytes as f64, &t);
            sink.rate("system.net.packets_in.count", d.recv_packets as f64, &t);
            sink.rate("system.net.packets_in.error", d.recv_errs as f64, &t);
            sink.rate("system.net.packets_in.drop", d.recv_drop as f64, &t);
            sink.rate("system.net.packets_out.count", d.sent_packets as f64, &t);
            sink.rate("system.net.packets_out.error", d.sent_errs as f64, &t);
            sink.rate("system.net.packets_out.drop", d.sent_drop as f64, &t);
        }
        match procfs::net::snmp() {
            Ok(snmp) => {
                sink.rate(
                    "system.net.tcp.retrans_segs",
                    snmp.tcp_retrans_segs as f64,
                    &[],
                );
                sink.rate("system.net.tcp.in_segs", snmp.tcp_in_segs as f64, &[]);
                sink.rate("system.net.tcp.out_segs", snmp.tcp_out_segs as f64, &[]);
            }
            Err(e) => sink.warning(format!("/proc/net/snmp: {e}")),
        }
        if self.states {
            for (family, table) in [("tcp4", procfs::net::tcp()), ("tcp6", procfs::net::tcp6())] {
                let mut s = States::default();
                for e in table? {
                    s.add(&e.state);
                }
                s.emit(sink, family);
            }
            let udp4 = procfs::net::udp()?.len();
            let udp6 = procfs::net::udp6()?.len();
            sink.gauge("system.net.udp4.connections", udp4 as f64, &[]);
            sink.gauge("system.net.udp6.connections", udp6 as f64, &[]);
        }
        Ok(())
    }
}
