//! Numbers as people read them, with their units: rates, sizes,
//! latencies, counts. The result types name their figures with these
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
