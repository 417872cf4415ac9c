//! `wirespeed report`: experiment results and plain bench reports to HTML,
//! Markdown and CSV; the HTML page is loaded in headless Chromium (when
//! installed) to prove it loads without errors and every chart has data.

mod chromium;
mod common;
use common::bin;
use std::path::PathBuf;
use std::process::Command;
use wirespeed_engine::{Report, SCHEMA_VERSION, TestResult};
use wirespeed_report::experiment::{CellResult, ExperimentResults, Mode, Point, finalize};
use wirespeed_report::fixtures::stream;

/// An rr result whose latency follows from its rate.
fn rr(tps: f64, size: u32) -> TestResult {
    wirespeed_report::fixtures::rr(tps, 1e6 / tps, size)
}

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ws-report-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn cell(name: &str, points: Vec<Point>) -> CellResult {
    CellResult {
        name: name.into(),
        change: format!("<{name}> & co"),
        bench_args: vec!["--paths".into(), "a=b".into()],
        points,
        ..CellResult::default()
    }
}

fn one(runs: Vec<TestResult>) -> Vec<Point> {
    vec![Point {
        runs,
        ..Point::default()
    }]
}

fn run(args: &[&str]) -> String {
    let out = Command::new(bin()).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "wirespeed {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn a_ladder_report_has_every_chart_kind_and_loads_in_a_browser() {
    let d = dir("ladder");
    let mut res = ExperimentResults {
        schema_version: 1,
        name: "ladder <&> \"test\"".into(),
        mode: Mode::Ladder,
        repeats: 2,
        cells: vec![
            cell("one NIC", one(vec![stream(0.95e9, 1), stream(0.96e9, 1)])),
            cell("two NICs", one(vec![stream(1.9e9, 2), stream(1.91e9, 2)])),
            cell("rr sweep", {
                [(1024u32, "1k"), (65536, "64k"), (1 << 20, "1m")]
                    .iter()
                    .map(|&(s, x)| Point {
                        x: Some(x.into()),
                        x_value: Some(s as f64),
                        runs: vec![rr(2e9 / s as f64 + 1000.0, s)],
                        ..Point::default()
                    })
                    .collect()
            }),
        ],
        ..ExperimentResults::default()
    };
    // A stream-only ladder and an rr sweep side by side: the rr cell gives
    // the latency chart; make the sweep chart appear with a stream sweep.
    res.cells.push(cell(
        "flows sweep",
        [1u32, 2, 4, 8]
            .iter()
            .map(|&f| Point {
                x: Some(f.to_string()),
                x_value: Some(f as f64),
                runs: vec![stream(0.5e9 * f.min(4) as f64, 2)],
                ..Point::default()
            })
            .collect(),
    ));
    finalize(&mut res);
    let json = d.join("results.json");
    std::fs::write(&json, serde_json::to_string_pretty(&res).unwrap()).unwrap();
    let html = d.join("report.html");
    run(&[
        "report",
        json.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ]);
    let page = std::fs::read_to_string(&html).unwrap();
    for kind in ["configurations", "sweep", "latency", "paths", "ladder"] {
        assert!(
            page.contains(&format!("data-chart=\"{kind}\"")),
            "no {kind} chart"
        );
    }
    assert!(!page.contains("NaN") && !page.contains("<one NIC>"));
    assert!(!page.contains("src=\"http") && !page.contains("href=\"http"));
    chromium::assert_every_chart_has_data(&html, 5, "a_ladder_report");
    let md = run(&["report", json.to_str().unwrap(), "--format", "md"]);
    assert!(
        md.contains("| two NICs |") && md.contains("## rr sweep over"),
        "{md}"
    );
    let csv = d.join("report.csv");
    run(&[
        "report",
        json.to_str().unwrap(),
        "-o",
        csv.to_str().unwrap(),
    ]);
    let csv = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(csv.lines().count(), 1 + 1 + 1 + 3 + 4, "{csv}");
    assert!(csv.contains("\"ladder <&> \"\"test\"\"\""), "{csv}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_plain_bench_report_renders_too() {
    let d = dir("bench");
    let report = Report {
        schema_version: SCHEMA_VERSION,
        results: vec![rr(20000.0, 1024), rr(9000.0, 65536)],
    };
    let json = d.join("bench.json");
    std::fs::write(&json, serde_json::to_string(&report).unwrap()).unwrap();
    let html = d.join("bench.html");
    run(&[
        "report",
        json.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ]);
    chromium::assert_every_chart_has_data(&html, 3, "a_plain_bench_report");
    let out = Command::new(bin())
        .args(["report", d.join("missing.json").to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("missing.json") && !err.contains("panicked"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}
