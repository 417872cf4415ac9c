//! SVG chart primitives, written by hand: line charts on linear or log
//! axes, horizontal bars and grouped bars, and HTML legends.
//!
//! Hand-written rather than plotters' SVG backend because the page needs
//! what plotters does not emit: a class and a `<title>` (hover text) on
//! every mark, `data-*` attributes the self-check reads, a `rect.plot`
//! that tells the screenshot test where the data is, CSS-styled text that
//! scales with the page and prints, and legends as wrapping HTML.
//!
//! Every chart is `<svg class="chart" data-chart=KIND data-points=N>` and
//! draws N elements of class `mark` (a bar, a line, or a lone point).

use crate::units::trim_num;
use std::fmt::Write;
use wirespeed_types::result::finite;

/// Width of every chart's coordinate system; the page scales it to fit.
pub const W: f64 = 760.0;
/// Series colours: saturated, told apart in print and by most colour-blind readers.
pub const PALETTE: [&str; 10] = [
    "#3b6fb6", "#e08a2c", "#4a9d5b", "#c0504d", "#8064a2", "#2aa4b5", "#a5762f", "#d36ba6",
    "#6b8e23", "#5f6ec9",
];

/// The colour of series `i`.
pub fn color(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// Escapes text for HTML element content and attribute values.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            _ => o.push(c),
        }
    }
    o
}

/// A number for SVG attributes: finite, two decimals.
pub fn svg_num(x: f64) -> String {
    format!("{:.2}", finite(x))
}

/// `s` cut to `max` characters with an ellipsis.
pub fn short(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let t: String = s.chars().take(max.saturating_sub(1)).collect();
        format!("{}…", t.trim_end())
    }
}

/// Text shortened to `max` characters, the full text on hover.
pub fn abbr(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        esc(s)
    } else {
        format!("<span title=\"{}\">{}</span>", esc(s), esc(&short(s, max)))
    }
}

/// Rounds up to 1, 2 or 5 times a power of ten (1 for nothing positive).
pub fn nice_max(v: f64) -> f64 {
    let v = finite(v);
    if v <= 0.0 {
        return 1.0;
    }
    let e = 10f64.powf(v.log10().floor());
    let f = v / e;
    let m = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * e
}

/// A tick formatter.
pub type Fmt<'a> = &'a dyn Fn(f64) -> String;

/// One axis: its range, scale, ticks and how ticks read.
pub struct Axis {
    lo: f64,
    hi: f64,
    log: bool,
    ticks: Vec<(f64, String)>,
    /// Words under or beside the axis (unit or quantity).
    pub title: String,
}

impl Axis {
    /// A linear axis over [lo, hi] widened to nice ticks.
    pub fn linear(lo: f64, hi: f64, fmt: Fmt) -> Axis {
        let (lo, hi) = (finite(lo), finite(hi));
        let (lo, hi) = if hi > lo { (lo, hi) } else { (lo, lo + 1.0) };
        let raw = (hi - lo) / 5.0;
        let mag = 10f64.powf(raw.log10().floor());
        let step = [1.0, 2.0, 2.5, 5.0, 10.0]
            .iter()
            .map(|m| m * mag)
            .find(|s| *s >= raw * 0.999)
            .unwrap_or(10.0 * mag);
        let start = (lo / step + 1e-9).floor() * step;
        let end = (hi / step - 1e-9).ceil() * step;
        let count = ((end - start) / step).round() as usize;
        let ticks = (0..=count.min(40))
            .map(|i| {
                let v = start + step * i as f64;
                let v = if v.abs() < step * 1e-9 { 0.0 } else { v };
                (v, fmt(v))
            })
            .collect();
        Axis {
            lo: start,
            hi: end.max(start + step),
            log: false,
            ticks,
            title: String::new(),
        }
    }

    /// A linear axis over exactly [lo, hi] with nice ticks inside it (for
    /// time, where widening would leave empty space at the ends).
    pub fn linear_exact(lo: f64, hi: f64, fmt: Fmt) -> Axis {
        let (lo, hi) = (finite(lo), finite(hi));
        let (lo, hi) = if hi > lo { (lo, hi) } else { (lo, lo + 1.0) };
        let mut a = Axis::linear(lo, hi, fmt);
        let eps = (hi - lo) * 1e-6;
        a.ticks.retain(|t| t.0 >= lo - eps && t.0 <= hi + eps);
        a.lo = lo;
        a.hi = hi;
        a
    }

    /// A linear axis from 0 to the nice maximum of `max`.
    pub fn from_zero(max: f64, fmt: Fmt) -> Axis {
        Axis::linear(0.0, max.max(0.0), fmt)
    }

    /// A log-10 axis covering [lo, hi] (both > 0), ticks at 1, 2 and 5
    /// times powers of ten (powers only when it spans many decades).
    pub fn log10(lo: f64, hi: f64, fmt: Fmt) -> Axis {
        let lo = if lo.is_finite() && lo > 0.0 { lo } else { 1.0 };
        let hi = if hi.is_finite() && hi > lo {
            hi
        } else {
            lo * 10.0
        };
        let a = lo.log10().floor() as i32;
        let b = hi.log10().ceil().max(a as f64 + 1.0) as i32;
        let mults: &[f64] = if b - a > 3 { &[1.0] } else { &[1.0, 2.0, 5.0] };
        let mut ticks = Vec::new();
        for e in a..=b {
            for m in mults {
                let v = m * 10f64.powi(e);
                if v >= 10f64.powi(a) && v <= 10f64.powi(b) {
                    ticks.push((v, fmt(v)));
                }
            }
        }
        // Trim empty decades' ticks beyond the data, keeping one each side.
        let first = ticks.iter().rposition(|t| t.0 <= lo).unwrap_or(0);
        let last = ticks
            .iter()
            .position(|t| t.0 >= hi)
            .unwrap_or(ticks.len() - 1);
        let ticks: Vec<(f64, String)> = ticks[first..=last].to_vec();
        Axis {
            lo: ticks.first().map_or(lo, |t| t.0),
            hi: ticks.last().map_or(hi, |t| t.0),
            log: true,
            ticks,
            title: String::new(),
        }
    }

    /// An axis with these ticks (value, label), linear or log.
    pub fn explicit(ticks: Vec<(f64, String)>, log: bool) -> Axis {
        let vals = ticks.iter().map(|t| t.0).filter(|v| !log || *v > 0.0);
        let lo = vals.clone().fold(f64::INFINITY, f64::min);
        let hi = vals.fold(f64::NEG_INFINITY, f64::max);
        let (lo, hi) = if lo.is_finite() && hi > lo {
            (lo, hi)
        } else if lo.is_finite() {
            if log {
                (lo / 2.0, lo * 2.0)
            } else {
                (lo - 1.0, lo + 1.0)
            }
        } else {
            (1.0, 2.0)
        };
        Axis {
            lo,
            hi,
            log,
            ticks,
            title: String::new(),
        }
    }

    /// Sets the axis title.
    pub fn titled(mut self, t: &str) -> Axis {
        self.title = t.to_string();
        self
    }

    /// Position of `v` between pixel coordinates `a` (lo) and `b` (hi).
    pub fn pos(&self, v: f64, a: f64, b: f64) -> f64 {
        let t = if self.log {
            let (l, h) = (self.lo.log10(), self.hi.log10());
            (v.max(self.lo * 1e-3).log10() - l) / (h - l)
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        a + (b - a) * finite(t).clamp(-0.02, 1.02)
    }
}

/// Formats bit-rate ticks in one unit chosen for `max`: `2.5 Gbit/s`.
pub fn bps_ticks(max: f64) -> impl Fn(f64) -> String {
    let (div, unit) = crate::units::bps_unit(max);
    move |v| format!("{} {unit}", trim_num(v / div, 2))
}

/// Formats count ticks with thousands separators: `20,000`.
pub fn count_ticks(v: f64) -> String {
    if v.abs() < 10.0 && v.fract() != 0.0 {
        trim_num(v, 1)
    } else {
        crate::human_count(v)
    }
}

/// Formats time ticks in seconds: `1.5 s`.
pub fn secs_ticks(v: f64) -> String {
    format!("{} s", trim_num(v, 2))
}

/// Formats percentage ticks: `50%`.
pub fn pct_ticks(v: f64) -> String {
    format!("{}%", trim_num(v, 1))
}

/// One line of a line chart.
#[derive(Debug, Clone)]
pub struct Line {
    /// Legend and hover name.
    pub name: String,
    /// Stroke colour.
    pub color: String,
    /// Dashed (a secondary figure of the same series, e.g. p99 beside p50).
    pub dash: bool,
    /// Stroke width.
    pub width: f64,
    /// (x, y) points in data units, in x order.
    pub points: Vec<(f64, f64)>,
    /// Shown in the legend.
    pub legend: bool,
}

impl Line {
    /// A solid line of width 2 shown in the legend.
    pub fn new(name: impl Into<String>, color: &str, points: Vec<(f64, f64)>) -> Line {
        Line {
            name: name.into(),
            color: color.to_string(),
            dash: false,
            width: 2.0,
            points,
            legend: true,
        }
    }

    /// The same line dashed.
    pub fn dashed(mut self) -> Line {
        self.dash = true;
        self
    }

    /// The same line with another width.
    pub fn width(mut self, w: f64) -> Line {
        self.width = w;
        self
    }
}

/// A line chart: lines over two axes, with hover text on every point.
pub struct LineChart<'a> {
    /// `data-chart` kind.
    pub kind: &'a str,
    /// Accessible name.
    pub title: String,
    /// Horizontal axis.
    pub x: Axis,
    /// Vertical axis.
    pub y: Axis,
    /// The lines.
    pub lines: Vec<Line>,
    /// Shade x below this value (the warm-up) with this label.
    pub shade_before: Option<(f64, String)>,
    /// Height in chart units.
    pub height: f64,
    /// How a point reads on hover: (x, y) to text.
    pub hover: &'a dyn Fn(f64, f64) -> String,
}

/// Left edge of line charts' plot area.
pub const PLOT_X0: f64 = 78.0;
/// Right edge of line charts' plot area.
pub const PLOT_X1: f64 = W - 18.0;

/// Opens a chart's `<svg>` announcing `points` marks.
pub fn open_svg(kind: &str, title: &str, h: f64, points: usize) -> String {
    format!(
        "<svg class=\"chart\" data-chart=\"{kind}\" data-points=\"{points}\" viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"{t}\">\n",
        w = svg_num(W),
        h = svg_num(h),
        t = esc(title)
    )
}

/// The plot area's rectangle: where the data is drawn (the screenshot
/// test looks there for drawn pixels).
pub fn plot_rect(o: &mut String, x0: f64, x1: f64, top: f64, bottom: f64) {
    let _ = writeln!(
        o,
        "<rect class=\"plot\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
        svg_num(x0),
        svg_num(top),
        svg_num(x1 - x0),
        svg_num(bottom - top)
    );
}

/// Closes a chart's `<svg>`.
pub const CLOSE_SVG: &str = "</svg>\n";

/// A plot area: left and right x, top and bottom y.
type Frame = (f64, f64, f64, f64);

impl LineChart<'_> {
    /// The SVG.
    pub fn svg(&self) -> String {
        let h = self.height;
        let (x0, x1, top, bottom) = (PLOT_X0, PLOT_X1, 16.0, h - 36.0);
        let f: Frame = (x0, x1, top, bottom);
        let drawn: Vec<&Line> = self.lines.iter().filter(|l| !l.points.is_empty()).collect();
        let mut o = open_svg(self.kind, &self.title, h, drawn.len());
        plot_rect(&mut o, x0, x1, top, bottom);
        if let Some((until, label)) = &self.shade_before {
            let xe = self.x.pos(*until, x0, x1);
            if xe > x0 + 1.0 {
                let _ = writeln!(
                    o,
                    "<rect class=\"shade\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/><text class=\"shade-label\" x=\"{}\" y=\"{}\">{}</text>",
                    svg_num(x0),
                    svg_num(top),
                    svg_num(xe - x0),
                    svg_num(bottom - top),
                    svg_num(x0 + 4.0),
                    svg_num(bottom - 5.0),
                    esc(label)
                );
            }
        }
        self.grid(&mut o, f);
        self.axes(&mut o, f);
        // Thin lines first so the thick ones (totals) stay on top.
        let mut order: Vec<&&Line> = drawn.iter().collect();
        order.sort_by(|a, b| a.width.total_cmp(&b.width));
        for l in order {
            self.draw(&mut o, l, f);
        }
        o.push_str(CLOSE_SVG);
        o
    }

    /// The grid lines and tick labels of both axes.
    fn grid(&self, o: &mut String, (x0, x1, top, bottom): Frame) {
        for (v, label) in &self.y.ticks {
            let y = self.y.pos(*v, bottom, top);
            let _ = writeln!(
                o,
                "<line class=\"grid\" x1=\"{}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\"/><text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
                svg_num(x0),
                svg_num(x1),
                svg_num(x0 - 6.0),
                svg_num(y + 4.0),
                esc(label),
                y = svg_num(y)
            );
        }
        let mut last_right = f64::NEG_INFINITY;
        for (v, label) in &self.x.ticks {
            let x = self.x.pos(*v, x0, x1);
            let _ = writeln!(
                o,
                "<line class=\"grid\" x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\"/>",
                svg_num(top),
                svg_num(bottom),
                x = svg_num(x)
            );
            // Skip a label that would overlap the previous one.
            let half = label.chars().count() as f64 * 3.3;
            if x - half > last_right + 4.0 {
                let _ = writeln!(
                    o,
                    "<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                    svg_num(x),
                    svg_num(bottom + 15.0),
                    esc(label)
                );
                last_right = x + half;
            }
        }
    }

    /// The two axis lines and their titles.
    fn axes(&self, o: &mut String, (x0, x1, top, bottom): Frame) {
        let h = self.height;
        let _ = writeln!(
            o,
            "<line class=\"axis\" x1=\"{}\" y1=\"{b}\" x2=\"{}\" y2=\"{b}\"/><line class=\"axis\" x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{b}\"/>",
            svg_num(x0),
            svg_num(x1),
            svg_num(top),
            b = svg_num(bottom),
            x = svg_num(x0)
        );
        if !self.x.title.is_empty() {
            let _ = writeln!(
                o,
                "<text class=\"axis-title\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
                svg_num(x1),
                svg_num(h - 4.0),
                esc(&self.x.title)
            );
        }
        if !self.y.title.is_empty() {
            let _ = writeln!(
                o,
                "<text class=\"axis-title\" x=\"{}\" y=\"{}\">{}</text>",
                svg_num(x0 + 4.0),
                svg_num(top - 3.0),
                esc(&self.y.title)
            );
        }
    }

    /// Line `l`: a path with a dot per point (up to 120 points), or a
    /// single mark for one point.
    fn draw(&self, o: &mut String, l: &Line, (x0, x1, top, bottom): Frame) {
        let pts: Vec<(f64, f64)> = l
            .points
            .iter()
            .map(|&(x, y)| (self.x.pos(x, x0, x1), self.y.pos(y, bottom, top)))
            .collect();
        let dash = if l.dash {
            " stroke-dasharray=\"6 4\""
        } else {
            ""
        };
        if pts.len() == 1 {
            let _ = writeln!(
                o,
                "<circle class=\"mark\" cx=\"{}\" cy=\"{}\" r=\"4\" style=\"fill:{}\"><title>{}</title></circle>",
                svg_num(pts[0].0),
                svg_num(pts[0].1),
                l.color,
                esc(&format!(
                    "{}: {}",
                    l.name,
                    (self.hover)(l.points[0].0, l.points[0].1)
                ))
            );
            return;
        }
        let d: String = pts
            .iter()
            .enumerate()
            .map(|(i, (x, y))| {
                format!(
                    "{}{} {}",
                    if i == 0 { 'M' } else { 'L' },
                    svg_num(*x),
                    svg_num(*y)
                )
            })
            .collect();
        let _ = writeln!(
            o,
            "<path class=\"mark line\" d=\"{d}\" style=\"stroke:{}\" stroke-width=\"{}\"{dash}><title>{}</title></path>",
            l.color,
            svg_num(l.width),
            esc(&l.name)
        );
        if pts.len() <= 120 {
            for ((x, y), (dx, dy)) in pts.iter().zip(&l.points) {
                let _ = writeln!(
                    o,
                    "<circle class=\"pt\" cx=\"{}\" cy=\"{}\" r=\"{}\" style=\"fill:{}\"><title>{}</title></circle>",
                    svg_num(*x),
                    svg_num(*y),
                    svg_num((l.width + 1.0).min(3.5)),
                    l.color,
                    esc(&format!("{}: {}", l.name, (self.hover)(*dx, *dy)))
                );
            }
        }
    }

    /// The chart's legend as HTML (lines marked `legend`).
    pub fn legend(&self) -> String {
        legend(
            &self
                .lines
                .iter()
                .filter(|l| l.legend && !l.points.is_empty())
                .map(|l| (l.name.clone(), l.color.clone(), l.dash))
                .collect::<Vec<_>>(),
        )
    }
}

/// An HTML legend: a swatch (solid or dashed) and a name per entry; long
/// names are shortened with the full name on hover.
pub fn legend(items: &[(String, String, bool)]) -> String {
    if items.is_empty() {
        return String::new();
    }
    let mut o = String::from("<div class=\"legend\">");
    for (name, color, dash) in items {
        let cls = if *dash { "sw dash" } else { "sw" };
        let _ = write!(
            o,
            "<span><i class=\"{cls}\" style=\"border-color:{color}\"></i>{}</span>",
            abbr(name, 40)
        );
    }
    o.push_str("</div>\n");
    o
}

/// One horizontal bar: a label, a value, an optional min-max whisker, a
/// note after the value.
#[derive(Debug, Clone, Default)]
pub struct Bar {
    /// Row label (shortened on screen, full on hover).
    pub label: String,
    /// Bar length.
    pub value: f64,
    /// Min-max whisker.
    pub range: Option<(f64, f64)>,
    /// Text after the value.
    pub note: String,
    /// Drawn grey, with a dashed reference line across the chart.
    pub baseline: bool,
    /// Bar colour (the first palette colour if empty).
    pub color: String,
}

const LABEL_W: f64 = 210.0;

/// Vertical grid lines and tick labels of a horizontal value axis.
fn x_axis(o: &mut String, x0: f64, x1: f64, top: f64, bottom: f64, axis: &Axis) {
    for (v, label) in &axis.ticks {
        let x = axis.pos(*v, x0, x1);
        let _ = writeln!(
            o,
            "<line class=\"grid\" x1=\"{x}\" y1=\"{top}\" x2=\"{x}\" y2=\"{bottom}\"/><text class=\"tick\" x=\"{x}\" y=\"{ty}\" text-anchor=\"middle\">{}</text>",
            esc(label),
            x = svg_num(x),
            top = svg_num(top),
            bottom = svg_num(bottom),
            ty = svg_num(bottom + 14.0)
        );
    }
}

/// Width for `chars` characters of 11 px text, within [lo, hi].
fn text_w(chars: usize, lo: f64, hi: f64) -> f64 {
    (chars as f64 * 6.3 + 12.0).clamp(lo, hi)
}

/// Horizontal bars, one per row, on a value axis from zero.
pub fn hbar_chart(kind: &str, title: &str, rows: &[Bar], fmt: Fmt, tick: Fmt) -> String {
    let row_h = if rows.len() > 16 { 18.0 } else { 26.0 };
    let bar_h = row_h - 8.0;
    let top = 10.0;
    let bottom = top + row_h * rows.len() as f64;
    let h = bottom + 30.0;
    let label_chars = rows.iter().map(|r| r.label.chars().count().min(32)).max();
    let label_w = text_w(label_chars.unwrap_or(0), 60.0, LABEL_W);
    let value_chars = rows
        .iter()
        .map(|r| (fmt(r.value).chars().count() + 1 + r.note.chars().count()).min(48))
        .max();
    let (x0, x1) = (
        label_w + 10.0,
        W - text_w(value_chars.unwrap_or(0), 80.0, 310.0),
    );
    let axis = Axis::from_zero(
        rows.iter()
            .map(|r| r.range.map_or(r.value, |(_, hi)| hi.max(r.value)))
            .fold(0.0, f64::max),
        tick,
    );
    let max = axis.hi;
    let sx = |v: f64| x0 + (x1 - x0) * (finite(v).max(0.0) / max).min(1.0);
    let mut o = open_svg(kind, title, h, rows.len());
    plot_rect(&mut o, x0, x1, top, bottom);
    x_axis(&mut o, x0, x1, top, bottom, &axis);
    if let Some(b) = rows.iter().find(|r| r.baseline) {
        let _ = writeln!(
            o,
            "<line class=\"baseline-line\" x1=\"{x}\" y1=\"{t}\" x2=\"{x}\" y2=\"{b}\"/>",
            x = svg_num(sx(b.value)),
            t = svg_num(top),
            b = svg_num(bottom)
        );
    }
    for (i, r) in rows.iter().enumerate() {
        let y = top + row_h * i as f64 + 4.0;
        let color = if r.baseline {
            "#9a9a9a"
        } else if r.color.is_empty() {
            PALETTE[0]
        } else {
            &r.color
        };
        let _ = writeln!(
            o,
            "<text class=\"label\" x=\"{lx}\" y=\"{ty}\" text-anchor=\"end\">{}<title>{}</title></text>",
            esc(&short(&r.label, 32)),
            esc(&r.label),
            lx = svg_num(label_w),
            ty = svg_num(y + bar_h / 2.0 + 4.0)
        );
        let _ = writeln!(
            o,
            "<rect class=\"mark{b}\" x=\"{x}\" y=\"{y}\" width=\"{w}\" height=\"{bh}\" style=\"fill:{color}\" data-value=\"{v}\"><title>{t}: {val}</title></rect>",
            b = if r.baseline { " baseline" } else { "" },
            x = svg_num(x0),
            y = svg_num(y),
            w = svg_num((sx(r.value) - x0).max(1.0)),
            bh = svg_num(bar_h),
            v = svg_num(r.value),
            t = esc(&r.label),
            val = esc(&fmt(r.value))
        );
        if let Some((lo, hi)) = r.range {
            let ym = y + bar_h / 2.0;
            let _ = writeln!(
                o,
                "<path class=\"whisker\" d=\"M{a} {ym}H{b}M{a} {y1}V{y2}M{b} {y1}V{y2}\"/>",
                a = svg_num(sx(lo)),
                b = svg_num(sx(hi)),
                ym = svg_num(ym),
                y1 = svg_num(ym - 5.0),
                y2 = svg_num(ym + 5.0)
            );
        }
        let value = fmt(r.value);
        let _ = writeln!(
            o,
            "<text class=\"value\" x=\"{x}\" y=\"{y}\">{}<title>{}</title></text>",
            esc(&short(format!("{value} {}", r.note).trim_end(), 48)),
            esc(&format!("{value} {}", r.note)),
            x = svg_num(x1 + 6.0),
            y = svg_num(y + bar_h / 2.0 + 4.0)
        );
    }
    o.push_str(CLOSE_SVG);
    o
}

/// Grouped horizontal bars: per group, one bar per series (None: no bar).
pub fn grouped_chart(
    kind: &str,
    title: &str,
    series: &[String],
    groups: &[(String, Vec<Option<f64>>)],
    fmt: Fmt,
    tick: Fmt,
) -> String {
    let bar_h = 12.0;
    let gap = 12.0;
    let top = 8.0;
    let group_h = |g: &(String, Vec<Option<f64>>)| g.1.len() as f64 * (bar_h + 2.0) + gap;
    let total: f64 = groups.iter().map(group_h).sum();
    let bottom = top + total;
    let h = bottom + 30.0;
    let label_chars = groups.iter().map(|g| g.0.chars().count().min(32)).max();
    let label_w = text_w(label_chars.unwrap_or(0), 60.0, LABEL_W);
    let (x0, x1) = (label_w + 10.0, W - 110.0);
    let axis = Axis::from_zero(
        groups
            .iter()
            .flat_map(|g| g.1.iter().flatten())
            .copied()
            .fold(0.0, f64::max),
        tick,
    );
    let max = axis.hi;
    let sx = |v: f64| x0 + (x1 - x0) * (finite(v).max(0.0) / max).min(1.0);
    let points: usize = groups.iter().map(|g| g.1.iter().flatten().count()).sum();
    let mut o = open_svg(kind, title, h, points);
    plot_rect(&mut o, x0, x1, top, bottom);
    x_axis(&mut o, x0, x1, top, bottom, &axis);
    let mut y = top + gap / 2.0;
    for g in groups {
        let gh = g.1.len() as f64 * (bar_h + 2.0);
        let _ = writeln!(
            o,
            "<text class=\"label\" x=\"{lx}\" y=\"{ty}\" text-anchor=\"end\">{}<title>{}</title></text>",
            esc(&short(&g.0, 32)),
            esc(&g.0),
            lx = svg_num(label_w),
            ty = svg_num(y + gh / 2.0 + 3.0)
        );
        for (k, v) in g.1.iter().enumerate() {
            if let Some(v) = v {
                let name = series.get(k).map(String::as_str).unwrap_or("");
                let _ = writeln!(
                    o,
                    "<rect class=\"mark\" x=\"{x}\" y=\"{y}\" width=\"{w}\" height=\"{bh}\" style=\"fill:{c}\" data-value=\"{dv}\"><title>{g}, {s}: {val}</title></rect><text class=\"value\" x=\"{vx}\" y=\"{vy}\">{val}</text>",
                    x = svg_num(x0),
                    y = svg_num(y),
                    w = svg_num((sx(*v) - x0).max(1.0)),
                    bh = svg_num(bar_h),
                    c = color(k),
                    dv = svg_num(*v),
                    g = esc(&g.0),
                    s = esc(name),
                    val = esc(&fmt(*v)),
                    vx = svg_num(sx(*v) + 4.0),
                    vy = svg_num(y + 10.0)
                );
            }
            y += bar_h + 2.0;
        }
        y += gap;
    }
    o.push_str(CLOSE_SVG);
    o
}

/// The legend of a grouped chart's series.
pub fn series_legend(series: &[String]) -> String {
    legend(
        &series
            .iter()
            .enumerate()
            .map(|(k, s)| (s.clone(), color(k).to_string(), false))
            .collect::<Vec<_>>(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_axis_maxima() {
        assert_eq!(nice_max(0.0), 1.0);
        assert_eq!(nice_max(1.7e9), 2e9);
        assert_eq!(nice_max(3.1), 5.0);
        assert_eq!(nice_max(7.0), 10.0);
        assert_eq!(nice_max(f64::NAN), 1.0);
    }

    #[test]
    fn linear_ticks_are_round_and_cover_the_data() {
        let f = |v: f64| trim_num(v, 2);
        let a = Axis::linear(-0.4, 2.1, &f);
        let t: Vec<&str> = a.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(t, ["-0.5", "0", "0.5", "1", "1.5", "2", "2.5"]);
        let a = Axis::from_zero(9.4e9, &f);
        assert_eq!(a.ticks.last().unwrap().0, 1e10);
        assert_eq!(a.pos(5e9, 0.0, 100.0), 50.0);
        // Nothing to draw still gives a usable axis.
        let a = Axis::from_zero(0.0, &f);
        assert!(a.ticks.len() >= 2);
    }

    #[test]
    fn log_ticks_span_the_data() {
        let f = |v: f64| trim_num(v, 2);
        let a = Axis::log10(18.0, 840.0, &f);
        let t: Vec<&str> = a.ticks.iter().map(|t| t.1.as_str()).collect();
        assert_eq!(t, ["10", "20", "50", "100", "200", "500", "1000"]);
        assert!((a.pos(100.0, 0.0, 2.0) - 1.0).abs() < 1e-9);
        let a = Axis::log10(1.0, 1e6, &f);
        assert!(a.ticks.iter().all(|t| t.1.starts_with('1')));
    }

    #[test]
    fn lines_and_bars_draw_as_many_marks_as_they_announce() {
        let hover = |x: f64, y: f64| format!("{x} {y}");
        let f = |v: f64| trim_num(v, 2);
        let c = LineChart {
            kind: "t",
            title: "t".into(),
            x: Axis::linear(0.0, 2.0, &f),
            y: Axis::from_zero(3.0, &f),
            lines: vec![
                Line::new("a", color(0), vec![(0.0, 1.0), (1.0, 2.0)]),
                Line::new("b", color(1), vec![(1.0, 3.0)]).dashed(),
                Line::new("empty", color(2), vec![]),
            ],
            shade_before: Some((0.5, "warm-up".into())),
            height: 200.0,
            hover: &hover,
        };
        let svg = c.svg();
        assert!(svg.contains("data-points=\"2\""));
        assert_eq!(svg.matches("class=\"mark").count(), 2);
        assert!(!c.legend().contains("empty"));
        let bars = hbar_chart(
            "b",
            "b",
            &[Bar {
                label: "a very long label that will not fit in the space given".into(),
                value: 1.0,
                ..Bar::default()
            }],
            &f,
            &f,
        );
        assert!(bars.contains("…") && bars.contains("<title>a very long label"));
        assert_eq!(bars.matches("class=\"mark").count(), 1);
    }
}
