//! The flags of `wirespeed k8s` (manifests, run, image) and what `k8s run`
//! makes of them: workloads, paths, gates.

use crate::k8s_objects::ObjectArgs;
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use wirespeed_k8s::manifests::{self, Network};
use wirespeed_k8s::{PathKind, gates};
use wirespeed_types::error::Invalid;
use wirespeed_types::paths::PathsReport;
use wirespeed_types::units::parse_size;

/// `wirespeed k8s`: kubectl's global `--context`, then a subcommand.
#[derive(clap::Args, Debug)]
pub struct K8sArgs {
    /// The kubeconfig context to talk to, as kubectl's --context
    /// [default: the kubeconfig's current context].
    #[arg(long, global = true, value_name = "NAME")]
    pub context: Option<String>,
    /// The subcommand.
    #[command(subcommand)]
    pub cmd: K8sCmd,
}

/// The binary installed as `kubectl-wirespeed`: kubectl runs it for
/// `kubectl wirespeed ...`, whose commands are `wirespeed k8s`'s
/// (`kubectl wirespeed run`, `kubectl wirespeed watch status`).
#[derive(clap::Parser, Debug)]
#[command(
    name = "kubectl-wirespeed",
    bin_name = "kubectl wirespeed",
    version,
    about = "wirespeed on Kubernetes, as a kubectl plugin: the commands of `wirespeed k8s`",
    long_about = None
)]
pub struct KubectlPlugin {
    /// `wirespeed k8s`'s flags and subcommand.
    #[command(flatten)]
    pub k8s: K8sArgs,
}

/// Whether the program name `argv0` is kubectl's plugin name for
/// wirespeed (`kubectl-wirespeed`, as krew or a user installs it).
pub fn is_kubectl_plugin(argv0: &std::ffi::OsStr) -> bool {
    Path::new(argv0)
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n == "kubectl-wirespeed")
}

/// Kubernetes subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum K8sCmd {
    /// Print the objects that run agents (YAML, or JSON with --output json).
    Manifests(Box<ManifestArgs>),
    /// Apply the agents, wait for them, run the fleet matrix per network
    /// mode, compare the modes, delete what was applied (also on Ctrl-C).
    /// Exits 3 when a requested test was not measured.
    Run(Box<RunArgs>),
    /// The agent image: built from a wirespeed binary, without Docker or a
    /// base image.
    #[command(subcommand)]
    Image(ImageCmd),
    /// `fleet watch` on the cluster: agents and a watcher Deployment that
    /// probes every pair on a schedule, keeps history and raises drift
    /// events (docs/k8s.md).
    #[command(subcommand)]
    Watch(crate::k8s_watch::WatchCmd),
    /// Delete what runs that did not end left behind (a run killed with
    /// SIGKILL, or whose machine went away): the namespaces runs made and
    /// the objects they put in a namespace they were given, found by the
    /// label `wirespeed.dev/run`. A run still alive is left alone.
    Cleanup(CleanupArgs),
}

/// Options of `k8s cleanup`.
#[derive(clap::Args, Debug)]
pub struct CleanupArgs {
    /// Only this run's objects (the RUNID of `wirespeed.dev/run=RUNID`,
    /// printed by the run when it applied them).
    #[arg(long, value_name = "RUNID")]
    pub run: Option<String>,
    /// Only in this namespace.
    #[arg(long, short = 'n')]
    pub namespace: Option<String>,
    /// Also delete runs whose Lease is still renewed (runs that may be
    /// alive: their tests fail).
    #[arg(long)]
    pub force: bool,
    /// The kubeconfig [default: $KUBECONFIG, ~/.kube/config, in-cluster].
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
}

/// `k8s image` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum ImageCmd {
    /// Build the agent image from a wirespeed binary (one layer: the
    /// binary, its loader and libraries, a non-root user), then write it as
    /// an OCI image layout tar and/or push it to a registry.
    Build(Box<ImageBuildArgs>),
}

/// Options of `k8s image build`.
#[derive(clap::Args, Debug)]
pub struct ImageBuildArgs {
    /// The wirespeed binary to put in the image [default: this executable].
    #[arg(long)]
    pub binary: Option<PathBuf>,
    /// Write the image as an OCI image layout tar here, for
    /// `ctr -n k8s.io images import FILE` on a node.
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// The image's name in that layout (index.json's ref.name) [default:
    /// the --push reference, else localhost/wirespeed:VERSION].
    #[arg(long, requires = "output")]
    pub name: Option<String>,
    /// Push to this reference (REGISTRY/NAME:TAG) and print it with the
    /// image's digest (REF@sha256:...): what to pass as --image.
    #[arg(long, value_name = "REF")]
    pub push: Option<String>,
    /// Talk plain HTTP to the registry (a local registry without TLS).
    #[arg(long, requires = "push")]
    pub plain_http: bool,
    /// Registry user, with --registry-password-file [default: anonymous].
    #[arg(long, requires_all = ["push", "registry_password_file"])]
    pub registry_user: Option<String>,
    /// File holding the registry password or token.
    #[arg(long, requires = "registry_user")]
    pub registry_password_file: Option<PathBuf>,
}

/// Options of `k8s manifests`.
#[derive(clap::Args, Debug)]
pub struct ManifestArgs {
    /// What the objects are made of.
    #[command(flatten)]
    pub objects: ObjectArgs,
    /// Namespace of the objects.
    #[arg(long, default_value = "wirespeed")]
    pub namespace: String,
    /// The agents' engine port.
    #[arg(long, default_value_t = manifests::DEFAULT_PORT)]
    pub port: u16,
    /// The fleet key file (as `wirespeed serve --key-file`); a fresh key
    /// is made when absent.
    #[arg(long)]
    pub key_file: Option<PathBuf>,
    /// yaml (multi-document) or json (a v1 List).
    #[arg(long, default_value = "yaml",
          value_parser = crate::choice::<manifests::Output>(&manifests::Output::NAMES, &[]))]
    pub output: manifests::Output,
    /// Print instead what runs `k8s run` inside the cluster: a
    /// ServiceAccount, the ClusterRole and binding a run needs, and a Job
    /// running `wirespeed k8s run` with these objects' flags and the
    /// arguments after `--` (docs/k8s.md).
    #[arg(long)]
    pub runner: bool,
    /// With --runner: more `k8s run` arguments for the Job (after `--`).
    #[arg(last = true, requires = "runner")]
    pub run_args: Vec<String>,
}

/// Options of `k8s run`.
#[derive(clap::Args, Debug)]
// bench's --paths (engine paths between addresses) has no meaning here:
// the run finds the addresses; --paths names the cluster paths instead.
#[command(mut_arg("paths", |a| a.long("engine-paths").hide(true)))]
// -n is kubectl's --namespace here, as in every k8s command: bench's
// --bytes keeps its long name only.
#[command(mut_arg("bytes", |a| a.short(None)))]
pub struct RunArgs {
    /// What the objects are made of.
    #[command(flatten)]
    pub objects: ObjectArgs,
    /// Paths to measure, comma-separated: host, same-node, cross-node,
    /// cross-zone, service (= service-same-node,service-cross-node),
    /// hairpin, dra [default: one per --network: host, cross-node, dra].
    #[arg(long = "paths", id = "cluster_paths", value_name = "LIST", value_parser = path_list)]
    pub cluster_paths: Option<PathList>,
    /// Only these nodes (comma-separated names).
    #[arg(long, value_name = "NODE,..", value_delimiter = ',')]
    pub nodes: Option<Vec<String>>,
    /// A seeded sample of N of the eligible nodes.
    #[arg(long, value_name = "N")]
    pub sample: Option<usize>,
    /// The sample's seed: the same seed over the same nodes picks the same
    /// sample.
    #[arg(long, default_value_t = 1, requires = "sample")]
    pub seed: u64,
    /// Node pairs to test across nodes, one `CLIENT SERVER` per line
    /// (instead of --pattern).
    #[arg(long, value_name = "FILE")]
    pub pairs: Option<PathBuf>,
    /// Fail (exit 1) when a bulk case is below RATE, on every path or on
    /// one (PATH=RATE); repeatable.
    #[arg(long, value_name = "[PATH=]RATE")]
    pub min: Vec<String>,
    /// Fail when a request/response case is below N transactions/s
    /// (PATH=N for one path); repeatable.
    #[arg(long, value_name = "[PATH=]N")]
    pub min_tps: Vec<String>,
    /// Fail when a case falls more than --tolerance below the same case
    /// of this earlier --out (or its p99 rises more).
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Tolerance of --baseline, %.
    #[arg(long, value_name = "PCT", default_value_t = 10.0)]
    pub tolerance: f64,
    /// Fail when a pod path is more than PCT % below the host network on
    /// the same node pair (add host to --paths).
    #[arg(long, value_name = "PCT")]
    pub max_gap: Option<f64>,
    /// Also write the cases as CSV here.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Also write the cases as JUnit XML here (one testcase per path,
    /// workload and pair).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Also write an HTML page here: the path x pair heatmap and table.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Message sizes to sweep on every path (comma-separated, e.g.
    /// 1k,16k,64k): one workload per size.
    #[arg(long, value_name = "SIZES", value_delimiter = ',', value_parser = crate::checked(parse_size))]
    pub sweep_sizes: Option<Vec<String>>,
    /// Flows per pair to sweep on every path (e.g. 1,4,8): one workload
    /// per count.
    #[arg(long, value_name = "COUNTS", value_delimiter = ',')]
    pub sweep_flows: Option<Vec<u32>>,
    /// The kubeconfig [default: $KUBECONFIG, ~/.kube/config, in-cluster].
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Namespace to run in [default: wirespeed-RUNID]: made by the run
    /// (and deleted after it) when it does not exist; an existing one is
    /// used as it is, never relabelled, and only what the run put there is
    /// deleted.
    #[arg(long, short = 'n')]
    pub namespace: Option<String>,
    /// pairs, ring, all-to-all, one-to-many or many-to-one.
    #[arg(long, default_value = "all-to-all",
          value_parser = crate::choice::<wirespeed_fleet::Pattern>(&wirespeed_fleet::Pattern::NAMES, &["incast"]))]
    pub pattern: wirespeed_fleet::Pattern,
    /// Tests each agent takes part in at once.
    #[arg(long, default_value_t = 1)]
    pub concurrent: u32,
    /// Runs of each test; two or more give each case a 95% confidence
    /// interval, which the gates judge by.
    #[arg(long, visible_alias = "repeat", default_value_t = 1)]
    pub repeats: u32,
    /// Times a contended test (an end's CPUs taken by other work: a
    /// worker waited for a CPU, or a host had none idle) is measured
    /// again before it is reported as contended (exit 3).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(0..=10))]
    pub retries: u32,
    /// Keep contended cases marked in every output but do not exit 3 for
    /// them (a run whose subject is not the figures, on a busy cluster).
    #[arg(long)]
    pub allow_contended: bool,
    /// Longest wait for each mode's agents to be Ready.
    #[arg(value_parser = crate::checked(wirespeed_types::units::parse_duration), long, default_value = "5m")]
    pub ready_timeout: String,
    /// How long a request to the API server is retried after its first
    /// failure (a restarting API server refuses connections or answers
    /// 503 for a while); past it the run stops testing, says so and
    /// leaves its objects for `k8s cleanup`.
    #[arg(value_parser = crate::checked(wirespeed_types::units::parse_duration), long, default_value = "60s", value_name = "DURATION")]
    pub api_retry: String,
    /// Leave the objects in the cluster afterwards.
    #[arg(long)]
    pub keep: bool,
    /// How to reach the agents' HTTP APIs: api (through the API server's
    /// pod proxy: works from anywhere that reaches the API server) or
    /// direct (to the pod/node addresses: from inside the cluster network).
    #[arg(long, default_value = "api",
          value_parser = crate::choice::<wirespeed_k8s::Reach>(&wirespeed_k8s::Reach::NAMES, &[]))]
    pub reach: wirespeed_k8s::Reach,
    /// Also write every mode's agents and fleet results, and the
    /// comparison, as JSON here. Rewritten as each test lands (with
    /// `"partial": true` until the run ends), so an interrupted or killed
    /// run leaves every finished test in it.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Take the tests an interrupted run wrote to FILE (its --out) and
    /// measure only the rest; the whole run goes to --out (default:
    /// FILE itself).
    #[arg(long, value_name = "FILE")]
    pub resume: Option<PathBuf>,
    /// Measure the pod paths again under each number of NetworkPolicies
    /// that select the agents without blocking them (ascending,
    /// comma-separated, e.g. 0,100): what an enforcer's policies cost each
    /// path. Each level is awaited until the enforcer has it in force.
    #[arg(
        long,
        value_name = "N,..",
        value_delimiter = ',',
        conflicts_with = "resume"
    )]
    pub policy_load: Option<Vec<u32>>,
    /// Interference instead of the pair matrix: the -w rr/crr/udp-rr test
    /// (the victim) from the second chosen node to the first's agent,
    /// alone and beside K loaders on the other nodes (K spread over them),
    /// for each K listed, at each --size (default 4k,64k,1m), over the
    /// first --paths entry's network; names the K where p99 doubles.
    #[arg(long, value_name = "K,..", value_delimiter = ',', conflicts_with_all = ["policy_load", "resume"])]
    pub interference: Option<Vec<u32>>,
    /// What each --interference loader runs: stream or the victim's own
    /// workload at its size.
    #[arg(long, value_enum, default_value_t = crate::bench::LoaderKind::Stream, requires = "interference")]
    pub loader: crate::bench::LoaderKind,
    /// The node whose agent is the --interference server [default: the
    /// first chosen node].
    #[arg(long, value_name = "NODE", requires = "interference")]
    pub interference_server: Option<String>,
    /// Several workloads in one run, comma-separated (e.g. stream,rr: the
    /// host vs pod table then has throughput, latency percentiles and CPU
    /// per Gbit/s and per transaction); replaces -w.
    #[arg(long, value_name = "LIST", value_delimiter = ',', conflicts_with = "workload",
          value_parser = wirespeed_experiment::cell::workload_parser())]
    pub workloads: Option<Vec<wirespeed_types::Workload>>,
    /// Bench's flags: workload, duration, flows, sizes, --port (the
    /// agents' engine port), --key-file (else a fresh key).
    #[command(flatten)]
    pub bench: wirespeed_experiment::BenchArgs,
}

/// `k8s run --paths`' list, checked at parse time (`service` and `pod`
/// name several paths, so it is one value, not a list of choices).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathList(pub Vec<PathKind>);

/// Parses `--paths`.
fn path_list(s: &str) -> std::result::Result<PathList, wirespeed_k8s::K8sError> {
    PathKind::parse_list(s).map(PathList)
}

/// How to get an image a cluster can pull.
pub const IMAGE_HINT: &str = "build and push one with `wirespeed k8s image build --push \
    REGISTRY/wirespeed:TAG` (--plain-http for a registry without TLS) and pass the \
    REF@sha256:... it prints as --image";

/// The run's workloads: bench's flags once per `--workloads` entry (or
/// once, for -w), each swept over `--sweep-flows` and `--sweep-sizes`.
pub fn run_workloads(a: &RunArgs) -> Result<Vec<wirespeed_fleet::WorkloadSpec>> {
    let workloads = match &a.workloads {
        Some(list) => list.clone(),
        None => vec![a.bench.workload],
    };
    let flows: Vec<Option<u32>> = match &a.sweep_flows {
        Some(l) => l.iter().copied().map(Some).collect(),
        None => vec![None],
    };
    let mut out = Vec::new();
    for &workload in &workloads {
        // A transactional workload's -s takes the size list itself.
        let rr = !workload.is_bulk();
        for f in &flows {
            let mut b = a.bench.clone();
            b.workload = workload;
            if let Some(f) = f {
                b.flows = *f;
            }
            let mut specs = Vec::new();
            match (&a.sweep_sizes, rr) {
                // rr's own -s takes a list: labels rr-1KiB, rr-64KiB, ...
                (Some(sizes), true) => {
                    b.size = Some(sizes.join(","));
                    specs.extend(crate::fleet::workloads(&b)?);
                }
                (Some(sizes), false) => {
                    for size in sizes {
                        let mut bs = b.clone();
                        bs.msg_size = Some(size.to_string());
                        for mut s in crate::fleet::workloads(&bs)? {
                            s.label = format!("{}-{size}", s.label);
                            specs.push(s);
                        }
                    }
                }
                (None, _) => specs.extend(crate::fleet::workloads(&b)?),
            }
            for mut s in specs {
                if let Some(f) = f {
                    s.label = format!("{}-P{f}", s.label);
                }
                out.push(s);
            }
        }
    }
    Ok(out)
}

/// The paths of a run: --paths, else one per --network mode.
pub fn run_paths(a: &RunArgs) -> Result<Vec<PathKind>> {
    Ok(match &a.cluster_paths {
        Some(p) => p.0.clone(),
        None => a
            .objects
            .networks()?
            .into_iter()
            .map(PathKind::of_network)
            .collect(),
    })
}

/// The `--interference` plan from the run's one workload, or None
/// without the flag ([`crate::fleet::interference_plan`]).
pub fn run_interference(
    a: &RunArgs,
    workloads: &[wirespeed_fleet::WorkloadSpec],
) -> Result<Option<wirespeed_engine::interference::Plan>> {
    a.interference
        .as_ref()
        .map(|ks| crate::fleet::interference_plan(ks, a.loader, a.bench.size.is_some(), workloads))
        .transpose()
}

/// `--policy-load`'s levels, checked against the paths and the policy
/// flag (empty without it).
pub fn run_policy_load(a: &RunArgs, paths: &[PathKind]) -> Result<Vec<u32>> {
    let Some(levels) = &a.policy_load else {
        return Ok(Vec::new());
    };
    wirespeed_k8s::policy_load::check_levels(levels)?;
    if a.objects.no_network_policy {
        bail!(
            "--policy-load sees each level take effect through the run's own NetworkPolicy: drop --no-network-policy"
        );
    }
    if !paths.iter().any(|p| p.network() == Network::Pod) {
        bail!(
            "--policy-load measures the pod network (NetworkPolicies select pods, not hostNetwork agents or DRA NICs): add --paths cross-node (or same-node, service, ...)"
        );
    }
    Ok(levels.clone())
}

/// The gates from the flags; the baseline read now, before the run.
pub fn run_gates(a: &RunArgs) -> Result<gates::Gates> {
    let rate = |s: &str| wirespeed_types::units::parse_rate(s).map(|r| r as f64);
    let count = |s: &str| {
        s.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| Invalid("use a number of transactions/s".into()))
    };
    if !(0.0..100.0).contains(&a.tolerance) {
        bail!("--tolerance {}: use 0 to 100 (%)", a.tolerance);
    }
    if a.max_gap.is_some_and(|g| !(0.0..100.0).contains(&g)) {
        bail!("--max-gap: use 0 to 100 (%)");
    }
    let baseline = match &a.baseline {
        Some(p) => Some((p.display().to_string(), read_baseline(p)?)),
        None => None,
    };
    Ok(gates::Gates {
        min_bps: a
            .min
            .iter()
            .map(|m| gates::Floor::parse(m, rate).context("--min"))
            .collect::<Result<_>>()?,
        min_tps: a
            .min_tps
            .iter()
            .map(|m| gates::Floor::parse(m, count).context("--min-tps"))
            .collect::<Result<_>>()?,
        baseline,
        tolerance_pct: a.tolerance,
        max_gap_pct: a.max_gap,
    })
}

/// The cases of an earlier `k8s run --out FILE`.
pub fn read_baseline(p: &Path) -> Result<PathsReport> {
    let text = std::fs::read_to_string(p).with_context(|| format!("--baseline {}", p.display()))?;
    let mut doc: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("--baseline {}: not JSON", p.display()))?;
    if doc["partial"] == true {
        eprintln!(
            "warning: --baseline {} is partial (its run was stopped before its end): cases it lacks are not compared",
            p.display()
        );
    }
    let cases = doc
        .get_mut("paths")
        .map(serde_json::Value::take)
        .with_context(|| {
            format!(
                "--baseline {}: no \"paths\" cases: give the --out of an earlier `k8s run`",
                p.display()
            )
        })?;
    serde_json::from_value(cases)
        .with_context(|| format!("--baseline {}: unreadable cases", p.display()))
}

/// The registry options from the flags (the password file read here).
pub fn push_options(a: &ImageBuildArgs) -> Result<wirespeed_image::PushOptions> {
    let credentials = match (&a.registry_user, &a.registry_password_file) {
        (Some(user), Some(file)) => {
            let pw = std::fs::read_to_string(file)
                .with_context(|| format!("read --registry-password-file {}", file.display()))?;
            Some((user.clone(), pw.trim_end_matches(['\r', '\n']).to_string()))
        }
        _ => None,
    };
    Ok(wirespeed_image::PushOptions {
        plain_http: a.plain_http,
        credentials,
    })
}
