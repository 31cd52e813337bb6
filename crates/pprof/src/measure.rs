//! Units and numbers as `go tool pprof` prints them: the same unit families (bytes, time,
//! GCU), the same automatic scaling, `%.2f` with `.00` trimmed, and percentages with at least
//! two digits (`%5.2f%%`, or `%5.2g%%` below 1%), so agentprof's tables match Go's digit for
//! digit.

struct Unit {
    name: &'static str,
    aliases: &'static [&'static str],
    factor: f64,
}

struct Family {
    default: (&'static str, f64),
    units: &'static [Unit],
}

const FAMILIES: &[Family] = &[
    Family {
        default: ("B", 1.0),
        units: &[
            Unit {
                name: "B",
                aliases: &["b", "byte"],
                factor: 1.0,
            },
            Unit {
                name: "kB",
                aliases: &["kb", "kbyte", "kilobyte"],
                factor: 1024.0,
            },
            Unit {
                name: "MB",
                aliases: &["mb", "mbyte", "megabyte"],
                factor: 1048576.0,
            },
            Unit {
                name: "GB",
                aliases: &["gb", "gbyte", "gigabyte"],
                factor: 1073741824.0,
            },
            Unit {
                name: "TB",
                aliases: &["tb", "tbyte", "terabyte"],
                factor: 1099511627776.0,
            },
            Unit {
                name: "PB",
                aliases: &["pb", "pbyte", "petabyte"],
                factor: 1125899906842624.0,
            },
        ],
    },
    Family {
        default: ("s", 1e9),
        units: &[
            Unit {
                name: "ns",
                aliases: &["ns", "nanosecond"],
                factor: 1.0,
            },
            Unit {
                name: "us",
                aliases: &["μs", "us", "microsecond"],
                factor: 1e3,
            },
            Unit {
                name: "ms",
                aliases: &["ms", "millisecond"],
                factor: 1e6,
            },
            Unit {
                name: "s",
                aliases: &["s", "sec", "second"],
                factor: 1e9,
            },
            Unit {
                name: "hrs",
                aliases: &["hour", "hr"],
                factor: 3.6e12,
            },
        ],
    },
    Family {
        default: ("GCU", 1.0),
        units: &[
            Unit {
                name: "n*GCU",
                aliases: &["nanogcu"],
                factor: 1e-9,
            },
            Unit {
                name: "u*GCU",
                aliases: &["microgcu"],
                factor: 1e-6,
            },
            Unit {
                name: "m*GCU",
                aliases: &["milligcu"],
                factor: 1e-3,
            },
            Unit {
                name: "GCU",
                aliases: &["gcu"],
                factor: 1.0,
            },
            Unit {
                name: "k*GCU",
                aliases: &["kilogcu"],
                factor: 1e3,
            },
            Unit {
                name: "M*GCU",
                aliases: &["megagcu"],
                factor: 1e6,
            },
            Unit {
                name: "G*GCU",
                aliases: &["gigagcu"],
                factor: 1e9,
            },
            Unit {
                name: "T*GCU",
                aliases: &["teragcu"],
                factor: 1e12,
            },
            Unit {
                name: "P*GCU",
                aliases: &["petagcu"],
                factor: 1e15,
            },
        ],
    },
];

impl Family {
    fn sniff(&self, unit: &str) -> Option<&Unit> {
        let mut u = unit.to_lowercase();
        if u.len() > 2 && u.ends_with('s') {
            u.pop();
        }
        self.units.iter().find(|x| x.aliases.contains(&u.as_str()))
    }

    fn auto(&self, v: f64) -> Option<(f64, &'static str)> {
        let mut best: Option<&Unit> = None;
        for u in self.units {
            if u.factor >= best.map_or(0.0, |b| b.factor) && v / u.factor >= 1.0 {
                best = Some(u);
            }
        }
        best.map(|u| (v / u.factor, u.name))
    }

    fn convert(&self, value: i64, from: &str, to: &str) -> Option<(f64, String)> {
        let f = self.sniff(from)?;
        let v = value as f64 * f.factor;
        if to == "minimum" || to == "auto" {
            return Some(match self.auto(v) {
                Some((x, u)) => (x, u.to_string()),
                None => (v / self.default.1, self.default.0.to_string()),
            });
        }
        Some(match self.sniff(to) {
            Some(t) => (v / t.factor, t.name.to_string()),
            None => (v / self.default.1, self.default.0.to_string()),
        })
    }
}

/// `measurement.Scale`: `value` in `from` expressed in `to` (or scaled automatically for
/// `minimum`/`auto`), with the unit's name.
pub fn scale(value: i64, from: &str, to: &str) -> (f64, String) {
    if value < 0 && value != i64::MIN {
        let (v, u) = scale(-value, from, to);
        return (-v, u);
    }
    for fam in FAMILIES {
        if let Some(r) = fam.convert(value, from, to) {
            return r;
        }
    }
    match to {
        "count" | "sample" | "unit" | "minimum" | "auto" => (value as f64, String::new()),
        _ => (value as f64, to.to_string()),
    }
}

/// `measurement.ScaledLabel`: `%.2f` with `.00` trimmed, then the unit; `0` for zero.
pub(crate) fn scaled_label(value: i64, from: &str, to: &str) -> String {
    let (v, u) = scale(value, from, to);
    let s = format!("{v:.2}");
    let s = s.strip_suffix(".00").unwrap_or(&s);
    if s == "0" || s == "-0" {
        return "0".into();
    }
    format!("{s}{u}")
}

/// `measurement.Percentage`: six characters, e.g. ` 3.14%`, `  100%`, `  0.5%`.
pub fn percentage(value: i64, total: i64) -> String {
    let ratio = if total != 0 {
        (value as f64 / total as f64).abs() * 100.0
    } else {
        0.0
    };
    if (99.95..=100.05).contains(&ratio) {
        "  100%".into()
    } else if ratio >= 1.0 {
        format!("{ratio:5.2}%")
    } else {
        format!("{:>5}%", go_g2(ratio))
    }
}

/// Go's `%.2g`: two significant digits, exponent form below 1e-4, trailing zeros dropped.
pub(crate) fn go_g2(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    let e = format!("{x:.1e}");
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let neg = mant.starts_with('-');
    let digits: String = mant.chars().filter(char::is_ascii_digit).collect();
    let sign = if neg { "-" } else { "" };
    if !(-4..2).contains(&exp) {
        let m = if digits.ends_with('0') {
            digits[..1].to_string()
        } else {
            format!("{}.{}", &digits[..1], &digits[1..])
        };
        let es = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{m}e{es}{:02}", exp.abs());
    }
    let s = if exp >= 0 {
        let int_len = exp as usize + 1;
        let (i, f) = digits.split_at(int_len.min(digits.len()));
        if f.is_empty() {
            i.to_string()
        } else {
            format!("{i}.{f}")
        }
    } else {
        format!("0.{}{}", "0".repeat((-exp - 1) as usize), digits)
    };
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    format!("{sign}{s}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_match_go() {
        assert_eq!(scaled_label(2_960_000_000, "nanoseconds", "s"), "2.96s");
        assert_eq!(scaled_label(1_600_000, "nanoseconds", "ms"), "1.60ms");
        assert_eq!(scaled_label(14_483_435, "bytes", "kB"), "14143.98kB");
        assert_eq!(scaled_label(24_369_000, "bytes", "MB"), "23.24MB");
        assert_eq!(scaled_label(1234, "count", "count"), "1234");
        assert_eq!(scaled_label(0, "nanoseconds", "ms"), "0");
        assert_eq!(scaled_label(10_000_000_000, "nanoseconds", "auto"), "10s");
        assert_eq!(scale(3_000_000, "nanoseconds", "minimum").1, "ms");
        assert_eq!(scale(5, "count", "minimum").1, "");
    }

    #[test]
    fn percentages_match_go() {
        assert_eq!(percentage(1, 1), "  100%");
        assert_eq!(percentage(314, 10000), " 3.14%");
        assert_eq!(percentage(5, 1000), "  0.5%");
        assert_eq!(percentage(123, 100000), " 0.12%");
        assert_eq!(percentage(1, 10_000_000), "1e-05%");
        assert_eq!(percentage(0, 10), "    0%");
        assert_eq!(percentage(9996, 1_000_000), "    1%");
        assert_eq!(go_g2(0.05), "0.05");
        // Printed by Go's fmt.Sprintf("%5.2g%%") for the same values.
        for (x, go) in [
            (0.5, "0.5"),
            (0.001, "0.001"),
            (0.00001, "1e-05"),
            (0.9996, "1"),
            (0.0995, "0.1"),
            (0.00995, "0.01"),
            (0.12345, "0.12"),
            (0.000123, "0.00012"),
        ] {
            assert_eq!(go_g2(x), go, "{x}");
        }
        assert_eq!(go_g2(12.0), "12");
        assert_eq!(go_g2(123.0), "1.2e+02");
    }
}
