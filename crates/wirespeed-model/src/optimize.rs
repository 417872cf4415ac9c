//! The decision rules of `wirespeed optimize`, as pure functions over
//! measured values: when a step has been repeated enough, how wide its
//! noise band is, whether it beats the best configuration so far, and
//! whether the time left still covers one more step.
//!
//! The caller measures; this module only judges. Every rule is
//! deterministic, so a synthetic sequence of measurements always gets the
//! same verdicts. The search's [`Goal`] and the [`Summary`] written beside
//! its results are here too (the report renders them).

use serde::{Deserialize, Serialize};

/// Which way the goal's figure improves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    /// More is better (throughput, transactions/s).
    Higher,
    /// Less is better (latency).
    Lower,
}

/// The rules a search is run by.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rules {
    /// Repeats every step gets at least.
    pub min_repeats: u32,
    /// Repeats no step gets more than.
    pub max_repeats: u32,
    /// The stated noise band, % of the median.
    pub noise_pct: f64,
    /// Which way the figure improves.
    pub better: Better,
}

impl Rules {
    /// Rules with sane bounds: at least one repeat, `max >= min`, a
    /// finite non-negative noise band.
    pub fn new(min_repeats: u32, max_repeats: u32, noise_pct: f64, better: Better) -> Rules {
        let min_repeats = min_repeats.max(1);
        Rules {
            min_repeats,
            max_repeats: max_repeats.max(min_repeats),
            noise_pct: if noise_pct.is_finite() {
                noise_pct.max(0.0)
            } else {
                0.0
            },
            better,
        }
    }
}

/// The median of the finite values, or None without any (wirespeed-types').
pub use wirespeed_types::stats::median;

/// Half the range of the finite values as % of their median: the
/// observed noise, comparable with a stated `±noise`. 0 for fewer than two
/// values or a median that is not positive.
pub fn half_range_pct(values: &[f64]) -> f64 {
    let v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    let Some(m) = median(&v).filter(|m| *m > 0.0) else {
        return 0.0;
    };
    if v.len() < 2 {
        return 0.0;
    }
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (hi - lo) / 2.0 / m * 100.0
}

/// Whether a step needs another repeat: below the minimum always; at the
/// maximum never; in between while the values spread beyond the stated
/// band and the median still moved by more than the band with the last
/// value.
pub fn needs_more(rules: &Rules, values: &[f64]) -> bool {
    let n = values.iter().filter(|x| x.is_finite()).count() as u32;
    if values.len() as u32 >= rules.max_repeats {
        return false;
    }
    if n < rules.min_repeats {
        return true;
    }
    if half_range_pct(values) <= rules.noise_pct {
        return false;
    }
    let (Some(now), Some(before)) = (median(values), median(&values[..values.len() - 1])) else {
        return true;
    };
    before <= 0.0 || ((now - before) / before * 100.0).abs() > rules.noise_pct
}

/// The noise band a candidate must beat, %: the stated band, or the
/// observed half-range of the candidate's or the best's values when wider.
pub fn noise_band_pct(rules: &Rules, candidate: &[f64], best: &[f64]) -> f64 {
    rules
        .noise_pct
        .max(half_range_pct(candidate))
        .max(half_range_pct(best))
}

/// `value` against `reference` in %, signed so that positive is better
/// under `better`. None when the reference is not positive.
pub fn gain_pct(better: Better, value: f64, reference: f64) -> Option<f64> {
    if !(reference > 0.0 && value.is_finite()) {
        return None;
    }
    let raw = (value / reference - 1.0) * 100.0;
    Some(match better {
        Better::Higher => raw,
        Better::Lower => -raw,
    })
}

/// What became of a step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// The first measurement: what every gain is counted from.
    Baseline,
    /// Beat the best by more than the noise band; it is the new best.
    Kept,
    /// Measured but did not beat the best by more than the band.
    Rejected {
        /// Why, in words.
        reason: String,
    },
    /// Not measured (budget spent, setting not applicable or failed).
    Skipped {
        /// Why, in words.
        reason: String,
    },
}

impl Verdict {
    /// `baseline`, `kept`, `rejected` or `skipped`.
    pub fn name(&self) -> &'static str {
        match self {
            Verdict::Baseline => "baseline",
            Verdict::Kept => "kept",
            Verdict::Rejected { .. } => "rejected",
            Verdict::Skipped { .. } => "skipped",
        }
    }

    /// True for the baseline and kept steps: the ladder.
    pub fn on_ladder(&self) -> bool {
        matches!(self, Verdict::Baseline | Verdict::Kept)
    }
}

/// One step of a search as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    /// The variable changed, e.g. `flows per path`.
    pub variable: String,
    /// Its value in this step, e.g. `4`.
    pub setting: String,
    /// Every repeat's figure (empty when skipped).
    pub values: Vec<f64>,
    /// Median of `values`.
    pub median: Option<f64>,
    /// The band the step had to beat, %.
    pub band_pct: f64,
    /// Against the best before this step, % (positive = better).
    pub vs_previous_pct: Option<f64>,
    /// Against the baseline, % (positive = better).
    pub vs_baseline_pct: Option<f64>,
    /// The decision.
    pub verdict: Verdict,
}

/// A search in progress: the baseline, the best so far and every step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Search {
    /// The rules it judges by.
    pub rules: Rules,
    /// Every step in order, the baseline first.
    pub steps: Vec<StepRecord>,
    best: Option<usize>,
}

impl Search {
    /// An empty search.
    pub fn new(rules: Rules) -> Search {
        Search {
            rules,
            steps: Vec::new(),
            best: None,
        }
    }

    /// The best step so far (the baseline until a step is kept).
    pub fn best(&self) -> Option<&StepRecord> {
        self.best.and_then(|i| self.steps.get(i))
    }

    /// The baseline's median.
    pub fn baseline_median(&self) -> Option<f64> {
        self.steps
            .iter()
            .find(|s| s.verdict == Verdict::Baseline)
            .and_then(|s| s.median)
    }

    /// Judges a measured step and records it: the first step with a
    /// median becomes the baseline; later ones are kept only when their
    /// gain over the best exceeds the noise band. Returns the verdict.
    pub fn judge(&mut self, variable: &str, setting: &str, values: &[f64]) -> Verdict {
        let med = median(values);
        let best_vals: Vec<f64> = self.best().map(|b| b.values.clone()).unwrap_or_default();
        let best_med = self.best().and_then(|b| b.median);
        let band = noise_band_pct(&self.rules, values, &best_vals);
        let base = self.baseline_median();
        let better = self.rules.better;
        let vs_prev = med.zip(best_med).and_then(|(m, b)| gain_pct(better, m, b));
        let verdict = match (med, best_med) {
            (None, _) => Verdict::Rejected {
                reason: "no valid measurement".into(),
            },
            (Some(m), None) if m > 0.0 => Verdict::Baseline,
            (Some(_), None) => Verdict::Rejected {
                reason: "the baseline measured nothing".into(),
            },
            (Some(_), Some(_)) => match vs_prev {
                Some(g) if g > band => Verdict::Kept,
                Some(g) if g >= -band => Verdict::Rejected {
                    reason: format!("within noise ({g:+.1}% vs band ±{band:.1}%)"),
                },
                Some(g) => Verdict::Rejected {
                    reason: format!("worse ({g:+.1}%)"),
                },
                None => Verdict::Rejected {
                    reason: "cannot compare with the best".into(),
                },
            },
        };
        if verdict.on_ladder() {
            self.best = Some(self.steps.len());
        }
        self.steps.push(StepRecord {
            variable: variable.into(),
            setting: setting.into(),
            values: values.to_vec(),
            median: med,
            band_pct: band,
            vs_previous_pct: vs_prev,
            vs_baseline_pct: med.zip(base).and_then(|(m, b)| gain_pct(better, m, b)),
            verdict: verdict.clone(),
        });
        verdict
    }

    /// Records a step that was not measured; returns its verdict.
    pub fn skip(&mut self, variable: &str, setting: &str, reason: &str) -> Verdict {
        let verdict = Verdict::Skipped {
            reason: reason.into(),
        };
        self.steps.push(StepRecord {
            variable: variable.into(),
            setting: setting.into(),
            values: Vec::new(),
            median: None,
            band_pct: self.rules.noise_pct,
            vs_previous_pct: None,
            vs_baseline_pct: None,
            verdict: verdict.clone(),
        });
        verdict
    }

    /// The ladder: the baseline and every kept step, in order.
    pub fn ladder(&self) -> Vec<&StepRecord> {
        self.steps
            .iter()
            .filter(|s| s.verdict.on_ladder())
            .collect()
    }
}

/// Time accounting of a bounded search, in seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Budget {
    /// The whole budget.
    pub total_s: f64,
    /// Spent so far.
    pub used_s: f64,
    /// Measurements timed so far.
    pub measurements: u32,
    /// Their total time.
    pub measured_s: f64,
    /// What one measurement is assumed to cost before any is timed.
    pub estimate_s: f64,
}

impl Budget {
    /// A budget of `total_s`, one measurement assumed to take `estimate_s`.
    pub fn new(total_s: f64, estimate_s: f64) -> Budget {
        let pos = |x: f64| if x.is_finite() { x.max(0.0) } else { 0.0 };
        Budget {
            total_s: pos(total_s),
            used_s: 0.0,
            measurements: 0,
            measured_s: 0.0,
            estimate_s: pos(estimate_s),
        }
    }

    /// Seconds left (never negative).
    pub fn left_s(&self) -> f64 {
        (self.total_s - self.used_s).max(0.0)
    }

    /// Counts time spent outside measurements (applying settings).
    pub fn spend(&mut self, s: f64) {
        if s.is_finite() && s > 0.0 {
            self.used_s += s;
        }
    }

    /// Counts one measurement that took `s`.
    pub fn measured(&mut self, s: f64) {
        if s.is_finite() && s >= 0.0 {
            self.used_s += s;
            self.measured_s += s;
            self.measurements += 1;
        }
    }

    /// What one measurement costs: the largest of the estimate and the
    /// mean of those timed.
    pub fn per_measurement_s(&self) -> f64 {
        let mean = if self.measurements > 0 {
            self.measured_s / self.measurements as f64
        } else {
            0.0
        };
        self.estimate_s.max(mean)
    }

    /// Whether the time left covers one more step at its minimum repeats.
    pub fn covers_step(&self, rules: &Rules) -> bool {
        self.left_s() >= self.per_measurement_s() * rules.min_repeats as f64
    }

    /// Whether the time left covers one more repeat.
    pub fn covers_repeat(&self) -> bool {
        self.left_s() >= self.per_measurement_s()
    }
}

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
    /// Every goal, in declaration order.
    pub const ALL: [Goal; 3] = [Goal::Throughput, Goal::Bidir, Goal::Rr];
    /// The names `optimize --goal` takes, in [`Goal::ALL`]'s order.
    pub const NAMES: [&'static str; 3] = ["throughput", "bidir", "rr"];

    /// Its name, as `--goal` takes it.
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    /// Which way the judged figure improves.
    pub fn better(self) -> Better {
        match self {
            Goal::Rr => Better::Lower,
            _ => Better::Higher,
        }
    }

    /// The figure judged: goodput in bit/s, or rr p50 latency in us.
    pub fn value(self, r: &wirespeed_types::TestResult) -> f64 {
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
            (_, Some(v)) => wirespeed_types::text::human_bps(v),
        }
    }
}

impl std::str::FromStr for Goal {
    type Err = crate::ModelError;

    fn from_str(s: &str) -> Result<Goal, crate::ModelError> {
        let i = Self::NAMES.iter().position(|n| *n == s).ok_or_else(|| {
            crate::ModelError::Query(format!("goal {s:?}: use throughput, bidir or rr"))
        })?;
        Ok(Self::ALL[i])
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_name_parses_to_its_goal() {
        for (i, g) in Goal::ALL.into_iter().enumerate() {
            assert_eq!(g as usize, i);
            assert_eq!(Goal::NAMES[i].parse::<Goal>().unwrap(), g);
            assert_eq!(g.name(), Goal::NAMES[i]);
        }
    }

    fn rules() -> Rules {
        Rules::new(3, 5, 3.0, Better::Higher)
    }

    /// Feeds values one at a time, as the driver does, until the rules
    /// say stop; returns what was used.
    fn repeat(r: &Rules, source: &[f64]) -> Vec<f64> {
        let mut got = Vec::new();
        for &v in source {
            if !needs_more(r, &got) {
                break;
            }
            got.push(v);
        }
        got
    }

    #[test]
    fn medians_and_half_ranges() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[f64::NAN]), None);
        assert_eq!(median(&[]), None);
        assert!((half_range_pct(&[9.0, 10.0, 11.0]) - 10.0).abs() < 1e-9);
        assert_eq!(half_range_pct(&[5.0]), 0.0);
        assert_eq!(half_range_pct(&[0.0, 0.0]), 0.0);
    }

    #[test]
    fn stable_values_stop_at_the_minimum_noisy_ones_go_on_to_the_maximum() {
        let r = rules();
        assert_eq!(repeat(&r, &[100.0, 101.0, 99.5, 100.0, 100.0]).len(), 3);
        // Wide spread and a median that keeps moving: all five.
        assert_eq!(repeat(&r, &[100.0, 140.0, 60.0, 150.0, 50.0, 1.0]).len(), 5);
        // Wide spread but the median settles: stops once it no longer moves.
        assert_eq!(repeat(&r, &[100.0, 120.0, 80.0, 100.0, 100.0]).len(), 4);
        // A failed (NaN) repeat does not count towards the minimum.
        let r1 = Rules::new(2, 4, 3.0, Better::Higher);
        assert_eq!(repeat(&r1, &[f64::NAN, 10.0, 10.0, 10.0]).len(), 3);
    }

    #[test]
    fn rules_are_sanitised() {
        let r = Rules::new(0, 0, f64::NAN, Better::Lower);
        assert_eq!((r.min_repeats, r.max_repeats, r.noise_pct), (1, 1, 0.0));
        assert!(!needs_more(&r, &[1.0]));
        assert!(needs_more(&r, &[]));
    }

    #[test]
    fn the_report_2_ladder_keeps_every_real_gain() {
        let mut s = Search::new(rules());
        assert_eq!(
            s.judge("paths", "1", &[18.3, 18.4, 18.5]),
            Verdict::Baseline
        );
        assert_eq!(s.judge("mtu", "9000", &[19.8, 19.9, 20.0]), Verdict::Kept);
        assert_eq!(s.judge("buffers", "8m", &[29.0, 29.1, 29.3]), Verdict::Kept);
        assert_eq!(s.judge("flows", "4", &[32.0, 31.9, 32.1]), Verdict::Kept);
        let l: Vec<f64> = s.ladder().iter().filter_map(|x| x.median).collect();
        assert_eq!(l, vec![18.4, 19.9, 29.1, 32.0]);
        let last = s.steps.last().unwrap();
        assert!((last.vs_baseline_pct.unwrap() - (32.0 / 18.4 - 1.0) * 100.0).abs() < 1e-9);
        assert!((last.vs_previous_pct.unwrap() - (32.0 / 29.1 - 1.0) * 100.0).abs() < 1e-9);
    }

    #[test]
    fn gains_inside_the_noise_band_and_losses_are_rejected() {
        let mut s = Search::new(rules());
        s.judge("paths", "1", &[100.0, 100.0, 100.0]);
        // +2% under a 3% stated band.
        let v = s.judge("flows", "2", &[102.0, 102.0, 102.0]);
        assert!(matches!(v, Verdict::Rejected { ref reason } if reason.contains("within noise")));
        // +6% but the candidate's own half-range is 10%: still noise.
        let v = s.judge("flows", "4", &[96.0, 106.0, 116.0]);
        assert!(matches!(v, Verdict::Rejected { .. }), "{v:?}");
        assert!((s.steps.last().unwrap().band_pct - 10.0 / 106.0 * 100.0).abs() < 1e-9);
        let v = s.judge("zerocopy", "on", &[80.0, 80.0, 80.0]);
        assert!(matches!(v, Verdict::Rejected { ref reason } if reason.contains("worse")));
        // The best stayed the baseline, so a later +5% is kept against it.
        assert_eq!(
            s.judge("threads", "2", &[105.0, 105.0, 105.0]),
            Verdict::Kept
        );
        assert_eq!(s.best().unwrap().setting, "2");
        assert_eq!(s.ladder().len(), 2);
    }

    #[test]
    fn lower_is_better_for_latency() {
        let mut s = Search::new(Rules::new(3, 5, 3.0, Better::Lower));
        s.judge("baseline", "-", &[70.0, 71.0, 70.0]);
        assert_eq!(
            s.judge("big tcp", "185000", &[57.0, 58.0, 57.0]),
            Verdict::Kept
        );
        let v = s.judge("mtu", "9000", &[65.0, 65.0, 65.0]);
        assert!(matches!(v, Verdict::Rejected { ref reason } if reason.contains("worse")));
        assert!(s.steps[1].vs_baseline_pct.unwrap() > 18.0);
    }

    #[test]
    fn a_baseline_needs_a_positive_median_and_skips_are_recorded() {
        let mut s = Search::new(rules());
        assert!(matches!(
            s.judge("paths", "1", &[f64::NAN]),
            Verdict::Rejected { .. }
        ));
        assert!(matches!(
            s.judge("paths", "1", &[0.0, 0.0, 0.0]),
            Verdict::Rejected { .. }
        ));
        assert_eq!(s.judge("paths", "1", &[5.0, 5.0, 5.0]), Verdict::Baseline);
        s.skip("mtu", "9000", "budget spent");
        assert_eq!(s.steps.last().unwrap().verdict.name(), "skipped");
        assert_eq!(s.ladder().len(), 1);
    }

    #[test]
    fn the_budget_skips_a_step_it_cannot_cover() {
        let r = rules();
        let mut b = Budget::new(10.0, 1.5);
        assert!(b.covers_step(&r));
        b.measured(2.0);
        b.measured(2.0);
        assert_eq!(b.per_measurement_s(), 2.0);
        assert_eq!(b.left_s(), 6.0);
        assert!(b.covers_step(&r));
        b.spend(0.5);
        assert!(!b.covers_step(&r));
        assert!(b.covers_repeat());
        b.measured(f64::NAN);
        b.spend(-3.0);
        assert_eq!(b.measurements, 2);
        b.measured(9.0);
        assert_eq!(b.left_s(), 0.0);
        assert!(!b.covers_repeat());
        assert_eq!(Budget::new(f64::INFINITY, -1.0).total_s, 0.0);
    }
}
