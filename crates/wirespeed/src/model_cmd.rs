//! `wirespeed model` and `wirespeed explain`: a cloud profile's ceilings
//! and prices, and bench results set against them with the bottleneck
//! named. `bench --profile P` explains right after the test.

use anyhow::{Context, Result, bail};
use std::fmt::Write;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use wirespeed_engine::spec::parse_rate;
use wirespeed_engine::{Report, TestResult};
use wirespeed_model::{
    Ceilings, Evidence, ExplainReport, ExplainedResult, Explanation, Facts, ModelReport,
    PriceInput, Profile, Query, builtin, builtin_names, ceilings, explain, model,
};
use wirespeed_report::{heading, human_bps, human_size, human_us, new_table};

/// The machine: a profile, its size and caps that override the profile's.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ProfileArgs {
    /// Cloud profile: gce, ibm-vpc, tpu-multinic, aws, azure, lab, custom, or a TOML file's path.
    #[arg(long)]
    pub profile: Option<String>,
    /// vCPUs of the VM.
    #[arg(long, requires = "profile")]
    pub vcpus: Option<u32>,
    /// NICs in use (explain: default the result's path count).
    #[arg(long, requires = "profile")]
    pub nics: Option<u32>,
    /// An instance size listed in the profile, e.g. e2-standard-8.
    #[arg(long, requires = "profile")]
    pub instance: Option<String>,
    /// Per-NIC cap, e.g. 25gbit (overrides the profile's).
    #[arg(long, requires = "profile")]
    pub nic_cap: Option<String>,
    /// Per-flow cap, e.g. 5gbit (overrides the profile's).
    #[arg(long, requires = "profile")]
    pub flow_cap: Option<String>,
    /// Per-VM cap, e.g. 100gbit (overrides the profile's rule).
    #[arg(long, requires = "profile")]
    pub vm_cap: Option<String>,
}

/// What explain needs beyond the machine: facts about the path.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ExplainOpts {
    /// The machine and its profile.
    #[command(flatten)]
    pub machine: ProfileArgs,
    /// Encapsulation on the path: vxlan, ipip, wireguard, ...
    #[arg(long)]
    pub encap: Option<String>,
    /// Cap of each path when known apart from the profile, e.g. a lab link's 1gbit.
    #[arg(long)]
    pub path_cap: Option<String>,
}

/// Options of `wirespeed model`.
#[derive(clap::Args, Debug, Clone)]
pub struct ModelArgs {
    /// The machine and its profile.
    #[command(flatten)]
    pub machine: ProfileArgs,
    /// A price per hour: NAME=PRICE, VCPUS=PRICE, or PRICE for the size asked about; repeat or comma-separate.
    #[arg(long)]
    pub price: Vec<String>,
    /// Bandwidth needed, e.g. 10gbit: flows it takes, and the cheapest size that delivers it.
    #[arg(long)]
    pub target: Option<String>,
    /// List the built-in profiles.
    #[arg(long)]
    pub list: bool,
    /// Output: table or json.
    #[arg(long, default_value = "table", value_parser = ["table", "json"])]
    pub format: String,
    /// Short for --format json.
    #[arg(long)]
    pub json: bool,
}

/// Options of `wirespeed explain`.
#[derive(clap::Args, Debug, Clone)]
pub struct ExplainArgs {
    /// A results file written by `wirespeed bench --json`.
    pub results: PathBuf,
    /// The machine, its profile and facts about the path.
    #[command(flatten)]
    pub opts: ExplainOpts,
    /// Output: table or json.
    #[arg(long, default_value = "table", value_parser = ["table", "json"])]
    pub format: String,
    /// Short for --format json.
    #[arg(long)]
    pub json: bool,
}

/// A built-in profile by name, else a profile file at that path.
fn load_profile(name: &str) -> Result<Profile> {
    if builtin_names().contains(&name) {
        return Ok(builtin(name)?);
    }
    let path = Path::new(name);
    if path.is_file() {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("read profile file {}", path.display()))?;
        return Profile::from_toml_str(&text).with_context(|| format!("in {}", path.display()));
    }
    // Neither: the error lists the built-in names.
    Ok(builtin(name)?)
}

fn rate(flag: &str, s: &Option<String>) -> Result<Option<f64>> {
    s.as_deref()
        .map(|v| {
            parse_rate(v)
                .map(|b| b as f64)
                .map_err(|e| anyhow::anyhow!("{flag}: {e}"))
        })
        .transpose()
}

/// The profile named by the flags (None without --profile) and the query.
fn machine(a: &ProfileArgs, default_nics: Option<u32>) -> Result<Option<(Profile, Query)>> {
    let Some(name) = &a.profile else {
        return Ok(None);
    };
    let p = load_profile(name)?;
    let q = Query {
        vcpus: a.vcpus,
        nics: a.nics.or(default_nics),
        instance: a.instance.clone(),
        nic_cap_bps: rate("--nic-cap", &a.nic_cap)?,
        flow_cap_bps: rate("--flow-cap", &a.flow_cap)?,
        vm_cap_bps: rate("--vm-cap", &a.vm_cap)?,
    };
    Ok(Some((p, q)))
}

/// Writes to stdout; a reader that went away (`| head`) is not an error.
fn emit(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

fn json_format(format: &str, json: bool) -> bool {
    json || format == "json"
}

/// Runs `wirespeed model`.
pub fn run_model(a: &ModelArgs) -> Result<()> {
    if a.list {
        let mut t = new_table(&["profile", "description"], 2);
        for n in builtin_names() {
            t.add_row(vec![n.to_string(), builtin(n)?.description]);
        }
        emit(&format!("{t}\n"));
        return Ok(());
    }
    let Some((p, q)) = machine(&a.machine, None)? else {
        bail!(
            "give --profile NAME (built-in: {}) or the path of a profile file; --list describes them",
            builtin_names().join(", ")
        );
    };
    let mut prices = Vec::new();
    for s in a.price.iter().flat_map(|s| s.split(',')) {
        prices.push(s.parse::<PriceInput>()?);
    }
    let target = rate("--target", &a.target)?;
    let m = model(&p, &q, &prices, target)?;
    if json_format(&a.format, a.json) {
        emit(&format!("{}\n", serde_json::to_string_pretty(&m)?));
    } else {
        emit(&render_model(&m));
    }
    Ok(())
}

fn opt_bps(x: Option<f64>) -> String {
    x.map(human_bps).unwrap_or_else(|| "-".into())
}

fn plural(n: u32, one: &str) -> String {
    format!("{n} {one}{}", if n == 1 { "" } else { "s" })
}

/// The ceilings, flows needed, target and price table as text.
fn render_model(m: &ModelReport) -> String {
    let c = &m.ceilings;
    let mut out = String::new();
    let _ = writeln!(out, "{}: {}", c.profile, m.description);
    let _ = writeln!(out, "{}", machine_line(c));
    let mut t = new_table(&["ceiling", "how", "one way", "both ways"], 2);
    let mut row = |name: &str, key: &str, one: Option<f64>, both: Option<f64>, show_both: bool| {
        t.add_row(vec![
            name.to_string(),
            c.basis.get(key).cloned().unwrap_or_default(),
            opt_bps(one),
            if show_both {
                opt_bps(both)
            } else {
                String::new()
            },
        ]);
    };
    row("per flow", "per_flow", c.per_flow_bps, None, true);
    let nic_both = c.per_nic_bps.map(|x| 2.0 * x);
    row("per NIC", "per_nic", c.per_nic_bps, nic_both, true);
    let (one, both) = (c.per_vm_one_way_bps, c.per_vm_both_ways_bps);
    row("per VM", "per_vm_one_way", one, both, true);
    if c.vm_total_bps.is_some() {
        row("VM total", "vm_total", c.vm_total_bps, None, false);
    }
    if c.network_share.is_some() {
        row("network", "network", c.network_bps, None, false);
    }
    let _ = writeln!(out, "{t}");
    let flows = |n: Option<u32>| match n {
        Some(n) => plural(n, "flow"),
        None => "any (no per-flow cap known)".into(),
    };
    if c.per_nic_bps.is_some() {
        let _ = writeln!(
            out,
            "  flows per NIC to reach the NIC ceiling: {}",
            flows(c.flows_per_nic)
        );
    }
    if c.per_vm_one_way_bps.is_some() {
        let _ = writeln!(
            out,
            "  flows to reach the VM ceiling: {}",
            flows(c.flows_per_vm)
        );
    }
    if let Some(t) = m.target_bps {
        let _ = writeln!(
            out,
            "  target {}: {}",
            human_bps(t),
            match m.flows_for_target {
                Some(n) => format!("{} at the per-flow cap", plural(n, "flow")),
                None => "no per-flow cap known".into(),
            }
        );
    }
    for n in &c.notes {
        let _ = writeln!(out, "  note: {n}");
    }
    for s in &m.sources {
        let _ = writeln!(out, "  source: {s}");
    }
    let pt = &m.prices;
    if !pt.rows.is_empty() {
        let _ = writeln!(out, "\nprice per delivered Gbit/s ({}):", pt.currency);
        let mut head = vec![
            "instance",
            "vCPUs",
            "NICs",
            "delivered",
            "per hour",
            "per Gbit/s-hour",
        ];
        let target_col = pt.target_bps.map(|t| format!("meets {}", human_bps(t)));
        if let Some(h) = &target_col {
            head.push(h);
        }
        let mut t = new_table(&head, 1);
        for r in &pt.rows {
            let mut row = vec![
                r.instance.clone(),
                r.vcpus.to_string(),
                r.nics.to_string(),
                opt_bps(r.delivered_bps),
                format!("{:.4}", r.price_per_hour),
                r.price_per_gbit_hour
                    .map(|v| format!("{v:.4}"))
                    .unwrap_or_else(|| "-".into()),
            ];
            if let Some(ok) = r.meets_target {
                row.push(if ok { "yes" } else { "no" }.into());
            }
            t.add_row(row);
        }
        let _ = writeln!(out, "{t}");
        if let Some(b) = &pt.best_value {
            let _ = writeln!(out, "  best value per delivered Gbit/s: {b}");
        }
        if let Some(t) = pt.target_bps {
            let _ = writeln!(
                out,
                "  cheapest that delivers {}: {}",
                human_bps(t),
                pt.cheapest_meeting_target
                    .as_deref()
                    .unwrap_or("none listed")
            );
        }
    }
    out
}

fn machine_line(c: &Ceilings) -> String {
    let mut parts = Vec::new();
    if let Some(i) = &c.instance {
        parts.push(i.clone());
    }
    if let Some(v) = c.vcpus {
        parts.push(plural(v, "vCPU"));
    }
    parts.push(plural(c.nics, "NIC"));
    parts.join(", ")
}

/// Resolved model for explaining results: the profile (if any) and facts.
struct Explainer {
    machine: Option<(Profile, Query)>,
    facts: Facts,
}

impl Explainer {
    fn new(o: &ExplainOpts) -> Result<Explainer> {
        let facts = Facts {
            encapsulation: o.encap.clone(),
            path_cap_bps: rate("--path-cap", &o.path_cap)?,
        };
        let machine = machine(&o.machine, None)?;
        // Check the flags now, so a bad --vcpus fails before a test runs.
        if let Some((p, q)) = &machine {
            ceilings(p, q)?;
        }
        Ok(Explainer { machine, facts })
    }

    /// The ceilings for one result (NICs default to its path count) and the explanation.
    fn explain(&self, r: &TestResult) -> Result<(Option<Ceilings>, Explanation)> {
        let c = match &self.machine {
            Some((p, q)) => {
                let q = Query {
                    nics: q.nics.or(Some(r.paths.len().max(1) as u32)),
                    ..q.clone()
                };
                Some(ceilings(p, &q)?)
            }
            None => None,
        };
        let e = explain(r, c.as_ref(), &self.facts);
        Ok((c, e))
    }
}

fn evidence_text(e: &Evidence) -> String {
    let v = match e.unit.as_str() {
        "bit/s" => human_bps(e.value),
        "bytes" if e.value >= 0.0 => human_size(e.value as u64),
        "%" => format!("{:.1}%", e.value),
        "us" => human_us(e.value),
        u => {
            let n = format!("{:.3}", e.value);
            let n = n.trim_end_matches('0').trim_end_matches('.');
            // Counts and ratios read best bare: flows=4, fairness=0.62.
            match u {
                "flows" | "threads" | "segments" | "vcpus" | "ratio" | "jain" => n.to_string(),
                _ => format!("{n} {u}"),
            }
        }
    };
    format!("{}={v}", e.name)
}

/// One explanation as text: % of each ceiling, then each finding with its numbers.
fn render_explanation(r: &TestResult, c: Option<&Ceilings>, e: &Explanation) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "explain: {}", heading(r));
    if let Some(c) = c {
        let _ = writeln!(out, "  model: {}, {}", c.profile, machine_line(c));
    }
    if !e.percent_of.is_empty() {
        let mut t = new_table(&["ceiling", "ceiling", "measured", "% of it"], 1);
        for p in &e.percent_of {
            t.add_row(vec![
                p.ceiling.clone(),
                human_bps(p.ceiling_bps),
                human_bps(p.measured_bps),
                format!("{:.1}%", p.percent),
            ]);
        }
        let _ = writeln!(out, "{t}");
    }
    for b in &e.bottlenecks {
        let _ = writeln!(out, "  [{}] {}", b.kind.name(), b.message);
        if !b.evidence.is_empty() {
            let ev: Vec<String> = b.evidence.iter().map(evidence_text).collect();
            let _ = writeln!(out, "      evidence: {}", ev.join(", "));
        }
    }
    for n in &e.notes {
        let _ = writeln!(out, "  note: {n}");
    }
    let _ = writeln!(out, "  {}", e.summary);
    out
}

/// Explains one result after `bench --profile P`; to stderr when stdout carries JSON.
pub fn explain_after_bench(result: &TestResult, opts: &ExplainOpts, json: bool) -> Result<()> {
    if !wants_explain(opts) {
        return Ok(());
    }
    let (c, e) = Explainer::new(opts)?.explain(result)?;
    let text = render_explanation(result, c.as_ref(), &e);
    if json {
        // stdout carries the JSON document: keep it parseable.
        let _ = std::io::stderr().lock().write_all(text.as_bytes());
    } else {
        emit(&format!("\n{text}"));
    }
    Ok(())
}

/// Checks bench's model flags, so that bad ones fail before the test runs.
pub fn check_bench_opts(opts: &ExplainOpts) -> Result<()> {
    if wants_explain(opts) {
        Explainer::new(opts)?;
    }
    Ok(())
}

fn wants_explain(o: &ExplainOpts) -> bool {
    o.machine.profile.is_some() || o.encap.is_some() || o.path_cap.is_some()
}

/// Runs `wirespeed explain`.
pub fn run_explain(a: &ExplainArgs) -> Result<()> {
    let text = std::fs::read_to_string(&a.results)
        .with_context(|| format!("read results file {}", a.results.display()))?;
    let results: Vec<TestResult> = match serde_json::from_str::<Report>(&text) {
        Ok(r) => r.results,
        Err(report_err) => match serde_json::from_str::<TestResult>(&text) {
            Ok(r) => vec![r],
            Err(_) => bail!(
                "{} is not a wirespeed results file (`wirespeed bench --json` writes one): {report_err}",
                a.results.display()
            ),
        },
    };
    if results.is_empty() {
        bail!("{} holds no results", a.results.display());
    }
    let ex = Explainer::new(&a.opts)?;
    let mut items = Vec::new();
    for r in &results {
        items.push((r, ex.explain(r)?));
    }
    if json_format(&a.format, a.json) {
        let doc = ExplainReport {
            schema_version: wirespeed_model::SCHEMA_VERSION,
            explanations: items
                .into_iter()
                .map(|(r, (ceilings, explanation))| ExplainedResult {
                    heading: heading(r),
                    ceilings,
                    explanation,
                })
                .collect(),
        };
        emit(&format!("{}\n", serde_json::to_string_pretty(&doc)?));
    } else {
        let texts: Vec<String> = items
            .iter()
            .map(|(r, (c, e))| render_explanation(r, c.as_ref(), e))
            .collect();
        emit(&texts.join("\n"));
    }
    Ok(())
}
