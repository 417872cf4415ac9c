//! The figures of a `--breakdown` result: where the round trip is spent at
//! each percentile (one bar per percentile, stacked by segment, as shares
//! of that percentile's round trip) and a waterfall of the slowest
//! sampled transactions on one time axis; the segment percentiles as a
//! table.

use crate::chart::{CLOSE_SVG, W, color, esc, legend, open_svg, plot_rect, svg_num};
use crate::figures::{Figure, Table};
use crate::units::human_us;
use std::fmt::Write;
use wirespeed_types::breakdown::{Breakdown, SEGMENTS, WIRE};
use wirespeed_types::result::TestResult;

/// Left edge of the bars (after the row labels) and right edge.
const X0: f64 = 96.0;
const X1: f64 = W - 96.0;
const ROW: f64 = 26.0;
const TOP: f64 = 10.0;

/// The breakdown's segments as (index in [`SEGMENTS`], label): colours
/// follow the catalogue, so a segment has one colour in every chart.
fn reported(b: &Breakdown) -> Vec<(usize, &'static str)> {
    (0..b.segments.len())
        .filter_map(|i| b.catalogue_index(i).map(|c| (c, SEGMENTS[c].1)))
        .collect()
}

fn segment_legend(b: &Breakdown) -> String {
    legend(
        &reported(b)
            .into_iter()
            .map(|(c, label)| (label.to_string(), color(c).to_string(), false))
            .collect::<Vec<_>>(),
    )
}

/// One segment's rectangle in a row, coloured by segment.
fn rect(o: &mut String, seg: usize, x: f64, y: f64, w: f64, tip: &str) {
    let _ = writeln!(
        o,
        "<rect class=\"mark\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"><title>{}</title></rect>",
        svg_num(x),
        svg_num(y),
        svg_num(w.max(0.0)),
        svg_num(ROW - 8.0),
        color(seg),
        esc(tip)
    );
}

fn row_label(o: &mut String, y: f64, left: &str, right: &str) {
    let _ = writeln!(
        o,
        "<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text><text class=\"tick\" x=\"{}\" y=\"{}\">{}</text>",
        svg_num(X0 - 6.0),
        svg_num(y + ROW / 2.0),
        esc(left),
        svg_num(X1 + 6.0),
        svg_num(y + ROW / 2.0),
        esc(right)
    );
}

fn axis_note(o: &mut String, bottom: f64, text: &str) {
    let _ = writeln!(
        o,
        "<text class=\"axis-title\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
        svg_num((X0 + X1) / 2.0),
        svg_num(bottom + 18.0),
        esc(text)
    );
}

/// The stacked bars: one per percentile, each segment's share of it.
fn stacked(b: &Breakdown) -> Figure {
    let rows = &b.at_percentiles;
    let bottom = TOP + ROW * rows.len() as f64;
    let segs = reported(b);
    let marks = rows.len() * segs.len();
    let mut o = open_svg(
        "breakdown",
        "where the round trip is spent",
        bottom + 28.0,
        marks,
    );
    plot_rect(&mut o, X0, X1, TOP, bottom);
    for (r, s) in rows.iter().enumerate() {
        let y = TOP + ROW * r as f64 + 4.0;
        let mut x = X0;
        for (i, (share, &(c, label))) in s.shares.iter().zip(&segs).enumerate() {
            let w = share.max(0.0) * (X1 - X0);
            let tip = format!(
                "p{}: {} {} ({:.0}%)",
                s.percentile,
                label,
                human_us(s.parts_us.get(i).copied().unwrap_or(0.0)),
                share * 100.0
            );
            rect(&mut o, c, x, y, w, &tip);
            x += w;
        }
        row_label(
            &mut o,
            y - 4.0,
            &format!("p{}", s.percentile),
            &human_us(s.round_trip_us),
        );
    }
    axis_note(&mut o, bottom, "share of the round trip at each percentile");
    o.push_str(CLOSE_SVG);
    let worst = rows.last().map(|s| top_part(s.shares.as_slice()));
    Figure {
        title: "Where the round trip is spent".into(),
        quote: worst
            .map(|(i, sh)| {
                format!(
                    "p{}: {:.0}% {}",
                    rows.last().map_or(0.0, |s| s.percentile),
                    sh * 100.0,
                    b.segment(i).map_or("", |s| s.1)
                )
            })
            .unwrap_or_default(),
        legend: segment_legend(b),
        panels: vec![o],
        note: format!(
            "Each bar is the mean of the transactions ranked at that percentile, cut into segments each timed on one host's clock; {} sampled transactions (1 in {}). docs/latency.md says what each segment covers.",
            b.transactions, b.sampled_every
        ),
        table: segment_table(b).html(),
    }
}

fn top_part(shares: &[f64]) -> (usize, f64) {
    shares
        .iter()
        .copied()
        .enumerate()
        .fold((0, f64::MIN), |a, (i, s)| if s > a.1 { (i, s) } else { a })
}

/// The segments in time order for the waterfall, as (index in
/// [`SEGMENTS`], microseconds): the wire (both ways) is drawn half before
/// the server's part and half after it, before the client's receive.
fn timeline(segs: &[(usize, &str)], parts: &[f64]) -> Vec<(usize, f64)> {
    let p = |i: usize| parts.get(i).copied().unwrap_or(0.0).max(0.0);
    let wire = segs
        .iter()
        .position(|s| s.0 == WIRE)
        .map_or(0.0, |i| p(i) / 2.0);
    let mut v = Vec::with_capacity(segs.len() + 1);
    for (i, &(c, _)) in segs.iter().enumerate() {
        if c == WIRE {
            v.push((c, wire));
            continue;
        }
        if SEGMENTS[c].0 == "client_rx_stack" {
            v.push((WIRE, wire));
        }
        v.push((c, p(i)));
    }
    v
}

/// The slowest transactions as waterfalls on one time axis.
fn waterfall(b: &Breakdown) -> Option<Figure> {
    if b.slowest.is_empty() {
        return None;
    }
    let max = b
        .slowest
        .iter()
        .map(|t| t.round_trip_us)
        .fold(0.0, f64::max);
    let scale = if max > 0.0 { (X1 - X0) / max } else { 0.0 };
    let bottom = TOP + ROW * b.slowest.len() as f64;
    let segs = reported(b);
    let marks = b.slowest.len() * (segs.len() + 1);
    let mut o = open_svg("waterfall", "slowest transactions", bottom + 28.0, marks);
    plot_rect(&mut o, X0, X1, TOP, bottom);
    for (r, t) in b.slowest.iter().enumerate() {
        let y = TOP + ROW * r as f64 + 4.0;
        let mut x = X0;
        for (seg, us) in timeline(&segs, &t.parts_us) {
            let tip = format!("#{} {}: {}", t.seq, SEGMENTS[seg].1, human_us(us));
            rect(&mut o, seg, x, y, us * scale, &tip);
            x += us * scale;
        }
        row_label(
            &mut o,
            y - 4.0,
            &format!("#{}", t.seq),
            &human_us(t.round_trip_us),
        );
    }
    axis_note(
        &mut o,
        bottom,
        &format!("time from the client's write, 0 to {}", human_us(max)),
    );
    o.push_str(CLOSE_SVG);
    Some(Figure {
        title: "The slowest transactions, segment by segment".into(),
        quote: format!("slowest {}", human_us(max)),
        legend: segment_legend(b),
        panels: vec![o],
        note: "Each row is one sampled transaction (flow's transaction number on the left), its segments in the order they happen; the wire is drawn half on the way out and half on the way back.".into(),
        table: String::new(),
    })
}

fn segment_table(b: &Breakdown) -> Table {
    let mut t = Table::new(&["segment", "p50", "p90", "p99", "p99.9"], 1);
    for (i, s) in b.segments.iter().chain([&b.round_trip]).enumerate() {
        let label = b.segment(i).map_or("round trip", |s| s.1);
        t.rows.push(vec![
            label.to_string(),
            human_us(s.p50_us),
            human_us(s.p90_us),
            human_us(s.p99_us),
            human_us(s.p999_us),
        ]);
    }
    t
}

/// The breakdown's figures, if the result has one.
pub fn figures(r: &TestResult) -> Vec<Figure> {
    let Some(b) = &r.breakdown else {
        return Vec::new();
    };
    let mut v = vec![stacked(b)];
    v.extend(waterfall(b));
    v
}
