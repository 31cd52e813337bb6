//! Function names from the executable's ELF symbol table, for the agent's periodic top-calls
//! log.
//!
//! Naming addresses through the debug information (inlined frames, files and lines) parses
//! tens of MiB of DWARF each time the agent logs its top calls. Here the executable's
//! function symbols are read once (their addresses only) and each new address's name is read
//! from the file when it is first seen; it names the function an address is in, without
//! inlined frames. The whole-run profile written at stop still goes through the debug
//! information. (What each costs: docs/details.md, "Measured choices".)

use std::fs::File;
use std::os::unix::fs::FileExt;

use super::Frame;

/// The executable's function symbols, sorted by address.
pub struct SymbolTable {
    /// Where the executable is loaded: runtime address = symbol value + bias.
    bias: u64,
    /// (start, end, offset of the name in the string table), by start.
    funcs: Vec<(u64, u64, u32)>,
    file: File,
    /// The string table's place in the file.
    strtab: (u64, u64),
}

/// The longest symbol name read (Rust's mangled names reach a few KiB).
const MAX_NAME: usize = 16 << 10;

/// The symbol table of a binary is a few MiB; past this it is not read.
const MAX_TABLE_BYTES: u64 = 64 << 20;

impl SymbolTable {
    /// The running executable's table; `None` where it has none (stripped) or is not a
    /// 64-bit ELF file.
    pub fn of_this_executable() -> Option<SymbolTable> {
        let file = File::open("/proc/self/exe").ok()?;
        let mut table = Self::read(file)?;
        table.bias = load_bias()?;
        Some(table)
    }

    /// The function symbols of `file`, read with `object`'s ELF reader through a cache that
    /// reads only the headers and the symbol table (dropped once the addresses are kept).
    fn read(file: File) -> Option<SymbolTable> {
        use object::elf::{FileHeader64, SHT_SYMTAB, STT_FUNC};
        use object::read::elf::{FileHeader, SectionHeader, Sym};
        let (funcs, strtab) = {
            let data = object::ReadCache::new(&file);
            let header = FileHeader64::<object::Endianness>::parse(&data).ok()?;
            let endian = header.endian().ok()?;
            let sections = header.sections(endian, &data).ok()?;
            let (index, section) = sections
                .enumerate()
                .find(|(_, s)| s.sh_type(endian) == SHT_SYMTAB)?;
            let strings = sections.section(object::SectionIndex(section.sh_link(endian) as usize));
            let strtab = strings.ok()?.file_range(endian)?;
            if section.sh_size(endian) > MAX_TABLE_BYTES || strtab.1 > MAX_TABLE_BYTES {
                return None;
            }
            let symbols =
                object::read::elf::SymbolTable::parse(endian, &data, &sections, index, section)
                    .ok()?;
            let mut funcs: Vec<(u64, u64, u32)> = symbols
                .symbols()
                .iter()
                .filter_map(|s| {
                    let (name, value, size) =
                        (s.st_name(endian), s.st_value(endian), s.st_size(endian));
                    (s.st_type() == STT_FUNC && size > 0 && value > 0 && u64::from(name) < strtab.1)
                        .then_some((value, value.saturating_add(size), name))
                })
                .collect();
            funcs.sort_unstable();
            funcs.shrink_to_fit();
            (funcs, strtab)
        };
        Some(SymbolTable {
            bias: 0,
            funcs,
            file,
            strtab,
        })
    }

    /// The NUL-terminated name at `offset` in the string table.
    fn name(&self, offset: u32) -> Option<String> {
        let start = self.strtab.0.checked_add(u64::from(offset))?;
        let room = (self.strtab.1 - u64::from(offset)).min(MAX_NAME as u64) as usize;
        let mut buf = vec![0u8; room];
        let mut got = 0;
        // Short names first: most fit in 512 bytes.
        let mut want = room.min(512);
        loop {
            let n = self
                .file
                .read_at(&mut buf[got..want], start + got as u64)
                .ok()?;
            got += n;
            if let Some(end) = buf[..got].iter().position(|&b| b == 0) {
                buf.truncate(end);
                return String::from_utf8(buf).ok();
            }
            if n == 0 || got >= room {
                return None;
            }
            want = room.min(want * 4).max(got + 1);
        }
    }

    /// The function `addr` (a runtime address) is in, as a frame with its demangled name
    /// and its mangled one as `system_name`.
    pub fn frame(&self, addr: u64) -> Option<Frame> {
        self.function(addr).map(|(frame, _)| frame)
    }

    /// The function `addr` (a runtime address) is in, and the runtime address it begins at.
    pub fn function(&self, addr: u64) -> Option<(Frame, u64)> {
        let value = addr.checked_sub(self.bias)?;
        let i = self.funcs.partition_point(|&(start, _, _)| start <= value);
        let &(start, end, name) = self.funcs.get(i.checked_sub(1)?)?;
        if value >= end {
            return None;
        }
        let raw = self.name(name)?;
        let function = format!("{:#}", rustc_demangle::demangle(&raw));
        let frame = Frame {
            system_name: (function != raw).then_some(raw),
            function,
            file: None,
            line: None,
        };
        Some((frame, start + self.bias))
    }
}

/// The executable's load bias (0 for a position-dependent one): the first object
/// `dl_iterate_phdr` reports is the program itself.
pub(crate) fn load_bias() -> Option<u64> {
    unsafe extern "C" fn first(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: the loader passes a valid info for the duration of the call, and `data` is
        // the `u64` below.
        #[allow(
            clippy::useless_conversion,
            reason = "the address is a u32 on 32-bit targets"
        )]
        unsafe {
            *data.cast::<u64>() = u64::from((*info).dlpi_addr)
        };
        1 // stop after the first
    }
    let mut bias = u64::MAX;
    // SAFETY: the callback writes only through the pointer to `bias`, which outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(first), (&raw mut bias).cast()) };
    (bias != u64::MAX).then_some(bias)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[inline(never)]
    fn a_function_with_a_name_to_find() -> usize {
        std::hint::black_box(42)
    }

    #[test]
    fn names_a_function_of_this_executable_from_its_address() {
        let table = SymbolTable::of_this_executable().expect("the test binary has a symtab");
        let addr = a_function_with_a_name_to_find as *const () as usize as u64;
        assert_eq!(a_function_with_a_name_to_find(), 42);
        let frame = table.frame(addr + 1).expect("named");
        assert!(
            frame
                .function
                .ends_with("symtab::tests::a_function_with_a_name_to_find"),
            "{frame:?}"
        );
        assert!(frame.system_name.unwrap().starts_with("_ZN"));
        assert!(table.frame(0).is_none());
        assert!(table.frame(u64::MAX).is_none());
    }

    #[test]
    fn what_is_not_a_64_bit_elf_file_has_no_table() {
        let dir = std::env::temp_dir().join(format!("agentprof-symtab-{}", std::process::id()));
        std::fs::write(&dir, b"#!/bin/sh\necho not elf\n").unwrap();
        assert!(SymbolTable::read(File::open(&dir).unwrap()).is_none());
        let mut truncated = b"\x7fELF\x02\x01".to_vec();
        truncated.resize(64, 0xff);
        std::fs::write(&dir, &truncated).unwrap();
        assert!(SymbolTable::read(File::open(&dir).unwrap()).is_none());
        std::fs::remove_file(&dir).unwrap();
    }
}
