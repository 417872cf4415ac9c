//! Terminal renderings of the host side: snapshots, doctor's findings,
//! tune's plans and journals.

use crate::{human_bps, new_table};
use std::fmt::Write;
use wirespeed_types::host::finding::{Finding, Severity};
use wirespeed_types::host::snapshot::{Known, Snapshot};
use wirespeed_types::host::tune::{Journal, Plan};
use wirespeed_types::result::PeerTest;

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map(|x| x.to_string()).unwrap_or_else(|| "-".into())
}

fn flag(v: Option<bool>) -> &'static str {
    match v {
        Some(true) => "on",
        Some(false) => "off",
        None => "-",
    }
}

fn known<T: ToString>(k: &Known<T>) -> String {
    match k {
        Known::Value(v) => v.to_string(),
        Known::Unknown { .. } => "?".into(),
    }
}

/// The snapshot as sections of tables.
pub fn snapshot(s: &Snapshot) -> String {
    let mut o = String::new();
    snapshot_header(&mut o, s);
    snapshot_links(&mut o, s);
    snapshot_link_details(&mut o, s);
    snapshot_routing(&mut o, s);
    snapshot_sysctls(&mut o, s);
    o
}

/// The host line: name, kernel, CPUs, memory, BIG TCP.
fn snapshot_header(o: &mut String, s: &Snapshot) {
    let mem = s
        .mem_total_bytes
        .get()
        .map(|m| format!("{} GiB", m >> 30))
        .unwrap_or_else(|| "?".into());
    let _ = writeln!(
        o,
        "host {}{}: kernel {}, {} CPUs, {} memory; BIG TCP IPv6 {}, IPv4 {}",
        s.hostname,
        s.netns
            .as_deref()
            .map(|n| format!(" (netns {n})"))
            .unwrap_or_default(),
        s.kernel,
        s.cpus,
        mem,
        if s.big_tcp.ipv6 {
            "yes"
        } else {
            "no (needs 5.19)"
        },
        if s.big_tcp.ipv4 {
            "yes"
        } else {
            "no (needs 6.3)"
        }
    );
}

/// The links table.
fn snapshot_links(o: &mut String, s: &Snapshot) {
    let mut t = new_table(
        &[
            "link",
            "kind",
            "driver",
            "state",
            "speed",
            "mtu",
            "gso/gro",
            "gso4/gro4",
            "tso max",
            "queues",
            "tso gso gro lro",
            "rings rx/tx",
            "addresses",
        ],
        4,
    );
    for l in &s.links {
        let speed = l
            .speed_mbps
            .get()
            .map(|m| format!("{m} Mb/s"))
            .unwrap_or_else(|| "-".into());
        let rings = l
            .rings
            .get()
            .filter(|r| r.rx_max > 0)
            .map(|r| format!("{}/{}", r.rx, r.tx))
            .unwrap_or_else(|| "-".into());
        let mut name = l.name.clone();
        if let Some(m) = &l.master {
            name.push_str(&format!(" ({m})"));
        }
        t.add_row(vec![
            name,
            l.kind.clone(),
            known(&l.driver),
            l.state.clone(),
            speed,
            l.mtu.to_string(),
            format!("{}/{}", opt(l.gso_max_size), opt(l.gro_max_size)),
            format!("{}/{}", opt(l.gso_ipv4_max_size), opt(l.gro_ipv4_max_size)),
            opt(l.tso_max_size),
            format!("{}/{}", opt(l.tx_queues), opt(l.rx_queues)),
            format!(
                "{} {} {} {}",
                flag(l.offloads.tso),
                flag(l.offloads.gso),
                flag(l.offloads.gro),
                flag(l.offloads.lro)
            ),
            rings,
            l.addresses.join(" "),
        ]);
    }
    let _ = writeln!(o, "\n{t}");
}

/// Bonds, VXLANs, private flags and timestamping, a line each.
fn snapshot_link_details(o: &mut String, s: &Snapshot) {
    for l in &s.links {
        if let Some(b) = &l.bond {
            let slaves: Vec<String> = b
                .slaves
                .iter()
                .map(|x| {
                    format!(
                        "{} {}{}",
                        x.name,
                        x.mii_status,
                        x.speed_mbps
                            .map(|m| format!(" {m} Mb/s"))
                            .unwrap_or_default()
                    )
                })
                .collect();
            let _ = writeln!(
                o,
                "bond {}: mode {}, xmit_hash_policy {}, miimon {}, slaves: {}",
                l.name,
                b.mode,
                b.xmit_hash_policy,
                opt(b.miimon),
                slaves.join(", ")
            );
        }
        if let Some(v) = &l.vxlan {
            let _ = writeln!(
                o,
                "vxlan {}: id {}, port {}, local {}, remote {}, underlay {}",
                l.name,
                opt(v.id),
                opt(v.port),
                opt(v.local.clone()),
                opt(v.remote.clone()),
                opt(v.underlay.clone())
            );
        }
        if let Some(f) = l.private_flags.get().filter(|f| !f.is_empty()) {
            let list: Vec<String> = f
                .iter()
                .map(|(k, v)| format!("{k}={}", if *v { "on" } else { "off" }))
                .collect();
            let _ = writeln!(o, "private flags {}: {}", l.name, list.join(" "));
        }
        if let Some(t) = l.timestamping.get().filter(|t| !t.capabilities.is_empty()) {
            let _ = writeln!(
                o,
                "timestamping {}: {} ({}{})",
                l.name,
                t.best(),
                t.capabilities.join(" "),
                t.phc_index
                    .map(|i| format!(", PHC {i}"))
                    .unwrap_or_default()
            );
        }
    }
}

/// Routes, policy rules and which device each address leaves by.
fn snapshot_routing(o: &mut String, s: &Snapshot) {
    let mut r = new_table(&["table", "route", "via"], 3);
    for x in &s.routes {
        let via = if x.nexthops.is_empty() {
            format!(
                "{}{}",
                opt(x.dev.clone()),
                x.gateway
                    .as_ref()
                    .map(|g| format!(" gw {g}"))
                    .unwrap_or_default()
            )
        } else {
            let hops: Vec<String> = x
                .nexthops
                .iter()
                .map(|h| format!("{} w{}", opt(h.dev.clone()), h.weight))
                .collect();
            format!("multipath: {}", hops.join(", "))
        };
        let table = if x.table == 254 {
            "main".into()
        } else {
            x.table.to_string()
        };
        r.add_row(vec![table, x.dst.clone(), via]);
    }
    let _ = writeln!(o, "\nroutes\n{r}");
    let rules: Vec<String> = s
        .rules
        .iter()
        .filter(|x| x.src.is_some() || x.dst.is_some() || x.iif.is_some() || x.oif.is_some())
        .map(|x| {
            format!(
                "{}: from {} lookup {}",
                x.priority,
                opt(x.src.clone()),
                x.table
            )
        })
        .collect();
    if !rules.is_empty() {
        let _ = writeln!(o, "policy rules: {}", rules.join("; "));
    }
    let eg: Vec<String> = s
        .egress
        .iter()
        .map(|e| {
            format!(
                "{} ({}) leaves by {}",
                e.address,
                e.dev,
                opt(e.leaves_by.clone())
            )
        })
        .collect();
    if !eg.is_empty() {
        let _ = writeln!(o, "egress: {}", eg.join("; "));
    }
}

/// Every sysctl read.
fn snapshot_sysctls(o: &mut String, s: &Snapshot) {
    let _ = writeln!(o, "\nsysctls");
    for (k, v) in &s.sysctls {
        let val = match v {
            Known::Value(v) => v.clone(),
            Known::Unknown { unknown } => format!("unknown ({unknown})"),
        };
        let _ = writeln!(o, "  {k} = {val}");
    }
}

fn sev(s: Severity) -> &'static str {
    match s {
        Severity::Info => "info",
        Severity::Warn => "WARN",
        Severity::Critical => "CRITICAL",
    }
}

/// Findings with their evidence, reason and fix.
pub fn findings(f: &[Finding], peer: &[PeerTest]) -> String {
    let mut o = String::new();
    if !peer.is_empty() {
        let mut t = new_table(
            &["peer test", "paths", "flows/path", "throughput", "per path"],
            2,
        );
        for p in peer {
            let per: Vec<String> = p.per_path_bps.iter().map(|b| human_bps(*b)).collect();
            t.add_row(vec![
                p.name.clone(),
                p.paths.join(" "),
                p.flows_per_path.to_string(),
                human_bps(p.bps),
                per.join(" + "),
            ]);
        }
        let _ = writeln!(o, "{t}\n");
    }
    if f.is_empty() {
        let _ = writeln!(o, "no findings: nothing read here limits bandwidth");
    }
    for x in f {
        let _ = writeln!(o, "[{}] {} ({})", sev(x.severity), x.title, x.id);
        for e in &x.evidence {
            let _ = writeln!(o, "    {} = {}", e.name, e.value);
        }
        let _ = writeln!(o, "  why: {}", x.why);
        if let (Some(u), false) = (&x.unverified, x.actions.is_empty()) {
            let _ = writeln!(
                o,
                "  UNVERIFIED: {u}; `tune apply` applies it only with --force (then checks a full-size packet and rolls back if it is lost)"
            );
        }
        for a in &x.actions {
            let tag = if x.unverified.is_some() {
                " (unverified)"
            } else {
                ""
            };
            let _ = writeln!(o, "  fix{tag}: {}", a.command());
        }
        if let Some(b) = &x.bench_flags {
            let _ = writeln!(o, "  bench: {b}");
        }
        let _ = writeln!(o);
    }
    let fixes = f.iter().filter(|x| !x.actions.is_empty()).count();
    if fixes > 0 {
        let _ = writeln!(
            o,
            "{fixes} finding(s) have fixes: `wirespeed tune plan` shows them, `wirespeed tune apply` applies them (with a confirm deadline when they touch what carries this host)"
        );
    }
    o
}

/// A plan: one line per step with the current and new value.
pub fn plan(p: &Plan) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "plan from {}: {} step(s)", p.source, p.steps.len());
    for s in &p.steps {
        let state = if s.no_op {
            "already set".to_string()
        } else {
            format!("{} -> {}", s.current, s.action.value)
        };
        let scope = if s.host_wide { " (host-wide)" } else { "" };
        let _ = writeln!(o, "  {}    # {}{scope}", s.command, state);
        if let Some(c) = s.carrier.as_ref().filter(|_| !s.no_op) {
            let _ = writeln!(o, "      ! touches what carries this host: {c}");
        }
        if let Some(u) = s.unverified.as_ref().filter(|_| !s.no_op) {
            let _ = writeln!(o, "      ! UNVERIFIED: {u} (apply needs --force)");
        }
    }
    for (a, why) in &p.skipped {
        let _ = writeln!(o, "  skipped: {} ({why})", a.command());
    }
    o
}

/// The journal; `watchdog_alive` and `earlier_boot` are what only the
/// host can tell (wirespeed-host's `JournalCheck`).
pub fn journal(j: &Journal, watchdog_alive: Option<bool>, earlier_boot: bool) -> String {
    let mut o = String::new();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|x| x.as_secs_f64())
        .unwrap_or(0.0);
    let watchdog = match (j.watchdog_pid, watchdog_alive) {
        (Some(p), Some(true)) => format!("watchdog pid {p} running"),
        (Some(p), _) => format!("watchdog pid {p} GONE"),
        (None, _) => "no watchdog recorded".into(),
    };
    let timer = j
        .timer_unit
        .as_deref()
        .map(|u| format!(", systemd timer {u}.timer"))
        .unwrap_or_default();
    let wait = match j.deadline_unix {
        _ if earlier_boot => "from an EARLIER BOOT (the kernel reset these settings)".into(),
        Some(d) if d <= now => format!(
            "OVERDUE: the confirm deadline passed {:.0} s ago unconfirmed ({watchdog}{timer})",
            now - d
        ),
        Some(d) => format!(
            "rolls back in {:.0} s unless confirmed ({watchdog}{timer})",
            d - now
        ),
        None => "confirmed".into(),
    };
    let _ = writeln!(o, "journal: {} change(s), {wait}", j.entries.len());
    for e in &j.entries {
        let why = e
            .side_effect_of
            .as_deref()
            .map(|c| format!(" (side effect of {c})"))
            .unwrap_or_default();
        let _ = writeln!(o, "  {}: {} -> {}{why}", e.setting.label(), e.old, e.new);
    }
    o
}
