//! Incidents as the watch reports them: an open explanation
//! ([`crate::localize::Open`]) with its worst figure read from the
//! detector ([`crate::health::Detector`]), as an [`Incident`] record and
//! as the [`DriftEvent`] of each transition, with the line people read.
//! Pure: the watcher adds the facts that changed and stores them.

use crate::health::Detector;
use crate::localize::{Open, Scope};
use wirespeed_types::fleet::{DriftEvent, Health, Incident, LinkHealth};

/// The series of an incident's links that are not healthy, worst first
/// (by how many times worse than its baseline).
fn worst_series(o: &Open, det: &Detector) -> Vec<LinkHealth> {
    let mut v: Vec<LinkHealth> = o
        .explanation
        .bad
        .iter()
        .flat_map(|l| det.states_of(l))
        .filter(|s| matches!(s.health, Health::Suspect | Health::Degraded))
        .collect();
    v.sort_by(|a, b| b.ratio().total_cmp(&a.ratio()));
    v
}

/// The incident record of `o` at `now`: open, or closed with `outcome`.
pub fn record(
    o: &Open,
    det: &Detector,
    changed: Vec<String>,
    closed: Option<(f64, String)>,
) -> Incident {
    let series = worst_series(o, det);
    let (scope, subject) = o.scope.scope_and_subject();
    let since = series
        .iter()
        .filter_map(|s| s.since_unix)
        .fold(f64::INFINITY, f64::min);
    let since = if since.is_finite() {
        since
    } else {
        o.opened_unix
    };
    let mut supporting: Vec<String> = o.explanation.bad.iter().map(|l| l.to_string()).collect();
    supporting.sort();
    let top = series.first().cloned().unwrap_or_default();
    let mut inc = Incident {
        id: o.id,
        scope: scope.to_string(),
        subject,
        since_unix: since,
        opened_unix: o.opened_unix,
        closed_unix: closed.as_ref().map(|c| c.0),
        outcome: closed.map(|c| c.1),
        workload: top.workload.clone(),
        metric: top.metric.clone(),
        before: top.baseline,
        worst: top.worst,
        degraded: o.explanation.bad.len(),
        links: o.explanation.judged,
        evidence: o.explanation.evidence.clone(),
        supporting,
        changed,
        message: String::new(),
    };
    inc.message = message(&inc);
    inc
}

/// `new` with the worst figure of `prev` when that was worse (a
/// recovering incident's series are healthy again: its record keeps what
/// it was at its worst), and `prev`'s facts.
pub fn keep_worst(prev: Option<&Incident>, mut new: Incident) -> Incident {
    if let Some(p) = prev {
        if new.metric.is_empty() || p.ratio() > new.ratio() {
            (new.workload, new.metric, new.before, new.worst) =
                (p.workload.clone(), p.metric.clone(), p.before, p.worst);
        }
        if new.supporting.len() < p.supporting.len() {
            (new.supporting, new.degraded, new.links, new.evidence) = (
                p.supporting.clone(),
                p.degraded,
                p.links,
                p.evidence.clone(),
            );
        }
        new.since_unix = new.since_unix.min(p.since_unix);
        new.opened_unix = p.opened_unix;
        new.changed = p.changed.clone();
    }
    new.message = message(&new);
    new
}

/// The line people read for an incident.
pub fn message(i: &Incident) -> String {
    let what = match i.scope.as_str() {
        "nic" => format!("NIC {}", i.subject),
        "pair" => format!("the path between {}", i.subject.replace(',', " and ")),
        "fabric" => format!("the fabric between zones {}", i.subject.replace(',', ", ")),
        other => format!("{other} {}", i.subject),
    };
    let fig = match i.figure() {
        f if f.is_empty() => f,
        f => format!("; {f}"),
    };
    let when = wirespeed_types::text::utc_time(i.since_unix);
    let facts = if i.changed.is_empty() {
        "no host fact changed".to_string()
    } else {
        i.changed.join(", ")
    };
    match (&i.closed_unix, &i.outcome) {
        (Some(end), Some(out)) => {
            let took = wirespeed_types::text::human_duration(end - i.since_unix);
            let how = if out == "recovered" {
                format!("recovered after {took}")
            } else {
                format!("now part of {out}")
            };
            format!("{what}: {how} (worst{fig})").replace("(worst; ", "(worst: ")
        }
        _ => format!("{what} degraded ({}){fig} from {when}; {facts}", i.evidence),
    }
}

/// The event of a transition of `i`: `opened` or `closed`.
pub fn event(i: &Incident, transition: &str, at_unix: f64) -> DriftEvent {
    let mut pairs: Vec<String> = i
        .supporting
        .iter()
        .filter_map(|l| {
            let (a, b) = l.split_once(" - ")?;
            let host = |e: &str| e.split('/').next().unwrap_or(e).to_string();
            Some(format!("{},{}", host(a), host(b)))
        })
        .collect();
    pairs.sort();
    pairs.dedup();
    DriftEvent {
        at_unix,
        since_unix: i.since_unix,
        scope: i.scope.clone(),
        subject: i.subject.clone(),
        workload: i.workload.clone(),
        metric: i.metric.clone(),
        before: i.before,
        after: i.worst,
        pairs,
        changed: i.changed.clone(),
        message: i.message.clone(),
        transition: transition.to_string(),
        incident: i.id,
        evidence: i.evidence.clone(),
        outcome: i.outcome.clone().unwrap_or_default(),
    }
}

/// The scope an event names, read back (a restarted watcher reopens the
/// incidents its predecessor left open).
pub fn scope_of(scope: &str, subject: &str) -> Option<Scope> {
    use crate::health::{End, Link};
    let end = |e: &str| -> End {
        match e.split_once('/') {
            Some((h, n)) => End {
                host: h.to_string(),
                nic: n.to_string(),
            },
            None => End {
                host: e.to_string(),
                nic: String::new(),
            },
        }
    };
    Some(match scope {
        "host" => Scope::Host(subject.to_string()),
        "nic" => Scope::Nic(end(subject)),
        "zone" => Scope::Zone(subject.to_string()),
        "fabric" => Scope::Fabric(subject.split(',').map(String::from).collect()),
        "pair" => {
            let (a, b) = subject.split_once(',')?;
            Scope::Pair(a.to_string(), b.to_string())
        }
        "link" => {
            let (a, b) = subject.split_once(" - ")?;
            Scope::Link(Link(end(a), end(b)))
        }
        _ => return None,
    })
}

/// The incidents that `events` (oldest first) opened and did not close,
/// with their last opening event.
pub fn left_open(events: &[DriftEvent]) -> Vec<&DriftEvent> {
    let mut open: std::collections::BTreeMap<u64, &DriftEvent> = Default::default();
    for e in events.iter().filter(|e| e.incident > 0) {
        match e.transition.as_str() {
            "opened" => {
                open.insert(e.incident, e);
            }
            "closed" => {
                open.remove(&e.incident);
            }
            _ => {}
        }
    }
    open.into_values().collect()
}

/// Incidents as `events` (oldest first) tell them: opened, and closed
/// when they were; newest first.
pub fn from_events(events: &[DriftEvent]) -> Vec<Incident> {
    let mut by: std::collections::BTreeMap<u64, Incident> = Default::default();
    for e in events.iter().filter(|e| e.incident > 0) {
        let i = by.entry(e.incident).or_insert_with(|| Incident {
            id: e.incident,
            scope: e.scope.clone(),
            subject: e.subject.clone(),
            since_unix: e.since_unix,
            opened_unix: e.at_unix,
            workload: e.workload.clone(),
            metric: e.metric.clone(),
            before: e.before,
            evidence: e.evidence.clone(),
            changed: e.changed.clone(),
            ..Incident::default()
        });
        i.worst = e.after;
        i.supporting = e.pairs.clone();
        if e.transition == "closed" {
            i.closed_unix = Some(e.at_unix);
            i.outcome = Some(e.outcome.clone()).filter(|o| !o.is_empty());
        }
        i.message = e.message.clone();
    }
    let mut v: Vec<Incident> = by.into_values().collect();
    v.sort_by(|a, b| {
        (a.closed_unix.is_some(), -a.opened_unix)
            .partial_cmp(&(b.closed_unix.is_some(), -b.opened_unix))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_read_back_from_their_names() {
        for (scope, subject) in [
            ("host", "c"),
            ("nic", "d/eth1"),
            ("zone", "z1"),
            ("fabric", "z1,z2,z3"),
            ("pair", "a,c"),
            ("link", "b/eth1 - d/eth1"),
        ] {
            let s = scope_of(scope, subject).expect(scope);
            assert_eq!(s.scope_and_subject(), (scope, subject.to_string()));
        }
        assert_eq!(scope_of("pair", "ac"), None);
        assert_eq!(scope_of("planet", "x"), None);
    }

    #[test]
    fn events_pair_up_into_incidents_open_first() {
        let ev = |id: u64, t: &str, at: f64, out: &str| DriftEvent {
            at_unix: at,
            since_unix: at - 5.0,
            scope: "host".into(),
            subject: format!("h{id}"),
            transition: t.into(),
            incident: id,
            outcome: out.into(),
            ..DriftEvent::default()
        };
        let events = [
            ev(1, "opened", 10.0, ""),
            ev(2, "opened", 20.0, ""),
            ev(1, "closed", 30.0, "recovered"),
            ev(3, "opened", 40.0, ""),
            ev(3, "closed", 50.0, "host c"),
        ];
        let open: Vec<u64> = left_open(&events).iter().map(|e| e.incident).collect();
        assert_eq!(open, [2]);
        let inc = from_events(&events);
        let order: Vec<u64> = inc.iter().map(|i| i.id).collect();
        assert_eq!(order, [2, 3, 1], "open first, then newest");
        assert_eq!(inc[1].outcome.as_deref(), Some("host c"));
        assert_eq!(inc[2].outcome.as_deref(), Some("recovered"));
        assert_eq!(inc[2].closed_unix, Some(30.0));
    }
}
