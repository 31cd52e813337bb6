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

/// Why a DogStatsD address cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("{url}: use udp://HOST:PORT or an absolute unix socket path")]
    Address { url: String },
    #[error("{url}: {source}")]
    Socket {
        url: String,
        #[source]
        source: std::io::Error,
    },
}

impl DogStatsd {
    /// Parses `udp://HOST:PORT` or a unix socket path.
    pub fn connect(url: &str) -> Result<DogStatsd, ConnectError> {
        let socket_error = |source| ConnectError::Socket {
            url: url.to_string(),
            source,
        };
        if let Some(addr) = url.strip_prefix("udp://") {
            let socket = UdpSocket::bind("0.0.0.0:0")
                .and_then(|s| s.connect(addr).map(|()| s))
                .map_err(socket_error)?;
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
            return Err(ConnectError::Address { url: url.into() });
        }
        let socket = UnixDatagram::unbound().map_err(socket_error)?;
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

/// One metric as DogStatsD lines: gauges `|g`, counts `|c`; a rate is already per second,
/// so it goes as a gauge. A distribution goes as its sketch's bins, each value once with the
/// sample rate that makes it count as many values as the bin holds (`v|d|@1/n`), so the
/// Agent's sketch receives what agentprof's holds.
pub fn lines(m: &Metric) -> Vec<String> {
    match &m.sketch {
        Some(sketch) if m.mtype == MetricType::Distribution => sketch
            .bins()
            .map(|(v, n)| {
                let rate = if n > 1.0 {
                    format!("|@{}", 1.0 / n)
                } else {
                    String::new()
                };
                with_tags(format!("{}:{v}|d{rate}", m.metric), m)
            })
            .collect(),
        _ => vec![line(m)],
    }
}

/// One metric as one DogStatsD line (a distribution's count as a gauge: see [`lines`]).
pub fn line(m: &Metric) -> String {
    let kind = match m.mtype {
        MetricType::Count | MetricType::MonotonicCount => "c",
        _ => "g",
    };
    with_tags(format!("{}:{}|{kind}", m.metric, m.value), m)
}

fn with_tags(mut s: String, m: &Metric) -> String {
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
        let mut lines: Vec<String> = batch.metrics.iter().flat_map(lines).collect();
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

    /// A distribution goes out as its sketch's bins with the sample rate that makes each
    /// count as many values as it holds; the API body carries the same values.
    #[test]
    fn a_distribution_is_resent_as_its_bins() {
        let mut sketch = crate::metrics::sketch::Sketch::default();
        for _ in 0..4 {
            sketch.add(10.0, 1.0);
        }
        sketch.add(1000.0, 1.0);
        let m = Metric {
            metric: "req.latency".into(),
            mtype: MetricType::Distribution,
            value: 5.0,
            tags: vec!["route:/a".into()],
            host: String::new(),
            timestamp: 7.0,
            run: 1,
            sketch: Some(Box::new(sketch)),
        };
        let l = lines(&m);
        assert_eq!(l.len(), 2, "{l:?}");
        assert!(
            l[0].starts_with("req.latency:10.") && l[0].ends_with("|d|@0.25|#route:/a"),
            "{l:?}"
        );
        assert!(
            l[1].starts_with("req.latency:100") && l[1].ends_with("|d|#route:/a"),
            "{l:?}"
        );
        let metrics = [m];
        let batch = super::super::Batch {
            metrics: &metrics,
            service_checks: &[],
            events: &[],
        };
        let body = super::super::datadog_api::distribution_points(&batch).unwrap();
        let values = body["series"][0]["points"][0][1].as_array().unwrap();
        assert_eq!(values.len(), 5);
        assert_eq!(body["series"][0]["type"], "distribution");
        assert!(super::super::datadog_api::series_payloads(&batch).is_empty());
    }

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
                sketch: None,
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
            sketch: None,
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
