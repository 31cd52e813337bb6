//! A bounded fuzz run over the parsers that read untrusted input: the pprof decoder (and the
//! top table and deltas built on what it accepts), the DogStatsD parser, and the check
//! configuration loader. Inputs are the test fixtures and hand-made seeds, mutated (bit
//! flips, byte changes, truncations, splices, repeated runs, varint and length rewrites) by
//! a seeded generator, so a failure is reproducible from its seed. Any panic is a failure;
//! the input is written to `target/fuzz-crashes/`.
//!
//! Time per target: $AGENTPROF_FUZZ_SECONDS (default 8). Each target prints how many cases
//! it ran.
#![allow(clippy::unwrap_used)]

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;
use std::time::{Duration, Instant};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
}

fn mutate(rng: &mut Rng, seed: &[u8], corpus: &[Vec<u8>]) -> Vec<u8> {
    let mut v = seed.to_vec();
    for _ in 0..1 + rng.below(4) {
        let len = v.len();
        match rng.below(8) {
            0 if len > 0 => {
                let i = rng.below(len);
                v[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len);
                v[i] = [0x00, 0xff, 0x7f, 0x80, 0x08, 0x0a, 0x12][rng.below(7)];
            }
            2 => v.truncate(rng.below(len + 1)),
            3 if len > 0 => {
                // Repeat a run: deep nesting, huge counts.
                let a = rng.below(len);
                let b = (a + 1 + rng.below(16)).min(len);
                let run = v[a..b].to_vec();
                for _ in 0..1 + rng.below(64) {
                    v.splice(a..a, run.iter().copied());
                }
            }
            4 => {
                // Splice in part of another input.
                let other = &corpus[rng.below(corpus.len())];
                if !other.is_empty() {
                    let a = rng.below(other.len());
                    let b = (a + rng.below(256)).min(other.len());
                    let at = rng.below(len + 1);
                    v.splice(at..at, other[a..b].iter().copied());
                }
            }
            5 if len > 0 => {
                // A huge varint (a length or a count) where a byte was.
                let i = rng.below(len);
                v.splice(i..i + 1, [0xff, 0xff, 0xff, 0xff, 0x0f]);
            }
            6 if len > 1 => {
                let i = rng.below(len);
                v.remove(i);
            }
            _ => {
                let at = rng.below(len + 1);
                v.insert(at, rng.next() as u8);
            }
        }
    }
    v
}

fn budget() -> Duration {
    let secs = std::env::var("AGENTPROF_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or(8.0);
    Duration::from_secs_f64(secs)
}

fn run(name: &str, seeds: Vec<Vec<u8>>, target: impl Fn(&[u8])) {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ name.len() as u64);
    let deadline = Instant::now() + budget();
    let mut cases = 0u64;
    // The seeds themselves first, then mutations.
    let mut queue: Vec<Vec<u8>> = seeds.clone();
    while Instant::now() < deadline || !queue.is_empty() {
        let input = queue.pop().unwrap_or_else(|| {
            let seed = &seeds[rng.below(seeds.len())];
            mutate(&mut rng, seed, &seeds)
        });
        cases += 1;
        if catch_unwind(AssertUnwindSafe(|| target(&input))).is_err() {
            let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("fuzz-crashes");
            std::fs::create_dir_all(&dir).unwrap();
            let path = dir.join(format!("{name}-{cases}.bin"));
            std::fs::write(&path, &input).unwrap();
            panic!("{name}: case {cases} panicked; input in {}", path.display());
        }
    }
    println!("fuzz {name}: {cases} cases, no panic");
}

fn fixtures() -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/dd-trace-go-upload");
    let mut out: Vec<Vec<u8>> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| std::fs::read(e.path()).unwrap())
        .collect();
    out.sort();
    out
}

#[test]
fn pprof_decoder_top_and_delta() {
    use agentprof::pprof::{Limits, decode_raw, decompress};
    let mut seeds = Vec::new();
    for f in fixtures() {
        // Raw protobuf seeds mutate into more interesting structure than compressed ones.
        if let Ok(raw) = decompress(&f, &Limits::default()) {
            seeds.push(raw);
        }
        seeds.push(f);
    }
    let limits = Limits {
        memory: 64 << 20,
        ..Limits::default()
    };
    let heap = seeds[0].clone();
    run("pprof", seeds, |input| {
        let Ok(raw) = decompress(input, &limits) else {
            return;
        };
        let Ok(p) = decode_raw(&raw, &limits) else {
            return;
        };
        if let Ok(mut p) = agentprof::pprof::Pprof::new(p) {
            let _ = p.prepare_for_report();
            let _ = agentprof::pprof::top(&p, &Default::default());
        }
        let _ = agentprof::pull::wiredelta::delta(heap.clone(), raw);
    });
}

/// The legacy formats: text heap, contention and count profiles, the binary CPU format, and
/// their memory maps; then go tool pprof's name handling and the top report on the result.
#[test]
fn legacy_profiles_names_and_top() {
    let maps = "--- Memory map: ---\n00400000-00500000 r-xp 00000000 08:01 1 /bin/server\n7f0000000000-7f0000100000 r-xp 00001000 08:01 2 /lib/libc.so.6\nx=/opt\n0x1000-0x2000 $x/a (@10) abcdef\n";
    let mut cpu: Vec<u8> = Vec::new();
    for w in [
        0u64,
        3,
        0,
        10_000,
        0,
        5,
        3,
        0x401000,
        0x401200,
        0x7f0000000400,
        2,
        2,
        0x401000,
        0x402000,
        0,
        1,
        0,
    ] {
        cpu.extend_from_slice(&w.to_le_bytes());
    }
    cpu.extend_from_slice(maps.as_bytes());
    let seeds: Vec<Vec<u8>> = vec![
        format!("heap profile:    3:  3072 [    5:  8192] @ heapz_v2/524288\n     1:     1024 [     2:     4096] @ 0x401000 0x402000\n     2:     2048 [     3:     4096] @ 0x7f0000000400\n{maps}").into_bytes(),
        format!("heap profile: 2: 1024 [4: 2048] @ heap/1048576\n1: 512 [2: 1024] @ 0x401000\n\n{maps}").into_bytes(),
        format!("--- contentionz 1 ---\ncycles/second = 3201000000\nsampling period = 100\nms since reset = 1650\n  19490  27 @ 0x401000 0x402000\n{maps}").into_bytes(),
        format!("goroutine profile: total 3\n2 @ 0x401000 0x402000\n#\t0x401000\tmain.f+0x10\tmain.go:3\n\n1 @ 0x403000\n{maps}").into_bytes(),
        cpu,
    ];
    for (i, seed) in seeds.iter().enumerate() {
        let p = agentprof::pprof::parse_legacy(seed);
        assert!(
            matches!(&p, Ok(Some(p)) if !p.sample.is_empty() && !p.mapping.is_empty()),
            "seed {i} does not read: {:?}",
            p.err()
        );
    }
    run("legacy", seeds, |input| {
        let Ok(Some(p)) = agentprof::pprof::parse_legacy(input) else {
            return;
        };
        if let Ok(mut p) = agentprof::pprof::Pprof::new(p) {
            let _ = p.prepare_for_report();
            let _ = agentprof::pprof::top(&p, &Default::default());
        }
    });
}

#[test]
fn dogstatsd_parser() {
    let seeds: Vec<Vec<u8>> = [
        "page.views:1|c\npage.load:320|ms|@0.5|#env:dev,team:web\n",
        "users.uniques:1234|s|#a:b\nq.size:3.5|g\n",
        "_sc|disk.up|2|d:1700000000|h:box|#x:y|m:full\n",
        "_e{5,4}:title|text|d:1|h:h|p:low|t:warning|#e:1\n",
        "h.v:1:2:3|h|#t\nd.v:1|d|c:abc|T1700000000\n",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    run("dogstatsd", seeds, |input| {
        let mut sink = agentprof::metrics::Sink::default();
        agentprof::metrics::dogstatsd::parse_into(&String::from_utf8_lossy(input), &mut sink);
    });
}

#[test]
fn check_configuration_loader() {
    use agentprof::config::{InstanceCommon, parse_check_file};
    let confd = Path::new(env!("CARGO_MANIFEST_DIR")).join("conf.d");
    let mut seeds: Vec<Vec<u8>> = std::fs::read_dir(&confd)
        .unwrap()
        .flatten()
        .map(|e| std::fs::read(e.path()).unwrap())
        .collect();
    seeds.sort();
    seeds.push(b"init_config:\ninstances:\n  - tags: [a:b, 'c:d']\n    run_timeout: 1e20\n    min_collection_interval: -3\n".to_vec());
    seeds.push(b"instances: [{a: [1, {b: [2]}]}, &x {c: *x}]\n".to_vec());
    let path = Path::new("fuzz.yaml");
    run("config", seeds, |input| {
        let text = String::from_utf8_lossy(input).into_owned();
        if let Ok(conf) = parse_check_file(path, text) {
            let _ = conf.typed_instances::<InstanceCommon>();
            let _ = conf.unknown_key_warnings(&["url"]);
        }
    });
}
