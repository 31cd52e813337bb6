//! pstats dumps (`agentprof check --pstats`, `cProfile -o`, `pstats.Stats.dump_stats`) read
//! without Python: the file is Python's marshal format of one dict
//! `{(file, line, function): (primitive calls, calls, tottime, cumtime, callers)}`. The
//! reader knows the marshal types such a dict can hold, shares what the format shares by
//! reference instead of copying it, and bounds depth, objects and lengths before it
//! allocates, so a hostile file is an error, not a hang.

use std::rc::Rc;

use crate::checks::python::PstatsReport;

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

fn bad<T>(at: usize, what: &str) -> Result<T, String> {
    Err(format!(
        "not a pstats dump (Python marshal): {what} at byte {at}"
    ))
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        if self.b.len() - self.at < n {
            return bad(self.at, "the file ends early");
        }
        let s = &self.b[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }

    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    fn i32(&mut self) -> Result<i32, String> {
        let s = self.take(4)?;
        Ok(i32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }

    /// A length, checked against what is left (each element takes a byte at least).
    fn len(&mut self, short: bool) -> Result<usize, String> {
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

    fn value(&mut self, depth: usize) -> Result<V, String> {
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
            b'l' => {
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
                V::Int(if n < 0 { -x } else { x })
            }
            b'g' => {
                let s = self.take(8)?;
                let mut a = [0u8; 8];
                a.copy_from_slice(s);
                V::Float(f64::from_le_bytes(a))
            }
            b'f' => {
                let n = self.len(true)?;
                let s = String::from_utf8_lossy(self.take(n)?).into_owned();
                V::Float(
                    s.trim()
                        .parse()
                        .map_err(|_| format!("not a pstats dump: float {s:?}"))?,
                )
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
            b'{' => {
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
                V::Dict(Rc::new(items))
            }
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
pub fn read(bytes: &[u8]) -> Result<Vec<Row>, String> {
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
    for (k, v) in items.iter() {
        let (V::Seq(k), V::Seq(v)) = (k, v) else {
            return bad(
                0,
                "an entry is not (file, line, function): (cc, nc, tt, ct, callers)",
            );
        };
        let (Some(V::Str(file)), Some(line), Some(V::Str(name))) = (k.first(), k.get(1), k.get(2))
        else {
            return bad(0, "a key is not (file, line, function)");
        };
        let n = |i: usize| v.get(i).and_then(num);
        let (Some(cc), Some(nc), Some(tt), Some(ct)) = (n(0), n(1), n(2), n(3)) else {
            return bad(0, "a value is not (cc, nc, tt, ct, callers)");
        };
        rows.push((
            file.to_string(),
            num(line).unwrap_or(0.0) as u32,
            name.to_string(),
            cc.max(0.0) as u64,
            nc.max(0.0) as u64,
            tt,
            ct,
        ));
    }
    Ok(rows)
}

/// How the table is ordered, as pstats' sort keys name it.
pub fn sort(rows: &mut [Row], key: &str) -> Result<&'static str, String> {
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
        other => Err(format!(
            "sort {other:?}: one of cumulative, tottime, ncalls, pcalls, filename, name"
        )),
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
