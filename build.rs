//! Link settings of the agentprof binary (not its tests, not the proc-macros it builds with).
//!
//! Position-dependent (`-no-pie`, Linux with glibc, built for this machine): a
//! position-independent agentprof has ~17,000 relative relocations, and the loader wrote
//! every page of `.data.rel.ro` (300 KB of vtables and static tables, 76 pages copied and
//! resident) at each start to apply them; linked at a fixed address there is nothing to
//! relocate and those pages are read from the file only where used. The cost: the
//! executable's own code and data are not placed at a random address (its libraries, heap,
//! stacks and mappings still are), as with Go's default builds.
//!
//! Startup code together (release builds, with the rust-lld Rust links with by default):
//! `build/startup-order.txt` (written by `scripts/startup_order.py`) lists the functions the
//! short commands run, first run first; the linker puts them at the start of `.text`, so a
//! `check disk` faults in 8 windows of its code (the kernel maps 64 KiB around each fault)
//! instead of spreading over 4.8 MiB of a 12.6 MB `.text`. Names the binary does not have
//! are ignored.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=build/startup-order.txt");
    let target = std::env::var("TARGET").unwrap_or_default();
    let host = std::env::var("HOST").unwrap_or_default();
    if target != host || !target.ends_with("-linux-gnu") {
        return;
    }
    println!("cargo:rustc-link-arg-bins=-no-pie");
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
