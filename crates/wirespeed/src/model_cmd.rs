//! `wirespeed model` and `wirespeed explain`: a cloud profile's ceilings
//! and prices, and bench results set against them with the bottleneck
//! named. `bench --profile P` explains right after the test.

use anyhow::{Context, Result, bail};
use std::io::Write as _;
use wirespeed_cli::model::*;
use wirespeed_model::{
    Ceilings, ExplainReport, ExplainedResult, Explanation, Facts, PriceInput, Profile, Query,
    builtin, builtin_names, ceilings, explain, model,
};
use wirespeed_report::{heading, new_table};
use wirespeed_types::{Report, TestResult};

/// Writes to stdout; a reader that went away (`| head`) is not an error.
fn emit(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

fn json_format(format: TableOrJson, json: bool) -> bool {
    json || format == TableOrJson::Json
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
    if json_format(a.format, a.json) {
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
    if json_format(a.format, a.json) {
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

/// Checks bench's model flags, so that bad ones fail before the test runs.
pub fn check_bench_opts(opts: &ExplainOpts) -> Result<()> {
    if wants_explain(opts) {
        Explainer::new(opts)?;
    }
    Ok(())
}
