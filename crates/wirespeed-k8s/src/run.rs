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
use wirespeed_types::fleet::LinkTest;

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
        fopts.transport = Some(proxy::factory(
            client.clone(),
            &o.namespace,
            fopts.http_timeout,
        ));
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
    /// Client CPU, % of one core per Gbit/s (bulk workloads).
    pub client_cpu_per_gbit: Option<f64>,
    /// Server CPU, % of one core per Gbit/s (bulk workloads).
    pub server_cpu_per_gbit: Option<f64>,
    /// Median transactions per second (rr, crr, udp-rr).
    pub transactions_per_s: Option<f64>,
    /// Client CPU per transaction, µs (rr, crr, udp-rr).
    pub client_cpu_us_per_trans: Option<f64>,
    /// Server CPU per transaction, µs (rr, crr, udp-rr).
    pub server_cpu_us_per_trans: Option<f64>,
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
                    let ok: Vec<&LinkTest> = r
                        .results
                        .tests
                        .iter()
                        .filter(|t| t.workload == w && t.error.is_none())
                        .collect();
                    mode_figures(r.network, &ok)
                })
                .collect(),
            workload: w,
        })
        .collect()
}

/// One mode's medians over its successful tests `ok` of one workload.
/// Request/response workloads (transactions counted) get transactions/s
/// and CPU per transaction; bulk ones throughput and CPU per Gbit/s.
fn mode_figures(network: Network, ok: &[&LinkTest]) -> ModeFigures {
    type Cpu = fn(&wirespeed_types::TestResult) -> f64;
    let local: Cpu = |x| x.local_cpu.total_pct;
    let remote: Cpu = |x| x.remote_cpu.total_pct;
    let rr = ok.iter().any(|t| t.transactions_per_s > 0.0);
    // % of one core divided by a rate: per Gbit/s, or (x 1e4) µs per
    // transaction.
    let per = |cpu: Cpu, rate: fn(&LinkTest) -> f64, scale: f64| {
        median(
            ok.iter()
                .filter(|t| rate(t) > 0.0)
                .filter_map(|t| t.result.as_ref().map(|x| cpu(x) * scale / rate(t)))
                .collect(),
        )
    };
    let gbit: fn(&LinkTest) -> f64 = |t| t.throughput_bps / 1e9;
    let tps: fn(&LinkTest) -> f64 = |t| t.transactions_per_s;
    ModeFigures {
        network: network.to_string(),
        tests: ok.len(),
        throughput_bps: median(ok.iter().map(|t| t.throughput_bps).collect()).unwrap_or(0.0),
        p50_us: median(ok.iter().filter_map(|t| t.p50_us).collect()),
        p99_us: median(ok.iter().filter_map(|t| t.p99_us).collect()),
        client_cpu_per_gbit: (!rr).then(|| per(local, gbit, 1.0)).flatten(),
        server_cpu_per_gbit: (!rr).then(|| per(remote, gbit, 1.0)).flatten(),
        transactions_per_s: rr
            .then(|| median(ok.iter().map(|t| t.transactions_per_s).collect()))
            .flatten(),
        client_cpu_us_per_trans: rr.then(|| per(local, tps, 1e4)).flatten(),
        server_cpu_us_per_trans: rr.then(|| per(remote, tps, 1e4)).flatten(),
    }
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
        let rows: [(&str, Pick, f64); 8] = [
            (
                "throughput (Gbit/s)",
                |m| m.transactions_per_s.is_none().then_some(m.throughput_bps),
                1e-9,
            ),
            ("transactions/s", |m| m.transactions_per_s, 1.0),
            ("latency p50 (us)", |m| m.p50_us, 1.0),
            ("latency p99 (us)", |m| m.p99_us, 1.0),
            ("client CPU %/Gbit/s", |m| m.client_cpu_per_gbit, 1.0),
            ("server CPU %/Gbit/s", |m| m.server_cpu_per_gbit, 1.0),
            ("client CPU us/trans", |m| m.client_cpu_us_per_trans, 1.0),
            ("server CPU us/trans", |m| m.server_cpu_us_per_trans, 1.0),
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

    #[test]
    fn request_response_rows_are_transactions_and_cpu_per_transaction() {
        let rr = |n: Network, tps: f64, cpu: f64| {
            let mut result = wirespeed_types::TestResult::default();
            result.local_cpu.total_pct = cpu;
            result.remote_cpu.total_pct = cpu;
            NetworkRun {
                network: n,
                agents: vec![],
                results: FleetResults {
                    tests: vec![LinkTest {
                        workload: "rr".into(),
                        transactions_per_s: tps,
                        throughput_bps: 1e5,
                        p50_us: Some(50.0),
                        p99_us: Some(90.0),
                        result: Some(result),
                        ..LinkTest::default()
                    }],
                    ..FleetResults::default()
                },
            }
        };
        // 20,000 transactions/s at 40% of a core: 20 µs of CPU each.
        let cs = compare(&[
            rr(Network::Host, 20_000.0, 40.0),
            rr(Network::Pod, 10_000.0, 40.0),
        ]);
        assert_eq!(cs[0].modes[0].client_cpu_us_per_trans, Some(20.0));
        assert_eq!(cs[0].modes[1].server_cpu_us_per_trans, Some(40.0));
        assert_eq!(cs[0].modes[0].client_cpu_per_gbit, None);
        let t = render_comparison(&cs);
        assert!(t.contains("transactions/s"), "{t}");
        assert!(t.contains("client CPU us/trans"), "{t}");
        assert!(!t.contains("throughput"), "no bulk rows for rr: {t}");
        assert!(t.contains("+100.0%"), "{t}");
    }
}
