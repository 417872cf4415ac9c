//! The watcher's schedule: light probes between every probed pair at a
//! short period, bandwidth tests in a rotation, all under a budget.
//!
//! The schedule is computed, not looped: [`Schedule::due`] says which
//! tests fall in a window of wall-clock time from the time alone, so a
//! watcher that restarts picks the schedule up where the clock is and
//! never replays the past at once.
//!
//! - **Who probes whom.** Up to `peers + 1` agents: every pair. Larger
//!   fleets: each agent probes the agents at a fixed set of offsets
//!   around the fleet order (1, 2, 3, ... then powers of two), a
//!   circulant graph of degree at most `peers` whose diameter grows with
//!   log n. That bounds the pairs, hence the time series, at n x peers / 2.
//! - **Probes.** Each pair is probed once per probe period, at a phase and
//!   a jitter taken from a hash of the pair (and the period's number), so
//!   probes spread over the period and the same pair keeps its phase
//!   across restarts. A probe never falls inside a bandwidth test of one
//!   of its hosts: it moves to just after it.
//! - **Bandwidth.** The pairs are coloured into rounds in which each agent
//!   is in at most one pair (one bandwidth test per host at a time). One
//!   round runs per slot; a slot is long enough that a link busy for one
//!   test per slot stays within its share of the budget.
//! - **Budget.** Per link: probes may take half the share (the probe
//!   period is stretched if they would take more); bandwidth tests take
//!   the rest.

use crate::error::{FleetError, Result};
use crate::plan::{Pattern, plan_n};

/// What the watcher may spend on each link.
#[derive(Debug, Clone, PartialEq)]
pub struct Budget {
    /// Fraction of each link's capacity that tests may use on average
    /// (0.01 = 1%).
    pub share: f64,
    /// Each link's capacity, bits per second.
    pub link_bps: f64,
    /// The wanted probe period, seconds (stretched to fit the budget).
    pub probe_period_s: f64,
    /// Length of one bandwidth test on one NIC pair, seconds (warm-up
    /// included).
    pub bandwidth_s: f64,
    /// NIC pairs a bandwidth test runs over, one after the other.
    pub nic_pairs: usize,
    /// Bytes one probe of a pair moves over each link, all probe
    /// workloads and NIC pairs together, both directions.
    pub probe_bytes: f64,
    /// Most agents each agent probes.
    pub peers: usize,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget {
            share: 0.01,
            link_bps: 10e9,
            probe_period_s: 30.0,
            bandwidth_s: 2.0,
            nic_pairs: 1,
            probe_bytes: 300e3,
            peers: 16,
        }
    }
}

/// One test the schedule wants run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Due {
    /// When, Unix seconds.
    pub at: f64,
    /// The agent that runs the client (index into the fleet).
    pub client: usize,
    /// The agent whose server answers.
    pub server: usize,
    /// A probe (light) or a bandwidth test.
    pub kind: Kind,
}

/// Which test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// The light probes (request/response latency).
    Probe,
    /// A bandwidth test.
    Bandwidth,
}

/// The schedule of one fleet under one budget.
#[derive(Debug, Clone)]
pub struct Schedule {
    agents: usize,
    /// The probed pairs, (lower, higher) index.
    pairs: Vec<(usize, usize)>,
    /// Bandwidth rounds: indices into `pairs`, each agent at most once.
    rounds: Vec<Vec<usize>>,
    /// Rounds each agent is in (sorted), to keep probes out of them.
    busy: Vec<Vec<usize>>,
    probe_period_s: f64,
    slot_s: f64,
    bandwidth_busy_s: f64,
}

/// FNV-1a over the numbers: a stable hash (the schedule must not change
/// between builds or runs).
fn hash(xs: &[u64]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for x in xs {
        for b in x.to_le_bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// A fraction in [0, 1) from a hash.
fn unit(xs: &[u64]) -> f64 {
    (hash(xs) >> 11) as f64 / (1u64 << 53) as f64
}

/// The offsets each agent probes at in a fleet of `n` larger than
/// `peers + 1`: 1, 2, ... up to half the degree, then powers of two.
fn offsets(n: usize, peers: usize) -> Vec<usize> {
    let want = (peers / 2).max(1);
    let near = want.div_ceil(2);
    let mut o: Vec<usize> = (1..=near).collect();
    let mut p = near.next_power_of_two().max(2) * 2;
    while o.len() < want && p <= n / 2 {
        o.push(p);
        p *= 2;
    }
    let mut next = near + 1;
    while o.len() < want && next <= n / 2 {
        if !o.contains(&next) {
            o.push(next);
        }
        next += 1;
    }
    o.sort_unstable();
    o
}

/// The probed pairs of `n` agents, each (lower, higher), sorted.
fn probe_pairs(n: usize, peers: usize) -> Vec<(usize, usize)> {
    let mut pairs = Vec::new();
    if n < 2 {
        return pairs;
    }
    if n <= peers + 1 {
        for a in 0..n {
            for b in a + 1..n {
                pairs.push((a, b));
            }
        }
        return pairs;
    }
    for o in offsets(n, peers) {
        for a in 0..n {
            let b = (a + o) % n;
            pairs.push((a.min(b), a.max(b)));
        }
    }
    pairs.sort_unstable();
    pairs.dedup();
    pairs
}

/// Colours `pairs` into rounds, each agent at most once per round.
fn colour(n: usize, pairs: &[(usize, usize)]) -> Result<Vec<Vec<usize>>> {
    if pairs.len() == n * (n - 1) / 2 {
        // Every pair: the circle method, the fewest rounds.
        let index = |a: usize, b: usize| pairs.binary_search(&(a.min(b), a.max(b))).ok();
        let p = plan_n(n, Pattern::AllToAll, 1)?;
        return Ok(p
            .rounds
            .iter()
            .map(|r| {
                r.jobs
                    .iter()
                    .filter_map(|j| index(j.client, j.server))
                    .collect()
            })
            .collect());
    }
    // Few peers each: greedy, at most 2 x degree - 1 rounds.
    let mut rounds: Vec<Vec<usize>> = Vec::new();
    let mut used: Vec<Vec<bool>> = Vec::new();
    for (i, &(a, b)) in pairs.iter().enumerate() {
        let r = (0..rounds.len())
            .find(|&r| !used[r][a] && !used[r][b])
            .unwrap_or_else(|| {
                rounds.push(Vec::new());
                used.push(vec![false; n]);
                rounds.len() - 1
            });
        rounds[r].push(i);
        used[r][a] = true;
        used[r][b] = true;
    }
    Ok(rounds)
}

impl Schedule {
    /// The schedule of `agents` agents under `b`.
    pub fn new(agents: usize, b: &Budget) -> Result<Schedule> {
        let bad = |what: &str| Err(FleetError::Plan(format!("watch budget: {what}")));
        if !(b.share > 0.0 && b.share <= 1.0) {
            return bad("the share must be above 0 and at most 100%");
        }
        if !(b.link_bps >= 1e3 && b.link_bps.is_finite()) {
            return bad("the link rate must be at least 1 kbit/s");
        }
        if !(b.probe_period_s >= 1.0 && b.bandwidth_s > 0.0 && b.probe_bytes >= 0.0) {
            return bad("the probe period must be at least 1 s and a bandwidth test longer than 0");
        }
        if b.peers == 0 || b.nic_pairs == 0 {
            return bad("peers and NIC pairs must be at least 1");
        }
        let pairs = probe_pairs(agents, b.peers);
        let degree = (0..agents)
            .map(|a| pairs.iter().filter(|p| p.0 == a || p.1 == a).count())
            .max()
            .unwrap_or(0);
        let link_bytes_s = b.link_bps / 8.0;
        // Probes: at most half the share.
        let probe_need = degree as f64 * b.probe_bytes / (link_bytes_s * b.share / 2.0);
        let probe_period_s = b.probe_period_s.max(probe_need);
        let probe_share = degree as f64 * b.probe_bytes / probe_period_s / link_bytes_s;
        let left = (b.share - probe_share).max(b.share / 2.0);
        // Each link is busy for one NIC pair's test per slot.
        let slot_s = b.bandwidth_s / left;
        let rounds = colour(agents.max(1), &pairs)?;
        let mut busy = vec![Vec::new(); agents];
        for (r, round) in rounds.iter().enumerate() {
            for &p in round {
                busy[pairs[p].0].push(r);
                busy[pairs[p].1].push(r);
            }
        }
        Ok(Schedule {
            agents,
            pairs,
            rounds,
            busy,
            probe_period_s,
            slot_s: slot_s.max(b.bandwidth_s * b.nic_pairs as f64 + 1.0),
            bandwidth_busy_s: b.bandwidth_s * b.nic_pairs as f64 + 1.0,
        })
    }

    /// The probed pairs, (lower, higher) agent index.
    pub fn pairs(&self) -> &[(usize, usize)] {
        &self.pairs
    }

    /// The probe period in force, seconds (the wanted one, or longer to
    /// fit the budget).
    pub fn probe_period_s(&self) -> f64 {
        self.probe_period_s
    }

    /// Time between two bandwidth rounds, seconds.
    pub fn slot_s(&self) -> f64 {
        self.slot_s
    }

    /// Bandwidth rounds in one rotation.
    pub fn rounds(&self) -> usize {
        self.rounds.len()
    }

    /// How often each pair gets a bandwidth test, seconds: one rotation.
    pub fn bandwidth_every_s(&self) -> f64 {
        self.slot_s * self.rounds.len() as f64
    }

    /// The slot number holding `t`, and its round.
    fn slot_of(&self, t: f64) -> (i64, usize) {
        let s = (t / self.slot_s).floor() as i64;
        (s, s.rem_euclid(self.rounds.len().max(1) as i64) as usize)
    }

    /// When slot `s`'s bandwidth round starts: a jitter into the slot, so
    /// rounds do not start on round seconds fleet-wide.
    fn slot_start(&self, s: i64) -> f64 {
        let room = (self.slot_s - self.bandwidth_busy_s).max(0.0);
        s as f64 * self.slot_s + room * unit(&[s as u64, 0xb0])
    }

    /// Whether agent `a` is in a bandwidth test at time `t`; if so, when
    /// it ends.
    fn in_bandwidth(&self, a: usize, t: f64) -> Option<f64> {
        let (s, r) = self.slot_of(t);
        let start = self.slot_start(s);
        let end = start + self.bandwidth_busy_s;
        (t >= start && t < end && self.busy[a].binary_search(&r).is_ok()).then_some(end)
    }

    /// The tests due in `[from, to)`, Unix seconds, in time order.
    pub fn due(&self, from: f64, to: f64) -> Vec<Due> {
        let mut out = Vec::new();
        if self.agents < 2 || to <= from {
            return out;
        }
        self.due_probes(from, to, &mut out);
        self.due_bandwidth(from, to, &mut out);
        out.sort_by(|a, b| a.at.total_cmp(&b.at));
        out
    }

    fn due_probes(&self, from: f64, to: f64, out: &mut Vec<Due>) {
        let p = self.probe_period_s;
        let room = self.bandwidth_busy_s;
        for (i, &(a, b)) in self.pairs.iter().enumerate() {
            let phase = p * 0.9 * unit(&[a as u64, b as u64]);
            // A probe moved past a bandwidth test lands at most `room`
            // later: look back that far.
            let first = ((from - room - phase) / p).floor() as i64 - 1;
            let mut j = first;
            loop {
                let planned = j as f64 * p + phase + p * 0.1 * unit(&[i as u64, j as u64]);
                if planned >= to {
                    break;
                }
                let at = self.after_bandwidth(a, b, planned);
                if at >= from && at < to {
                    let (client, server) = if j.rem_euclid(2) == 0 { (a, b) } else { (b, a) };
                    out.push(Due {
                        at,
                        client,
                        server,
                        kind: Kind::Probe,
                    });
                }
                j += 1;
            }
        }
    }

    /// `t`, or the end of a bandwidth test either agent is in at `t`.
    fn after_bandwidth(&self, a: usize, b: usize, t: f64) -> f64 {
        let mut t = t;
        while let Some(end) = self.in_bandwidth(a, t).or(self.in_bandwidth(b, t)) {
            t = end + 0.05;
        }
        t
    }

    fn due_bandwidth(&self, from: f64, to: f64, out: &mut Vec<Due>) {
        let (mut s, _) = self.slot_of(from);
        loop {
            let start = self.slot_start(s);
            if start >= to {
                break;
            }
            if start >= from {
                let r = s.rem_euclid(self.rounds.len().max(1) as i64) as usize;
                // Directions alternate from one rotation to the next.
                let flip = s.div_euclid(self.rounds.len().max(1) as i64).rem_euclid(2) == 1;
                for &p in self.rounds.get(r).into_iter().flatten() {
                    let (a, b) = self.pairs[p];
                    let (client, server) = if flip { (b, a) } else { (a, b) };
                    out.push(Due {
                        at: start,
                        client,
                        server,
                        kind: Kind::Bandwidth,
                    });
                }
            }
            s += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget() -> Budget {
        Budget {
            share: 0.01,
            link_bps: 10e9,
            probe_period_s: 10.0,
            bandwidth_s: 2.0,
            nic_pairs: 2,
            probe_bytes: 300e3,
            peers: 16,
        }
    }

    #[test]
    fn small_fleets_probe_every_pair_large_ones_a_bounded_few() {
        assert_eq!(probe_pairs(6, 16).len(), 15);
        let big = probe_pairs(1000, 16);
        assert_eq!(big.len(), 1000 * 8, "n x peers / 2 pairs");
        for a in 0..1000 {
            let d = big.iter().filter(|p| p.0 == a || p.1 == a).count();
            assert_eq!(d, 16, "agent {a}");
        }
        assert!(big.iter().all(|p| p.0 < p.1));
    }

    #[test]
    fn each_pair_is_probed_once_a_period_and_never_during_its_bandwidth_test() {
        let s = Schedule::new(6, &budget()).unwrap();
        let p = s.probe_period_s();
        let t0 = 1_800_000_000.0;
        let due = s.due(t0, t0 + 20.0 * p);
        for &(a, b) in s.pairs() {
            let n = due
                .iter()
                .filter(|d| {
                    d.kind == Kind::Probe
                        && d.client.min(d.server) == a
                        && d.client.max(d.server) == b
                })
                .count();
            assert!(
                (19..=21).contains(&n),
                "pair {a}-{b}: {n} probes in 20 periods"
            );
        }
        for d in due.iter().filter(|d| d.kind == Kind::Probe) {
            assert!(s.in_bandwidth(d.client, d.at).is_none(), "{d:?}");
            assert!(s.in_bandwidth(d.server, d.at).is_none(), "{d:?}");
        }
    }

    #[test]
    fn bandwidth_tests_keep_one_per_host_and_the_share() {
        let b = budget();
        let s = Schedule::new(6, &b).unwrap();
        let t0 = 1_800_000_000.0;
        let span = 10.0 * s.bandwidth_every_s();
        let due: Vec<Due> = s
            .due(t0, t0 + span)
            .into_iter()
            .filter(|d| d.kind == Kind::Bandwidth)
            .collect();
        for w in due.windows(2) {
            if w[0].at == w[1].at {
                let hosts = [w[0].client, w[0].server];
                assert!(!hosts.contains(&w[1].client) && !hosts.contains(&w[1].server));
            }
        }
        // Each link busy for one NIC pair's test per host test.
        for a in 0..6 {
            let tests = due
                .iter()
                .filter(|d| d.client == a || d.server == a)
                .count();
            // A window may catch one slot more than its share.
            let busy = tests as f64 * b.bandwidth_s;
            assert!(
                busy <= b.share * span + b.bandwidth_s,
                "agent {a}: {busy} s of {span}"
            );
        }
        // Both directions over two rotations.
        assert!(due.iter().any(|d| d.client == 0 && d.server == 1));
        assert!(due.iter().any(|d| d.client == 1 && d.server == 0));
    }

    #[test]
    fn probes_that_would_break_the_budget_stretch_the_period() {
        let b = Budget {
            link_bps: 100e6,
            probe_bytes: 2e6,
            share: 0.1,
            ..budget()
        };
        let s = Schedule::new(6, &b).unwrap();
        // 5 peers x 2 MB at most 5% of 12.5 MB/s.
        assert!(
            (s.probe_period_s() - 16.0).abs() < 1e-9,
            "{}",
            s.probe_period_s()
        );
    }

    #[test]
    fn the_schedule_depends_on_the_clock_only() {
        let s = Schedule::new(100, &budget()).unwrap();
        let t0 = 1_800_000_000.0;
        let whole = s.due(t0, t0 + 300.0);
        let mut parts = s.due(t0, t0 + 100.0);
        parts.extend(s.due(t0 + 100.0, t0 + 300.0));
        assert_eq!(whole, parts, "windows compose: a restart resumes");
    }

    #[test]
    fn a_bad_budget_is_refused() {
        for b in [
            Budget {
                share: 0.0,
                ..budget()
            },
            Budget {
                share: 1.5,
                ..budget()
            },
            Budget {
                probe_period_s: 0.1,
                ..budget()
            },
            Budget {
                link_bps: f64::NAN,
                ..budget()
            },
            Budget {
                peers: 0,
                ..budget()
            },
        ] {
            assert!(Schedule::new(10, &b).is_err(), "{b:?}");
        }
    }
}
