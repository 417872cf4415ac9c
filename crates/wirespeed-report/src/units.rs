//! Human-readable numbers: rates, sizes, latencies, percentages.

/// The number formats the result types use too (wirespeed-types').
pub use wirespeed_types::text::{
    http_date, human_bps, human_count, human_size, human_us, utc_time,
};

/// Transactions per second as people read them: `12,345 trans/s`.
pub fn human_tps(tps: f64) -> String {
    format!("{} trans/s", human_count(tps))
}

/// A figure in its workload's unit: transactions/s when it has them
/// (request/response), else goodput.
pub fn human_rate(bps: f64, tps: Option<f64>) -> String {
    match tps {
        Some(t) => human_tps(t),
        None => human_bps(bps),
    }
}

/// The width terminal output keeps to.
pub const TERM_WIDTH: usize = 100;

/// `text` with each of its lines folded at [`TERM_WIDTH`] columns between
/// words, the continuation indented 4 more than its line. A word longer
/// than the width stays whole.
pub fn fold(text: &str) -> String {
    text.split('\n')
        .map(fold_line)
        .collect::<Vec<_>>()
        .join("\n")
}

fn fold_line(line: &str) -> String {
    if line.chars().count() <= TERM_WIDTH {
        return line.to_string();
    }
    let body = line.trim_start();
    let first = &line[..line.len() - body.len()];
    let rest = format!("{first}    ");
    let opts = textwrap::Options::new(TERM_WIDTH)
        .initial_indent(first)
        .subsequent_indent(&rest)
        .break_words(false)
        // Names, flags and pods keep their hyphens on one line: folded
        // after `wirespeed-agent-` they could not be pasted.
        .word_splitter(textwrap::WordSplitter::NoHyphenation)
        // Greedy, as fmt and terminals fold: a line ends only where the
        // next word does not fit, so a reader (or a test) can join it.
        .wrap_algorithm(textwrap::WrapAlgorithm::FirstFit);
    textwrap::fill(body, opts)
}

/// A count with its noun: `1 flow`, `4 flows`.
pub fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A number with at most `decimals` decimals and no trailing zeros: `2.5`, `10`.
pub fn trim_num(v: f64, decimals: usize) -> String {
    let s = format!("{:.*}", decimals, if v.is_finite() { v } else { 0.0 });
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// The unit an axis of bit rates up to `max` is labelled in: (divisor, unit).
pub fn bps_unit(max: f64) -> (f64, &'static str) {
    if max >= 1e12 {
        (1e12, "Tbit/s")
    } else if max >= 1e9 {
        (1e9, "Gbit/s")
    } else if max >= 1e6 {
        (1e6, "Mbit/s")
    } else if max >= 1e3 {
        (1e3, "kbit/s")
    } else {
        (1.0, "bit/s")
    }
}

/// A latency tick: `50 us`, `1.5 ms`.
pub fn tick_us(us: f64) -> String {
    if us >= 1e6 {
        format!("{} s", trim_num(us / 1e6, 2))
    } else if us >= 1e3 {
        format!("{} ms", trim_num(us / 1e3, 2))
    } else {
        format!("{} us", trim_num(us, 2))
    }
}

/// A percentage for people: `97%`, `4.5%`, `0.3%`.
pub fn human_pct(p: f64) -> String {
    let p = if p.is_finite() { p } else { 0.0 };
    if p.abs() >= 10.0 {
        format!("{p:.0}%")
    } else {
        format!("{}%", trim_num(p, 1))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn long_lines_fold_at_the_terminal_width_indented() {
        let long = format!("  contended: {}", "word ".repeat(40));
        let f = super::fold(&long);
        assert!(f.lines().count() > 1, "{f}");
        for (i, l) in f.lines().enumerate() {
            assert!(l.chars().count() <= super::TERM_WIDTH, "{l}");
            assert!(i == 0 || l.starts_with("      word"), "{l:?}");
        }
        assert_eq!(super::fold("short"), "short");
        let two = format!("head:\n  {}", "x ".repeat(60));
        let f = super::fold(&two);
        assert!(f.starts_with("head:\n  x x"), "{f}");
        assert!(f.lines().nth(2).unwrap().starts_with("      x"), "{f}");
        let names = format!(
            "{}pod wirespeed-agent-pod-node-n1 --privileged-namespace",
            "a ".repeat(40)
        );
        for l in super::fold(&names).lines() {
            assert!(!l.ends_with('-'), "split at a hyphen: {l:?}");
        }
    }

    use super::*;

    #[test]
    fn units_read_well() {
        assert_eq!(human_bps(18.214e9), "18.21 Gbit/s");
        assert_eq!(human_bps(950.3e6), "950.3 Mbit/s");
        assert_eq!(human_bps(f64::NAN), "0.00 bit/s");
        assert_eq!(human_size(80000), "78.1 KiB");
        assert_eq!(human_size(4096), "4 KiB");
        assert_eq!(human_size(1), "1 B");
        assert_eq!(human_us(18.24), "18.2 us");
        assert_eq!(human_us(1250.0), "1.25 ms");
        assert_eq!(human_count(25310.4), "25,310");
        assert_eq!(human_count(999.0), "999");
        assert_eq!(plural(1, "flow", "flows"), "1 flow");
        assert_eq!(plural(4, "flow", "flows"), "4 flows");
        assert_eq!(trim_num(2.50, 2), "2.5");
        assert_eq!(trim_num(10.0, 2), "10");
        assert_eq!(tick_us(1500.0), "1.5 ms");
        assert_eq!(tick_us(50.0), "50 us");
        assert_eq!(human_pct(97.4), "97%");
        assert_eq!(human_pct(4.56), "4.6%");
        assert_eq!(bps_unit(9.4e9), (1e9, "Gbit/s"));
        assert_eq!(utc_time(0.0), "");
        assert_eq!(utc_time(951_782_400.5), "2000-02-29 00:00:00 UTC");
        assert_eq!(utc_time(1_795_000_000.0), "2026-11-18 11:06:40 UTC");
        // What iperf3 3.12 wrote for timesecs 1795641681.
        assert_eq!(http_date(1_795_641_681.0), "Wed, 25 Nov 2026 21:21:21 GMT");
        assert_eq!(http_date(951_782_400.0), "Tue, 29 Feb 2000 00:00:00 GMT");
    }
}
