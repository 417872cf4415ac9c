//! `wirespeed experiment` end to end in a lab (root only; skips otherwise):
//! the effect of a second capped NIC has the right direction and size, the
//! results file has every cell, Ctrl-C stops a run without losing finished
//! cells or leaving namespaces, the next run resumes after them, and
//! `wirespeed report` renders the results.

mod chromium;
mod common;
use common::{bin, heavy, root_or_skip};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};

const EXPERIMENT: &str = r#"name = "two-links"
repeats = 2
duration = "1.5s"
warmup = "0.3s"

[lab]
name = "unused"
host = [{ name = "a" }, { name = "b" }]
link = [{ a = "a", b = "b", rate = "500mbit" }, { a = "a", b = "b", rate = "500mbit" }]

[baseline]
name = "one link"
bench = ["--paths", "{a.0}={b.0}"]

[[cell]]
name = "both links"
bench = ["--paths", "{a.0}={b.0},{a.1}={b.1}", "-F", "2", "-T", "2"]
"#;

/// Runs the wirespeed binary with these arguments.
fn ws(args: &[&Path]) -> Output {
    Command::new(bin())
        .args(args)
        .output()
        .expect("run wirespeed")
}

fn run_experiment(file: &Path, out: &Path) -> (Value, String) {
    let o = ws(&[Path::new("experiment"), file, Path::new("--out"), out]);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "experiment failed:\n{err}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap();
    (v, err)
}

#[test]
fn an_experiment_measures_resumes_and_reports() {
    if !root_or_skip("an_experiment_measures_resumes_and_reports") {
        return;
    }
    let _g = heavy();
    let d = std::env::temp_dir().join(format!("ws-exp-live-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let file = d.join("two-links.toml");
    std::fs::write(&file, EXPERIMENT).unwrap();
    let out = d.join("two-links.results.json");

    let (v, log) = run_experiment(&file, &out);
    let cells = v["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2, "{v}");
    assert_eq!(v["baseline"], "one link");
    for c in cells {
        assert_eq!(c["points"][0]["runs"].as_array().unwrap().len(), 2);
    }
    let one = cells[0]["stats"]["median"].as_f64().unwrap();
    let both = cells[1]["stats"]["median"].as_f64().unwrap();
    assert!(one > 0.4e9 && one <= 0.5e9 * 1.02, "one link: {one}");
    assert!(both >= 1.6 * one, "both links {both} vs one {one}");
    let pct = cells[1]["vs_baseline_pct"].as_f64().unwrap();
    assert!((pct - (both / one - 1.0) * 100.0).abs() < 1e-6);
    assert_eq!(cells[1]["points"][0]["paths"].as_array().unwrap().len(), 2);
    assert!(!log.contains("skipping"), "{log}");

    // Ctrl-C while the second cell runs: the run stops after its current
    // bench, keeps the finished baseline and removes its lab.
    let mut child = Command::new(bin())
        .args(["experiment", "--fresh", "--out"])
        .args([&out, &file])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut log = String::new();
    for line in BufReader::new(child.stderr.take().unwrap()).lines() {
        let line = line.unwrap();
        log.push_str(&line);
        log.push('\n');
        if line.contains("one link run 2/2") {
            // The baseline's last run is done: interrupt the next cell.
            let _ = Command::new("kill")
                .args(["-INT", &pid.to_string()])
                .status();
        }
    }
    let status = child.wait().unwrap();
    assert!(!status.success(), "{log}");
    assert!(log.contains("interrupted: 1 of 2 cells finished"), "{log}");
    let left: Vec<String> = std::fs::read_dir("/run/netns")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    assert!(
        !left.iter().any(|n| n.contains(&format!("-p{pid}-"))),
        "namespaces left behind: {left:?}"
    );
    let partial: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(partial["cells"].as_array().unwrap().len(), 1, "{partial}");

    // The next run measures only the remaining cell.
    let (v2, log2) = run_experiment(&file, &out);
    assert!(log2.contains("skipping finished cell one link"), "{log2}");
    assert!(!log2.contains("one link run"), "{log2}");
    assert!(log2.contains("both links run 2/2"), "{log2}");
    assert_eq!(v2["cells"].as_array().unwrap().len(), 2);
    assert_eq!(
        v2["cells"][0], partial["cells"][0],
        "the finished cell is kept as it was"
    );

    // A changed definition is not mixed with old results.
    std::fs::write(&file, EXPERIMENT.replace("repeats = 2", "repeats = 1")).unwrap();
    let o = ws(&[Path::new("experiment"), &file, Path::new("--out"), &out]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--fresh"));

    let html = d.join("report.html");
    let r = ws(&[Path::new("report"), &out, Path::new("-o"), &html]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("both links") && page.contains("data-chart=\"paths\""));
    // The summary's charts, then each cell's own (flows, paths, CPU).
    let charts = page.matches("<svg class=\"chart\"").count();
    assert!(charts > 2, "{charts} charts");
    assert!(page.contains("<h2>both links</h2>") && page.contains("data-chart=\"flows\""));
    chromium::assert_every_chart_has_data(
        &html,
        charts,
        "an_experiment_measures_resumes_and_reports",
    );
    for (fmt, needle) in [
        ("md", "| both links |"),
        ("csv", "two-links,one-at-a-time,both links,false,"),
    ] {
        let r = ws(&[
            Path::new("report"),
            &out,
            Path::new("--format"),
            Path::new(fmt),
        ]);
        let text = String::from_utf8_lossy(&r.stdout);
        assert!(r.status.success() && text.contains(needle), "{fmt}: {text}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_bad_experiment_file_names_the_line_and_builds_nothing() {
    let d = std::env::temp_dir().join(format!("ws-exp-bad-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let file = d.join("bad.toml");
    std::fs::write(&file, EXPERIMENT.replace("{b.1}", "{b.7}")).unwrap();
    let o = ws(&[Path::new("experiment"), &file]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("line 17")
            && err.contains("[[cell]] #1 field `bench`")
            && err.contains("{b.7}"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}
