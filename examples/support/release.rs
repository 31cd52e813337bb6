//! Shared by the bench examples (`#[path]`-included; not an example itself).

/// The release agentprof beside this example's build: `<target dir>/release/agentprof`, found
/// from where cargo put this example (`<target dir>/<profile>/examples/`), whichever target
/// directory and profile that is.
pub fn release_agentprof() -> String {
    let exe = std::env::current_exe().expect("this example's path");
    let dir = exe
        .ancestors()
        .nth(3)
        .expect("<target dir>/<profile>/examples/<name>");
    dir.join("release/agentprof").to_string_lossy().into_owned()
}
