//! What a Kubernetes path run (`wirespeed k8s run --paths ...`) decides
//! on: one case per path, workload and node pair (and NIC pair), with the
//! figure of every repeat, its 95% confidence interval, and the gates it
//! broke. Plain serde data: wirespeed-k8s fills it, the report renders it
//! as a table, CSV, JUnit XML and HTML, and a later run reads it back as
//! its `--baseline`.

use serde::{Deserialize, Serialize};

/// Version of the cases document; raised on incompatible changes.
pub const PATHS_SCHEMA_VERSION: u32 = 1;

/// One path x workload x node pair (x NIC pair).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PathCase {
    /// The path: same-node, cross-node, cross-zone, service-same-node,
    /// service-cross-node, hairpin, host, dra.
    pub path: String,
    /// The workload's label (e.g. `stream`, `rr`, `stream-64k`).
    pub workload: String,
    /// The client's node.
    pub client_node: String,
    /// The server's node.
    pub server_node: String,
    /// The client's NIC name (dra), else empty.
    #[serde(default)]
    pub client_nic: String,
    /// The server's NIC name (dra), else empty.
    #[serde(default)]
    pub server_nic: String,
    /// `bit/s` (bulk workloads) or `trans/s` (request/response).
    pub unit: String,
    /// The figure of each measured repeat, in run order.
    pub values: Vec<f64>,
    /// Median of `values`.
    pub median: Option<f64>,
    /// Mean of `values`.
    pub mean: Option<f64>,
    /// 95% confidence interval of the mean (Student's t over the
    /// repeats; two repeats or more).
    pub ci95: Option<[f64; 2]>,
    /// Median of the repeats' p99 latency, µs (request/response).
    pub p99_us: Option<f64>,
    /// Repeats asked for.
    pub repeats: u32,
    /// Why a repeat was not measured (the first such reason).
    pub error: Option<String>,
    /// Every gate this case broke, one sentence each.
    #[serde(default)]
    pub breaches: Vec<String>,
    /// Why a repeat's figures cannot be trusted (its ends' CPUs were
    /// taken by other work, [`crate::contention`]); None when none was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contended: Option<String>,
    /// NetworkPolicies that selected the agents while it ran
    /// (`k8s run --policy-load`); None when the run added none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_load: Option<u32>,
}

/// A case's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CaseStatus {
    /// Every repeat measured, no gate broken.
    Passed,
    /// A gate broken.
    Failed,
    /// A repeat not measured.
    Unmeasured,
    /// Measured, but an end's CPUs were taken by other work: neither
    /// passed nor failed.
    Contended,
}

impl PathCase {
    /// "client -> server" with the NIC pair when there is one.
    pub fn pair(&self) -> String {
        if self.client_nic.is_empty() {
            format!("{} -> {}", self.client_node, self.server_node)
        } else {
            format!(
                "{}/{} -> {}/{}",
                self.client_node, self.client_nic, self.server_node, self.server_nic
            )
        }
    }

    /// The path, and the policy load it ran under when there was one
    /// (`cross-node, 100 policies`).
    pub fn path_label(&self) -> String {
        match self.policy_load {
            Some(n) => format!("{}, {n} policies", self.path),
            None => self.path.clone(),
        }
    }

    /// "PATH WORKLOAD CLIENT -> SERVER", as messages name a case.
    pub fn label(&self) -> String {
        format!("{} {} {}", self.path_label(), self.workload, self.pair())
    }

    /// What a baseline matches a case on: path (with its policy load),
    /// workload, nodes, NICs.
    pub fn key(&self) -> (String, String, String, String, String, String) {
        (
            self.path_label(),
            self.workload.clone(),
            self.client_node.clone(),
            self.server_node.clone(),
            self.client_nic.clone(),
            self.server_nic.clone(),
        )
    }

    /// Its outcome: unmeasured wins over contended, contended over
    /// failed (a gate broken by a contended figure says nothing).
    pub fn status(&self) -> CaseStatus {
        if self.error.is_some() || (self.values.len() as u32) < self.repeats.max(1) {
            CaseStatus::Unmeasured
        } else if self.contended.is_some() {
            CaseStatus::Contended
        } else if !self.breaches.is_empty() {
            CaseStatus::Failed
        } else {
            CaseStatus::Passed
        }
    }
}

/// The cases of a run and what judged them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PathsReport {
    /// See [`PATHS_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Every case, in run order.
    pub cases: Vec<PathCase>,
    /// The gates applied, one sentence each (e.g. "cross-node >= 5 Gbit/s").
    #[serde(default)]
    pub gates: Vec<String>,
    /// Paths asked for that had no pair to test, with the reason.
    #[serde(default)]
    pub unplanned: Vec<String>,
    /// Nodes left out of the run and node pairs no asked path measures,
    /// each with the reason.
    #[serde(default)]
    pub left_out: Vec<String>,
}

impl PathsReport {
    /// Cases that were measured and passed.
    pub fn passed_count(&self) -> usize {
        self.cases
            .iter()
            .filter(|c| c.status() == CaseStatus::Passed)
            .count()
    }

    /// "PASS"; "CONTENDED" when every case not passed was contended (its
    /// figures neither pass nor fail); else "FAIL".
    pub fn verdict(&self) -> &'static str {
        let not_passed = || {
            self.cases
                .iter()
                .filter(|c| c.status() != CaseStatus::Passed)
        };
        if self.passed() {
            "PASS"
        } else if self.unplanned.is_empty()
            && not_passed().all(|c| c.status() == CaseStatus::Contended)
        {
            "CONTENDED"
        } else {
            "FAIL"
        }
    }

    /// Whether every case was measured and passed and every path planned.
    pub fn passed(&self) -> bool {
        self.unplanned.is_empty() && self.cases.iter().all(|c| c.status() == CaseStatus::Passed)
    }
}

/// Two-sided 95% Student t quantile for `df` degrees of freedom.
pub fn t95(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        d if d <= 30 => T[d - 1],
        _ => 1.96,
    }
}

/// Mean and 95% confidence interval of the mean of `xs` (None below two
/// values): mean ± t(0.975, n-1) · s / √n, s the sample standard
/// deviation.
pub fn mean_ci95(xs: &[f64]) -> Option<(f64, [f64; 2])> {
    let n = xs.len();
    if n < 2 {
        return None;
    }
    let mean = xs.iter().sum::<f64>() / n as f64;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let half = t95(n - 1) * (var / n as f64).sqrt();
    Some((mean, [mean - half, mean + half]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_interval_is_students_t() {
        assert!(mean_ci95(&[5.0]).is_none());
        let (m, [lo, hi]) = mean_ci95(&[9.0, 10.0, 11.0]).unwrap();
        assert_eq!(m, 10.0);
        // s = 1, n = 3: half-width 4.303 / sqrt(3) = 2.484.
        assert!((hi - 10.0 - 2.484).abs() < 1e-3 && (10.0 - lo - 2.484).abs() < 1e-3);
        assert_eq!(t95(100), 1.96);
    }

    #[test]
    fn status_orders_unmeasured_over_contended_over_failed() {
        let mut c = PathCase {
            repeats: 2,
            values: vec![1.0],
            breaches: vec!["x".into()],
            ..PathCase::default()
        };
        assert_eq!(c.status(), CaseStatus::Unmeasured);
        c.values.push(1.0);
        c.contended = Some("busy".into());
        assert_eq!(c.status(), CaseStatus::Contended);
        c.contended = None;
        assert_eq!(c.status(), CaseStatus::Failed);
        c.breaches.clear();
        assert_eq!(c.status(), CaseStatus::Passed);
        let mut r = PathsReport {
            cases: vec![c.clone(), c.clone()],
            ..PathsReport::default()
        };
        assert_eq!(r.verdict(), "PASS");
        r.cases[1].contended = Some("busy".into());
        assert_eq!(r.verdict(), "CONTENDED");
        r.cases[0].breaches.push("x".into());
        assert_eq!(r.verdict(), "FAIL");
    }
}
