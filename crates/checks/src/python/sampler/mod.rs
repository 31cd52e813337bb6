//! A Python check's `--profile`: its stacks sampled while `run()` runs, as py-spy samples
//! them, rather than traced (cProfile's per-call cost turns a check of many small calls
//! into its hot spot). Where the worker's interpreter can be read from outside (CPython
//! 3.11 and later, release builds with the GIL), agentprof reads its frames with
//! `process_vm_readv` from a thread of its own: nothing runs in the worker. Elsewhere the
//! worker samples itself from a thread (`sys._current_frames()`), whose cost is reported.
//! Both give the same [`Samples`]: per stack, wall and CPU nanoseconds.

mod elf;
mod layout;
mod linetable;
mod memory;
mod reader;
mod samples;
mod thread;

pub use layout::Unreadable;
pub use samples::{FunctionTime, SampledFrame, Samples, Values};
pub use thread::Running;

use memory::Memory;
pub use reader::Reader;

/// How a Python check's calls are profiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profiler {
    /// Stacks sampled at this frequency (outside the worker where it can be read).
    Sample { hz: u32 },
    /// cProfile: every call traced, exact counts, a cost per call.
    CProfile,
}

/// What the worker said of its interpreter at load.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Interpreter {
    /// `sys.implementation.name`.
    pub implementation: String,
    /// `sys.hexversion`.
    pub hexversion: u64,
    /// `sys.abiflags` ("d" for a debug build, "t" for a free-threaded one).
    pub abiflags: String,
}

/// How this worker's stacks are sampled.
pub enum Method {
    /// Read from outside by agentprof.
    Outside(Box<Reader>),
    /// By a thread in the worker, with why agentprof could not read it.
    InWorker { why: Unreadable },
}

impl Method {
    /// For the report: which sampler runs, and where.
    pub fn describe(&self) -> String {
        match self {
            Method::Outside(r) => {
                let (major, minor) = r.layout().version;
                format!(
                    "sampled from outside the worker (CPython {major}.{minor}, process_vm_readv): no code runs in the check's process"
                )
            }
            Method::InWorker { why } => format!(
                "sampled by a thread in the worker (sys._current_frames), which costs the run some CPU: {why}"
            ),
        }
    }
}

/// Finds how to sample worker `pid`: from outside where its interpreter allows, else in
/// the worker, with the reason.
pub fn attach(pid: u32, interp: &Interpreter) -> Method {
    match outside_reader(pid, interp) {
        Ok(r) => Method::Outside(Box::new(r)),
        Err(why) => Method::InWorker { why },
    }
}

fn outside_reader(pid: u32, interp: &Interpreter) -> Result<Reader, Unreadable> {
    if interp.implementation != "cpython" {
        return Err(Unreadable::Implementation(interp.implementation.clone()));
    }
    let (major, minor) = (
        (interp.hexversion >> 24) as u8,
        (interp.hexversion >> 16) as u8,
    );
    if interp.abiflags.contains('t') {
        return Err(Unreadable::FreeThreaded);
    }
    if interp.abiflags.contains('d') {
        return Err(Unreadable::DebugBuild(interp.abiflags.clone()));
    }
    if (major, minor) < (3, 11) {
        return Err(Unreadable::Version(major, minor));
    }
    let mem = Memory::new(pid);
    let (runtime, _file) =
        elf::find_symbol(pid, "_PyRuntime").map_err(|e| Unreadable::Other(e.to_string()))?;
    let layout = match layout::Layout::known(major, minor) {
        Some(l) => l,
        None if (major, minor) >= (3, 13) => {
            layout::Layout::from_debug_offsets(&mem, runtime, interp.hexversion)?
        }
        None => return Err(Unreadable::Version(major, minor)),
    };
    let mut reader = Reader::new(mem, layout, runtime);
    // Read now, so a reader that cannot see the worker (ptrace restrictions, a layout that
    // does not fit) is found before any run, not as a profile of nothing. The worker waits
    // for its next message; a read that met it still returning from the last is tried again.
    let mut why = Unreadable::Other("not read".into());
    for _ in 0..50 {
        match main_stack_is_the_hosts(&mut reader, pid) {
            Ok(()) => return Ok(reader),
            Err(e) => why = e,
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    Err(why)
}

/// The worker's main thread is found, and its stack is the host's (its frames from stdin).
fn main_stack_is_the_hosts(reader: &mut Reader, pid: u32) -> Result<(), Unreadable> {
    let threads = reader.threads().map_err(|t| {
        Unreadable::Other(format!(
            "reading the worker's threads failed ({}); if ptrace is restricted (kernel.yama.ptrace_scope, a container without CAP_SYS_PTRACE) agentprof cannot read its child",
            t.0
        ))
    })?;
    match threads.iter().find(|(tid, _)| *tid == pid) {
        Some(&(_, frame)) if frame != 0 => {
            let stack = reader
                .stack(frame)
                .map_err(|t| Unreadable::Other(format!("the main thread's stack: {}", t.0)))?;
            if stack.iter().any(|f| f.code.filename == samples::HOST_FILE) {
                Ok(())
            } else {
                Err(Unreadable::Other(
                    "the main thread's stack does not look like the worker's".into(),
                ))
            }
        }
        _ => Err(Unreadable::Other(format!(
            "no thread of the worker has its process id ({pid}) and a frame: the layout does not fit this interpreter"
        ))),
    }
}
