//! `wirespeed experiment FILE`: a matrix of configurations, each a change
//! against a named baseline (one variable at a time) or a ladder of steps
//! that add up, every configuration repeated, run in a lab. Results are
//! saved after every finished cell (write + rename), so a stopped run
//! resumes at the first unfinished cell. The file format is in
//! docs/experiment-file.md.

use anyhow::{Context, Result, anyhow, bail};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use wirespeed_engine::Report;
use wirespeed_engine::spec::{parse_duration, parse_size};
use wirespeed_lab::plan::{Addressing, address};
use wirespeed_lab::spec::locate;
use wirespeed_lab::{Lab, LabSpec};
use wirespeed_report::experiment::{
    CellResult, EXPERIMENT_SCHEMA_VERSION, ExperimentResults, Mode, Point, finalize, pct_text,
};
use wirespeed_report::{human_size, human_us, new_table};

/// Options of `wirespeed experiment`.
#[derive(clap::Args, Debug)]
pub struct ExperimentArgs {
    /// The experiment file (TOML).
    pub file: PathBuf,
    /// Where results are saved (default: FILE's name with .results.json, in the current directory).
    #[arg(short, long)]
    pub out: Option<PathBuf>,
    /// Repeats per cell (overrides the file).
    #[arg(long)]
    pub repeats: Option<u32>,
    /// Measured time per run, e.g. 2s (overrides the file).
    #[arg(short, long)]
    pub duration: Option<String>,
    /// Warm-up per run (overrides the file).
    #[arg(long)]
    pub warmup: Option<String>,
    /// Resume from OUT when it holds results of this experiment (the default).
    #[arg(long, conflicts_with = "fresh")]
    pub resume: bool,
    /// Ignore earlier results in OUT and run every cell.
    #[arg(long)]
    pub fresh: bool,
    /// Print the results JSON on stdout at the end instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Check the file and print what each cell would run; build nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// How a cell changes the lab in place (applied before it runs, undone after).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LabSet {
    /// Hosts the sysctls apply to (default: every host).
    #[serde(default)]
    hosts: Vec<String>,
    /// Links MTU and GSO/GRO sizes apply to, both ends (default: every link).
    #[serde(default)]
    links: Vec<usize>,
    #[serde(default)]
    mtu: Option<u32>,
    #[serde(default)]
    gso_max_size: Option<u32>,
    #[serde(default)]
    gro_max_size: Option<u32>,
    #[serde(default)]
    sysctl: BTreeMap<String, String>,
}

/// A sweep: the same cell once per value of one bench flag.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Sweep {
    arg: String,
    values: Vec<String>,
}

/// A `[baseline]`, `[[cell]]` or `[[step]]` of the file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CellDef {
    name: String,
    #[serde(default)]
    change: Option<String>,
    #[serde(default)]
    bench: Vec<String>,
    #[serde(default)]
    target: Option<String>,
    #[serde(default)]
    lab_set: Option<LabSet>,
    #[serde(default)]
    lab: Option<toml::Table>,
    #[serde(default)]
    sweep: Option<Sweep>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
enum LabRef {
    Path(String),
    Inline(toml::Table),
}

fn default_server() -> String {
    "b".into()
}

fn default_client() -> String {
    "a".into()
}

/// A tuning profile applied with `wirespeed tune apply` on one host after
/// each lab build, rolled back before the lab is removed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TuneDef {
    host: String,
    profile: String,
    #[serde(default)]
    devs: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExperimentFile {
    name: String,
    lab: LabRef,
    #[serde(default = "default_server")]
    server: String,
    #[serde(default = "default_client")]
    client: String,
    #[serde(default)]
    target: Option<String>,
    #[serde(default)]
    repeats: Option<u32>,
    #[serde(default)]
    duration: Option<String>,
    #[serde(default)]
    warmup: Option<String>,
    #[serde(default)]
    mode: Mode,
    baseline: CellDef,
    #[serde(default, rename = "cell")]
    cells: Vec<CellDef>,
    #[serde(default, rename = "step")]
    steps: Vec<CellDef>,
    #[serde(default, rename = "tune")]
    tunes: Vec<TuneDef>,
}

/// One setting a cell changes in place: a sysctl on a host or a link
/// attribute on both ends of a link.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
enum Setting {
    Sysctl { host: String, key: String },
    Link { link: usize, attr: &'static str },
}

/// A cell ready to run: everything merged and every placeholder resolved.
#[derive(Debug, Clone, PartialEq, Serialize)]
struct Planned {
    name: String,
    change: String,
    lab: LabSpec,
    settings: BTreeMap<Setting, String>,
    args: Vec<String>,
    target: String,
    sweep: Option<Sweep>,
}

/// The whole experiment, checked.
#[derive(Debug, Clone, Serialize)]
struct Plan {
    name: String,
    mode: Mode,
    server: String,
    client: String,
    repeats: u32,
    duration: String,
    warmup: String,
    tunes: Vec<TuneDef>,
    cells: Vec<Planned>,
}

/// Every flag `wirespeed bench` takes: (spellings, long name, takes a
/// value), read from its clap definition so the two cannot drift apart.
fn bench_flags() -> &'static [(Vec<String>, String, bool)] {
    static FLAGS: std::sync::OnceLock<Vec<(Vec<String>, String, bool)>> =
        std::sync::OnceLock::new();
    FLAGS.get_or_init(|| {
        use clap::Args;
        let cmd = crate::bench::BenchArgs::augment_args(clap::Command::new("bench"));
        cmd.get_arguments()
            .filter_map(|a| {
                let long = format!("--{}", a.get_long()?);
                let mut names = vec![long.clone()];
                names.extend(
                    a.get_all_aliases()
                        .into_iter()
                        .flatten()
                        .map(|x| format!("--{x}")),
                );
                names.extend(a.get_short().map(|c| format!("-{c}")));
                names.extend(
                    a.get_all_short_aliases()
                        .into_iter()
                        .flatten()
                        .map(|c| format!("-{c}")),
                );
                Some((names, long, a.get_action().takes_values()))
            })
            .collect()
    })
}

/// The long name of a bench flag, so aliases replace each other (an
/// unknown flag is returned as it is).
fn canonical(flag: &str) -> &str {
    bench_flags()
        .iter()
        .find(|(names, _, _)| names.iter().any(|n| n == flag))
        .map(|(_, long, _)| long.as_str())
        .unwrap_or(flag)
}

/// Whether bench flag `flag` (any spelling) takes no value.
fn is_bool_flag(flag: &str) -> bool {
    bench_flags()
        .iter()
        .any(|(names, _, takes)| !takes && names.iter().any(|n| n == flag))
}

/// Bench arguments as (flag, tokens) items, in order.
fn split_args(args: &[String]) -> Result<Vec<(String, Vec<String>)>, String> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(t) = it.next() {
        if !t.starts_with('-') || t == "-" {
            return Err(format!(
                "{t:?} is not a flag: the server address comes from `target`, values follow their flag"
            ));
        }
        let (flag, inline) = match t.split_once('=') {
            Some((f, _)) if f.starts_with("--") => (f, true),
            _ => (t.as_str(), false),
        };
        let key = canonical(flag).to_string();
        if !bench_flags().iter().any(|(_, long, _)| *long == key) {
            return Err(format!(
                "unknown bench flag {flag} (`wirespeed bench --help` lists them)"
            ));
        }
        if matches!(key.as_str(), "--json" | "--format" | "--port") {
            return Err(format!("{flag} is set by the experiment runner"));
        }
        let mut toks = vec![t.clone()];
        if !inline && !is_bool_flag(&key) {
            toks.push(
                it.next()
                    .ok_or_else(|| format!("{flag} needs a value"))?
                    .clone(),
            );
        }
        out.push((key, toks));
    }
    Ok(out)
}

/// Later arguments replace earlier ones with the same flag (aliases too).
fn merge_args(layers: &[&[String]]) -> Result<Vec<String>, String> {
    let mut items: Vec<(String, Vec<String>)> = Vec::new();
    for l in layers {
        for (k, toks) in split_args(l)? {
            items.retain(|(k2, _)| *k2 != k);
            items.push((k, toks));
        }
    }
    Ok(items.into_iter().flat_map(|(_, t)| t).collect())
}

/// Merges `patch` into `base`: tables key by key, arrays of tables element
/// by element (extra elements appended), anything else replaced.
fn merge_toml(base: &mut toml::Value, patch: &toml::Value) {
    match (base, patch) {
        (toml::Value::Table(b), toml::Value::Table(p)) => {
            for (k, v) in p {
                match b.get_mut(k) {
                    Some(bv) => merge_toml(bv, v),
                    None => {
                        b.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (toml::Value::Array(b), toml::Value::Array(p))
            if p.iter().all(toml::Value::is_table) && b.iter().all(toml::Value::is_table) =>
        {
            for (i, v) in p.iter().enumerate() {
                match b.get_mut(i) {
                    Some(bv) => merge_toml(bv, v),
                    None => b.push(v.clone()),
                }
            }
        }
        (b, p) => *b = p.clone(),
    }
}

/// Replaces `{HOST.N}`, `{HOST.N.v6}`, `{HOST.devN}`, `{HOST.vxJ}` and
/// `{HOST.vxJ.v6}` by the lab's addresses and device names.
fn resolve(s: &str, plan: &Addressing) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = s;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let close = rest[open..]
            .find('}')
            .ok_or_else(|| format!("unclosed placeholder in {s:?}"))?;
        let key = &rest[open + 1..open + close];
        out.push_str(&placeholder(key, plan).ok_or_else(|| {
            format!("unknown placeholder {{{key}}}: use {{HOST.N}}, {{HOST.N.v6}}, {{HOST.devN}}, {{HOST.vxJ}} or {{HOST.vxJ.v6}} (N a link index, J an overlay index)")
        })?);
        rest = &rest[open + close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn placeholder(key: &str, plan: &Addressing) -> Option<String> {
    let parts: Vec<&str> = key.split('.').collect();
    let (host, what, v6) = match parts.as_slice() {
        [h, w] => (*h, *w, false),
        [h, w, "v6"] => (*h, *w, true),
        _ => return None,
    };
    if let Some(j) = what.strip_prefix("vx") {
        let nic = plan.vxlans.get(j.parse::<usize>().ok()?)?.end(host)?;
        return Some(if v6 {
            nic.addr6.to_string()
        } else {
            nic.addr4.to_string()
        });
    }
    if let Some(i) = what.strip_prefix("dev") {
        return (!v6)
            .then(|| plan.links.get(i.parse::<usize>().ok()?)?.end(host))?
            .map(|n| n.dev.clone());
    }
    let nic = plan.links.get(what.parse::<usize>().ok()?)?.end(host)?;
    Some(if v6 {
        nic.addr6.to_string()
    } else {
        nic.addr4.to_string()
    })
}

/// The settings of a `lab_set`, checked against the lab.
fn settings_of(set: &LabSet, spec: &LabSpec) -> Result<Vec<(Setting, String)>, String> {
    let mut out = Vec::new();
    for h in &set.hosts {
        if !spec.hosts.iter().any(|x| x.name == *h) {
            return Err(format!("no host named {h:?}"));
        }
    }
    let hosts: Vec<&str> = if set.hosts.is_empty() {
        spec.hosts.iter().map(|h| h.name.as_str()).collect()
    } else {
        set.hosts.iter().map(String::as_str).collect()
    };
    for (k, v) in &set.sysctl {
        wirespeed_lab::spec::check_lab_sysctl(k, v)?;
        for h in &hosts {
            out.push((
                Setting::Sysctl {
                    host: h.to_string(),
                    key: k.clone(),
                },
                v.clone(),
            ));
        }
    }
    let links: Vec<usize> = if set.links.is_empty() {
        (0..spec.links.len()).collect()
    } else {
        set.links.clone()
    };
    for &l in &links {
        if l >= spec.links.len() {
            return Err(format!(
                "link {l} does not exist (there are {})",
                spec.links.len()
            ));
        }
        for (attr, v, range) in [
            ("mtu", set.mtu, 68..=65535),
            ("gso_max_size", set.gso_max_size, 1024..=524_280),
            ("gro_max_size", set.gro_max_size, 1024..=524_280),
        ] {
            if let Some(v) = v {
                if !range.contains(&v) {
                    return Err(format!(
                        "{attr} {v} out of range {}..={}",
                        range.start(),
                        range.end()
                    ));
                }
                out.push((Setting::Link { link: l, attr }, v.to_string()));
            }
        }
    }
    Ok(out)
}

fn describe_def(d: &CellDef) -> String {
    if let Some(c) = &d.change {
        return c.clone();
    }
    let mut parts = Vec::new();
    if !d.bench.is_empty() {
        parts.push(d.bench.join(" "));
    }
    if let Some(s) = &d.lab_set {
        let mut v = Vec::new();
        for (k, x) in [
            ("mtu", s.mtu),
            ("gso_max_size", s.gso_max_size),
            ("gro_max_size", s.gro_max_size),
        ] {
            if let Some(x) = x {
                v.push(format!("{k} {x}"));
            }
        }
        v.extend(s.sysctl.iter().map(|(k, x)| format!("{k}={x}")));
        parts.push(v.join(", "));
    }
    if let Some(l) = &d.lab {
        parts.push(format!("lab {}", toml::Value::Table(l.clone())).replace('\n', " "));
    }
    if let Some(s) = &d.sweep {
        parts.push(format!("sweep {} {}", s.arg, s.values.join(",")));
    }
    if let Some(t) = &d.target {
        parts.push(format!("target {t}"));
    }
    if parts.is_empty() {
        "no change".into()
    } else {
        parts.join("; ")
    }
}

/// Reads and checks an experiment file; every error names the line and field.
fn load(path: &Path, a: &ExperimentArgs) -> Result<Plan> {
    let text = wirespeed_host::fsroot::read_text_file(path)
        .with_context(|| format!("read experiment file {}", path.display()))?;
    let shown = path.display().to_string();
    let file: ExperimentFile = toml::from_str(&text).map_err(|e| {
        anyhow!(
            "in {shown}: {}",
            e.to_string()
                .trim_end()
                .replace("TOML parse error", "experiment file")
        )
    })?;
    let at = |table: Option<(&str, usize)>, field: &str, msg: String| {
        let what = match table {
            Some((t, _)) if t == "baseline" => format!("[{t}] field `{field}`"),
            Some((t, i)) => format!("[[{t}]] #{} field `{field}`", i + 1),
            None => format!("field `{field}`"),
        };
        match locate(&text, table, field) {
            Some(l) => anyhow!("in {shown}: line {l}, {what}: {msg}"),
            None => anyhow!("in {shown}: {what}: {msg}"),
        }
    };
    let mut base = match &file.lab {
        LabRef::Path(p) => {
            let lp = path.parent().unwrap_or(Path::new(".")).join(p);
            let lt = wirespeed_host::fsroot::read_text_file(&lp)
                .map_err(|e| at(None, "lab", format!("read {}: {e}", lp.display())))?;
            LabSpec::from_toml_str(&lt).with_context(|| format!("in lab file {}", lp.display()))?
        }
        LabRef::Inline(t) => {
            let mut t = t.clone();
            t.entry("name")
                .or_insert_with(|| toml::Value::String("exp".into()));
            let spec: LabSpec = toml::Value::Table(t)
                .try_into()
                .map_err(|e| at(None, "lab", format!("in the inline [lab]: {e}")))?;
            spec.validate()
                .map_err(|e| at(None, "lab", format!("in the inline [lab]: {e}")))?;
            spec
        }
    };
    base.subnet_base = Some(base.base());
    for (field, h) in [("server", &file.server), ("client", &file.client)] {
        if !base.hosts.iter().any(|x| x.name == *h) {
            return Err(at(None, field, format!("the lab has no host {h:?}")));
        }
    }
    if file.server == file.client {
        return Err(at(
            None,
            "client",
            "client and server must be different hosts".into(),
        ));
    }
    let (kind, defs) = match (file.mode, file.cells.is_empty(), file.steps.is_empty()) {
        (_, false, false) => {
            return Err(at(
                Some(("step", 0)),
                "name",
                "use either [[cell]] or [[step]], not both".into(),
            ));
        }
        (Mode::Ladder, true, _) => ("step", &file.steps),
        (Mode::OneAtATime, _, true) => ("cell", &file.cells),
        (Mode::Ladder, false, true) => {
            return Err(at(
                Some(("cell", 0)),
                "name",
                "a ladder has [[step]]s; use mode = \"one-at-a-time\" for [[cell]]s".into(),
            ));
        }
        (Mode::OneAtATime, true, false) => {
            return Err(at(
                Some(("step", 0)),
                "name",
                "[[step]]s make a ladder: add mode = \"ladder\"".into(),
            ));
        }
    };
    let repeats = a.repeats.or(file.repeats).unwrap_or(3);
    if !(1..=100).contains(&repeats) {
        return Err(at(
            None,
            "repeats",
            format!("{repeats} repeats: use 1 to 100"),
        ));
    }
    let duration = a
        .duration
        .clone()
        .or(file.duration.clone())
        .unwrap_or_else(|| "3s".into());
    let warmup = a
        .warmup
        .clone()
        .or(file.warmup.clone())
        .unwrap_or_else(|| "0.5s".into());
    for (field, v) in [("duration", &duration), ("warmup", &warmup)] {
        parse_duration(v).map_err(|e| at(None, field, e.to_string()))?;
    }
    let all: Vec<(Option<(&str, usize)>, &CellDef)> =
        std::iter::once((Some(("baseline", 0)), &file.baseline))
            .chain(defs.iter().enumerate().map(|(i, d)| (Some((kind, i)), d)))
            .collect();
    let plan0 = address(&base).map_err(|e| at(None, "lab", e))?;
    let mut tunes = Vec::new();
    for (i, t) in file.tunes.iter().enumerate() {
        let here = Some(("tune", i));
        if !base.hosts.iter().any(|x| x.name == t.host) {
            return Err(at(
                here,
                "host",
                format!("the lab has no host {:?}", t.host),
            ));
        }
        let mut t = t.clone();
        if t.profile.contains('/') || t.profile.ends_with(".toml") {
            let p = path.parent().unwrap_or(Path::new(".")).join(&t.profile);
            let p = p
                .canonicalize()
                .map_err(|e| at(here, "profile", format!("{}: {e}", p.display())))?;
            t.profile = p.display().to_string();
        }
        for d in &mut t.devs {
            *d = resolve(d, &plan0).map_err(|e| at(here, "devs", e))?;
        }
        tunes.push(t);
    }
    let mut names = std::collections::HashSet::new();
    let mut cells = Vec::new();
    for (idx, (table, def)) in all.iter().enumerate() {
        if def.name.trim().is_empty() || !names.insert(def.name.as_str()) {
            return Err(at(
                *table,
                "name",
                format!("cell names must be unique and not empty: {:?}", def.name),
            ));
        }
        let chain: Vec<&(Option<(&str, usize)>, &CellDef)> = match file.mode {
            Mode::Ladder => all[..=idx].iter().collect(),
            Mode::OneAtATime if idx == 0 => vec![&all[0]],
            Mode::OneAtATime => vec![&all[0], &all[idx]],
        };
        let mut lab_v = toml::Value::try_from(&base).map_err(|e| anyhow!("encode lab: {e}"))?;
        for (t, d) in &chain {
            if let Some(p) = &d.lab {
                if p.contains_key("name") || p.contains_key("subnet_base") {
                    return Err(at(
                        *t,
                        "lab",
                        "a cell's lab change may not rename the lab".into(),
                    ));
                }
                merge_toml(&mut lab_v, &toml::Value::Table(p.clone()));
            }
        }
        let lab: LabSpec = lab_v
            .try_into()
            .map_err(|e| at(*table, "lab", format!("the changed lab is invalid: {e}")))?;
        lab.validate()
            .map_err(|e| at(*table, "lab", format!("the changed lab is invalid: {e}")))?;
        let plan = address(&lab).map_err(|e| at(*table, "lab", e))?;
        let mut settings = BTreeMap::new();
        for (t, d) in &chain {
            if let Some(s) = &d.lab_set {
                for (k, v) in settings_of(s, &lab).map_err(|e| at(*t, "lab_set", e))? {
                    settings.insert(k, v);
                }
            }
        }
        let layers: Vec<&[String]> = chain.iter().map(|(_, d)| d.bench.as_slice()).collect();
        let mut args = merge_args(&layers).map_err(|e| at(*table, "bench", e))?;
        for x in &mut args {
            *x = resolve(x, &plan).map_err(|e| at(*table, "bench", e))?;
        }
        let sweep = chain.iter().rev().find_map(|(_, d)| d.sweep.clone());
        if let Some(s) = &sweep {
            if !s.arg.starts_with('-') || s.values.is_empty() || is_bool_flag(canonical(&s.arg)) {
                return Err(at(*table, "sweep", "a sweep needs a flag that takes a value (e.g. \"--size\") and at least one value".into()));
            }
            split_args(&[s.arg.clone(), s.values[0].clone()])
                .map_err(|e| at(*table, "sweep", e))?;
        }
        let target_t = chain
            .iter()
            .rev()
            .find_map(|(_, d)| d.target.clone())
            .or(file.target.clone())
            .unwrap_or_else(|| format!("{{{}.0}}", file.server));
        let target = resolve(&target_t, &plan).map_err(|e| at(*table, "target", e))?;
        let change = if idx == 0 {
            def.change.clone().unwrap_or_else(|| "baseline".into())
        } else {
            describe_def(def)
        };
        cells.push(Planned {
            name: def.name.clone(),
            change,
            lab,
            settings,
            args,
            target,
            sweep,
        });
    }
    Ok(Plan {
        name: file.name,
        mode: file.mode,
        server: file.server,
        client: file.client,
        repeats,
        duration,
        warmup,
        tunes,
        cells,
    })
}

/// FNV-1a over the plan's JSON: what a resumed run must match.
fn fingerprint(plan: &Plan) -> String {
    let text = serde_json::to_string(plan).unwrap_or_default();
    let h = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    });
    format!("{h:016x}")
}

/// The commands that apply one setting (with `value`) on the lab.
fn setting_commands(lab: &Lab, s: &Setting, value: &str) -> Vec<Vec<String>> {
    match s {
        Setting::Sysctl { host, key } => vec![vec![
            "ip".into(),
            "netns".into(),
            "exec".into(),
            lab.ns(host),
            "sysctl".into(),
            "-q".into(),
            "-w".into(),
            format!("{key}={value}"),
        ]],
        Setting::Link { link, attr } => {
            let Some(p) = lab.plan().links.get(*link) else {
                return Vec::new();
            };
            [(&p.host_a, &p.a.dev), (&p.host_b, &p.b.dev)]
                .iter()
                .map(|(h, dev)| {
                    [
                        "ip",
                        "-n",
                        &lab.ns(h),
                        "link",
                        "set",
                        "dev",
                        dev,
                        attr,
                        value,
                    ]
                    .iter()
                    .map(|x| x.to_string())
                    .collect()
                })
                .collect()
        }
    }
}

/// Settings applied to a lab, undone (in reverse order) on drop.
struct Applied<'a> {
    lab: &'a Lab,
    undo: Vec<(Setting, String)>,
}

impl Applied<'_> {
    fn apply<'a>(lab: &'a Lab, settings: &BTreeMap<Setting, String>) -> Result<Applied<'a>> {
        let mut applied = Applied {
            lab,
            undo: Vec::new(),
        };
        for (s, v) in settings {
            let old = match s {
                Setting::Sysctl { host, key } => {
                    let out = lab
                        .command(host, "sysctl")
                        .args(["-n", key])
                        .output()
                        .with_context(|| format!("read sysctl {key} on {host}"))?;
                    if !out.status.success() {
                        bail!(
                            "read sysctl {key} on host {host}: {}",
                            String::from_utf8_lossy(&out.stderr).trim()
                        );
                    }
                    String::from_utf8_lossy(&out.stdout).trim().to_string()
                }
                Setting::Link { link, attr } => {
                    let l = &lab.spec().links[*link];
                    match *attr {
                        "mtu" => l.mtu.unwrap_or(1500),
                        "gso_max_size" => l.gso_max_size.unwrap_or(65536),
                        _ => l.gro_max_size.unwrap_or(65536),
                    }
                    .to_string()
                }
            };
            for cmd in setting_commands(lab, s, v) {
                wirespeed_lab::run(&cmd)?;
            }
            applied.undo.push((s.clone(), old));
        }
        Ok(applied)
    }
}

impl Drop for Applied<'_> {
    fn drop(&mut self) {
        while let Some((s, v)) = self.undo.pop() {
            for cmd in setting_commands(self.lab, &s, &v) {
                if let Err(e) = wirespeed_lab::run(&cmd) {
                    eprintln!("warning: could not undo a lab change: {e}");
                }
            }
        }
    }
}

/// Catches SIGINT and SIGTERM: the run finishes cleanly at the next
/// opportunity ([`stopped`]).
pub(crate) fn catch_signals() {
    crate::sys::catch_stop_signals();
}

/// Whether SIGINT or SIGTERM asked to stop (after [`catch_signals`]).
pub(crate) fn stopped() -> bool {
    crate::sys::stop_requested()
}

/// Writes `res` to `path` atomically: a temporary file, then a rename.
fn save(res: &ExperimentResults, path: &Path) -> Result<()> {
    let text = serde_json::to_string_pretty(res).context("encode results")?;
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    std::fs::write(&tmp, text + "\n").with_context(|| format!("write {}", tmp.display()))?;
    std::fs::rename(&tmp, path)
        .with_context(|| format!("rename {} to {}", tmp.display(), path.display()))
}

/// Tuning applied with `wirespeed tune apply` in lab namespaces, each with
/// its own journal directory; rolled back (newest first) on drop.
pub(crate) struct Tuned {
    exe: String,
    done: Vec<(String, PathBuf)>,
}

impl Tuned {
    /// Nothing applied yet; `exe` is the wirespeed binary.
    pub(crate) fn new(exe: &str) -> Tuned {
        Tuned {
            exe: exe.to_string(),
            done: Vec::new(),
        }
    }

    /// Runs `wirespeed tune apply --netns NS --state-dir DIR ARGS...` and
    /// returns its output; a failed apply has restored itself already.
    pub(crate) fn apply_in(&mut self, ns: &str, dir: PathBuf, args: &[&str]) -> Result<String> {
        let out = std::process::Command::new(&self.exe)
            // --force: a lab's MTU is what the experiment varies, and
            // nothing in the lab shows it to the path probe (issue 13).
            .args(["tune", "apply", "--force", "--netns", ns])
            .args(args)
            .arg("--state-dir")
            .arg(&dir)
            .output()
            .context("run wirespeed tune apply")?;
        if !out.status.success() {
            bail!(
                "`wirespeed tune apply --netns {ns} {}` failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        self.done.push((ns.to_string(), dir));
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Runs `wirespeed tune apply` for each `[[tune]]` on its host.
    fn apply(lab: &Lab, tunes: &[TuneDef], exe: &str) -> Result<Tuned> {
        let mut t = Tuned::new(exe);
        for (i, d) in tunes.iter().enumerate() {
            let dir = std::env::temp_dir().join(format!("wirespeed-tune-{}-{i}", lab.name()));
            let mut args = vec!["--profile", d.profile.as_str()];
            for dev in &d.devs {
                args.extend(["--dev", dev.as_str()]);
            }
            let out = t.apply_in(&lab.ns(&d.host), dir, &args)?;
            eprintln!(
                "tuned host {} with {}: {}",
                d.host,
                d.profile,
                out.lines().last().unwrap_or("")
            );
        }
        Ok(t)
    }
}

impl Drop for Tuned {
    fn drop(&mut self) {
        while let Some((ns, dir)) = self.done.pop() {
            let ok = std::process::Command::new(&self.exe)
                .args(["tune", "rollback", "--netns", &ns, "--state-dir"])
                .arg(&dir)
                .output()
                .is_ok_and(|o| o.status.success());
            if !ok {
                eprintln!("warning: could not roll back the tuning of {ns}");
            }
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
}

/// The lab of the cells being run and its server. Fields drop in order:
/// the tuning is rolled back and the server stopped before the lab goes.
struct Running {
    spec: LabSpec,
    _tuned: Tuned,
    _server: crate::demo::ServerProc,
    lab: Lab,
}

impl Running {
    fn start(spec: &LabSpec, plan: &Plan, exe: &str) -> Result<Running> {
        let mut s = spec.clone();
        s.name = Lab::unique("exp");
        let lab = Lab::up(&s)?;
        let server = &plan.server;
        let mut cmd = lab.command(server, exe);
        cmd.arg("serve");
        let srv = crate::demo::spawn_server(cmd)
            .with_context(|| format!("start wirespeed serve on host {server}"))?;
        let tuned = Tuned::apply(&lab, &plan.tunes, exe)?;
        Ok(Running {
            spec: spec.clone(),
            _tuned: tuned,
            _server: srv,
            lab,
        })
    }
}

/// Runs one bench in the client's namespace and returns its results.
fn bench_once(lab: &Lab, plan: &Plan, exe: &str, target: &str, args: &[String]) -> Result<Report> {
    let mut cmd = lab.command(&plan.client, exe);
    cmd.args(["bench", target, "--json"]);
    let has = |f: &str| {
        args.iter()
            .any(|a| canonical(a.split('=').next().unwrap_or("")) == f)
    };
    if !has("--duration") {
        cmd.args(["--duration", &plan.duration]);
    }
    if !has("--warmup") {
        cmd.args(["--warmup", &plan.warmup]);
    }
    cmd.args(args);
    crate::sys::die_with_parent(&mut cmd);
    let out = cmd
        .stdin(std::process::Stdio::null())
        .output()
        .context("run wirespeed bench in the lab")?;
    if !out.status.success() {
        if stopped() {
            bail!("interrupted");
        }
        bail!(
            "`wirespeed bench {target} {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    serde_json::from_slice(&out.stdout).context("parse the JSON of wirespeed bench")
}

/// Runs every repeat of one cell (every point of its sweep).
fn run_cell(run: &Running, plan: &Plan, c: &Planned, exe: &str, label: &str) -> Result<CellResult> {
    let _applied = Applied::apply(&run.lab, &c.settings)?;
    let xs: Vec<Option<String>> = match &c.sweep {
        Some(s) => s.values.iter().cloned().map(Some).collect(),
        None => vec![None],
    };
    let mut points: Vec<Point> = Vec::new();
    for x in &xs {
        let args = match (&c.sweep, x) {
            (Some(s), Some(v)) => {
                let sw = [s.arg.clone(), v.clone()];
                merge_args(&[&c.args, &sw]).map_err(anyhow::Error::msg)?
            }
            _ => c.args.clone(),
        };
        for r in 0..plan.repeats {
            if stopped() {
                bail!("interrupted");
            }
            let report = bench_once(&run.lab, plan, exe, &c.target, &args)?;
            let many = report.results.len() > 1;
            for res in report.results {
                let px = if many {
                    Some(human_size(res.spec.request_size as u64))
                } else {
                    x.clone()
                };
                let m = wirespeed_report::Metric::of(&res);
                eprintln!(
                    "{label} {}{} run {}/{}: {}",
                    c.name,
                    px.as_deref().map(|v| format!(" @ {v}")).unwrap_or_default(),
                    r + 1,
                    plan.repeats,
                    m.human(m.value(&res))
                );
                let xv = px
                    .as_deref()
                    .and_then(|v| parse_size(v).ok().map(|b| b as f64));
                match points.iter_mut().find(|p| p.x == px) {
                    Some(p) => p.runs.push(res),
                    None => points.push(Point {
                        x: px.clone(),
                        x_value: xv.or_else(|| many.then_some(res.spec.request_size as f64)),
                        runs: vec![res],
                        ..Point::default()
                    }),
                }
            }
        }
    }
    let mut lab_changes: Vec<String> = c
        .settings
        .iter()
        .map(|(s, v)| match s {
            Setting::Sysctl { host, key } => format!("{host}: {key}={v}"),
            Setting::Link { link, attr } => format!("link {link}: {attr} {v}"),
        })
        .collect();
    if c.lab != plan.cells[0].lab {
        lab_changes.push("own lab build (topology change)".into());
    }
    Ok(CellResult {
        name: c.name.clone(),
        change: c.change.clone(),
        bench_args: std::iter::once(c.target.clone())
            .chain(c.args.iter().cloned())
            .collect(),
        lab_changes,
        sweep_arg: c
            .sweep
            .as_ref()
            .map(|s| s.arg.clone())
            .or_else(|| (points.len() > 1).then(|| "--size".to_string())),
        points,
        ..CellResult::default()
    })
}

/// The end-of-run table: one row per cell.
pub fn summary_table(res: &ExperimentResults) -> String {
    let ladder = res.mode == Mode::Ladder;
    let rr = res
        .cells
        .iter()
        .any(|c| c.points.iter().any(|p| p.latency.is_some()));
    let mut head = vec!["cell", "median", "min - max", "spread", "vs baseline"];
    if ladder {
        head.push("vs previous");
    }
    if rr {
        head.push("p50 latency");
    }
    let mut t = new_table(&head, 1);
    for c in &res.cells {
        let m = c.metric;
        let mut row = vec![
            c.name.clone(),
            m.human(c.stats.median),
            format!("{} - {}", m.human(c.stats.min), m.human(c.stats.max)),
            format!("{:.1}%", c.stats.spread_pct),
            if c.name == res.baseline {
                "baseline".into()
            } else {
                pct_text(c.vs_baseline_pct)
            },
        ];
        if ladder {
            row.push(pct_text(c.vs_previous_pct));
        }
        if rr {
            row.push(
                c.points
                    .last()
                    .and_then(|p| p.latency.as_ref())
                    .map(|l| human_us(l.p50_us))
                    .unwrap_or_else(|| "-".into()),
            );
        }
        t.add_row(row);
    }
    format!("{t}\n")
}

fn print_plan(plan: &Plan) {
    println!(
        "experiment {} ({}), {} repeat(s) of {} (+{} warm-up), server {} client {}",
        plan.name,
        plan.mode.as_str(),
        plan.repeats,
        plan.duration,
        plan.warmup,
        plan.server,
        plan.client
    );
    for t in &plan.tunes {
        println!(
            "after each lab build, on {}: wirespeed tune apply --profile {}{} (rolled back after)",
            t.host,
            t.profile,
            t.devs
                .iter()
                .map(|d| format!(" --dev {d}"))
                .collect::<String>()
        );
    }
    for (i, c) in plan.cells.iter().enumerate() {
        let rebuild = if i > 0 && c.lab != plan.cells[i - 1].lab {
            " [new lab build]"
        } else {
            ""
        };
        println!("{i}. {}: {}{rebuild}", c.name, c.change);
        println!("   wirespeed bench {} {}", c.target, c.args.join(" "));
        for (s, v) in &c.settings {
            match s {
                Setting::Sysctl { host, key } => println!("   on {host}: sysctl {key}={v}"),
                Setting::Link { link, attr } => println!("   link {link}: {attr} {v}"),
            }
        }
        if let Some(s) = &c.sweep {
            println!("   sweep {} over {}", s.arg, s.values.join(", "));
        }
    }
}

/// Runs `wirespeed experiment`.
pub fn run(a: ExperimentArgs) -> Result<()> {
    let plan = load(&a.file, &a)?;
    if a.dry_run {
        print_plan(&plan);
        return Ok(());
    }
    if !wirespeed_lab::is_root() {
        bail!("experiments build a lab of network namespaces: run as root (or under sudo)");
    }
    let out = a.out.clone().unwrap_or_else(|| {
        let stem = a
            .file
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("experiment");
        PathBuf::from(format!("{stem}.results.json"))
    });
    let fp = fingerprint(&plan);
    let mut res = ExperimentResults {
        schema_version: EXPERIMENT_SCHEMA_VERSION,
        name: plan.name.clone(),
        mode: plan.mode,
        fingerprint: fp.clone(),
        baseline: plan.cells[0].name.clone(),
        repeats: plan.repeats,
        tool_version: env!("CARGO_PKG_VERSION").into(),
        cells: Vec::new(),
    };
    let mut done: BTreeMap<String, CellResult> = BTreeMap::new();
    if out.exists() && !a.fresh {
        let text =
            std::fs::read_to_string(&out).with_context(|| format!("read {}", out.display()))?;
        let old: ExperimentResults = serde_json::from_str(&text).with_context(|| {
            format!("{} is not an experiment results file; use --fresh to overwrite it or --out elsewhere", out.display())
        })?;
        if old.name != plan.name || old.fingerprint != fp {
            bail!(
                "{} holds results of another experiment or of a changed definition ({} {} vs {} {}): use --fresh to start over, or --out elsewhere",
                out.display(),
                old.name,
                old.fingerprint,
                plan.name,
                fp
            );
        }
        done = old.cells.into_iter().map(|c| (c.name.clone(), c)).collect();
    }
    catch_signals();
    let exe = std::env::current_exe().context("find the wirespeed binary")?;
    let exe = exe
        .to_str()
        .context("the wirespeed binary's path is not UTF-8")?
        .to_string();
    let mut running: Option<Running> = None;
    let n = plan.cells.len();
    for (i, c) in plan.cells.iter().enumerate() {
        if let Some(d) = done.remove(&c.name) {
            eprintln!("skipping finished cell {}", c.name);
            res.cells.push(d);
            continue;
        }
        if stopped() {
            break;
        }
        if running.as_ref().is_none_or(|r| r.spec != c.lab) {
            // The old lab (and its server) goes before the new one is built.
            drop(running.take());
            eprintln!("building the lab for cell {}", c.name);
            running = Some(Running::start(&c.lab, &plan, &exe)?);
        }
        let Some(r) = running.as_ref() else { continue };
        let cell = match run_cell(r, &plan, c, &exe, &format!("[{}/{n}]", i + 1)) {
            Ok(cell) => cell,
            Err(e) if stopped() => {
                eprintln!("stopped during cell {}: {e:#}", c.name);
                break;
            }
            Err(e) => {
                return Err(e.context(format!(
                    "cell {} failed; finished cells are saved in {}",
                    c.name,
                    out.display()
                )));
            }
        };
        res.cells.push(cell);
        finalize(&mut res);
        save(&res, &out)?;
    }
    drop(running);
    finalize(&mut res);
    if res.cells.len() < n {
        save(&res, &out)?;
        bail!(
            "interrupted: {} of {n} cells finished, saved in {}; run the same command again to resume",
            res.cells.len(),
            out.display()
        );
    }
    save(&res, &out)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&res)?);
    } else {
        print!("{}", summary_table(&res));
        println!("results saved in {}", out.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(xs: &[&str]) -> Vec<String> {
        xs.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn later_flags_replace_earlier_ones_and_aliases_count() {
        let a = v(&["--paths", "x=y", "-F", "1", "--zerocopy"]);
        let b = v(&["--flows", "4", "--paths=p=q"]);
        let m = merge_args(&[&a, &b]).unwrap();
        assert_eq!(m, v(&["--zerocopy", "--flows", "4", "--paths=p=q"]));
        assert!(
            merge_args(&[&v(&["10.0.0.1"])])
                .unwrap_err()
                .contains("not a flag")
        );
        assert!(
            merge_args(&[&v(&["-d"])])
                .unwrap_err()
                .contains("needs a value")
        );
        assert!(merge_args(&[&v(&["--json"])]).is_err());
    }

    #[test]
    fn an_unknown_bench_flag_is_named_as_unknown() {
        for bad in [
            &["--bogus", "1"][..],
            &["--flows", "2", "--zerocopyy"],
            &["-Z"],
        ] {
            let e = merge_args(&[&v(bad)]).unwrap_err();
            assert!(e.contains("unknown bench flag"), "{bad:?}: {e}");
            assert!(!e.contains("needs a value"), "{bad:?}: {e}");
        }
        // Every spelling clap knows is known: aliases, shorts, hidden short aliases.
        let m = merge_args(&[&v(&["-P", "2", "--cc", "cubic", "-R", "--parallel", "3"])]).unwrap();
        assert_eq!(m, v(&["--cc", "cubic", "-R", "--parallel", "3"]));
        assert!(merge_args(&[&v(&["--skip-rx-copy", "--probe-rr"])]).is_ok());
    }

    #[test]
    fn placeholders_resolve_to_lab_addresses() {
        let mut s = LabSpec::two_hosts("x", 2, None);
        s.subnet_base = Some(61);
        s.vxlans.push(wirespeed_lab::VxlanSpec {
            link: 0,
            ..Default::default()
        });
        let p = address(&s).unwrap();
        assert_eq!(
            resolve("{a.0}={b.1},{a.dev1} {b.0.v6} {b.vx0}", &p).unwrap(),
            "10.61.0.1=10.61.1.2,eth1 fd00:10:61::2 10.61.200.2"
        );
        assert!(
            resolve("{c.0}", &p)
                .unwrap_err()
                .contains("unknown placeholder {c.0}")
        );
        assert!(resolve("{a.5}", &p).is_err());
        assert!(resolve("{a.0", &p).is_err());
    }

    #[test]
    fn lab_patches_merge_tables_and_arrays_of_tables() {
        let mut base: toml::Value = toml::from_str(
            "name = \"x\"\n[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n[[link]]\na = \"a\"\nb = \"b\"\nrate = \"1gbit\"\n",
        )
        .unwrap();
        let patch: toml::Value =
            toml::from_str("host = [{ source_routing = true }, { source_routing = true }]\nlink = [{ mtu = 9000 }]\n")
                .unwrap();
        merge_toml(&mut base, &patch);
        let spec: LabSpec = base.try_into().unwrap();
        assert!(spec.hosts.iter().all(|h| h.source_routing));
        assert_eq!(spec.hosts[1].name, "b");
        assert_eq!(spec.links[0].mtu, Some(9000));
        assert_eq!(spec.links[0].rate.as_deref(), Some("1gbit"));
    }

    fn args() -> ExperimentArgs {
        ExperimentArgs {
            file: PathBuf::new(),
            out: None,
            repeats: None,
            duration: None,
            warmup: None,
            resume: false,
            fresh: false,
            json: false,
            dry_run: true,
        }
    }

    fn load_text(text: &str) -> Result<Plan> {
        let dir = std::env::temp_dir().join(format!("ws-exp-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let f = dir.join(format!(
            "e{}.toml",
            N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        std::fs::write(&f, text)?;
        let r = load(&f, &args());
        let _ = std::fs::remove_file(&f);
        r
    }

    const LADDER: &str = r#"name = "ladder"
mode = "ladder"
repeats = 2

[lab]
name = "l"
subnet_base = 70
host = [{ name = "a" }, { name = "b" }]
link = [{ a = "a", b = "b", rate = "1gbit" }, { a = "a", b = "b", rate = "1gbit" }]

[baseline]
name = "one NIC"
bench = ["--paths", "{a.0}={b.0}"]

[[step]]
name = "two NICs"
bench = ["--paths", "{a.0}={b.0},{a.1}={b.1}"]
lab = { host = [{ source_routing = true }, { source_routing = true }] }

[[step]]
name = "mtu"
lab_set = { mtu = 9000 }

[[step]]
name = "flows"
bench = ["-F", "8", "-T", "2"]
"#;

    #[test]
    fn a_ladder_accumulates_its_steps() {
        let p = load_text(LADDER).unwrap();
        assert_eq!(p.repeats, 2);
        let last = &p.cells[3];
        assert_eq!(
            last.args,
            v(&[
                "--paths",
                "10.70.0.1=10.70.0.2,10.70.1.1=10.70.1.2",
                "--flows",
                "8",
                "--threads",
                "2"
            ])
            .into_iter()
            .map(|s| s.replace("--flows", "-F").replace("--threads", "-T"))
            .collect::<Vec<_>>()
        );
        assert_eq!(last.settings.len(), 2, "mtu on both links");
        assert!(last.lab.hosts.iter().all(|h| h.source_routing));
        assert!(!p.cells[0].lab.hosts[0].source_routing);
        assert_eq!(p.cells[0].target, "10.70.0.2");
        assert_eq!(p.cells[2].lab, p.cells[1].lab);
    }

    #[test]
    fn tune_entries_resolve_devices_and_name_bad_hosts() {
        let text = LADDER.replace(
            "[baseline]",
            "[[tune]]\nhost = \"b\"\nprofile = \"tpu-multinic\"\ndevs = [\"{b.dev1}\"]\n\n[baseline]",
        );
        let p = load_text(&text).unwrap();
        assert_eq!(p.tunes.len(), 1);
        assert_eq!(p.tunes[0].devs, v(&["eth1"]));
        assert_eq!(p.tunes[0].profile, "tpu-multinic");
        let e = load_text(&text.replace("host = \"b\"", "host = \"z\""))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 12") && e.contains("[[tune]] #1 field `host`"),
            "{e}"
        );
        let e = load_text(&text.replace("{b.dev1}", "{b.dev9}"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 14") && e.contains("`devs`"), "{e}");
    }

    #[test]
    fn bad_files_name_the_line_and_field() {
        let e = load_text(&LADDER.replace("{a.1}={b.1}", "{a.1}={c.1}"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 17") && e.contains("[[step]] #1 field `bench`") && e.contains("{c.1}"),
            "{e}"
        );
        let e = load_text(&LADDER.replace("mtu = 9000", "mtu = 9"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 22") && e.contains("lab_set"), "{e}");
        let e = load_text(&LADDER.replace("name = \"one NIC\"", "name = \"mtu\""))
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 21") && e.contains("unique"), "{e}");
        let e = load_text(&LADDER.replace("repeats = 2", "repeats = 0"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 3") && e.contains("repeats"), "{e}");
        let e = load_text(&LADDER.replace("bench = [\"-F\"", "bnch = [\"-F\""))
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 26") && e.contains("bnch"), "{e}");
        let e = load_text(&LADDER.replace("mode = \"ladder\"\n", ""))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("mode = \\\"ladder\\\"") || e.contains("mode = \"ladder\""),
            "{e}"
        );
    }
}
