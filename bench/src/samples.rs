//! A contender's figures over its runs, and their medians and spread.

use crate::profile;
use crate::tools::{Figures, Measured};

/// One contender's samples.
#[derive(Default, Clone)]
pub(crate) struct Samples {
    pub(crate) figures: Vec<Figures>,
    /// Client CPU % of one core per Gbit/s.
    pub(crate) cpu_per_gbps: Vec<f64>,
    /// Server CPU % of one core per Gbit/s.
    pub(crate) server_cpu_per_gbps: Vec<f64>,
    /// Share of the client's CPU time spent in user space, percent.
    pub(crate) client_user_pct: Vec<f64>,
    /// The client's peak resident memory, KiB.
    pub(crate) rss_kb: Vec<f64>,
    /// Client plus server CPU, % of one core, per thousand transactions/s.
    pub(crate) cpu_per_ktps: Vec<f64>,
    /// `--perf`: the runs' mid-run samples, summed.
    pub(crate) profile: Option<profile::Profile>,
}

/// The median (wirespeed-types'), 0 without any value.
pub(crate) fn median(v: Vec<f64>) -> f64 {
    wirespeed_types::stats::median(&v).unwrap_or(0.0)
}

impl Samples {
    pub(crate) fn add(&mut self, f: Figures, m: &Measured, p: Option<profile::Profile>) {
        if let Some(p) = p {
            self.profile.get_or_insert_default().add(&p);
        }
        let gbps = f.bps / 1e9;
        if m.cpu_s > 0.0 {
            self.client_user_pct.push(m.user_s / m.cpu_s * 100.0);
        }
        self.rss_kb.push(m.maxrss_kb);
        if f.tps > 0.0 && m.wall_s > 0.0 {
            let both = (m.cpu_s + m.server_cpu_s) / m.wall_s * 100.0;
            self.cpu_per_ktps.push(both / (f.tps / 1e3));
        }
        if gbps > 0.0 && m.wall_s > 0.0 {
            self.cpu_per_gbps.push(m.cpu_s / m.wall_s * 100.0 / gbps);
            self.server_cpu_per_gbps
                .push(m.server_cpu_s / m.wall_s * 100.0 / gbps);
        }
        self.figures.push(f);
    }
    pub(crate) fn med(&self, pick: fn(&Figures) -> f64) -> f64 {
        median(self.figures.iter().map(pick).collect())
    }
    pub(crate) fn spread(&self, pick: fn(&Figures) -> f64) -> (f64, f64) {
        let v: Vec<f64> = self.figures.iter().map(pick).collect();
        (
            v.iter().cloned().fold(f64::INFINITY, f64::min),
            v.iter().cloned().fold(0.0, f64::max),
        )
    }
}

/// Goodput in Gbit/s.
pub(crate) fn gbps(f: &Figures) -> f64 {
    f.bps / 1e9
}
/// Median latency, us.
pub(crate) fn p50(f: &Figures) -> f64 {
    f.p50_us
}
/// 99th percentile latency, us.
pub(crate) fn p99(f: &Figures) -> f64 {
    f.p99_us
}
/// Transactions per second.
pub(crate) fn tps(f: &Figures) -> f64 {
    f.tps
}
