//! The last test target of `cargo test` (cargo runs the targets in name order): prints how
//! many tests of this run skipped because a peer was missing, and why. The tests record their
//! skips in `target/skipped-tests.txt` under the id of the `cargo test` process that runs
//! them all (see `tests/cli/support.rs`'s `skip`); under CI a missing peer fails instead.

use std::path::Path;

fn main() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/skipped-tests.txt");
    let run = std::os::unix::process::parent_id().to_string();
    let text = std::fs::read_to_string(&file).unwrap_or_default();
    let (ours, others): (Vec<&str>, Vec<&str>) = text
        .lines()
        .partition(|l| l.split('\t').next() == Some(run.as_str()));
    // Lines of runs still going stay; this run's and those of runs that ended go.
    let alive = |l: &&str| {
        l.split('\t')
            .next()
            .is_some_and(|pid| Path::new("/proc").join(pid).exists())
    };
    let kept: Vec<&str> = others.into_iter().filter(alive).collect();
    if kept.is_empty() {
        let _ = std::fs::remove_file(&file);
    } else {
        let _ = std::fs::write(&file, kept.join("\n") + "\n");
    }
    if ours.is_empty() {
        println!("skipped tests: none (every test ran with its peers)");
        return;
    }
    println!(
        "skipped tests: {} did nothing here because a peer is missing (.ci/run installs them; under CI they fail):",
        ours.len()
    );
    for l in ours {
        println!("  {}", l.split_once('\t').map_or(l, |(_, rest)| rest));
    }
}
