//! Where the fields the reader needs sit in CPython's structures. CPython 3.13 and later
//! publish them in `_Py_DebugOffsets`, the first member of `_PyRuntime` (what debuggers and
//! CPython 3.15's own sampler read); for 3.11 and 3.12 they are the layout of a release
//! build of each, measured with `offsetof` against that version's headers (stable across its
//! patch releases). Older versions keep their frames elsewhere: they get the in-worker sampler.

use super::memory::{Memory, field_u64};

/// How a thread state leads to its innermost frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FramePath {
    /// `tstate->current_frame` (3.13+).
    Direct(u64),
    /// `tstate->cframe->current_frame` (3.11, 3.12).
    ViaCFrame { cframe: u64, current: u64 },
}

/// Offsets of one CPython minor version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub version: (u8, u8),
    pub runtime_interpreters_head: u64,
    pub interp_next: u64,
    pub interp_threads_head: u64,
    pub tstate_size: u64,
    pub tstate_next: u64,
    pub tstate_native_id: u64,
    pub tstate_frame: FramePath,
    pub frame_size: u64,
    pub frame_previous: u64,
    pub frame_code: u64,
    pub frame_instr: u64,
    pub frame_owner: u64,
    pub code_filename: u64,
    pub code_name: u64,
    pub code_qualname: u64,
    pub code_linetable: u64,
    pub code_firstlineno: u64,
    pub code_adaptive: u64,
    pub ob_type: u64,
    pub tp_name: u64,
    pub bytes_size: u64,
    pub bytes_data: u64,
    pub unicode_length: u64,
    pub unicode_state: u64,
    /// Where a compact ASCII string's characters start (sizeof PyASCIIObject).
    pub ascii_data: u64,
    /// Where another compact string's start (sizeof PyCompactUnicodeObject).
    pub compact_data: u64,
}

/// `_PyInterpreterFrame.owner` of a shim frame the C stack owns (3.12+): not Python code.
pub const OWNED_BY_CSTACK: u8 = 3;

/// Why the worker's interpreter cannot be read from outside.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unreadable {
    #[error("CPython {0}.{1} keeps its frames where only an in-process sampler sees them")]
    Version(u8, u8),
    #[error("CPython {0}.{1} is newer than the layouts this agentprof knows")]
    Newer(u8, u8),
    #[error("{0} is not CPython")]
    Implementation(String),
    #[error("a debug build of CPython (abiflags {0:?}) lays its objects out differently")]
    DebugBuild(String),
    #[error("the free-threaded (no-GIL) build of CPython is not read from outside yet")]
    FreeThreaded,
    #[error("_PyRuntime's debug offsets are not there (cookie {0:?})")]
    Cookie(String),
    #[error("the debug offsets say CPython {found:#x}, the worker said {said:#x}")]
    Mismatch { found: u64, said: u64 },
    #[error("{0}")]
    Other(String),
}

impl Layout {
    /// The layout of a 3.11 or 3.12 release build.
    pub fn known(major: u8, minor: u8) -> Option<Layout> {
        let common = Layout {
            version: (major, minor),
            runtime_interpreters_head: 40,
            interp_next: 0,
            interp_threads_head: 16,
            tstate_size: 360,
            tstate_next: 8,
            tstate_native_id: 160,
            tstate_frame: FramePath::ViaCFrame {
                cframe: 56,
                current: 8,
            },
            frame_size: 80,
            frame_previous: 48,
            frame_code: 32,
            frame_instr: 56,
            frame_owner: 69,
            code_filename: 112,
            code_name: 120,
            code_qualname: 128,
            code_linetable: 136,
            code_firstlineno: 72,
            code_adaptive: 184,
            ob_type: 8,
            tp_name: 24,
            bytes_size: 16,
            bytes_data: 32,
            unicode_length: 16,
            unicode_state: 32,
            ascii_data: 48,
            compact_data: 72,
        };
        match (major, minor) {
            (3, 11) => Some(common),
            (3, 12) => Some(Layout {
                interp_threads_head: 72,
                tstate_size: 288,
                tstate_native_id: 144,
                tstate_frame: FramePath::ViaCFrame {
                    cframe: 56,
                    current: 0,
                },
                frame_previous: 8,
                frame_code: 0,
                frame_owner: 70,
                code_firstlineno: 68,
                code_adaptive: 192,
                ascii_data: 40,
                compact_data: 56,
                ..common
            }),
            _ => None,
        }
    }

    /// The layout `_Py_DebugOffsets` at `runtime` describes (CPython 3.13); `hexversion` is
    /// what the worker said it runs, checked against the table's own.
    pub fn from_debug_offsets(
        mem: &Memory,
        runtime: u64,
        hexversion: u64,
    ) -> Result<Layout, Unreadable> {
        // cookie, version, free_threaded, then 3.13's groups of u64 fields.
        let mut buf = vec![0u8; 8 * 80];
        mem.read(runtime, &mut buf)
            .map_err(|e| Unreadable::Other(format!("cannot read _PyRuntime: {e}")))?;
        if &buf[..8] != b"xdebugpy" {
            return Err(Unreadable::Cookie(
                String::from_utf8_lossy(&buf[..8]).into_owned(),
            ));
        }
        let f = |i: u64| field_u64(&buf, 8 * i);
        let version = f(1);
        if version >> 16 != hexversion >> 16 {
            return Err(Unreadable::Mismatch {
                found: version,
                said: hexversion,
            });
        }
        let (major, minor) = ((version >> 24) as u8, (version >> 16) as u8);
        if (major, minor) != (3, 13) {
            return Err(Unreadable::Newer(major, minor));
        }
        if f(2) != 0 {
            return Err(Unreadable::FreeThreaded);
        }
        // Every offset read (and the sizes of a thread state and a frame) is well under 64 KiB;
        // a table that says otherwise is not one.
        let used = [
            5, 8, 9, 19, 21, 23, 25, 28, 29, 30, 31, 33, 35, 36, 37, 38, 39, 43, 45, 47,
        ];
        if used
            .iter()
            .chain(&[65, 66, 68, 69, 70])
            .any(|&i| f(i) >= 1 << 16)
        {
            return Err(Unreadable::Other(
                "_Py_DebugOffsets holds an offset no CPython structure has".into(),
            ));
        }
        // Field indexes below follow 3.13's struct: runtime_state at 3, interpreter_state at
        // 6, thread_state at 19, interpreter_frame at 28, code_object at 34, pyobject at 44,
        // type_object at 46, tuple 50, list 53, dict 56, float 59, long 61, bytes 64,
        // unicode 67.
        Ok(Layout {
            version: (major, minor),
            runtime_interpreters_head: f(5),
            interp_next: f(8),
            interp_threads_head: f(9),
            tstate_size: f(19),
            tstate_next: f(21),
            tstate_native_id: f(25),
            tstate_frame: FramePath::Direct(f(23)),
            frame_size: f(28),
            frame_previous: f(29),
            frame_code: f(30),
            frame_instr: f(31),
            frame_owner: f(33),
            code_filename: f(35),
            code_name: f(36),
            code_qualname: f(37),
            code_linetable: f(38),
            code_firstlineno: f(39),
            code_adaptive: f(43),
            ob_type: f(45),
            tp_name: f(47),
            bytes_size: f(65),
            bytes_data: f(66),
            unicode_length: f(69),
            unicode_state: f(68),
            ascii_data: f(70),
            compact_data: f(70).wrapping_add(16),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_versions_measured_have_a_table() {
        assert!(Layout::known(3, 10).is_none());
        assert!(Layout::known(3, 13).is_none(), "3.13 publishes its own");
        let l11 = Layout::known(3, 11).expect("3.11");
        let l12 = Layout::known(3, 12).expect("3.12");
        assert_eq!(l11.frame_code, 32);
        assert_eq!(l12.frame_code, 0);
        assert_ne!(l11.tstate_frame, l12.tstate_frame);
    }
}
