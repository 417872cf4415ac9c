//! Doctor's measured rules (`wirespeed doctor --peer`): which short tests
//! to run against a peer's NICs, and what their figures say (the NICs
//! share one bottleneck, all NICs should be used, one flow is not enough).
//! Pure functions over measured figures; the caller runs the tests.

use wirespeed_engine::EngineError;
use wirespeed_host::doctor::Evidence;
use wirespeed_host::{Finding, Severity, Snapshot};
use wirespeed_report::human_bps;
use wirespeed_types::TestSpec;
use wirespeed_types::spec::PathSpec;

pub use wirespeed_types::result::PeerTest;

/// One test to run against the peer: some of its paths, flows per path.
#[derive(Debug, Clone, PartialEq)]
pub struct Probe {
    /// What it tries.
    pub name: String,
    /// (local, remote) address pairs; local may be empty.
    pub pairs: Vec<(String, String)>,
    /// Flows per path.
    pub flows_per_path: u32,
}

impl Probe {
    /// The paths as LOCAL=REMOTE (or REMOTE alone).
    pub fn paths(&self) -> Vec<String> {
        self.pairs
            .iter()
            .map(|(l, r)| {
                if l.is_empty() {
                    r.clone()
                } else {
                    format!("{l}={r}")
                }
            })
            .collect()
    }

    /// The test: `duration_s` (at least 0.5 s) after 0.3 s of warm-up, up
    /// to 4 threads.
    pub fn spec(&self, duration_s: f64) -> Result<TestSpec, EngineError> {
        let flows = self.pairs.len() as u32 * self.flows_per_path;
        Ok(TestSpec {
            duration_s: duration_s.max(0.5),
            warmup_s: 0.3,
            threads: flows.min(4),
            flows,
            paths: self
                .paths()
                .iter()
                .map(|p| PathSpec::parse(p))
                .collect::<Result<_, _>>()?,
            ..TestSpec::default()
        })
    }

    /// The measured figures of this probe.
    pub fn result(&self, r: &wirespeed_types::TestResult) -> PeerTest {
        PeerTest {
            name: self.name.clone(),
            paths: self.paths(),
            flows_per_path: self.flows_per_path,
            bps: r.throughput_bps,
            per_path_bps: r.paths.iter().map(|p| p.throughput_bps).collect(),
        }
    }
}

/// Pairs each peer address with a local address in its subnet, each local
/// address used once (empty when none is found).
pub fn local_for(s: &Snapshot, peers: &[String]) -> Vec<(String, String)> {
    use wirespeed_host::inspect::{network, parse_cidr};
    let mut used: Vec<std::net::IpAddr> = Vec::new();
    let mut out = Vec::new();
    for p in peers {
        let pick = p.parse::<std::net::IpAddr>().ok().and_then(|pip| {
            wirespeed_host::doctor::used_links(s)
                .iter()
                .flat_map(|l| l.addresses.iter())
                .filter_map(|cidr| parse_cidr(cidr))
                .find(|(ip, len)| network(*ip, *len) == network(pip, *len) && !used.contains(ip))
                .map(|(ip, _)| ip)
        });
        used.extend(pick);
        out.push((pick.map(|ip| ip.to_string()).unwrap_or_default(), p.clone()));
    }
    out
}

/// The tests to run, in order: one flow on the first path; with several
/// paths, one flow on each other path and one flow per path on all; then
/// 4 flows per path on all.
pub fn probes(pairs: &[(String, String)]) -> Vec<Probe> {
    let probe = |pairs: &[(String, String)], flows, name: &str| Probe {
        name: name.into(),
        pairs: pairs.to_vec(),
        flows_per_path: flows,
    };
    let mut out = vec![probe(
        &pairs[..pairs.len().min(1)],
        1,
        "one flow, first path",
    )];
    if pairs.len() > 1 {
        for (i, p) in pairs.iter().enumerate().skip(1) {
            out.push(probe(
                std::slice::from_ref(p),
                1,
                &format!("one flow, path {}", i + 1),
            ));
        }
        out.push(probe(pairs, 1, "one flow per path, all paths"));
    }
    out.push(probe(pairs, 4, "4 flows per path, all paths"));
    out
}

/// Share of the sum of single paths below which all paths together
/// mean one shared bottleneck.
const SHARED_BELOW: f64 = 0.75;
/// Gain of all paths over one above which using them all is a warning.
const ALL_NICS_GAIN: f64 = 1.3;
/// Gain of 4 flows per path over one above which the flow count is a
/// bottleneck.
const FLOWS_GAIN: f64 = 1.2;

/// What the measured `tests` (in [`probes`]' order, over `npairs` paths)
/// say, as findings.
pub fn findings(tests: &[PeerTest], npairs: usize) -> Vec<Finding> {
    let Some(last) = tests.last() else {
        return Vec::new();
    };
    let evidence: Vec<Evidence> = tests
        .iter()
        .map(|t| Evidence {
            name: t.name.clone(),
            value: format!("{} over {}", human_bps(t.bps), t.paths.join(", ")),
        })
        .collect();
    let base = tests[0].bps.max(1.0);
    let best_single = tests
        .iter()
        .filter(|t| t.paths.len() == 1 && t.flows_per_path == 1)
        .map(|t| t.bps)
        .fold(0.0, f64::max);
    let all1 = tests
        .iter()
        .find(|t| t.paths.len() > 1 && t.flows_per_path == 1)
        .map(|t| t.bps);
    let mut findings = Vec::new();
    let all_paths = last.paths.join(",");
    if let Some(all1) = all1 {
        let sum_single: f64 = tests
            .iter()
            .filter(|t| t.paths.len() == 1 && t.flows_per_path == 1)
            .map(|t| t.bps)
            .sum();
        if all1 < SHARED_BELOW * sum_single {
            findings.push(Finding {
                id: "peer-nics-share-a-bottleneck".into(),
                severity: Severity::Critical,
                title: format!(
                    "all {} paths together reach {} where each alone reaches up to {}: the NICs share one bottleneck",
                    npairs,
                    human_bps(all1),
                    human_bps(best_single)
                ),
                evidence: evidence.clone(),
                why: "When the paths add nothing, their traffic leaves by the same NIC (no per-NIC source routing) or meets one cap; the second NIC is unused.".into(),
                actions: vec![],
                bench_flags: Some(format!("--paths {all_paths} after fixing the routing (tune apply)")),
                unverified: None,
            });
        } else {
            findings.push(Finding {
                id: "peer-use-all-nics".into(),
                severity: if all1 > ALL_NICS_GAIN * base { Severity::Warn } else { Severity::Info },
                title: format!("one test over all {} paths reaches {} vs {} over one path", npairs, human_bps(all1), human_bps(base)),
                evidence: evidence.clone(),
                why: "Each NIC adds its own bandwidth only when flows are spread over all of them in one test.".into(),
                actions: vec![],
                bench_flags: Some(format!("--paths {all_paths}")),
                unverified: None,
            });
        }
    }
    let with_flows = last.bps;
    let ref_bps = all1.unwrap_or(base);
    if with_flows > FLOWS_GAIN * ref_bps {
        findings.push(Finding {
            id: "peer-flow-count".into(),
            severity: Severity::Warn,
            title: format!("4 flows per path reach {} against {} with one: the flow count is a bottleneck", human_bps(with_flows), human_bps(ref_bps)),
            evidence,
            why: "A single flow is bound by one core, one window or a per-flow cap; several flows per path lift it (report 2: 4 streams per NIC reached the cap).".into(),
            actions: vec![],
            bench_flags: Some(format!("--paths {all_paths} -F {}", 4 * npairs)),
            unverified: None,
        });
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(n: usize) -> Vec<(String, String)> {
        (0..n)
            .map(|i| (format!("10.0.{i}.1"), format!("10.0.{i}.2")))
            .collect()
    }

    /// The measured figures of `probes(pairs(n))`, one throughput each.
    fn measured(n: usize, bps: &[f64]) -> Vec<PeerTest> {
        let ps = probes(&pairs(n));
        assert_eq!(ps.len(), bps.len());
        ps.iter()
            .zip(bps)
            .map(|(p, &b)| {
                p.result(&wirespeed_types::TestResult {
                    throughput_bps: b,
                    ..Default::default()
                })
            })
            .collect()
    }

    fn ids(f: &[Finding]) -> Vec<&str> {
        f.iter().map(|f| f.id.as_str()).collect()
    }

    #[test]
    fn probes_try_each_path_then_all_then_more_flows() {
        let ps = probes(&pairs(2));
        let shape: Vec<(&str, usize, u32)> = ps
            .iter()
            .map(|p| (p.name.as_str(), p.pairs.len(), p.flows_per_path))
            .collect();
        assert_eq!(
            shape,
            [
                ("one flow, first path", 1, 1),
                ("one flow, path 2", 1, 1),
                ("one flow per path, all paths", 2, 1),
                ("4 flows per path, all paths", 2, 4)
            ]
        );
        assert_eq!(probes(&pairs(1)).len(), 2);
        let s = ps[3].spec(0.1).unwrap();
        assert_eq!((s.flows, s.threads, s.paths.len()), (8, 4, 2));
        assert_eq!(s.duration_s, 0.5, "at least half a second");
        let bare = Probe {
            name: "x".into(),
            pairs: vec![(String::new(), "10.0.0.2".into())],
            flows_per_path: 1,
        };
        assert_eq!(bare.paths(), ["10.0.0.2"]);
    }

    #[test]
    fn paths_that_add_nothing_share_a_bottleneck() {
        let f = findings(&measured(2, &[0.9e9, 0.9e9, 1.0e9, 1.05e9]), 2);
        assert_eq!(ids(&f), ["peer-nics-share-a-bottleneck"]);
        assert_eq!(f[0].severity, Severity::Critical);
        assert!(f[0].evidence.len() == 4 && f[0].title.contains("all 2 paths"));
    }

    #[test]
    fn paths_that_add_up_ask_for_every_nic_and_flows_for_more() {
        let f = findings(&measured(2, &[0.9e9, 0.9e9, 1.8e9, 1.9e9]), 2);
        assert_eq!(ids(&f), ["peer-use-all-nics"]);
        assert_eq!(f[0].severity, Severity::Warn);
        assert_eq!(
            f[0].bench_flags.as_deref(),
            Some("--paths 10.0.0.1=10.0.0.2,10.0.1.1=10.0.1.2")
        );
        // Several flows per path beat one by more than 20%.
        let f = findings(&measured(2, &[0.5e9, 0.5e9, 1.0e9, 1.9e9]), 2);
        assert_eq!(ids(&f), ["peer-use-all-nics", "peer-flow-count"]);
        assert_eq!(
            f[1].bench_flags.as_deref(),
            Some("--paths 10.0.0.1=10.0.0.2,10.0.1.1=10.0.1.2 -F 8")
        );
        // A gain inside the margins is only information.
        let f = findings(&measured(2, &[1e9, 0.5e9, 1.2e9, 1.3e9]), 2);
        assert_eq!(ids(&f), ["peer-use-all-nics"]);
        assert_eq!(f[0].severity, Severity::Info);
    }

    #[test]
    fn one_path_is_judged_on_flows_alone() {
        let f = findings(&measured(1, &[0.3e9, 1e9]), 1);
        assert_eq!(ids(&f), ["peer-flow-count"]);
        assert_eq!(
            f[0].bench_flags.as_deref(),
            Some("--paths 10.0.0.1=10.0.0.2 -F 4")
        );
        assert!(findings(&measured(1, &[1e9, 1.1e9]), 1).is_empty());
        assert!(findings(&[], 1).is_empty());
    }
}

/// What `wirespeed doctor` is asked.
#[derive(Debug, Clone, Default)]
pub struct DoctorRequest {
    /// What the host is sized for.
    pub goal: wirespeed_host::doctor::Goal,
    /// A `wirespeed serve` to measure against: one address per peer NIC.
    pub peers: Option<Vec<String>>,
    /// Its control port.
    pub port: u16,
    /// Its key, when it requires one.
    pub key: Option<Vec<u8>>,
    /// Seconds each peer test measures.
    pub test_duration: f64,
    /// Probe the path MTU toward the gateways and peers.
    pub probe: bool,
}

/// Doctor's JSON.
#[derive(Debug, serde::Serialize)]
pub struct DoctorReport {
    /// The host crate's schema version.
    pub schema_version: u32,
    /// The named namespace it ran in.
    pub netns: Option<String>,
    /// What is wrong, peer findings first.
    pub findings: Vec<Finding>,
    /// The peer tests run.
    pub peer_tests: Vec<PeerTest>,
    /// Path MTUs measured toward the gateways and peers.
    pub paths: Vec<wirespeed_host::pathmtu::PathMtu>,
}

/// Runs doctor's peer tests ([`probes`]) and turns them into findings.
fn peer_findings(
    r: &DoctorRequest,
    s: &Snapshot,
    peers: &[String],
) -> crate::error::Result<(Vec<PeerTest>, Vec<Finding>)> {
    if peers.is_empty() {
        return Err(crate::error::ExperimentError::NoPeers);
    }
    let pairs = local_for(s, peers);
    let mut cfg = wirespeed_engine::ClientConfig::new(&pairs[0].1);
    cfg.port = r.port;
    cfg.key = r.key.clone();
    let mut tests = Vec::new();
    for p in probes(&pairs) {
        let res = wirespeed_engine::run_test(&cfg, &p.spec(r.test_duration)?, &mut |_| {})
            .map_err(|e| {
                crate::error::failed(
                    format!("peer test {:?} against {} failed", p.name, pairs[0].1),
                    e,
                )
            })?;
        tests.push(p.result(&res));
    }
    let findings = findings(&tests, pairs.len());
    Ok((tests, findings))
}

/// Doctor: reads the host at `place`, probes the path MTU toward the
/// gateways and peers, runs the peer tests, and returns every finding
/// (the measured ones first).
pub fn doctor(
    place: &wirespeed_host::session::Place,
    r: &DoctorRequest,
) -> crate::error::Result<DoctorReport> {
    let s = place.snapshot()?;
    let paths = if !r.probe || place.recorded() {
        vec![]
    } else {
        let peers: Vec<std::net::IpAddr> = r
            .peers
            .iter()
            .flatten()
            .filter_map(|p| p.trim().parse().ok())
            .collect();
        wirespeed_host::pathmtu::measure_all(&s, &peers)
    };
    let mut findings = wirespeed_host::doctor::diagnose_measured(&s, &r.goal, &paths);
    let mut peer_tests = Vec::new();
    if let Some(p) = &r.peers {
        let (t, f) = peer_findings(r, &s, p)?;
        peer_tests = t;
        findings.splice(0..0, f);
    }
    Ok(DoctorReport {
        schema_version: wirespeed_host::tune::TUNE_SCHEMA,
        netns: s.netns.clone(),
        findings,
        peer_tests,
        paths,
    })
}
