//! The start-up measures agentprof's build keeps, each because it buys more than 10 % of a
//! cold `agentprof check disk` on its own against the standard build (PIE, glibc linked
//! dynamically; `scripts/bench_disk_vs_python.py`, medians of 21–31 runs):
//!
//! - **Startup order.** The functions the short commands run (`build/startup-order.txt`,
//!   written by `scripts/startup_order.py`) placed together at the start of `.text` in
//!   release builds, so a cold `check disk` faults in a few 64 KiB windows of code instead of
//!   megabytes spread over 12 MB: peak RSS 7,852 KiB without, 4,904 KiB with (-37.5 %), wall
//!   2.87 ms and 2.62 ms (--drop-caches).
//! - **Packed relative relocations** (`-z pack-relative-relocs`, DT_RELR). A PIE's pointers
//!   are relocated at every start; as classic RELA entries agentprof's ~17,000 take 409 KB the
//!   loader reads, as RELR 5 KB. Five runs of 31 starts each, median wall against the same
//!   build without it: -13, -13, -14, -7 and +2 % (median -13 %); peak RSS 5,180 → 4,956
//!   KiB (-4 %; -8 % with --drop-caches). It needs glibc 2.36 (the binary says so: a
//!   GLIBC_ABI_DT_RELR version the loader checks), so it is used only when the glibc it is
//!   built against has it.
//!
//! Only with the linker Rust uses by default on x86_64 Linux (rust-lld, which knows both
//! flags), for a native build; names in the order file the binary does not have are ignored.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=build/startup-order.txt");
    let env = |k: &str| std::env::var(k).unwrap_or_default();
    let order = std::path::Path::new(&env("CARGO_MANIFEST_DIR")).join("build/startup-order.txt");
    let flags = env("CARGO_ENCODED_RUSTFLAGS");
    let target = env("TARGET");
    let linker_env = format!(
        "CARGO_TARGET_{}_LINKER",
        target.to_uppercase().replace('-', "_")
    );
    let default_linker = target == "x86_64-unknown-linux-gnu"
        && !flags.contains("linker")
        && !flags.contains("fuse-ld")
        && std::env::var_os(&linker_env).is_none();
    if env("PROFILE") != "release" || !default_linker {
        return;
    }
    if order.is_file() {
        println!(
            "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
    if env("HOST") == target && glibc_at_least(2, 36) {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// The glibc this build script runs on (for a native build, the one the binary links
/// against) is `major.minor` or newer.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn glibc_at_least(major: u32, minor: u32) -> bool {
    unsafe extern "C" {
        fn gnu_get_libc_version() -> *const std::ffi::c_char;
    }
    // SAFETY: glibc returns a static NUL-terminated string such as "2.36".
    let v = unsafe { std::ffi::CStr::from_ptr(gnu_get_libc_version()) };
    let mut parts = v.to_str().unwrap_or("").split('.');
    let mut next = || {
        parts
            .next()
            .and_then(|p| p.parse::<u32>().ok())
            .unwrap_or(0)
    };
    (next(), next()) >= (major, minor)
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn glibc_at_least(_: u32, _: u32) -> bool {
    false
}
