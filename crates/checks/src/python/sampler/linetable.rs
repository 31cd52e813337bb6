//! The line of an instruction, from a code object's location table (`co_linetable`, the
//! format of CPython 3.11 and later, PEP 626/657): entries of one start byte (its code and
//! how many code units it covers) and varints.

/// The line executing at byte offset `addr` of the code (`lasti` × 2), as `PyCode_Addr2Line`
/// finds it; `first` is `co_firstlineno`. A negative `addr` (a frame not yet started) is the
/// first line; None where the table gives no line.
pub fn line_at(table: &[u8], first: i32, addr: i64) -> Option<i32> {
    if addr < 0 {
        return Some(first);
    }
    let target = addr / 2;
    let mut line = first;
    let mut unit: i64 = 0;
    let mut i = 0;
    while i < table.len() {
        let head = table[i];
        if head & 0x80 == 0 {
            // Not at an entry's start: the table is not what it should be.
            return None;
        }
        i += 1;
        let code = (head >> 3) & 0x0f;
        let len = i64::from(head & 0x07) + 1;
        let mut this_line = Some(line);
        match code {
            15 => this_line = None,
            14 => {
                line = line.wrapping_add(svarint(table, &mut i)?);
                this_line = Some(line);
                varint(table, &mut i)?; // end line delta
                varint(table, &mut i)?; // column + 1
                varint(table, &mut i)?; // end column + 1
            }
            13 => {
                line = line.wrapping_add(svarint(table, &mut i)?);
                this_line = Some(line);
            }
            11 | 12 => {
                line = line.wrapping_add(i32::from(code) - 10);
                this_line = Some(line);
                i += 2;
            }
            _ => i += 1,
        }
        if target < unit + len {
            return this_line;
        }
        unit += len;
    }
    None
}

fn varint(t: &[u8], i: &mut usize) -> Option<u32> {
    let mut v: u32 = 0;
    let mut shift = 0;
    loop {
        let b = *t.get(*i)?;
        *i += 1;
        v |= u32::from(b & 0x3f).checked_shl(shift)?;
        if b & 0x40 == 0 {
            return Some(v);
        }
        shift += 6;
        if shift > 30 {
            return None;
        }
    }
}

fn svarint(t: &[u8], i: &mut usize) -> Option<i32> {
    let v = varint(t, i)?;
    Some(if v & 1 == 1 {
        -((v >> 1) as i32)
    } else {
        (v >> 1) as i32
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_short_one_line_and_long_forms() {
        // 2 units on the first line (short form), 1 unit one line down (one-line form, code
        // 11), 3 units 5 lines further (no-column form, code 13, svarint 10), 1 unit 2 lines
        // back (long form, code 14, svarint 5 = -2), then 1 unit with no line (code 15).
        let t = [
            0x80 | 1,
            0x00, //
            0x80 | (11 << 3),
            0x01,
            0x02, //
            0x80 | (13 << 3) | 2,
            10, //
            0x80 | (14 << 3),
            5,
            0,
            1,
            1, //
            0x80 | (15 << 3),
        ];
        let at = |unit: i64| line_at(&t, 10, unit * 2);
        assert_eq!(at(0), Some(10));
        assert_eq!(at(1), Some(10));
        assert_eq!(at(2), Some(11));
        assert_eq!(at(3), Some(16));
        assert_eq!(at(5), Some(16));
        assert_eq!(at(6), Some(14));
        assert_eq!(at(7), None);
        assert_eq!(at(8), None, "past the table");
        assert_eq!(line_at(&t, 10, -2), Some(10), "a frame not started yet");
    }

    #[test]
    fn a_table_out_of_step_gives_no_line() {
        assert_eq!(line_at(&[0x01, 0x02], 1, 0), None);
        assert_eq!(
            line_at(&[0x80 | (13 << 3), 0x40], 1, 0),
            None,
            "a varint cut short"
        );
    }
}
