//! Optimize's summary (`wirespeed optimize`): the search's goal, rules,
//! budget and every step, as written beside the experiment results, and
//! its text for people (the step table, the ladder, the recommendation).

use crate::experiment::pct_text;
use crate::human_bps;
use serde::{Deserialize, Serialize};
use wirespeed_model::optimize::{Better, Budget, Rules, StepRecord, Verdict};
use wirespeed_types::TestResult;

/// What a search raises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Goal {
    /// Goodput one way.
    Throughput,
    /// Goodput both ways.
    Bidir,
    /// Lower rr p50 latency.
    Rr,
}

impl Goal {
    /// Which way the judged figure improves.
    pub fn better(self) -> Better {
        match self {
            Goal::Rr => Better::Lower,
            _ => Better::Higher,
        }
    }

    /// The figure judged: goodput in bit/s, or rr p50 latency in us.
    pub fn value(self, r: &TestResult) -> f64 {
        match self {
            Goal::Rr => r.latency.as_ref().map_or(f64::NAN, |l| l.p50_us),
            _ => r.throughput_bps,
        }
    }

    /// The figure for people: `1.2 Gbit/s` or `31.0 us p50`, `-` if none.
    pub fn human(self, v: Option<f64>) -> String {
        match (self, v) {
            (_, None) => "-".into(),
            (Goal::Rr, Some(v)) => format!("{v:.1} us p50"),
            (_, Some(v)) => human_bps(v),
        }
    }
}

/// The `optimize` part of the results file, beside the experiment fields.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    /// What was raised.
    pub goal: Goal,
    /// Repeats and noise band the steps were judged by.
    pub rules: Rules,
    /// The time budget and what was spent.
    pub budget: Budget,
    /// Every step: baseline, kept, rejected and skipped.
    pub steps: Vec<StepRecord>,
    /// The best configuration's median (bit/s, or us p50 for rr).
    pub best_median: Option<f64>,
    /// The `wirespeed bench` command of the best configuration.
    pub bench_command: String,
    /// Host changes the best configuration needs, as commands.
    pub host_changes: Vec<String>,
    /// Whether they were left in place (`--keep`).
    pub host_changes_kept: bool,
    /// The journal's directory, when host settings were tried.
    pub state_dir: Option<String>,
    /// Settings restored at the end.
    pub rolled_back: Vec<String>,
    /// What was left out and why.
    pub notes: Vec<String>,
}

/// A verdict in words: `kept`, or `rejected: REASON`.
pub fn verdict_text(v: &Verdict) -> String {
    match v {
        Verdict::Rejected { reason } | Verdict::Skipped { reason } => {
            format!("{}: {reason}", v.name())
        }
        _ => v.name().into(),
    }
}

/// The step table, the ladder, the recommendation and the host changes;
/// `elapsed_s` is the search's wall time, `results` where the JSON went.
pub fn render(s: &Summary, elapsed_s: f64, results: Option<&std::path::Path>) -> String {
    let mut o = String::new();
    let head = [
        "step", "variable", "setting", "median", "vs prev", "vs base", "verdict",
    ];
    let mut rows: Vec<[String; 7]> = vec![head.map(String::from)];
    for (i, st) in s.steps.iter().enumerate() {
        rows.push([
            i.to_string(),
            st.variable.clone(),
            st.setting.clone(),
            s.goal.human(st.median),
            pct_text(st.vs_previous_pct),
            pct_text(st.vs_baseline_pct),
            verdict_text(&st.verdict),
        ]);
    }
    let w: Vec<usize> = (0..6)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    for r in &rows {
        let mut line = String::new();
        for c in 0..6 {
            line.push_str(&format!("{:<w$}  ", r[c], w = w[c]));
        }
        line.push_str(&r[6]);
        o.push_str(line.trim_end());
        o.push('\n');
    }
    let ladder: Vec<&StepRecord> = s.steps.iter().filter(|x| x.verdict.on_ladder()).collect();
    let medians: Vec<String> = ladder.iter().map(|x| s.goal.human(x.median)).collect();
    o.push_str(&format!(
        "\nladder: {}  ({} in {elapsed_s:.0} s of a {:.0} s budget, noise band {}%)\n",
        medians.join(" -> "),
        pct_text(ladder.last().and_then(|x| x.vs_baseline_pct)),
        s.budget.total_s,
        s.rules.noise_pct
    ));
    o.push_str(&format!("best: {}\n", s.bench_command));
    if !s.host_changes.is_empty() {
        let state = match (&s.state_dir, s.host_changes_kept) {
            (Some(d), true) => format!("kept; undo: wirespeed tune rollback --state-dir {d}"),
            _ => "rolled back; apply them to keep the gain".to_string(),
        };
        o.push_str(&format!("host changes ({state}):\n"));
        for c in &s.host_changes {
            o.push_str(&format!("  {c}\n"));
        }
    }
    for n in &s.notes {
        o.push_str(&format!("note: {n}\n"));
    }
    if let Some(p) = results {
        o.push_str(&format!(
            "results: {} (wirespeed report {0} -o report.html)\n",
            p.display()
        ));
    }
    o
}
