//! The worker's Python threads and their stacks, read from outside through a [`Layout`]:
//! thread states from `_PyRuntime`'s interpreters, frames from each thread's innermost one,
//! names and lines from the code objects (kept once read: a run's code objects live on).
//!
//! The worker is never stopped, so a stack can change while it is read: every pointer is
//! checked (a code object must have the type named "code"), a chain is at most
//! [`MAX_DEPTH`] frames, and a stack that does not check is dropped and counted, never
//! recorded half right.

use std::collections::HashMap;
use std::sync::Arc;

use super::layout::{FramePath, Layout, OWNED_BY_CSTACK};
use super::linetable;
use super::memory::{Memory, field_i32, field_u64};

/// Deepest stack read; a longer chain is taken as a torn read.
pub const MAX_DEPTH: usize = 1024;
/// Most threads read per sample.
const MAX_THREADS: usize = 4096;
/// Longest name or file name read.
const MAX_STRING: u64 = 4096;
/// Largest line table read.
const MAX_LINETABLE: u64 = 1 << 20;

/// What a code object says of itself.
#[derive(Debug)]
pub struct CodeInfo {
    pub filename: String,
    pub qualname: String,
    pub firstlineno: i32,
    linetable: Vec<u8>,
    /// Where its instructions start in the worker.
    code_start: u64,
}

/// One frame of a stack: its code and line.
#[derive(Debug, Clone)]
pub struct PyFrame {
    pub code: Arc<CodeInfo>,
    pub line: i32,
}

/// Why one read failed: the stack moved under the reader, or memory could not be read.
#[derive(Debug)]
pub struct Torn(pub String);

pub struct Reader {
    mem: Memory,
    layout: Layout,
    runtime: u64,
    codes: HashMap<u64, Arc<CodeInfo>>,
    /// Type objects whose tp_name was read: is it "code".
    types: HashMap<u64, bool>,
    frame_buf: Vec<u8>,
    tstate_buf: Vec<u8>,
}

impl Reader {
    pub fn new(mem: Memory, layout: Layout, runtime: u64) -> Reader {
        Reader {
            frame_buf: vec![0; layout.frame_size.clamp(8, 4096) as usize],
            tstate_buf: vec![0; layout.tstate_size.clamp(8, 1 << 16) as usize],
            mem,
            layout,
            runtime,
            codes: HashMap::new(),
            types: HashMap::new(),
        }
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Every thread of every interpreter, with its innermost frame's address (0: none).
    pub fn threads(&mut self) -> Result<Vec<(u32, u64)>, Torn> {
        let l = &self.layout;
        let mut out = Vec::new();
        let mut interp = self
            .mem
            .u64(self.runtime.wrapping_add(l.runtime_interpreters_head))
            .map_err(|e| Torn(format!("interpreters: {e}")))?;
        let mut interps = 0;
        while interp != 0 && interps < 64 {
            interps += 1;
            let mut ts = self
                .mem
                .u64(interp.wrapping_add(l.interp_threads_head))
                .map_err(|e| Torn(format!("threads: {e}")))?;
            while ts != 0 {
                if out.len() >= MAX_THREADS {
                    return Err(Torn("too many threads: a torn list".into()));
                }
                self.mem
                    .read(ts, &mut self.tstate_buf)
                    .map_err(|e| Torn(format!("thread state: {e}")))?;
                let tid = field_u64(&self.tstate_buf, l.tstate_native_id) as u32;
                let frame = match l.tstate_frame {
                    FramePath::Direct(off) => field_u64(&self.tstate_buf, off),
                    FramePath::ViaCFrame { cframe, current } => {
                        match field_u64(&self.tstate_buf, cframe) {
                            0 => 0,
                            cf => self
                                .mem
                                .u64(cf.wrapping_add(current))
                                .map_err(|e| Torn(format!("cframe: {e}")))?,
                        }
                    }
                };
                out.push((tid, frame));
                ts = field_u64(&self.tstate_buf, l.tstate_next);
            }
            interp = self
                .mem
                .u64(interp.wrapping_add(l.interp_next))
                .map_err(|e| Torn(format!("next interpreter: {e}")))?;
        }
        Ok(out)
    }

    /// The stack from frame `first`, innermost first.
    pub fn stack(&mut self, first: u64) -> Result<Vec<PyFrame>, Torn> {
        let mut frames = Vec::new();
        let mut at = first;
        while at != 0 {
            if frames.len() >= MAX_DEPTH {
                return Err(Torn("a frame chain longer than the deepest stack".into()));
            }
            self.mem
                .read(at, &mut self.frame_buf)
                .map_err(|e| Torn(format!("frame: {e}")))?;
            let l = &self.layout;
            let owner = self
                .frame_buf
                .get(l.frame_owner as usize)
                .copied()
                .unwrap_or(0);
            let previous = field_u64(&self.frame_buf, l.frame_previous);
            let code_addr = field_u64(&self.frame_buf, l.frame_code);
            let instr = field_u64(&self.frame_buf, l.frame_instr);
            if l.version >= (3, 12) && owner == OWNED_BY_CSTACK {
                at = previous;
                continue;
            }
            let code = self.code(code_addr)?;
            let offset = (instr as i64).wrapping_sub(code.code_start as i64);
            let line = linetable::line_at(&code.linetable, code.firstlineno, offset)
                .unwrap_or(code.firstlineno);
            frames.push(PyFrame { code, line });
            at = previous;
        }
        Ok(frames)
    }

    /// The code object at `addr`, read once.
    fn code(&mut self, addr: u64) -> Result<Arc<CodeInfo>, Torn> {
        if let Some(c) = self.codes.get(&addr) {
            return Ok(c.clone());
        }
        if !self.is_code(addr)? {
            return Err(Torn(format!("{addr:#x} is not a code object")));
        }
        let l = self.layout.clone();
        let len = [
            l.code_filename,
            l.code_name,
            l.code_qualname,
            l.code_linetable,
            l.code_firstlineno,
        ]
        .into_iter()
        .max()
        .unwrap_or(0)
        .min(4096)
            + 8;
        let mut buf = vec![0u8; len as usize];
        self.mem
            .read(addr, &mut buf)
            .map_err(|e| Torn(format!("code object: {e}")))?;
        let filename = self.string(field_u64(&buf, l.code_filename))?;
        let qualname = match self.string(field_u64(&buf, l.code_qualname)) {
            Ok(q) if !q.is_empty() => q,
            _ => self.string(field_u64(&buf, l.code_name))?,
        };
        let linetable = self.bytes(field_u64(&buf, l.code_linetable))?;
        let info = Arc::new(CodeInfo {
            filename,
            qualname,
            firstlineno: field_i32(&buf, l.code_firstlineno),
            linetable,
            code_start: addr.wrapping_add(l.code_adaptive),
        });
        self.codes.insert(addr, info.clone());
        Ok(info)
    }

    /// Whether the object at `addr` is a code object: its type's name is "code".
    fn is_code(&mut self, addr: u64) -> Result<bool, Torn> {
        let ty = self
            .mem
            .u64(addr.wrapping_add(self.layout.ob_type))
            .map_err(|e| Torn(format!("object type: {e}")))?;
        if let Some(&known) = self.types.get(&ty) {
            return Ok(known);
        }
        let name_ptr = self
            .mem
            .u64(ty.wrapping_add(self.layout.tp_name))
            .map_err(|e| Torn(format!("type name: {e}")))?;
        let name = self
            .mem
            .c_string(name_ptr, 32)
            .map_err(|e| Torn(format!("type name: {e}")))?;
        let is = name == "code";
        self.types.insert(ty, is);
        Ok(is)
    }

    /// A `str` object's text (compact strings: ASCII, or 1, 2 or 4 bytes a character).
    fn string(&self, addr: u64) -> Result<String, Torn> {
        let l = &self.layout;
        let mut head = [0u8; 8];
        self.mem
            .read(addr.wrapping_add(l.unicode_length), &mut head)
            .map_err(|e| Torn(format!("str: {e}")))?;
        let length = u64::from_le_bytes(head);
        let mut st = [0u8; 4];
        self.mem
            .read(addr.wrapping_add(l.unicode_state), &mut st)
            .map_err(|e| Torn(format!("str: {e}")))?;
        let state = u32::from_le_bytes(st);
        let (kind, compact, ascii) = ((state >> 2) & 7, state >> 5 & 1 == 1, state >> 6 & 1 == 1);
        if !compact || !matches!(kind, 1 | 2 | 4) {
            return Err(Torn("a str that is not compact".into()));
        }
        let chars = length.min(MAX_STRING);
        let data = addr.wrapping_add(if ascii { l.ascii_data } else { l.compact_data });
        let mut raw = vec![0u8; (chars * u64::from(kind)) as usize];
        self.mem
            .read(data, &mut raw)
            .map_err(|e| Torn(format!("str data: {e}")))?;
        Ok(match kind {
            1 => raw.iter().map(|&b| char::from(b)).collect(),
            2 => raw
                .chunks_exact(2)
                .map(|c| char::from_u32(u32::from(u16::from_le_bytes([c[0], c[1]]))).unwrap_or('?'))
                .collect(),
            _ => raw
                .chunks_exact(4)
                .map(|c| {
                    char::from_u32(u32::from_le_bytes([c[0], c[1], c[2], c[3]])).unwrap_or('?')
                })
                .collect(),
        })
    }

    /// A `bytes` object's contents.
    fn bytes(&self, addr: u64) -> Result<Vec<u8>, Torn> {
        let l = &self.layout;
        let size = self
            .mem
            .u64(addr.wrapping_add(l.bytes_size))
            .map_err(|e| Torn(format!("bytes: {e}")))?;
        if size > MAX_LINETABLE {
            return Err(Torn(format!("a {size}-byte line table")));
        }
        let mut out = vec![0u8; size as usize];
        self.mem
            .read(addr.wrapping_add(l.bytes_data), &mut out)
            .map_err(|e| Torn(format!("bytes data: {e}")))?;
        Ok(out)
    }
}
