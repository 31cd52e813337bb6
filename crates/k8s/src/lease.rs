//! One collector per node: a `coordination.k8s.io` Lease named `agentprof-<node>`, kept by a
//! task of its own beside the collector (an API server that is slow, throttles or hangs
//! delays the lease, never the collector). The holder renews it every `RENEW`, each attempt
//! within `CALL`; it counts itself the holder only until `DURATION` after the last renewal
//! it sent (less a margin), so when the API server is gone it stops collecting before a
//! standby can take over. A standby takes over once the record has not changed for the
//! lease's duration (measured on its own clock from when it saw the record change, as
//! client-go's leader election does, so clock skew between nodes does not matter).

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, ObjectMeta, PostParams};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::Error;

/// How long a lease holds without renewal.
pub const DURATION: Duration = Duration::from_secs(15);
/// How often the holder renews (and a standby looks).
pub const RENEW: Duration = Duration::from_secs(5);
/// The longest one attempt to take or renew the lease may take.
pub const CALL: Duration = Duration::from_secs(5);
/// The holder stops collecting this long before a standby could take over.
const MARGIN: Duration = Duration::from_secs(2);
/// The longest giving the lease back at stop may take.
pub const RELEASE: Duration = Duration::from_millis(1500);

pub struct NodeLease {
    api: Api<Lease>,
    pub name: String,
    pub identity: String,
    /// The record last seen: its resourceVersion, and when it was seen to change.
    seen: Option<(String, Instant)>,
    pub held: bool,
    /// The holder the last answer named (this instance's identity when it holds it).
    pub holder: Option<String>,
}

fn now() -> MicroTime {
    MicroTime(jiff::Timestamp::now())
}

impl NodeLease {
    pub fn new(client: &kube::Client, namespace: &str, node: &str, identity: String) -> NodeLease {
        NodeLease {
            api: Api::namespaced(client.clone(), namespace),
            name: format!("agentprof-{node}"),
            identity,
            seen: None,
            held: false,
            holder: None,
        }
    }

    fn spec(&self, transitions: i32, acquired: Option<MicroTime>) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(self.identity.clone()),
            lease_duration_seconds: Some(DURATION.as_secs() as i32),
            acquire_time: acquired.or_else(|| Some(now())),
            renew_time: Some(now()),
            lease_transitions: Some(transitions),
            ..Default::default()
        }
    }

    /// Takes or renews the lease. Ok(true): this instance holds it now; Ok(false): another
    /// holds it and it has not expired; Err: the API server could not be asked.
    pub async fn try_hold(&mut self) -> Result<bool, Error> {
        let current = self
            .api
            .get_opt(&self.name)
            .await
            .map_err(|source| Error::Lease {
                verb: "get",
                source,
            })?;
        let Some(mut lease) = current else {
            return self.create().await;
        };
        let rv = lease.metadata.resource_version.clone().unwrap_or_default();
        let changed = self.seen.as_ref().is_none_or(|(v, _)| *v != rv);
        if changed {
            self.seen = Some((rv, Instant::now()));
        }
        let spec = lease.spec.clone().unwrap_or_default();
        let ours = spec.holder_identity.as_deref() == Some(self.identity.as_str());
        let duration = spec.lease_duration_seconds.unwrap_or(15).clamp(1, 3600) as u64;
        let expired = spec.holder_identity.as_deref().is_none_or(str::is_empty)
            || self
                .seen
                .as_ref()
                .is_some_and(|(_, at)| at.elapsed() > Duration::from_secs(duration));
        if !ours && !expired {
            self.held = false;
            self.holder = spec.holder_identity.clone();
            return Ok(false);
        }
        lease.spec = Some(self.spec(
            next_transitions(spec.lease_transitions, ours),
            if ours {
                spec.acquire_time.clone()
            } else {
                None
            },
        ));
        let r = self
            .api
            .replace(&self.name, &PostParams::default(), &lease)
            .await;
        self.written(r, "update")
    }

    async fn create(&mut self) -> Result<bool, Error> {
        let l = Lease {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                ..Default::default()
            },
            spec: Some(self.spec(0, None)),
        };
        let r = self.api.create(&PostParams::default(), &l).await;
        self.written(r, "create")
    }

    /// A write of the lease (`verb`: create or update) answered: this instance holds it, at
    /// the version written; or another instance wrote it first (409: who, the next look
    /// says).
    fn written(
        &mut self,
        r: Result<Lease, kube::Error>,
        verb: &'static str,
    ) -> Result<bool, Error> {
        match r {
            Ok(l) => {
                self.seen = l.metadata.resource_version.map(|v| (v, Instant::now()));
                self.held = true;
                self.holder = Some(self.identity.clone());
                Ok(true)
            }
            Err(kube::Error::Api(s)) if s.code == 409 => {
                self.held = false;
                Ok(false)
            }
            Err(source) => Err(Error::Lease { verb, source }),
        }
    }

    /// Gives the lease up at shutdown, so a standby takes over at once.
    pub async fn release(&mut self) {
        if !self.held {
            return;
        }
        if let Ok(Some(mut lease)) = self.api.get_opt(&self.name).await
            && let Some(spec) = lease.spec.as_mut()
            && spec.holder_identity.as_deref() == Some(self.identity.as_str())
        {
            spec.holder_identity = None;
            spec.renew_time = Some(now());
            let _ = self
                .api
                .replace(&self.name, &PostParams::default(), &lease)
                .await;
        }
        self.held = false;
    }
}

/// The record's transitions after this attempt: one more when the lease changes hands,
/// never past i32::MAX (the API server refuses a negative count).
fn next_transitions(current: Option<i32>, ours: bool) -> i32 {
    current.unwrap_or(0).max(0).saturating_add(i32::from(!ours))
}

/// What the keeper knows of the lease.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Holding {
    /// This instance may collect until then: the last renewal it sent, plus the lease's
    /// duration less a margin. None: it does not hold the lease.
    pub until: Option<Instant>,
    /// Another instance holds it (the last answer said so).
    pub other: bool,
    /// Who holds it, as the last answer said (None: nobody, or not known yet).
    pub holder: Option<String>,
}

impl Holding {
    pub fn held(&self, now: Instant) -> bool {
        self.until.is_some_and(|u| now < u)
    }
}

/// The lease's task: its state, and the way to stop it (which gives the lease back).
pub struct Keeper {
    pub state: watch::Receiver<Holding>,
    stop: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

impl Keeper {
    /// Starts taking and renewing `lease` on a task of its own; `log` says what happened.
    pub fn start(
        lease: NodeLease,
        log: impl Fn(&str, serde_json::Value) + Send + 'static,
    ) -> Keeper {
        let (tx, state) = watch::channel(Holding::default());
        let (stop, stop_rx) = watch::channel(false);
        let task = tokio::spawn(keep(lease, tx, stop_rx, log));
        Keeper { state, stop, task }
    }

    /// Stops the task; it gives the lease back within `RELEASE`.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = tokio::time::timeout(RELEASE + Duration::from_millis(200), self.task).await;
    }
}

async fn keep(
    mut lease: NodeLease,
    tx: watch::Sender<Holding>,
    mut stop: watch::Receiver<bool>,
    log: impl Fn(&str, serde_json::Value),
) {
    let mut failures = 0u32;
    loop {
        let sent = Instant::now();
        let outcome = match tokio::time::timeout(CALL, lease.try_hold()).await {
            Ok(r) => r,
            Err(_) => Err(Error::LeaseTimeout(CALL)),
        };
        match outcome {
            Ok(mine) => {
                if failures > 0 {
                    log(
                        "lease_ok",
                        serde_json::json!({"lease": lease.name, "after_failures": failures}),
                    );
                }
                failures = 0;
                tx.send_modify(|h| {
                    h.until = mine.then(|| sent + DURATION - MARGIN);
                    h.other = !mine;
                    h.holder = lease.holder.clone();
                });
            }
            Err(e) => {
                failures += 1;
                // The first failure of a run of them, then one a minute.
                if failures == 1 || failures.is_multiple_of(12) {
                    log(
                        "lease_error",
                        serde_json::json!({"lease": lease.name, "error": e.to_string(), "failures": failures}),
                    );
                }
            }
        }
        tokio::select! {
            () = tokio::time::sleep(RENEW) => {}
            _ = stop.changed() => break,
        }
    }
    if tokio::time::timeout(RELEASE, lease.release())
        .await
        .is_err()
    {
        log(
            "lease_release_timeout",
            serde_json::json!({"lease": lease.name,
                "why": "the API server did not answer within 1.5 s; a standby takes over when the lease expires"}),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transitions_saturate_instead_of_wrapping() {
        assert_eq!(next_transitions(None, false), 1);
        assert_eq!(next_transitions(Some(4), true), 4);
        assert_eq!(next_transitions(Some(4), false), 5);
        assert_eq!(next_transitions(Some(i32::MAX), false), i32::MAX);
        assert_eq!(next_transitions(Some(-3), false), 1);
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn a_holding_ends_before_a_standby_could_take_over() {
        let sent = Instant::now();
        let h = Holding {
            until: Some(sent + DURATION - MARGIN),
            other: false,
            holder: None,
        };
        assert!(h.held(Instant::now()));
        tokio::time::advance(DURATION - MARGIN).await;
        assert!(!h.held(Instant::now()));
    }
}
