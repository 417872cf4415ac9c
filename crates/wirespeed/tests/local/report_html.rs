//! `wirespeed report`: real results of `wirespeed bench` on loopback (a
//! 4-flow stream with intervals, a stream with --probe-rr, an rr size
//! sweep, three results compared) and experiment results, to HTML,
//! Markdown and CSV. Each HTML page is loaded in headless Chromium (when
//! installed) to prove it loads without script errors, every chart has
//! data, and, in a screenshot, every chart's plot area is drawn.

use crate::chromium;
use crate::common;
use common::{ServerProc, bin, heavy, serve};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use wirespeed_report::experiment::{CellResult, ExperimentResults, Mode, Point, finalize};
use wirespeed_report::fixtures::stream;
use wirespeed_report::{human_count, human_size};
use wirespeed_types::{Report, SCHEMA_VERSION, TestResult};

/// An rr result whose latency follows from its rate.
fn rr(tps: f64, size: u32) -> TestResult {
    wirespeed_report::fixtures::rr(tps, 1e6 / tps, size)
}

/// A scratch directory, removed on drop (also when the test fails).
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("ws-report-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }

    fn join(&self, f: &str) -> PathBuf {
        self.0.join(f)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
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

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// Renders `files` to HTML at `html` and returns the page.
fn report(files: &[&Path], extra: &[&str], html: &Path) -> String {
    let mut args: Vec<&str> = vec!["report"];
    args.extend(files.iter().map(|f| p(f)));
    args.extend(extra);
    args.extend(["-o", p(html)]);
    run(&args);
    std::fs::read_to_string(html).unwrap()
}

/// (kind, announced marks) of every chart on a page.
fn charts(page: &str) -> Vec<(String, usize)> {
    page.split("<svg class=\"chart\"")
        .skip(1)
        .map(|s| {
            let attr = |name: &str| -> String {
                s.split(&format!("{name}=\""))
                    .nth(1)
                    .unwrap()
                    .split('"')
                    .next()
                    .unwrap()
                    .to_string()
            };
            (attr("data-chart"), attr("data-points").parse().unwrap())
        })
        .collect()
}

fn points(page: &str, kind: &str) -> usize {
    charts(page)
        .iter()
        .find(|c| c.0 == kind)
        .unwrap_or_else(|| panic!("no {kind} chart"))
        .1
}

/// Text a reader should never see: bad plurals, test artefacts, experiment
/// words on a page that is not an experiment, numbers that are not.
fn assert_reads_well(page: &str, what: &str) {
    for bad in [
        "1 flows",
        "1 threads",
        "1 paths",
        "1 results",
        "charts have data",
        "NaN",
        ">inf",
        "\"inf",
    ] {
        assert!(!page.contains(bad), "{what}: {bad:?} on the page");
    }
    for bad in ["src=\"http", "href=\"http", "@import", "url("] {
        assert!(!page.contains(bad), "{what}: fetches {bad:?}");
    }
}

/// Asserts the whole browser check, with a negative control: the page's
/// left margin holds no coloured pixel, so the check tells drawn from blank.
fn browser_check(html: &Path, page: &str, test: &str) {
    let expect = charts(page).len();
    if let Some((_, shot)) = chromium::assert_charts_drawn(html, expect, test) {
        let (_, coloured) = shot.ink((0, 0, 40, shot.height));
        assert_eq!(coloured, 0, "{test}: the page's margin is not blank");
    }
}

/// A loopback server for one test.
fn server() -> (ServerProc, String) {
    let mut cmd = Command::new(bin());
    cmd.args(["serve", "--bind", "127.0.0.1", "--port", "0"]);
    let s = serve(cmd);
    let addr = s.loopback_addr();
    (s, addr)
}

/// Runs `wirespeed bench ADDR ARGS --json` into `out`; returns the report.
fn bench(addr: &str, args: &[&str], out: &Path) -> Report {
    let mut a = vec!["bench", addr];
    a.extend(args);
    a.push("--json");
    let text = run(&a);
    std::fs::write(out, &text).unwrap();
    serde_json::from_str(&text).expect("bench JSON")
}

/// The rows of the first table after `heading` in an HTML page, as cells.
fn html_rows(page: &str, heading: &str) -> Vec<Vec<String>> {
    let at = page.find(heading).unwrap_or_else(|| panic!("no {heading}"));
    let body = &page[at..];
    let body = &body[body.find("<tbody>").unwrap()..body.find("</tbody>").unwrap()];
    body.split("<tr>")
        .skip(1)
        .map(|r| {
            r.split("<td")
                .skip(1)
                .map(|c| {
                    let c = &c[c.find('>').unwrap() + 1..c.find("</td>").unwrap()];
                    c.to_string()
                })
                .collect()
        })
        .collect()
}

#[test]
fn a_four_flow_stream_with_intervals_shows_each_flow_over_time() {
    let _g = heavy();
    let (_server, addr) = server();
    let d = Dir::new("stream");
    let json = d.join("stream.json");
    let rep = bench(
        &addr,
        &["-F", "4", "-i", "0.5s", "-d", "2s", "--warmup", "0.5s"],
        &json,
    );
    let r = &rep.results[0];
    assert!(r.intervals.len() >= 4, "{} intervals", r.intervals.len());
    assert!(r.intervals.iter().all(|s| s.flow_bps.len() == 4));
    assert!(!r.client.is_empty());
    let html = d.join("stream.html");
    let page = report(&[&json], &[], &html);
    assert_reads_well(&page, "stream");
    assert!(page.contains("<h1>stream forward, 4 flows</h1>"), "title");
    assert!(page.contains("4 flows, 1 thread, 1 path"));
    let kinds: Vec<String> = charts(&page).into_iter().map(|c| c.0).collect();
    assert_eq!(kinds, ["over-time", "flows", "cpu"]);
    // Total plus each of the four flows; a bar per flow; two bars per side.
    assert_eq!(points(&page, "over-time"), 5);
    assert_eq!(points(&page, "flows"), 4);
    assert_eq!(points(&page, "cpu"), 4);
    assert!(page.contains("fairness") && page.contains("retransmits"));
    for word in ["spread", "vs baseline", "bench arguments"] {
        assert!(!page.contains(word), "experiment word {word:?}");
    }
    browser_check(&html, &page, "stream");
    // Markdown: one row per interval; CSV: each flow in each interval.
    let md = run(&["report", p(&json), "--format", "md"]);
    let intervals = md
        .split("### Over time, one row per interval")
        .nth(1)
        .expect("interval table")
        .split("\n\n")
        .nth(1)
        .unwrap();
    assert_eq!(intervals.lines().count(), 2 + r.intervals.len(), "{md}");
    assert!(md.contains("| flow 3 |"), "{md}");
    let csv = run(&["report", p(&json), "--format", "csv"]);
    assert_eq!(
        csv.lines()
            .filter(|l| l.contains(",interval,flow 2,"))
            .count(),
        r.intervals.len(),
        "{csv}"
    );
    // Two paths (two loopback source addresses): each path over time too.
    let json = d.join("paths.json");
    bench(
        &addr,
        &[
            "-F",
            "4",
            "--paths",
            "127.0.0.1=127.0.0.1,127.0.0.2=127.0.0.1",
            "-i",
            "0.5s",
            "-d",
            "1s",
            "--warmup",
            "0.3s",
        ],
        &json,
    );
    let html = d.join("paths.html");
    let page = report(&[&json], &[], &html);
    assert!(page.contains("4 flows, 1 thread, 2 paths"));
    // Total, two paths, four flows; a bar per path.
    assert_eq!(points(&page, "over-time"), 7);
    assert_eq!(points(&page, "paths"), 2);
    assert!(page.contains("path 1 (127.0.0.2=127.0.0.1)"));
    browser_check(&html, &page, "paths");
    let csv = run(&["report", p(&json), "--format", "csv"]);
    assert!(csv.contains(",interval,path 1,"), "{csv}");
}

#[test]
fn a_probe_rr_stream_draws_latency_under_throughput_on_one_time_axis() {
    let _g = heavy();
    let (_server, addr) = server();
    let d = Dir::new("probe");
    let json = d.join("probe.json");
    let rep = bench(
        &addr,
        &["--probe-rr", "-i", "0.5s", "-d", "2s", "--warmup", "0.5s"],
        &json,
    );
    let r = &rep.results[0];
    let measured: Vec<_> = r.intervals.iter().filter(|s| s.t_s > 0.3).collect();
    assert!(!measured.is_empty());
    for s in &measured {
        let l = s
            .probe_latency
            .as_ref()
            .expect("probe latency per interval");
        assert!(
            l.count > 0 && l.p50_us > 0.0 && l.p99_us >= l.p50_us,
            "{l:?}"
        );
    }
    let html = d.join("probe.html");
    let page = report(&[&json], &["--label", "latency under load"], &html);
    assert_reads_well(&page, "probe");
    assert!(page.contains("<h1>latency under load</h1>"));
    assert!(page.contains("1 flow, 1 thread, 1 path"));
    let kinds: Vec<String> = charts(&page).into_iter().map(|c| c.0).collect();
    assert_eq!(
        kinds,
        [
            "over-time",
            "latency-over-time",
            "percentiles",
            "flows",
            "cpu"
        ]
    );
    // The RRUL picture: both panels in one figure, the same time axis.
    let fig = page
        .split("<figure>")
        .find(|f| f.contains("data-chart=\"over-time\""))
        .unwrap();
    assert!(fig.contains("data-chart=\"latency-over-time\""));
    assert!(fig.contains("latency under load p50"), "quote");
    assert_eq!(points(&page, "latency-over-time"), 2);
    browser_check(&html, &page, "probe");
    let md = run(&["report", p(&json), "--format", "md"]);
    assert!(md.contains("| p50 | p99 |") && md.contains("latency under load p99"));
}

#[test]
fn an_rr_size_sweep_has_one_labelled_row_per_size_with_its_own_rate() {
    let _g = heavy();
    let (_server, addr) = server();
    let d = Dir::new("sweep");
    let json = d.join("sweep.json");
    let rep = bench(
        &addr,
        &[
            "-w",
            "rr",
            "--size",
            "1k,4k,16k,64k,256k,1m",
            "-d",
            "1s",
            "--warmup",
            "0.3s",
        ],
        &json,
    );
    assert_eq!(rep.results.len(), 6);
    let html = d.join("sweep.html");
    let page = report(&[&json], &[], &html);
    assert_reads_well(&page, "sweep");
    assert!(page.contains("<h1>rr size sweep, 1 KiB to 1 MiB, 1 flow</h1>"));
    let kinds: Vec<String> = charts(&page).into_iter().map(|c| c.0).collect();
    assert_eq!(
        kinds,
        [
            "sweep-rate",
            "sweep-goodput",
            "sweep-latency",
            "percentiles"
        ]
    );
    // p50 and p99 lines; a percentile line per size.
    assert_eq!(points(&page, "sweep-latency"), 2);
    assert_eq!(points(&page, "percentiles"), 6);
    let rows = html_rows(&page, "One row per size");
    assert_eq!(rows.len(), 6, "{rows:?}");
    for (row, r) in rows.iter().zip(&rep.results) {
        assert_eq!(row[0], human_size(r.spec.request_size as u64), "{row:?}");
        assert_eq!(row[1], human_size(r.spec.response_size as u64));
        assert_eq!(row[2], human_count(r.transactions_per_s), "{row:?}");
    }
    let rates: Vec<&String> = rows.iter().map(|r| &r[2]).collect();
    assert!(
        rates[0] != rates[5],
        "every size has its own rate: {rates:?}"
    );
    browser_check(&html, &page, "sweep");
    let md = run(&["report", p(&json), "--format", "md"]);
    for r in &rep.results {
        let size = human_size(r.spec.request_size as u64);
        let line = md
            .lines()
            .find(|l| l.starts_with(&format!("| {size} |")))
            .unwrap_or_else(|| panic!("no row for {size}:\n{md}"));
        assert!(line.contains(&human_count(r.transactions_per_s)), "{line}");
    }
    let csv = run(&["report", p(&json), "--format", "csv"]);
    let tests: Vec<&str> = csv.lines().filter(|l| l.contains(",test,total,")).collect();
    assert_eq!(tests.len(), 6, "{csv}");
    for (l, r) in tests.iter().zip(&rep.results) {
        assert!(
            l.contains(&format!(",{},bytes,", r.spec.request_size)),
            "{l}"
        );
    }
}

// `bench --interference --json` read by `report`: the victim's rate and
// latency against K, one line per block size, the knee in each cell.
#[test]
fn an_interference_run_draws_the_victim_against_k_per_block_size() {
    let _g = heavy();
    let (_server, addr) = server();
    let d = Dir::new("interference");
    let json = d.join("interference.json");
    let args = ["-w", "rr", "--size", "4k,64k", "--interference", "0,2"];
    let mut a = vec!["bench", addr.as_str()];
    a.extend(args);
    a.extend(["-d", "0.5s", "--warmup", "0.2s", "--json"]);
    std::fs::write(&json, run(&a)).unwrap();
    let html = d.join("interference.html");
    let page = report(&[&json], &[], &html);
    assert_reads_well(&page, "interference");
    assert!(
        page.contains("interference: a rr victim beside K stream loaders"),
        "no title"
    );
    let kinds: Vec<String> = charts(&page).into_iter().map(|c| c.0).collect();
    assert!(kinds.iter().any(|k| k == "sweep-latency"), "{kinds:?}");
    assert!(page.contains("victim rr 4 KiB") && page.contains("victim rr 64 KiB"));
    assert!(page.contains("loaders"), "the x axis names K");
    browser_check(&html, &page, "interference");
    let md = run(&["report", p(&json), "--format", "md"]);
    assert!(md.contains("victim rr 64 KiB"), "{md}");
}

#[test]
fn three_results_compare_on_shared_axes_one_series_each() {
    let _g = heavy();
    let (_server, addr) = server();
    let d = Dir::new("compare");
    let mut files = Vec::new();
    for flows in ["1", "2", "4"] {
        let f = d.join(&format!("f{flows}.json"));
        bench(
            &addr,
            &[
                "-F",
                flows,
                "--probe-rr",
                "-i",
                "0.25s",
                "-d",
                "1s",
                "--warmup",
                "0.25s",
            ],
            &f,
        );
        files.push(f);
    }
    let refs: Vec<&Path> = files.iter().map(|f| f.as_path()).collect();
    let html = d.join("compare.html");
    let page = report(
        &refs,
        &["--label", "one", "--label", "two", "--label", "four"],
        &html,
    );
    assert_reads_well(&page, "compare");
    assert!(page.contains("<h1>Comparison of 3 results</h1>"));
    for l in ["one", "two", "four"] {
        assert!(page.contains(&format!("<td>{l}</td>")), "no row for {l}");
    }
    let kinds: Vec<String> = charts(&page).into_iter().map(|c| c.0).collect();
    assert_eq!(
        kinds,
        [
            "headline",
            "over-time",
            "latency-over-time",
            "percentiles",
            "cpu"
        ]
    );
    assert_eq!(points(&page, "headline"), 3);
    assert_eq!(points(&page, "over-time"), 3);
    assert_eq!(points(&page, "latency-over-time"), 6);
    assert_eq!(points(&page, "percentiles"), 3);
    assert_eq!(points(&page, "cpu"), 12);
    browser_check(&html, &page, "compare");
    // Without labels: each file's own description, all different.
    let unlabelled = report(&refs, &[], &d.join("plain.html"));
    for f in ["1 flow", "2 flows", "4 flows"] {
        assert!(
            unlabelled.contains(&format!("<td>stream forward with latency probe, {f}</td>")),
            "no {f}"
        );
    }
    let md = run(&[
        "report",
        p(&files[0]),
        p(&files[1]),
        "--label",
        "a",
        "--format",
        "md",
    ]);
    assert!(
        md.contains("| a |") && md.contains("| interval | a |"),
        "{md}"
    );
    let csv = run(&["report", p(&files[0]), p(&files[2]), "--format", "csv"]);
    assert!(csv.contains(" 4 flows\",interval,flow 3,"), "{csv}");
    // More labels than files: a clear error.
    let out = Command::new(bin())
        .args(["report", p(&files[0]), "-l", "a", "-l", "b"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("2 labels for 1 results file:"),
        "{err}"
    );
}

#[test]
fn a_ladder_report_has_every_chart_kind_and_loads_in_a_browser() {
    let d = Dir::new("ladder");
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
    let page = report(&[&json], &[], &html);
    for kind in ["configurations", "sweep", "latency", "paths", "ladder"] {
        assert!(
            page.contains(&format!("data-chart=\"{kind}\"")),
            "no {kind} chart"
        );
    }
    // Each cell follows as what it is: a test, or a sweep.
    for c in ["one NIC", "two NICs", "rr sweep", "flows sweep"] {
        assert!(
            page.contains(&format!("<h2>{c}</h2>")),
            "no section for {c}"
        );
    }
    assert!(page.contains("data-chart=\"sweep-rate\""));
    assert!(!page.contains("<one NIC>"));
    assert_reads_well(&page, "ladder");
    chromium::assert_every_chart_has_data(&html, charts(&page).len(), "a_ladder_report");
    let md = run(&["report", p(&json), "--format", "md"]);
    assert!(
        md.contains("| two NICs |") && md.contains("## rr sweep over"),
        "{md}"
    );
    let csv = d.join("report.csv");
    run(&["report", p(&json), "-o", p(&csv)]);
    let csv = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(csv.lines().count(), 1 + 1 + 1 + 3 + 4, "{csv}");
    assert!(csv.contains("\"ladder <&> \"\"test\"\"\""), "{csv}");
}

#[test]
fn synthetic_bench_reports_render_and_bad_files_fail_cleanly() {
    let d = Dir::new("bench");
    let report_json = Report {
        schema_version: SCHEMA_VERSION,
        results: vec![rr(20000.0, 1024), rr(9000.0, 65536)],
    };
    let json = d.join("bench.json");
    std::fs::write(&json, serde_json::to_string(&report_json).unwrap()).unwrap();
    let html = d.join("bench.html");
    let page = report(&[&json], &[], &html);
    chromium::assert_every_chart_has_data(&html, charts(&page).len(), "a_plain_bench_report");
    // An older result (no per-flow or latency intervals) still renders.
    let mut v: Value = serde_json::to_value(Report {
        schema_version: SCHEMA_VERSION,
        results: vec![stream(1e9, 1)],
    })
    .unwrap();
    let r = &mut v["results"][0];
    r.as_object_mut().unwrap().remove("client");
    r["intervals"] = serde_json::json!([
        {"t_s": 0.5, "len_s": 0.5, "bps": 1e9, "tps": 0},
        {"t_s": 1.0, "len_s": 0.5, "bps": 1.1e9, "tps": 0}
    ]);
    let old = d.join("old.json");
    std::fs::write(&old, v.to_string()).unwrap();
    let page = report(&[&old], &[], &d.join("old.html"));
    assert_eq!(points(&page, "over-time"), 1);
    for (file, text, needle) in [
        ("missing.json", None, "missing.json"),
        ("bad.json", Some("{"), "not json"),
        (
            "other.json",
            Some("{\"x\": 1}"),
            "none of the kinds `report` reads",
        ),
        (
            "empty.json",
            Some("{\"schema_version\":1,\"results\":[]}"),
            "no results",
        ),
    ] {
        let f = d.join(file);
        if let Some(t) = text {
            std::fs::write(&f, t).unwrap();
        }
        let out = Command::new(bin())
            .args(["report", p(&f)])
            .output()
            .unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr).to_lowercase();
        assert!(
            err.contains(needle) && !err.contains("panicked"),
            "{file}: {err}"
        );
    }
}

/// A k8s run's paths page with every path over three pairs: the heatmap
/// is drawn at its natural size, so its figures are at least 11 px on
/// screen (scaled into a 760 px column they were about 7 px), and a
/// contended case says so in the table.
#[test]
fn the_paths_heatmap_is_readable_at_its_displayed_size() {
    use wirespeed_types::paths::{PathCase, PathsReport};
    let d = Dir::new("paths");
    let paths = [
        "host",
        "same-node",
        "cross-node",
        "cross-zone",
        "service-same-node",
        "service-cross-node",
        "hairpin",
    ];
    let mut r = PathsReport::default();
    for (i, p) in paths.iter().enumerate() {
        for (c, s) in [
            ("node-a", "node-b"),
            ("node-b", "node-c"),
            ("node-c", "node-a"),
        ] {
            let v = 2e10 - i as f64 * 1e9;
            r.cases.push(PathCase {
                path: p.to_string(),
                workload: "stream".into(),
                client_node: c.into(),
                server_node: s.into(),
                unit: "bit/s".into(),
                values: vec![v],
                median: Some(v),
                repeats: 1,
                contended: (i == 3).then(|| "a client worker waited 50% of the window".into()),
                ..PathCase::default()
            });
        }
    }
    let page = wirespeed_report::paths::render_paths_html(&r);
    assert!(
        page.contains("CONTENDED a client worker waited 50%"),
        "{page}"
    );
    let html = d.join("paths.html");
    std::fs::write(&html, &page).unwrap();
    if let Some((check, _)) = chromium::assert_charts_drawn(&html, 1, "paths heatmap") {
        let f = check.min_font.expect("chart text on the page");
        assert!(f >= 11.0, "the smallest heatmap text is {f} px on screen");
    }
}

#[test]
fn the_screenshot_check_notices_a_chart_drawn_blank() {
    let d = Dir::new("blank");
    let mut r = stream(1e9, 1);
    r.intervals = (1..=4)
        .map(|i| wirespeed_types::result::IntervalSample {
            t_s: i as f64 * 0.5,
            len_s: 0.5,
            bps: 1e9 + i as f64 * 1e8,
            ..Default::default()
        })
        .collect();
    let json = d.join("one.json");
    let rep = Report {
        schema_version: SCHEMA_VERSION,
        results: vec![r],
    };
    std::fs::write(&json, serde_json::to_string(&rep).unwrap()).unwrap();
    let html = d.join("one.html");
    let page = report(&[&json], &[], &html);
    browser_check(&html, &page, "drawn");
    // The same page with its lines hidden: the marks are still in the DOM
    // (the self-check passes) but the screenshot must find nothing drawn.
    let hidden = page.replace(
        "</style>",
        "svg.chart .mark,svg.chart .pt{visibility:hidden}</style>",
    );
    let blank = d.join("blank.html");
    std::fs::write(&blank, &hidden).unwrap();
    if chromium::load(&blank, "blank").is_some() {
        let caught = std::panic::catch_unwind(|| {
            chromium::assert_charts_drawn(&blank, charts(&hidden).len(), "blank").is_some()
        });
        let msg = caught.expect_err("a blank chart passed the screenshot check");
        let msg = msg.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(msg.contains("looks blank"), "{msg}");
    }
}

// An rr test with --breakdown on loopback: the page has the stacked bars
// (one per percentile, a mark per segment) and the waterfall of the
// slowest transactions (nine marks each: the wire drawn twice), the
// segment table, and draws every chart in Chromium.
#[test]
fn an_rr_breakdown_draws_stacked_percentiles_and_a_waterfall() {
    let _g = heavy();
    let (_server, addr) = server();
    let d = Dir::new("breakdown");
    let json = d.join("bd.json");
    let rep = bench(
        &addr,
        &["-w", "rr", "--breakdown", "-d", "1s", "--warmup", "0.3s"],
        &json,
    );
    let b = rep.results[0].breakdown.as_ref().expect("a breakdown");
    let html = d.join("bd.html");
    let page = report(&[&json], &[], &html);
    assert_reads_well(&page, "breakdown");
    assert_eq!(points(&page, "breakdown"), 4 * 8);
    assert_eq!(points(&page, "waterfall"), b.slowest.len() * 9);
    assert!(page.contains("Where the round trip is spent"));
    assert!(page.contains("server receive stack and wake-up"));
    let rows = html_rows(&page, "Where the round trip is spent");
    assert_eq!(rows.len(), 9, "eight segments and the round trip: {rows:?}");
    browser_check(&html, &page, "breakdown");
    let explained = run(&["explain", p(&json)]);
    assert!(!explained.is_empty());
}
