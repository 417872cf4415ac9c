//! A Kubernetes path run's cases ([`PathsReport`]) for people and for
//! pipelines: a terminal table, CSV, JUnit XML (one testcase per path and
//! pair, so CI systems list each; quick-junit writes it), and an HTML
//! page with the path x pair table and a heatmap per workload.

use crate::chart::esc;
use crate::table::new_table;
use crate::units::human_us;
use std::collections::BTreeMap;
use std::fmt::Write;
use wirespeed_types::paths::{CaseStatus, PathCase, PathsReport};

/// A case's figure with its unit: "9.87 Gbit/s" or "10,965 trans/s".
fn figure(v: f64, unit: &str) -> String {
    if unit == "bit/s" {
        format!("{:.2} Gbit/s", v / 1e9)
    } else {
        crate::human_tps(v)
    }
}

/// A case's figure without its unit: "9.87" (Gbit/s) or "10,965".
fn bare(v: f64, unit: &str) -> String {
    if unit == "bit/s" {
        format!("{:.2}", v / 1e9)
    } else {
        crate::human_count(v)
    }
}

/// A case's 95% interval in its median's unit: "9.12 .. 10.40".
fn interval(c: &PathCase) -> String {
    c.ci95
        .map(|[lo, hi]| format!("{} .. {}", bare(lo, &c.unit), bare(hi, &c.unit)))
        .unwrap_or_else(|| "-".into())
}

fn status_word(c: &PathCase) -> &'static str {
    match c.status() {
        CaseStatus::Passed => "pass",
        CaseStatus::Failed => "FAIL",
        CaseStatus::Unmeasured => "NOT MEASURED",
        CaseStatus::Contended => "CONTENDED",
    }
}

/// What went wrong with a case, in one line (empty when it passed).
fn detail(c: &PathCase) -> String {
    let mut d: Vec<String> = c.breaches.clone();
    if let Some(why) = &c.contended {
        d.insert(0, why.clone());
    }
    if let Some(e) = &c.error {
        d.insert(0, e.clone());
    } else if (c.values.len() as u32) < c.repeats.max(1) {
        d.insert(
            0,
            format!("{} of {} repeats measured", c.values.len(), c.repeats),
        );
    }
    d.join("; ")
}

/// The cases as a terminal table (path, workload, pair, median, the 95%
/// interval and p99 where any case has them, outcome), then what was not
/// measured, left out or gated, each folded at 100 columns.
pub fn render_paths(r: &PathsReport) -> String {
    // Columns no case has a figure for (p99 of bulk runs, the interval
    // of single repeats) are left out: the table fits a terminal.
    let p99 = r.cases.iter().any(|c| c.p99_us.is_some());
    let ci = r.cases.iter().any(|c| c.ci95.is_some());
    let mut head = vec!["path", "workload", "pair", "median"];
    head.extend(ci.then_some("95% interval"));
    head.extend(p99.then_some("p99"));
    head.push("result");
    let mut t = new_table(&head, 3);
    for c in &r.cases {
        let mut row = vec![
            c.path_label(),
            c.workload.clone(),
            c.pair(),
            c.median
                .map(|v| figure(v, &c.unit))
                .unwrap_or_else(|| "-".into()),
        ];
        if ci {
            row.push(interval(c));
        }
        if p99 {
            row.push(c.p99_us.map(human_us).unwrap_or_else(|| "-".into()));
        }
        row.push(status_word(c).into());
        t.add_row(row);
    }
    let mut out = format!("{t}\n");
    let mut lines: Vec<String> = r
        .cases
        .iter()
        .filter(|c| c.status() != CaseStatus::Passed)
        .map(|c| format!("{} {}: {}", status_word(c), c.label(), detail(c)))
        .collect();
    lines.extend(r.unplanned.iter().map(|u| format!("NOT MEASURED {u}")));
    lines.extend(r.left_out.iter().map(|l| format!("left out: {l}")));
    lines.extend(r.gates.iter().map(|g| format!("gate: {g}")));
    for l in lines {
        let _ = writeln!(out, "{}", crate::fold(&l));
    }
    let _ = writeln!(
        out,
        "{}: {} cases, {} passed",
        r.verdict(),
        r.cases.len(),
        r.passed_count()
    );
    out
}

/// The CSV header of [`render_paths_csv`].
pub const PATHS_CSV_HEADER: &str = "path,workload,client_node,server_node,client_nic,server_nic,unit,repeats,measured,median,mean,ci95_low,ci95_high,p99_us,result,detail,policy_load";

/// One CSV row per case, after [`PATHS_CSV_HEADER`].
pub fn render_paths_csv(r: &PathsReport) -> String {
    let num = |v: Option<f64>| v.map(|x| format!("{x}")).unwrap_or_default();
    let mut out = format!("{PATHS_CSV_HEADER}\n");
    for c in &r.cases {
        let fields = [
            c.path.clone(),
            c.workload.clone(),
            c.client_node.clone(),
            c.server_node.clone(),
            c.client_nic.clone(),
            c.server_nic.clone(),
            c.unit.clone(),
            c.repeats.to_string(),
            c.values.len().to_string(),
            num(c.median),
            num(c.mean),
            num(c.ci95.map(|x| x[0])),
            num(c.ci95.map(|x| x[1])),
            num(c.p99_us),
            status_word(c).to_lowercase(),
            detail(c),
            c.policy_load.map(|n| n.to_string()).unwrap_or_default(),
        ];
        let row: Vec<String> = fields.iter().map(|f| crate::csv_field(f)).collect();
        let _ = writeln!(out, "{}", row.join(","));
    }
    out
}

/// JUnit XML: a testsuite per path, a testcase per workload and pair
/// (classname `wirespeed.k8s.PATH`); a broken gate is a failure, a case
/// not measured or contended an error (of that type), a path with nothing to test a skipped case.
pub fn render_paths_junit(r: &PathsReport) -> Result<String, quick_junit::SerializeError> {
    use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
    let mut report = Report::new("wirespeed k8s run");
    let mut suites: BTreeMap<&str, TestSuite> = BTreeMap::new();
    for c in &r.cases {
        let status = match c.status() {
            CaseStatus::Passed => TestCaseStatus::success(),
            CaseStatus::Failed => {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                s.set_message(c.breaches.join("; ")).set_type("gate");
                s
            }
            CaseStatus::Unmeasured => {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
                s.set_message(detail(c)).set_type("not measured");
                s
            }
            CaseStatus::Contended => {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
                s.set_message(detail(c)).set_type("contended");
                s
            }
        };
        let name = match c.policy_load {
            Some(n) => format!("{} {} under {n} policies", c.workload, c.pair()),
            None => format!("{} {}", c.workload, c.pair()),
        };
        let mut tc = TestCase::new(name, status);
        tc.set_classname(format!("wirespeed.k8s.{}", c.path));
        if let Some(m) = c.median {
            tc.set_system_out(format!(
                "median {}{}",
                figure(m, &c.unit),
                c.p99_us
                    .map(|p| format!(", p99 {}", human_us(p)))
                    .unwrap_or_default()
            ));
        }
        suites
            .entry(c.path.as_str())
            .or_insert_with(|| TestSuite::new(format!("wirespeed k8s {}", c.path)))
            .add_test_case(tc);
    }
    if !r.unplanned.is_empty() {
        let mut s = TestSuite::new("wirespeed k8s unplanned paths");
        for u in &r.unplanned {
            let mut st = TestCaseStatus::skipped();
            st.set_message(u.clone());
            let name = u.split(':').next().unwrap_or(u);
            s.add_test_case(TestCase::new(name, st));
        }
        suites.insert("~unplanned", s);
    }
    report.add_test_suites(suites.into_values());
    report.to_string()
}

/// The cases as one HTML page: the verdict, per workload a heatmap of
/// node pairs (rows) by paths (columns), each cell coloured by its share
/// of the best path on that pair, then the table of every case.
pub fn render_paths_html(r: &PathsReport) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "<h1>Kubernetes paths: {}</h1><p class=\"sub\">{} cases, {} passed</p>",
        r.verdict(),
        r.cases.len(),
        r.passed_count()
    );
    let notes: Vec<String> = r
        .unplanned
        .iter()
        .map(|u| format!("not measured: {u}"))
        .chain(r.left_out.iter().map(|l| format!("left out: {l}")))
        .chain(r.gates.iter().map(|g| format!("gate: {g}")))
        .collect();
    if !notes.is_empty() {
        let _ = writeln!(o, "<ul class=\"notes\">");
        for n in notes {
            let _ = writeln!(o, "<li>{}</li>", esc(&n));
        }
        let _ = writeln!(o, "</ul>");
    }
    let mut workloads: Vec<&str> = Vec::new();
    for c in &r.cases {
        if !workloads.contains(&c.workload.as_str()) {
            workloads.push(&c.workload);
        }
    }
    for w in workloads {
        let cases: Vec<&PathCase> = r.cases.iter().filter(|c| c.workload == w).collect();
        let _ = writeln!(
            o,
            "<h2>{}</h2><figure><figcaption><span class=\"ft\">Pairs by path</span>: each cell the median over the repeats, coloured by its share of the best path on that pair (red at half or less)</figcaption>{}</figure>",
            esc(w),
            heatmap(w, &cases)
        );
    }
    let _ = writeln!(
        o,
        "<div class=\"tw\"><table><tr><th>path</th><th>workload</th><th>pair</th><th class=\"num\">median</th><th class=\"num\">95% interval</th><th class=\"num\">p99</th><th>result</th></tr>"
    );
    for c in &r.cases {
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{} {}</td></tr>",
            esc(&c.path_label()),
            esc(&c.workload),
            esc(&c.pair()),
            esc(&c.median.map(|v| figure(v, &c.unit)).unwrap_or_default()),
            esc(&c
                .ci95
                .map(|[a, b]| format!("{} .. {}", figure(a, &c.unit), figure(b, &c.unit)))
                .unwrap_or_default()),
            esc(&c.p99_us.map(human_us).unwrap_or_default()),
            status_word(c),
            esc(&detail(c))
        );
    }
    let _ = writeln!(o, "</table></div>");
    crate::html::page("wirespeed k8s paths", &o)
}

/// The row a case sits on in the heatmap: its node pair ("n0" for one
/// node).
fn row_of(c: &PathCase) -> String {
    if c.client_node == c.server_node && c.client_nic.is_empty() {
        format!("{} (one node)", c.client_node)
    } else {
        c.pair()
    }
}

/// Node pairs (rows) by paths (columns) of one workload, as SVG.
fn heatmap(workload: &str, cases: &[&PathCase]) -> String {
    let mut rows: Vec<String> = Vec::new();
    let mut cols: Vec<String> = Vec::new();
    for c in cases {
        if !rows.contains(&row_of(c)) {
            rows.push(row_of(c));
        }
        if !cols.contains(&c.path_label()) {
            cols.push(c.path_label());
        }
    }
    let best: BTreeMap<String, f64> = rows
        .iter()
        .map(|r| {
            let m = cases
                .iter()
                .filter(|c| &row_of(c) == r)
                .filter_map(|c| c.median)
                .fold(0.0, f64::max);
            (r.clone(), m)
        })
        .collect();
    // Drawn at its natural size (class natural): its 11 px labels stay
    // 11 px on screen however many paths it has.
    let (cw, ch, left, top) = (112usize, 34usize, 200usize, 46usize);
    let (w, h) = (left + cols.len() * cw + 10, top + rows.len() * ch + 10);
    let mut body = String::new();
    let mut marks = 0;
    for (j, p) in cols.iter().enumerate() {
        let _ = write!(
            body,
            "<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            left + j * cw + cw / 2,
            top - 8,
            esc(p)
        );
    }
    for (i, r) in rows.iter().enumerate() {
        let y = top + i * ch;
        let _ = write!(
            body,
            "<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
            left - 6,
            y + ch / 2 + 4,
            esc(r)
        );
        for (j, p) in cols.iter().enumerate() {
            let Some(c) = cases
                .iter()
                .find(|c| &row_of(c) == r && c.path_label() == *p)
            else {
                continue;
            };
            let x = left + j * cw;
            let (fill, label) = match c.median {
                Some(v) => {
                    marks += 1;
                    let b = best[r];
                    let ratio = if b > 0.0 { v / b } else { 1.0 };
                    (crate::fleet::heat(ratio), figure(v, &c.unit))
                }
                None => ("rgb(160,160,160)".to_string(), "not measured".into()),
            };
            let _ = write!(
                body,
                "<rect class=\"mark\" x=\"{x}\" y=\"{y}\" width=\"{}\" height=\"{}\" fill=\"{fill}\"><title>{}</title></rect><text class=\"cell\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                cw - 2,
                ch - 2,
                esc(&format!(
                    "{} {} {}: {}",
                    c.path_label(),
                    c.workload,
                    c.pair(),
                    status_word(c)
                )),
                x + cw / 2,
                y + ch / 2 + 4,
                esc(&label)
            );
        }
    }
    format!(
        "<div class=\"tw\"><svg class=\"chart natural\" data-chart=\"heatmap\" data-points=\"{marks}\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" role=\"img\" aria-label=\"{} pairs by path\"><text class=\"axis-title\" x=\"{left}\" y=\"14\">path →</text>{body}</svg></div>",
        esc(workload)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(path: &str, c: &str, s: &str, v: &[f64], breaches: &[&str]) -> PathCase {
        PathCase {
            path: path.into(),
            workload: "stream".into(),
            client_node: c.into(),
            server_node: s.into(),
            unit: "bit/s".into(),
            values: v.to_vec(),
            median: v.first().copied(),
            repeats: 1,
            breaches: breaches.iter().map(|b| b.to_string()).collect(),
            ..PathCase::default()
        }
    }

    fn report() -> PathsReport {
        PathsReport {
            cases: vec![
                case("host", "a", "b", &[10e9], &[]),
                case(
                    "cross-node",
                    "a",
                    "b",
                    &[5e9],
                    &["cross-node stream a -> b: below <floor> & more"],
                ),
                case("same-node", "a", "a", &[], &[]),
            ],
            unplanned: vec!["cross-zone: no pair of the chosen nodes is in different zones".into()],
            ..PathsReport::default()
        }
    }

    #[test]
    fn junit_has_one_case_per_path_and_pair_and_reads_back() {
        let xml = render_paths_junit(&report()).unwrap();
        let back = quick_junit::Report::deserialize_from_str(&xml).unwrap();
        assert_eq!(back.tests, 4);
        assert_eq!(back.failures, 1);
        assert_eq!(back.errors, 1);
        let names: Vec<String> = back
            .test_suites
            .iter()
            .flat_map(|s| s.test_cases.iter().map(|c| c.name.to_string()))
            .collect();
        assert!(names.contains(&"stream a -> b".to_string()), "{names:?}");
        assert!(xml.contains("&lt;floor&gt; &amp; more"), "{xml}");
    }

    #[test]
    fn csv_table_and_html_name_every_case() {
        let r = report();
        let csv = render_paths_csv(&r);
        assert_eq!(csv.lines().count(), 4);
        assert!(csv.lines().nth(2).unwrap().contains(",fail,"), "{csv}");
        let t = render_paths(&r);
        assert!(t.contains("FAIL cross-node stream a -> b"), "{t}");
        assert!(t.contains("NOT MEASURED cross-zone"), "{t}");
        // No case has a p99: no p99 column.
        assert!(!t.lines().nth(1).unwrap().contains("p99"), "{t}");
        let h = render_paths_html(&r);
        assert!(h.contains("data-points=\"2\""), "{h}");
        assert!(h.contains("a (one node)"), "{h}");
    }
}
