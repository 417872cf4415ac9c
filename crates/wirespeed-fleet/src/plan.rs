//! The planner: which agent tests which, in rounds.
//!
//! With `concurrent = 1` every round holds disjoint pairs, so no host is
//! in two tests at once: a proper edge colouring of the pattern's graph.
//! All-to-all uses the round-robin tournament (circle method): n-1 rounds
//! for n even, n for n odd, the fewest possible, every unordered pair
//! exactly once. With `concurrent = K` K consecutive rounds of that
//! colouring are merged, so each host is in at most K tests at once:
//! deliberately, to measure interference between clients.
//! Planning is linear in the number of tests (1,000 agents all-to-all,
//! 499,500 tests, take milliseconds).

use crate::error::{FleetError, Result};
use crate::fleet::Fleet;
use serde::{Deserialize, Serialize};

/// Which agents test which.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pattern {
    /// Agents 1-2, 3-4, ... in fleet order (one round).
    Pairs,
    /// Each agent to the next, the last to the first.
    Ring,
    /// Every unordered pair once.
    AllToAll,
    /// The first agent (the hub) to every other.
    OneToMany,
    /// Every other agent to the first (incast).
    ManyToOne,
}

impl Pattern {
    /// Every pattern's name, as `--pattern` takes it, in
    /// [`Pattern::ALL`]'s order (`incast` is also taken for many-to-one).
    pub const NAMES: [&'static str; 5] =
        ["pairs", "ring", "all-to-all", "one-to-many", "many-to-one"];

    /// Every pattern, in declaration order.
    pub const ALL: [Pattern; 5] = [
        Pattern::Pairs,
        Pattern::Ring,
        Pattern::AllToAll,
        Pattern::OneToMany,
        Pattern::ManyToOne,
    ];

    /// Its name as on the command line.
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

impl std::str::FromStr for Pattern {
    type Err = FleetError;
    fn from_str(s: &str) -> Result<Pattern> {
        if s == "incast" {
            return Ok(Pattern::ManyToOne);
        }
        let i = Self::NAMES.iter().position(|n| *n == s).ok_or_else(|| {
            FleetError::Plan(format!(
                "unknown pattern {s:?}: use pairs, ring, all-to-all, one-to-many or many-to-one"
            ))
        })?;
        Ok(Self::ALL[i])
    }
}

/// One test between two agents (indices into the fleet's agents); it
/// runs over each of their NIC pairs and each workload in turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Job {
    /// The agent that runs the client.
    pub client: usize,
    /// The agent whose server answers.
    pub server: usize,
}

/// Tests that run at once.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Round {
    /// The tests of this round.
    pub jobs: Vec<Job>,
}

/// A schedule: rounds run one after the other, the jobs of a round at once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// The pattern planned.
    pub pattern: Pattern,
    /// Most tests one host takes part in at once.
    pub concurrent: u32,
    /// Agents in the fleet planned for.
    pub agents: usize,
    /// The rounds.
    pub rounds: Vec<Round>,
}

impl Plan {
    /// Every job, in run order.
    pub fn jobs(&self) -> impl Iterator<Item = (usize, Job)> + '_ {
        self.rounds
            .iter()
            .enumerate()
            .flat_map(|(i, r)| r.jobs.iter().map(move |j| (i, *j)))
    }

    /// Number of jobs.
    pub fn len(&self) -> usize {
        self.rounds.iter().map(|r| r.jobs.len()).sum()
    }

    /// Whether the plan has no job.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Checks the plan's own promise: each host in at most `concurrent`
    /// jobs per round, no job of a host with itself, indices in range.
    pub fn check(&self) -> Result<()> {
        let mut load = vec![0u32; self.agents];
        for (i, r) in self.rounds.iter().enumerate() {
            for j in &r.jobs {
                if j.client == j.server || j.client >= self.agents || j.server >= self.agents {
                    return Err(FleetError::Plan(format!("round {i} has a bad job {j:?}")));
                }
                for h in [j.client, j.server] {
                    load[h] += 1;
                    if load[h] > self.concurrent {
                        return Err(FleetError::Plan(format!(
                            "round {i} puts agent {h} in more than {} tests",
                            self.concurrent
                        )));
                    }
                }
            }
            for j in &r.jobs {
                load[j.client] = 0;
                load[j.server] = 0;
            }
        }
        Ok(())
    }
}

/// Most tests per host at once.
pub const MAX_CONCURRENT: u32 = 64;

/// Plans `pattern` over `fleet` with at most `concurrent` tests per host
/// at once.
pub fn plan(fleet: &Fleet, pattern: Pattern, concurrent: u32) -> Result<Plan> {
    plan_n(fleet.agents.len(), pattern, concurrent)
}

/// Plans `pattern` over `n` agents numbered 0..n.
pub fn plan_n(n: usize, pattern: Pattern, concurrent: u32) -> Result<Plan> {
    if !(1..=MAX_CONCURRENT).contains(&concurrent) {
        return Err(FleetError::Plan(format!(
            "--concurrent {concurrent}: use 1 to {MAX_CONCURRENT}"
        )));
    }
    if n < 2 {
        return Err(FleetError::Plan(format!(
            "{} needs at least 2 agents; the fleet has {n}",
            pattern.name()
        )));
    }
    let base = match pattern {
        Pattern::AllToAll => tournament(n),
        Pattern::Pairs => vec![
            (0..n / 2)
                .map(|i| Job {
                    client: 2 * i,
                    server: 2 * i + 1,
                })
                .collect(),
        ],
        Pattern::Ring => {
            let edges: Vec<Job> = if n == 2 {
                vec![
                    Job {
                        client: 0,
                        server: 1,
                    },
                    Job {
                        client: 1,
                        server: 0,
                    },
                ]
            } else {
                (0..n)
                    .map(|i| Job {
                        client: i,
                        server: (i + 1) % n,
                    })
                    .collect()
            };
            colour(n, &edges)
        }
        // The hub is in every job: one job per round.
        Pattern::OneToMany => (1..n)
            .map(|i| {
                vec![Job {
                    client: 0,
                    server: i,
                }]
            })
            .collect(),
        Pattern::ManyToOne => (1..n)
            .map(|i| {
                vec![Job {
                    client: i,
                    server: 0,
                }]
            })
            .collect(),
    };
    // Each host is in at most one job of a base round, so K merged rounds
    // hold it at most K times.
    let rounds = base
        .chunks(concurrent as usize)
        .map(|c| Round {
            jobs: c.iter().flatten().copied().collect(),
        })
        .collect();
    Ok(Plan {
        pattern,
        concurrent,
        agents: n,
        rounds,
    })
}

/// The circle method: agent n-1 (or a bye when n is odd) stays put, the
/// others rotate; round r pairs position i with position m-1-i.
fn tournament(n: usize) -> Vec<Vec<Job>> {
    let m = if n.is_multiple_of(2) { n } else { n + 1 };
    let mut rounds = Vec::with_capacity(m - 1);
    for r in 0..m - 1 {
        let mut jobs = Vec::with_capacity(m / 2);
        // Position 0 is the fixed seat (m-1); the others rotate.
        let at = |p: usize| if p == 0 { m - 1 } else { (r + p - 1) % (m - 1) };
        for i in 0..m / 2 {
            let (a, b) = (at(i), at(m - 1 - i));
            if a >= n || b >= n {
                continue; // the bye
            }
            // a sends when b is less than half way round from it: every
            // agent sends to (n-1)/2 others, give or take one.
            let d = (b + n - a) % n;
            let (client, server) = if 2 * d < n || (2 * d == n && a < b) {
                (a, b)
            } else {
                (b, a)
            };
            jobs.push(Job { client, server });
        }
        rounds.push(jobs);
    }
    rounds
}

/// Greedy edge colouring for sparse patterns (ring): each edge takes the
/// first round where neither end is busy.
fn colour(n: usize, edges: &[Job]) -> Vec<Vec<Job>> {
    let mut busy: Vec<Vec<bool>> = vec![Vec::new(); n];
    let mut rounds: Vec<Vec<Job>> = Vec::new();
    for e in edges {
        let free =
            |h: usize, r: usize, busy: &Vec<Vec<bool>>| !busy[h].get(r).copied().unwrap_or(false);
        let r = (0..)
            .find(|&r| free(e.client, r, &busy) && free(e.server, r, &busy))
            .expect("some round is free");
        if rounds.len() <= r {
            rounds.resize(r + 1, Vec::new());
        }
        rounds[r].push(*e);
        for h in [e.client, e.server] {
            if busy[h].len() <= r {
                busy[h].resize(r + 1, false);
            }
            busy[h][r] = true;
        }
    }
    rounds
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_name_parses_to_its_pattern() {
        for (i, p) in Pattern::ALL.into_iter().enumerate() {
            assert_eq!(p as usize, i);
            assert_eq!(Pattern::NAMES[i].parse::<Pattern>().unwrap(), p);
            assert_eq!(p.name(), Pattern::NAMES[i]);
        }
        assert_eq!("incast".parse::<Pattern>().unwrap(), Pattern::ManyToOne);
    }
    use std::collections::BTreeSet;

    fn pairs(p: &Plan) -> BTreeSet<(usize, usize)> {
        p.jobs()
            .map(|(_, j)| (j.client.min(j.server), j.client.max(j.server)))
            .collect()
    }

    #[test]
    fn all_to_all_covers_every_pair_exactly_once_with_no_host_twice_in_a_round() {
        for n in 2..=13 {
            let p = plan_n(n, Pattern::AllToAll, 1).unwrap();
            p.check().unwrap();
            assert_eq!(p.len(), n * (n - 1) / 2, "n={n}");
            assert_eq!(pairs(&p).len(), n * (n - 1) / 2, "n={n}: a pair twice");
            let want_rounds = if n % 2 == 0 { n - 1 } else { n };
            assert_eq!(p.rounds.len(), want_rounds, "n={n}");
            for r in &p.rounds {
                let mut seen = BTreeSet::new();
                for j in &r.jobs {
                    assert!(
                        seen.insert(j.client) && seen.insert(j.server),
                        "n={n}: a host twice"
                    );
                }
            }
        }
    }

    #[test]
    fn all_to_all_lets_each_agent_send_about_half_the_time() {
        let p = plan_n(10, Pattern::AllToAll, 1).unwrap();
        let mut sends = vec![0; 10];
        for (_, j) in p.jobs() {
            sends[j.client] += 1;
        }
        assert!(sends.iter().all(|&s| (4..=5).contains(&s)), "{sends:?}");
    }

    #[test]
    fn concurrency_k_is_respected_and_reached() {
        for k in 1..=4 {
            let p = plan_n(9, Pattern::AllToAll, k).unwrap();
            p.check().unwrap();
            assert_eq!(pairs(&p).len(), 36);
            assert_eq!(p.rounds.len(), 9usize.div_ceil(k as usize));
            let mut max = 0;
            for r in &p.rounds {
                let mut load = [0u32; 9];
                for j in &r.jobs {
                    load[j.client] += 1;
                    load[j.server] += 1;
                }
                max = max.max(*load.iter().max().unwrap());
            }
            assert_eq!(max, k, "k={k}: the bound is reached, not exceeded");
        }
    }

    #[test]
    fn ring_pairs_and_stars() {
        for n in 2..=9 {
            let ring = plan_n(n, Pattern::Ring, 1).unwrap();
            ring.check().unwrap();
            assert_eq!(ring.len(), n);
            assert!(ring.rounds.len() <= 3);
            let p = plan_n(n, Pattern::Pairs, 1).unwrap();
            p.check().unwrap();
            assert_eq!((p.rounds.len(), p.len()), (1, n / 2));
            let star = plan_n(n, Pattern::OneToMany, 1).unwrap();
            star.check().unwrap();
            assert_eq!(star.rounds.len(), n - 1);
            assert!(star.jobs().all(|(_, j)| j.client == 0));
            let incast = plan_n(n, Pattern::ManyToOne, (n - 1) as u32).unwrap();
            incast.check().unwrap();
            assert_eq!(incast.rounds.len(), 1, "all at once with K = n-1");
            assert!(incast.jobs().all(|(_, j)| j.server == 0));
        }
    }

    #[test]
    fn bad_requests_are_refused() {
        assert!(
            plan_n(1, Pattern::AllToAll, 1)
                .unwrap_err()
                .to_string()
                .contains("at least 2")
        );
        assert!(
            plan_n(4, Pattern::AllToAll, 0)
                .unwrap_err()
                .to_string()
                .contains("1 to")
        );
        assert!(
            "star"
                .parse::<Pattern>()
                .unwrap_err()
                .to_string()
                .contains("all-to-all")
        );
    }

    #[test]
    fn a_hundred_agents_all_to_all_plan_well_under_a_second() {
        let t = std::time::Instant::now();
        let p = plan_n(100, Pattern::AllToAll, 1).unwrap();
        let took = t.elapsed();
        p.check().unwrap();
        assert_eq!((p.rounds.len(), p.len()), (99, 4950));
        assert_eq!(pairs(&p).len(), 4950);
        assert!(took < std::time::Duration::from_millis(100), "{took:?}");
    }
}
