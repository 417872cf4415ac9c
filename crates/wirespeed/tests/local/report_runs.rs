//! `wirespeed report` on run files (`fleet run --out`, `k8s run --out`),
//! partial and complete: the built binary renders them to HTML, Markdown
//! and CSV, says first when a file is partial (in the output and on
//! stderr), refuses a run file given with another file, and names the
//! four kinds it reads for JSON of another shape.

use crate::common;
use common::bin;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use wirespeed_types::fleet::{AgentStatus, FleetResults, LinkTest};
use wirespeed_types::paths::{PathCase, PathsReport};

const PARTIAL: &str = "partial: this run was stopped before its end";

/// A scratch directory with a unique name, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let d = std::env::temp_dir().join(format!(
            "ws-report-runs-{name}-{}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }

    /// Writes `doc` as `f` in the directory.
    fn write(&self, f: &str, doc: &serde_json::Value) -> PathBuf {
        let p = self.0.join(f);
        std::fs::write(&p, serde_json::to_string_pretty(doc).unwrap()).unwrap();
        p
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn link(client: &str, server: &str, error: Option<&str>) -> LinkTest {
    LinkTest {
        workload: "stream".into(),
        client: client.into(),
        server: server.into(),
        client_nic: "eth0".into(),
        server_nic: "eth0".into(),
        throughput_bps: if error.is_some() { 0.0 } else { 9.4e9 },
        error: error.map(String::from),
        ..LinkTest::default()
    }
}

/// A fleet run of two agents with three tests, one of them failed.
fn fleet(partial: bool) -> FleetResults {
    let agent = |n: &str| AgentStatus {
        name: n.into(),
        up: true,
        ..AgentStatus::default()
    };
    FleetResults {
        schema_version: 1,
        pattern: "pairs".into(),
        concurrent: 1,
        rounds: 2,
        repeats: 1,
        agents: vec![agent("alpha"), agent("beta")],
        tests: vec![
            link("alpha", "beta", None),
            link("beta", "alpha", None),
            link("alpha", "beta", Some("connection refused")),
        ],
        partial,
        ..FleetResults::default()
    }
}

/// A k8s run document with one path's run and one case.
fn k8s(partial: bool) -> serde_json::Value {
    let case = PathCase {
        path: "cross-node".into(),
        workload: "stream".into(),
        client_node: "node-a".into(),
        server_node: "node-b".into(),
        unit: "bit/s".into(),
        values: vec![9.4e9],
        median: Some(9.4e9),
        repeats: 1,
        ..PathCase::default()
    };
    serde_json::json!({
        "partial": partial,
        "nodes": {"chosen": ["node-a", "node-b"]},
        "runs": [{
            "path": "cross-node",
            "network": "pod",
            "agents": [],
            "nodes": {},
            "results": fleet(partial),
        }],
        "comparison": null,
        "paths": PathsReport { schema_version: 1, cases: vec![case], ..PathsReport::default() },
        "sysctls": null,
    })
}

/// Runs `wirespeed report ARGS...`.
fn report(args: &[&Path], extra: &[&str]) -> Output {
    Command::new(bin())
        .arg("report")
        .args(args)
        .args(extra)
        .output()
        .expect("run wirespeed report")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Renders `file` in `format`: (exit ok, stdout, stderr).
fn render(file: &Path, format: &str) -> (bool, String, String) {
    let o = report(&[file], &["--format", format]);
    (o.status.success(), text(&o.stdout), text(&o.stderr))
}

#[test]
fn a_partial_fleet_run_says_so_in_html_md_and_on_stderr() {
    let dir = Dir::new("fleet");
    let f = dir.write("fleet.json", &serde_json::to_value(fleet(true)).unwrap());
    let (ok, html, err) = render(&f, "html");
    assert!(ok, "{err}");
    assert!(err.contains(PARTIAL), "stderr: {err}");
    assert!(
        err.contains("3 tests finished (1 failed or skipped)"),
        "{err}"
    );
    let at = html.find("<body>").expect("a full page");
    let banner = html.find(PARTIAL).unwrap_or_else(|| panic!("{html}"));
    let title = html.find("<h1>Fleet").expect("the fleet page");
    assert!(at < banner && banner < title, "banner not first: {html}");
    let (ok, md, err) = render(&f, "md");
    assert!(ok, "{err}");
    let first = md.lines().find(|l| !l.is_empty() && !l.starts_with('#'));
    assert!(first.unwrap_or("").starts_with(PARTIAL), "{md}");
    assert!(md.contains("fleet: 2 agents (2 up), pairs"), "{md}");
    assert!(md.contains("--resume "), "{md}");
    let (ok, csv, err) = render(&f, "csv");
    assert!(ok && err.contains(PARTIAL), "{err}");
    assert!(!csv.contains("partial"), "{csv}");
    assert_eq!(csv.lines().count(), 4, "{csv}");
    assert!(csv.starts_with("client,server,client_nic,server_nic,workload,repeat,"));
    assert!(csv.contains("alpha,beta,eth0,eth0,stream,0,0,0,,,connection refused"));
}

#[test]
fn a_complete_fleet_run_has_no_partial_line() {
    let dir = Dir::new("fleet-done");
    let f = dir.write("fleet.json", &serde_json::to_value(fleet(false)).unwrap());
    for (format, content) in [
        ("html", "<h1>Fleet: 2 agents, pairs</h1>"),
        ("md", "fleet: 2 agents (2 up), pairs"),
        ("csv", "alpha,beta,eth0,eth0,stream,0,9400000000,"),
    ] {
        let (ok, out, err) = render(&f, format);
        assert!(ok, "{format}: {err}");
        assert!(!out.contains("partial"), "{format}: {out}");
        assert!(!err.contains("partial"), "{format}: {err}");
        assert!(out.contains(content), "{format}: {out}");
    }
}

#[test]
fn a_partial_k8s_run_says_so_in_md_and_csv() {
    let dir = Dir::new("k8s");
    let f = dir.write("k8s.json", &k8s(true));
    let (ok, md, err) = render(&f, "md");
    assert!(ok, "{err}");
    assert!(err.contains(PARTIAL), "{err}");
    assert!(md.starts_with("# k8s run: "), "{md}");
    assert!(md.contains(&format!("{PARTIAL}; 3 tests finished")), "{md}");
    assert!(md.contains("wirespeed k8s run --resume"), "{md}");
    assert!(
        md.contains("cross-node") && md.contains("node-a -> node-b"),
        "{md}"
    );
    let (ok, csv, err) = render(&f, "csv");
    assert!(ok && err.contains(PARTIAL), "{err}");
    assert!(csv.starts_with("path,workload,client_node,"), "{csv}");
    assert!(csv.contains("cross-node,stream,node-a,node-b"), "{csv}");
    assert!(!csv.contains("partial"), "{csv}");
    let (ok, html, err) = render(&f, "html");
    assert!(ok, "{err}");
    assert!(
        html.contains(PARTIAL) && html.contains("Kubernetes paths"),
        "{html}"
    );
    let done = dir.write("k8s-done.json", &k8s(false));
    let (ok, md, err) = render(&done, "md");
    assert!(ok, "{err}");
    assert!(
        !md.contains("partial") && !err.contains("partial"),
        "{md}{err}"
    );
}

#[test]
fn a_run_file_with_another_file_is_refused() {
    let dir = Dir::new("mixed");
    let f = dir.write("fleet.json", &serde_json::to_value(fleet(true)).unwrap());
    let k = dir.write("k8s.json", &k8s(false));
    for (a, b, kind) in [(&f, &k, "fleet run"), (&k, &f, "k8s run")] {
        let o = report(&[a, b], &["--format", "md"]);
        let err = text(&o.stderr);
        assert!(!o.status.success(), "{}", text(&o.stdout));
        assert!(
            err.contains(&format!("is a {kind}: give it alone")),
            "{err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn json_of_another_shape_is_refused_naming_the_kinds() {
    let dir = Dir::new("unknown");
    let f = dir.write("other.json", &serde_json::json!({"hello": "world"}));
    let o = report(&[&f], &[]);
    let err = text(&o.stderr);
    assert!(!o.status.success(), "{}", text(&o.stdout));
    for kind in ["experiment results", "bench report", "fleet run", "k8s run"] {
        assert!(err.contains(kind), "{kind} not named: {err}");
    }
    assert!(!err.contains("panicked"), "{err}");
}
