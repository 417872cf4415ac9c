//! The units a user types: sizes (`4k`), rates (`1gbit`), durations (`10s`)
//! and CPU lists, each parsed once here with one range per unit.

use crate::error::Invalid;

/// The largest size [`parse_size`] takes: 1 TiB (a buffer, a message or a
/// byte count; anything larger is a typo).
pub const MAX_SIZE: u64 = 1 << 40;

/// The longest duration [`parse_duration`] takes, seconds (365 days): far
/// below what `Duration::from_secs_f64` can hold, so no parsed duration can
/// make it panic.
pub const MAX_DURATION_S: f64 = 365.0 * 86400.0;

/// The highest rate [`parse_rate`] takes, bits per second (1 Pbit/s).
pub const MAX_RATE_BPS: u64 = 1_000_000_000_000_000;

/// The lowest pacing rate, bits per second: SO_MAX_PACING_RATE counts bytes
/// per second, and 0 bytes/s would mean no pacing at all.
pub const MIN_PACING_BPS: u64 = 8;

/// One unit's grammar: what it is called, an example, its suffixes with
/// their multipliers, and the one range every value must fall in.
struct Unit {
    what: &'static str,
    example: &'static str,
    suffixes: &'static [(&'static [&'static str], f64)],
    range: (f64, f64),
    range_text: &'static str,
}

const SIZE: Unit = Unit {
    what: "size",
    example: "bytes or a k/m/g suffix, e.g. 4k",
    suffixes: &[
        (&["", "b"], 1.0),
        (&["k", "kb", "kib"], 1024.0),
        (&["m", "mb", "mib"], 1048576.0),
        (&["g", "gb", "gib"], 1073741824.0),
    ],
    range: (0.0, MAX_SIZE as f64),
    range_text: "at most 1 TiB",
};

const DURATION: Unit = Unit {
    what: "duration",
    example: "e.g. 10s, 500ms, 2m",
    suffixes: &[
        (&["", "s", "sec"], 1.0),
        (&["ms"], 0.001),
        (&["us"], 0.000_001),
        (&["m", "min"], 60.0),
        (&["h"], 3600.0),
        (&["d"], 86400.0),
    ],
    range: (0.0, MAX_DURATION_S),
    range_text: "at most 365 days (31536000 s)",
};

const RATE: Unit = Unit {
    what: "rate",
    example: "e.g. 1gbit, 500mbit",
    suffixes: &[
        (&[""], 1.0),
        (&["k"], 1e3),
        (&["m"], 1e6),
        (&["g"], 1e9),
        (&["t"], 1e12),
    ],
    range: (1.0, MAX_RATE_BPS as f64),
    range_text: "1 bit/s to 1 Pbit/s",
};

impl Unit {
    /// A number, a suffix from the table, and the value inside the range.
    fn parse(&self, s: &str, unit_of: fn(&str) -> &str) -> Result<f64, Invalid> {
        let t = s.trim().to_ascii_lowercase();
        let split = t
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        let bad = || Invalid(format!("bad {} {s:?}: use {}", self.what, self.example));
        let unit = unit_of(unit.trim());
        let mult = self
            .suffixes
            .iter()
            .find(|(names, _)| names.contains(&unit))
            .map(|(_, m)| *m)
            .ok_or_else(bad)?;
        let v: f64 = num.parse().map_err(|_| bad())?;
        let x = v * mult;
        if !x.is_finite() || x < self.range.0 || x > self.range.1 {
            return Err(Invalid(format!(
                "{} {s:?} is out of range: {}",
                self.what, self.range_text
            )));
        }
        Ok(x)
    }
}

/// Parses a byte size: `80000`, `4k`, `64KiB`, `1m`, `4M` (k = 1024), at
/// most [`MAX_SIZE`].
pub fn parse_size(s: &str) -> Result<u64, Invalid> {
    Ok(SIZE.parse(s, |u| u)?.round() as u64)
}

/// Parses a comma list of sizes.
pub fn parse_sizes(s: &str) -> Result<Vec<u64>, Invalid> {
    let v: Vec<u64> = s
        .split(',')
        .filter(|p| !p.trim().is_empty())
        .map(parse_size)
        .collect::<Result<_, _>>()?;
    if v.is_empty() {
        return Err(Invalid(format!("no sizes in {s:?}")));
    }
    Ok(v)
}

/// Parses a duration in seconds: `10s`, `500ms`, `2m`, `1h`, `7d` or plain
/// seconds, at most [`MAX_DURATION_S`].
pub fn parse_duration(s: &str) -> Result<f64, Invalid> {
    DURATION.parse(s, |u| u)
}

/// Parses a rate in bits per second: `1gbit`, `500mbit`, `2.5g`, `100m`,
/// `10gbps`, `1g/s`, from 1 bit/s to [`MAX_RATE_BPS`].
pub fn parse_rate(s: &str) -> Result<u64, Invalid> {
    fn unit(u: &str) -> &str {
        let u = u.strip_suffix("/s").unwrap_or(u);
        u.strip_suffix("bit")
            .or_else(|| u.strip_suffix("bps"))
            .unwrap_or(u)
    }
    Ok(RATE.parse(s, unit)? as u64)
}

/// Parses a port range `LO-HI` (1 to 65535, LO <= HI, at most 4096
/// ports) or a single port.
pub fn parse_port_range(s: &str) -> Result<(u16, u16), Invalid> {
    let err = || Invalid(format!("bad port range {s:?}: use e.g. 5301-5316"));
    let (a, b) = s.trim().split_once('-').unwrap_or((s.trim(), s.trim()));
    let (a, b): (u16, u16) = (
        a.trim().parse().map_err(|_| err())?,
        b.trim().parse().map_err(|_| err())?,
    );
    if a == 0 || a > b || b - a >= 4096 {
        return Err(err());
    }
    Ok((a, b))
}

/// Parses a CPU list: `0,2,4-7`.
pub fn parse_cpus(s: &str) -> Result<Vec<usize>, Invalid> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let err = || Invalid(format!("bad CPU list {s:?}: use e.g. 0,2,4-7"));
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) =
                    (a.parse().map_err(|_| err())?, b.parse().map_err(|_| err())?);
                if a > b || b >= 1024 {
                    return Err(err());
                }
                out.extend(a..=b);
            }
            None => {
                let c: usize = part.parse().map_err(|_| err())?;
                if c >= 1024 {
                    return Err(err());
                }
                out.push(c)
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_ranges_parse() {
        assert_eq!(parse_port_range("5301-5316").unwrap(), (5301, 5316));
        assert_eq!(parse_port_range("7000").unwrap(), (7000, 7000));
        for bad in ["0-10", "10-5", "1-9000", "a-b", "", "70000"] {
            assert!(parse_port_range(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("80000").unwrap(), 80000);
        assert_eq!(parse_size("4k").unwrap(), 4096);
        assert_eq!(parse_size("64KiB").unwrap(), 65536);
        assert_eq!(parse_size("4m").unwrap(), 4 << 20);
        assert_eq!(parse_sizes("1k,4k,64k").unwrap(), vec![1024, 4096, 65536]);
        assert!(parse_size("4x").is_err());
        assert!(parse_size("").is_err());
        assert!(parse_size("1e400").is_err());
    }

    #[test]
    fn durations_and_rates_parse() {
        assert_eq!(parse_duration("10s").unwrap(), 10.0);
        assert_eq!(parse_duration("500ms").unwrap(), 0.5);
        assert_eq!(parse_duration("2m").unwrap(), 120.0);
        assert!(parse_duration("-1s").is_err());
        // Values that would panic Duration::from_secs_f64, or are absurd.
        for s in [
            "99999999999999999999h",
            "5000000000000h",
            "1e400s",
            "366d",
            "8761h",
        ] {
            assert!(parse_duration(s).is_err(), "{s}");
        }
        assert_eq!(parse_duration("8760h").unwrap(), MAX_DURATION_S);
        let e = parse_duration("5000000000000h").unwrap_err().to_string();
        assert!(e.contains("at most 365 days"), "{e}");
        assert_eq!(parse_rate("1gbit").unwrap(), 1_000_000_000);
        assert_eq!(parse_rate("2.5g").unwrap(), 2_500_000_000);
        assert!(parse_rate("fast").is_err());
        assert_eq!(parse_rate("10gbps").unwrap(), 10_000_000_000);
        assert_eq!(parse_rate("1g/s").unwrap(), 1_000_000_000);
        for bad in ["0", "0.5", "2pbit", "1e16", "-1g"] {
            assert!(parse_rate(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_size("1g").unwrap(), 1 << 30);
        assert!(
            parse_size("1025g")
                .unwrap_err()
                .to_string()
                .contains("at most 1 TiB")
        );
        assert_eq!(parse_cpus("0,2-3").unwrap(), vec![0, 2, 3]);
        assert!(parse_cpus("3-1").is_err());
    }
}
