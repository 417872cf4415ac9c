//! Issue 65's planted faults (root): scenarios/watch-faults, six agents
//! in three zones (b, d and f with a second NIC on their own rail) behind
//! zone routers joined by a core router, watched from the core with
//! probes every 5 s. One after another: a 2 ms delay on one path, a 50
//! Mbit/s cap on one path, 1% loss on one path, one NIC degraded, one host
//! degraded on all its paths, one zone's uplink degraded: each is found
//! within three probe periods, named as the pair, NIC, host or zone it
//! is (and nothing else is named), and closes once the fault is removed.
//! Then a busy loop on each CPU with no network change: no incident, and
//! the watch names the hosts whose CPUs are busy.

use crate::common;
use common::{Proc, bin, heavy, start_agent};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use wirespeed_lab::{FaultKind, FaultMatch, FaultSpec, Lab, LabSpec};
use wirespeed_types::fleet::{DriftEvent, WatchState};

const HOSTS: [&str; 6] = ["a", "b", "c", "d", "e", "f"];
/// Each host's first link in lab.toml (its eth0); z1's uplink is link 9.
const FIRST_LINK: [(&str, usize); 6] = [("a", 0), ("b", 1), ("c", 3), ("d", 4), ("e", 6), ("f", 7)];
/// The probe period the watch runs at.
const PERIOD_S: f64 = 5.0;
const PORT: u16 = 5390;

struct Bed {
    lab: Option<Lab>,
    dir: PathBuf,
    agents: Vec<Proc>,
    watcher: Option<Proc>,
}

impl Drop for Bed {
    fn drop(&mut self) {
        self.watcher.take();
        self.agents.clear(); // killed before their namespaces go
        if let Some(l) = self.lab.take() {
            let _ = l.down();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn scenario(file: &str) -> PathBuf {
    common::cluster::repo()
        .join("scenarios/watch-faults")
        .join(file)
}

/// The lab, its agents and the watcher, running.
fn up() -> Option<Bed> {
    if !wirespeed_testkit::need_root("the watch-faults lab") {
        return None;
    }
    let text = std::fs::read_to_string(scenario("lab.toml")).unwrap();
    let mut spec = LabSpec::from_toml_str(&text).expect("the scenario's lab file");
    spec.name = Lab::unique("wf");
    let lab = Lab::up(&spec).expect("lab up");
    let dir = std::env::temp_dir().join(format!("{}-files", spec.name));
    std::fs::create_dir_all(&dir).unwrap();
    let key = dir.join("key");
    std::fs::write(&key, "watch-faults-key-0123456789abcdef\n").unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let mut bed = Bed {
        lab: Some(lab),
        dir,
        agents: Vec::new(),
        watcher: None,
    };
    for h in HOSTS {
        let a = start_agent(bed.lab(), h, &key);
        bed.agents.push(a);
    }
    let mut w = bed.lab().command("core", bin());
    w.args(["fleet", "watch", "--agents"])
        .arg(scenario("fleet.toml"))
        .arg("--key-file")
        .arg(&key)
        .arg("--history")
        .arg(bed.db())
        .args(["--probe-period", "5s", "--for", "30m"])
        .arg("--listen")
        .arg(format!("127.0.0.1:{PORT}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    bed.watcher = Some(Proc(w.spawn().expect("start the watcher")));
    Some(bed)
}

impl Bed {
    fn lab(&self) -> &Lab {
        self.lab.as_ref().unwrap()
    }

    fn db(&self) -> PathBuf {
        self.dir.join("watch.db")
    }

    fn events(&self) -> Vec<DriftEvent> {
        wirespeed_fleet::history::History::open_read(&self.db())
            .and_then(|h| h.events(0.0))
            .unwrap_or_default()
    }

    /// The watch state from /v1/watch in the core's namespace.
    fn state(&self) -> Option<WatchState> {
        let o = self
            .lab()
            .command("core", "curl")
            .args(["-sf", "--max-time", "5"])
            .arg(format!("http://127.0.0.1:{PORT}/v1/watch"))
            .output()
            .ok()?;
        serde_json::from_slice(&o.stdout).ok()
    }

    /// Plants `kind` in `host`'s namespace on `on`.
    fn plant(&self, host: &str, kind: FaultKind, on: FaultMatch) -> wirespeed_lab::Planted {
        let f = FaultSpec {
            host: host.into(),
            kind,
            on,
        };
        self.lab()
            .plant_with(&f, Path::new(bin()))
            .unwrap_or_else(|e| panic!("plant {f}: {e}"))
    }

    /// `host`'s address on its first NIC (lab.toml's link order).
    fn addr(&self, host: &str) -> std::net::IpAddr {
        let link = FIRST_LINK.iter().find(|(h, _)| *h == host).unwrap().1;
        std::net::IpAddr::V4(self.lab().addr4(host, link).unwrap())
    }

    /// A fault both ways on the path between `x` and `y` (their first
    /// NICs).
    fn on_path(&self, x: &str, y: &str, kind: FaultKind) -> Vec<wirespeed_lab::Planted> {
        vec![
            self.plant(x, kind, FaultMatch::To(vec![self.addr(y)])),
            self.plant(y, kind, FaultMatch::To(vec![self.addr(x)])),
        ]
    }
}

/// Polls `ok` every 200 ms until it gives a value or `within` passes;
/// on a timeout, says what the watch had (its events, the series not
/// healthy, the last tests) before failing.
fn wait<T>(bed: &Bed, what: &str, within: Duration, mut ok: impl FnMut() -> Option<T>) -> T {
    let end = Instant::now() + within;
    loop {
        if let Some(v) = ok() {
            return v;
        }
        if Instant::now() >= end {
            let events: Vec<String> = bed
                .events()
                .iter()
                .map(|e| format!("{} {}: {}", e.incident, e.transition, e.message))
                .collect();
            let health = bed.state().map(|s| s.health).unwrap_or_default();
            let rows = wirespeed_fleet::history::History::open_read(&bed.db())
                .and_then(|h| {
                    h.tests(&wirespeed_fleet::history::Query {
                        limit: 60,
                        ..Default::default()
                    })
                })
                .unwrap_or_default();
            let rows: Vec<String> = rows
                .iter()
                .map(|r| {
                    format!(
                        "{:.1} {} {}->{} min {:?} p99 {:?} retx {:?} {:.0} bit/s {:?}",
                        r.at_unix,
                        r.workload,
                        r.client,
                        r.server,
                        r.min_us,
                        r.p99_us,
                        r.retransmits,
                        r.throughput_bps,
                        r.error
                    )
                })
                .collect();
            panic!(
                "timed out waiting for {what}\nevents:\n{}\nnot healthy:\n{health:#?}\nlast tests:\n{}",
                events.join("\n"),
                rows.join("\n")
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn now_unix() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// One planted fault: found within three probe periods as (`scope`,
/// `subject`) and nothing else, closed once removed. The seconds it took
/// to find and to close.
fn step(
    bed: &Bed,
    what: &str,
    want: (&str, &str),
    plant: impl FnOnce() -> Vec<wirespeed_lab::Planted>,
) -> (f64, f64) {
    let before = bed.events().len();
    let planted = plant();
    let t0 = now_unix();
    let opened = wait(
        bed,
        &format!("{what}: an incident naming {} {}", want.0, want.1),
        Duration::from_secs_f64(6.0 * PERIOD_S),
        || {
            let ev = bed.events();
            ev[before..]
                .iter()
                .find(|e| {
                    e.transition == "opened" && (e.scope.as_str(), e.subject.as_str()) == want
                })
                .cloned()
        },
    );
    let found = opened.at_unix - t0;
    println!("{what}: +{found:.1} s {}", opened.message);
    assert!(
        found <= 3.0 * PERIOD_S + 2.0,
        "{what}: found after {found:.1} s, over three probe periods"
    );
    for p in planted {
        p.remove().unwrap_or_else(|e| panic!("{what}: remove: {e}"));
    }
    let t1 = now_unix();
    let closed = wait(
        bed,
        &format!("{what}: the incident closed"),
        Duration::from_secs_f64(10.0 * PERIOD_S),
        || {
            bed.events()[before..]
                .iter()
                .find(|e| e.transition == "closed" && e.incident == opened.incident)
                .cloned()
        },
    );
    let cleared = closed.at_unix - t1;
    println!(
        "{what}: closed +{cleared:.1} s after removal: {}",
        closed.message
    );
    let ev = bed.events();
    let others: Vec<&DriftEvent> = ev[before..]
        .iter()
        .filter(|e| e.transition == "opened")
        .filter(|e| (e.scope.as_str(), e.subject.as_str()) != want)
        .filter(|e| !(e.outcome.is_empty() && superseded(&ev[before..], e, want)))
        .collect();
    assert!(others.is_empty(), "{what}: others named: {others:#?}");
    // Every link back within its baseline before the next fault.
    wait(
        bed,
        &format!("{what}: every link healthy again"),
        Duration::from_secs_f64(12.0 * PERIOD_S),
        || {
            let st = bed.state()?;
            let open = st.incidents.iter().any(|i| i.closed_unix.is_none());
            (!open
                && st
                    .health
                    .iter()
                    .all(|h| h.contended || h.health < wirespeed_types::fleet::Health::Suspect))
            .then_some(())
        },
    );
    (found, cleared)
}

/// Whether `e` (an opened incident) was taken in by the incident naming
/// `want` (a pair found first, then its host): closed with that outcome.
fn superseded(ev: &[DriftEvent], e: &DriftEvent, want: (&str, &str)) -> bool {
    let into = format!("{} {}", want.0, want.1);
    ev.iter()
        .any(|c| c.incident == e.incident && c.transition == "closed" && c.outcome == into)
}

/// Waits until every one of the lab's 18 links has `n` rr probes.
fn wait_for_baselines(bed: &Bed, n: usize) {
    wait(
        bed,
        "a baseline of every link",
        Duration::from_secs(120),
        || {
            let rows = wirespeed_fleet::history::History::open_read(&bed.db())
                .and_then(|h| h.tests(&Default::default()))
                .ok()?;
            let mut links: Vec<String> = rows
                .iter()
                .filter(|r| r.workload == "rr" && r.error.is_none())
                .map(|r| wirespeed_fleet::health::Link::of(r).to_string())
                .collect();
            links.sort();
            let enough = links
                .chunk_by(|a, b| a == b)
                .filter(|c| c.len() >= n)
                .count();
            (enough == 18).then_some(())
        },
    );
}

#[test]
fn the_watch_finds_names_and_clears_each_planted_fault() {
    let _g = heavy();
    let Some(bed) = up() else { return };
    wait_for_baselines(&bed, 7);
    let delay = FaultKind::Delay { ms: 2.0 };
    let mut times = Vec::new();
    times.push(step(&bed, "2 ms delay on a - c", ("pair", "a,c"), || {
        bed.on_path("a", "c", delay)
    }));
    times.push(step(
        &bed,
        "50 Mbit/s cap on b - e",
        ("pair", "b,e"),
        || bed.on_path("b", "e", FaultKind::Rate { bps: 50_000_000 }),
    ));
    times.push(step(&bed, "1% loss on c - f", ("pair", "c,f"), || {
        bed.on_path("c", "f", FaultKind::Loss { pct: 1.0 })
    }));
    times.push(step(&bed, "d's eth1", ("nic", "d/eth1"), || {
        vec![bed.plant("d", delay, FaultMatch::Nic("eth1".into()))]
    }));
    times.push(step(&bed, "host e", ("host", "e"), || {
        vec![bed.plant("e", delay, FaultMatch::Nic("eth0".into()))]
    }));
    let uplink = bed.lab().dev("z1", 9).expect("z1's uplink");
    times.push(step(&bed, "zone z1's uplink", ("zone", "z1"), || {
        vec![bed.plant("z1", delay, FaultMatch::Forwarded(uplink.clone()))]
    }));
    println!("found and closed (s): {times:?}");
    // Busy CPUs, no network change: nothing raised, the hosts named busy.
    let before = bed.events().len();
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let hogs: Vec<Proc> = (0..cpus)
        .map(|_| {
            Proc(
                Command::new("sh")
                    .args(["-c", "while :; do :; done"])
                    .spawn()
                    .unwrap(),
            )
        })
        .collect();
    let busy = wait(
        &bed,
        "the hosts named busy",
        Duration::from_secs_f64(6.0 * PERIOD_S),
        || {
            bed.state()
                .filter(|s| !s.busy_hosts.is_empty())
                .map(|s| s.busy_hosts)
        },
    );
    println!("busy: {busy:?}");
    // Held while every link is probed three more times.
    let stored = bed.state().map_or(0, |s| s.tests_stored);
    wait(
        &bed,
        "three probe periods under busy CPUs",
        Duration::from_secs(120),
        || {
            bed.state()
                .filter(|s| s.tests_stored >= stored + 3 * 54)
                .map(drop)
        },
    );
    drop(hogs);
    let raised: Vec<DriftEvent> = bed.events()[before..].to_vec();
    assert!(raised.is_empty(), "raised under busy CPUs: {raised:#?}");
}
