//! The collector's captures: one dispatched when every limit allows it (globally, per rule,
//! one per endpoint) or kept waiting, prepared and started, and taken back when it finishes.

use super::*;

impl Collector {
    /// Starts a capture of `id` if every limit allows it now; else counts why not.
    pub(in crate::k8s) fn dispatch(
        &mut self,
        id: &str,
        cause: Cause,
        fired: Option<Fired>,
        round_at: Option<Instant>,
    ) {
        let permits = match self.admit(id, cause) {
            Admit::Go(p) => p,
            Admit::Wait => {
                if let Some(t) = self.targets.get_mut(id)
                    && t.waiting_since.is_none()
                {
                    t.waiting_since = Some(Instant::now());
                    self.waiting.push_back(id.to_string());
                }
                return;
            }
            Admit::No => return,
        };
        if let Some(t) = self.targets.get_mut(id)
            && t.waiting_since.take().is_some()
        {
            self.metrics.scheduled_late.inc();
        }
        let Some(capture) = self.prepare(id, cause, fired, round_at) else {
            return;
        };
        let done = self.done_tx.clone();
        tokio::task::spawn_blocking(move || {
            let finished = capture.run();
            // The slots are free before the collector hears of it, so a waiting capture
            // can take one at once.
            drop(permits);
            let _ = done.send(finished);
        });
    }

    /// The permits of a capture of `id` now (the global and the rule's); else a scheduled
    /// capture waits for its turn (its own previous capture still running, or the
    /// concurrency limit), and any other is skipped with the reason counted: not ready,
    /// busy (the endpoint's previous target still collecting: a scheduled capture looks
    /// again shortly), in backoff, at the concurrency limit.
    pub(super) fn admit(&mut self, id: &str, cause: Cause) -> Admit {
        let now = Instant::now();
        let Some(t) = self.targets.get(id) else {
            return Admit::No;
        };
        let json = self.opts.json;
        let skip = |m: &Metrics, reason: &str| {
            m.skip(reason);
            log(
                json,
                "capture_skipped",
                serde_json::json!({"target": id, "cause": cause.as_str(), "reason": reason}),
            );
            Admit::No
        };
        let scheduled = cause == Cause::Scheduled;
        if !t.found.ready {
            return skip(&self.metrics, "not_ready");
        }
        if t.inflight.is_some() {
            return if scheduled {
                Admit::Wait
            } else {
                skip(&self.metrics, "busy")
            };
        }
        if self.busy.contains_key(&t.found.endpoint) {
            if scheduled && let Some(t) = self.targets.get_mut(id) {
                t.next_scheduled = now + WAIT_FOR_OLD;
                log(
                    json,
                    "capture_waiting",
                    serde_json::json!({"target": id, "why": "the endpoint's previous task is still running"}),
                );
                return Admit::No;
            }
            return skip(&self.metrics, "busy");
        }
        if t.backoff_until.is_some_and(|b| now < b) {
            return skip(&self.metrics, "backoff");
        }
        let rule = t.found.rule;
        let g = Arc::clone(&self.global).try_acquire_owned();
        let r = Arc::clone(&self.per_rule[rule]).try_acquire_owned();
        match (g, r) {
            (Ok(g), Ok(r)) => Admit::Go((g, r)),
            _ if scheduled => Admit::Wait,
            _ => skip(&self.metrics, "concurrency"),
        }
    }

    /// The waiting scheduled captures that the limits let start now, first due first.
    pub(in crate::k8s) fn start_waiting(&mut self) {
        for _ in 0..self.waiting.len() {
            let Some(id) = self.waiting.pop_front() else {
                break;
            };
            let Some(t) = self.targets.get(&id) else {
                continue;
            };
            if t.waiting_since.is_none() {
                continue;
            }
            match self.admit(&id, Cause::Scheduled) {
                // The permits are dropped here and taken again by dispatch, on this thread.
                Admit::Go(permits) => {
                    drop(permits);
                    self.dispatch(&id, Cause::Scheduled, None, None);
                }
                Admit::Wait => self.waiting.push_back(id),
                Admit::No => {
                    if let Some(t) = self.targets.get_mut(&id) {
                        t.waiting_since = None;
                    }
                }
            }
        }
    }

    /// The capture to run: its types and duration by its cause, its tags, its directory;
    /// the target marked in flight.
    pub(super) fn prepare(
        &mut self,
        id: &str,
        cause: Cause,
        fired: Option<Fired>,
        round_at: Option<Instant>,
    ) -> Option<Capture> {
        let rule_index = self.targets.get(id)?.found.rule;
        let rule = self.rule(rule_index).clone();
        let t = self.targets.get_mut(id)?;
        let (types, duration) = match (cause, fired.as_ref().map(|f| f.level)) {
            (Cause::Scheduled, _) => (rule.scheduled_types.clone(), rule.profile_duration),
            (_, Some(Level::Emergency)) => (rule.trigger_types.clone(), rule.emergency_duration),
            _ => (rule.trigger_types.clone(), rule.profile_duration),
        };
        let tagged = crate::k8s::tags::capture_tags(&rule, &t.found.facts, fired.as_ref());
        for _ in 0..tagged.invalid {
            self.metrics.skip("invalid_tag");
        }
        let url = reqwest::Url::parse(&t.found.endpoint).ok()?;
        let cancel = Cancel::new();
        t.inflight = Some(cancel.clone());
        t.seq += 1;
        *self.busy.entry(t.found.endpoint.clone()).or_default() += 1;
        let latency_ms = round_at.map(|at| at.elapsed().as_secs_f64() * 1000.0);
        let target = crate::pull::Target {
            url,
            types,
            profile_duration: duration,
            interval: rule.interval,
            http_timeout: rule.request_timeout,
            timeout_setting: "request_timeout",
            service: tagged.service.clone(),
            env: tagged.env.clone(),
            version: tagged.version.clone(),
            tags: tagged.tags.clone(),
            tls: rule.tls.clone(),
        };
        let f = t.found.clone();
        let dir = PathBuf::from(crate::pull::safe_name(&f.facts.namespace))
            .join(crate::pull::safe_name(&f.facts.pod_name))
            .join(crate::pull::safe_name(&f.container));
        log(
            self.opts.json,
            "capture_started",
            serde_json::json!({"target": id, "cause": cause.as_str(),
                "trigger": fired, "trigger_latency_ms": latency_ms}),
        );
        Some(Capture {
            target,
            client: Arc::clone(&self.clients[rule_index]),
            seq: t.seq,
            dir,
            id: id.to_string(),
            cancel,
            shared: Arc::clone(&self.shared),
            body_limit: rule.body_size_limit_mb,
            found: f,
            cause,
            fired,
            tags: tagged.tags,
            latency_ms,
        })
    }

    pub(in crate::k8s) fn finished(&mut self, d: Done) {
        if let Some(n) = self.busy.get_mut(&d.endpoint) {
            *n -= 1;
            if *n == 0 {
                self.busy.remove(&d.endpoint);
            }
        }
        let status = if d.cancelled {
            "cancelled"
        } else if d.ok {
            "ok"
        } else {
            "error"
        };
        log(
            self.opts.json,
            "capture_done",
            serde_json::json!({"target": d.id, "cause": d.cause.as_str(), "status": status,
                "seconds": d.seconds}),
        );
        self.metrics
            .collections
            .get_or_create(&vec![
                ("cause", d.cause.as_str().into()),
                ("status", status.into()),
            ])
            .inc();
        self.metrics
            .collection_seconds
            .get_or_create(&vec![("cause", d.cause.as_str().into())])
            .inc_by(d.seconds);
        {
            let cache = lock(&self.shared.cache);
            self.metrics.delta_cache_bytes.set(cache.used() as i64);
            self.metrics.delta_cache_entries.set(cache.len() as i64);
        }
        for nd in &d.no_delta {
            use crate::pull::delta::NoDelta;
            match nd {
                NoDelta::DeltaCacheEvicted => self.metrics.skip("delta_cache_evicted"),
                NoDelta::DeltaCacheLimit => self.metrics.skip("delta_cache_limit"),
                NoDelta::ProcessRestarted => self.metrics.skip("process_restarted"),
                NoDelta::BaselineUnusable => self.metrics.skip("baseline_unusable"),
                NoDelta::FirstCollection => {}
            }
        }
        if d.ok {
            self.captures += 1;
        } else if !d.cancelled {
            self.failed += 1;
        }
        if let Some(t) = self.targets.get_mut(&d.id) {
            t.inflight = None;
            if d.ok {
                t.failures = 0;
                t.backoff_until = None;
            } else if !d.cancelled {
                t.failures += 1;
                let wait = backoff(t.failures);
                t.backoff_until = Some(Instant::now() + wait);
            }
        }
        self.start_waiting();
    }
}
