//! The install tools k8s/testenv/build.sh builds (`build.sh tools`: helm,
//! krew, its manifest validator, dashcheck, the Prometheus Operator's
//! CRDs; `build.sh --version 1.37`: kubectl), and the chart rendered two
//! ways for the tests that compare them.

#![allow(dead_code)]

use super::bin;
use super::cluster::repo;
use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

/// Where build.sh puts its output.
fn testenv() -> PathBuf {
    std::env::var("KUBE_TESTENV_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| repo().join("target/k8s-testenv"))
}

/// A tool of `build.sh tools` (its bin/ directory), or of the CRDs dir.
pub fn tool(name: &str) -> PathBuf {
    testenv().join("tools/bin").join(name)
}

/// The Prometheus Operator CRD file of `plural` (servicemonitors, ...).
pub fn crd(plural: &str) -> PathBuf {
    testenv()
        .join("tools/crds")
        .join(format!("monitoring.coreos.com_{plural}.yaml"))
}

/// kubectl, built with Kubernetes 1.37.
pub fn kubectl() -> PathBuf {
    testenv().join("1.37/bin/kubectl")
}

/// Whether the tools are built; under CI=true they must be.
pub fn have_tools(test: &str) -> bool {
    let missing = [tool("helm"), tool("krew"), tool("dashcheck"), kubectl()]
        .into_iter()
        .find(|p| !p.exists());
    let why = missing.map(|p| {
        format!(
            "{} is missing: run k8s/testenv/build.sh tools and --version 1.37",
            p.display()
        )
    });
    wirespeed_testkit::require(why.is_none(), why.as_deref().unwrap_or(""), test)
}

/// The chart's directory.
pub fn chart() -> PathBuf {
    repo().join("charts/wirespeed")
}

/// Runs `prog ARGS`, stdin closed.
pub fn run(prog: &std::path::Path, args: &[&str]) -> Output {
    Command::new(prog)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", prog.display()))
}

/// `helm template wirespeed CHART -n NS ARGS`, as JSON objects.
pub fn helm_template(ns: &str, args: &[&str]) -> Vec<Value> {
    let chart = chart();
    let mut a = vec!["template", "wirespeed", chart.to_str().unwrap(), "-n", ns];
    a.extend_from_slice(args);
    let out = run(&tool("helm"), &a);
    assert!(
        out.status.success(),
        "helm template {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    serde_saphyr::from_multiple::<Value>(&text)
        .unwrap_or_else(|e| panic!("helm's output is not YAML: {e}\n{text}"))
        .into_iter()
        .filter(|v| !v.is_null())
        .collect()
}

/// `wirespeed k8s watch manifests --output json --namespace NS ARGS`.
pub fn watch_manifests(ns: &str, args: &[&str]) -> Vec<Value> {
    let mut a = vec![
        "k8s",
        "watch",
        "manifests",
        "--output",
        "json",
        "--namespace",
        ns,
    ];
    a.extend_from_slice(args);
    let out = run(std::path::Path::new(bin()), &a);
    assert!(
        out.status.success(),
        "manifests {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list: Value = serde_json::from_slice(&out.stdout).expect("manifests JSON");
    list["items"].as_array().expect("a v1 List").clone()
}
