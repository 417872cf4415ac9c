//! Optimize's summary as text for people (the step table, the ladder, the
//! recommendation). The summary itself (goal, rules, budget, every step)
//! is wirespeed-model's `optimize::Summary`, re-exported here.

use crate::experiment::pct_text;
pub use wirespeed_model::optimize::{Goal, Summary};
use wirespeed_model::optimize::{StepRecord, Verdict};

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
