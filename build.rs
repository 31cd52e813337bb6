//! Link settings of the agentprof binary (not its tests, not the proc-macros it builds with).
//!
//! Relative relocations packed (`-z pack-relative-relocs`, DT_RELR): the ~17,000 relocations
//! of a position-independent agentprof are 400 KB of `.rela.dyn` that the loader reads at
//! every start, paging them in; packed they are a few kilobytes. The loader must know
//! DT_RELR (glibc 2.36), so it is asked for only when this machine's glibc does and the
//! binary is built for this machine.
//!
//! Startup code together (release builds, with the rust-lld Rust links with by default):
//! `build/startup-order.txt` (written by `scripts/startup_order.py`) lists the functions the
//! short commands run, first run first; the linker puts them at the start of `.text`, so a
//! `check disk` holds 1.1 MiB of code resident instead of 4.8 MiB of a 12.6 MB `.text`. Names
//! the binary does not have are ignored.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=build/startup-order.txt");
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
    startup_order(&target);
}

/// The ordering file, when the link is rust-lld's: the default for x86_64 Linux, unless the
/// build names another linker (GNU ld does not know the flag).
fn startup_order(target: &str) {
    let order = std::path::Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default())
        .join("build/startup-order.txt");
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let linker_env = format!(
        "CARGO_TARGET_{}_LINKER",
        target.to_uppercase().replace('-', "_")
    );
    if std::env::var("PROFILE").as_deref() != Ok("release")
        || target != "x86_64-unknown-linux-gnu"
        || !order.is_file()
        || flags.contains("linker")
        || flags.contains("fuse-ld")
        || std::env::var_os(&linker_env).is_some()
    {
        return;
    }
    println!(
        "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
        order.display()
    );
    println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
}
