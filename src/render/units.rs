//! Human units for the cost tables: bytes in B/KiB/MiB/GiB, times in µs/ms/s, n/a for unknown.

pub const NA: &str = "n/a";

pub fn bytes(v: Option<u64>) -> String {
    v.map_or_else(|| NA.to_string(), |b| human_bytes(b as f64))
}

pub fn signed_bytes(v: Option<i64>) -> String {
    match v {
        None => NA.to_string(),
        Some(0) => "0 B".to_string(),
        Some(b) if b > 0 => format!("+{}", human_bytes(b as f64)),
        Some(b) => format!("-{}", human_bytes(-(b as f64))),
    }
}

pub fn human_bytes(b: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b;
    let mut i = 0;
    while v >= 1024.0 && i < UNITS.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{v:.0} B")
    } else {
        format!("{v:.1} {}", UNITS[i])
    }
}

pub fn seconds(v: Option<f64>) -> String {
    v.map_or_else(
        || NA.to_string(),
        |s| crate::duration::human(std::time::Duration::from_secs_f64(s.max(0.0))),
    )
}

pub fn count(v: Option<u64>) -> String {
    v.map_or_else(|| NA.to_string(), |n| n.to_string())
}

/// A count with thousands separated: 16,456,094.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A metric value: integers as integers, fractions with up to 6 significant digits.
pub fn value(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else if v.abs() >= 1000.0 {
        format!("{v:.2}")
    } else {
        let s = format!("{v:.6}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_read_well() {
        assert_eq!(bytes(Some(512)), "512 B");
        assert_eq!(bytes(Some(18_685_952)), "17.8 MiB");
        assert_eq!(bytes(None), "n/a");
        assert_eq!(signed_bytes(Some(36_864)), "+36.0 KiB");
        assert_eq!(signed_bytes(Some(-2048)), "-2.0 KiB");
        assert_eq!(value(3.0), "3");
        assert_eq!(value(0.125), "0.125");
        assert_eq!(value(12345.678), "12345.68");
        assert_eq!(grouped(16_456_094), "16,456,094");
        assert_eq!(grouped(999), "999");
    }
}
