//! Localization: the smallest explanation of the links that are not
//! healthy, and the incidents it opens and closes.
//!
//! Candidates are what links share: a pair of hosts (or one NIC pair of
//! it), one NIC of a host, a host, the links leaving one zone, and the
//! links between zones (the fabric). A candidate holds when most of its
//! judged links are suspect or degraded ([`SHARE`]) and, above a pair,
//! when they reach at least two peers; the candidate that explains most
//! links not yet explained is taken first, ties going to the smaller
//! thing. A suspect link counts as evidence but only a degraded one opens
//! an incident: when the first link of a faulty host is confirmed, its
//! other links have had one test past their thresholds each and name the
//! host with it, not each pair one at a time.
//!
//! [`Incidents`] keeps the open ones: a new explanation that only covers
//! links of an open incident opens nothing (a host recovering link by
//! link stays one incident); one that takes in an open incident's links
//! closes it as part of itself (a pair found first, then its host); an
//! incident closes when none of its links is suspect or degraded.
//! Pure: no I/O.

use crate::health::{End, Link};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use wirespeed_types::fleet::Health;

/// Share of a candidate's judged links that must be suspect or degraded
/// for it to hold.
pub const SHARE: f64 = 0.75;

/// What an explanation names.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    /// A host: most of its links.
    Host(String),
    /// One NIC of a host: most links over it, few over its others.
    Nic(End),
    /// The links between zones (two or more of them).
    Fabric(Vec<String>),
    /// The links leaving one zone.
    Zone(String),
    /// Every link between two hosts.
    Pair(String, String),
    /// One NIC pair of two hosts that have several.
    Link(Link),
}

impl Scope {
    /// `host`, `nic`, `fabric`, `zone`, `pair` or `link`, and the subject.
    pub fn scope_and_subject(&self) -> (&'static str, String) {
        match self {
            Scope::Host(h) => ("host", h.clone()),
            Scope::Nic(e) => ("nic", e.to_string()),
            Scope::Fabric(z) => ("fabric", z.join(",")),
            Scope::Zone(z) => ("zone", z.clone()),
            Scope::Pair(a, b) => ("pair", format!("{a},{b}")),
            Scope::Link(l) => ("link", l.to_string()),
        }
    }

    /// Ties between candidates that explain as many links go to the
    /// lower rank: a host over its only NIC, the fabric over a zone when
    /// there are two zones.
    fn rank(&self) -> u8 {
        match self {
            Scope::Host(_) => 0,
            Scope::Nic(_) => 1,
            Scope::Fabric(_) => 2,
            Scope::Zone(_) => 3,
            Scope::Pair(..) => 4,
            Scope::Link(_) => 5,
        }
    }
}

/// Which links there are and where their ends sit.
#[derive(Debug, Clone, Default)]
pub struct Topology {
    zones: HashMap<String, String>,
    links: Vec<Link>,
    index: HashMap<Link, usize>,
    by_host: HashMap<String, Vec<usize>>,
    by_nic: HashMap<End, Vec<usize>>,
    by_pair: HashMap<(String, String), Vec<usize>>,
    by_zone: HashMap<String, Vec<usize>>,
    cross: Vec<usize>,
    /// The zones, sorted.
    zone_names: Vec<String>,
}

impl Topology {
    /// The links the watch probes, and each host's zone (hosts without
    /// one are in none: no zone or fabric is named for them).
    pub fn new(links: Vec<Link>, zones: HashMap<String, String>) -> Topology {
        let mut t = Topology {
            zones,
            ..Topology::default()
        };
        let mut seen = HashSet::new();
        for l in links {
            if seen.insert(l.clone()) {
                t.add(l);
            }
        }
        let z: BTreeSet<&String> = t.zones.values().collect();
        t.zone_names = z.into_iter().cloned().collect();
        t
    }

    fn add(&mut self, l: Link) {
        let i = self.links.len();
        self.index.insert(l.clone(), i);
        for e in [&l.0, &l.1] {
            self.by_host.entry(e.host.clone()).or_default().push(i);
            self.by_nic.entry(e.clone()).or_default().push(i);
        }
        self.by_pair
            .entry((l.0.host.clone(), l.1.host.clone()))
            .or_default()
            .push(i);
        let (za, zb) = (self.zones.get(&l.0.host), self.zones.get(&l.1.host));
        if let (Some(za), Some(zb)) = (za, zb)
            && za != zb
        {
            self.cross.push(i);
            self.by_zone.entry(za.clone()).or_default().push(i);
            self.by_zone.entry(zb.clone()).or_default().push(i);
        }
        self.links.push(l);
    }

    /// How many links it holds.
    pub fn len(&self) -> usize {
        self.links.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.links.is_empty()
    }

    /// Whether link `l` is in scope `s`.
    pub fn contains(&self, s: &Scope, l: &Link) -> bool {
        let zone = |h: &str| self.zones.get(h);
        match s {
            Scope::Host(h) => l.touches(h),
            Scope::Nic(e) => l.0 == *e || l.1 == *e,
            Scope::Pair(a, b) => l.0.host == *a && l.1.host == *b,
            Scope::Link(x) => l == x,
            Scope::Zone(z) => {
                let (za, zb) = (zone(&l.0.host), zone(&l.1.host));
                za.is_some() && zb.is_some() && za != zb && (za == Some(z) || zb == Some(z))
            }
            Scope::Fabric(_) => {
                let (za, zb) = (zone(&l.0.host), zone(&l.1.host));
                za.is_some() && zb.is_some() && za != zb
            }
        }
    }

    /// The links of a scope.
    fn scope_links(&self, s: &Scope) -> Vec<&Link> {
        let ix: &[usize] = match s {
            Scope::Host(h) => self.by_host.get(h).map_or(&[], Vec::as_slice),
            Scope::Nic(e) => self.by_nic.get(e).map_or(&[], Vec::as_slice),
            Scope::Fabric(_) => &self.cross,
            Scope::Zone(z) => self.by_zone.get(z).map_or(&[], Vec::as_slice),
            Scope::Pair(a, b) => self
                .by_pair
                .get(&(a.clone(), b.clone()))
                .map_or(&[], Vec::as_slice),
            Scope::Link(l) => {
                return self
                    .index
                    .get(l)
                    .map(|&i| &self.links[i])
                    .into_iter()
                    .collect();
            }
        };
        ix.iter().map(|&i| &self.links[i]).collect()
    }

    /// The candidates a link that is not healthy suggests.
    fn candidates(&self, l: &Link, out: &mut BTreeSet<Scope>) {
        for e in [&l.0, &l.1] {
            out.insert(Scope::Host(e.host.clone()));
            out.insert(Scope::Nic(e.clone()));
        }
        let pair = (l.0.host.clone(), l.1.host.clone());
        if self.by_pair.get(&pair).is_some_and(|v| v.len() > 1) {
            out.insert(Scope::Link(l.clone()));
        }
        out.insert(Scope::Pair(pair.0, pair.1));
        let (za, zb) = (self.zones.get(&l.0.host), self.zones.get(&l.1.host));
        if let (Some(za), Some(zb)) = (za, zb)
            && za != zb
        {
            out.insert(Scope::Zone(za.clone()));
            out.insert(Scope::Zone(zb.clone()));
            out.insert(Scope::Fabric(self.zone_names.clone()));
        }
    }
}

/// A candidate that holds, with its evidence.
#[derive(Debug, Clone, PartialEq)]
pub struct Explanation {
    /// What it names.
    pub scope: Scope,
    /// Its links that are suspect or degraded.
    pub bad: Vec<Link>,
    /// Its links with a judged state (not learning).
    pub judged: usize,
    /// What supports it, in words.
    pub evidence: String,
}

/// The health of every link (the worst of its series).
pub type States = HashMap<Link, Health>;

fn is_bad(h: Option<&Health>) -> bool {
    matches!(h, Some(Health::Suspect | Health::Degraded))
}

/// The bad links of `scope` and how many are judged; None when it does
/// not hold.
fn holds<'t>(t: &'t Topology, s: &Scope, st: &States) -> Option<(Vec<&'t Link>, usize)> {
    let links = t.scope_links(s);
    let mut judged = 0;
    let mut bad: Vec<&Link> = Vec::new();
    for l in links {
        match st.get(l) {
            None | Some(Health::Learning) => {}
            Some(h) => {
                judged += 1;
                if is_bad(Some(h)) {
                    bad.push(l);
                }
            }
        }
    }
    if bad.is_empty() {
        return None;
    }
    let share = bad.len() as f64 / judged as f64;
    let peers = |s: &str| -> usize {
        let p: BTreeSet<&str> = bad
            .iter()
            .map(|l| if l.0.host == s { &l.1.host } else { &l.0.host })
            .map(String::as_str)
            .collect();
        p.len()
    };
    let ok = match s {
        Scope::Link(_) => true,
        Scope::Pair(..) => bad.len() == judged,
        Scope::Host(h) => bad.len() >= 2 && share >= SHARE && peers(h) >= 2,
        Scope::Nic(e) => bad.len() >= 2 && share >= SHARE && peers(&e.host) >= 2,
        Scope::Zone(_) | Scope::Fabric(_) => bad.len() >= 2 && share >= SHARE,
    };
    ok.then_some((bad, judged))
}

/// `c/eth1: 2 of 2 links over eth1 not healthy, 0 of 5 over eth0`, and
/// the like for each scope.
fn evidence(t: &Topology, s: &Scope, bad: usize, judged: usize, st: &States) -> String {
    let count = |sc: &Scope| -> (usize, usize) {
        let ls = t.scope_links(sc);
        let j: Vec<&&Link> = ls
            .iter()
            .filter(|l| st.get(**l).is_some_and(|h| *h != Health::Learning))
            .collect();
        (j.iter().filter(|l| is_bad(st.get(***l))).count(), j.len())
    };
    match s {
        Scope::Nic(e) => {
            let mut others = Vec::new();
            for (nic, _) in t.by_nic.iter().filter(|(n, _)| n.host == e.host && *n != e) {
                let (b, j) = count(&Scope::Nic(nic.clone()));
                others.push(format!("{b} of {j} over {}", nic.nic));
            }
            others.sort();
            let mut text = format!("{e}: {bad} of {judged} links over {} not healthy", e.nic);
            for o in others {
                text.push_str(&format!(", {o}"));
            }
            text
        }
        Scope::Host(h) => format!("{h}: {bad} of {judged} of its links not healthy"),
        Scope::Zone(z) => {
            let inside = t
                .by_pair
                .iter()
                .filter(|((a, b), _)| t.zones.get(a) == Some(z) && t.zones.get(b) == Some(z))
                .flat_map(|(_, v)| v.iter().map(|&i| &t.links[i]))
                .filter(|l| st.get(*l).is_some_and(|h| *h != Health::Learning));
            let (mut ib, mut ij) = (0, 0);
            for l in inside {
                ij += 1;
                ib += usize::from(is_bad(st.get(l)));
            }
            format!(
                "zone {z}: {bad} of {judged} links leaving it not healthy, {ib} of {ij} within it"
            )
        }
        Scope::Fabric(zs) => format!(
            "between zones {}: {bad} of {judged} links not healthy",
            zs.join(", ")
        ),
        Scope::Pair(a, b) => format!("{a} - {b}: {bad} of {judged} links not healthy"),
        Scope::Link(l) => {
            let (pb, pj) = count(&Scope::Pair(l.0.host.clone(), l.1.host.clone()));
            format!(
                "{l}: not healthy; {pb} of {pj} links between {} and {}",
                l.0.host, l.1.host
            )
        }
    }
}

/// The smallest explanations of the links that are not healthy (`bad`,
/// as `st` has them), each with at least one degraded link (suspect ones
/// only support).
pub fn explain<'a>(
    t: &Topology,
    st: &States,
    bad: impl IntoIterator<Item = &'a Link>,
) -> Vec<Explanation> {
    let bad: Vec<&Link> = bad.into_iter().filter(|l| is_bad(st.get(*l))).collect();
    if !bad.iter().any(|l| st.get(*l) == Some(&Health::Degraded)) {
        return Vec::new();
    }
    let mut cands = BTreeSet::new();
    for l in &bad {
        t.candidates(l, &mut cands);
    }
    let holding: Vec<(Scope, Vec<&Link>, usize)> = cands
        .into_iter()
        .filter_map(|s| holds(t, &s, st).map(|(b, j)| (s, b, j)))
        .collect();
    let mut left: BTreeSet<&Link> = bad.iter().copied().collect();
    let mut out = Vec::new();
    loop {
        let best = holding
            .iter()
            .map(|(s, b, j)| (b.iter().filter(|l| left.contains(**l)).count(), s, b, j))
            .filter(|(n, ..)| *n > 0)
            .max_by(|x, y| x.0.cmp(&y.0).then(y.1.rank().cmp(&x.1.rank())));
        let Some((_, s, b, j)) = best else { break };
        for l in b {
            left.remove(l);
        }
        if b.iter().any(|l| st.get(*l) == Some(&Health::Degraded)) {
            out.push(Explanation {
                scope: s.clone(),
                bad: b.iter().map(|l| (*l).clone()).collect(),
                judged: *j,
                evidence: evidence(t, s, b.len(), *j, st),
            });
        }
    }
    out
}

/// An incident as [`Incidents`] keeps it while open.
#[derive(Debug, Clone, PartialEq)]
pub struct Open {
    /// Its number.
    pub id: u64,
    /// What it names.
    pub scope: Scope,
    /// Its newest explanation.
    pub explanation: Explanation,
    /// When it opened, Unix seconds.
    pub opened_unix: f64,
}

/// What happened to an incident.
#[derive(Debug, Clone, PartialEq)]
pub enum Transition {
    /// A new incident.
    Opened(Open),
    /// Its explanation changed (more or fewer links).
    Updated(Open),
    /// It closed: recovered (None) or taken in by another (its scope).
    Closed(Open, Option<Scope>),
}

/// The open incidents.
#[derive(Debug, Clone, Default)]
pub struct Incidents {
    open: BTreeMap<u64, Open>,
    next_id: u64,
}

impl Incidents {
    /// None open; new ones numbered from `next_id` (at least 1).
    pub fn new(next_id: u64) -> Incidents {
        Incidents {
            open: BTreeMap::new(),
            next_id: next_id.max(1),
        }
    }

    /// Takes back an incident a previous watcher left open.
    pub fn reopen(&mut self, o: Open) {
        self.next_id = self.next_id.max(o.id + 1);
        self.open.insert(o.id, o);
    }

    /// The open incidents, oldest first.
    pub fn open(&self) -> impl Iterator<Item = &Open> {
        self.open.values()
    }

    /// Applies this moment's explanations and link states at `now`
    /// (`t`: where the links sit).
    pub fn update(
        &mut self,
        t: &Topology,
        found: Vec<Explanation>,
        st: &States,
        now: f64,
    ) -> Vec<Transition> {
        let mut out = Vec::new();
        let mut seen: HashSet<u64> = HashSet::new();
        for e in found {
            if let Some(o) = self.open.values_mut().find(|o| o.scope == e.scope) {
                seen.insert(o.id);
                if o.explanation.bad != e.bad {
                    o.explanation = e;
                    out.push(Transition::Updated(o.clone()));
                }
                continue;
            }
            let covered = e
                .bad
                .iter()
                .all(|l| self.open.values().any(|o| t.contains(&o.scope, l)));
            if covered {
                continue;
            }
            let taken: Vec<u64> = self
                .open
                .values()
                .filter(|o| !o.explanation.bad.is_empty())
                .filter(|o| o.explanation.bad.iter().all(|l| t.contains(&e.scope, l)))
                .map(|o| o.id)
                .collect();
            for id in taken {
                if let Some(o) = self.open.remove(&id) {
                    out.push(Transition::Closed(o, Some(e.scope.clone())));
                }
            }
            let o = Open {
                id: self.next_id,
                scope: e.scope.clone(),
                explanation: e,
                opened_unix: now,
            };
            self.next_id += 1;
            seen.insert(o.id);
            self.open.insert(o.id, o.clone());
            out.push(Transition::Opened(o));
        }
        let done: Vec<u64> = self
            .open
            .values()
            .filter(|o| !seen.contains(&o.id))
            .filter(|o| !t.scope_links(&o.scope).iter().any(|l| is_bad(st.get(*l))))
            .map(|o| o.id)
            .collect();
        for id in done {
            if let Some(o) = self.open.remove(&id) {
                out.push(Transition::Closed(o, None));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn end(h: &str, n: &str) -> End {
        End {
            host: h.into(),
            nic: n.into(),
        }
    }

    fn link(a: (&str, &str), b: (&str, &str)) -> Link {
        let (x, y) = (end(a.0, a.1), end(b.0, b.1));
        if x <= y { Link(x, y) } else { Link(y, x) }
    }

    /// The watch-faults lab: six hosts in three zones, b, d and f with a
    /// second NIC; every pair probed, NIC pairs zipped.
    fn lab() -> Topology {
        let hosts = [
            ("a", "z1", 1),
            ("b", "z1", 2),
            ("c", "z2", 1),
            ("d", "z2", 2),
            ("e", "z3", 1),
            ("f", "z3", 2),
        ];
        let mut links = Vec::new();
        for (i, x) in hosts.iter().enumerate() {
            for y in &hosts[i + 1..] {
                for n in 0..x.2.min(y.2) {
                    let nic = format!("eth{n}");
                    links.push(link((x.0, &nic), (y.0, &nic)));
                }
            }
        }
        let zones = hosts
            .iter()
            .map(|h| (h.0.to_string(), h.1.to_string()))
            .collect();
        Topology::new(links, zones)
    }

    /// Every link healthy but those `bad` says, degraded or suspect.
    fn states(t: &Topology, bad: impl Fn(&Link) -> Option<Health>) -> States {
        t.links
            .iter()
            .map(|l| (l.clone(), bad(l).unwrap_or(Health::Healthy)))
            .collect()
    }

    fn explain(t: &Topology, st: &States) -> Vec<Explanation> {
        super::explain(t, st, st.keys())
    }

    fn named(t: &Topology, st: &States) -> Vec<(&'static str, String)> {
        let mut v: Vec<_> = explain(t, st)
            .iter()
            .map(|e| e.scope.scope_and_subject())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn each_planted_fault_is_named_by_the_smallest_thing_it_shares() {
        let t = lab();
        assert_eq!(t.len(), 18);
        let one = states(&t, |l| {
            (l == &link(("a", "eth0"), ("c", "eth0"))).then_some(Health::Degraded)
        });
        assert_eq!(named(&t, &one), [("pair", "a,c".to_string())]);
        let nic = states(&t, |l| {
            (l.0 == end("d", "eth1") || l.1 == end("d", "eth1")).then_some(Health::Degraded)
        });
        assert_eq!(named(&t, &nic), [("nic", "d/eth1".to_string())]);
        let e = &explain(&t, &nic)[0];
        assert_eq!(
            e.evidence,
            "d/eth1: 2 of 2 links over eth1 not healthy, 0 of 5 over eth0"
        );
        let host = states(&t, |l| l.touches("c").then_some(Health::Degraded));
        assert_eq!(named(&t, &host), [("host", "c".to_string())]);
        let zone = states(&t, |l| {
            let z1 = |h: &str| h == "a" || h == "b";
            (z1(&l.0.host) != z1(&l.1.host)).then_some(Health::Degraded)
        });
        assert_eq!(named(&t, &zone), [("zone", "z1".to_string())]);
        assert_eq!(
            explain(&t, &zone)[0].evidence,
            "zone z1: 10 of 10 links leaving it not healthy, 0 of 1 within it"
        );
        let fabric = states(&t, |l| {
            (t.cross
                .contains(&t.links.iter().position(|x| x == l).unwrap()))
            .then_some(Health::Degraded)
        });
        assert_eq!(named(&t, &fabric), [("fabric", "z1,z2,z3".to_string())]);
        // One NIC pair of two hosts with two: the link, not the pair.
        let rail = states(&t, |l| {
            (l == &link(("b", "eth1"), ("d", "eth1"))).then_some(Health::Degraded)
        });
        assert_eq!(named(&t, &rail), [("link", "b/eth1 - d/eth1".to_string())]);
    }

    #[test]
    fn a_host_confirmed_on_one_link_is_named_by_its_suspect_others() {
        let t = lab();
        let first = link(("a", "eth0"), ("c", "eth0"));
        let st = states(&t, |l| {
            if l == &first {
                Some(Health::Degraded)
            } else {
                l.touches("c").then_some(Health::Suspect)
            }
        });
        assert_eq!(named(&t, &st), [("host", "c".to_string())]);
        // Only suspects: nothing yet.
        let st = states(&t, |l| l.touches("c").then_some(Health::Suspect));
        assert!(explain(&t, &st).is_empty());
        // Two of five of a's pairs (its link to c and one noisy pair) do
        // not name a: the three innocent hosts.
        let st = states(&t, |l| {
            (l == &first || l == &link(("a", "eth0"), ("e", "eth0"))).then_some(Health::Degraded)
        });
        assert_eq!(
            named(&t, &st),
            [("pair", "a,c".to_string()), ("pair", "a,e".to_string())]
        );
    }

    #[test]
    fn incidents_open_grow_and_close_without_splitting() {
        let t = lab();
        let first = link(("a", "eth0"), ("c", "eth0"));
        let mut inc = Incidents::new(1);
        // A pair first (the host's other links not yet probed).
        let st = states(&t, |l| (l == &first).then_some(Health::Degraded));
        let tr = inc.update(&t, explain(&t, &st), &st, 10.0);
        assert!(
            matches!(&tr[..], [Transition::Opened(o)] if o.id == 1 && o.scope == Scope::Pair("a".into(), "c".into()))
        );
        // Then the host: the pair is taken in.
        let st = states(&t, |l| l.touches("c").then_some(Health::Degraded));
        let tr = inc.update(&t, explain(&t, &st), &st, 15.0);
        assert_eq!(tr.len(), 2, "{tr:?}");
        assert!(
            matches!(&tr[0], Transition::Closed(o, Some(Scope::Host(h))) if o.id == 1 && h == "c")
        );
        assert!(matches!(&tr[1], Transition::Opened(o) if o.id == 2));
        // Recovering link by link: still the host, no pair opens.
        let st = states(&t, |l| (l == &first).then_some(Health::Degraded));
        let tr = inc.update(&t, explain(&t, &st), &st, 20.0);
        assert!(tr.is_empty(), "{tr:?}");
        assert_eq!(inc.open().count(), 1);
        // A host taken back by a restarted watcher (no links known yet)
        // is not taken in by an unrelated pair.
        let mut back = Incidents::new(9);
        back.reopen(Open {
            id: 7,
            scope: Scope::Host("c".into()),
            explanation: Explanation {
                scope: Scope::Host("c".into()),
                bad: Vec::new(),
                judged: 0,
                evidence: String::new(),
            },
            opened_unix: 1.0,
        });
        let ab = link(("a", "eth0"), ("b", "eth0"));
        let st2 = states(&t, |l| {
            if l.touches("c") || l == &ab {
                Some(Health::Degraded)
            } else {
                None
            }
        });
        let tr = back.update(&t, explain(&t, &st2), &st2, 30.0);
        assert!(
            tr.iter().all(|x| !matches!(x, Transition::Closed(..))),
            "{tr:?}"
        );
        assert!(
            matches!(&tr[..], [Transition::Opened(o), Transition::Updated(u)] | [Transition::Updated(u), Transition::Opened(o)] if o.id == 9 && u.id == 7),
            "{tr:?}"
        );
        // All healthy: closed as recovered.
        let st = states(&t, |_| None);
        let tr = inc.update(&t, explain(&t, &st), &st, 25.0);
        assert!(matches!(&tr[..], [Transition::Closed(o, None)] if o.id == 2));
        assert_eq!(inc.open().count(), 0);
    }
}
