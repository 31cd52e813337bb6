//! Files and lines of a finished profile's addresses, from the executable's DWARF line
//! tables, read only where the sampled addresses are.
//!
//! The release build keeps line tables only (`debug = "line-directives-only"`) and its linker
//! compresses them (build.rs): the function an address is in is named from the symbol table
//! (`symtab.rs`), its file and line from here. Only the compilation units the addresses fall
//! in are read, their line programs streamed once for all of the unit's addresses, so
//! nothing grows with the size of the program: naming a profile's few hundred addresses
//! costs the line tables' inflated size at most (about 14 MB), for the time it takes.
//! A debug build's whole DWARF is in its executable and read the same way (its sections are
//! mapped, not read, and only the line programs are looked at).

use std::fs::File;
use std::path::Path;

use object::{Object, ObjectSection};

type Reader<'a> = gimli::EndianSlice<'a, gimli::RunTimeEndian>;

/// A source position: the file's path (as the build recorded it) and its line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Position {
    pub file: String,
    pub line: Option<u32>,
}

/// An inflated section bigger than this is not read (a release build's line tables are
/// about 14 MB).
const MAX_INFLATED: u64 = 256 << 20;

/// A read-only private mapping of a whole file, unmapped on drop.
struct Mapped {
    ptr: *mut std::ffi::c_void,
    len: usize,
}

impl Mapped {
    fn open(path: &Path) -> Option<Mapped> {
        let file = File::open(path).ok()?;
        let len = usize::try_from(file.metadata().ok()?.len()).ok()?;
        if len == 0 {
            return None;
        }
        use rustix::mm::{MapFlags, ProtFlags, mmap};
        // SAFETY: a fresh private read-only mapping of a whole file; nothing else aliases it,
        // and it lives until `drop`. The file is this process's executable, which an install
        // replaces by renaming a new file over it, so the mapped pages stay as they were.
        let ptr = unsafe {
            mmap(
                std::ptr::null_mut(),
                len,
                ProtFlags::READ,
                MapFlags::PRIVATE,
                &file,
                0,
            )
        }
        .ok()?;
        Some(Mapped { ptr, len })
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` maps `len` readable bytes for as long as `self` lives.
        unsafe { std::slice::from_raw_parts(self.ptr.cast::<u8>(), self.len) }
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are the mapping made in `open`; no slice of it outlives `self`.
        let _ = unsafe { rustix::mm::munmap(self.ptr, self.len) };
    }
}

/// A section's bytes: where they are in the mapped file, or inflated from it.
enum Bytes {
    InFile(std::ops::Range<usize>),
    Inflated(Vec<u8>),
}

/// The named section's bytes (inflated when the linker compressed it), or none when the
/// file has no such section or it cannot be read.
fn section(file: &object::File<'_>, data: &[u8], name: &str) -> Bytes {
    let none = Bytes::InFile(0..0);
    let Some(range) = file
        .section_by_name(name)
        .and_then(|s| s.compressed_file_range().ok())
    else {
        return none;
    };
    let start = usize::try_from(range.offset).unwrap_or(usize::MAX);
    let len = usize::try_from(range.compressed_size).unwrap_or(usize::MAX);
    let Some(stored) = start
        .checked_add(len)
        .filter(|&end| end <= data.len())
        .map(|end| start..end)
    else {
        return none;
    };
    match range.format {
        object::CompressionFormat::None => Bytes::InFile(stored),
        _ if range.uncompressed_size > MAX_INFLATED => none,
        object::CompressionFormat::Zstandard => {
            unzstd(&data[stored], range.uncompressed_size as usize).map_or(none, Bytes::Inflated)
        }
        object::CompressionFormat::Zlib => {
            inflate(&data[stored], range.uncompressed_size as usize).map_or(none, Bytes::Inflated)
        }
        _ => none,
    }
}

/// zstd frames decompressed to exactly `size` bytes, or `None` when they do not hold them.
/// The linker compresses a section in shards, one frame each, one after another.
fn unzstd(compressed: &[u8], size: usize) -> Option<Vec<u8>> {
    use std::io::Read;
    let window = MAX_INFLATED.max(1 << 10);
    let mut rest = compressed;
    let mut out = Vec::with_capacity(size);
    while !rest.is_empty() && out.len() <= size {
        let decoder =
            ruzstd::decoding::StreamingDecoder::new_with_max_window_size(&mut rest, window).ok()?;
        let room = (size - out.len()) as u64 + 1;
        decoder.take(room).read_to_end(&mut out).ok()?;
    }
    (out.len() == size).then_some(out)
}

/// A zlib stream inflated to exactly `size` bytes, or `None` when it does not hold them.
fn inflate(deflated: &[u8], size: usize) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(size);
    let mut z = flate2::Decompress::new(true);
    let status = z
        .decompress_vec(deflated, &mut out, flate2::FlushDecompress::Finish)
        .ok()?;
    (status == flate2::Status::StreamEnd && out.len() == size).then_some(out)
}

/// This executable's line tables, inflated, with where each of their sequences is.
struct LineTables {
    exe: Mapped,
    lines: Bytes,
    strings: (Bytes, Bytes),
    endian: gimli::RunTimeEndian,
    address_size: u8,
    /// (first address, end address, offset of its line program), by first address.
    sequences: Vec<(u64, u64, usize)>,
    /// What reading them cost: seconds, and resident memory added.
    seconds: f64,
    rss_growth: u64,
}

// SAFETY: the mapping is read-only and private, never written through, and unmapped only
// when the value is dropped; moving it to another thread moves that ownership.
unsafe impl Send for Mapped {}

impl LineTables {
    fn read() -> Option<LineTables> {
        let t0 = std::time::Instant::now();
        let rss0 = crate::procstat::self_rss().unwrap_or(0);
        let exe = Mapped::open(Path::new("/proc/self/exe"))?;
        let data = exe.bytes();
        let file = object::File::parse(data).ok()?;
        let endian = if file.is_little_endian() {
            gimli::RunTimeEndian::Little
        } else {
            gimli::RunTimeEndian::Big
        };
        let address_size = if file.is_64() { 8 } else { 4 };
        let lines = section(&file, data, ".debug_line");
        let strings = (
            section(&file, data, ".debug_str"),
            section(&file, data, ".debug_line_str"),
        );
        drop(file);
        let mut tables = LineTables {
            exe,
            lines,
            strings,
            endian,
            address_size,
            sequences: Vec::new(),
            seconds: 0.0,
            rss_growth: 0,
        };
        tables.sequences = index(tables.bytes(&tables.lines), endian, address_size);
        tables.seconds = t0.elapsed().as_secs_f64();
        tables.rss_growth = crate::procstat::self_rss()
            .unwrap_or(0)
            .saturating_sub(rss0);
        Some(tables)
    }

    fn bytes<'a>(&'a self, b: &'a Bytes) -> &'a [u8] {
        match b {
            Bytes::InFile(range) => self.exe.bytes().get(range.clone()).unwrap_or(&[]),
            Bytes::Inflated(v) => v,
        }
    }

    /// The position of each of `probes` (sorted, with their places in `out`): only the line
    /// programs holding one are streamed.
    fn place_all(&self, probes: &[(u64, usize)], out: &mut [Option<Position>]) {
        let debug_line = gimli::DebugLine::new(self.bytes(&self.lines), self.endian);
        let strings = (
            gimli::DebugStr::new(self.bytes(&self.strings.0), self.endian),
            gimli::DebugLineStr::new(self.bytes(&self.strings.1), self.endian),
        );
        let mut programs: Vec<usize> = probes
            .iter()
            .filter_map(|&(a, _)| {
                let i = self.sequences.partition_point(|&(start, _, _)| start <= a);
                let &(_, end, program) = self.sequences.get(i.checked_sub(1)?)?;
                (a < end).then_some(program)
            })
            .collect();
        programs.sort_unstable();
        programs.dedup();
        for offset in programs {
            let at = gimli::DebugLineOffset(offset);
            if let Ok(program) = debug_line.program(at, self.address_size, None, None) {
                place(program, &strings, probes, out);
            }
        }
    }
}

/// Every sequence of every line program in `lines`: where it begins and ends, and which
/// program holds it. A pass over the opcodes that follows only the address, far quicker
/// than making each row (a release build's 12 MB in about 10 ms).
fn index(lines: &[u8], endian: gimli::RunTimeEndian, address_size: u8) -> Vec<(u64, u64, usize)> {
    let debug_line = gimli::DebugLine::new(lines, endian);
    let mut sequences = Vec::new();
    let mut offset = 0usize;
    while offset < lines.len() {
        let Ok(program) =
            debug_line.program(gimli::DebugLineOffset(offset), address_size, None, None)
        else {
            break;
        };
        let header = program.header();
        let Some(next) = header
            .unit_length()
            .checked_add(header.format().initial_length_size().into())
            .and_then(|n| offset.checked_add(n))
        else {
            break;
        };
        let opcodes = header.raw_program_buf();
        sequences_of(opcodes.slice(), header, endian, offset, &mut sequences);
        offset = next;
    }
    sequences.sort_unstable();
    sequences
}

/// The sequences of one line program's opcodes (DWARF's line number state machine, the
/// address register only).
fn sequences_of(
    ops: &[u8],
    header: &gimli::LineProgramHeader<Reader<'_>>,
    endian: gimli::RunTimeEndian,
    program: usize,
    into: &mut Vec<(u64, u64, usize)>,
) {
    let min_len = u64::from(header.minimum_instruction_length());
    let line_range = u64::from(header.line_range()).max(1);
    let base = header.opcode_base();
    let lengths = header.standard_opcode_lengths().slice();
    let address_size = usize::from(header.address_size());
    let mut address = 0u64;
    let mut start: Option<u64> = None;
    let mut i = 0usize;
    while let Some(&op) = ops.get(i) {
        i += 1;
        if op >= base {
            let advance = u64::from(op - base) / line_range * min_len;
            address = address.wrapping_add(advance);
            start.get_or_insert(address);
            continue;
        }
        match op {
            0 => {
                let Some(len) = uleb(ops, &mut i) else { return };
                let Some(end) = usize::try_from(len).ok().and_then(|l| i.checked_add(l)) else {
                    return;
                };
                match ops.get(i) {
                    // DW_LNE_end_sequence
                    Some(1) => {
                        if let Some(first) = start.take() {
                            into.push((first, address, program));
                        }
                        address = 0;
                    }
                    // DW_LNE_set_address
                    Some(2) if len as usize == 1 + address_size => {
                        let Some(bytes) = ops.get(i + 1..end) else {
                            return;
                        };
                        let mut raw = [0u8; 8];
                        match endian {
                            gimli::RunTimeEndian::Little => {
                                raw[..address_size].copy_from_slice(bytes)
                            }
                            gimli::RunTimeEndian::Big => {
                                raw[8 - address_size..].copy_from_slice(bytes)
                            }
                        }
                        address = match endian {
                            gimli::RunTimeEndian::Little => u64::from_le_bytes(raw),
                            gimli::RunTimeEndian::Big => u64::from_be_bytes(raw),
                        };
                        start.get_or_insert(address);
                    }
                    _ => {}
                }
                i = end;
            }
            // DW_LNS_copy
            1 => {
                start.get_or_insert(address);
            }
            // DW_LNS_advance_pc
            2 => {
                let Some(n) = uleb(ops, &mut i) else { return };
                address = address.wrapping_add(n.wrapping_mul(min_len));
            }
            // DW_LNS_const_add_pc
            8 => {
                address = address.wrapping_add(u64::from(255 - base) / line_range * min_len);
            }
            // DW_LNS_fixed_advance_pc: a u16 operand
            9 => {
                let Some(b) = ops.get(i..i + 2) else { return };
                let n = match endian {
                    gimli::RunTimeEndian::Little => u16::from_le_bytes([b[0], b[1]]),
                    gimli::RunTimeEndian::Big => u16::from_be_bytes([b[0], b[1]]),
                };
                address = address.wrapping_add(u64::from(n));
                i += 2;
            }
            // Any other standard opcode: skip its LEB128 operands.
            _ => {
                let operands = lengths.get(usize::from(op) - 1).copied().unwrap_or(0);
                for _ in 0..operands {
                    if uleb(ops, &mut i).is_none() {
                        return;
                    }
                }
            }
        }
    }
}

/// An unsigned LEB128 number at `*i`, which moves past it.
fn uleb(bytes: &[u8], i: &mut usize) -> Option<u64> {
    let mut value = 0u64;
    let mut shift = 0u32;
    loop {
        let byte = *bytes.get(*i)?;
        *i += 1;
        if shift < 64 {
            value |= u64::from(byte & 0x7f) << shift;
        }
        if byte & 0x80 == 0 {
            return Some(value);
        }
        shift += 7;
    }
}

/// Line tables read ahead (`prefetch`), for `positions` to take.
static PREFETCHED: std::sync::Mutex<Option<std::thread::JoinHandle<Option<LineTables>>>> =
    std::sync::Mutex::new(None);

/// Starts reading this executable's line tables on a thread of its own, for a profile that
/// will be named soon (`check --profile` calls it when its measured runs are over, so the
/// reading overlaps the sampled repetitions and stays out of the runs' figures).
pub fn prefetch_line_tables() {
    let mut slot = crate::sync::lock(&PREFETCHED);
    if slot.is_none() {
        *slot = std::thread::Builder::new()
            .name("agentprof-lines".into())
            .spawn(|| {
                super::buffer::UNSAMPLED.with(|u| u.set(true));
                LineTables::read()
            })
            .ok();
    }
}

/// What naming a profile's addresses cost: seconds (reading the line tables, ahead or not,
/// and placing the addresses) and the most resident memory it added.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Cost {
    pub seconds: f64,
    pub rss_growth: u64,
}

/// The line-table position of each address (file-relative, as the DWARF has them) of this
/// executable, and what finding them cost; `None` where the line tables do not cover an
/// address, or there are none. `u64::MAX` stands for no address.
pub(super) fn positions(probes: &[u64]) -> (Vec<Option<Position>>, Cost) {
    let rss0 = crate::procstat::self_rss().unwrap_or(0);
    let ahead = crate::sync::lock(&PREFETCHED).take();
    let tables = match ahead {
        Some(handle) => handle.join().ok().flatten(),
        None => LineTables::read(),
    };
    let mut out = vec![None; probes.len()];
    let Some(tables) = tables else {
        return (out, Cost::default());
    };
    let mut sorted: Vec<(u64, usize)> = probes
        .iter()
        .copied()
        .zip(0..)
        .filter(|&(a, _)| a != u64::MAX)
        .collect();
    sorted.sort_unstable();
    let placing = std::time::Instant::now();
    tables.place_all(&sorted, &mut out);
    let grown = crate::procstat::self_rss()
        .unwrap_or(0)
        .saturating_sub(rss0);
    let cost = Cost {
        seconds: tables.seconds + placing.elapsed().as_secs_f64(),
        rss_growth: grown.max(tables.rss_growth),
    };
    (out, cost)
}

type Strings<'a> = (gimli::DebugStr<Reader<'a>>, gimli::DebugLineStr<Reader<'a>>);

/// Streams one line program and places each of `probes` (sorted) that a row's address
/// range holds and that was not placed before.
fn place(
    program: gimli::IncompleteLineProgram<Reader<'_>>,
    strings: &Strings<'_>,
    probes: &[(u64, usize)],
    out: &mut [Option<Position>],
) {
    let mut rows = program.rows();
    // The previous row of the current sequence: (address, file index, line).
    let mut previous: Option<(u64, u64, Option<u32>)> = None;
    let mut names: std::collections::HashMap<u64, Option<String>> = Default::default();
    while let Ok(Some((header, row))) = rows.next_row() {
        if let Some((from, file, line)) = previous
            && row.address() > from
        {
            let first = probes.partition_point(|&(a, _)| a < from);
            for &(_, i) in probes[first..]
                .iter()
                .take_while(|&&(a, _)| a < row.address())
            {
                if out[i].is_none() {
                    let name = names
                        .entry(file)
                        .or_insert_with(|| file_name(strings, header, file))
                        .clone();
                    if let Some(file) = name {
                        out[i] = Some(Position { file, line });
                    }
                }
            }
        }
        previous = (!row.end_sequence()).then(|| {
            let line = row.line().and_then(|l| u32::try_from(l.get()).ok());
            (row.address(), row.file_index(), line)
        });
    }
}

/// The path of the line program's file `index`: its directory joined with its name (a
/// relative directory is relative to where the unit was compiled).
fn file_name(
    strings: &Strings<'_>,
    header: &gimli::LineProgramHeader<Reader<'_>>,
    index: u64,
) -> Option<String> {
    let entry = header.file(index)?;
    let text = |attr: gimli::AttributeValue<Reader<'_>>| {
        let s = match attr {
            gimli::AttributeValue::String(s) => s,
            gimli::AttributeValue::DebugStrRef(o) => strings.0.get_str(o).ok()?,
            gimli::AttributeValue::DebugLineStrRef(o) => strings.1.get_str(o).ok()?,
            _ => return None,
        };
        Some(s.to_string_lossy().into_owned())
    };
    let name = text(entry.path_name())?;
    let mut path = std::path::PathBuf::new();
    if let Some(dir) = entry.directory(header).and_then(text) {
        path.push(dir);
    }
    path.push(name);
    Some(path.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[inline(never)]
    fn a_function_with_a_line_to_find() -> usize {
        std::hint::black_box(7)
    }

    #[test]
    fn places_this_files_function_at_its_file_and_line() {
        assert_eq!(a_function_with_a_line_to_find(), 7);
        let addr = a_function_with_a_line_to_find as *const () as usize as u64;
        let bias = crate::profile::symtab::load_bias().expect("bias");
        let (found, _) = positions(&[addr - bias + 1, u64::MAX, u64::MAX - 1]);
        let at = found[0].as_ref().expect("the test binary has line tables");
        assert!(at.file.ends_with("src/profile/sampler/dwarf.rs"), "{at:?}");
        let line = at.line.expect("a line");
        let source = include_str!("dwarf.rs");
        let declared = source
            .lines()
            .position(|l| l.contains("fn a_function_with_a_line_to_find"))
            .expect("declared") as u32
            + 1;
        assert!(
            (declared..declared + 3).contains(&line),
            "{at:?} {declared}"
        );
        assert_eq!(found[1..], [None, None]);
    }

    #[test]
    fn junk_line_tables_index_to_nothing_and_never_panic() {
        let e = gimli::RunTimeEndian::Little;
        assert!(index(b"", e, 8).is_empty());
        assert!(index(&[0xff; 64], e, 8).is_empty());
        let mut junk = vec![0x30, 0, 0, 0, 4, 0];
        junk.extend((0..200u32).map(|i| (i * 37 % 251) as u8));
        let _ = index(&junk, e, 8);
    }

    #[test]
    fn the_index_finds_every_sequence_the_rows_have() {
        // This test binary's own line tables: each sequence's first and end address as the
        // quick pass sees them, against gimli's rows.
        let tables = LineTables::read().expect("the test binary has line tables");
        let debug_line = gimli::DebugLine::new(tables.bytes(&tables.lines), tables.endian);
        let &(_, _, program) = tables.sequences.last().expect("sequences");
        let mut rows = debug_line
            .program(
                gimli::DebugLineOffset(program),
                tables.address_size,
                None,
                None,
            )
            .expect("a program")
            .rows();
        let (mut from, mut expected) = (None, Vec::new());
        while let Ok(Some((_, row))) = rows.next_row() {
            let first = *from.get_or_insert(row.address());
            if row.end_sequence() {
                expected.push((first, row.address(), program));
                from = None;
            }
        }
        expected.sort_unstable();
        let found: Vec<_> = tables
            .sequences
            .iter()
            .copied()
            .filter(|&(_, _, p)| p == program)
            .collect();
        assert_eq!(found, expected);
    }

    #[test]
    fn a_zstd_frame_is_decompressed_to_its_stated_size_or_not_at_all() {
        let frame = ruzstd::encoding::compress_to_vec(
            &[7u8; 1000][..],
            ruzstd::encoding::CompressionLevel::Fastest,
        );
        assert_eq!(unzstd(&frame, 1000), Some(vec![7u8; 1000]));
        let two = [frame.clone(), frame.clone()].concat();
        assert_eq!(unzstd(&two, 2000), Some(vec![7u8; 2000]));
        assert_eq!(unzstd(&two, 1500), None);
        assert_eq!(unzstd(&frame, 999), None);
        assert_eq!(unzstd(&frame, 1001), None);
        assert_eq!(unzstd(&frame[..frame.len() / 2], 1000), None);
        assert_eq!(unzstd(b"not zstd", 10), None);
    }

    #[test]
    fn a_zlib_stream_is_inflated_to_its_stated_size_or_not_at_all() {
        use std::io::Write;
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(&[7u8; 1000]).expect("write");
        let deflated = z.finish().expect("finish");
        assert_eq!(inflate(&deflated, 1000), Some(vec![7u8; 1000]));
        assert_eq!(inflate(&deflated, 999), None);
        assert_eq!(inflate(&deflated[..deflated.len() / 2], 1000), None);
        assert_eq!(inflate(b"not zlib", 10), None);
    }
}
