//! Experiment files: a matrix of configurations, each a change against
//! a named baseline (one variable at a time) or a ladder of steps that
//! add up, every configuration repeated, run in a lab ([`crate::runner`]).
//! This module reads and checks a file into a [`Plan`]: lab patches
//! merged, placeholders resolved, each cell's bench arguments layered
//! through bench's own parser. The format is in docs/experiment-file.md.

use crate::cell::BenchArgs;
use crate::error::{CellError, Context, ExperimentError, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use wirespeed_lab::LabError;
use wirespeed_lab::LabSpec;
use wirespeed_lab::plan::{AddressError, Addressing, address};
use wirespeed_lab::spec::{SysctlError, locate};
use wirespeed_report::experiment::Mode;
use wirespeed_types::spec::parse_duration;

/// What the command line overrides in the file.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// Repeats per cell.
    pub repeats: Option<u32>,
    /// Measured time per run, e.g. 2s.
    pub duration: Option<String>,
    /// Warm-up per run.
    pub warmup: Option<String>,
}

/// How a cell changes the lab in place (applied before it runs, undone after).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LabSet {
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
pub(crate) struct Sweep {
    pub(crate) arg: String,
    pub(crate) values: Vec<String>,
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
pub(crate) struct TuneDef {
    pub(crate) host: String,
    pub(crate) profile: String,
    #[serde(default)]
    pub(crate) devs: Vec<String>,
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
pub(crate) enum Setting {
    Sysctl { host: String, key: String },
    Link { link: usize, attr: &'static str },
}

/// A cell's in-place settings: each setting and its value.
pub(crate) type Settings = BTreeMap<Setting, String>;

/// A cell ready to run: everything merged and every placeholder resolved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Planned {
    pub(crate) name: String,
    pub(crate) change: String,
    pub(crate) lab: LabSpec,
    pub(crate) settings: Settings,
    /// The bench arguments as a person would type them (beside the
    /// runner's duration and warm-up).
    pub(crate) args: Vec<String>,
    /// The same, typed: every layer applied through bench's parser.
    #[serde(skip)]
    pub(crate) bench: BenchArgs,
    pub(crate) target: String,
    pub(crate) sweep: Option<Sweep>,
}

/// The whole experiment, checked: what [`crate::runner::run`] runs.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    pub(crate) name: String,
    pub(crate) mode: Mode,
    pub(crate) server: String,
    pub(crate) client: String,
    pub(crate) repeats: u32,
    pub(crate) duration: String,
    pub(crate) warmup: String,
    pub(crate) tunes: Vec<TuneDef>,
    pub(crate) cells: Vec<Planned>,
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

/// Why one field of an experiment file is refused; the parser says where
/// ([`ExperimentError::Field`]).
#[derive(Debug, thiserror::Error)]
pub enum FieldError {
    /// A placeholder with no closing brace, in this text.
    #[error("unclosed placeholder in {0:?}")]
    Unclosed(String),
    /// A placeholder the lab has no value for.
    #[error(
        "unknown placeholder {{{0}}}: use {{HOST.N}}, {{HOST.N.v6}}, {{HOST.devN}}, {{HOST.vxJ}} or {{HOST.vxJ.v6}} (N a link index, J an overlay index)"
    )]
    UnknownPlaceholder(String),
    /// A `lab_set` names a host the lab does not have.
    #[error("no host named {0:?}")]
    NoHost(String),
    /// A `lab_set` names a link the lab does not have.
    #[error("link {link} does not exist (there are {count})")]
    NoLink {
        /// The link named.
        link: usize,
        /// How many links the lab has.
        count: usize,
    },
    /// A `lab_set` value outside what the attribute takes.
    #[error("{attr} {value} out of range {}..={}", range.start(), range.end())]
    OutOfRange {
        /// The attribute, e.g. "mtu".
        attr: &'static str,
        /// The value given.
        value: u32,
        /// What it takes.
        range: RangeInclusive<u32>,
    },
    /// A sysctl a lab host may not set.
    #[error(transparent)]
    Sysctl(#[from] SysctlError),
    /// The lab (as a cell changes it) cannot be addressed.
    #[error(transparent)]
    Address(#[from] AddressError),
    /// The lab file could not be read.
    #[error("read {}: {error}", path.display())]
    ReadLab {
        /// The lab file.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
    /// A tune profile's path does not resolve.
    #[error("{}: {error}", path.display())]
    Profile {
        /// The path, anchored at the experiment file.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
    /// The inline `[lab]` does not decode into a lab.
    #[error("in the inline [lab]: {0}")]
    InlineToml(toml::de::Error),
    /// The inline `[lab]` is not a valid lab.
    #[error("in the inline [lab]: {0}")]
    InlineLab(LabError),
    /// A cell's lab change leaves something that does not decode into a lab.
    #[error("the changed lab is invalid: {0}")]
    ChangedToml(toml::de::Error),
    /// A cell's lab change leaves an invalid lab.
    #[error("the changed lab is invalid: {0}")]
    ChangedLab(LabError),
    /// A run duration that does not parse.
    #[error(transparent)]
    Duration(#[from] wirespeed_types::Invalid),
    /// Bench arguments refused by [`crate::cell`]'s parser, in its words.
    #[error(transparent)]
    Cell(CellError),
}

/// Replaces `{HOST.N}`, `{HOST.N.v6}`, `{HOST.devN}`, `{HOST.vxJ}` and
/// `{HOST.vxJ.v6}` by the lab's addresses and device names.
fn resolve(s: &str, plan: &Addressing) -> Result<String, FieldError> {
    let mut out = String::new();
    let mut rest = s;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let close = rest[open..]
            .find('}')
            .ok_or_else(|| FieldError::Unclosed(s.to_string()))?;
        let key = &rest[open + 1..open + close];
        out.push_str(
            &placeholder(key, plan)
                .ok_or_else(|| FieldError::UnknownPlaceholder(key.to_string()))?,
        );
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
fn settings_of(set: &LabSet, spec: &LabSpec) -> Result<Vec<(Setting, String)>, FieldError> {
    let mut out = Vec::new();
    for h in &set.hosts {
        if !spec.hosts.iter().any(|x| x.name == *h) {
            return Err(FieldError::NoHost(h.clone()));
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
            return Err(FieldError::NoLink {
                link: l,
                count: spec.links.len(),
            });
        }
        for (attr, v, range) in [
            ("mtu", set.mtu, 68..=65535),
            ("gso_max_size", set.gso_max_size, 1024..=524_280),
            ("gro_max_size", set.gro_max_size, 1024..=524_280),
        ] {
            if let Some(v) = v {
                if !range.contains(&v) {
                    return Err(FieldError::OutOfRange {
                        attr,
                        value: v,
                        range,
                    });
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
pub fn load(path: &Path, a: &Overrides) -> Result<Plan> {
    let text = wirespeed_host::fsroot::read_text_file(path)
        .ctx(|| format!("read experiment file {}", path.display()))?;
    parse(&text, path, a, Files::Read)
}

/// Checks an experiment file's `text` as [`load`] does, reading no file
/// and touching no host: `origin` only names it in errors and anchors
/// relative paths. A lab given as a file path is an error (inline it as
/// `[lab]`); a tune profile given as a path is kept, not looked up.
pub fn parse_str(text: &str, origin: &Path, a: &Overrides) -> Result<Plan> {
    parse(text, origin, a, Files::None)
}

/// Whether the parser may read the files an experiment file names.
#[derive(Clone, Copy, PartialEq)]
enum Files {
    /// Read an external lab file, resolve tune profile paths ([`load`]).
    Read,
    /// Read nothing ([`parse_str`]).
    None,
}

/// Where in an experiment file an error points: a `[table]` (or the nth
/// `[[table]]`), or the top level.
type Place<'a> = Option<(&'a str, usize)>;

/// A cell definition and where it is in the file.
type Layer<'a> = (Place<'a>, &'a CellDef);

/// Makes [`parse`]'s errors: each names the file, the line and the field.
struct Errs<'a> {
    text: &'a str,
    shown: String,
}

impl Errs<'_> {
    /// "in FILE: line L, [[TABLE]] #N field `FIELD`" (no line when the
    /// field is not in the text).
    fn place(&self, table: Place<'_>, field: &str) -> String {
        let shown = &self.shown;
        let what = match table {
            Some((t, _)) if t == "baseline" => format!("[{t}] field `{field}`"),
            Some((t, i)) => format!("[[{t}]] #{} field `{field}`", i + 1),
            None => format!("field `{field}`"),
        };
        match locate(self.text, table, field) {
            Some(l) => format!("in {shown}: line {l}, {what}"),
            None => format!("in {shown}: {what}"),
        }
    }

    /// A refusal this parser words itself, at `field` of `table`.
    fn at(&self, table: Place<'_>, field: &str, msg: String) -> ExperimentError {
        ExperimentError::File(format!("{}: {msg}", self.place(table, field)))
    }

    /// A typed refusal at `field` of `table`.
    fn field(
        &self,
        table: Place<'_>,
        field: &str,
        error: impl Into<FieldError>,
    ) -> ExperimentError {
        ExperimentError::Field {
            place: self.place(table, field),
            error: Box::new(error.into()),
        }
    }
}

/// The checks behind [`load`] and [`parse_str`].
fn parse(text: &str, path: &Path, a: &Overrides, files: Files) -> Result<Plan> {
    let er = Errs {
        text,
        shown: path.display().to_string(),
    };
    let file: ExperimentFile = toml::from_str(text).map_err(|e| {
        ExperimentError::File(format!(
            "in {}: {}",
            er.shown,
            e.to_string()
                .trim_end()
                .replace("TOML parse error", "experiment file")
        ))
    })?;
    let mut base = base_lab(&file, path, files, &er)?;
    base.subnet_base = Some(base.base());
    for (field, h) in [("server", &file.server), ("client", &file.client)] {
        if !base.hosts.iter().any(|x| x.name == *h) {
            return Err(er.at(None, field, format!("the lab has no host {h:?}")));
        }
    }
    if file.server == file.client {
        return Err(er.at(
            None,
            "client",
            "client and server must be different hosts".into(),
        ));
    }
    let (kind, defs) = cell_defs(&file, &er)?;
    let (repeats, duration, warmup) = run_settings(&file, a, &er)?;
    if defs.len() > MAX_CELLS {
        return Err(er.at(
            Some((kind, MAX_CELLS)),
            "name",
            format!(
                "{} [[{kind}]]s: an experiment has at most {MAX_CELLS} besides the baseline",
                defs.len()
            ),
        ));
    }
    let all: Vec<Layer<'_>> = std::iter::once((Some(("baseline", 0)), &file.baseline))
        .chain(defs.iter().enumerate().map(|(i, d)| (Some((kind, i)), d)))
        .collect();
    let plan0 = address(&base).map_err(|e| er.field(None, "lab", e))?;
    let tunes = plan_tunes(&file, path, files, &base, &plan0, &er)?;
    let reference = runner_args(&duration, &warmup);
    let cells = plan_cells(&file, &all, &base, &reference, &er)?;
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

/// The experiment's lab before any cell changes it: read from its file
/// (with [`Files::Read`]) or inline.
fn base_lab(file: &ExperimentFile, path: &Path, files: Files, er: &Errs) -> Result<LabSpec> {
    Ok(match &file.lab {
        LabRef::Path(p) => {
            let lp = path.parent().unwrap_or(Path::new(".")).join(p);
            if files == Files::None {
                return Err(er.at(
                    None,
                    "lab",
                    format!(
                        "the lab is the file {}, which is not read when parsing text: inline it as [lab]",
                        lp.display()
                    ),
                ));
            }
            let lt = wirespeed_host::fsroot::read_text_file(&lp).map_err(|error| {
                let path = lp.clone();
                er.field(None, "lab", FieldError::ReadLab { path, error })
            })?;
            LabSpec::from_toml_str(&lt).ctx(|| format!("in lab file {}", lp.display()))?
        }
        LabRef::Inline(t) => {
            let mut t = t.clone();
            t.entry("name")
                .or_insert_with(|| toml::Value::String("exp".into()));
            let spec: LabSpec = toml::Value::Table(t)
                .try_into()
                .map_err(|e| er.field(None, "lab", FieldError::InlineToml(e)))?;
            spec.validate()
                .map_err(|e| er.field(None, "lab", FieldError::InlineLab(e)))?;
            spec
        }
    })
}

/// Which table the cells are in (`cell` or `step`) and the cells, as
/// the mode asks.
fn cell_defs<'f>(file: &'f ExperimentFile, er: &Errs) -> Result<(&'static str, &'f Vec<CellDef>)> {
    Ok(
        match (file.mode, file.cells.is_empty(), file.steps.is_empty()) {
            (_, false, false) => {
                return Err(er.at(
                    Some(("step", 0)),
                    "name",
                    "use either [[cell]] or [[step]], not both".into(),
                ));
            }
            (Mode::Ladder, true, _) => ("step", &file.steps),
            (Mode::OneAtATime, _, true) => ("cell", &file.cells),
            (Mode::Ladder, false, true) => {
                return Err(er.at(
                    Some(("cell", 0)),
                    "name",
                    "a ladder has [[step]]s; use mode = \"one-at-a-time\" for [[cell]]s".into(),
                ));
            }
            (Mode::OneAtATime, true, false) => {
                return Err(er.at(
                    Some(("step", 0)),
                    "name",
                    "[[step]]s make a ladder: add mode = \"ladder\"".into(),
                ));
            }
        },
    )
}

/// Repeats, duration and warm-up: the command line's, else the file's,
/// else the defaults; checked.
fn run_settings(file: &ExperimentFile, a: &Overrides, er: &Errs) -> Result<(u32, String, String)> {
    let repeats = a.repeats.or(file.repeats).unwrap_or(3);
    if !(1..=100).contains(&repeats) {
        return Err(er.at(None, "repeats", format!("{repeats} repeats: use 1 to 100")));
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
        parse_duration(v).map_err(|e| er.field(None, field, e))?;
    }
    Ok((repeats, duration, warmup))
}

/// The `[[tune]]`s checked, their profile paths anchored at the file and
/// their devices resolved in the base lab's addressing `plan0`.
fn plan_tunes(
    file: &ExperimentFile,
    path: &Path,
    files: Files,
    base: &LabSpec,
    plan0: &Addressing,
    er: &Errs,
) -> Result<Vec<TuneDef>> {
    let mut tunes = Vec::new();
    for (i, t) in file.tunes.iter().enumerate() {
        let here = Some(("tune", i));
        if !base.hosts.iter().any(|x| x.name == t.host) {
            return Err(er.at(here, "host", format!("the lab has no host {:?}", t.host)));
        }
        let mut t = t.clone();
        if t.profile.contains('/') || t.profile.ends_with(".toml") {
            let mut p = path.parent().unwrap_or(Path::new(".")).join(&t.profile);
            if files == Files::Read {
                p = p.canonicalize().map_err(|error| {
                    let path = p.clone();
                    er.field(here, "profile", FieldError::Profile { path, error })
                })?;
            }
            t.profile = p.display().to_string();
        }
        for d in &mut t.devs {
            *d = resolve(d, plan0).map_err(|e| er.field(here, "devs", e))?;
        }
        tunes.push(t);
    }
    Ok(tunes)
}

/// Every cell (`all`, the baseline first) merged with the cells it builds
/// on, resolved and checked.
fn plan_cells(
    file: &ExperimentFile,
    all: &[Layer<'_>],
    base: &LabSpec,
    reference: &BenchArgs,
    er: &Errs,
) -> Result<Vec<Planned>> {
    let mut names = std::collections::HashSet::new();
    let mut cells: Vec<Planned> = Vec::new();
    let mut configurations = 0;
    // The addressing the previous cell's bench arguments were resolved in.
    let mut prev_plan: Option<Addressing> = None;
    for (idx, (table, def)) in all.iter().enumerate() {
        if def.name.trim().is_empty() || !names.insert(def.name.as_str()) {
            return Err(er.at(
                *table,
                "name",
                format!("cell names must be unique and not empty: {:?}", def.name),
            ));
        }
        let chain: Vec<&Layer<'_>> = match file.mode {
            Mode::Ladder => all[..=idx].iter().collect(),
            Mode::OneAtATime if idx == 0 => vec![&all[0]],
            Mode::OneAtATime => vec![&all[0], &all[idx]],
        };
        let lab = cell_lab(base, &chain, *table, er)?;
        let plan = address(&lab).map_err(|e| er.field(*table, "lab", e))?;
        let settings = cell_settings(&chain, &lab, er)?;
        // Bench's defaults, the runner's duration and warm-up, then each
        // layer of the chain, placeholders resolved, through bench's parser.
        // A ladder step in the same addressing as the step before starts
        // from that step's arguments (the same layers, resolved alike), so
        // a long ladder costs linear, not quadratic, time.
        let (start, layers) = match (file.mode, cells.last()) {
            (Mode::Ladder, Some(prev)) if prev_plan.as_ref() == Some(&plan) => {
                (prev.bench.clone(), &chain[chain.len() - 1..])
            }
            _ => (reference.clone(), &chain[..]),
        };
        let bench = cell_bench(start, layers, &plan, er)?;
        crate::cell::spec_from(&bench)
            .map_err(|e| er.field(*table, "bench", FieldError::Cell(e)))?;
        for h in bench.loader_hosts().unwrap_or_default() {
            if !lab.hosts.iter().any(|x| x.name == h) {
                let e = format!("--loaders-from names {h:?}, which is not a host of the lab");
                return Err(er.at(*table, "bench", e));
            }
        }
        let sweep = cell_sweep(&chain, &plan, *table, er)?;
        configurations += sweep.as_ref().map_or(1, |s| s.values.len().max(1));
        check_sweep(&bench, sweep.as_ref(), configurations, *table, er)?;
        let target_t = chain
            .iter()
            .rev()
            .find_map(|(_, d)| d.target.clone())
            .or(file.target.clone())
            .unwrap_or_else(|| format!("{{{}.0}}", file.server));
        let target = resolve(&target_t, &plan).map_err(|e| er.field(*table, "target", e))?;
        let change = if idx == 0 {
            def.change.clone().unwrap_or_else(|| "baseline".into())
        } else {
            describe_def(def)
        };
        prev_plan = Some(plan);
        cells.push(Planned {
            name: def.name.clone(),
            change,
            lab,
            settings,
            args: bench.argv_from(reference),
            bench,
            target,
            sweep,
        });
    }
    Ok(cells)
}

/// The base lab with each of `chain`'s lab changes merged in, checked.
fn cell_lab(base: &LabSpec, chain: &[&Layer<'_>], table: Place<'_>, er: &Errs) -> Result<LabSpec> {
    let mut lab_v = toml::Value::try_from(base).ctx(|| "encode lab".into())?;
    for (t, d) in chain {
        if let Some(p) = &d.lab {
            if p.contains_key("name") || p.contains_key("subnet_base") {
                return Err(er.at(
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
        .map_err(|e| er.field(table, "lab", FieldError::ChangedToml(e)))?;
    lab.validate()
        .map_err(|e| er.field(table, "lab", FieldError::ChangedLab(e)))?;
    Ok(lab)
}

/// The in-place settings of `chain`'s `lab_set`s, later ones winning.
fn cell_settings(chain: &[&Layer<'_>], lab: &LabSpec, er: &Errs) -> Result<Settings> {
    let mut settings = BTreeMap::new();
    for (t, d) in chain {
        if let Some(s) = &d.lab_set {
            for (k, v) in settings_of(s, lab).map_err(|e| er.field(*t, "lab_set", e))? {
                settings.insert(k, v);
            }
        }
    }
    Ok(settings)
}

/// `bench` with each of `layers`' bench arguments, resolved in `plan`,
/// applied through bench's parser; none may set a runner's flag.
fn cell_bench(
    mut bench: BenchArgs,
    layers: &[&Layer<'_>],
    plan: &Addressing,
    er: &Errs,
) -> Result<BenchArgs> {
    for (t, d) in layers {
        let args = d
            .bench
            .iter()
            .map(|x| resolve(x, plan))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| er.field(*t, "bench", e))?;
        let named = bench
            .layer(&args)
            .map_err(|e| er.field(*t, "bench", FieldError::Cell(e)))?;
        if let Some(f) = named.iter().find(|f| RUNNER_FLAGS.contains(&f.as_str())) {
            return Err(er.at(*t, "bench", format!("{f} is set by the experiment runner")));
        }
    }
    Ok(bench)
}

/// The last sweep in `chain`, its values resolved in `plan`.
fn cell_sweep(
    chain: &[&Layer<'_>],
    plan: &Addressing,
    table: Place<'_>,
    er: &Errs,
) -> Result<Option<Sweep>> {
    Ok(
        match chain.iter().rev().find_map(|(_, d)| d.sweep.clone()) {
            Some(mut s) => {
                for v in &mut s.values {
                    *v = resolve(v, plan).map_err(|e| er.field(table, "sweep", e))?;
                }
                Some(s)
            }
            None => None,
        },
    )
}

/// Checks the count of `configurations` up to this cell and that each
/// value of its `sweep` makes valid bench arguments with `bench`.
fn check_sweep(
    bench: &BenchArgs,
    sweep: Option<&Sweep>,
    configurations: usize,
    table: Place<'_>,
    er: &Errs,
) -> Result<()> {
    if configurations > MAX_CONFIGURATIONS {
        return Err(er.at(
            table,
            "sweep",
            format!(
                "more than {MAX_CONFIGURATIONS} configurations (cells times sweep values) up to this cell: split the experiment"
            ),
        ));
    }
    if let Some(s) = sweep {
        if s.values.is_empty() || !BenchArgs::takes_value(&s.arg) {
            return Err(er.at(
                table,
                "sweep",
                "a sweep needs a flag that takes a value (e.g. \"--size\") and at least one value"
                    .into(),
            ));
        }
        for v in &s.values {
            sweep_point(bench, s, v).map_err(|e| er.field(table, "sweep", FieldError::Cell(e)))?;
        }
    }
    Ok(())
}

/// Most `[[cell]]`s or `[[step]]`s besides the baseline.
pub const MAX_CELLS: usize = 100;

/// Most configurations an experiment measures: each cell once, a sweeping
/// cell once per value (each of them `repeats` times).
pub const MAX_CONFIGURATIONS: usize = 1000;

/// Flags the runner sets itself; a cell may not.
const RUNNER_FLAGS: [&str; 3] = ["--json", "--format", "--port"];

/// Bench's defaults with the run's duration and warm-up: the bottom layer
/// of every cell.
fn runner_args(duration: &str, warmup: &str) -> BenchArgs {
    let mut a = BenchArgs::defaults();
    a.duration = duration.to_string();
    a.warmup = warmup.to_string();
    a
}

/// A cell's arguments at one point of its sweep (`ARG VALUE` as the top
/// layer), checked into a spec.
pub(crate) fn sweep_point(
    bench: &BenchArgs,
    s: &Sweep,
    value: &str,
) -> Result<BenchArgs, CellError> {
    let mut b = bench.clone();
    b.layer(&[s.arg.clone(), value.to_string()])?;
    crate::cell::spec_from(&b)?;
    Ok(b)
}

/// FNV-1a over the plan's JSON: what a resumed run must match.
pub(crate) fn fingerprint(plan: &Plan) -> String {
    let text = serde_json::to_string(plan).unwrap_or_default();
    let h = text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    });
    format!("{h:016x}")
}

impl Plan {
    /// The plan as text: what each cell would run (the dry run).
    pub fn describe(&self) -> String {
        let plan = self;
        let mut o = String::new();
        use std::fmt::Write;
        let _ = writeln!(
            o,
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
            let _ = writeln!(
                o,
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
            let _ = writeln!(o, "{i}. {}: {}{rebuild}", c.name, c.change);
            let _ = writeln!(o, "   wirespeed bench {} {}", c.target, c.args.join(" "));
            for (s, v) in &c.settings {
                let _ = match s {
                    Setting::Sysctl { host, key } => writeln!(o, "   on {host}: sysctl {key}={v}"),
                    Setting::Link { link, attr } => writeln!(o, "   link {link}: {attr} {v}"),
                };
            }
            if let Some(s) = &c.sweep {
                let _ = writeln!(o, "   sweep {} over {}", s.arg, s.values.join(", "));
            }
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(xs: &[&str]) -> Vec<String> {
        xs.iter().map(|s| s.to_string()).collect()
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
        let e = resolve("{c.0}", &p).unwrap_err();
        assert!(matches!(&e, FieldError::UnknownPlaceholder(k) if k == "c.0"));
        assert!(
            e.to_string()
                .starts_with("unknown placeholder {c.0}: use {HOST.N},"),
            "{e}"
        );
        assert!(matches!(
            resolve("{a.5}", &p),
            Err(FieldError::UnknownPlaceholder(_))
        ));
        assert!(matches!(resolve("{a.0", &p), Err(FieldError::Unclosed(_))));
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

    /// Loads `text` from a file in a directory of its own (one per call:
    /// tests run side by side), removed afterwards.
    fn load_text(text: &str) -> Result<Plan> {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("ws-exp-unit-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("e.toml");
        std::fs::write(&f, text).unwrap();
        let r = load(&f, &Overrides::default());
        let _ = std::fs::remove_dir_all(&dir);
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
                "--threads",
                "2",
                "--flows",
                "8",
                "--paths",
                "10.70.0.1=10.70.0.2,10.70.1.1=10.70.1.2",
            ])
        );
        assert_eq!((last.bench.flows, last.bench.threads), (8, 2));
        assert_eq!(last.bench.duration, "3s", "the runner's duration");
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

    /// A two-host ladder with `steps`, each as given, after `baseline`.
    fn ladder_of(baseline: &str, steps: impl Iterator<Item = String>) -> String {
        let mut t = format!(
            "name = \"e\"\nmode = \"ladder\"\n[lab]\nsubnet_base = 70\nhost = [{{ name = \"a\" }}, {{ name = \"b\" }}]\nlink = [{{ a = \"a\", b = \"b\" }}]\n[baseline]\nname = \"base\"\n{baseline}\n"
        );
        for (i, s) in steps.enumerate() {
            t.push_str(&format!("[[step]]\nname = \"s{i}\"\n{s}\n"));
        }
        t
    }

    #[test]
    fn a_long_ladder_is_planned_in_linear_time_and_capped() {
        // Found while preparing the fuzz run: every step re-layered every step below it
        // through bench's parser, and every inherited sweep value was
        // checked again, so a 4 KB ladder took seconds (and 1 MB, hours).
        let step = |_| "bench = [\"-F\", \"2\", \"--paths\", \"{a.0}={b.0}\"]".to_string();
        let text = ladder_of("", (0..MAX_CELLS).map(step));
        let t0 = std::time::Instant::now();
        let p = parse_str(&text, Path::new("e.toml"), &Overrides::default()).unwrap();
        assert!(
            t0.elapsed() < std::time::Duration::from_secs(2),
            "{:?}",
            t0.elapsed()
        );
        assert_eq!(p.cells.len(), MAX_CELLS + 1);
        assert_eq!(
            p.cells[MAX_CELLS].args,
            v(&["--flows", "2", "--paths", "10.70.0.1=10.70.0.2"])
        );
        let text = ladder_of("", (0..=MAX_CELLS).map(step));
        let e = parse_str(&text, Path::new("e.toml"), &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("[[step]] #101") && e.contains("at most 100"),
            "{e}"
        );
        let sweep = format!(
            "sweep = {{ arg = \"--flows\", values = [{}] }}",
            ["\"2\""; 10].join(", ")
        );
        let text = ladder_of(&sweep, (0..MAX_CELLS).map(|_| String::new()));
        let e = parse_str(&text, Path::new("e.toml"), &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("[[step]] #100") && e.contains("more than 1000 configurations"),
            "{e}"
        );
    }

    #[test]
    fn sweep_values_resolve_placeholders_as_the_docs_say() {
        let text = ladder_of(
            "sweep = { arg = \"--paths\", values = [\"{a.0}={b.0}\", \"{a.0.v6}={b.0.v6}\"] }",
            std::iter::empty(),
        );
        let p = parse_str(&text, Path::new("e.toml"), &Overrides::default()).unwrap();
        let s = p.cells[0].sweep.as_ref().unwrap();
        assert_eq!(s.values[0], "10.70.0.1=10.70.0.2");
        assert!(!s.values[1].contains('{'), "{:?}", s.values);
        let bad = ladder_of(
            "sweep = { arg = \"--paths\", values = [\"{c.0}={b.0}\"] }",
            std::iter::empty(),
        );
        let e = parse_str(&bad, Path::new("e.toml"), &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("sweep") && e.contains("unknown placeholder {c.0}"),
            "{e}"
        );
    }

    #[test]
    fn a_ladder_step_that_readdresses_the_lab_resolves_every_layer_again() {
        let text = ladder_of(
            "bench = [\"--paths\", \"{a.0}={b.0}\"]",
            [
                "bench = [\"-F\", \"2\"]",
                "lab = { link = [{ a = \"b\", b = \"a\" }] }",
            ]
            .into_iter()
            .map(String::from),
        );
        let p = parse_str(&text, Path::new("e.toml"), &Overrides::default()).unwrap();
        assert_eq!(
            p.cells[1].args,
            v(&["--flows", "2", "--paths", "10.70.0.1=10.70.0.2"])
        );
        assert_eq!(
            p.cells[2].args,
            v(&["--flows", "2", "--paths", "10.70.0.2=10.70.0.1"])
        );
    }

    #[test]
    fn parse_str_plans_as_load_does_without_reading_files() {
        let origin = Path::new("/nonexistent/dir/e.toml");
        let p = parse_str(LADDER, origin, &Overrides::default()).unwrap();
        assert_eq!(p.describe(), load_text(LADDER).unwrap().describe());
        let text = LADDER.replace(
            "[baseline]",
            "[[tune]]\nhost = \"b\"\nprofile = \"p/x.toml\"\n\n[baseline]",
        );
        let p = parse_str(&text, origin, &Overrides::default()).unwrap();
        assert_eq!(p.tunes[0].profile, "/nonexistent/dir/p/x.toml");
        let e = load_text(&text).unwrap_err().to_string();
        assert!(e.contains("`profile`"), "load looks the profile up: {e}");
    }

    #[test]
    fn parse_str_names_an_external_lab_it_does_not_read() {
        let text = "name = \"e\"\nlab = \"lab.toml\"\n[baseline]\nname = \"b\"\n";
        let e = parse_str(text, Path::new("dir/e.toml"), &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 2") && e.contains("dir/lab.toml") && e.contains("inline it as [lab]"),
            "{e}"
        );
    }

    #[test]
    fn a_file_cell_keeps_every_repeated_path_and_names_unknown_flags() {
        let text = LADDER.replace(
            r#"bench = ["-F", "8", "-T", "2"]"#,
            r#"bench = ["--path", "{a.0}={b.0}", "--path", "{a.1}={b.1}", "-F", "4"]"#,
        );
        let p = load_text(&text).unwrap();
        let last = &p.cells[3];
        assert_eq!(
            last.bench.path,
            v(&["10.70.0.1=10.70.0.2", "10.70.1.1=10.70.1.2"])
        );
        assert_eq!(last.bench.flows, 4);
        let e = load_text(&LADDER.replace(r#""-T", "2""#, r#""--flowz", "2""#))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 26") && e.contains("unknown bench flag --flowz"),
            "{e}"
        );
        let e = load_text(&LADDER.replace(r#""-T", "2""#, r#""--port", "2""#))
            .unwrap_err()
            .to_string();
        assert!(e.contains("--port is set by the experiment runner"), "{e}");
    }
}
