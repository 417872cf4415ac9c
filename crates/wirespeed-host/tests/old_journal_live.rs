//! A journal written by an older wirespeed (tests/fixtures/journal-v1.json,
//! recorded before each kind of setting was defined once) still rolls
//! back, on a veth pair in a namespace of this test's own (root only;
//! skipped with a note otherwise).

use wirespeed_host::netns;
use wirespeed_host::tune::{self, Host, Journal, Setting, StateDir};
use wirespeed_host::{Fs, Op};

fn root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find(|l| l.starts_with("Uid:"))
            .and_then(|l| l.split_whitespace().nth(2))
            == Some("0")
    })
}

/// Removes the namespace (and with it the veth pair) on drop.
struct Ns(String);

impl Drop for Ns {
    fn drop(&mut self) {
        let _ = netns::remove(&self.0);
    }
}

#[test]
fn a_journal_of_the_old_format_rolls_back() {
    if !root() {
        eprintln!("skipping a_journal_of_the_old_format_rolls_back: needs root");
        return;
    }
    let ns = Ns(format!("wsj-p{}-0", std::process::id()));
    netns::create(&ns.0).unwrap();
    let ops = [
        Op::Veth {
            ns_a: ns.0.clone(),
            dev_a: "j0".into(),
            ns_b: ns.0.clone(),
            dev_b: "j1".into(),
        },
        Op::Addr {
            ns: ns.0.clone(),
            dev: "j0".into(),
            addr: "10.9.9.1".parse().unwrap(),
            len: 24,
            nodad: false,
        },
        Op::Up {
            ns: ns.0.clone(),
            dev: "j0".into(),
        },
    ];
    for op in &ops {
        op.apply().unwrap_or_else(|e| panic!("{op}: {e}"));
    }
    let mut j: Journal =
        serde_json::from_str(include_str!("fixtures/journal-v1.json")).unwrap();
    // What a veth has (no private flags, rings or bond), in this boot.
    j.entries.retain(|e| {
        !matches!(
            e.setting,
            Setting::PrivateFlag { .. } | Setting::RxRing { .. } | Setting::BondHashPolicy { .. }
        )
    });
    j.boot_id = tune::boot_id();
    assert_eq!(j.entries.len(), 8);
    let dir = std::env::temp_dir().join(format!("ws-oldjournal-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let state = StateDir::new(&dir);
    let entries = j.entries.clone();
    let got = netns::run_in(&ns.0, || {
        let mut host = Host::open(Fs::at("/"))?;
        // The state the journal recorded: old values, then the new ones
        // (IPv6 sizes before IPv4 ones, as apply orders them).
        for e in &entries {
            host.set(&e.setting, &e.old)?;
        }
        for e in &entries {
            host.set(&e.setting, &e.new)?;
        }
        state.save(&j)?;
        let rolled = tune::rollback(&mut host, &state)?;
        let now: Vec<String> = entries
            .iter()
            .map(|e| host.read(&e.setting).unwrap_or_else(|e| e.to_string()))
            .collect();
        Ok((rolled, now))
    });
    let _ = std::fs::remove_dir_all(&dir);
    let (rolled, now) = got.unwrap();
    assert!(rolled.skipped.is_empty(), "{:?}", rolled.skipped);
    assert_eq!(rolled.restored.len(), 8);
    let old: Vec<&str> = entries.iter().map(|e| e.old.as_str()).collect();
    assert_eq!(now, old);
}
