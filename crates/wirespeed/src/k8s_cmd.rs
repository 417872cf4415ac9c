//! `wirespeed k8s manifests|run|image`: agents on Kubernetes
//! (wirespeed-k8s) and their image (wirespeed-image).

use anyhow::{Context, Result, bail};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use wirespeed_k8s::manifests::{self, Network, NicSelector, Options};
use wirespeed_k8s::{PathKind, RunOutcome, gates};
use wirespeed_types::paths::PathsReport;

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
    Watch(crate::k8s_watch_cmd::WatchCmd),
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
    binary: Option<PathBuf>,
    /// Write the image as an OCI image layout tar here, for
    /// `ctr -n k8s.io images import FILE` on a node.
    #[arg(long)]
    output: Option<PathBuf>,
    /// The image's name in that layout (index.json's ref.name) [default:
    /// the --push reference, else localhost/wirespeed:VERSION].
    #[arg(long, requires = "output")]
    name: Option<String>,
    /// Push to this reference (REGISTRY/NAME:TAG) and print it with the
    /// image's digest (REF@sha256:...): what to pass as --image.
    #[arg(long, value_name = "REF")]
    push: Option<String>,
    /// Talk plain HTTP to the registry (a local registry without TLS).
    #[arg(long, requires = "push")]
    plain_http: bool,
    /// Registry user, with --registry-password-file [default: anonymous].
    #[arg(long, requires_all = ["push", "registry_password_file"])]
    registry_user: Option<String>,
    /// File holding the registry password or token.
    #[arg(long, requires = "registry_user")]
    registry_password_file: Option<PathBuf>,
}

/// What the objects are made of.
#[derive(clap::Args, Debug)]
pub struct ObjectArgs {
    /// Network modes, comma-separated: host (hostNetwork), pod (the pod
    /// network), dra (NICs claimed from DraNet); one DaemonSet each.
    #[arg(long, default_value = "pod")]
    network: String,
    /// Agent image, as printed by `wirespeed k8s image build --push
    /// REGISTRY/wirespeed:TAG` (REF@sha256:...). Required by `run`.
    #[arg(long)]
    image: Option<String>,
    /// The agents' HTTP API port.
    #[arg(long, default_value_t = manifests::DEFAULT_HTTP_PORT)]
    http_port: u16,
    /// Tune profile (built-in name or file): its sysctls go into the
    /// pod-network agents' securityContext.sysctls (those every node's
    /// kernel and kubelet accept; never the node's own), its NIC settings
    /// into DraNet's config (MTU, GSO/GRO sizes, ethtool features and
    /// private flags), e.g. tpu-multinic. For dra a field DraNet cannot
    /// carry (rx_ring, source_routing) or a private flag the claimed NICs
    /// lack is refused before anything is applied.
    #[arg(long)]
    profile: Option<String>,
    /// dra: claim NICs whose GCE network name starts with this (report 1)
    /// [default: NICs DraNet does not call virtual].
    #[arg(long, conflicts_with_all = ["ifname_prefix", "nic_cel"])]
    network_prefix: Option<String>,
    /// dra: claim NICs whose interface name (dra.net/ifName) starts with
    /// this.
    #[arg(long, conflicts_with = "nic_cel")]
    ifname_prefix: Option<String>,
    /// dra: claim NICs matching this CEL expression over `device`, e.g.
    /// 'device.attributes["dra.net"].rdma'.
    #[arg(long, visible_alias = "dra-selector", value_name = "CEL")]
    nic_cel: Option<String>,
    /// dra: the claims' DeviceClass, yours (it must exist; none is made)
    /// [default: wirespeed-dranet, shared by every run, created when
    /// missing and never deleted].
    #[arg(long, value_name = "NAME")]
    device_class: Option<String>,
    /// dra: NICs per agent.
    #[arg(long, default_value_t = 1)]
    nics: u32,
    /// dra: leave the NICs' eBPF programs attached (DraNet detaches them
    /// by default here, as report 1 did).
    #[arg(long)]
    keep_ebpf: bool,
    /// Run agents only on nodes with this label (KEY=VALUE, repeatable).
    #[arg(long, value_name = "KEY=VALUE")]
    node_selector: Vec<String>,
    /// Let agents run on nodes with this taint (KEY[=VALUE][:EFFECT],
    /// repeatable), e.g. google.com/tpu=present:NoSchedule.
    #[arg(long, value_name = "KEY[=VALUE][:EFFECT]")]
    toleration: Vec<String>,
    /// Let agents run on nodes whatever their taints (a GPU or TPU pool);
    /// without it a tainted node is left out, by name.
    #[arg(long)]
    tolerate_all: bool,
    /// The agent container's resource requests (KEY=QUANTITY,
    /// comma-separated), e.g. cpu=1,memory=256Mi.
    #[arg(long, value_name = "KEY=QTY,..")]
    requests: Option<String>,
    /// The agent container's resource limits (KEY=QUANTITY, comma-separated).
    #[arg(long, value_name = "KEY=QTY,..")]
    limits: Option<String>,
    /// The agents' PriorityClass.
    #[arg(long, value_name = "NAME")]
    priority_class: Option<String>,
    /// The agents' data ports (LO-HI): a firewall or NetworkPolicy can
    /// admit them, and each agent's Service (service paths) forwards them.
    #[arg(long, value_name = "LO-HI", default_value = "5301-5316")]
    data_ports: String,
    /// Allow host-network agents (--network host): their namespace is
    /// labelled Pod Security `privileged` (one wirespeed makes; an
    /// existing namespace must already be). Without it host mode is refused.
    #[arg(long)]
    privileged_namespace: bool,
    /// Make no NetworkPolicy (by default one admits the agents' ports
    /// only from the run's own pods and the API server).
    #[arg(long)]
    no_network_policy: bool,
    /// Where the API server's pod-proxy connections come from (CIDR,
    /// repeatable), admitted to the agents' HTTP port; `k8s run` adds the
    /// API server's own addresses when none is given.
    #[arg(long, value_name = "CIDR")]
    api_source: Vec<String>,
}

/// Options of `k8s manifests`.
#[derive(clap::Args, Debug)]
pub struct ManifestArgs {
    #[command(flatten)]
    objects: ObjectArgs,
    /// Namespace of the objects.
    #[arg(long, default_value = "wirespeed")]
    namespace: String,
    /// The agents' engine port.
    #[arg(long, default_value_t = manifests::DEFAULT_PORT)]
    port: u16,
    /// The fleet key file (as `wirespeed serve --key-file`); a fresh key
    /// is made when absent.
    #[arg(long)]
    key_file: Option<PathBuf>,
    /// yaml (multi-document) or json (a v1 List).
    #[arg(long, default_value = "yaml")]
    output: String,
    /// Print instead what runs `k8s run` inside the cluster: a
    /// ServiceAccount, the ClusterRole and binding a run needs, and a Job
    /// running `wirespeed k8s run` with these objects' flags and the
    /// arguments after `--` (docs/k8s.md).
    #[arg(long)]
    runner: bool,
    /// With --runner: more `k8s run` arguments for the Job (after `--`).
    #[arg(last = true, requires = "runner")]
    run_args: Vec<String>,
}

/// Options of `k8s run`.
#[derive(clap::Args, Debug)]
// bench's --paths (engine paths between addresses) has no meaning here:
// the run finds the addresses; --paths names the cluster paths instead.
#[command(mut_arg("paths", |a| a.long("engine-paths").hide(true)))]
pub struct RunArgs {
    #[command(flatten)]
    objects: ObjectArgs,
    /// Paths to measure, comma-separated: host, same-node, cross-node,
    /// cross-zone, service (= service-same-node,service-cross-node),
    /// hairpin, dra [default: one per --network: host, cross-node, dra].
    #[arg(long = "paths", id = "cluster_paths", value_name = "LIST")]
    cluster_paths: Option<String>,
    /// Only these nodes (comma-separated names).
    #[arg(long, value_name = "NODE,..")]
    nodes: Option<String>,
    /// A seeded sample of N of the eligible nodes.
    #[arg(long, value_name = "N")]
    sample: Option<usize>,
    /// The sample's seed: the same seed over the same nodes picks the same
    /// sample.
    #[arg(long, default_value_t = 1, requires = "sample")]
    seed: u64,
    /// Node pairs to test across nodes, one `CLIENT SERVER` per line
    /// (instead of --pattern).
    #[arg(long, value_name = "FILE")]
    pairs: Option<PathBuf>,
    /// Fail (exit 1) when a bulk case is below RATE, on every path or on
    /// one (PATH=RATE); repeatable.
    #[arg(long, value_name = "[PATH=]RATE")]
    min: Vec<String>,
    /// Fail when a request/response case is below N transactions/s
    /// (PATH=N for one path); repeatable.
    #[arg(long, value_name = "[PATH=]N")]
    min_tps: Vec<String>,
    /// Fail when a case falls more than --tolerance below the same case
    /// of this earlier --out (or its p99 rises more).
    #[arg(long, value_name = "FILE")]
    baseline: Option<PathBuf>,
    /// Tolerance of --baseline, %.
    #[arg(long, value_name = "PCT", default_value_t = 10.0)]
    tolerance: f64,
    /// Fail when a pod path is more than PCT % below the host network on
    /// the same node pair (add host to --paths).
    #[arg(long, value_name = "PCT")]
    max_gap: Option<f64>,
    /// Also write the cases as CSV here.
    #[arg(long, value_name = "FILE")]
    csv: Option<PathBuf>,
    /// Also write the cases as JUnit XML here (one testcase per path,
    /// workload and pair).
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Also write an HTML page here: the path x pair heatmap and table.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Message sizes to sweep on every path (comma-separated, e.g.
    /// 1k,16k,64k): one workload per size.
    #[arg(long, value_name = "SIZES")]
    sweep_sizes: Option<String>,
    /// Flows per pair to sweep on every path (e.g. 1,4,8): one workload
    /// per count.
    #[arg(long, value_name = "COUNTS")]
    sweep_flows: Option<String>,
    /// The kubeconfig [default: $KUBECONFIG, ~/.kube/config, in-cluster].
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Namespace to create (it must not exist) [default: wirespeed-RUNID].
    #[arg(long)]
    namespace: Option<String>,
    /// pairs, ring, all-to-all, one-to-many or many-to-one.
    #[arg(long, default_value = "all-to-all")]
    pattern: String,
    /// Tests each agent takes part in at once.
    #[arg(long, default_value_t = 1)]
    concurrent: u32,
    /// Runs of each test; two or more give each case a 95% confidence
    /// interval, which the gates judge by.
    #[arg(long, visible_alias = "repeat", default_value_t = 1)]
    repeats: u32,
    /// Longest wait for each mode's agents to be Ready.
    #[arg(long, default_value = "5m")]
    ready_timeout: String,
    /// Leave the objects in the cluster afterwards.
    #[arg(long)]
    keep: bool,
    /// How to reach the agents' HTTP APIs: api (through the API server's
    /// pod proxy: works from anywhere that reaches the API server) or
    /// direct (to the pod/node addresses: from inside the cluster network).
    #[arg(long, default_value = "api", value_name = "api|direct")]
    reach: String,
    /// Also write every mode's agents and fleet results, and the
    /// comparison, as JSON here.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Several workloads in one run, comma-separated (e.g. stream,rr: the
    /// host vs pod table then has throughput, latency percentiles and CPU
    /// per Gbit/s and per transaction); replaces -w.
    #[arg(long, value_name = "LIST", conflicts_with = "workload")]
    workloads: Option<String>,
    /// Bench's flags: workload, duration, flows, sizes, --port (the
    /// agents' engine port), --key-file (else a fresh key).
    #[command(flatten)]
    bench: wirespeed_experiment::BenchArgs,
}

impl ObjectArgs {
    /// The library's options for `namespace`, the engine `port` and the
    /// key from `key_file` (a fresh one when none).
    /// Whether `--image` was left out.
    pub(crate) fn image_missing(&self) -> bool {
        self.image.is_none()
    }

    pub(crate) fn options(
        &self,
        namespace: &str,
        port: u16,
        key_file: Option<&Path>,
    ) -> Result<Options> {
        let networks = Network::parse_list(&self.network)?;
        let key = match key_file {
            Some(p) => crate::read_key(p)?,
            None => manifests::generate_key()?,
        };
        let mut o = Options::new(networks, namespace, &key);
        if let Some(i) = &self.image {
            o.image = i.clone();
        }
        o.port = port;
        o.http_port = self.http_port;
        if let Some(p) = &self.profile {
            let prof =
                wirespeed_host::profiles::load(p).with_context(|| format!("--profile {p}"))?;
            o.profile = Some((p.clone(), prof));
        }
        if let Some(p) = &self.network_prefix {
            o.nic_selector = NicSelector::NetworkPrefix(p.clone());
        } else if let Some(p) = &self.ifname_prefix {
            o.nic_selector = NicSelector::IfNamePrefix(p.clone());
        } else if let Some(e) = &self.nic_cel {
            o.nic_selector = NicSelector::Cel(e.clone());
        }
        o.nics = self.nics;
        o.disable_ebpf = !self.keep_ebpf;
        o.device_class = self.device_class.clone();
        let mut sel = BTreeMap::new();
        for kv in &self.node_selector {
            let Some((k, v)) = kv.split_once('=') else {
                bail!("--node-selector {kv:?}: use KEY=VALUE");
            };
            sel.insert(k.to_string(), v.to_string());
        }
        o.node_selector = sel;
        o.tolerations = self
            .toleration
            .iter()
            .map(|t| manifests::parse_toleration(t))
            .collect::<Result<_, _>>()?;
        o.tolerate_all = self.tolerate_all;
        o.requests = key_values("requests", self.requests.as_deref())?;
        o.limits = key_values("limits", self.limits.as_deref())?;
        o.priority_class = self.priority_class.clone();
        o.data_ports =
            wirespeed_engine::units::parse_port_range(&self.data_ports).context("--data-ports")?;
        o.privileged_namespace = self.privileged_namespace;
        o.network_policy = !self.no_network_policy;
        o.api_sources = self.api_source.clone();
        o.validate()?;
        Ok(o)
    }
}

/// `KEY=VALUE,...` of flag `--flag` as a map (empty when absent).
fn key_values(flag: &str, s: Option<&str>) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for kv in s.unwrap_or("").split(',').filter(|p| !p.trim().is_empty()) {
        let Some((k, v)) = kv.split_once('=') else {
            bail!("--{flag} {kv:?}: use KEY=VALUE, e.g. cpu=500m,memory=256Mi");
        };
        out.insert(k.trim().to_string(), v.trim().to_string());
    }
    Ok(out)
}

/// Runs a `k8s` subcommand.
pub fn run(c: K8sCmd) -> Result<()> {
    match c {
        K8sCmd::Manifests(a) if a.runner => print_runner(&a),
        K8sCmd::Manifests(a) => {
            if a.objects.image.is_none() {
                eprintln!(
                    "k8s manifests: no --image: the DaemonSets name the placeholder {}; {IMAGE_HINT}",
                    manifests::default_image()
                );
            }
            let mut o = a
                .objects
                .options(&a.namespace, a.port, a.key_file.as_deref())?;
            if let Some((_, p)) = &o.profile {
                let plan = wirespeed_k8s::sysctls::plan_offline(&p.sysctl);
                for l in plan.lines() {
                    eprintln!("k8s manifests: {l}");
                }
                if !plan.unsafe_allowed.is_empty() {
                    eprintln!(
                        "k8s manifests: the kubelets must allow the unsafe ones: --allowed-unsafe-sysctls={} (the safe list depends on each node's kernel; `k8s run` checks every node first)",
                        plan.unsafe_allowed.join(",")
                    );
                }
                o.pod_sysctls = plan.apply;
            }
            print_objects(&manifests::build(&o)?, &a.output)
        }
        K8sCmd::Run(a) => run_matrix(*a),
        K8sCmd::Image(ImageCmd::Build(a)) => build_image(*a),
        K8sCmd::Watch(c) => crate::k8s_watch_cmd::run(c),
    }
}

/// How to get an image a cluster can pull.
pub(crate) const IMAGE_HINT: &str = "build and push one with `wirespeed k8s image build --push \
    REGISTRY/wirespeed:TAG` (--plain-http for a registry without TLS) and pass the \
    REF@sha256:... it prints as --image";

/// The run's workloads: bench's flags once per `--workloads` entry (or
/// once, for -w), each swept over `--sweep-flows` and `--sweep-sizes`.
fn run_workloads(a: &RunArgs) -> Result<Vec<wirespeed_fleet::WorkloadSpec>> {
    let names: Vec<String> = match &a.workloads {
        Some(list) => list.split(',').map(|w| w.trim().to_string()).collect(),
        None => vec![a.bench.workload.clone()],
    };
    let known: Vec<&str> = wirespeed_engine::spec::WORKLOADS
        .iter()
        .map(|i| i.name)
        .collect();
    let flows: Vec<Option<u32>> = match &a.sweep_flows {
        Some(l) => l
            .split(',')
            .map(|f| f.trim().parse::<u32>().map(Some))
            .collect::<Result<_, _>>()
            .with_context(|| format!("--sweep-flows {l:?}: use counts, e.g. 1,4,8"))?,
        None => vec![None],
    };
    let mut out = Vec::new();
    for w in &names {
        if !known.contains(&w.as_str()) {
            bail!(
                "--workloads: {w:?} is not a workload ({})",
                known.join(", ")
            );
        }
        let rr = matches!(w.as_str(), "rr" | "crr" | "udp-rr");
        for f in &flows {
            let mut b = a.bench.clone();
            b.workload = w.clone();
            if let Some(f) = f {
                b.flows = *f;
            }
            let mut specs = Vec::new();
            match (&a.sweep_sizes, rr) {
                // rr's own -s takes a list: labels rr-1KiB, rr-64KiB, ...
                (Some(sizes), true) => {
                    b.size = Some(sizes.clone());
                    specs.extend(crate::fleet_cmd::workloads(&b)?);
                }
                (Some(sizes), false) => {
                    for size in sizes.split(',').map(str::trim) {
                        let mut bs = b.clone();
                        bs.msg_size = Some(size.to_string());
                        for mut s in crate::fleet_cmd::workloads(&bs)? {
                            s.label = format!("{}-{size}", s.label);
                            specs.push(s);
                        }
                    }
                }
                (None, _) => specs.extend(crate::fleet_cmd::workloads(&b)?),
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
fn run_paths(a: &RunArgs) -> Result<Vec<PathKind>> {
    Ok(match &a.cluster_paths {
        Some(p) => PathKind::parse_list(p)?,
        None => Network::parse_list(&a.objects.network)?
            .into_iter()
            .map(PathKind::of_network)
            .collect(),
    })
}

/// The gates from the flags; the baseline read now, before the run.
fn run_gates(a: &RunArgs) -> Result<gates::Gates> {
    let rate = |s: &str| {
        wirespeed_engine::units::parse_rate(s)
            .map(|r| r as f64)
            .map_err(|e| e.to_string())
    };
    let count = |s: &str| {
        s.parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| "use a number of transactions/s".to_string())
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
fn read_baseline(p: &Path) -> Result<PathsReport> {
    let text = std::fs::read_to_string(p).with_context(|| format!("--baseline {}", p.display()))?;
    let mut doc: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("--baseline {}: not JSON", p.display()))?;
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

fn run_matrix(a: RunArgs) -> Result<()> {
    // Before anything touches the cluster: no image, no run; bad gates,
    // pairs or baselines fail here too.
    if a.objects.image.is_none() {
        bail!("k8s run needs --image: {IMAGE_HINT}");
    }
    let pattern: wirespeed_fleet::Pattern = a.pattern.parse()?;
    let paths = run_paths(&a)?;
    let gates = run_gates(&a)?;
    let pairs = match &a.pairs {
        Some(p) => {
            Some(std::fs::read_to_string(p).with_context(|| format!("--pairs {}", p.display()))?)
        }
        None => None,
    };
    // A short id names this run's namespace and labels all it makes.
    let run_id: String = String::from_utf8(manifests::generate_key()?)?[..8].to_string();
    let ns = a
        .namespace
        .clone()
        .unwrap_or_else(|| format!("wirespeed-{run_id}"));
    let mut o = a
        .objects
        .options(&ns, a.bench.port, a.bench.key_file.as_deref())?;
    o.run_id = Some(run_id);
    let mut fleet =
        wirespeed_fleet::RunOptions::new(run_workloads(&a)?, o.key.trim_ascii().to_vec());
    fleet.repeats = a.repeats.clamp(1, 100);
    fleet.progress = Some(std::sync::Arc::new(|p: &wirespeed_fleet::Progress| {
        eprintln!("{}", crate::fleet_cmd::progress_line(p));
    }));
    let choice = wirespeed_k8s::nodes::NodeChoice {
        names: a
            .nodes
            .as_ref()
            .map(|n| n.split(',').map(|x| x.trim().to_string()).collect()),
        selector: o.node_selector.clone(),
        sample: a.sample,
        seed: a.seed,
        tolerate_all: o.tolerate_all,
        tolerations: o.tolerations.clone(),
        host_network: false,
    };
    let cfg = wirespeed_k8s::RunConfig {
        kubeconfig: a.kubeconfig.clone(),
        objects: o,
        paths,
        choice,
        pattern,
        pairs,
        concurrent: a.concurrent,
        fleet,
        ready_timeout: crate::duration_flag("ready-timeout", &a.ready_timeout)?,
        delete_timeout: std::time::Duration::from_secs(60),
        keep: a.keep,
        reach: a.reach.parse()?,
    };
    let out = wirespeed_k8s::run_blocking(&cfg, &|l| eprintln!("k8s: {l}"))?;
    let report = judged(&out, &gates, a.repeats.clamp(1, 100));
    write_outputs(&a, &out, &report)?;
    for r in &out.runs {
        println!("== {} path: {} agents", r.path, r.agents.len());
        print!("{}", wirespeed_report::render_fleet(&r.results));
    }
    if out.runs.len() > 1 {
        println!("== paths side by side (gaps against {})", out.runs[0].path);
        print!(
            "{}",
            wirespeed_k8s::render_comparison(&wirespeed_k8s::compare(&out.runs))
        );
    }
    println!("== cases");
    print!("{}", wirespeed_report::paths::render_paths(&report));
    exit_status(&out, &report)
}

/// The run's cases, judged by `g`.
fn judged(out: &RunOutcome, g: &gates::Gates, repeats: u32) -> PathsReport {
    let tests: Vec<gates::PathTests<'_>> = out
        .runs
        .iter()
        .map(|r| (r.path, &r.results.tests[..], &r.nodes))
        .collect();
    let mut report = PathsReport {
        cases: gates::cases(&tests, repeats),
        unplanned: out.unplanned.clone(),
        left_out: out
            .selection
            .left_out
            .iter()
            .map(|(n, why)| format!("{n}: {why}"))
            .collect(),
        ..PathsReport::default()
    };
    gates::judge(&mut report, g);
    report
}

/// --out (JSON: nodes, each path's runs, the comparison, the cases),
/// --csv, --junit and --html.
fn write_outputs(a: &RunArgs, out: &RunOutcome, report: &PathsReport) -> Result<()> {
    let write = |p: &Path, text: String| {
        std::fs::write(p, text).with_context(|| format!("write {}", p.display()))
    };
    if let Some(p) = &a.out {
        let doc = serde_json::json!({
            "nodes": out.selection,
            "runs": out.runs,
            "comparison": wirespeed_k8s::compare(&out.runs),
            "paths": report,
            "sysctls": out.sysctls,
        });
        write(p, serde_json::to_string_pretty(&doc)?)?;
    }
    if let Some(p) = &a.csv {
        write(p, wirespeed_report::paths::render_paths_csv(report))?;
    }
    if let Some(p) = &a.junit {
        let xml =
            wirespeed_report::paths::render_paths_junit(report).map_err(anyhow::Error::msg)?;
        write(p, xml)?;
    }
    if let Some(p) = &a.html {
        write(p, wirespeed_report::paths::render_paths_html(report))?;
    }
    Ok(())
}

/// Exit status of `k8s run` when a requested test was not measured.
pub const EXIT_UNMEASURED: i32 = 3;

/// Exits 1 when a case broke a gate, [`EXIT_UNMEASURED`] when a test or
/// a path was not measured (each named); Ok when everything asked for
/// was measured and passed.
fn exit_status(out: &RunOutcome, report: &PathsReport) -> Result<()> {
    use wirespeed_types::paths::CaseStatus;
    let _ = std::io::Write::flush(&mut std::io::stdout());
    let failed = report
        .cases
        .iter()
        .filter(|c| c.status() == CaseStatus::Failed)
        .count();
    let missing = wirespeed_k8s::run::unmeasured(&out.runs);
    if failed > 0 {
        eprintln!(
            "k8s run: {failed} of {} cases broke a gate (exit 1)",
            report.cases.len()
        );
        std::process::exit(1);
    }
    if missing.is_empty() && out.unplanned.is_empty() {
        return Ok(());
    }
    let total: usize = out.runs.iter().map(|r| r.results.tests.len()).sum();
    let paths = match out.unplanned.len() {
        0 => String::new(),
        n => format!(" and {n} path(s) with no test to run"),
    };
    eprintln!(
        "k8s run: {} of {total} tests not measured{paths} (exit {EXIT_UNMEASURED}):",
        missing.len()
    );
    for m in missing.iter().chain(&out.unplanned) {
        eprintln!("  not measured: {m}");
    }
    std::process::exit(EXIT_UNMEASURED);
}

/// `k8s manifests --runner`: the in-cluster runner's objects.
fn print_runner(a: &ManifestArgs) -> Result<()> {
    if a.objects.image.is_none() {
        bail!(
            "k8s manifests --runner needs --image (the Job runs it, and so do the agents): {IMAGE_HINT}"
        );
    }
    let o = a
        .objects
        .options(&a.namespace, a.port, a.key_file.as_deref())?;
    print_objects(&wirespeed_k8s::runner::build(&o, &a.run_args)?, &a.output)
}

/// Prints `objs` as `output` says: yaml (multi-document) or json (a v1
/// List).
pub(crate) fn print_objects<T: serde::Serialize>(objs: &[T], output: &str) -> Result<()> {
    let text = match output {
        "yaml" => manifests::to_yaml(objs)?,
        "json" => manifests::to_json(objs)? + "\n",
        other => bail!("--output {other:?}: use yaml or json"),
    };
    print!("{text}");
    Ok(())
}

/// `k8s image build`: build, then write and/or push; the pinned reference
/// (or, without --push, the digest) is the one line on stdout.
fn build_image(a: ImageBuildArgs) -> Result<()> {
    let binary = match &a.binary {
        Some(p) => p.clone(),
        None => std::env::current_exe()
            .context("find this wirespeed executable (pass --binary PATH)")?,
    };
    let labels = wirespeed_image::Labels::of_this_build();
    let img = wirespeed_image::build(&binary, &labels).context("build the agent image")?;
    eprintln!("{}", image_summary(&img, &binary));
    if let Some(out) = &a.output {
        let name = a
            .name
            .clone()
            .or_else(|| a.push.clone())
            .unwrap_or_else(|| format!("localhost/wirespeed:{}", env!("CARGO_PKG_VERSION")));
        wirespeed_image::layout::write(&img, &name, out)?;
        eprintln!(
            "wrote {} (OCI image layout, named {name}); on a node: ctr -n k8s.io images import {}",
            out.display(),
            out.display()
        );
    }
    let Some(reference) = &a.push else {
        if a.output.is_none() {
            eprintln!("nothing written: add --push REGISTRY/wirespeed:TAG or --output FILE");
        }
        println!("{}", img.digest());
        return Ok(());
    };
    let pinned = wirespeed_image::push(&img, reference, &push_options(&a)?)?;
    eprintln!("pushed; run with: wirespeed k8s run --image {pinned} ...");
    println!("{pinned}");
    Ok(())
}

/// The registry options from the flags (the password file read here).
fn push_options(a: &ImageBuildArgs) -> Result<wirespeed_image::PushOptions> {
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

fn image_summary(img: &wirespeed_image::Image, binary: &Path) -> String {
    let mib = |n: u64| n as f64 / (1024.0 * 1024.0);
    let size = img.compressed_size();
    let bin = std::fs::metadata(binary).map(|m| m.len()).unwrap_or(0);
    let libs: Vec<&str> = img
        .libraries
        .iter()
        .map(|p| p.rsplit('/').next().unwrap_or(p))
        .collect();
    let libs = if libs.is_empty() {
        "static binary, no libraries".to_string()
    } else {
        format!("with {} from this host", libs.join(", "))
    };
    format!(
        "image {} ({}): {:.1} MiB compressed ({size} bytes); binary {} {:.1} MiB, {libs}",
        img.digest(),
        wirespeed_image::platform(),
        mib(size),
        binary.display(),
        mib(bin),
    )
}
