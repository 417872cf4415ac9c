//! `wirespeed k8s run`: apply the agents of each network mode, wait for
//! them, find their addresses, run the fleet matrix over each mode in turn
//! (wirespeed-fleet's runner), and delete what the run made: on success,
//! on error, and on Ctrl-C or SIGTERM. Several modes are compared side by
//! side ([`Comparison`]).

use crate::K8sError;
use crate::cluster;
use crate::deploy::Deployment;
use crate::discover::{Agent, discover_with};
use crate::manifests::{self, Network, Options};
use crate::proxy::{self, Reach};
use crate::rollout::Watch;
use serde::Serialize;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;
use wirespeed_fleet::{AgentSpec, Fleet, FleetResults, NicSpec, Pattern, RunOptions};

/// How a run goes.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// The kubeconfig (else $KUBECONFIG, ~/.kube/config or in-cluster).
    pub kubeconfig: Option<PathBuf>,
    /// The objects (networks, namespace, image, key, profile, ...).
    pub objects: Options,
    /// Who tests whom.
    pub pattern: Pattern,
    /// Tests per host at once.
    pub concurrent: u32,
    /// The fleet runner's options (workloads, repeats, key, progress).
    pub fleet: RunOptions,
    /// Longest wait for each mode's agents to be Ready.
    pub ready_timeout: Duration,
    /// Longest wait for each deleted object to be gone.
    pub delete_timeout: Duration,
    /// Leave the objects in place (for debugging a cluster).
    pub keep: bool,
    /// How the agents' HTTP APIs are reached: through the API server's pod
    /// proxy (the default) or straight to their addresses.
    pub reach: Reach,
}

/// One network mode's agents and results.
#[derive(Debug, Clone, Serialize)]
pub struct NetworkRun {
    /// The mode.
    pub network: Network,
    /// The agents found.
    pub agents: Vec<Agent>,
    /// The fleet matrix.
    pub results: FleetResults,
}

/// The fleet (wirespeed-fleet's) of discovered agents: pod names, the
/// engine and HTTP ports on each agent's control address, its NICs in
/// order, node and mode as labels.
pub fn fleet_of(agents: &[Agent], port: u16, http_port: u16) -> Fleet {
    Fleet {
        agents: agents
            .iter()
            .map(|a| AgentSpec {
                name: a.pod.clone(),
                control: SocketAddr::new(a.control, port).to_string(),
                http: SocketAddr::new(a.control, http_port).to_string(),
                nics: a
                    .nics
                    .iter()
                    .enumerate()
                    .map(|(i, n)| NicSpec {
                        name: n.name.clone().unwrap_or_else(|| format!("nic{i}")),
                        address: n.addr,
                    })
                    .collect(),
                labels: [
                    ("node".to_string(), a.node.clone()),
                    ("network".to_string(), a.network.to_string()),
                ]
                .into(),
            })
            .collect(),
    }
}

/// Resolves on Ctrl-C or SIGTERM, naming which.
async fn interrupted() -> &'static str {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => "Ctrl-C",
        _ = term => "SIGTERM",
    }
}

async fn measure(
    cfg: &RunConfig,
    client: &kube::Client,
    dep: &mut Deployment,
    log: &(dyn Fn(&str) + Sync),
) -> Result<Vec<NetworkRun>, K8sError> {
    let o = &cfg.objects;
    let objs = manifests::build(o)?;
    dep.apply(client, &objs).await?;
    log(&format!(
        "applied {} objects in namespace {} (label {}={})",
        objs.len(),
        o.namespace,
        manifests::RUN_LABEL,
        o.run_id.as_deref().unwrap_or("-")
    ));
    let mut out = Vec::new();
    for &n in &o.networks {
        let results = measure_mode(cfg, client, n, log).await?;
        out.push(results);
    }
    Ok(out)
}

/// One mode: waits for its agents, then runs the fleet matrix over them.
async fn measure_mode(
    cfg: &RunConfig,
    client: &kube::Client,
    n: Network,
    log: &(dyn Fn(&str) + Sync),
) -> Result<NetworkRun, K8sError> {
    let o = &cfg.objects;
    log(&format!(
        "{n}: waiting for DaemonSet {} (at most {} s)",
        n.daemonset_name(),
        cfg.ready_timeout.as_secs()
    ));
    let mode_log = |l: &str| log(&format!("{n}: {l}"));
    let watch = Watch::new(cfg.ready_timeout, &mode_log);
    let agents = discover_with(client, &o.namespace, n, &watch).await?;
    if agents.len() < 2 {
        return Err(K8sError::Discovery(format!(
            "{n}: {} agent(s) Ready; a matrix needs at least 2 nodes",
            agents.len()
        )));
    }
    for a in &agents {
        let nics: Vec<String> = a.nics.iter().map(|x| x.addr.to_string()).collect();
        log(&format!(
            "{n}: agent {} on {} at {} (NICs {})",
            a.pod,
            a.node,
            a.control,
            nics.join(", ")
        ));
    }
    let fleet = fleet_of(&agents, o.port, o.http_port);
    let plan = wirespeed_fleet::plan(&fleet, cfg.pattern, cfg.concurrent)
        .map_err(|e| K8sError::Fleet(e.to_string()))?;
    log(&format!(
        "{n}: {} agents, {}: {} rounds, {} tests; agents reached {}",
        agents.len(),
        cfg.pattern.name(),
        plan.rounds.len(),
        plan.len(),
        match cfg.reach {
            Reach::Api => "through the API server's pod proxy (--reach api)",
            Reach::Direct => "on their addresses (--reach direct)",
        }
    ));
    let mut fopts = cfg.fleet.clone();
    if cfg.reach == Reach::Api {
        fopts.transport = Some(proxy::factory(client.clone(), &o.namespace));
    }
    let results = wirespeed_fleet::run_async(&fleet, &plan, &fopts)
        .await
        .map_err(|e| K8sError::Fleet(format!("{n}: {e}")))?;
    Ok(NetworkRun {
        network: n,
        agents,
        results,
    })
}

/// Every requested test that was not measured (failed, or skipped because
/// an agent was down), one line each: mode, workload, client -> server,
/// NIC pair, and why.
pub fn unmeasured(runs: &[NetworkRun]) -> Vec<String> {
    let mut out = Vec::new();
    for r in runs {
        for t in &r.results.tests {
            let Some(err) = &t.error else { continue };
            let down = r
                .results
                .agents
                .iter()
                .filter(|a| !a.up && err.contains(&format!("agent {} ", a.name)))
                .filter_map(|a| a.error.as_deref())
                .map(|e| format!(" ({e})"))
                .collect::<String>();
            out.push(format!(
                "{} network, {}: {} -> {} ({} -> {}): {err}{down}",
                r.network,
                t.workload,
                t.client,
                t.server,
                or_dash(&t.client_nic),
                or_dash(&t.server_nic)
            ));
        }
    }
    out
}

fn or_dash(s: &str) -> &str {
    if s.is_empty() { "-" } else { s }
}

/// Runs `cfg` (blocking: builds its own runtime). `log` gets one line per
/// step. Whatever happens, the objects the run applied are deleted unless
/// `keep` is set; an error in the run wins over one in cleanup, which is
/// then logged.
pub fn run_blocking(
    cfg: &RunConfig,
    log: &(dyn Fn(&str) + Sync),
) -> Result<Vec<NetworkRun>, K8sError> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| K8sError::Io {
            what: "start the runtime".into(),
            error: e,
        })?;
    rt.block_on(async {
        let client = cluster::client(cfg.kubeconfig.as_deref()).await?;
        let mut dep = Deployment::new();
        let r = tokio::select! {
            r = measure(cfg, &client, &mut dep, log) => r,
            s = interrupted() => Err(K8sError::Interrupted(s)),
        };
        if cfg.keep {
            log(&kept(cfg, &dep));
            return r;
        }
        let td = tokio::select! {
            t = dep.teardown(&client, cfg.delete_timeout) => t,
            s = interrupted() => Err(K8sError::Cleanup(format!("{s} during cleanup"))),
        };
        match (&r, td) {
            (_, Ok(gone)) => log(&format!(
                "deleted the {} objects this run applied: {}",
                gone.len(),
                gone.join(", ")
            )),
            (Ok(_), Err(e)) => return Err(e),
            (Err(_), Err(e)) => log(&format!("also: {e}")),
        }
        r
    })
}

/// What `--keep` left and the commands that delete it.
fn kept(cfg: &RunConfig, dep: &Deployment) -> String {
    let names: Vec<String> = dep.objects().iter().map(|o| o.describe()).collect();
    format!(
        "--keep: left {} objects in place ({}); delete them with `kubectl delete namespace {}` and `kubectl delete deviceclass -l {}={}`",
        names.len(),
        names.join(", "),
        cfg.objects.namespace,
        manifests::RUN_LABEL,
        cfg.objects.run_id.as_deref().unwrap_or("-")
    )
}

/// One mode's figures, medians over its successful tests of a workload.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct ModeFigures {
    /// The mode.
    pub network: String,
    /// Tests that succeeded.
    pub tests: usize,
    /// Median throughput, bit/s.
    pub throughput_bps: f64,
    /// Median of the tests' p50 latency, µs (rr/crr).
    pub p50_us: Option<f64>,
    /// Median of the tests' p99 latency, µs (rr/crr).
    pub p99_us: Option<f64>,
    /// Client CPU, % of one core per Gbit/s.
    pub client_cpu_per_gbit: Option<f64>,
    /// Server CPU, % of one core per Gbit/s.
    pub server_cpu_per_gbit: Option<f64>,
}

/// Modes side by side for one workload; gaps are against the first mode.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Comparison {
    /// The workload label.
    pub workload: String,
    /// One entry per mode, in run order.
    pub modes: Vec<ModeFigures>,
}

fn median(v: Vec<f64>) -> Option<f64> {
    wirespeed_model::optimize::median(&v)
}

/// The comparison of every workload across `runs`.
pub fn compare(runs: &[NetworkRun]) -> Vec<Comparison> {
    let mut workloads: Vec<String> = Vec::new();
    for r in runs {
        for t in &r.results.tests {
            if !workloads.contains(&t.workload) {
                workloads.push(t.workload.clone());
            }
        }
    }
    workloads
        .into_iter()
        .map(|w| Comparison {
            modes: runs
                .iter()
                .map(|r| {
                    let ok: Vec<_> = r
                        .results
                        .tests
                        .iter()
                        .filter(|t| t.workload == w && t.error.is_none())
                        .collect();
                    let per_gbit = |cpu: &dyn Fn(&wirespeed_types::TestResult) -> f64| {
                        median(
                            ok.iter()
                                .filter(|t| t.throughput_bps > 0.0)
                                .filter_map(|t| {
                                    t.result.as_ref().map(|x| cpu(x) / (t.throughput_bps / 1e9))
                                })
                                .collect(),
                        )
                    };
                    ModeFigures {
                        network: r.network.to_string(),
                        tests: ok.len(),
                        throughput_bps: median(ok.iter().map(|t| t.throughput_bps).collect())
                            .unwrap_or(0.0),
                        p50_us: median(ok.iter().filter_map(|t| t.p50_us).collect()),
                        p99_us: median(ok.iter().filter_map(|t| t.p99_us).collect()),
                        client_cpu_per_gbit: per_gbit(&|x| x.local_cpu.total_pct),
                        server_cpu_per_gbit: per_gbit(&|x| x.remote_cpu.total_pct),
                    }
                })
                .collect(),
            workload: w,
        })
        .collect()
}

fn gap(v: f64, base: f64) -> String {
    if base.abs() < f64::EPSILON {
        return "-".into();
    }
    format!("{:+.1}%", (v / base - 1.0) * 100.0)
}

/// The comparison as a text table: each figure per mode, then the gap of
/// each later mode against the first (host, when it ran, is the baseline).
pub fn render_comparison(cs: &[Comparison]) -> String {
    let mut s = String::new();
    for c in cs {
        let Some(base) = c.modes.first() else {
            continue;
        };
        s += &format!("workload {}\n", c.workload);
        s += &format!("  {:<26}", "");
        for m in &c.modes {
            s += &format!("{:>14}", m.network);
        }
        for m in c.modes.iter().skip(1) {
            s += &format!("{:>16}", format!("{} vs {}", m.network, base.network));
        }
        s += "\n";
        type Pick = fn(&ModeFigures) -> Option<f64>;
        let rows: [(&str, Pick, f64); 5] = [
            ("throughput (Gbit/s)", |m| Some(m.throughput_bps), 1e-9),
            ("latency p50 (us)", |m| m.p50_us, 1.0),
            ("latency p99 (us)", |m| m.p99_us, 1.0),
            ("client CPU %/Gbit/s", |m| m.client_cpu_per_gbit, 1.0),
            ("server CPU %/Gbit/s", |m| m.server_cpu_per_gbit, 1.0),
        ];
        for (name, pick, scale) in rows {
            if c.modes.iter().all(|m| pick(m).is_none()) {
                continue;
            }
            s += &format!("  {name:<26}");
            for m in &c.modes {
                s += &format!(
                    "{:>14}",
                    pick(m).map_or("-".into(), |v| format!("{:.3}", v * scale))
                );
            }
            for m in c.modes.iter().skip(1) {
                let g = match (pick(m), pick(base)) {
                    (Some(v), Some(b)) => gap(v, b),
                    _ => "-".into(),
                };
                s += &format!("{g:>16}");
            }
            s += "\n";
        }
        s += &format!("  {:<26}", "tests");
        for m in &c.modes {
            s += &format!("{:>14}", m.tests);
        }
        s += "\n";
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_types::fleet::LinkTest;

    fn run(n: Network, bps: &[f64]) -> NetworkRun {
        NetworkRun {
            network: n,
            agents: vec![],
            results: FleetResults {
                tests: bps
                    .iter()
                    .map(|b| LinkTest {
                        workload: "stream".into(),
                        throughput_bps: *b,
                        ..LinkTest::default()
                    })
                    .collect(),
                ..FleetResults::default()
            },
        }
    }

    #[test]
    fn comparison_takes_medians_and_gaps_against_the_first_mode() {
        let cs = compare(&[
            run(Network::Host, &[10e9, 9e9, 11e9]),
            run(Network::Pod, &[7e9, 8e9, 6e9]),
        ]);
        assert_eq!(cs.len(), 1);
        assert_eq!(cs[0].modes[0].throughput_bps, 10e9);
        assert_eq!(cs[0].modes[1].throughput_bps, 7e9);
        let t = render_comparison(&cs);
        assert!(t.contains("-30.0%"), "{t}");
        assert!(!t.contains("p50"), "no latency rows without rr: {t}");
    }
}
