//! Thin binary: parse arguments, call the library, map the outcome to one exit-code policy.

use std::process::ExitCode;

fn main() -> ExitCode {
    agentprof::cmd::main()
}

/// `pow` and `exp`, the only two functions of the C math library the binary calls (tokio's
/// scheduler statistics, indicatif's rate estimate, agentprof's gate statistics and legacy heap
/// profiles' unsampling), defined here from the `libm` crate. The linker then resolves them in
/// the binary and drops `libm.so.6`, which every start mapped and relocated: 0.55 MiB of a
/// `check disk`'s resident set. `libm` ports fdlibm's algorithms (as Go's `math.Exp` does),
/// within one ulp as glibc's are; a unit test (`gate::stats`) checks the two agree within
/// one ulp and give the same unsampled heap counts, a CLI test that no math library loads.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod math {
    #[unsafe(no_mangle)]
    pub extern "C" fn pow(x: f64, y: f64) -> f64 {
        libm::pow(x, y)
    }

    #[unsafe(no_mangle)]
    pub extern "C" fn exp(x: f64) -> f64 {
        libm::exp(x)
    }
}
