//! Naming sampled addresses: through the debug information (inlined frames, files, lines)
//! for a profile that is finished, on a short-lived thread of its own; through the symbol
//! table for the agent's periodic snapshots.

use std::collections::HashSet;
use std::ffi::c_void;

use super::super::{CallProfile, Frame};
use super::buffer::UNSAMPLED;
use super::linux::Sampler;

/// Symbolised frames of one address, innermost inlined frame first.
type Location = Vec<usize>;

impl Sampler {
    /// Names every address of the stacks sampled so far that has not been named before:
    /// the function from the symbol table (or, outside the executable, the dynamic
    /// linker), its file and line from the executable's line tables (`dwarf.rs`). Reading
    /// the line tables runs on a short-lived thread of its own: the few MiB it allocates land
    /// in an allocator arena nothing long-lived shares, so they are given back afterwards
    /// and a long-running agent that names a profile now and then does not grow.
    pub(super) fn resolve_new(&mut self) {
        let mut missing: Vec<(u64, bool)> = Vec::new();
        let mut seen: HashSet<(u64, bool)> = HashSet::new();
        for stack in self.raw.keys() {
            for (depth, &ip) in stack.iter().enumerate() {
                let key = (ip, depth == 0);
                if !self.symbols.contains_key(&key) && seen.insert(key) {
                    missing.push(key);
                }
            }
        }
        drop(seen);
        if missing.is_empty() {
            return;
        }
        let table = self
            .table
            .get_or_insert_with(crate::profile::symtab::SymbolTable::of_this_executable);
        // A return address points after the call; look up the call itself.
        let addrs: Vec<u64> = missing
            .iter()
            .map(|&(ip, leaf)| if leaf { ip } else { ip.saturating_sub(1) })
            .collect();
        let named: Vec<(Frame, Option<u64>)> = addrs
            .iter()
            .map(
                |&addr| match table.as_ref().and_then(|t| t.function(addr)) {
                    Some((frame, start)) => (frame, Some(start)),
                    None => (dynamic_symbol(addr).unwrap_or_else(|| unknown(addr)), None),
                },
            )
            .collect();
        let bias = crate::profile::symtab::load_bias().unwrap_or(0);
        // The executable's addresses (those its symbol table names) and their functions'
        // first addresses, file-relative; u64::MAX for any other.
        let probes: Vec<u64> = addrs
            .iter()
            .zip(&named)
            .flat_map(|(&addr, (_, start))| [start.map(|_| addr), *start])
            .map(|a| a.and_then(|a| a.checked_sub(bias)).unwrap_or(u64::MAX))
            .collect();
        let positions = std::thread::Builder::new()
            .name("agentprof-symbols".into())
            .spawn(move || {
                UNSAMPLED.with(|u| u.set(true));
                resolve_all(&probes)
            })
            .ok()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        for (n, (key, (mut frame, start))) in missing.into_iter().zip(named).enumerate() {
            let at = positions.get(2 * n).cloned().flatten();
            let entry = positions.get(2 * n + 1).cloned().flatten();
            if start.is_some() || at.is_some() {
                place(&mut frame, at, entry);
            }
            self.symbols.insert(key, vec![frame]);
        }
    }

    pub(super) fn resolve(&self, ip: u64, leaf: bool, into: &mut CallProfile) -> Location {
        match self.symbols.get(&(ip, leaf)) {
            Some(frames) => frames.iter().map(|f| into.intern_ref(f)).collect(),
            None => vec![into.intern(unknown(ip))],
        }
    }

    /// Process scope: every stack sampled since the start, symbolised into `into`, while
    /// the samples stay here as addresses (a few bytes per frame) for the next snapshot
    /// and `finish`. The agent logs its top calls from such snapshots and drops them, so
    /// its memory does not grow with the number of stacks it has named.
    ///
    /// A snapshot names functions from the executable's symbol table (see
    /// [`crate::profile::symtab`]), far cheaper than reading the debug information each time.
    /// Inlined frames, files and lines are in the profile `finish` makes.
    pub fn snapshot(&mut self, into: &mut CallProfile) {
        self.name_new();
        for (stack, &super::linux::Sampled { count, .. }) in &self.raw {
            let locations: Vec<Vec<usize>> = stack
                .iter()
                .enumerate()
                .map(|(depth, &ip)| match self.named.get(&(ip, depth == 0)) {
                    Some(f) => vec![into.intern_ref(f)],
                    None => self.resolve(ip, depth == 0, into),
                })
                .collect();
            into.add(locations, count);
        }
    }

    /// Samples so far that the profile will hold: those taken inside a run (under
    /// `measured_run`), not the runner's own measuring on the same thread. Named from the
    /// symbol table, as a snapshot is; each stack is looked at once, so asking after every
    /// repetition costs what `samples_so_far` does.
    pub fn samples_in_runs(&mut self) -> u64 {
        let new: Vec<Vec<u64>> = self
            .raw
            .iter()
            .filter(|(_, s)| s.in_run.is_none())
            .map(|(stack, _)| stack.clone())
            .collect();
        if !new.is_empty() {
            self.name(unnamed(&self.named, &self.symbols, new.iter()));
            for stack in new {
                let inside = stack
                    .iter()
                    .enumerate()
                    .any(|(depth, &ip)| self.is_marker_at((ip, depth == 0)));
                if let Some(s) = self.raw.get_mut(&stack) {
                    s.in_run = Some(inside);
                }
            }
        }
        self.raw
            .values()
            .filter(|s| s.in_run == Some(true))
            .map(|s| s.count)
            .sum()
    }

    /// The marker's frame is at this address, as the symbol table or the debug information
    /// named it.
    fn is_marker_at(&self, key: (u64, bool)) -> bool {
        match self.named.get(&key) {
            Some(f) => super::is_marker(&f.function),
            None => self
                .symbols
                .get(&key)
                .is_some_and(|fs| fs.iter().any(|f| super::is_marker(&f.function))),
        }
    }

    /// Names every sampled address not named before from the symbol table, or, outside
    /// the executable, from the dynamic linker.
    fn name_new(&mut self) {
        self.name(unnamed(&self.named, &self.symbols, self.raw.keys()));
    }

    fn name(&mut self, keys: Vec<(u64, bool)>) {
        let table = self
            .table
            .get_or_insert_with(crate::profile::symtab::SymbolTable::of_this_executable);
        for key @ (ip, leaf) in keys {
            let addr = if leaf { ip } else { ip.saturating_sub(1) };
            let frame = table
                .as_ref()
                .and_then(|t| t.frame(addr))
                .or_else(|| dynamic_symbol(addr))
                .unwrap_or_else(|| unknown(addr));
            self.named.insert(key, frame);
        }
    }
}

/// The addresses of `stacks` named neither from the symbol table nor the debug information,
/// each once.
fn unnamed<'a>(
    named: &std::collections::HashMap<(u64, bool), Frame>,
    symbols: &std::collections::HashMap<(u64, bool), Vec<Frame>>,
    stacks: impl Iterator<Item = &'a Vec<u64>>,
) -> Vec<(u64, bool)> {
    let mut seen = HashSet::new();
    let mut keys = Vec::new();
    for stack in stacks {
        for (depth, &ip) in stack.iter().enumerate() {
            let key = (ip, depth == 0);
            if !named.contains_key(&key) && !symbols.contains_key(&key) && seen.insert(key) {
                keys.push(key);
            }
        }
    }
    keys
}

/// The exported symbol a shared library's address is in (`dladdr`), as libc's functions.
fn dynamic_symbol(addr: u64) -> Option<Frame> {
    // SAFETY: dladdr only reads the loader's tables and writes into `info`, which we own;
    // the names it returns point into loaded objects and are copied at once.
    unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        if libc::dladdr(addr as *const c_void, &mut info) == 0 || info.dli_sname.is_null() {
            return None;
        }
        let name = std::ffi::CStr::from_ptr(info.dli_sname).to_string_lossy();
        Some(Frame {
            function: format!("{:#}", rustc_demangle::demangle(&name)),
            system_name: None,
            file: None,
            line: None,
        })
    }
}

fn unknown(addr: u64) -> Frame {
    Frame {
        function: format!("{addr:#x}"),
        ..Frame::default()
    }
}

/// What naming sampled addresses has cost this process so far: the addresses named, the
/// time, and the most resident memory it added (the debug information it read).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct NamingCost {
    pub addresses: usize,
    pub seconds: f64,
    pub rss_growth: u64,
}

static NAMING: std::sync::Mutex<NamingCost> = std::sync::Mutex::new(NamingCost {
    addresses: 0,
    seconds: 0.0,
    rss_growth: 0,
});

/// What naming sampled addresses has cost so far (`check --profile` says it: naming reads the
/// binary's DWARF, which the measured runs do not include).
pub fn naming_cost() -> NamingCost {
    *crate::sync::lock(&NAMING)
}

/// The line-table position of each of `probes` (file-relative addresses), its cost counted.
fn resolve_all(probes: &[u64]) -> Vec<Option<super::dwarf::Position>> {
    let (out, cost) = super::dwarf::positions(probes);
    let mut n = crate::sync::lock(&NAMING);
    n.addresses += probes.len() / 2;
    n.seconds += cost.seconds;
    n.rss_growth = n.rss_growth.max(cost.rss_growth);
    out
}

/// Gives a function's frame the file and line the sampled address is at (`at`). The line
/// tables know no inlining: code inlined from another file has that file's lines, which do
/// not belong to the function the symbol table names. So the line is kept only where the
/// address is in the file the function begins in (`entry`); elsewhere the frame says the
/// function's own file, without a line.
fn place(
    frame: &mut Frame,
    at: Option<super::dwarf::Position>,
    entry: Option<super::dwarf::Position>,
) {
    match (at, entry) {
        (Some(at), Some(entry)) if at.file == entry.file => {
            frame.file = Some(at.file);
            frame.line = at.line;
        }
        (_, Some(entry)) => frame.file = Some(entry.file),
        (Some(at), None) => {
            frame.file = Some(at.file);
            frame.line = at.line;
        }
        (None, None) => {}
    }
}
