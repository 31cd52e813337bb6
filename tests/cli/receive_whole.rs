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
    let p = agentprof::pprof::decode::decode(&bytes, &agentprof::pprof::decode::Limits::local())
        .expect("decodes");
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
