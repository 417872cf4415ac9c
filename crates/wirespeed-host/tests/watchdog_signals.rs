//! The tune watchdog told to stop before its deadline, live in a
//! namespace of the test's own (root only; skipped with a note otherwise):
//! SIGTERM, SIGINT, SIGHUP or SIGQUIT to the pid the journal records
//! rolls every change back at once (not at the deadline, minutes later)
//! and retires the journal; once the journal is confirmed the watchdog
//! leaves the changes in place.
//!
//! No libtest harness (`harness = false`): `session::apply` starts the
//! watchdog as this very program (`current_exe() tune watchdog
//! --state-dir DIR`, through `reentry`), so `main` plays the wirespeed
//! binary's part when called that way, and runs the tests otherwise
//! (`cargo test -p wirespeed-host --test watchdog_signals [-- FILTER]`).

use std::path::PathBuf;
use std::time::{Duration, Instant};
use wirespeed_host::netns;
use wirespeed_host::session::{self, ApplyOptions, Place, PlanRequest, Show};
use wirespeed_host::tune::{Host, Journal, Plan, Setting, StateDir};
use wirespeed_host::{Fs, HostError, Op};

/// How long the apply's confirm deadline is: far beyond what a prompt
/// rollback on a signal takes, so only the signal can explain one.
const DEADLINE: Duration = Duration::from_secs(300);

/// How long a rollback after a signal may take.
const PROMPT: Duration = Duration::from_secs(10);

/// The changes: sysctls of the namespace and the MTU of a veth (whose
/// IPv6 MTU the kernel changes beside it: journaled too).
const PROFILE: &str = r#"
[sysctl]
"net.ipv4.tcp_rto_min_us" = "7000"
"net.ipv4.tcp_slow_start_after_idle" = "0"
"net.ipv4.tcp_notsent_lowat" = "131072"
[link]
mtu = 4000
"#;

/// The wirespeed binary's `tune watchdog` and `tune rollback --if-overdue`
/// (the backup timer's, armed only where systemd is PID 1).
fn reentered(args: &[String]) {
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .map(PathBuf::from)
    };
    let st = StateDir::new(value("--state-dir").expect("--state-dir"));
    let place = Place {
        root: value("--root"),
        netns: None,
    };
    let r = match args.get(1).map(String::as_str) {
        Some("watchdog") => session::watchdog(&st, &place),
        Some("rollback") => session::rollback(&st, &place, true).map(|_| ()),
        other => panic!("not a re-run of wirespeed: {other:?}"),
    };
    if let Err(e) = r {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

/// Nothing printed: the tests read the host.
struct Quiet;

impl Show for Quiet {
    fn plan(&mut self, _: &Plan) {}
    fn line(&mut self, _: &str) {}
    fn warn(&mut self, _: &str) {}
}

/// A namespace with a veth pair `w0`/`w1` in it, and a state directory;
/// on drop (passed or failed) the watchdog is killed if it still runs,
/// and the namespace, the directory and the profile are removed.
struct Bed {
    ns: String,
    dir: PathBuf,
    profile: PathBuf,
    watchdog: Option<u32>,
}

impl Bed {
    fn new(tag: &str) -> Bed {
        let ns = format!("wswd-{tag}-p{}", std::process::id());
        let dir = std::env::temp_dir().join(format!("ws-wdsig-{tag}-{}", std::process::id()));
        let profile =
            std::env::temp_dir().join(format!("ws-wdsig-{tag}-{}.toml", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let _ = netns::remove(&ns);
        netns::create(&ns).unwrap();
        let bed = Bed {
            ns,
            dir,
            profile,
            watchdog: None,
        };
        std::fs::write(&bed.profile, PROFILE).unwrap();
        let ops = [
            Op::Veth {
                ns_a: bed.ns.clone(),
                dev_a: "w0".into(),
                ns_b: bed.ns.clone(),
                dev_b: "w1".into(),
            },
            Op::Up {
                ns: bed.ns.clone(),
                dev: "w0".into(),
            },
            Op::Up {
                ns: bed.ns.clone(),
                dev: "w1".into(),
            },
        ];
        for op in &ops {
            op.apply().unwrap_or_else(|e| panic!("{op}: {e}"));
        }
        bed
    }

    fn state(&self) -> StateDir {
        StateDir::new(&self.dir)
    }

    /// `tune apply --force --profile PROFILE --dev w0 --confirm-within
    /// DEADLINE` in the namespace; the journal it leaves.
    fn apply(&mut self) -> Journal {
        let req = PlanRequest {
            profile: Some(self.profile.to_str().unwrap().into()),
            devs: vec!["w0".into()],
            ..PlanRequest::default()
        };
        let o = ApplyOptions {
            confirm_within: Some(DEADLINE),
            force: true,
            ..ApplyOptions::default()
        };
        let (st, place) = (self.state(), Place::live(Some(self.ns.clone())));
        let out = netns::run_in_with_sys(&self.ns, || {
            session::apply(&st, &place, &req, &o, &mut Quiet)
        })
        .unwrap();
        let j = self.state().load().unwrap().expect("a journal");
        self.watchdog = j.watchdog_pid;
        assert!(out.changed >= 4, "{} change(s)", out.changed);
        assert!(j.deadline_unix.is_some(), "{j:?}");
        assert!(
            j.entries
                .iter()
                .any(|e| matches!(&e.setting, Setting::Mtu { dev } if dev == "w0")),
            "{j:?}"
        );
        j
    }

    /// The current value of each setting the journal lists.
    fn read(&self, j: &Journal) -> Vec<String> {
        let settings: Vec<Setting> = j.entries.iter().map(|e| e.setting.clone()).collect();
        netns::run_in(&self.ns, || {
            let mut h = Host::open(Fs::at("/"))?;
            settings
                .iter()
                .map(|s| h.read(s))
                .collect::<Result<Vec<_>, HostError>>()
        })
        .unwrap()
    }

    fn journal_exists(&self) -> bool {
        self.dir.join("journal.json").exists()
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("watchdog.log")).unwrap_or_default()
    }
}

impl Drop for Bed {
    fn drop(&mut self) {
        if let Some(pid) = self.watchdog.filter(|p| running(*p)) {
            let _ = kill("-KILL", pid);
        }
        let _ = netns::remove(&self.ns);
        let _ = std::fs::remove_dir_all(&self.dir);
        let _ = std::fs::remove_file(&self.profile);
    }
}

/// Whether `pid` runs (a zombie has exited: this process, its parent,
/// has not reaped it).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
    })
}

/// `kill SIGNAL PID`.
fn kill(signal: &str, pid: u32) -> bool {
    std::process::Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .is_ok_and(|s| s.success())
}

/// Waits up to `limit` for `cond`.
fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Applies with a deadline, sends `signal` to the watchdog the journal
/// names, and checks that every value is back, the journal retired and
/// the watchdog gone, well before the deadline.
fn a_signal_rolls_back_at_once(tag: &str, signal: &str) {
    let mut bed = Bed::new(tag);
    let j = bed.apply();
    let old: Vec<String> = j.entries.iter().map(|e| e.old.clone()).collect();
    let new: Vec<String> = j.entries.iter().map(|e| e.new.clone()).collect();
    assert_eq!(bed.read(&j), new, "the apply's values are in place");
    let pid = j.watchdog_pid.expect("the journal names its watchdog");
    assert!(running(pid), "the watchdog runs");
    let sent = Instant::now();
    assert!(kill(signal, pid), "kill {signal} {pid}");
    let back = wait_until(PROMPT, || !bed.journal_exists() && bed.read(&j) == old);
    assert!(
        back,
        "{signal} to the watchdog (pid {pid}) did not roll back within {PROMPT:?}: values {:?} (old {old:?}), journal {}, watchdog {}, log {:?}",
        bed.read(&j),
        if bed.journal_exists() {
            "still there"
        } else {
            "retired"
        },
        if running(pid) { "running" } else { "gone" },
        bed.log()
    );
    assert!(
        wait_until(PROMPT, || !running(pid)),
        "the watchdog still runs after its rollback"
    );
    let log = bed.log();
    assert!(
        log.contains(signal.trim_start_matches('-')) && log.contains("rolled back"),
        "{log}"
    );
    assert!(
        sent.elapsed() < DEADLINE / 2,
        "rolled back only after {:?}",
        sent.elapsed()
    );
    // Nothing left to roll back.
    assert!(bed.state().load().unwrap().is_none());
}

fn sigterm_rolls_back_at_once() {
    a_signal_rolls_back_at_once("term", "-TERM");
}

fn sigint_rolls_back_at_once() {
    a_signal_rolls_back_at_once("int", "-INT");
}

fn sighup_rolls_back_at_once() {
    a_signal_rolls_back_at_once("hup", "-HUP");
}

fn sigquit_rolls_back_at_once() {
    a_signal_rolls_back_at_once("quit", "-QUIT");
}

/// A confirmed journal stays: the watchdog ends without touching it
/// (whether the signal or its own look at the journal comes first).
fn a_signal_after_confirm_changes_nothing() {
    let mut bed = Bed::new("conf");
    let j = bed.apply();
    let new: Vec<String> = j.entries.iter().map(|e| e.new.clone()).collect();
    let pid = j.watchdog_pid.expect("the journal names its watchdog");
    assert!(session::confirm(&bed.state()).unwrap(), "confirmed");
    let _ = kill("-TERM", pid);
    assert!(
        wait_until(PROMPT, || !running(pid)),
        "the watchdog still runs after the confirm"
    );
    assert_eq!(bed.read(&j), new, "the confirmed values stay");
    let kept = bed.state().load().unwrap().expect("the journal stays");
    assert!(kept.deadline_unix.is_none(), "{kept:?}");
    assert!(!bed.log().contains("rolled back ("), "{}", bed.log());
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("tune") {
        reentered(&args);
        return;
    }
    let tests: [(&str, fn()); 5] = [
        ("sigterm_rolls_back_at_once", sigterm_rolls_back_at_once),
        ("sigint_rolls_back_at_once", sigint_rolls_back_at_once),
        ("sighup_rolls_back_at_once", sighup_rolls_back_at_once),
        ("sigquit_rolls_back_at_once", sigquit_rolls_back_at_once),
        (
            "a_signal_after_confirm_changes_nothing",
            a_signal_after_confirm_changes_nothing,
        ),
    ];
    let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let chosen = tests.iter().filter(|(name, _)| {
        filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str()))
    });
    if !wirespeed_testkit::is_root() {
        for (name, _) in chosen {
            wirespeed_testkit::need_root(name);
        }
        return;
    }
    let mut failed = Vec::new();
    let mut ran = 0;
    for (name, test) in chosen {
        ran += 1;
        eprintln!("test {name} ...");
        match std::panic::catch_unwind(test) {
            Ok(()) => eprintln!("test {name} ... ok"),
            Err(_) => {
                eprintln!("test {name} ... FAILED");
                failed.push(*name);
            }
        }
    }
    eprintln!(
        "{ran} test(s), {} passed, {} failed {failed:?}",
        ran - failed.len(),
        failed.len()
    );
    if !failed.is_empty() {
        std::process::exit(101);
    }
}
