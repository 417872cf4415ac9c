//! Numbers as people read them, with their units: rates, sizes,
//! latencies, counts, times. The result types name their figures with these
//! (an experiment's metric, optimize's goal); the report renders with
//! them too.

/// A bit rate with a unit chosen for it: `18.21 Gbit/s`, `950.3 Mbit/s`.
pub fn human_bps(bps: f64) -> String {
    let bps = if bps.is_finite() { bps.max(0.0) } else { 0.0 };
    let (v, u) = if bps >= 1e12 {
        (bps / 1e12, "Tbit/s")
    } else if bps >= 1e9 {
        (bps / 1e9, "Gbit/s")
    } else if bps >= 1e6 {
        (bps / 1e6, "Mbit/s")
    } else if bps >= 1e3 {
        (bps / 1e3, "kbit/s")
    } else {
        (bps, "bit/s")
    };
    if v >= 100.0 {
        format!("{v:.1} {u}")
    } else {
        format!("{v:.2} {u}")
    }
}

/// A byte size: `1`, `4 KiB`, `1.5 MiB`.
pub fn human_size(bytes: u64) -> String {
    const K: u64 = 1024;
    if bytes < K {
        return format!("{bytes} B");
    }
    let (v, u) = if bytes >= K * K * K {
        (bytes as f64 / (K * K * K) as f64, "GiB")
    } else if bytes >= K * K {
        (bytes as f64 / (K * K) as f64, "MiB")
    } else {
        (bytes as f64 / K as f64, "KiB")
    };
    if (v - v.round()).abs() < 1e-9 {
        format!("{} {u}", v.round() as u64)
    } else {
        format!("{v:.1} {u}")
    }
}

/// A latency in microseconds: `18.2 us`, `1.25 ms`.
pub fn human_us(us: f64) -> String {
    let us = if us.is_finite() { us.max(0.0) } else { 0.0 };
    if us >= 1e6 {
        format!("{:.2} s", us / 1e6)
    } else if us >= 1e4 {
        format!("{:.1} ms", us / 1e3)
    } else if us >= 1e3 {
        format!("{:.2} ms", us / 1e3)
    } else {
        format!("{us:.1} us")
    }
}

/// A rate of events: `25,310` with thousands separators.
pub fn human_count(x: f64) -> String {
    let x = if x.is_finite() { x.max(0.0) } else { 0.0 };
    let n = x.round() as u64;
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
/// A span of time in the largest unit that reads well: `45 s`, `12 min`,
/// `3.5 h`, `2.1 d`.
pub fn human_duration(secs: f64) -> String {
    if secs < 120.0 {
        format!("{secs:.0} s")
    } else if secs < 7200.0 {
        format!("{:.0} min", secs / 60.0)
    } else if secs < 2.0 * 86400.0 {
        format!("{:.1} h", secs / 3600.0)
    } else {
        format!("{:.1} d", secs / 86400.0)
    }
}

/// A Unix time's civil UTC fields: (year, month, day, seconds of the
/// day, weekday 0 = Sunday); None for 0 or nonsense.
fn civil(unix: f64) -> Option<(i64, i64, i64, i64, i64)> {
    if !(unix.is_finite() && unix > 0.0 && unix < 1e11) {
        return None;
    }
    let secs = unix.floor() as i64;
    let (days, rem) = (secs.div_euclid(86400), secs.rem_euclid(86400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    // 1970-01-01 was a Thursday.
    Some((y, m, d, rem, (days + 4).rem_euclid(7)))
}

fn hms(rem: i64) -> String {
    format!("{:02}:{:02}:{:02}", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// A Unix time as `2026-11-23 14:05:09 UTC` (empty for 0 or nonsense).
pub fn utc_time(unix: f64) -> String {
    civil(unix)
        .map(|(y, m, d, rem, _)| format!("{y:04}-{m:02}-{d:02} {} UTC", hms(rem)))
        .unwrap_or_default()
}

/// A Unix time as HTTP and iperf3 write it: `Wed, 25 Nov 2026 21:21:21 GMT`.
pub fn http_date(unix: f64) -> String {
    const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    civil(unix)
        .map(|(y, m, d, rem, wd)| {
            format!(
                "{}, {d:02} {} {y:04} {} GMT",
                DAYS[wd as usize],
                MONTHS[(m - 1) as usize],
                hms(rem)
            )
        })
        .unwrap_or_default()
}
