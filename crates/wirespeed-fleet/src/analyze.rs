//! From tests to a matrix per workload, outliers and their evidence.
//!
//! A link's figure is the median over its repeats; a NIC's and a host's
//! the median over the links they took part in (as client or server).
//! The noise band is three times the median relative spread of a link's
//! repeats ((max - min) / median), at least [`MIN_BAND`]; without repeats
//! it is [`DEFAULT_BAND`]. A cell below the median of its kind (links,
//! NICs, hosts) by more than the band is an outlier. Links and NICs of a
//! host that is itself an outlier are folded into it. Each outlier
//! carries its hosts' settings that differ from the fleet majority,
//! doctor's findings on them, and the model's bottleneck of its slowest
//! test.

use crate::fleet::AgentSpec;
use std::collections::{BTreeMap, BTreeSet};
use wirespeed_types::fleet::{
    BottleneckNote, Cell, Drift, FindingNote, FleetResults, HostFacts, LinkTest, Matrix, NicFacts,
    Outlier, Scope, Verdict,
};

/// Smallest noise band.
pub const MIN_BAND: f64 = 0.02;
/// The band when no test was repeated.
pub const DEFAULT_BAND: f64 = 0.05;
/// Host-wide settings compared across the fleet.
pub const HOST_SETTINGS: &[&str] = &[
    "net.ipv4.tcp_congestion_control",
    "net.core.default_qdisc",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
    "net.core.rmem_max",
    "net.core.wmem_max",
    "net.ipv4.tcp_mtu_probing",
    "net.ipv4.tcp_slow_start_after_idle",
];

/// The settings of `agent`'s host that make links differ, from its snapshot.
pub fn host_facts(agent: &AgentSpec, s: &wirespeed_host::Snapshot) -> HostFacts {
    let mut settings = BTreeMap::new();
    for k in HOST_SETTINGS {
        if let Some(v) = s.sysctls.get(*k).and_then(|v| v.get()) {
            settings.insert(k.to_string(), v.clone());
        }
    }
    let flag = |b: Option<bool>| b.map(|b| if b { "on" } else { "off" }.to_string());
    let nics = agent
        .nics
        .iter()
        .map(|n| {
            let link = s.links.iter().find(|l| {
                l.addresses
                    .iter()
                    .any(|a| a.split('/').next().and_then(|x| x.parse().ok()) == Some(n.address))
            });
            let mut set = BTreeMap::new();
            if let Some(l) = link {
                set.insert("mtu".to_string(), l.mtu.to_string());
                let mut put = |k: &str, v: Option<String>| {
                    if let Some(v) = v {
                        set.insert(k.to_string(), v);
                    }
                };
                put("gso_max_size", l.gso_max_size.map(|v| v.to_string()));
                put("gro_max_size", l.gro_max_size.map(|v| v.to_string()));
                put(
                    "gso_ipv4_max_size",
                    l.gso_ipv4_max_size.map(|v| v.to_string()),
                );
                put(
                    "gro_ipv4_max_size",
                    l.gro_ipv4_max_size.map(|v| v.to_string()),
                );
                put("tso", flag(l.offloads.tso));
                put("gso", flag(l.offloads.gso));
                put("gro", flag(l.offloads.gro));
                put("lro", flag(l.offloads.lro));
                put("qdisc", l.qdisc.clone());
                put(
                    "bond_xmit_hash_policy",
                    l.bond.as_ref().map(|b| b.xmit_hash_policy.clone()),
                );
            }
            NicFacts {
                name: n.name.clone(),
                device: link.map(|l| l.name.clone()),
                settings: set,
            }
        })
        .collect();
    HostFacts {
        hostname: s.hostname.clone(),
        kernel: s.kernel.clone(),
        settings,
        nics,
    }
}

fn median_opt(v: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let xs: Vec<f64> = v.flatten().collect();
    (!xs.is_empty()).then(|| median(&xs))
}

fn link_name(t: &LinkTest) -> String {
    use wirespeed_types::fleet::end_name;
    format!(
        "{} -> {}",
        end_name(&t.client, &t.client_nic),
        end_name(&t.server, &t.server_nic)
    )
}

/// Builds the matrices and outliers of `r` from its tests; `snaps` are
/// the agents' snapshots (for doctor's findings).
pub fn analyze(r: &mut FleetResults, snaps: &[(String, wirespeed_host::Snapshot)]) {
    let hosts: Vec<String> = r.agents.iter().map(|a| a.name.clone()).collect();
    let mut labels: Vec<String> = Vec::new();
    for t in &r.tests {
        if !labels.contains(&t.workload) {
            labels.push(t.workload.clone());
        }
    }
    r.matrices.clear();
    r.outliers.clear();
    for label in labels {
        let ok: Vec<&LinkTest> = r
            .tests
            .iter()
            .filter(|t| t.workload == label && t.error.is_none() && t.result.is_some())
            .collect();
        let mut groups: BTreeMap<String, Vec<&LinkTest>> = BTreeMap::new();
        for t in &ok {
            groups.entry(link_name(t)).or_default().push(t);
        }
        let m = matrix(&label, &hosts, &ok, &groups);
        let mut found = find_outliers(&m, &groups);
        for o in &mut found {
            explain(o, r, &m, &ok, snaps);
        }
        r.outliers.extend(found);
        r.matrices.push(m);
    }
    note_down_agents(r);
}

/// Tests of one workload by link name, each link's repeats together.
type Groups<'a> = BTreeMap<String, Vec<&'a LinkTest>>;

/// The matrix of workload `label` from its successful tests `ok`, grouped
/// by link in `groups`: links, NICs, hosts and the noise band.
fn matrix(label: &str, hosts: &[String], ok: &[&LinkTest], groups: &Groups) -> Matrix {
    // Judged by latency when the workload is transactional (rr, crr,
    // udp-rr); stream and udp-stream are judged by goodput.
    let latency = ok.iter().any(|t| {
        t.result
            .as_ref()
            .is_some_and(|x| !x.spec.workload.is_bulk())
    });
    let (links, spreads) = link_cells(groups);
    let (noise_band, noise_source) = noise_band(&spreads, groups.len());
    let (nics, per_host) = nic_and_host_cells(&links, groups);
    Matrix {
        workload: label.to_string(),
        latency,
        hosts: hosts.to_vec(),
        median_bps: median_bps(&links),
        median_p99_us: median_opt(links.iter().map(|c| c.p99_us)),
        median_tps: median_opt(links.iter().map(|c| c.transactions_per_s)),
        links,
        nics,
        per_host,
        noise_band,
        noise_source,
    }
}

/// A cell per link (the median of its repeats), and the relative spread
/// ((max - min) / median) of each link with repeats.
fn link_cells(groups: &Groups) -> (Vec<Cell>, Vec<f64>) {
    let mut links = Vec::new();
    let mut spreads = Vec::new();
    for (name, ts) in groups {
        let mut samples: Vec<f64> = ts.iter().map(|t| t.throughput_bps).collect();
        let m = median(&samples);
        if samples.len() >= 2 && m > 0.0 {
            samples.sort_by(|a, b| a.total_cmp(b));
            spreads.push((samples[samples.len() - 1] - samples[0]) / m);
        }
        links.push(Cell {
            name: name.clone(),
            host: ts[0].client.clone(),
            peer: Some(ts[0].server.clone()),
            nic: (!ts[0].client_nic.is_empty()).then(|| ts[0].client_nic.clone()),
            throughput_bps: m,
            p50_us: median_opt(ts.iter().map(|t| t.p50_us)),
            p99_us: median_opt(ts.iter().map(|t| t.p99_us)),
            samples: ts.iter().map(|t| t.throughput_bps).collect(),
            transactions_per_s: median_opt(
                ts.iter()
                    .map(|t| Some(t.transactions_per_s).filter(|x| *x > 0.0)),
            ),
        });
    }
    (links, spreads)
}

/// The noise band from the links' `spreads` (over `links` links), and
/// where it came from.
fn noise_band(spreads: &[f64], links: usize) -> (f64, String) {
    if spreads.is_empty() {
        (
            DEFAULT_BAND,
            format!("no repeats: the default {:.0}%", DEFAULT_BAND * 100.0),
        )
    } else {
        let s = median(spreads);
        (
            (3.0 * s).clamp(MIN_BAND, 0.5),
            format!(
                "3 x the median spread of repeats ({:.1}%) over {} links, at least {:.0}%",
                s * 100.0,
                links,
                MIN_BAND * 100.0
            ),
        )
    }
}

/// Per NIC and per host: the median over the links they were in.
fn nic_and_host_cells(links: &[Cell], groups: &Groups) -> (Vec<Cell>, Vec<Cell>) {
    let mut nic_links: BTreeMap<(String, String), Vec<&Cell>> = BTreeMap::new();
    let mut host_links: BTreeMap<String, Vec<&Cell>> = BTreeMap::new();
    for (c, ts) in links.iter().zip(groups.values()) {
        let t = ts[0];
        for (h, n) in [(&t.client, &t.client_nic), (&t.server, &t.server_nic)] {
            if !n.is_empty() {
                nic_links.entry((h.clone(), n.clone())).or_default().push(c);
            }
            host_links.entry(h.clone()).or_default().push(c);
        }
    }
    let nics: Vec<Cell> = nic_links
        .iter()
        .map(|((h, n), cs)| aggregate_cell(format!("{h}/{n}"), h, Some(n.clone()), cs))
        .collect();
    let per_host: Vec<Cell> = host_links
        .iter()
        .map(|(h, cs)| aggregate_cell(h.clone(), h, None, cs))
        .collect();
    (nics, per_host)
}

/// A NIC's or host's cell: the medians over the link cells `cs`.
fn aggregate_cell(name: String, host: &str, nic: Option<String>, cs: &[&Cell]) -> Cell {
    Cell {
        name,
        host: host.to_string(),
        peer: None,
        nic,
        throughput_bps: median(&cs.iter().map(|c| c.throughput_bps).collect::<Vec<_>>()),
        p50_us: median_opt(cs.iter().map(|c| c.p50_us)),
        p99_us: median_opt(cs.iter().map(|c| c.p99_us)),
        samples: cs.iter().map(|c| c.throughput_bps).collect(),
        transactions_per_s: median_opt(cs.iter().map(|c| c.transactions_per_s)),
    }
}

/// The median throughput of `cs`.
fn median_bps(cs: &[Cell]) -> f64 {
    median(&cs.iter().map(|c| c.throughput_bps).collect::<Vec<_>>())
}

/// The cells of `m` below the median of their kind by more than the noise
/// band, hosts first; a NIC or link of a host (or a link of a NIC)
/// already found is folded into it. Not yet explained.
fn find_outliers(m: &Matrix, groups: &Groups) -> Vec<Outlier> {
    let mut found: Vec<Outlier> = Vec::new();
    let mut host_out = BTreeSet::new();
    let mut nic_out = BTreeSet::new();
    for (scope, cells) in [
        (Scope::Host, &m.per_host),
        (Scope::Nic, &m.nics),
        (Scope::Link, &m.links),
    ] {
        let median_bps = median_bps(cells);
        // Fewer than three cells have no majority to fall below.
        if cells.len() < 3 || median_bps <= 0.0 {
            continue;
        }
        for c in cells {
            if c.throughput_bps >= median_bps * (1.0 - m.noise_band) {
                continue;
            }
            let hs: Vec<String> = std::iter::once(c.host.clone())
                .chain(c.peer.clone())
                .collect();
            let covered = match scope {
                Scope::Host => false,
                Scope::Nic => host_out.contains(&c.host),
                Scope::Link => {
                    let t = groups[&c.name][0];
                    hs.iter().any(|h| host_out.contains(h))
                        || nic_out.contains(&(t.client.clone(), t.client_nic.clone()))
                        || nic_out.contains(&(t.server.clone(), t.server_nic.clone()))
                }
            };
            if covered {
                continue;
            }
            match scope {
                Scope::Host => {
                    host_out.insert(c.host.clone());
                }
                Scope::Nic => {
                    nic_out.insert((c.host.clone(), c.nic.clone().unwrap_or_default()));
                }
                Scope::Link => {}
            }
            found.push(Outlier {
                workload: m.workload.clone(),
                scope,
                name: c.name.clone(),
                hosts: hs,
                throughput_bps: c.throughput_bps,
                median_bps,
                below_pct: (1.0 - c.throughput_bps / median_bps) * 100.0,
                ..Outlier::default()
            });
        }
    }
    found
}

/// A note naming the agents that were down, if any.
fn note_down_agents(r: &mut FleetResults) {
    let downs: Vec<&str> = r
        .agents
        .iter()
        .filter(|a| !a.up)
        .map(|a| a.name.as_str())
        .collect();
    if !downs.is_empty() {
        r.notes.push(format!(
            "down: {} (their tests are in the list as skipped or failed)",
            downs.join(", ")
        ));
    }
}

/// The fleet's most common value of each setting: host-wide by name,
/// per NIC by the NIC's position in the fleet file. (value, count, of)
fn majorities(r: &FleetResults) -> BTreeMap<(Option<usize>, String), (String, u32, u32)> {
    let mut counts: BTreeMap<(Option<usize>, String), BTreeMap<String, u32>> = BTreeMap::new();
    for f in r.agents.iter().filter_map(|a| a.facts.as_ref()) {
        for (k, v) in &f.settings {
            *counts
                .entry((None, k.clone()))
                .or_default()
                .entry(v.clone())
                .or_default() += 1;
        }
        for (i, n) in f.nics.iter().enumerate() {
            for (k, v) in &n.settings {
                *counts
                    .entry((Some(i), k.clone()))
                    .or_default()
                    .entry(v.clone())
                    .or_default() += 1;
            }
        }
    }
    counts
        .into_iter()
        .map(|(k, vs)| {
            let of = vs.values().sum();
            let (v, n) = vs
                .into_iter()
                .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
                .expect("counted at least once");
            (k, (v, n, of))
        })
        .collect()
}

/// Fills in outlier `o`'s evidence: its hosts' settings that differ from
/// the fleet majority, doctor's findings on them, the model's bottlenecks
/// of its slowest test; and its one-line summary.
fn explain(
    o: &mut Outlier,
    r: &FleetResults,
    m: &Matrix,
    ok: &[&LinkTest],
    snaps: &[(String, wirespeed_host::Snapshot)],
) {
    let maj = majorities(r);
    for host in o.hosts.clone() {
        let Some(f) = r
            .agents
            .iter()
            .find(|a| a.name == host)
            .and_then(|a| a.facts.as_ref())
        else {
            continue;
        };
        let only = outlier_nics(o, ok, &host);
        let drift = host_drift(&host, f, &maj, only.as_deref());
        o.drift.extend(drift);
        if let Some((_, s)) = snaps.iter().find(|(n, _)| *n == host) {
            o.findings.extend(host_findings(&host, s, m.latency));
        }
    }
    if let Some(bs) = slowest_bottlenecks(o, ok) {
        o.bottlenecks = bs;
    }
    o.summary = outlier_summary(o, m);
}

/// Which NICs of `host` outlier `o` concerns (None: all).
fn outlier_nics(o: &Outlier, ok: &[&LinkTest], host: &str) -> Option<Vec<String>> {
    match o.scope {
        Scope::Host => None,
        Scope::Nic => Some(vec![
            o.name.rsplit_once('/').map_or("", |x| x.1).to_string(),
        ]),
        Scope::Link => {
            let t = ok.iter().find(|t| link_name(t) == o.name)?;
            Some(if t.client == host {
                vec![t.client_nic.clone()]
            } else {
                vec![t.server_nic.clone()]
            })
        }
    }
}

/// `host`'s settings (host-wide, and of its NICs in `only` or all) whose
/// value differs from a strict majority of the fleet's (`maj`).
fn host_drift(
    host: &str,
    f: &HostFacts,
    maj: &BTreeMap<(Option<usize>, String), (String, u32, u32)>,
    only: Option<&[String]>,
) -> Vec<Drift> {
    let mut drift = Vec::new();
    let mut add = |key: (Option<usize>, String), nic: Option<String>, value: &String| {
        if let Some((mv, n, of)) = maj.get(&key)
            && mv != value
            && *n * 2 > *of
        {
            drift.push(Drift {
                host: host.to_string(),
                nic,
                setting: key.1.clone(),
                value: value.clone(),
                majority: mv.clone(),
                majority_count: *n,
                of: *of,
            });
        }
    };
    for (k, v) in &f.settings {
        add((None, k.clone()), None, v);
    }
    for (i, n) in f.nics.iter().enumerate() {
        if only.is_some_and(|o| !o.contains(&n.name)) {
            continue;
        }
        for (k, v) in &n.settings {
            add((Some(i), k.clone()), Some(n.name.clone()), v);
        }
    }
    drift
}

/// Doctor's findings on `host` from its snapshot `s` (`latency`: for a
/// latency workload's goal).
fn host_findings(host: &str, s: &wirespeed_host::Snapshot, latency: bool) -> Vec<FindingNote> {
    let goal = wirespeed_host::doctor::Goal {
        rr: latency,
        ..Default::default()
    };
    wirespeed_host::diagnose(s, &goal)
        .into_iter()
        .map(|fnd| FindingNote {
            host: host.to_string(),
            id: fnd.id.clone(),
            severity: format!("{:?}", fnd.severity).to_lowercase(),
            title: fnd.title.clone(),
        })
        .collect()
}

/// The model's bottlenecks of the slowest test outlier `o` took part in;
/// None without such a test.
fn slowest_bottlenecks(o: &Outlier, ok: &[&LinkTest]) -> Option<Vec<BottleneckNote>> {
    let res = ok
        .iter()
        .filter(|t| match o.scope {
            Scope::Link => link_name(t) == o.name,
            Scope::Host => o.hosts.iter().any(|h| *h == t.client || *h == t.server),
            Scope::Nic => {
                let (h, n) = o.name.rsplit_once('/').unwrap_or((&o.name, ""));
                (t.client == h && t.client_nic == n) || (t.server == h && t.server_nic == n)
            }
        })
        .filter_map(|t| t.result.as_ref())
        .min_by(|a, b| a.throughput_bps.total_cmp(&b.throughput_bps))?;
    let e = wirespeed_model::explain(res, None, &wirespeed_model::Facts::default());
    Some(
        e.bottlenecks
            .into_iter()
            .map(|b| BottleneckNote {
                kind: b.kind.name().to_string(),
                message: b.message,
            })
            .collect(),
    )
}

/// Outlier `o`'s one line: how far below the median, and its drift or
/// else the model's first bottleneck.
fn outlier_summary(o: &Outlier, m: &Matrix) -> String {
    let what = match o.scope {
        Scope::Host => format!("host {}", o.name),
        Scope::Nic => format!("NIC {}", o.name),
        Scope::Link => format!("link {}", o.name),
    };
    let mut s = format!(
        "{what} is {:.1}% below the fleet median (noise band {:.1}%)",
        o.below_pct,
        m.noise_band * 100.0
    );
    if o.drift.is_empty() {
        s.push_str(": no setting differs from the fleet majority");
        if !o.bottlenecks.is_empty() {
            s.push_str(&format!("; the model names {}", o.bottlenecks[0].kind));
        }
    } else {
        let ds: Vec<String> = o
            .drift
            .iter()
            .map(|d| {
                let at = match &d.nic {
                    Some(n) => format!("{}/{n}", d.host),
                    None => d.host.clone(),
                };
                format!(
                    "{} {} on {at} where {} of {} have {}",
                    d.setting, d.value, d.majority_count, d.of, d.majority
                )
            })
            .collect();
        s.push_str(&format!(": drift: {}", ds.join("; ")));
    }
    s
}

/// Judges the links against `--min` and a baseline run: a failure line
/// per link (median) below the minimum or more than `tolerance_pct`
/// below the same link in the baseline, and per agent down.
pub fn judge(
    r: &FleetResults,
    min_bps: Option<f64>,
    baseline: Option<(&str, &FleetResults)>,
    tolerance_pct: f64,
) -> Verdict {
    let mut v = Verdict {
        min_bps,
        baseline: baseline.map(|b| b.0.to_string()),
        tolerance_pct: baseline.map(|_| tolerance_pct),
        failures: Vec::new(),
        contended: Vec::new(),
    };
    let human = |bps: f64| format!("{:.1} Mbit/s", bps / 1e6);
    for a in r.agents.iter().filter(|a| !a.up) {
        v.failures.push(format!(
            "agent {} is down: {}",
            a.name,
            a.error.as_deref().unwrap_or("no answer")
        ));
    }
    let failed = r
        .tests
        .iter()
        .filter(|t| {
            t.error
                .as_deref()
                .is_some_and(|e| !e.starts_with("skipped"))
        })
        .count();
    if failed > 0 {
        v.failures
            .push(format!("{failed} of {} tests failed", r.tests.len()));
    }
    // Only a gate can pass or fail a contended link silently: without
    // one, the contended tests are listed with the results, not judged.
    let gated = min_bps.is_some() || baseline.is_some();
    let mut contended: Vec<(&str, String)> = Vec::new();
    for t in r.tests.iter().filter(|_| gated) {
        if let Some(why) = t.contended() {
            let link = link_name(t);
            v.contended.push(format!("{} {link}: {why}", t.workload));
            contended.push((&t.workload, link));
        }
    }
    for m in &r.matrices {
        let judged = m.links.iter().filter(|c| {
            !contended
                .iter()
                .any(|(w, l)| *w == m.workload && *l == c.name)
        });
        for c in judged {
            if let Some(min) = min_bps
                && c.throughput_bps < min
            {
                v.failures.push(format!(
                    "{} {}: {} is below --min {}",
                    m.workload,
                    c.name,
                    human(c.throughput_bps),
                    human(min)
                ));
            }
            if let Some((_, b)) = baseline
                && let Some(old) = b
                    .matrices
                    .iter()
                    .filter(|bm| bm.workload == m.workload)
                    .flat_map(|bm| &bm.links)
                    .find(|bc| bc.name == c.name)
                && c.throughput_bps < old.throughput_bps * (1.0 - tolerance_pct / 100.0)
            {
                v.failures.push(format!(
                    "{} {}: {} is {:.1}% below the baseline's {} (tolerance {tolerance_pct}%)",
                    m.workload,
                    c.name,
                    human(c.throughput_bps),
                    (1.0 - c.throughput_bps / old.throughput_bps) * 100.0,
                    human(old.throughput_bps)
                ));
            }
        }
    }
    v
}

/// The median of `v` (0 when empty).
fn median(v: &[f64]) -> f64 {
    wirespeed_types::stats::median(v).unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_types::Workload;
    use wirespeed_types::fleet::AgentStatus;
    use wirespeed_types::{TestResult, TestSpec};

    /// Three agents, every ordered pair tested once with `workload`.
    fn results(workload: Workload) -> FleetResults {
        let names = ["a", "b", "c"];
        let mut r = FleetResults {
            agents: names
                .iter()
                .map(|n| AgentStatus {
                    name: n.to_string(),
                    up: true,
                    ..AgentStatus::default()
                })
                .collect(),
            ..FleetResults::default()
        };
        for c in names {
            for s in names.iter().filter(|s| **s != c) {
                let spec = TestSpec {
                    workload,
                    ..TestSpec::default()
                };
                r.tests.push(LinkTest {
                    workload: workload.name().to_string(),
                    client: c.into(),
                    server: s.to_string(),
                    throughput_bps: 1e9,
                    result: Some(TestResult {
                        spec,
                        ..TestResult::default()
                    }),
                    ..LinkTest::default()
                });
            }
        }
        r
    }

    #[test]
    fn a_matrix_is_judged_by_latency_only_for_transactional_workloads() {
        for w in wirespeed_types::spec::WORKLOADS {
            let mut r = results(w.workload);
            analyze(&mut r, &[]);
            assert_eq!(r.matrices.len(), 1, "{}", w.name);
            assert_eq!(r.matrices[0].latency, w.transactional, "{}", w.name);
        }
    }

    #[test]
    fn a_contended_link_is_neither_passed_nor_failed_by_a_gate() {
        let mut r = results(Workload::Stream);
        if let Some(x) = r.tests[0].result.as_mut() {
            x.contended = Some("busy".into());
        }
        analyze(&mut r, &[]);
        // Every link is 1 Gbit/s, below a 2 Gbit/s floor: the contended
        // one is listed as contended, the others fail.
        let v = judge(&r, Some(2e9), None, 10.0);
        assert_eq!(v.contended.len(), 1, "{v:?}");
        assert!(v.contended[0].ends_with(": busy"), "{v:?}");
        assert_eq!(v.failures.len(), r.tests.len() - 1, "{v:?}");
        // Without a gate nothing is judged, so nothing is contended there.
        let v = judge(&r, None, None, 10.0);
        assert!(v.contended.is_empty() && v.passed(), "{v:?}");
    }
}
