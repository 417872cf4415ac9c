//! The flags of `wirespeed agent` and `wirespeed fleet` (run, plan,
//! history, token), and bench's flags as fleet workloads.

use anyhow::{Result, bail};
use std::net::SocketAddr;
use std::path::PathBuf;
use wirespeed_experiment::{BenchArgs, spec_from};
use wirespeed_fleet::run::WorkloadSpec;

/// Options of `wirespeed agent`.
#[derive(clap::Args, Debug)]
pub struct AgentArgs {
    /// The agent's name in the fleet [default: the host name].
    #[arg(long)]
    pub name: Option<String>,
    /// Address and port of the HTTP API.
    #[arg(long, default_value = "[::]:5380")]
    pub http: SocketAddr,
    /// Pin the fleet: test only the agents of this file (else the
    /// controller sends the fleet with its key).
    #[arg(long)]
    pub fleet: Option<PathBuf>,
    /// Tests this agent runs as a client at once.
    #[arg(long, default_value_t = 4)]
    pub max_client_tests: usize,
    /// Serve /metrics without the key (it tells the host's kernel, NICs
    /// and link speeds): for a Prometheus that cannot hold the bearer
    /// token of `wirespeed fleet token`.
    #[arg(long)]
    pub metrics_open: bool,
    /// The server's flags (--key-file is required).
    #[command(flatten)]
    pub serve: crate::ServeArgs,
}

/// `wirespeed fleet ...`.
#[derive(clap::Subcommand, Debug)]
pub enum FleetCmd {
    /// Run a test matrix over the agents of a fleet file.
    Run(Box<RunArgs>),
    /// Plan the rounds only: how many, and how long planning takes.
    Plan(PlanArgs),
    /// Print the bearer token that reads the agents' API (metrics, facts,
    /// results) without the key: for a Prometheus scrape config.
    Token(TokenArgs),
    /// Show stored tests from a history file (`fleet run --history`,
    /// `fleet watch`), or the watcher's incidents (--incidents).
    History(HistoryArgs),
    /// Measure the fleet on a schedule under a budget: light probes
    /// between pairs, bandwidth tests in a rotation, every result stored
    /// and judged against its link's own baseline; incidents opened and
    /// closed, naming the link, pair, NIC, host or zone at fault and the
    /// facts that changed; a live page and Prometheus series on --listen.
    ///
    /// Each link (two host/NIC ends) keeps, per workload, a baseline of
    /// its healthy tests, frozen while it is not healthy, and a state:
    /// healthy, suspect (one test past its threshold), degraded (two of
    /// three), healthy again after two clear tests. A latency floor is
    /// past its threshold at --drift-ratio times its baseline median and
    /// --min-change above it, and counts only with rr's floor past too or
    /// far past alone; a loss (two retransmitted segments in a pair's
    /// probes) and a goodput under half its median count alone. Tests on
    /// a host whose CPUs are busy are not judged. The links that are not
    /// healthy are explained by the smallest thing they share (a pair, a
    /// NIC pair, one NIC of a host, a host, a zone's links, the links
    /// between zones) and an incident opens for it, held until its links
    /// recover: stdout, `fleet history --incidents`, /v1/watch and
    /// wirespeed_watch_incident_open{scope,subject}. docs/fleet.md,
    /// "Watching".
    Watch(Box<crate::watch::WatchArgs>),
}

/// Options of `wirespeed fleet history`.
#[derive(clap::Args, Debug)]
pub struct HistoryArgs {
    /// The history file (SQLite).
    #[arg(long)]
    pub db: PathBuf,
    /// Only tests between these two agents, either way: A,B.
    #[arg(long)]
    pub pair: Option<String>,
    /// Only tests of the last DURATION, e.g. 7d, 12h, 30m.
    #[arg(value_parser = crate::checked(wirespeed_types::units::parse_duration), long, default_value = "7d")]
    pub since: String,
    /// Only this workload label.
    #[arg(long)]
    pub workload: Option<String>,
    /// At most N rows, the newest (0: all).
    #[arg(long, default_value_t = 1000)]
    pub limit: usize,
    /// Show the watcher's incidents of the last --since instead (open
    /// first, then closed, newest first; --pair keeps those naming one of
    /// its hosts).
    #[arg(long, conflicts_with_all = ["workload", "prune"])]
    pub incidents: bool,
    /// Remove the runs older than --since instead of showing anything.
    #[arg(long)]
    pub prune: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Options of `wirespeed fleet token`.
#[derive(clap::Args, Debug)]
pub struct TokenArgs {
    /// The fleet key file (the agents' --key-file).
    #[arg(long)]
    pub key_file: PathBuf,
}

/// Options of `wirespeed fleet run`.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// The fleet file (TOML; docs/fleet.md).
    #[arg(long)]
    pub agents: PathBuf,
    /// pairs, ring, all-to-all, one-to-many or many-to-one.
    #[arg(long, default_value = "all-to-all",
          value_parser = crate::choice::<wirespeed_fleet::Pattern>(&wirespeed_fleet::Pattern::NAMES, &["incast"]))]
    pub pattern: wirespeed_fleet::Pattern,
    /// Tests each host takes part in at once (1: never two at once).
    #[arg(long, default_value_t = 1)]
    pub concurrent: u32,
    /// Runs of each test; two or more measure the noise band.
    #[arg(long, default_value_t = 2)]
    pub repeats: u32,
    /// Times a contended test (an end's CPUs taken by other work: a
    /// worker waited for a CPU, or a host had none idle) is measured
    /// again before it is reported as contended (exit 3).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(0..=10))]
    pub retries: u32,
    /// Fail (exit 2) when a link's median is below this rate, e.g. 5gbit.
    #[arg(value_parser = crate::checked(wirespeed_types::units::parse_rate), long)]
    pub min: Option<String>,
    /// Fail (exit 2) when a link falls below the same link of this
    /// earlier `fleet run --out` by more than --tolerance.
    #[arg(long)]
    pub baseline: Option<PathBuf>,
    /// Allowed drop against --baseline, percent.
    #[arg(long, default_value_t = 10.0)]
    pub tolerance: f64,
    /// Also write the JSON results here; rewritten as each test lands
    /// (`"partial": true` until the run ends), so a stopped or killed run
    /// leaves every finished test in it.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Take the tests an interrupted run wrote to FILE (its --out) and
    /// measure only the rest (failed and skipped tests are measured
    /// again); the whole run goes to --out (default: FILE itself).
    #[arg(long, value_name = "FILE")]
    pub resume: Option<PathBuf>,
    /// Also write the HTML report (matrix heatmap, outliers) here.
    #[arg(long)]
    pub html: Option<PathBuf>,
    /// Also store every test and each agent's facts in this history file
    /// (SQLite; created, or migrated, as needed).
    #[arg(long)]
    pub history: Option<PathBuf>,
    /// Interference instead of the matrix: the -w rr/crr/udp-rr test (the
    /// victim) from the fleet's second agent to the first's server, alone
    /// and beside K loaders on the other agents (K spread over them), for
    /// each K listed, at each --size (default 4k,64k,1m); --out then holds
    /// the curves, which `wirespeed report` draws.
    #[arg(long, value_name = "K,..", value_delimiter = ',', conflicts_with_all = ["resume", "baseline", "min", "history"])]
    pub interference: Option<Vec<u32>>,
    /// What each --interference loader runs.
    #[arg(long, value_enum, default_value_t = crate::bench::LoaderKind::Stream, requires = "interference")]
    pub loader: crate::bench::LoaderKind,
    /// The agent whose server --interference loads [default: the fleet's
    /// first; the victim is the next one].
    #[arg(long, value_name = "NAME", requires = "interference")]
    pub interference_server: Option<String>,
    /// Bench's flags: workload, duration, flows, sizes, --key-file (required), --json.
    #[command(flatten)]
    pub bench: BenchArgs,
}

/// An `--interference` plan (fleet run and k8s run): the one
/// request/response workload of `workloads` as the victim, K ascending,
/// the workloads' sizes when `sized` (an -s list), else report 3's
/// 4k,64k,1m.
pub fn interference_plan(
    ks: &[u32],
    loader: crate::bench::LoaderKind,
    sized: bool,
    workloads: &[WorkloadSpec],
) -> Result<wirespeed_engine::interference::Plan> {
    let Some(first) = workloads.first() else {
        bail!("--interference: no workload");
    };
    let victim = first.spec.clone();
    if victim.workload.is_bulk() || workloads.iter().any(|w| w.spec.workload != victim.workload) {
        bail!(
            "--interference measures one request/response victim: use -w rr (or crr, udp-rr) alone"
        );
    }
    if ks.is_empty() || ks.windows(2).any(|w| w[0] >= w[1]) {
        bail!("--interference {ks:?}: list K in ascending order, e.g. 0,1,2,4");
    }
    let max = wirespeed_engine::interference::MAX_LOADERS;
    if let Some(k) = ks.iter().find(|k| **k > max) {
        bail!("--interference: K={k} is more than {max} loaders");
    }
    let sizes = if sized {
        workloads.iter().map(|w| w.spec.request_size).collect()
    } else {
        crate::bench::INTERFERENCE_SIZES.to_vec()
    };
    let loader = match loader {
        crate::bench::LoaderKind::Stream => wirespeed_types::Workload::Stream,
        crate::bench::LoaderKind::Same => victim.workload,
    };
    Ok(wirespeed_engine::interference::Plan {
        victim,
        loader,
        ks: ks.to_vec(),
        sizes,
    })
}

/// The roles of `fleet run --interference`: the named agent (or the
/// first) as the server, the next as the victim, the rest as loaders.
pub fn interference_roles(
    fleet: &wirespeed_fleet::Fleet,
    server: Option<&str>,
) -> Result<wirespeed_fleet::interference::Roles> {
    use wirespeed_fleet::interference::{NoRoles, Roles};
    let names: Vec<&str> = fleet.agents.iter().map(|a| a.name.as_str()).collect();
    Roles::pick(&names, server).map_err(|e| match e {
        NoRoles::UnknownServer => anyhow::anyhow!(
            "--interference-server {}: no such agent in the fleet",
            server.unwrap_or_default()
        ),
        NoRoles::TooFew => {
            anyhow::anyhow!("--interference needs two agents at least: a server and a victim")
        }
    })
}

/// Options of `wirespeed fleet plan`.
#[derive(clap::Args, Debug)]
pub struct PlanArgs {
    /// The fleet file.
    #[arg(
        long,
        required_unless_present = "synthetic",
        conflicts_with = "synthetic"
    )]
    pub agents: Option<PathBuf>,
    /// Plan for N made-up agents instead (planning figures only).
    #[arg(long)]
    pub synthetic: Option<usize>,
    /// The pattern.
    #[arg(long, default_value = "all-to-all",
          value_parser = crate::choice::<wirespeed_fleet::Pattern>(&wirespeed_fleet::Pattern::NAMES, &["incast"]))]
    pub pattern: wirespeed_fleet::Pattern,
    /// Tests each host takes part in at once.
    #[arg(long, default_value_t = 1)]
    pub concurrent: u32,
    /// Print each round's tests too.
    #[arg(long)]
    pub rounds: bool,
    /// Print the plan as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Bench's flags as fleet workloads (one per size of an rr size list);
/// flags that make no sense between agents are refused.
pub fn workloads(b: &BenchArgs) -> Result<Vec<WorkloadSpec>> {
    let (spec, sizes) = spec_from(b)?;
    if !spec.paths.is_empty() {
        bail!("--path/--paths do not apply: each test runs over a NIC pair of the fleet file");
    }
    if b.ipv4 || b.ipv6 || b.bind.is_some() || b.connect_timeout.is_some() || b.cport.is_some() {
        bail!(
            "-4/-6, -B, --cport and --connect-timeout do not apply: the agents reach each other at the fleet file's addresses"
        );
    }
    if b.loaders > 0 || b.loaders_from.is_some() {
        bail!(
            "--loaders and --loaders-from run in bench and experiments; a fleet or cluster run does not load its servers yet"
        );
    }
    let one = sizes.len() == 1 && b.size.is_none();
    // -u names its workload without -w.
    let name = spec.workload.name();
    Ok(sizes
        .iter()
        .map(|&(req, resp)| {
            let mut s = spec.clone();
            s.request_size = req;
            s.response_size = resp;
            let label = if one || s.workload == wirespeed_types::Workload::Stream {
                name.to_string()
            } else if req == resp {
                format!(
                    "{name}-{}",
                    wirespeed_report::human_size(req as u64).replace(' ', "")
                )
            } else {
                format!(
                    "{name}-{}/{}",
                    wirespeed_report::human_size(req as u64).replace(' ', ""),
                    wirespeed_report::human_size(resp as u64).replace(' ', "")
                )
            };
            WorkloadSpec { label, spec: s }
        })
        .collect())
}
