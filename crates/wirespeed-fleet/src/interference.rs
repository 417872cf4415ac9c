//! Interference across hosts (report 3's many clients on one server): a
//! victim agent's request/response test to a server agent, measured alone
//! and beside K loaders on other agents loading the same server, for each
//! K and block size. `bench --interference` does this from one host (the
//! loaders its own threads); here each loader agent runs one test of its
//! share of the K flows, spread over the loader agents in turn.
//!
//! The loaders' tests are started (each accepted by its agent) before the
//! victim's, and run for the victim's warm-up and duration and a second
//! more ([`wirespeed_engine::interference::loaders_beside`]), so the
//! victim's measured window is loaded from end to end. The first test that
//! fails ends the run with its error.

use crate::agent::{RunRecord, RunRequest, RunState};
use crate::error::{FleetError, Result};
use crate::fleet::{AgentSpec, Fleet};
use crate::run::{AgentClient, RunOptions, client_of};
use std::time::{Duration, Instant};
use wirespeed_engine::interference as engine;
/// What an interference run measures (the victim, the loaders' workload, K, sizes).
pub use wirespeed_engine::interference::Plan;
use wirespeed_types::PathSpec;
use wirespeed_types::interference::{Curve, InterferenceReport, Point};

/// The most loader agents one point uses: the server runs the victim and
/// one test per loader agent at once, and an agent's server takes four
/// tests at once by default (`--max-tests`).
pub const MAX_LOADER_AGENTS: usize = 3;

/// Who plays which part, as indices into the fleet.
#[derive(Debug, Clone)]
pub struct Roles {
    /// The agent whose server everyone loads.
    pub server: usize,
    /// The agent running the victim.
    pub victim: usize,
    /// The agents running the loaders, in the order K is spread over them
    /// (the first [`MAX_LOADER_AGENTS`] of them).
    pub loaders: Vec<usize>,
}

/// Why [`Roles::pick`] found no roles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoRoles {
    /// The server asked for is not among the names.
    UnknownServer,
    /// Fewer than two names: no server and victim.
    TooFew,
}

impl Roles {
    /// The roles among `names` (fleet or node order): the one named
    /// `server` (else the first) serves, the first other one is the
    /// victim, the rest load, in order.
    pub fn pick(names: &[&str], server: Option<&str>) -> std::result::Result<Roles, NoRoles> {
        let s = match server {
            Some(name) => names
                .iter()
                .position(|n| *n == name)
                .ok_or(NoRoles::UnknownServer)?,
            None => 0,
        };
        let mut rest: Vec<usize> = (0..names.len()).filter(|&i| i != s).collect();
        if rest.is_empty() {
            return Err(NoRoles::TooFew);
        }
        let victim = rest.remove(0);
        Ok(Roles {
            server: s,
            victim,
            loaders: rest,
        })
    }
}

/// How K loaders are spread over `n` loader agents: K / n each, the first
/// K mod n one more.
pub fn spread(k: u32, n: usize) -> Vec<u32> {
    let n32 = n.max(1) as u32;
    (0..n32).map(|i| k / n32 + u32::from(i < k % n32)).collect()
}

/// The path from `c`'s first NIC to `s`'s (the agents' own addresses
/// when either has none).
fn path(c: &AgentSpec, s: &AgentSpec) -> Vec<PathSpec> {
    match (c.nics.first(), s.nics.first()) {
        (Some(a), Some(b)) => vec![PathSpec {
            local: Some(a.address.to_string()),
            remote: b.address.to_string(),
        }],
        _ => Vec::new(),
    }
}

/// [`run`], blocking (builds its own runtime).
pub fn run_blocking(
    fleet: &Fleet,
    roles: &Roles,
    plan: &Plan,
    opts: &RunOptions,
    on_point: &(dyn Fn(u32, &Point) + Sync),
) -> Result<InterferenceReport> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| FleetError::io("start the controller's runtime", e))?;
    rt.block_on(run(fleet, roles, plan, opts, on_point))
}

/// Runs `plan` with `roles` over `fleet`; `on_point` sees each point as it
/// lands (block size, point).
pub async fn run(
    fleet: &Fleet,
    roles: &Roles,
    plan: &Plan,
    opts: &RunOptions,
    on_point: &(dyn Fn(u32, &Point) + Sync),
) -> Result<InterferenceReport> {
    fleet.validate()?;
    let max = plan.ks.iter().copied().max().unwrap_or(0);
    if max > 0 && roles.loaders.is_empty() {
        return Err(FleetError::Plan(format!(
            "K={max} loaders need an agent besides the server and the victim to run them"
        )));
    }
    for &i in std::iter::once(&roles.victim).chain(&roles.loaders) {
        client_of(&fleet.agents[i], opts)?.push_fleet(fleet).await?;
    }
    let mut curves = Vec::new();
    for &size in &plan.sizes {
        let mut curve = Curve {
            size,
            ..Curve::default()
        };
        for &k in &plan.ks {
            let p = point(fleet, roles, plan, opts, size, k).await?;
            on_point(size, &p);
            curve.points.push(p);
        }
        curve.find_knee();
        curves.push(curve);
    }
    Ok(engine::report(plan, curves))
}

/// One point: each loader agent's test started, then the victim's; the
/// victim's result and the loaders' goodput per flow.
async fn point(
    fleet: &Fleet,
    roles: &Roles,
    plan: &Plan,
    opts: &RunOptions,
    size: u32,
    k: u32,
) -> Result<Point> {
    let server = &fleet.agents[roles.server];
    let mut victim = engine::victim_at(plan, size);
    victim.paths = path(&fleet.agents[roles.victim], server);
    let agents = &roles.loaders[..roles.loaders.len().min(MAX_LOADER_AGENTS)];
    let mut started = Vec::new();
    let mut failed = None;
    for (&i, n) in agents.iter().zip(spread(k, agents.len())) {
        if n == 0 {
            continue;
        }
        let mut spec = engine::loaders_beside(&victim, plan.loader, n);
        spec.paths = path(&fleet.agents[i], server);
        let label = format!("loader-{}", plan.loader.name());
        match start(fleet, i, &server.name, opts, spec, label).await {
            Ok(s) => started.push(s),
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    let victim_result = match failed {
        Some(e) => Err(e),
        None => {
            let label = format!("victim-{}", plan.victim.workload.name());
            match start(fleet, roles.victim, &server.name, opts, victim, label).await {
                Ok(v) => finish(&v).await,
                Err(e) => Err(e),
            }
        }
    };
    // Every started loader is waited for, also after a failure: a test
    // left running would answer the next point's start with busy.
    let mut loaders = Vec::new();
    for l in &started {
        loaders.push(finish(l).await.map_err(|e| FleetError::Loaders {
            k,
            size,
            error: Box::new(e),
        }));
    }
    let victim = victim_result?;
    let loaders = loaders.into_iter().collect::<Result<Vec<_>>>()?;
    let mut p = engine::point_of(k, victim, None);
    p.loader_bps = loaders
        .iter()
        .flat_map(|r| r.flows.iter().map(|f| f.throughput_bps))
        .collect();
    Ok(p)
}

/// A started test: its agent's client, its id, and when it must be done.
struct Started {
    client: AgentClient,
    name: String,
    id: u64,
    deadline: Instant,
}

/// Starts `spec` on agent `i` towards the server `peer` (a fleet name).
async fn start(
    fleet: &Fleet,
    i: usize,
    peer: &str,
    opts: &RunOptions,
    spec: wirespeed_types::TestSpec,
    label: String,
) -> Result<Started> {
    let a = &fleet.agents[i];
    let client = client_of(a, opts)?;
    let long = Duration::from_secs_f64(spec.duration_s + spec.warmup_s) + opts.test_grace;
    let req = RunRequest {
        peer: peer.to_string(),
        spec,
        label: Some(label),
    };
    let id = client.start(&req).await?;
    Ok(Started {
        client,
        name: a.name.clone(),
        id,
        deadline: Instant::now() + long,
    })
}

/// Waits for a started test's record: its result, or why there is none.
async fn finish(t: &Started) -> Result<wirespeed_types::TestResult> {
    let rec: RunRecord = loop {
        // A poll interval: the test's end is what is awaited.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let r = t.client.record(t.id).await?;
        if r.state != RunState::Running {
            break r;
        }
        if Instant::now() > t.deadline {
            return Err(FleetError::Plan(format!(
                "agent {}: test {} did not end in time",
                t.name, t.id
            )));
        }
    };
    match (rec.state, rec.result) {
        (RunState::Done, Some(r)) => Ok(r),
        _ => Err(FleetError::Plan(format!(
            "agent {}: {}",
            t.name,
            rec.error.unwrap_or_else(|| "the test failed".into())
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_is_named_or_first_and_the_victim_the_next_other() {
        let names = ["a", "b", "c", "d"];
        let r = Roles::pick(&names, None).unwrap();
        assert_eq!((r.server, r.victim, r.loaders), (0, 1, vec![2, 3]));
        let r = Roles::pick(&names, Some("c")).unwrap();
        assert_eq!((r.server, r.victim, r.loaders), (2, 0, vec![1, 3]));
        assert_eq!(
            Roles::pick(&names, Some("x")).err(),
            Some(NoRoles::UnknownServer)
        );
        assert_eq!(Roles::pick(&["a"], None).err(), Some(NoRoles::TooFew));
    }

    #[test]
    fn k_is_spread_over_the_loader_agents_in_turn() {
        assert_eq!(spread(0, 2), [0, 0]);
        assert_eq!(spread(1, 2), [1, 0]);
        assert_eq!(spread(5, 2), [3, 2]);
        assert_eq!(spread(8, 3), [3, 3, 2]);
        assert_eq!(spread(2, 1), [2]);
    }
}
