//! Network faults planted in a lab's namespaces and removed again: a
//! delay, a random loss and a rate cap on chosen packets, made from what
//! the project's kernels have (netem is not built; docs/lab-file.md,
//! "Faults"):
//!
//! - delay: iptables sends the packets to an NFQUEUE (`--queue-bypass`:
//!   with no reader they pass undelayed, never black-holed) and a delayer
//!   ([`run_delayer`], run as `wirespeed lab delayer` inside the host's
//!   namespace) holds each one the delay, then accepts it, in order;
//! - loss: iptables drops each packet with probability pct/100 (a packet
//!   leaving the host goes to a queue nobody reads instead, so its sender
//!   counts it sent, as on a lossy wire; see [`rule_ops`]);
//! - rate: an htb root qdisc on the egress device with u32 filters that
//!   put the chosen packets in a capped class.
//!
//! Rules go to the `mangle` table, which labs do not otherwise use, so
//! they are met before a `[[policy]]`'s filter rules; a loss rule is
//! inserted first in its chain, a delay rule appended, so a packet of two
//! faults is dropped or not before it is queued (a queued packet skips the
//! rest of its chain). A [`Planted`] fault is removed on drop: exactly its
//! rules are deleted, its qdisc, its delayer stopped, and iptables-nft's
//! `mangle` table deleted again when its rules were the table's last.
//! Every change is shown as the command a person would type ([`FaultOp`]).

use crate::build::{LabState, ns_command, tbf_sizes, tc};
use crate::error::LabError;
use crate::spec::{CAP_RATES, CapKind};
use std::collections::HashSet;
use std::fmt;
use std::net::IpAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU16, Ordering};
use wirespeed_host::{HostError, Op};

mod delayer;
pub use delayer::{DelayerOpts, DelayerStats, QUEUE_MAX_LEN, delayer_args, run_delayer};
use delayer::{DelayerProc, StartError, start_delayer};

/// The longest delay a fault holds packets, in milliseconds.
pub const MAX_DELAY_MS: f64 = 10_000.0;

/// The first NFQUEUE number a delay fault tries (each fault takes a
/// free one at or above it).
pub const FIRST_QUEUE: u16 = 1000;

/// The NFQUEUE a loss fault sends its packets to in POSTROUTING: nobody
/// reads it, so they are dropped after the sender counted them sent (see
/// [`rule_ops`]). Delay faults never take it.
pub const LOSS_QUEUE: u16 = 65535;

/// A fault to plant: what, in which host's namespace, on which packets.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultSpec {
    /// The lab host whose namespace holds the fault.
    pub host: String,
    /// What happens to the chosen packets.
    pub kind: FaultKind,
    /// Which packets.
    pub on: FaultMatch,
}

/// What a fault does to its packets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FaultKind {
    /// Holds each packet `ms` milliseconds, in (0, 10000].
    Delay {
        /// The delay in milliseconds.
        ms: f64,
    },
    /// Drops each packet with probability `pct` percent, in (0, 100].
    Loss {
        /// The share dropped, in percent.
        pct: f64,
    },
    /// Caps the packets at `bps` bits per second (8 kbit/s to 10 Tbit/s).
    Rate {
        /// The cap in bits per second.
        bps: u64,
    },
}

/// Which packets a fault acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FaultMatch {
    /// Packets the host sends or forwards to these addresses (one
    /// direction). Delay and loss: `POSTROUTING -d ADDR`; rate: on the
    /// device the host's route to each address leaves by.
    To(Vec<IpAddr>),
    /// Everything leaving or entering the host's device, its own traffic
    /// and what it forwards (both directions). Delay and loss:
    /// `PREROUTING -i DEV` and `POSTROUTING -o DEV`, IPv4 and IPv6; rate:
    /// the device's egress and that of the other end of its link.
    Nic(String),
    /// What the host forwards into or out of the device (a router's
    /// uplink, both directions). Delay and loss: `FORWARD -i DEV` and
    /// `FORWARD -o DEV`, IPv4 and IPv6; rate: as [`FaultMatch::Nic`] (tc
    /// cannot tell forwarded packets from the host's own).
    Forwarded(String),
}

impl FaultKind {
    /// Checks the value's range; the error names the field.
    pub fn validate(&self) -> Result<(), LabError> {
        match *self {
            FaultKind::Delay { ms } if !(ms > 0.0 && ms <= MAX_DELAY_MS) => {
                Err(LabError::Fault(format!(
                    "delay ms {ms} is outside (0, 10000]: give a delay above 0 and at most 10 s"
                )))
            }
            FaultKind::Loss { pct } if !(pct > 0.0 && pct <= 100.0) => {
                Err(LabError::Fault(format!(
                    "loss pct {pct} is outside (0, 100]: give a share above 0% and at most 100%"
                )))
            }
            FaultKind::Rate { bps } if !CAP_RATES.contains(&bps) => Err(LabError::Fault(format!(
                "rate bps {bps} is outside {}..={} (8 kbit/s to 10 Tbit/s)",
                CAP_RATES.start(),
                CAP_RATES.end()
            ))),
            _ => Ok(()),
        }
    }

    /// The kind from the CLI's flags: exactly one of `--delay 2ms`,
    /// `--loss 1%`, `--rate 50mbit`.
    pub fn from_flags(
        delay: Option<&str>,
        loss: Option<&str>,
        rate: Option<&str>,
    ) -> Result<FaultKind, LabError> {
        match (delay, loss, rate) {
            (Some(d), None, None) => Ok(FaultKind::Delay {
                ms: parse_delay_ms(d)?,
            }),
            (None, Some(l), None) => Ok(FaultKind::Loss {
                pct: parse_loss_pct(l)?,
            }),
            (None, None, Some(r)) => Ok(FaultKind::Rate {
                bps: parse_rate_bps(r)?,
            }),
            _ => Err(LabError::Fault(
                "give exactly one of --delay, --loss, --rate".into(),
            )),
        }
    }
}

impl FaultMatch {
    /// The match from the CLI's flags: exactly one of `--to ADDR[,ADDR]`,
    /// `--nic DEV`, `--forwarded DEV`.
    pub fn from_flags(
        to: &[String],
        nic: Option<&str>,
        forwarded: Option<&str>,
    ) -> Result<FaultMatch, LabError> {
        match (to.is_empty(), nic, forwarded) {
            (false, None, None) => Ok(FaultMatch::To(parse_addrs(to)?)),
            (true, Some(d), None) => Ok(FaultMatch::Nic(d.to_string())),
            (true, None, Some(d)) => Ok(FaultMatch::Forwarded(d.to_string())),
            _ => Err(LabError::Fault(
                "give exactly one of --to, --nic, --forwarded".into(),
            )),
        }
    }

    /// The device named by a device match.
    pub fn dev(&self) -> Option<&str> {
        match self {
            FaultMatch::To(_) => None,
            FaultMatch::Nic(d) | FaultMatch::Forwarded(d) => Some(d),
        }
    }
}

impl FaultSpec {
    /// Checks what can be checked without the lab: values, a non-empty
    /// address list, a device name; the error names the field.
    pub fn validate(&self) -> Result<(), LabError> {
        if self.host.is_empty() {
            return Err(LabError::Fault("host is empty: name a lab host".into()));
        }
        self.kind.validate()?;
        match &self.on {
            FaultMatch::To(a) if a.is_empty() => Err(LabError::Fault(
                "to: no address given: name at least one destination".into(),
            )),
            FaultMatch::To(_) => Ok(()),
            FaultMatch::Nic(d) | FaultMatch::Forwarded(d) => valid_dev(d),
        }
    }
}

/// A device name as the kernel takes it: 1-15 bytes, no '/' or space.
fn valid_dev(d: &str) -> Result<(), LabError> {
    if d.is_empty() || d.len() > 15 || d.contains('/') || d.contains(char::is_whitespace) {
        return Err(LabError::Fault(format!(
            "dev {d:?} is not a device name (1-15 characters, no '/' or space)"
        )));
    }
    Ok(())
}

/// Parses a delay with its unit (`2ms`, `1.5ms`, `500us`, `1s`) into
/// milliseconds.
pub fn parse_delay_ms(s: &str) -> Result<f64, LabError> {
    let t = s.trim();
    if t.is_empty() || t.ends_with(|c: char| c.is_ascii_digit() || c == '.') {
        return Err(LabError::Fault(format!(
            "delay {s:?} has no unit: write e.g. 2ms, 500us or 1s"
        )));
    }
    let secs = wirespeed_types::units::parse_duration(t)
        .map_err(|e| LabError::Fault(format!("delay: {e}")))?;
    let ms = secs * 1000.0;
    FaultKind::Delay { ms }.validate()?;
    Ok(ms)
}

/// Parses a loss share: `1%`, `0.5%` or a plain number of percent.
pub fn parse_loss_pct(s: &str) -> Result<f64, LabError> {
    let t = s.trim();
    let pct: f64 = t
        .strip_suffix('%')
        .unwrap_or(t)
        .trim()
        .parse()
        .map_err(|_| LabError::Fault(format!("loss {s:?} is not a percentage: write e.g. 1%")))?;
    FaultKind::Loss { pct }.validate()?;
    Ok(pct)
}

/// Parses a rate (`50mbit`, `1gbit`, `2.5g`) into bits per second, as a
/// lab link's `rate`.
pub fn parse_rate_bps(s: &str) -> Result<u64, LabError> {
    crate::spec::cap_rate(s).map_err(|e| LabError::Fault(format!("rate: {e}")))
}

/// Parses addresses, each item of `items` a comma list (`10.0.0.2,fd00::2`).
pub fn parse_addrs(items: &[String]) -> Result<Vec<IpAddr>, LabError> {
    let mut out = Vec::new();
    for a in items.iter().flat_map(|i| i.split(',')) {
        let a = a.trim();
        if a.is_empty() {
            continue;
        }
        let ip = a.parse().map_err(|_| {
            LabError::Fault(format!(
                "to: {a:?} is not an IP address (write e.g. 10.61.0.2 or fd00:10:61::2)"
            ))
        })?;
        out.push(ip);
    }
    if out.is_empty() {
        return Err(LabError::Fault(
            "to: no address given: name at least one destination".into(),
        ));
    }
    Ok(out)
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            FaultKind::Delay { ms } => write!(f, "delay {ms} ms"),
            FaultKind::Loss { pct } => write!(f, "loss {pct}%"),
            FaultKind::Rate { bps } => write!(f, "rate cap {} Mbit/s", bps as f64 / 1e6),
        }
    }
}

impl fmt::Display for FaultSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let h = &self.host;
        match &self.on {
            FaultMatch::To(a) => {
                let a: Vec<String> = a.iter().map(|a| a.to_string()).collect();
                write!(f, "{} on packets from {h} to {}", self.kind, a.join(", "))
            }
            FaultMatch::Nic(d) => write!(f, "{} on {h}'s {d}, both directions", self.kind),
            FaultMatch::Forwarded(d) => write!(
                f,
                "{} on what {h} forwards over {d}, both directions",
                self.kind
            ),
        }
    }
}

/// An iptables chain of the `mangle` table that a fault's rule goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chain {
    /// Packets that came in, before routing (to the host and forwarded).
    Prerouting,
    /// Packets the host forwards.
    Forward,
    /// Packets that leave, after routing (the host's own and forwarded).
    Postrouting,
}

impl Chain {
    /// The chain's name.
    pub fn name(self) -> &'static str {
        match self {
            Chain::Prerouting => "PREROUTING",
            Chain::Forward => "FORWARD",
            Chain::Postrouting => "POSTROUTING",
        }
    }
}

/// How a rule is changed: `-I CHAIN 1`, `-A CHAIN` or `-D CHAIN`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edit {
    /// First in its chain.
    Insert,
    /// Last in its chain.
    Append,
    /// Deletes the (first) rule equal to it.
    Delete,
}

/// One change a fault makes or undoes; displays as the command a person
/// would type.
#[derive(Debug, Clone, PartialEq)]
pub enum FaultOp {
    /// `tc -n NS ...`: a qdisc, class or filter (the lab's [`Op::Tc`]).
    Tc(Op),
    /// `ip netns exec NS iptables|ip6tables -w -t mangle -I|-A|-D CHAIN RULE...`.
    Rule {
        /// Namespace.
        ns: String,
        /// ip6tables (IPv6) rather than iptables.
        v6: bool,
        /// Add first, add last or delete.
        edit: Edit,
        /// The chain.
        chain: Chain,
        /// The rule: its matches and target.
        rule: Vec<String>,
    },
    /// `ip netns exec NS nft delete table ip|ip6 mangle`: iptables-nft's
    /// table, once a fault's rules were its last.
    DropTable {
        /// Namespace.
        ns: String,
        /// The ip6 table rather than the ip one.
        v6: bool,
    },
}

impl fmt::Display for FaultOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FaultOp::Tc(op) => op.fmt(f),
            FaultOp::Rule {
                ns,
                v6,
                edit,
                chain,
                rule,
            } => {
                let tool = if *v6 { "ip6tables" } else { "iptables" };
                let c = chain.name();
                let edit = match edit {
                    Edit::Insert => format!("-I {c} 1"),
                    Edit::Append => format!("-A {c}"),
                    Edit::Delete => format!("-D {c}"),
                };
                write!(
                    f,
                    "ip netns exec {ns} {tool} -w -t mangle {edit} {}",
                    rule.join(" ")
                )
            }
            FaultOp::DropTable { ns, v6 } => write!(
                f,
                "ip netns exec {ns} nft delete table {} mangle",
                if *v6 { "ip6" } else { "ip" }
            ),
        }
    }
}

impl FaultOp {
    /// The operation that undoes this one, if it needs one (a class or
    /// filter goes with its qdisc).
    fn undo(&self) -> Option<FaultOp> {
        match self {
            FaultOp::Rule {
                ns,
                v6,
                chain,
                rule,
                ..
            } => Some(FaultOp::Rule {
                ns: ns.clone(),
                v6: *v6,
                edit: Edit::Delete,
                chain: *chain,
                rule: rule.clone(),
            }),
            FaultOp::Tc(Op::Tc { ns, args }) => match args.as_slice() {
                [q, add, d, dev, root, ..]
                    if q == "qdisc" && add == "add" && d == "dev" && root == "root" =>
                {
                    Some(FaultOp::Tc(tc(ns, &["qdisc", "del", "dev", dev, "root"])))
                }
                _ => None,
            },
            _ => None,
        }
    }

    /// Does the operation; a failure names the command and what to do.
    pub fn apply(&self) -> Result<(), LabError> {
        let shown = self.to_string();
        match self {
            FaultOp::Tc(op) => op.apply().map_err(|error| match error {
                HostError::Command { stderr, .. } => LabError::Run {
                    cmd: shown,
                    detail: stderr,
                },
                error => LabError::Command { cmd: shown, error },
            }),
            FaultOp::Rule {
                ns,
                v6,
                edit,
                chain,
                rule,
            } => {
                let c = chain.name();
                let mut args: Vec<&str> = vec!["-w", "-t", "mangle"];
                match edit {
                    Edit::Insert => args.extend(["-I", c, "1"]),
                    Edit::Append => args.extend(["-A", c]),
                    Edit::Delete => args.extend(["-D", c]),
                }
                args.extend(rule.iter().map(String::as_str));
                let tool = if *v6 { "ip6tables" } else { "iptables" };
                run_in_ns(ns, tool, &args, &shown, "iptables").map(|_| ())
            }
            FaultOp::DropTable { ns, v6 } => {
                let fam = if *v6 { "ip6" } else { "ip" };
                run_in_ns(
                    ns,
                    "nft",
                    &["delete", "table", fam, "mangle"],
                    &shown,
                    "nftables",
                )
                .map(|_| ())
            }
        }
    }
}

/// Runs `program ARGS` inside namespace `ns`, returning its standard
/// output; a failure shows `shown` and, when the program is missing, the
/// Debian `package` to install.
fn run_in_ns(
    ns: &str,
    program: &str,
    args: &[&str],
    shown: &str,
    package: &str,
) -> Result<String, LabError> {
    let out = ns_command(ns, program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| LabError::io(format!("run `{shown}` (is iproute2 installed?)"), e))?;
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
    let detail = if stderr.contains("No such file") && stderr.contains(program) {
        format!("{stderr} (is {program} installed? apt-get install {package})")
    } else if stderr.is_empty() {
        format!("exit status {}", out.status)
    } else {
        stderr
    };
    Err(LabError::Run {
        cmd: shown.to_string(),
        detail,
    })
}

/// `ADDR/32` or `ADDR/128`.
fn host_prefix(a: &IpAddr) -> String {
    format!("{a}/{}", if a.is_ipv4() { 32 } else { 128 })
}

/// The matches of a delay or loss fault's rules, one per rule:
/// (IPv6, chain, match arguments).
fn rule_matches(on: &FaultMatch) -> Vec<(bool, Chain, Vec<String>)> {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    match on {
        FaultMatch::To(addrs) => addrs
            .iter()
            .map(|a| (a.is_ipv6(), Chain::Postrouting, s(&["-d", &host_prefix(a)])))
            .collect(),
        FaultMatch::Nic(d) => [false, true]
            .into_iter()
            .flat_map(|v6| {
                [
                    (v6, Chain::Prerouting, s(&["-i", d])),
                    (v6, Chain::Postrouting, s(&["-o", d])),
                ]
            })
            .collect(),
        FaultMatch::Forwarded(d) => [false, true]
            .into_iter()
            .flat_map(|v6| {
                [
                    (v6, Chain::Forward, s(&["-i", d])),
                    (v6, Chain::Forward, s(&["-o", d])),
                ]
            })
            .collect(),
    }
}

/// A probability as iptables reads it: at most 6 decimals, no trailing zeros.
fn probability(pct: f64) -> String {
    let p = format!("{:.6}", pct / 100.0);
    p.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The rules that add a delay (to NFQUEUE `queue`) or loss fault in
/// namespace `ns`; a loss rule goes first in its chain, a delay rule last.
/// A rate fault has none.
///
/// A loss drops with `-j DROP`, but in POSTROUTING, where the host's own
/// packets pass: there a DROP makes the send fail (EPERM), and TCP keeps
/// the segment and sends it again later as new, no retransmission, no
/// congestion signal: not what a lossy wire does. So there the packet goes
/// to [`LOSS_QUEUE`], which nobody reads, without `--queue-bypass`: the
/// kernel frees it and tells the sender it went.
pub fn rule_ops(ns: &str, kind: &FaultKind, queue: u16, on: &FaultMatch) -> Vec<FaultOp> {
    let strings = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let (edit, target): (Edit, Box<dyn Fn(Chain) -> Vec<String>>) = match *kind {
        FaultKind::Delay { .. } => {
            let q = queue.to_string();
            let t = strings(&["-j", "NFQUEUE", "--queue-num", &q, "--queue-bypass"]);
            (Edit::Append, Box::new(move |_| t.clone()))
        }
        FaultKind::Loss { pct } => {
            let p = probability(pct);
            let pick = strings(&["-m", "statistic", "--mode", "random", "--probability", &p]);
            let lq = LOSS_QUEUE.to_string();
            let target = move |c: Chain| {
                let mut t = pick.clone();
                if c == Chain::Postrouting {
                    t.extend(strings(&["-j", "NFQUEUE", "--queue-num", &lq]));
                } else {
                    t.extend(strings(&["-j", "DROP"]));
                }
                t
            };
            (Edit::Insert, Box::new(target))
        }
        FaultKind::Rate { .. } => return Vec::new(),
    };
    rule_matches(on)
        .into_iter()
        .map(|(v6, chain, mut rule)| {
            rule.extend(target(chain));
            FaultOp::Rule {
                ns: ns.into(),
                v6,
                edit,
                chain,
                rule,
            }
        })
        .collect()
}

/// The qdisc operations that cap `dev`'s egress at `bps` for packets to
/// `to`, or for every packet when `to` is empty (then the lab's own htb
/// cap, [`crate::cap_ops`]). With addresses: an htb root whose default
/// class 1:1 runs at 100 Gbit/s, a class 1:2 at `bps`, and a u32 filter
/// per address into 1:2 (IPv4 at prio 1, IPv6 at prio 2).
pub fn rate_ops(ns: &str, dev: &str, bps: u64, to: &[IpAddr]) -> Vec<Op> {
    if to.is_empty() {
        return crate::cap_ops(ns, dev, bps, CapKind::Htb, None);
    }
    let class = |id: &str, rate: u64| {
        let r = format!("{rate}bit");
        let burst = tbf_sizes(rate).0.to_string();
        tc(
            ns,
            &[
                "class", "add", "dev", dev, "parent", "1:", "classid", id, "htb", "rate", &r,
                "ceil", &r, "burst", &burst, "cburst", &burst,
            ],
        )
    };
    let mut out = vec![
        tc(
            ns,
            &[
                "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "1",
            ],
        ),
        class("1:1", 100_000_000_000),
        class("1:2", bps),
    ];
    for a in to {
        let (prio, proto, field) = if a.is_ipv4() {
            ("1", "ip", "ip")
        } else {
            ("2", "ipv6", "ip6")
        };
        out.push(tc(
            ns,
            &[
                "filter",
                "add",
                "dev",
                dev,
                "parent",
                "1:",
                "prio",
                prio,
                "protocol",
                proto,
                "u32",
                "match",
                field,
                "dst",
                &host_prefix(a),
                "flowid",
                "1:2",
            ],
        ));
    }
    out
}

/// A planted fault; dropping it removes it (errors ignored), as does
/// [`Planted::remove`] (errors reported).
#[derive(Debug)]
pub struct Planted {
    spec: FaultSpec,
    ns: String,
    ran: Vec<String>,
    undo: Vec<FaultOp>,
    /// Families (IPv6 or not) whose mangle table this fault put rules in.
    tables: Vec<bool>,
    delayer: Option<DelayerProc>,
    removed: bool,
}

impl Planted {
    fn new(spec: &FaultSpec, ns: String) -> Planted {
        Planted {
            spec: spec.clone(),
            ns,
            ran: Vec::new(),
            undo: Vec::new(),
            tables: Vec::new(),
            delayer: None,
            removed: false,
        }
    }

    /// The fault.
    pub fn spec(&self) -> &FaultSpec {
        &self.spec
    }

    /// The commands planting ran, in order.
    pub fn commands(&self) -> &[String] {
        &self.ran
    }

    /// The delay fault's NFQUEUE number.
    pub fn queue(&self) -> Option<u16> {
        self.delayer.as_ref().map(|d| d.queue)
    }

    /// The delay fault's delayer process.
    pub fn delayer_pid(&self) -> Option<u32> {
        self.delayer.as_ref().map(|d| d.child.id())
    }

    /// Ok while the fault holds: an error once its delayer has exited
    /// (its packets then pass undelayed), with what it said.
    pub fn check(&mut self) -> Result<(), LabError> {
        let Some(d) = self.delayer.as_mut() else {
            return Ok(());
        };
        match d.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(st)) => Err(LabError::Run {
                cmd: d.shown.clone(),
                detail: format!("the delayer exited ({st}): {}", d.stderr()),
            }),
            Err(e) => Err(LabError::io(format!("wait for `{}`", d.shown), e)),
        }
    }

    /// Does `op`, recording it and what undoes it.
    fn apply(&mut self, op: FaultOp) -> Result<(), LabError> {
        op.apply()?;
        self.ran.push(op.to_string());
        if let FaultOp::Rule { v6, .. } = op
            && !self.tables.contains(&v6)
        {
            self.tables.push(v6);
        }
        if let Some(u) = op.undo() {
            self.undo.push(u);
        }
        Ok(())
    }

    /// Removes the fault: deletes its rules and qdiscs (newest first), the
    /// mangle tables they leave empty, and stops its delayer. Returns the
    /// commands it ran; on failures, tries every step and reports the first.
    pub fn remove(mut self) -> Result<Vec<String>, LabError> {
        self.undo_all()
    }

    fn undo_all(&mut self) -> Result<Vec<String>, LabError> {
        self.removed = true;
        let mut ran = Vec::new();
        let mut first: Option<LabError> = None;
        while let Some(op) = self.undo.pop() {
            ran.push(op.to_string());
            if let Err(e) = op.apply() {
                first.get_or_insert(e);
            }
        }
        for v6 in std::mem::take(&mut self.tables) {
            match drop_if_empty(&self.ns, v6) {
                Ok(Some(cmd)) => ran.push(cmd),
                Ok(None) => {}
                Err(e) => {
                    first.get_or_insert(e);
                }
            }
        }
        if let Some(d) = self.delayer.take() {
            ran.push(format!("kill -TERM {}", d.child.id()));
            if let Err(e) = d.stop() {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(ran), Err)
    }
}

impl Drop for Planted {
    fn drop(&mut self) {
        if !self.removed {
            let _ = self.undo_all();
        }
    }
}

/// Deletes iptables-nft's `mangle` table of one family in `ns` when it
/// holds no rule, no chain of its own and no policy but accept (as if it
/// had never been made); returns the command when it ran. Nothing when
/// there is no such nf_tables table (iptables-legacy) or no `nft`.
fn drop_if_empty(ns: &str, v6: bool) -> Result<Option<String>, LabError> {
    let fam = if v6 { "ip6" } else { "ip" };
    let shown = format!("ip netns exec {ns} nft -j list table {fam} mangle");
    let Ok(text) = run_in_ns(
        ns,
        "nft",
        &["-j", "list", "table", fam, "mangle"],
        &shown,
        "nftables",
    ) else {
        return Ok(None);
    };
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else {
        return Ok(None);
    };
    let items = v["nftables"].as_array().cloned().unwrap_or_default();
    let empty = items.iter().all(|i| {
        i.get("metainfo").is_some()
            || i.get("table").is_some()
            || i.get("chain")
                .is_some_and(|c| c.get("hook").is_some() && c["policy"] == "accept")
    });
    if !empty {
        return Ok(None);
    }
    let op = FaultOp::DropTable { ns: ns.into(), v6 };
    op.apply()?;
    Ok(Some(op.to_string()))
}

/// The NFQUEUE numbers the namespace's iptables rules send packets to.
fn queues_in_rules(ns: &str) -> Result<HashSet<u16>, LabError> {
    let mut used = HashSet::new();
    for tool in ["iptables-save", "ip6tables-save"] {
        let text = run_in_ns(
            ns,
            tool,
            &[],
            &format!("ip netns exec {ns} {tool}"),
            "iptables",
        )?;
        let mut words = text.split_whitespace();
        while let Some(w) = words.next() {
            if w == "--queue-num"
                && let Some(n) = words.next().and_then(|n| n.parse().ok())
            {
                used.insert(n);
            }
        }
    }
    Ok(used)
}

/// The queue number after `q`, wrapping to [`FIRST_QUEUE`] before
/// [`LOSS_QUEUE`].
fn next_queue(q: u16) -> u16 {
    if (FIRST_QUEUE..LOSS_QUEUE - 1).contains(&q) {
        q + 1
    } else {
        FIRST_QUEUE
    }
}

/// The first queue number from `q` on (wrapping) that no rule uses.
fn free_queue(q: u16, used: &HashSet<u16>) -> Option<u16> {
    let mut q = if (FIRST_QUEUE..LOSS_QUEUE).contains(&q) {
        q
    } else {
        FIRST_QUEUE
    };
    for _ in FIRST_QUEUE..LOSS_QUEUE {
        if !used.contains(&q) {
            return Some(q);
        }
        q = next_queue(q);
    }
    None
}

/// Where the next delay fault of this process starts looking for a queue.
static NEXT_QUEUE: AtomicU16 = AtomicU16::new(FIRST_QUEUE);

impl LabState {
    /// Plants fault `f`; a delay runs its delayer from this process's own
    /// executable (the wirespeed binary). See [`LabState::plant_with`].
    pub fn plant(&self, f: &FaultSpec) -> Result<Planted, LabError> {
        let exe = std::env::current_exe()
            .map_err(|e| LabError::io("find this program's executable (for the delayer)", e))?;
        self.plant_with(f, &exe)
    }

    /// Plants fault `f`, a delay's delayer being `WIRESPEED lab delayer`.
    /// Checks the fault, that the host and device exist and, for a rate,
    /// that the device has no root qdisc yet (the lab's cap would be
    /// replaced). A planting that fails half-way removes what it made.
    pub fn plant_with(&self, f: &FaultSpec, wirespeed: &Path) -> Result<Planted, LabError> {
        f.validate()?;
        if !crate::is_root() {
            return Err(LabError::NotRoot);
        }
        let ns = self.host_ns(&f.host)?;
        if let Some(d) = f.on.dev() {
            need_dev(&ns, &f.host, d)?;
        }
        let mut p = Planted::new(f, ns.clone());
        let r = match f.kind {
            FaultKind::Delay { ms } => self.plant_delay(&mut p, ms, wirespeed),
            FaultKind::Loss { .. } => rule_ops(&ns, &f.kind, 0, &f.on)
                .into_iter()
                .try_for_each(|op| p.apply(op)),
            FaultKind::Rate { bps } => self.plant_rate(&mut p, bps),
        };
        match r {
            Ok(()) => Ok(p),
            Err(e) => {
                let _ = p.undo_all();
                Err(e)
            }
        }
    }

    /// The namespace of lab host `host`, which must exist.
    fn host_ns(&self, host: &str) -> Result<String, LabError> {
        if !self.spec.hosts.iter().any(|h| h.name == host) {
            let names: Vec<&str> = self.spec.hosts.iter().map(|h| h.name.as_str()).collect();
            return Err(LabError::Fault(format!(
                "host {host:?} is not a host of lab {} (its hosts: {})",
                self.name,
                names.join(", ")
            )));
        }
        let ns = self.ns(host);
        if !wirespeed_host::netns::exists(&ns) {
            return Err(LabError::Fault(format!(
                "host {host}: namespace {ns} is gone (is lab {} up?)",
                self.name
            )));
        }
        Ok(ns)
    }

    /// Starts a delayer on a free queue, then adds the rules that feed it.
    fn plant_delay(&self, p: &mut Planted, ms: f64, wirespeed: &Path) -> Result<(), LabError> {
        let prog = wirespeed.to_str().ok_or_else(|| {
            LabError::Fault(format!(
                "delayer program {} is not UTF-8",
                wirespeed.display()
            ))
        })?;
        let used = queues_in_rules(&p.ns)?;
        let mut q = NEXT_QUEUE.load(Ordering::Relaxed);
        for _ in 0..16 {
            let Some(free) = free_queue(q, &used) else {
                break;
            };
            q = free;
            NEXT_QUEUE.store(next_queue(q), Ordering::Relaxed);
            match start_delayer(&p.ns, prog, q, ms) {
                Ok(d) => {
                    p.ran.push(d.shown.clone());
                    p.delayer = Some(d);
                    return rule_ops(&p.ns, &p.spec.kind, q, &p.spec.on)
                        .into_iter()
                        .try_for_each(|op| p.apply(op));
                }
                Err(StartError::Taken) => q = next_queue(q),
                Err(StartError::Failed(e)) => return Err(e),
            }
        }
        Err(LabError::Fault(format!(
            "host {}: no free NFQUEUE number found from {FIRST_QUEUE} in 16 tries",
            p.spec.host
        )))
    }

    /// Caps the chosen packets: per egress device for addresses, or the
    /// device and the other end of its link.
    fn plant_rate(&self, p: &mut Planted, bps: u64) -> Result<(), LabError> {
        let mut caps: Vec<(String, String, Vec<IpAddr>)> = Vec::new();
        match &p.spec.on {
            FaultMatch::To(addrs) => {
                for a in addrs {
                    let dev = route_dev(&p.ns, &p.spec.host, a)?;
                    match caps.iter_mut().find(|c| c.1 == dev) {
                        Some(c) => c.2.push(*a),
                        None => caps.push((p.ns.clone(), dev, vec![*a])),
                    }
                }
            }
            FaultMatch::Nic(d) | FaultMatch::Forwarded(d) => {
                caps.push((p.ns.clone(), d.clone(), Vec::new()));
                if let Some((host, dev)) = self.peer(&p.spec.host, d) {
                    caps.push((self.ns(&host), dev, Vec::new()));
                }
            }
        }
        for (ns, dev, to) in caps {
            // Device by device: a refusal on a later one undoes the earlier.
            refuse_root_qdisc(&ns, &dev)?;
            for op in rate_ops(&ns, &dev, bps, &to) {
                p.apply(FaultOp::Tc(op))?;
            }
        }
        Ok(())
    }

    /// The host and device at the other end of `host`'s lab link on `dev`.
    fn peer(&self, host: &str, dev: &str) -> Option<(String, String)> {
        self.plan.links.iter().find_map(|l| {
            if l.end(host)?.dev != dev {
                return None;
            }
            let other = if l.host_a == host {
                &l.host_b
            } else {
                &l.host_a
            };
            Some((other.clone(), l.peer_of(host)?.dev.clone()))
        })
    }
}

impl crate::Lab {
    /// Plants fault `f` (see [`LabState::plant_with`]); a delay runs its
    /// delayer from this process's executable, the wirespeed binary.
    pub fn plant(&self, f: &FaultSpec) -> Result<Planted, LabError> {
        self.state().plant(f)
    }

    /// Plants fault `f`, a delay's delayer being `WIRESPEED lab delayer`.
    pub fn plant_with(&self, f: &FaultSpec, wirespeed: &Path) -> Result<Planted, LabError> {
        self.state().plant_with(f, wirespeed)
    }
}

/// Fails unless `dev` exists in `ns`.
fn need_dev(ns: &str, host: &str, dev: &str) -> Result<(), LabError> {
    let ok = Command::new("ip")
        .args(["-n", ns, "link", "show", "dev", dev])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        return Ok(());
    }
    Err(LabError::Fault(format!(
        "dev {dev:?}: host {host} has no such device (`ip -n {ns} link` lists them)"
    )))
}

/// The device `host`'s route to `a` leaves by (`ip route get`).
fn route_dev(ns: &str, host: &str, a: &IpAddr) -> Result<String, LabError> {
    let shown = format!("ip -n {ns} -j route get {a}");
    let out = Command::new("ip")
        .args(["-n", ns, "-j", "route", "get", &a.to_string()])
        .output()
        .map_err(|e| LabError::io(format!("run `{shown}` (is iproute2 installed?)"), e))?;
    if !out.status.success() {
        return Err(LabError::Fault(format!(
            "to: host {host} has no route to {a} ({})",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    match v[0]["dev"].as_str() {
        Some("lo") => Err(LabError::Fault(format!(
            "to: {a} is an address of host {host} itself; a rate fault caps packets that leave"
        ))),
        Some(d) => Ok(d.to_string()),
        None => Err(LabError::Fault(format!(
            "to: `{shown}` names no device for {a}"
        ))),
    }
}

/// Refuses a device that has a root qdisc someone added (the lab's tbf
/// or htb cap, another rate fault): a rate fault would replace it. The
/// kernel's own default qdiscs have handle 0:.
fn refuse_root_qdisc(ns: &str, dev: &str) -> Result<(), LabError> {
    let shown = format!("tc -n {ns} -j qdisc show dev {dev}");
    let out = Command::new("tc")
        .args(["-n", ns, "-j", "qdisc", "show", "dev", dev])
        .output()
        .map_err(|e| LabError::io(format!("run `{shown}` (is iproute2 installed?)"), e))?;
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    let roots = v.as_array().cloned().unwrap_or_default();
    for q in roots.iter().filter(|q| q["root"] == true) {
        let handle = q["handle"].as_str().unwrap_or("0:");
        if handle != "0:" {
            let kind = q["kind"].as_str().unwrap_or("?");
            return Err(LabError::Fault(format!(
                "rate: {dev} in {ns} has a root qdisc already ({kind} {handle}, the lab's rate \
                 cap or another rate fault) and a rate fault would replace it: cap another \
                 device, remove that fault, or build the lab without `rate` on this link"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn shown(ops: &[FaultOp]) -> Vec<String> {
        ops.iter().map(|o| o.to_string()).collect()
    }

    #[test]
    fn a_delay_queues_each_destination_last_in_postrouting() {
        let on = FaultMatch::To(vec![ip("10.61.0.2"), ip("fd00:10:61::2")]);
        let ops = rule_ops("l-a", &FaultKind::Delay { ms: 2.0 }, 1003, &on);
        assert_eq!(
            shown(&ops),
            [
                "ip netns exec l-a iptables -w -t mangle -A POSTROUTING -d 10.61.0.2/32 -j NFQUEUE --queue-num 1003 --queue-bypass",
                "ip netns exec l-a ip6tables -w -t mangle -A POSTROUTING -d fd00:10:61::2/128 -j NFQUEUE --queue-num 1003 --queue-bypass",
            ]
        );
        let undo: Vec<String> = ops
            .iter()
            .filter_map(|o| o.undo())
            .map(|o| o.to_string())
            .collect();
        assert_eq!(
            undo[0],
            "ip netns exec l-a iptables -w -t mangle -D POSTROUTING -d 10.61.0.2/32 -j NFQUEUE --queue-num 1003 --queue-bypass"
        );
    }

    #[test]
    fn a_nic_loss_is_first_in_both_directions_and_both_families() {
        let ops = rule_ops(
            "l-a",
            &FaultKind::Loss { pct: 33.3 },
            0,
            &FaultMatch::Nic("eth1".into()),
        );
        let s = shown(&ops);
        assert_eq!(s.len(), 4, "{s:#?}");
        assert_eq!(
            s[0],
            "ip netns exec l-a iptables -w -t mangle -I PREROUTING 1 -i eth1 -m statistic --mode random --probability 0.333 -j DROP"
        );
        // Leaving the host: to a queue nobody reads, so the sender's stack
        // counts the packet sent (a DROP there fails the send instead).
        assert_eq!(
            s[1],
            "ip netns exec l-a iptables -w -t mangle -I POSTROUTING 1 -o eth1 -m statistic --mode random --probability 0.333 -j NFQUEUE --queue-num 65535"
        );
        assert!(s[2].starts_with("ip netns exec l-a ip6tables"), "{s:#?}");
        let fwd = rule_ops(
            "r",
            &FaultKind::Loss { pct: 1.0 },
            0,
            &FaultMatch::Forwarded("up".into()),
        );
        let f = shown(&fwd);
        assert!(
            f[0].contains(
                "-I FORWARD 1 -i up -m statistic --mode random --probability 0.01 -j DROP"
            )
        );
        assert!(f[1].contains("-I FORWARD 1 -o up "));
        assert!(
            rule_ops(
                "r",
                &FaultKind::Rate { bps: 8000 },
                0,
                &FaultMatch::Nic("x".into())
            )
            .is_empty()
        );
    }

    #[test]
    fn a_rate_cap_filters_its_destinations_into_a_capped_class() {
        let ops = rate_ops("l-a", "eth0", 20_000_000, &[ip("10.61.0.2"), ip("fd00::2")]);
        let s: Vec<String> = ops.iter().map(|o| o.to_string()).collect();
        assert_eq!(
            s[0],
            "tc -n l-a qdisc add dev eth0 root handle 1: htb default 1"
        );
        assert!(s[1].starts_with(
            "tc -n l-a class add dev eth0 parent 1: classid 1:1 htb rate 100000000000bit"
        ));
        assert_eq!(
            s[2],
            "tc -n l-a class add dev eth0 parent 1: classid 1:2 htb rate 20000000bit ceil 20000000bit burst 65536 cburst 65536"
        );
        assert_eq!(
            s[3],
            "tc -n l-a filter add dev eth0 parent 1: prio 1 protocol ip u32 match ip dst 10.61.0.2/32 flowid 1:2"
        );
        assert_eq!(
            s[4],
            "tc -n l-a filter add dev eth0 parent 1: prio 2 protocol ipv6 u32 match ip6 dst fd00::2/128 flowid 1:2"
        );
        let undo: Vec<String> = ops
            .into_iter()
            .filter_map(|o| FaultOp::Tc(o).undo())
            .map(|o| o.to_string())
            .collect();
        assert_eq!(undo, ["tc -n l-a qdisc del dev eth0 root"]);
        let whole = rate_ops("l-a", "eth1", 8000, &[]);
        assert!(
            whole[0]
                .to_string()
                .ends_with("root handle 1: htb default 1")
        );
        assert_eq!(whole.len(), 2);
    }

    #[test]
    fn bad_values_are_refused_naming_the_field() {
        let e = |k: FaultKind| k.validate().unwrap_err().to_string();
        assert!(e(FaultKind::Delay { ms: 0.0 }).contains("delay ms 0"));
        assert!(e(FaultKind::Delay { ms: 10_001.0 }).contains("(0, 10000]"));
        assert!(e(FaultKind::Delay { ms: f64::NAN }).contains("delay ms"));
        assert!(e(FaultKind::Loss { pct: 0.0 }).contains("loss pct 0"));
        assert!(e(FaultKind::Loss { pct: 100.5 }).contains("(0, 100]"));
        assert!(e(FaultKind::Rate { bps: 0 }).contains("rate bps 0"));
        assert!(FaultKind::Loss { pct: 100.0 }.validate().is_ok());
        assert!(FaultKind::Delay { ms: 10_000.0 }.validate().is_ok());
        let spec = |on| FaultSpec {
            host: "a".into(),
            kind: FaultKind::Loss { pct: 1.0 },
            on,
        };
        let msg = spec(FaultMatch::To(vec![]))
            .validate()
            .unwrap_err()
            .to_string();
        assert!(msg.contains("to: no address"), "{msg}");
        let msg = spec(FaultMatch::Nic("a/b".into()))
            .validate()
            .unwrap_err()
            .to_string();
        assert!(msg.contains("dev \"a/b\""), "{msg}");
        let mut s = spec(FaultMatch::Nic("eth0".into()));
        s.host.clear();
        assert!(
            s.validate()
                .unwrap_err()
                .to_string()
                .contains("host is empty")
        );
    }

    #[test]
    fn the_cli_flags_parse_with_their_units() {
        assert_eq!(parse_delay_ms("2ms").unwrap(), 2.0);
        assert_eq!(parse_delay_ms("500us").unwrap(), 0.5);
        assert_eq!(parse_delay_ms("1.5s").unwrap(), 1500.0);
        assert!(
            parse_delay_ms("2")
                .unwrap_err()
                .to_string()
                .contains("no unit")
        );
        assert!(
            parse_delay_ms("11s")
                .unwrap_err()
                .to_string()
                .contains("delay ms")
        );
        assert_eq!(parse_loss_pct("1%").unwrap(), 1.0);
        assert_eq!(parse_loss_pct("0.5").unwrap(), 0.5);
        assert!(
            parse_loss_pct("x%")
                .unwrap_err()
                .to_string()
                .contains("loss")
        );
        assert!(parse_loss_pct("0%").is_err());
        assert_eq!(parse_rate_bps("50mbit").unwrap(), 50_000_000);
        assert!(
            parse_rate_bps("fast")
                .unwrap_err()
                .to_string()
                .contains("rate")
        );
        assert_eq!(
            parse_addrs(&["10.0.0.1, fd00::1".into(), "10.0.0.2".into()]).unwrap(),
            vec![ip("10.0.0.1"), ip("fd00::1"), ip("10.0.0.2")]
        );
        assert!(
            parse_addrs(&["nope".into()])
                .unwrap_err()
                .to_string()
                .contains("to: \"nope\"")
        );
        let k = FaultKind::from_flags(Some("2ms"), None, None).unwrap();
        assert_eq!(k, FaultKind::Delay { ms: 2.0 });
        assert!(FaultKind::from_flags(Some("2ms"), Some("1%"), None).is_err());
        assert!(FaultKind::from_flags(None, None, None).is_err());
        let m = FaultMatch::from_flags(&[], Some("eth0"), None).unwrap();
        assert_eq!(m, FaultMatch::Nic("eth0".into()));
        assert!(FaultMatch::from_flags(&["10.0.0.1".into()], Some("eth0"), None).is_err());
        let spec = FaultSpec {
            host: "a".into(),
            kind: k,
            on: FaultMatch::To(vec![ip("10.0.0.2")]),
        };
        assert_eq!(spec.to_string(), "delay 2 ms on packets from a to 10.0.0.2");
    }

    #[test]
    fn delay_queues_skip_used_numbers_and_never_take_the_loss_queue() {
        let used: HashSet<u16> = [1000, 1001, 65534].into_iter().collect();
        assert_eq!(free_queue(1000, &used), Some(1002));
        assert_eq!(free_queue(65534, &used), Some(1002));
        assert_eq!(free_queue(0, &HashSet::new()), Some(FIRST_QUEUE));
        assert_eq!(next_queue(LOSS_QUEUE - 1), FIRST_QUEUE);
        assert_eq!(next_queue(LOSS_QUEUE), FIRST_QUEUE);
        let all: HashSet<u16> = (FIRST_QUEUE..LOSS_QUEUE).collect();
        assert_eq!(free_queue(1000, &all), None);
    }

    #[test]
    fn probabilities_read_as_typed() {
        assert_eq!(probability(10.0), "0.1");
        assert_eq!(probability(100.0), "1");
        assert_eq!(probability(0.01), "0.0001");
    }
}
