//! Link settings of the agentprof binary (not its tests, not the proc-macros it builds with).
//!
//! Relative relocations packed (`-z pack-relative-relocs`, DT_RELR): the ~17,000 relocations
//! of a position-independent agentprof are 400 KB of `.rela.dyn` that the loader reads at
//! every start, paging them in; packed they are a few kilobytes. The loader must know
//! DT_RELR (glibc 2.36), so it is asked for only when this machine's glibc does and the
//! binary is built for this machine.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let target = std::env::var("TARGET").unwrap_or_default();
    let host = std::env::var("HOST").unwrap_or_default();
    if target != host || !target.ends_with("-linux-gnu") {
        return;
    }
    let glibc = Command::new("getconf")
        .arg("GNU_LIBC_VERSION")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .unwrap_or_default();
    // "glibc 2.36"
    let version: Vec<u32> = glibc
        .split_whitespace()
        .nth(1)
        .unwrap_or("")
        .split('.')
        .filter_map(|p| p.parse().ok())
        .collect();
    if version.len() >= 2 && (version[0], version[1]) >= (2, 36) {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
