//! Reading another process's memory (the Python worker's, agentprof being its parent) with
//! `process_vm_readv`: no code runs in the worker and it is never stopped.

use std::io;

/// The worker's address space, read a range at a time.
#[derive(Debug, Clone, Copy)]
pub struct Memory {
    pid: i32,
}

impl Memory {
    pub fn new(pid: u32) -> Memory {
        Memory { pid: pid as i32 }
    }

    /// Fills `buf` from `addr`; a short read (an unmapped page) is an error.
    pub fn read(&self, addr: u64, buf: &mut [u8]) -> io::Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        if addr == 0 || addr.checked_add(buf.len() as u64).is_none() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("no memory at {addr:#x}"),
            ));
        }
        #[cfg(not(target_os = "linux"))]
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "reading another process's memory is Linux-only here",
        ));
        #[cfg(target_os = "linux")]
        self.read_linux(addr, buf)
    }

    #[cfg(target_os = "linux")]
    fn read_linux(&self, addr: u64, buf: &mut [u8]) -> io::Result<()> {
        let local = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        let remote = libc::iovec {
            iov_base: addr as *mut libc::c_void,
            iov_len: buf.len(),
        };
        // SAFETY: one local iovec over `buf`, which we own for the call; the remote one is
        // only an address in the other process, checked by the kernel.
        let n = unsafe { libc::process_vm_readv(self.pid, &local, 1, &remote, 1, 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if n as usize != buf.len() {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("read {n} of {} bytes at {addr:#x}", buf.len()),
            ));
        }
        Ok(())
    }

    pub fn u64(&self, addr: u64) -> io::Result<u64> {
        let mut b = [0u8; 8];
        self.read(addr, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    /// A NUL-terminated C string of at most `max` bytes (a type's name).
    pub fn c_string(&self, addr: u64, max: usize) -> io::Result<String> {
        let mut b = vec![0u8; max];
        // The string may end close to the end of its page: read less until a read succeeds.
        let mut len = max;
        loop {
            match self.read(addr, &mut b[..len]) {
                Ok(()) => break,
                Err(e) if len <= 8 => return Err(e),
                Err(_) => len /= 2,
            }
        }
        let end = b[..len].iter().position(|&c| c == 0).unwrap_or(len);
        Ok(String::from_utf8_lossy(&b[..end]).into_owned())
    }
}

/// A little-endian u64 at `off` of `buf`, 0 past its end.
pub fn field_u64(buf: &[u8], off: u64) -> u64 {
    let off = off as usize;
    buf.get(off..off + 8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

/// A little-endian i32 at `off` of `buf`, 0 past its end.
pub fn field_i32(buf: &[u8], off: u64) -> i32 {
    let off = off as usize;
    buf.get(off..off + 4)
        .and_then(|b| b.try_into().ok())
        .map_or(0, i32::from_le_bytes)
}
