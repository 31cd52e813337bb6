//! A request of several profiles (an OTLP request of several resources) is stored whole or
//! not at all: when the queue has room for its first upload but not its second, it gets 503
//! and none of it stays queued, so the client's retry of the whole request stores each
//! profile once. (It had the first queued, and the retry stored that one twice.)

use prost::Message;

use crate::otlp::post;
use crate::receive::Receiver;
use crate::receive_hostile::{free_addr, metric, wait_for};
use crate::support::{Sandbox, fixture};

/// An OTLP request of the dd-trace-go CPU fixture once per service.
fn request(services: &[&str]) -> Vec<u8> {
    let bytes = std::fs::read(fixture("cpu.pprof")).expect("fixture");
    let p = agentprof::pprof::decode(&bytes, &agentprof::pprof::Limits::local()).expect("decodes");
    let mut e = otlp::export::Export::new();
    for s in services {
        let resource = vec![("service.name".to_string(), (*s).to_string())];
        e.add(
            &p,
            &otlp::export::Source {
                resource: &resource,
                original: None,
            },
        );
    }
    e.finish().encode_to_vec()
}

fn stored(sb: &Sandbox, service: &str) -> usize {
    std::fs::read_to_string(sb.file("out/uploads.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(&format!("\"service\":\"{service}\"")))
        .count()
}

#[test]
fn a_request_refused_midway_keeps_none_of_it_and_its_retry_stores_each_once() {
    let sb = Sandbox::new();
    sb.write("agentprof.yaml", "receive:\n  cache_capacity_mb: 1\n");
    let metrics = free_addr();
    let rx = Receiver::start(
        &sb,
        &["--config", "agentprof.yaml", "--metrics-listen", &metrics],
    );
    let url = format!("http://{}/v1development/profiles", rx.addr);
    let proto = [("content-type", "application/x-protobuf")];
    let queued = || metric(&metrics, "agentprof_receive_queue_bytes");
    // Every service's directory is a file for now: its uploads stay in the queue, holding
    // their bytes, and are stored once the file goes (tried again every 10 s). Names of one
    // length, so each upload's record is the same size.
    std::fs::create_dir_all(sb.file("out")).unwrap();
    let fillers: Vec<String> = (0..200).map(|i| format!("fill-{i:03}")).collect();
    for s in fillers
        .iter()
        .map(String::as_str)
        .chain(["pair-aaa", "pair-bbb"])
    {
        sb.write(
            &format!("out/{s}"),
            "a file where the service's directory goes",
        );
    }
    // The queue filled one upload at a time, to within one upload of its 1 MiB.
    let mut taken = Vec::new();
    for s in &fillers {
        let (code, text) = post(&url, &proto, request(&[s]));
        if code == 503 {
            assert!(text.contains("queue is full"), "{text}");
            break;
        }
        assert_eq!(code, 200, "{s}: {text}");
        taken.push(s.clone());
    }
    assert!(taken.len() >= 3 && taken.len() < fillers.len(), "{taken:?}");
    let one = queued() / taken.len() as f64;
    // One filler stored: room for one upload and not two.
    std::fs::remove_file(sb.file(&format!("out/{}", taken[0]))).unwrap();
    let full = queued();
    wait_for("the first filler stored", || queued() <= full - one);
    let room = 1048576.0 - queued();
    assert!(
        room >= one && room < 2.0 * one,
        "room {room}, an upload {one}"
    );

    // The pair: its first upload fits, its second does not. 503, and nothing of it kept.
    let before = queued();
    let (code, text) = post(&url, &proto, request(&["pair-aaa", "pair-bbb"]));
    assert_eq!(code, 503, "{text}");
    assert!(text.contains("queue is full"), "{text}");
    assert_eq!(queued(), before, "a refused request left part of it queued");

    // Everything stored; then the client's retry of the pair.
    for s in taken
        .iter()
        .skip(1)
        .map(String::as_str)
        .chain(["pair-aaa", "pair-bbb"])
    {
        std::fs::remove_file(sb.file(&format!("out/{s}"))).unwrap();
    }
    wait_for("the queue emptied", || {
        queued() == 0.0 && metric(&metrics, "agentprof_receive_queue_uploads") == 0.0
    });
    let (code, text) = post(&url, &proto, request(&["pair-aaa", "pair-bbb"]));
    assert_eq!(code, 200, "{text}");
    wait_for("the pair stored", || {
        stored(&sb, "pair-aaa") >= 1 && stored(&sb, "pair-bbb") >= 1 && queued() == 0.0
    });
    assert_eq!((stored(&sb, "pair-aaa"), stored(&sb, "pair-bbb")), (1, 1));
    for s in &taken {
        assert_eq!(stored(&sb, s), 1, "{s}");
    }
    eprintln!(
        "measured: {} uploads of {one:.0} bytes filled the 1 MiB queue; the pair refused whole, stored once on retry",
        taken.len()
    );
}

/// kill -9 five times (ten under `AGENTPROF_ACCEPTANCE=1`), each after a random number of
/// acknowledgements, under 4 senders that each resend an upload until it gets its 202 (as
/// dd-trace's profilers retry), receive restarted on the same --out, --queue and --spool
/// each time, forwarding to a loopback intake: every upload acknowledged is stored exactly
/// once and forwarded once — again only when the kill cut a POST the intake had taken, with
/// its Idempotency-Key. (Before uploads carried their digest, a replay after
/// a kill -9 between an upload's uploads.jsonl line and its done mark stored and forwarded
/// it again, and a retry of one acknowledged just before a kill stored it a second time.)
#[test]
fn kill_9_again_and_again_stores_each_upload_once_and_forwards_it_once_per_key() {
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    let sb = Sandbox::new();
    let (intake, forwarded) =
        crate::support::serve(|_, _| crate::support::reply("202 Accepted", "{}"));
    let fwd = format!("http://{intake}/profiling/v1/input");
    let args = ["--forward", fwd.as_str(), "--spool", "spool", "--top", "20"];
    let url = Arc::new(Mutex::new(String::new()));
    let acked = Arc::new(Mutex::new(Vec::<String>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let mut rx = Receiver::start(&sb, &args);
    *url.lock().unwrap() = rx.url();
    let senders: Vec<_> = (0..4)
        .map(|t| {
            let (url, acked, stop) = (Arc::clone(&url), Arc::clone(&acked), Arc::clone(&stop));
            std::thread::spawn(move || {
                let client = reqwest::blocking::Client::new();
                let mut i = 0;
                let mut upload = None;
                while !stop.load(Ordering::SeqCst) {
                    let seq = format!("{t}-{i}");
                    // Made once and sent again as it is until it gets its 202.
                    let (body, ct) = upload
                        .get_or_insert_with(|| {
                            crate::receive::recorded_upload(&format!("service:once,seq:{seq}"))
                        })
                        .clone();
                    let target = url.lock().unwrap().clone();
                    let r = client
                        .post(&target)
                        .header("content-type", ct)
                        .body(body)
                        .timeout(std::time::Duration::from_secs(10))
                        .send();
                    match r {
                        Ok(r) if r.status().as_u16() == 202 => {
                            acked.lock().unwrap().push(seq);
                            upload = None;
                            i += 1;
                        }
                        // Down or busy: the same upload again (a back-off, not a wait
                        // for an event).
                        _ => std::thread::sleep(std::time::Duration::from_millis(20)),
                    }
                }
            })
        })
        .collect();
    let kills = if crate::support::acceptance() { 10 } else { 5 };
    // 10 to 40 acknowledgements between kills, so each lands somewhere else in the work.
    let mut state = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos() as u64
        | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        10 + (state % 31) as usize
    };
    for _ in 0..kills {
        let want = acked.lock().unwrap().len() + next();
        wait_for("uploads acknowledged", || {
            acked.lock().unwrap().len() >= want
        });
        unsafe { libc::kill(rx.pid() as i32, libc::SIGKILL) };
        drop(rx);
        rx = Receiver::start(&sb, &args);
        *url.lock().unwrap() = rx.url();
    }
    let want = acked.lock().unwrap().len() + 25;
    wait_for("uploads acknowledged", || {
        acked.lock().unwrap().len() >= want
    });
    stop.store(true, Ordering::SeqCst);
    for s in senders {
        s.join().unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    let seq_of = |text: &str| -> Option<String> {
        let at = text.find("seq:")? + 4;
        let rest = &text[at..];
        let end = rest.find(['"', ','])?;
        Some(rest[..end].to_string())
    };
    let stored = || -> HashMap<String, usize> {
        let mut n = HashMap::new();
        for l in std::fs::read_to_string(sb.file("out/uploads.jsonl"))
            .unwrap_or_default()
            .lines()
        {
            if let Some(s) = seq_of(l) {
                *n.entry(s).or_insert(0) += 1;
            }
        }
        n
    };
    wait_for("every acknowledged upload stored", || {
        let got = stored();
        acked.iter().all(|s| got.contains_key(s))
    });
    // Each forward's seq and Idempotency-Key.
    let sent = || -> HashMap<String, Vec<String>> {
        let mut n: HashMap<String, Vec<String>> = HashMap::new();
        for (_, headers, body) in forwarded.lock().unwrap().iter() {
            if let Some(s) = seq_of(&String::from_utf8_lossy(body)) {
                let key = headers
                    .iter()
                    .find(|(k, _)| k == "idempotency-key")
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default();
                n.entry(s).or_default().push(key);
            }
        }
        n
    };
    wait_for("every acknowledged upload forwarded", || {
        let got = sent();
        acked.iter().all(|s| got.contains_key(s))
    });
    let stderr = rx.stop();
    let (stored, sent) = (stored(), sent());
    let twice: Vec<_> = stored.iter().filter(|(_, n)| **n > 1).collect();
    let sent_twice: Vec<_> = sent.iter().filter(|(_, keys)| keys.len() > 1).collect();
    eprintln!(
        "measured: kill -9 ×{kills} under 4 senders: {} acknowledged, {} stored ({} twice), {} \
         forwarded ({} sent again with their Idempotency-Key)",
        acked.len(),
        stored.len(),
        twice.len(),
        sent.len(),
        sent_twice.len()
    );
    assert!(twice.is_empty(), "stored twice: {twice:?}\n{stderr}");
    // A forward is sent again only when a kill cut its POST after the intake took it and
    // before the answer came back (nothing can tell it arrived): at most one per kill, the
    // same request with the same Idempotency-Key (a target that honours it keeps one).
    assert!(
        sent_twice.len() <= kills,
        "forwarded twice: {sent_twice:?}\n{stderr}"
    );
    for (seq, keys) in &sent_twice {
        assert!(
            keys.len() == 2 && keys[0] == keys[1] && keys[0].len() == 32,
            "{seq}: {keys:?}"
        );
    }
    assert!(sent.values().all(|keys| keys.iter().all(|k| k.len() == 32)));
}

/// A kill -9 in the middle of writing an upload's uploads.jsonl line (a write of several
/// pages stops at a page when the process is killed) leaves the line cut, and the upload's
/// queue record not done. The next start takes the cut line off and stores the upload
/// again: one whole line, no fragment glued to the next line or counted as a second copy.
/// (The cut line was kept, ended with a newline: the upload read as stored twice, once in a
/// line no JSON reader can parse.)
#[test]
fn a_line_cut_by_a_kill_is_taken_off_and_its_upload_stored_once() {
    let sb = Sandbox::new();
    let (body, ct) = crate::receive::recorded_upload("service:once,seq:cut");
    let post = |url: &str| {
        reqwest::blocking::Client::new()
            .post(url)
            .header("content-type", ct.as_str())
            .body(body.clone())
            .timeout(std::time::Duration::from_secs(30))
            .send()
            .map(|r| r.status().as_u16())
    };
    // The whole line this upload gets, from a receiver of its own.
    let whole = {
        let other = Sandbox::new();
        let rx = Receiver::start(&other, &[]);
        assert_eq!(post(&rx.url()).unwrap(), 202);
        rx.next();
        rx.stop();
        std::fs::read_to_string(other.file("out/uploads.jsonl")).unwrap()
    };
    // Acknowledged and not stored (its service's directory is a file for now); then killed.
    std::fs::create_dir_all(sb.file("out")).unwrap();
    sb.write("out/once", "a file where the service's directory goes");
    let rx = Receiver::start(&sb, &[]);
    assert_eq!(post(&rx.url()).unwrap(), 202);
    wait_for("the store refused", || {
        rx.stderr.lock().unwrap().contains("cannot store an upload")
    });
    unsafe { libc::kill(rx.pid() as i32, libc::SIGKILL) };
    drop(rx);
    // What a kill during the line's write leaves: its first part, before the digest.
    let cut = &whole[..whole.find("\"digest\"").expect("a digest") / 2];
    assert!(cut.contains("seq:cut"), "{cut}");
    std::fs::write(sb.file("out/uploads.jsonl"), cut).unwrap();
    std::fs::remove_file(sb.file("out/once")).unwrap();

    let rx = Receiver::start(&sb, &[]);
    let line = rx.next();
    assert!(line.to_string().contains("seq:cut"), "{line}");
    let stderr = rx.stop();
    let text = std::fs::read_to_string(sb.file("out/uploads.jsonl")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1, "stored twice:\n{text}");
    assert!(stderr.contains("was cut short by a crash"), "{stderr}");
    let doc: serde_json::Value = serde_json::from_str(lines[0]).expect("a whole JSON line");
    assert_eq!(doc["digest"], line["digest"]);
    assert!(text.ends_with('\n'));
}
