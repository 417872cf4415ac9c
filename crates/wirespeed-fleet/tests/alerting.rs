//! The files users load beside `fleet watch`: the Prometheus alert rules
//! (plain and as a PrometheusRule) pass `promtool test rules` with a test
//! for every alert, and the rules and the Grafana dashboard name only
//! series the watcher exports.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use wirespeed_fleet::watch_http::{EXPORTED, WatchMetrics};
use wirespeed_types::TestResult;
use wirespeed_types::fleet::{Health, Incident, LinkHealth, LinkTest};
use wirespeed_types::result::{CpuUsage, FlowResult, LatencySummary, TcpInfo};

fn contrib(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../contrib")
        .join(p)
}

fn read(p: &str) -> String {
    std::fs::read_to_string(contrib(p)).unwrap_or_else(|e| panic!("{p}: {e}"))
}

/// `wirespeed_watch_...` names in `text` (a histogram's or counter's
/// suffix is part of the name as exported).
fn names(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find("wirespeed_") {
        let tail = &rest[i..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        out.insert(tail[..end].to_string());
        rest = &tail[end..];
    }
    out
}

/// What a watcher that ran a test, opened an incident, judged a link
/// degraded and saw a busy host exports.
fn exported_now() -> BTreeSet<String> {
    let m = WatchMetrics::default();
    let r = TestResult {
        throughput_bps: 9e8,
        started_unix: 1.8e9,
        latency: Some(LatencySummary {
            p50_us: 80.0,
            p99_us: 120.0,
            ..LatencySummary::default()
        }),
        local_cpu: CpuUsage {
            total_pct: 30.0,
            ..CpuUsage::default()
        },
        flows: vec![FlowResult {
            client_sent_total: 1_000_000,
            tcp_info: Some(TcpInfo {
                mss: 1448,
                retransmits: 3,
                ..TcpInfo::default()
            }),
            ..FlowResult::default()
        }],
        ..TestResult::default()
    };
    m.tests(&[LinkTest {
        workload: "rr".into(),
        client: "a".into(),
        server: "b".into(),
        result: Some(r),
        ..LinkTest::default()
    }]);
    m.incident(&Incident {
        id: 1,
        scope: "host".into(),
        subject: "c".into(),
        since_unix: 1.8e9,
        metric: "min_us".into(),
        before: 1.0,
        worst: 2.0,
        ..Incident::default()
    });
    m.series_health(
        &[LinkHealth {
            a: "a".into(),
            b: "c".into(),
            workload: "rr".into(),
            metric: "min_us".into(),
            health: Health::Degraded,
            baseline: 20.0,
            worst: 4000.0,
            ..LinkHealth::default()
        }],
        "rr",
    );
    m.busy_hosts(&["c".to_string()], &["a".to_string(), "c".to_string()]);
    let text = m.encode().unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| l.split(['{', ' ']).next())
        .map(str::to_string)
        .collect()
}

#[test]
fn the_exported_list_is_what_the_watcher_exports() {
    let listed: BTreeSet<String> = EXPORTED.iter().map(|s| s.to_string()).collect();
    let got = exported_now();
    // Families without a sample yet (schedule gauges are 0, still shown).
    assert_eq!(got, listed, "EXPORTED and /metrics disagree");
}

#[test]
fn rules_and_dashboard_name_only_exported_series() {
    let listed: BTreeSet<String> = EXPORTED.iter().map(|s| s.to_string()).collect();
    for f in [
        "prometheus/wirespeed-rules.yml",
        "grafana/wirespeed-watch.json",
    ] {
        let used = names(&read(f));
        assert!(!used.is_empty(), "{f} names no series");
        let unknown: Vec<&String> = used.difference(&listed).collect();
        assert!(
            unknown.is_empty(),
            "{f} names series nobody exports: {unknown:?}"
        );
    }
    // The dashboard is JSON Grafana can load: panels with queries.
    let d: serde_json::Value = serde_json::from_str(&read("grafana/wirespeed-watch.json")).unwrap();
    let panels = d["panels"].as_array().unwrap();
    assert!(panels.len() >= 6);
    assert!(
        panels
            .iter()
            .all(|p| !p["targets"].as_array().unwrap().is_empty())
    );
    let kinds: BTreeSet<&str> = panels.iter().filter_map(|p| p["type"].as_str()).collect();
    assert!(
        kinds.contains("table") && kinds.contains("timeseries"),
        "{kinds:?}"
    );
}

#[test]
fn the_prometheus_rule_holds_the_plain_rules() {
    let plain = read("prometheus/wirespeed-rules.yml");
    let op = read("prometheus/wirespeed-prometheusrule.yaml");
    assert!(op.contains("kind: PrometheusRule\n"));
    let groups = &plain[plain.find("groups:").unwrap()..];
    let spec = &op[op.find("spec:\n").unwrap() + "spec:\n".len()..];
    let dedented: String = spec
        .lines()
        .map(|l| l.strip_prefix("  ").unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(
        dedented.trim_end(),
        groups.trim_end(),
        "regenerate the PrometheusRule"
    );
}

#[test]
fn every_alert_is_tested_by_promtool() {
    let rules = read("prometheus/wirespeed-rules.yml");
    let tests = read("prometheus/wirespeed-rules.test.yml");
    let alerts: Vec<&str> = rules
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- alert: "))
        .collect();
    assert!(alerts.len() >= 5, "{alerts:?}");
    for a in &alerts {
        // Each alert has a case that expects it to fire.
        let fires = tests
            .split("- eval_time:")
            .any(|case| case.contains(&format!("alertname: {a}\n")) && case.contains("exp_labels"));
        assert!(fires, "no promtool case expects {a} to fire");
    }
    let promtool = which("promtool");
    let why = "promtool is missing (apt-get install prometheus)";
    if !wirespeed_testkit::require(promtool.is_some(), why, "the rule tests") {
        return;
    }
    let promtool = promtool.unwrap();
    let dir = contrib("prometheus");
    let o = Command::new(&promtool)
        .args(["check", "rules", "wirespeed-rules.yml"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    let o = Command::new(&promtool)
        .args(["test", "rules", "wirespeed-rules.test.yml"])
        .current_dir(&dir)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "promtool test rules failed:\n{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.contains("SUCCESS"), "{out}");
}

fn which(p: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(p))
            .find(|f| f.is_file())
    })
}
