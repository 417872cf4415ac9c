//! `wirespeed model` and `wirespeed explain`: a cloud profile's ceilings
//! and prices, and bench results set against them with the bottleneck
//! named. `bench --profile P` explains right after the test.

use anyhow::{Context, Result, bail};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use wirespeed_engine::spec::parse_rate;
use wirespeed_engine::{Report, TestResult};
use wirespeed_model::{
    Ceilings, ExplainReport, ExplainedResult, Explanation, Facts, PriceInput, Profile, Query,
    builtin, builtin_names, ceilings, explain, model,
};
use wirespeed_report::{heading, new_table};

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
        emit(&wirespeed_report::model::model_text(&m));
    }
    Ok(())
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

/// Explains one result after `bench --profile P`; to stderr when stdout carries JSON.
pub fn explain_after_bench(result: &TestResult, opts: &ExplainOpts, json: bool) -> Result<()> {
    if !wants_explain(opts) {
        return Ok(());
    }
    let (c, e) = Explainer::new(opts)?.explain(result)?;
    let text = wirespeed_report::model::explanation_text(result, c.as_ref(), &e);
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
            .map(|(r, (c, e))| wirespeed_report::model::explanation_text(r, c.as_ref(), e))
            .collect();
        emit(&texts.join("\n"));
    }
    Ok(())
}
