//! When a target is collected: its identity (`podUID/container/endpoint`), the jitter that
//! spreads scheduled collections of many pods over the whole interval (`fnv64a(id) %
//! interval`, the same for a target on every restart, so a node that starts or leads again
//! does not capture every pod at once), and the backoff after failures (1 s·2^(n−1), n capped
//! at 9).

use std::time::Duration;

/// A target's identity: the pod's UID, the container and the endpoint's `scheme://ip:port/path`.
pub fn target_id(pod_uid: &str, container: &str, endpoint: &str) -> String {
    format!("{pod_uid}/{container}/{endpoint}")
}

pub use crate::pull::fnv64a;

/// How long after its interval starts a target's scheduled collection runs.
pub fn jitter(id: &str, interval: Duration) -> Duration {
    let span = interval.as_millis() as u64;
    if span == 0 {
        return Duration::ZERO;
    }
    Duration::from_millis(fnv64a(id.as_bytes()) % span)
}

/// The wait after the `failures`-th failure in a row (0: no wait).
pub fn backoff(failures: u32) -> Duration {
    match failures {
        0 => Duration::ZERO,
        n => Duration::from_secs(1 << (n.min(9) - 1)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv64a_is_the_standard_hash() {
        // The FNV-1a test vectors.
        assert_eq!(fnv64a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv64a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv64a(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn jitter_spreads_targets_over_the_interval_and_stays_put() {
        let interval = Duration::from_secs(600);
        let ids: Vec<String> = (0..110)
            .map(|i| {
                target_id(
                    &format!("uid-{i}"),
                    "app",
                    "http://10.0.0.1:6060/debug/pprof",
                )
            })
            .collect();
        let j: Vec<Duration> = ids.iter().map(|id| jitter(id, interval)).collect();
        assert!(j.iter().all(|d| *d < interval));
        // Spread over the interval, not bunched at its start: every tenth of it gets some.
        for tenth in 0..10 {
            let (lo, hi) = (interval * tenth / 10, interval * (tenth + 1) / 10);
            assert!(
                j.iter().any(|d| *d >= lo && *d < hi),
                "none in {lo:?}..{hi:?}"
            );
        }
        assert_eq!(
            j,
            ids.iter()
                .map(|id| jitter(id, interval))
                .collect::<Vec<_>>()
        );
        let mut distinct = j.clone();
        distinct.sort();
        distinct.dedup();
        assert!(
            distinct.len() > 100,
            "110 pods land apart: {}",
            distinct.len()
        );
        assert_eq!(jitter("x", Duration::ZERO), Duration::ZERO);
        assert_eq!(ids[0], "uid-0/app/http://10.0.0.1:6060/debug/pprof");
    }

    #[test]
    fn backoff_doubles_to_256_seconds() {
        let b: Vec<u64> = (0..12).map(|n| backoff(n).as_secs()).collect();
        assert_eq!(b, [0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 256, 256]);
    }
}
