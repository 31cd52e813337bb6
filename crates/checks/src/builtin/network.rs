//! `network`: per-interface traffic, packets, errors and drops (rates), TCP segment counters,
//! and optionally TCP/UDP connection states, with the Agent's network check names.

use regex::Regex;
use serde::Deserialize;

use crate::Check;
use crate::Error;
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
    fn new(opts: NetworkInstance) -> Result<Self, Error> {
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

impl NetworkCheck {
    /// The interfaces the check reports, by name: not excluded, and active as the Agent's
    /// network check means it (something received or something sent).
    fn reported(
        &self,
        devs: impl Iterator<Item = procfs::net::DeviceStatus>,
    ) -> Vec<procfs::net::DeviceStatus> {
        let mut out: Vec<_> = devs
            .filter(|d| {
                !self.excluded.contains(&d.name)
                    && !self
                        .excluded_re
                        .as_ref()
                        .is_some_and(|r| r.is_match(&d.name))
                    && (d.recv_bytes != 0 || d.sent_bytes != 0)
            })
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }
}

impl Check for NetworkCheck {
    fn run(&mut self, sink: &mut Sink) -> Result<(), Error> {
        for d in self.reported(procfs::net::dev_status()?.into_values()) {
            sink.log(crate::metrics::level::DEBUG, || {
                format!("reporting interface {}", d.name)
            });
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

#[cfg(test)]
mod tests {
    use super::*;
    use procfs::FromBufRead;

    /// A `/proc/net/dev` with an interface that never moved a byte (a down bridge), one that
    /// only received, one that only sent, and the loopback.
    const DEV: &str = "\
Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:  123456    1000    0    0    0     0          0         0   123456    1000    0    0    0     0       0          0
  eth0: 9876543   12000    0    3    0     0          0         0  1234567    9000    0    0    0     0       0          0
docker0:       0       0    0    0    0     0          0         0        0       0    0    0    0     0       0          0
  tap1:     512       4    0    0    0     0          0         0        0       0    0    0    0     0       0          0
  tun2:       0       0    0    0    0     0          0         0      640       5    0    0    0     0       0          0
";

    #[test]
    fn inactive_and_excluded_interfaces_are_left_out_as_the_agent_does() {
        let devs = procfs::net::InterfaceDeviceStatus::from_buf_read(DEV.as_bytes()).unwrap();
        let check = NetworkCheck::new(NetworkInstance::default()).unwrap();
        let names: Vec<String> = check
            .reported(devs.0.into_values())
            .into_iter()
            .map(|d| d.name)
            .collect();
        assert_eq!(names, ["eth0", "tap1", "tun2"]);
        let opts = NetworkInstance {
            excluded_interfaces: vec![],
            excluded_interface_re: Some("^t".into()),
            collect_connection_state: false,
        };
        let devs = procfs::net::InterfaceDeviceStatus::from_buf_read(DEV.as_bytes()).unwrap();
        let names: Vec<String> = NetworkCheck::new(opts)
            .unwrap()
            .reported(devs.0.into_values())
            .into_iter()
            .map(|d| d.name)
            .collect();
        assert_eq!(names, ["eth0", "lo"]);
    }
}
