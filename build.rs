//! Link settings of the agentprof binary (the unwinder's wrap also of its tests and examples;
//! never of the proc-macros it builds with).
//!
//! Static (Linux with glibc; `.cargo/config.toml` asks for `crt-static` with the static
//! relocation model): glibc, libgcc's unwinder and agentprof in one executable, so a start maps
//! no shared library: the loader's work (mapping and relocating libc.so.6 and libgcc_s.so.1)
//! is gone, and only the parts of libc a command runs are paged in, not 1.5 MiB of
//! libc.so.6. Measured on `check disk` against the dynamic link of the same tree (with the
//! startup order below): 97 page faults where it had 138, peak RSS 2,248 KiB where it had
//! 3,484 (`perf stat`, GNU time's %M, medians); `--version` 1,352 KiB where it had 2,056.
//!
//! Position-dependent (`-no-pie` when the build is not static, `relocation-model=static`
//! when it is): a position-independent agentprof has ~17,000 relative relocations, and the
//! loader wrote every page of `.data.rel.ro` (300 KB of vtables and static tables, 76 pages
//! copied and resident) at each start to apply them; linked at a fixed address there is
//! nothing to relocate and those pages are read from the file only where used. The cost:
//! the executable's own code and data are not placed at a random address (its heap, stacks
//! and mappings still are), as with Go's default builds. A static build must not be given
//! `-no-pie` on top of rustc's `-static-pie` (the result crashes at start), so it is only
//! added to dynamic links.
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
    let features = std::env::var("CARGO_CFG_TARGET_FEATURE").unwrap_or_default();
    let static_gnu =
        target.ends_with("-linux-gnu") && features.split(',').any(|f| f == "crt-static");
    if static_gnu {
        // Every link of this package (the binary, its tests, examples), for any such target:
        // the sampler marks the unwinder's table lookups (src/profile/sampler.rs, `unwinder`).
        // The wrapper is the library's, so every target links it (`use agentprof as _;` in
        // those that call nothing of it: without, the link fails on `__wrap__Unwind_Find_FDE`).
        println!("cargo:rustc-link-arg=-Wl,--wrap=_Unwind_Find_FDE");
    }
    if target != host || !target.ends_with("-linux-gnu") {
        return;
    }
    if !static_gnu {
        println!("cargo:rustc-link-arg-bins=-no-pie");
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
