//! Shared by the bench examples (`#[path]`-included; not an example itself).

use std::path::Path;
use std::time::SystemTime;

/// The release agentprof beside this example's build: `<target dir>/release/agentprof`, found
/// from where cargo put this example (`<target dir>/<profile>/examples/`), whichever target
/// directory and profile that is. `cargo run --example` does not build it: one older than the
/// sources would measure another agentprof, so that stops the bench with what to run.
pub fn release_agentprof() -> String {
    let exe = std::env::current_exe().expect("this example's path");
    let dir = exe
        .ancestors()
        .nth(3)
        .expect("<target dir>/<profile>/examples/<name>");
    let bin = dir.join("release/agentprof");
    let built = std::fs::metadata(&bin)
        .and_then(|m| m.modified())
        .unwrap_or_else(|e| panic!("{}: {e} (cargo build --release first)", bin.display()));
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let newest = ["src", "crates", "Cargo.lock", "Cargo.toml", "build.rs"]
        .iter()
        .map(|p| newest_under(&root.join(p)))
        .max()
        .flatten();
    if let Some((t, path)) = newest
        && t > built
    {
        panic!(
            "{} is older than {}: cargo build --release first (or pass --agentprof PATH)",
            bin.display(),
            path
        );
    }
    bin.to_string_lossy().into_owned()
}

/// The newest modification time under `p` (a file or a tree), with that file's path.
fn newest_under(p: &Path) -> Option<(SystemTime, String)> {
    let meta = std::fs::metadata(p).ok()?;
    if meta.is_file() {
        return Some((meta.modified().ok()?, p.display().to_string()));
    }
    std::fs::read_dir(p)
        .ok()?
        .flatten()
        .filter_map(|e| newest_under(&e.path()))
        .max()
}
