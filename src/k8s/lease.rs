//! One collector per node: a `coordination.k8s.io` Lease named `agentprof-<node>`. The holder
//! renews it every `RENEW`; another instance waits as a standby and takes over once the
//! record has not changed for the lease's duration (measured on its own clock from when it
//! saw the record change, as client-go's leader election does, so clock skew between nodes
//! does not matter).

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, ObjectMeta, PostParams};
use tokio::time::Instant;

/// How long a lease holds without renewal.
pub const DURATION: Duration = Duration::from_secs(15);
/// How often the holder renews.
pub const RENEW: Duration = Duration::from_secs(5);

pub struct NodeLease {
    api: Api<Lease>,
    pub name: String,
    pub identity: String,
    /// The record last seen: its resourceVersion, and when it was seen to change.
    seen: Option<(String, Instant)>,
    pub held: bool,
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
    pub async fn try_hold(&mut self) -> Result<bool, String> {
        let current = self
            .api
            .get_opt(&self.name)
            .await
            .map_err(|e| super::discover::describe(&e))?;
        let Some(mut lease) = current else {
            let l = Lease {
                metadata: ObjectMeta {
                    name: Some(self.name.clone()),
                    ..Default::default()
                },
                spec: Some(self.spec(0, None)),
            };
            return match self.api.create(&PostParams::default(), &l).await {
                Ok(_) => {
                    self.held = true;
                    Ok(true)
                }
                // Another instance created it first.
                Err(kube::Error::Api(s)) if s.code == 409 => {
                    self.held = false;
                    Ok(false)
                }
                Err(e) => Err(super::discover::describe(&e)),
            };
        };
        let rv = lease.metadata.resource_version.clone().unwrap_or_default();
        let changed = self.seen.as_ref().is_none_or(|(v, _)| *v != rv);
        if changed {
            self.seen = Some((rv, Instant::now()));
        }
        let spec = lease.spec.clone().unwrap_or_default();
        let ours = spec.holder_identity.as_deref() == Some(self.identity.as_str());
        let expired = spec.holder_identity.as_deref().is_none_or(str::is_empty)
            || self.seen.as_ref().is_some_and(|(_, at)| {
                at.elapsed()
                    > Duration::from_secs(spec.lease_duration_seconds.unwrap_or(15).max(1) as u64)
            });
        if !ours && !expired {
            self.held = false;
            return Ok(false);
        }
        let transitions = spec.lease_transitions.unwrap_or(0) + i32::from(!ours);
        let acquired = if ours {
            spec.acquire_time.clone()
        } else {
            None
        };
        lease.spec = Some(self.spec(transitions, acquired));
        match self
            .api
            .replace(&self.name, &PostParams::default(), &lease)
            .await
        {
            Ok(l) => {
                self.seen = l.metadata.resource_version.map(|v| (v, Instant::now()));
                self.held = true;
                Ok(true)
            }
            Err(kube::Error::Api(s)) if s.code == 409 => {
                self.held = false;
                Ok(false)
            }
            Err(e) => Err(super::discover::describe(&e)),
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
