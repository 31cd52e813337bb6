//! Release builds keep DWARF line tables only (`debug = "line-directives-only"`), for the
//! files and lines of `--profile`'s functions, and have the linker compress them (zstd, which
//! gdb, readelf and agentprof read; zlib where the linker has no zstd): 12 MB of line
//! programs become about 3.5 MB of the installed binary. agentprof decompresses them when it
//! names a profile (crates/checks/src/profile/sampler/dwarf.rs). And identical functions are folded into
//! one (`--icf=all`: generic code instantiated alike for different types), 0.75 MB less.
//! Both measured in docs/details.md.
//!
//! Each flag is given only when the linker this build uses takes it: a tiny program is
//! linked with it first (Rust 1.90 and later link with lld on x86-64 Linux, which takes
//! both; GNU ld, the linker before, has no `--icf`).

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    if !(release && linux) {
        return;
    }
    let compress = ["zstd", "zlib"]
        .into_iter()
        .map(|kind| format!("-Wl,--compress-debug-sections={kind}"))
        .find(|flag| links_with(flag));
    for flag in compress
        .into_iter()
        .chain(Some("-Wl,--icf=all".to_string()).filter(|f| links_with(f)))
    {
        println!("cargo::rustc-link-arg-bins={flag}");
    }
}

/// Whether an empty program links with `flag` as this build links (same rustc, target and
/// flags).
fn links_with(flag: &str) -> bool {
    let (Some(rustc), Some(out), Some(target)) = (
        std::env::var_os("RUSTC"),
        std::env::var_os("OUT_DIR").map(PathBuf::from),
        std::env::var_os("TARGET"),
    ) else {
        return false;
    };
    let src = out.join("probe.rs");
    if std::fs::write(&src, "fn main() {}\n").is_err() {
        return false;
    }
    let mut cmd = Command::new(rustc);
    cmd.arg("--target")
        .arg(target)
        .arg("-Cdebuginfo=line-directives-only")
        .arg(format!("-Clink-arg={flag}"))
        .arg("-o")
        .arg(out.join("probe"))
        .arg(&src);
    if let Ok(flags) = std::env::var("CARGO_ENCODED_RUSTFLAGS") {
        cmd.args(flags.split('\u{1f}').filter(|f| !f.is_empty()));
    }
    cmd.output().is_ok_and(|o| o.status.success())
}
