//! DogStatsD over UDP (`udp://HOST:PORT`) or a unix datagram socket (a path): each value as
//! the datagram line a DogStatsD server reads, packed into datagrams under the size limit
//! (1432 bytes over UDP, so nothing fragments on a 1500-byte MTU; 8192 on a unix socket).

use std::fmt::Write as _;
use std::net::UdpSocket;
use std::os::unix::net::UnixDatagram;
use std::path::PathBuf;

use crate::metrics::{Metric, MetricType};

use super::{Batch, Forwarder};

const UDP_MAX: usize = 1432;
const UNIX_MAX: usize = 8192;

enum Socket {
    Udp(UdpSocket),
    Unix(UnixDatagram, PathBuf),
}

pub struct DogStatsd {
    url: String,
    socket: Socket,
    max: usize,
    /// Datagrams sent, datagrams the socket refused, and lines that did not fit any datagram.
    pub sent: u64,
    pub failed: u64,
    pub too_long: u64,
}

impl DogStatsd {
    /// Parses `udp://HOST:PORT` or a unix socket path.
    pub fn connect(url: &str) -> Result<DogStatsd, String> {
        if let Some(addr) = url.strip_prefix("udp://") {
            let socket = UdpSocket::bind("0.0.0.0:0")
                .and_then(|s| s.connect(addr).map(|()| s))
                .map_err(|e| format!("dogstatsd_url {url}: {e}"))?;
            return Ok(DogStatsd {
                url: url.into(),
                socket: Socket::Udp(socket),
                max: UDP_MAX,
                sent: 0,
                failed: 0,
                too_long: 0,
            });
        }
        let path = url.strip_prefix("unix://").unwrap_or(url);
        if !path.starts_with('/') {
            return Err(format!(
                "dogstatsd_url {url}: use udp://HOST:PORT or an absolute unix socket path"
            ));
        }
        let socket = UnixDatagram::unbound().map_err(|e| format!("dogstatsd_url {url}: {e}"))?;
        Ok(DogStatsd {
            url: url.into(),
            socket: Socket::Unix(socket, PathBuf::from(path)),
            max: UNIX_MAX,
            sent: 0,
            failed: 0,
            too_long: 0,
        })
    }

    fn emit(&mut self, payload: &str) -> std::io::Result<()> {
        let sent = match &self.socket {
            Socket::Udp(s) => s.send(payload.as_bytes()).map(|_| ()),
            Socket::Unix(s, path) => s.send_to(payload.as_bytes(), path).map(|_| ()),
        };
        match sent {
            Ok(()) => self.sent += 1,
            Err(_) => self.failed += 1,
        }
        sent
    }
}

/// One metric as a DogStatsD line: gauges `|g`, counts `|c`; a rate is already per second,
/// so it goes as a gauge.
pub fn line(m: &Metric) -> String {
    let kind = match m.mtype {
        MetricType::Count | MetricType::MonotonicCount => "c",
        _ => "g",
    };
    let mut s = format!("{}:{}|{kind}", m.metric, m.value);
    let mut tags: Vec<&str> = m.tags.iter().map(String::as_str).collect();
    let host = (!m.host.is_empty()).then(|| format!("host:{}", m.host));
    if let Some(h) = &host {
        tags.push(h);
    }
    if !tags.is_empty() {
        let _ = write!(s, "|#{}", tags.join(","));
    }
    s
}

impl Forwarder for DogStatsd {
    fn name(&self) -> String {
        format!("dogstatsd {}", self.url)
    }

    fn delivery(&self) -> super::Delivery {
        super::Delivery {
            forwarder: self.name(),
            unit: "datagrams",
            sent: self.sent,
            failed: self.failed,
            dropped: self.too_long,
            ..Default::default()
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.too_long > 0 {
            eprintln!(
                "agentprof: dogstatsd {}: {} line(s) longer than a {}-byte datagram were not sent",
                self.url, self.too_long, self.max
            );
        }
        Ok(())
    }

    fn send(&mut self, batch: &Batch<'_>) -> std::io::Result<()> {
        let mut lines: Vec<String> = batch.metrics.iter().map(line).collect();
        for sc in batch.service_checks {
            let mut l = format!("_sc|{}|{}", sc.name, sc.status as u8);
            if !sc.tags.is_empty() {
                let _ = write!(l, "|#{}", sc.tags.join(","));
            }
            if !sc.message.is_empty() {
                let _ = write!(l, "|m:{}", sc.message.replace('\n', "\\n"));
            }
            lines.push(l);
        }
        for e in batch.events {
            let text = e.text.replace('\n', "\\n");
            let mut l = format!(
                "_e{{{},{}}}:{}|{}|t:{}",
                e.title.len(),
                text.len(),
                e.title,
                text,
                e.alert_type
            );
            if !e.tags.is_empty() {
                let _ = write!(l, "|#{}", e.tags.join(","));
            }
            lines.push(l);
        }
        let mut payload = String::new();
        let mut first_error = None;
        for l in lines {
            if l.len() > self.max {
                self.too_long += 1;
                continue;
            }
            if !payload.is_empty() && payload.len() + 1 + l.len() > self.max {
                if let Err(e) = self.emit(&payload) {
                    first_error.get_or_insert(e);
                }
                payload.clear();
            }
            if !payload.is_empty() {
                payload.push('\n');
            }
            payload.push_str(&l);
        }
        if !payload.is_empty()
            && let Err(e) = self.emit(&payload)
        {
            first_error.get_or_insert(e);
        }
        first_error.map_or(Ok(()), Err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packs_datagrams_under_the_limit() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut d = DogStatsd::connect(&format!("udp://{}", rx.local_addr().unwrap())).unwrap();
        let metrics: Vec<Metric> = (0..200)
            .map(|i| Metric {
                metric: format!("test.metric.{i}"),
                mtype: MetricType::Gauge,
                value: i as f64,
                tags: vec!["env:test".into()],
                host: "h".into(),
                timestamp: 0.0,
                run: 1,
            })
            .collect();
        d.send(&Batch {
            metrics: &metrics,
            service_checks: &[],
            events: &[],
        })
        .unwrap();
        assert!(d.sent > 1);
        let mut got = 0;
        let mut buf = [0u8; 65536];
        rx.set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .unwrap();
        for _ in 0..d.sent {
            let n = rx.recv(&mut buf).unwrap();
            assert!(n <= UDP_MAX);
            let text = std::str::from_utf8(&buf[..n]).unwrap();
            got += text.lines().count();
            assert!(
                text.lines().all(|l| l.ends_with("|g|#env:test,host:h")),
                "{text}"
            );
        }
        assert_eq!(got, 200);
    }

    #[test]
    fn sends_to_a_unix_datagram_socket() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dsd.socket");
        let rx = UnixDatagram::bind(&path).unwrap();
        let mut d = DogStatsd::connect(path.to_str().unwrap()).unwrap();
        let m = Metric {
            metric: "u.m".into(),
            mtype: MetricType::Count,
            value: 2.0,
            tags: vec![],
            host: String::new(),
            timestamp: 0.0,
            run: 1,
        };
        d.send(&Batch {
            metrics: &[m],
            service_checks: &[],
            events: &[],
        })
        .unwrap();
        let mut buf = [0u8; 256];
        let n = rx.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"u.m:2|c");
        assert!(DogStatsd::connect("relative/path").is_err());
    }
}
