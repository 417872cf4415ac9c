//! `wirespeed experiment` end to end in a lab (root only; skips otherwise):
//! the effect of a second capped NIC has the right direction and size, the
//! results file has every cell, Ctrl-C stops a run without losing finished
//! cells or leaving namespaces, the next run resumes after them, and
//! `wirespeed report` renders the results.

use crate::chromium;
use crate::common;
use common::{bin, heavy, namespaces_with, root_or_skip, temp_dir, ws};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

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
    let d = temp_dir("exp-live");
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
    let left = namespaces_with(&format!("-p{pid}-"));
    assert!(left.is_empty(), "namespaces left behind: {left:?}");
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
    let d = temp_dir("exp-bad");
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

/// The `net:[INODE]` link of namespace `ns`.
fn ns_link(ns: &str) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(Path::new("/run/netns").join(ns)).ok()?;
    Some(format!("net:[{}]", m.ino()))
}

/// Whether a thread of process `pid` is inside namespace `ns`.
fn thread_in(ns: &str, pid: u32) -> bool {
    let Some(want) = ns_link(ns) else {
        return false;
    };
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.flatten().any(|t| {
                std::fs::read_link(t.path().join("ns/net"))
                    .is_ok_and(|l| l.as_os_str() == want.as_str())
            })
        })
        .unwrap_or(false)
}

/// Live (not zombie) processes in namespace `ns` whose command line has
/// `word` (any process when `word` is empty).
fn procs_in(ns: &str, word: &str) -> Vec<u32> {
    let Some(want) = ns_link(ns) else {
        return vec![];
    };
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            std::fs::read_link(format!("/proc/{p}/ns/net"))
                .is_ok_and(|l| l.as_os_str() == want.as_str())
        })
        .filter(|p| {
            let cmd = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
            let zombie = stat
                .rsplit_once(')')
                .is_some_and(|(_, r)| r.trim_start().starts_with('Z'));
            !zombie && (word.is_empty() || cmd.split(|b| *b == 0).any(|a| a == word.as_bytes()))
        })
        .collect()
}

/// Sweeps (on drop) the namespaces and processes of a killed run, also
/// when the test fails: what the next run would do.
struct Sweep;

impl Drop for Sweep {
    fn drop(&mut self) {
        wirespeed_lab::sweep_stale();
    }
}

const TINY: &str = r#"name = "tiny"
repeats = 3
duration = "1s"
warmup = "0.2s"

[lab]
name = "unused"
host = [{ name = "a" }, { name = "b" }]
link = [{ a = "a", b = "b" }]

[baseline]
name = "one"
bench = ["--paths", "{a.0}={b.0}"]
"#;

#[test]
fn a_killed_experiment_leaves_no_server_and_the_next_run_sweeps_its_lab() {
    if !root_or_skip("a_killed_experiment") {
        return;
    }
    let _g = heavy();
    let _sweep = Sweep;
    let d = temp_dir("exp-kill");
    let file = d.join("tiny.toml");
    std::fs::write(&file, TINY).unwrap();
    let out = d.join("tiny.results.json");
    let mut child = Command::new(bin())
        .args(["experiment", "--fresh", "--out"])
        .args([&out, &file])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let part = format!("-p{pid}-");
    // Readiness: the experiment's server (a thread of the experiment,
    // inside the lab's host b) runs.
    let end = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let found = namespaces_with(&part)
            .into_iter()
            .any(|n| n.ends_with("-b") && thread_in(&n, pid));
        if found {
            break;
        }
        assert!(
            std::time::Instant::now() < end,
            "the experiment's server never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // Server and clients are threads of the experiment: no process of it
    // is left in its namespaces.
    let end = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let mut left: Vec<u32> = Vec::new();
    while std::time::Instant::now() < end {
        left = namespaces_with(&part)
            .iter()
            .flat_map(|n| procs_in(n, ""))
            .collect();
        if left.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        left.is_empty(),
        "processes {left:?} outlived the killed experiment"
    );
    // The next run sweeps the killed run's namespaces, and completes.
    let o = Command::new(bin())
        .args(["experiment", "--fresh", "--repeats", "1", "--out"])
        .args([&out, &file])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(namespaces_with(&part), Vec::<String>::new());
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn an_experiment_cannot_set_host_wide_sysctls_or_unknown_bench_flags() {
    let d = temp_dir("exp-wide");
    let file = d.join("wide.toml");
    for (change, needle) in [
        (
            "lab_set = { sysctl = { \"kernel.hostname\" = \"x\" } }",
            "not per network namespace",
        ),
        (
            "lab_set = { sysctl = { \"net.core.netdev_max_backlog\" = \"5000\" } }",
            "host-wide",
        ),
        ("bench = [\"--flowz\", \"4\"]", "unknown bench flag --flowz"),
    ] {
        std::fs::write(
            &file,
            EXPERIMENT.replace(
                "bench = [\"--paths\", \"{a.0}={b.0},{a.1}={b.1}\", \"-F\", \"2\", \"-T\", \"2\"]",
                change,
            ),
        )
        .unwrap();
        let o = ws(&[Path::new("experiment"), &file, Path::new("--dry-run")]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{change}: accepted");
        assert!(
            err.contains("line 17") && err.contains(needle),
            "{change}: {err}"
        );
    }
    let _ = std::fs::remove_dir_all(&d);
}
