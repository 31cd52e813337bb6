//! pstats dumps (`agentprof check --pstats`, `cProfile -o`, `pstats.Stats.dump_stats`) read
//! without Python: the file is Python's marshal format of one dict
//! `{(file, line, function): (primitive calls, calls, tottime, cumtime, callers)}`. The
//! reader knows the marshal types such a dict can hold, shares what the format shares by
//! reference instead of copying it, and bounds depth, objects and lengths before it
//! allocates, so a hostile file is an error, not a hang.

use std::rc::Rc;

use crate::profile::PstatsReport;

#[derive(Debug, Clone)]
enum V {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Rc<str>),
    Seq(Rc<Vec<V>>),
    Dict(Rc<Vec<(V, V)>>),
}

const MAX_DEPTH: usize = 32;
const MAX_OBJECTS: usize = 20_000_000;

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
    refs: Vec<Option<V>>,
    objects: usize,
}

/// Why a file is not a pstats dump: what was found, and at which byte.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("not a pstats dump (Python marshal): {what} at byte {at}")]
pub struct DumpError {
    pub what: String,
    pub at: usize,
}

/// A sort key pstats does not have.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("sort {0:?}: one of cumulative, tottime, ncalls, pcalls, filename, name")]
pub struct SortKeyError(pub String);

fn bad<T>(at: usize, what: &str) -> Result<T, DumpError> {
    Err(DumpError {
        what: what.to_string(),
        at,
    })
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], DumpError> {
        if self.b.len() - self.at < n {
            return bad(self.at, "the file ends early");
        }
        let s = &self.b[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }

    fn u8(&mut self) -> Result<u8, DumpError> {
        Ok(self.take(1)?[0])
    }

    fn i32(&mut self) -> Result<i32, DumpError> {
        let s = self.take(4)?;
        Ok(i32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }

    /// A length, checked against what is left (each element takes a byte at least).
    fn len(&mut self, short: bool) -> Result<usize, DumpError> {
        let n = if short {
            self.u8()? as usize
        } else {
            let n = self.i32()?;
            if n < 0 {
                return bad(self.at, "a negative length");
            }
            n as usize
        };
        if n > self.b.len() - self.at {
            return bad(self.at, "a length past the end of the file");
        }
        Ok(n)
    }

    fn value(&mut self, depth: usize) -> Result<V, DumpError> {
        if depth > MAX_DEPTH {
            return bad(self.at, "nesting too deep");
        }
        self.objects += 1;
        if self.objects > MAX_OBJECTS {
            return bad(self.at, "too many objects");
        }
        let start = self.at;
        let t = self.u8()?;
        let (flag, code) = (t & 0x80 != 0, t & 0x7f);
        // A container's slot is taken before its elements, as marshal numbers them.
        let slot = if flag {
            self.refs.push(None);
            Some(self.refs.len() - 1)
        } else {
            None
        };
        let v = match code {
            b'N' => V::None,
            b'F' => V::Bool(false),
            b'T' => V::Bool(true),
            b'i' => V::Int(i64::from(self.i32()?)),
            b'l' => V::Int(self.long(start)?),
            b'g' => {
                let s = self.take(8)?;
                let mut a = [0u8; 8];
                a.copy_from_slice(s);
                V::Float(f64::from_le_bytes(a))
            }
            b'f' => {
                let n = self.len(true)?;
                let s = String::from_utf8_lossy(self.take(n)?).into_owned();
                match s.trim().parse() {
                    Ok(f) => V::Float(f),
                    Err(_) => return bad(start, &format!("float {s:?}")),
                }
            }
            b's' | b'u' | b't' | b'a' | b'A' | b'z' | b'Z' => {
                let n = self.len(matches!(code, b'z' | b'Z'))?;
                V::Str(Rc::from(String::from_utf8_lossy(self.take(n)?).as_ref()))
            }
            b'(' | b')' | b'[' | b'<' | b'>' => {
                let n = self.len(code == b')')?;
                let mut items = Vec::with_capacity(n.min(1 << 16));
                for _ in 0..n {
                    items.push(self.value(depth + 1)?);
                }
                V::Seq(Rc::new(items))
            }
            b'{' => self.dict(depth)?,
            b'r' => {
                let i = self.i32()?;
                match usize::try_from(i).ok().and_then(|i| self.refs.get(i)) {
                    Some(Some(v)) => v.clone(),
                    _ => return bad(start, "a reference to nothing"),
                }
            }
            _ => return bad(start, &format!("marshal type {:?}", code as char)),
        };
        if let Some(s) = slot {
            self.refs[s] = Some(v.clone());
        }
        Ok(v)
    }

    /// A long: its digit count, then 15-bit digits, least significant first (at most 4:
    /// pstats' figures fit in 60 bits).
    fn long(&mut self, start: usize) -> Result<i64, DumpError> {
        let n = self.i32()?;
        let digits = n.unsigned_abs() as usize;
        if digits > 4 {
            return bad(start, "an integer too large for pstats");
        }
        let mut x: i64 = 0;
        let s = self.take(2 * digits)?.to_vec();
        for (i, d) in s.chunks(2).enumerate() {
            x |= i64::from(u16::from_le_bytes([d[0], d[1]])) << (15 * i);
        }
        Ok(if n < 0 { -x } else { x })
    }

    /// A dict: keys and values in turn, until the null marker.
    fn dict(&mut self, depth: usize) -> Result<V, DumpError> {
        let mut items = Vec::new();
        loop {
            if self.b.get(self.at) == Some(&b'0') {
                self.at += 1;
                break;
            }
            let k = self.value(depth + 1)?;
            let v = self.value(depth + 1)?;
            items.push((k, v));
        }
        Ok(V::Dict(Rc::new(items)))
    }
}

fn num(v: &V) -> Option<f64> {
    match v {
        V::Int(i) => Some(*i as f64),
        V::Float(f) => Some(*f),
        V::Bool(b) => Some(f64::from(u8::from(*b))),
        _ => None,
    }
}

/// One function's row: (file, line, name, primitive calls, calls, tottime, cumtime).
pub type Row = (String, u32, String, u64, u64, f64, f64);

/// Every function of a pstats dump, in the file's order.
pub fn read(bytes: &[u8]) -> Result<Vec<Row>, DumpError> {
    read_dump(bytes).map(|d| d.rows)
}

/// A dump's rows and, for each row, who called it: (the caller's row, the cumulative time
/// spent in the row's function when called from there).
pub struct Dump {
    pub rows: Vec<Row>,
    pub callers: Vec<Vec<(usize, f64)>>,
}

fn key_of(k: &V) -> Option<(&str, u32, &str)> {
    let V::Seq(k) = k else { return None };
    match (k.first(), k.get(1), k.get(2)) {
        (Some(V::Str(file)), Some(line), Some(V::Str(name))) => {
            Some((file, num(line).unwrap_or(0.0) as u32, name))
        }
        _ => None,
    }
}

/// [`read`], with the callers' edges.
pub fn read_dump(bytes: &[u8]) -> Result<Dump, DumpError> {
    let mut r = Reader {
        b: bytes,
        at: 0,
        refs: Vec::new(),
        objects: 0,
    };
    let V::Dict(items) = r.value(0)? else {
        return bad(0, "the top object is not a dict");
    };
    let mut rows = Vec::with_capacity(items.len());
    let mut index: std::collections::HashMap<(&str, u32, &str), usize> =
        std::collections::HashMap::with_capacity(items.len());
    for (k, v) in items.iter() {
        let V::Seq(v) = v else {
            return bad(
                0,
                "an entry is not (file, line, function): (cc, nc, tt, ct, callers)",
            );
        };
        let Some((file, line, name)) = key_of(k) else {
            return bad(0, "a key is not (file, line, function)");
        };
        let n = |i: usize| v.get(i).and_then(num);
        let (Some(cc), Some(nc), Some(tt), Some(ct)) = (n(0), n(1), n(2), n(3)) else {
            return bad(0, "a value is not (cc, nc, tt, ct, callers)");
        };
        index.insert((file, line, name), rows.len());
        rows.push((
            file.to_string(),
            line,
            name.to_string(),
            cc.max(0.0) as u64,
            nc.max(0.0) as u64,
            tt,
            ct,
        ));
    }
    let mut callers = vec![Vec::new(); rows.len()];
    for (i, (_, v)) in items.iter().enumerate() {
        let V::Seq(v) = v else { continue };
        // A caller not in the dump (or a malformed edge) is no edge.
        if let Some(V::Dict(edges)) = v.get(4) {
            for (ck, cv) in edges.iter() {
                let ct = match cv {
                    V::Seq(t) => t.get(3).and_then(num),
                    other => num(other),
                };
                if let (Some(&c), Some(ct)) = (key_of(ck).and_then(|k| index.get(&k)), ct) {
                    callers[i].push((c, ct.max(0.0)));
                }
            }
        }
    }
    Ok(Dump { rows, callers })
}

/// Deepest call path drawn from a dump.
const MAX_TREE_DEPTH: usize = 64;
/// Paths drawn at most.
const MAX_TREE_NODES: usize = 200_000;

/// The dump as folded `root;…;leaf microseconds` lines for a flamegraph. A dump holds no
/// stacks, only who called whom and for how long: the tree starts at the functions nobody
/// in it called, and gives each callee the time its caller edge says, in the share of the
/// caller's whole time this path holds (snakeviz's reading). Recursion stops a path; so do
/// depth 64, 200,000 paths, and a path under a millionth of the whole.
pub fn call_tree(d: &Dump) -> Vec<String> {
    let n = d.rows.len();
    let mut callees: Vec<Vec<(usize, f64)>> = vec![Vec::new(); n];
    for (f, cs) in d.callers.iter().enumerate() {
        for &(c, ct) in cs {
            if c != f {
                callees[c].push((f, ct));
            }
        }
    }
    let name = |i: usize| {
        let (file, line, func) = (&d.rows[i].0, d.rows[i].1, &d.rows[i].2);
        // pstats' own way of naming a built-in: `{built-in method builtins.exec}`.
        let s = if file == "~" && line == 0 {
            match func.strip_prefix('<').and_then(|f| f.strip_suffix('>')) {
                Some(inner) => format!("{{{inner}}}"),
                None => func.clone(),
            }
        } else {
            format!("{func} ({file}:{line})")
        };
        crate::redact::flame_frame(&s)
    };
    let names: Vec<String> = (0..n).map(name).collect();
    let roots: Vec<usize> = (0..n)
        .filter(|&i| d.callers[i].iter().all(|&(c, _)| c == i))
        .collect();
    let whole: f64 = roots.iter().map(|&r| d.rows[r].6).sum();
    let floor = whole * 1e-6;
    let mut lines = Vec::new();
    let mut on_path = vec![false; n];
    // (function, its time on this path, depth, the path's length before it)
    let mut path = String::new();
    let mut stack: Vec<(usize, f64, usize, usize, bool)> = roots
        .iter()
        .map(|&r| (r, d.rows[r].6, 0, 0, false))
        .collect();
    while let Some((f, t, depth, len, leaving)) = stack.pop() {
        if leaving {
            on_path[f] = false;
            continue;
        }
        if lines.len() >= MAX_TREE_NODES {
            break;
        }
        path.truncate(len);
        if depth > 0 {
            path.push(';');
        }
        path.push_str(&names[f]);
        let ct = d.rows[f].6;
        let share = if ct > 0.0 { t / ct } else { 0.0 };
        let here = path.len();
        stack.push((f, 0.0, 0, 0, true));
        on_path[f] = true;
        let mut given = 0.0;
        if depth + 1 < MAX_TREE_DEPTH {
            let kids = callees[f]
                .iter()
                .map(|&(g, edge)| (g, edge * share))
                .filter(|&(g, gt)| !on_path[g] && gt >= floor);
            let sum: f64 = kids.clone().map(|(_, gt)| gt).sum();
            // Callees never get more than the path has (edges of recursive calls can).
            let k = if sum > t && sum > 0.0 { t / sum } else { 1.0 };
            for (g, gt) in kids {
                given += gt * k;
                stack.push((g, gt * k, depth + 1, here, false));
            }
        }
        let own = ((t - given).max(0.0) * 1e6).round() as u64;
        if own > 0 {
            lines.push(format!("{path} {own}"));
        }
    }
    lines
}

/// How the table is ordered, as pstats' sort keys name it.
pub fn sort(rows: &mut [Row], key: &str) -> Result<&'static str, SortKeyError> {
    // Stable, so ties keep the file's order, as pstats keeps it.
    match key {
        "cumulative" | "cumtime" | "" => {
            rows.sort_by(|a, b| b.6.total_cmp(&a.6));
            Ok("cumulative time")
        }
        "tottime" | "time" => {
            rows.sort_by(|a, b| b.5.total_cmp(&a.5));
            Ok("internal time")
        }
        "ncalls" | "calls" => {
            rows.sort_by_key(|r| std::cmp::Reverse(r.4));
            Ok("call count")
        }
        "pcalls" => {
            rows.sort_by_key(|r| std::cmp::Reverse(r.3));
            Ok("primitive call count")
        }
        "filename" | "file" => {
            rows.sort_by(|a, b| a.0.cmp(&b.0));
            Ok("file name")
        }
        "name" => {
            rows.sort_by(|a, b| a.2.cmp(&b.2));
            Ok("function name")
        }
        other => Err(SortKeyError(other.to_string())),
    }
}

/// The report `agentprof check --pstats` prints, for the first `top` rows of `rows`.
pub fn report(rows: &[Row], top: usize) -> PstatsReport {
    PstatsReport {
        total_calls: rows.iter().map(|r| r.4).sum(),
        prim_calls: rows.iter().map(|r| r.3).sum(),
        total_tt: rows.iter().map(|r| r.5).sum(),
        functions: rows.len(),
        rows: rows.iter().take(top).cloned().collect(),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, tt: f64, ct: f64) -> Row {
        ("f.py".into(), 1, name.into(), 1, 1, tt, ct)
    }

    #[test]
    fn call_tree_shares_callee_time_by_caller_and_stops_recursion() {
        // main (10 s) calls a (6 s of a's 8) and b (3 s); x also calls a (2 s); a recurses.
        let d = Dump {
            rows: vec![
                row("main", 1.0, 10.0),
                row("a", 8.0, 8.0),
                row("b", 3.0, 3.0),
                row("x", 0.0, 2.0),
                row("semi;colon", 0.5, 0.5),
            ],
            callers: vec![
                vec![],
                vec![(0, 6.0), (3, 2.0), (1, 1.0)],
                vec![(0, 3.0)],
                vec![],
                vec![(1, 0.5)],
            ],
        };
        let mut lines = call_tree(&d);
        lines.sort();
        assert_eq!(
            lines,
            [
                "main (f.py:1) 1000000",
                "main (f.py:1);a (f.py:1) 5625000",
                "main (f.py:1);a (f.py:1);semi,colon (f.py:1) 375000",
                "main (f.py:1);b (f.py:1) 3000000",
                "x (f.py:1);a (f.py:1) 1875000",
                "x (f.py:1);a (f.py:1);semi,colon (f.py:1) 125000",
            ]
        );
    }
}
