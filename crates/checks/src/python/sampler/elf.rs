//! Where the worker's interpreter keeps `_PyRuntime`: the symbol in the ELF file that
//! defines it (libpython, or the python executable itself), moved by where that file is
//! mapped in the worker (/proc/PID/maps).

use std::fs::File;
use std::path::{Path, PathBuf};

#[cfg(target_os = "linux")]
use object::elf::{FileHeader64, PT_LOAD, SHT_DYNSYM, SHT_SYMTAB};
#[cfg(target_os = "linux")]
use object::read::elf::{FileHeader, ProgramHeader, SectionHeader, Sym};

use crate::Error;

/// A symbol table past this is not read (libpython's is well under 1 MiB).
#[cfg(target_os = "linux")]
const MAX_TABLE_BYTES: u64 = 64 << 20;

/// The address of `symbol` in process `pid`, and the file that defines it; or why not.
pub fn find_symbol(pid: u32, symbol: &str) -> Result<(u64, PathBuf), Error> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps"))
        .map_err(|e| Error::Symbol(format!("cannot read /proc/{pid}/maps: {e}")))?;
    let candidates = python_files(&maps);
    if candidates.is_empty() {
        return Err(Error::Symbol(
            "no python executable or libpython is mapped in the worker".into(),
        ));
    }
    for (path, start) in &candidates {
        let Ok(file) = File::open(path) else { continue };
        if let Some((value, first_load)) = symbol_in(&file, symbol) {
            let bias = start.wrapping_sub(first_load & !0xfff);
            return Ok((value.wrapping_add(bias), path.clone()));
        }
    }
    let names: Vec<String> = candidates
        .iter()
        .map(|(p, _)| p.display().to_string())
        .collect();
    Err(Error::Symbol(format!(
        "{symbol} is not in the symbol tables of {} (stripped?)",
        names.join(", ")
    )))
}

/// Files mapped from offset 0 whose name says Python (libpython3.X.so…, python3.X), with
/// their start address; libpython first, as it defines the runtime when there is one.
fn python_files(maps: &str) -> Vec<(PathBuf, u64)> {
    let mut out: Vec<(PathBuf, u64)> = Vec::new();
    for line in maps.lines() {
        let mut f = line.split_whitespace();
        let (Some(range), Some(_perms), Some(offset), Some(_dev), Some(_inode)) =
            (f.next(), f.next(), f.next(), f.next(), f.next())
        else {
            continue;
        };
        let Some(path) = f.next().filter(|p| p.starts_with('/')) else {
            continue;
        };
        if u64::from_str_radix(offset, 16) != Ok(0) {
            continue;
        }
        let name = Path::new(path)
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("");
        if !(name.starts_with("libpython") || name.starts_with("python")) {
            continue;
        }
        let Some(start) = range
            .split('-')
            .next()
            .and_then(|s| u64::from_str_radix(s, 16).ok())
        else {
            continue;
        };
        if !out.iter().any(|(p, _)| p == Path::new(path)) {
            out.push((PathBuf::from(path), start));
        }
    }
    out.sort_by_key(|(p, _)| {
        !p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("libpython"))
    });
    out
}

/// Elsewhere agentprof does not read ELF files (the sampler reads Linux's /proc).
#[cfg(not(target_os = "linux"))]
fn symbol_in(_file: &File, _symbol: &str) -> Option<(u64, u64)> {
    None
}

/// `symbol`'s value in `file` (its dynamic symbols, then its full table) and the lowest
/// address of its loadable segments.
#[cfg(target_os = "linux")]
fn symbol_in(file: &File, symbol: &str) -> Option<(u64, u64)> {
    let data = object::ReadCache::new(file);
    let header = FileHeader64::<object::Endianness>::parse(&data).ok()?;
    let endian = header.endian().ok()?;
    let first_load = header
        .program_headers(endian, &data)
        .ok()?
        .iter()
        .filter(|p| p.p_type(endian) == PT_LOAD)
        .map(|p| p.p_vaddr(endian))
        .min()?;
    let sections = header.sections(endian, &data).ok()?;
    for kind in [SHT_DYNSYM, SHT_SYMTAB] {
        let Some((index, section)) = sections
            .enumerate()
            .find(|(_, s)| s.sh_type(endian) == kind)
        else {
            continue;
        };
        if section.sh_size(endian) > MAX_TABLE_BYTES {
            continue;
        }
        let Ok(table) =
            object::read::elf::SymbolTable::parse(endian, &data, &sections, index, section)
        else {
            continue;
        };
        let found = table.symbols().iter().find(|s| {
            s.st_value(endian) != 0 && table.symbol_name(endian, *s).ok() == Some(symbol.as_bytes())
        });
        if let Some(s) = found {
            return Some((s.st_value(endian), first_load));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libpython_before_the_executable_and_only_offset_zero() {
        let maps = "\
5600-5700 r--p 00000000 08:01 11 /usr/local/bin/python3.13
5700-5800 r-xp 00001000 08:01 11 /usr/local/bin/python3.13
7f00-7f10 r--p 00000000 08:01 12 /usr/lib/libpython3.13.so.1.0
7f10-7f20 r-xp 00010000 08:01 12 /usr/lib/libpython3.13.so.1.0
7f30-7f40 r--p 00000000 08:01 13 /usr/lib/libc.so.6
7f50-7f60 rw-p 00000000 00:00 0 [heap]
";
        let files = python_files(maps);
        assert_eq!(
            files,
            [
                (PathBuf::from("/usr/lib/libpython3.13.so.1.0"), 0x7f00),
                (PathBuf::from("/usr/local/bin/python3.13"), 0x5600)
            ]
        );
    }
}
