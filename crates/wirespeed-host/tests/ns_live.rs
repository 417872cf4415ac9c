//! Changes made through wirespeed-host inside a namespace of the test's
//! own (root only; skipped with a note otherwise): a journal written by an
//! older wirespeed (fixtures/journal-v1.json, recorded before each kind of
//! setting was defined once) still rolls back, and NsChanges (what an
//! experiment's lab_set uses) restores what it changed, side effects
//! included.

use wirespeed_host::netns;
use wirespeed_host::tune::{self, Host, Journal, NsChanges, Setting, StateDir};
use wirespeed_host::{Fs, LinkSize, Op};

use wirespeed_testkit::need_root;

/// Removes the namespace (and with it the veth pair) on drop.
struct Ns(String);

impl Drop for Ns {
    fn drop(&mut self) {
        let _ = netns::remove(&self.0);
    }
}

#[test]
fn a_journal_of_the_old_format_rolls_back() {
    if !need_root("a_journal_of_the_old_format_rolls_back") {
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
    let mut j: Journal = serde_json::from_str(include_str!("fixtures/journal-v1.json")).unwrap();
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

fn read_all(ns: &str, settings: &[Setting]) -> Vec<String> {
    netns::run_in(ns, || {
        let mut h = Host::open(Fs::at("/"))?;
        settings.iter().map(|s| h.read(s)).collect()
    })
    .unwrap()
}

#[test]
fn changes_in_a_namespace_are_undone_with_their_side_effects() {
    if !need_root("changes_in_a_namespace_are_undone") {
        return;
    }
    let ns = Ns(format!("wsc-p{}-0", std::process::id()));
    netns::create(&ns.0).unwrap();
    Op::Veth {
        ns_a: ns.0.clone(),
        dev_a: "c0".into(),
        ns_b: ns.0.clone(),
        dev_b: "c1".into(),
    }
    .apply()
    .unwrap();
    // A raised IPv4 GSO size, which setting gso_max_size <= 64 KiB resets.
    Op::LinkSet {
        ns: ns.0.clone(),
        dev: "c0".into(),
        sizes: vec![(LinkSize::GsoIpv4MaxSize, 40000)],
    }
    .apply()
    .unwrap();
    let dev = || "c0".to_string();
    let watched = [
        Setting::Sysctl {
            key: "net.ipv4.tcp_slow_start_after_idle".into(),
        },
        Setting::Mtu { dev: dev() },
        Setting::GsoMaxSize { dev: dev() },
        Setting::GsoIpv4MaxSize { dev: dev() },
    ];
    let before = read_all(&ns.0, &watched);
    assert_eq!(before[3], "40000");
    let mut c = NsChanges::new();
    c.set(&ns.0, &watched[0], "0").unwrap();
    c.set(&ns.0, &watched[1], "9000").unwrap();
    c.set(&ns.0, &watched[2], "30000").unwrap();
    let during = read_all(&ns.0, &watched);
    assert_eq!(during, ["0", "9000", "30000", "30000"]);
    // A refused write is an error, and what it recorded is undone too.
    assert!(c.set(&ns.0, &watched[1], "70000").is_err());
    c.undo().unwrap();
    assert_eq!(read_all(&ns.0, &watched), before);
}

// `ethtool -T` over netlink: veth and loopback stamp in software only (no
// hardware clock), inspect carries it per device, and the device toward
// a peer is found by route and read the same way (what --breakdown puts
// in its JSON).
#[test]
fn timestamping_capabilities_read_on_veth_and_loopback() {
    if !need_root("timestamping_capabilities_read") {
        return;
    }
    let ns = Ns(format!("wst-p{}-0", std::process::id()));
    netns::create(&ns.0).unwrap();
    let ops = [
        Op::Veth {
            ns_a: ns.0.clone(),
            dev_a: "t0".into(),
            ns_b: ns.0.clone(),
            dev_b: "t1".into(),
        },
        Op::Addr {
            ns: ns.0.clone(),
            dev: "t0".into(),
            addr: "10.9.7.1".parse().unwrap(),
            len: 24,
            nodad: true,
        },
        Op::Up {
            ns: ns.0.clone(),
            dev: "t0".into(),
        },
    ];
    for op in &ops {
        op.apply().unwrap_or_else(|e| panic!("{op}: {e}"));
    }
    let (snap, clock) = netns::run_in(&ns.0, || {
        let snap = wirespeed_host::inspect(&Fs::at("/"))?;
        let clock = wirespeed_host::ethtool::device_clock("10.9.7.2".parse().unwrap())?;
        Ok((snap, clock))
    })
    .unwrap();
    for name in ["t0", "lo"] {
        let link = snap.links.iter().find(|l| l.name == name).unwrap();
        let ts = link
            .timestamping
            .get()
            .unwrap_or_else(|| panic!("{name}: {:?}", link.timestamping));
        eprintln!("{name}: {ts:?}");
        for c in [
            "software-transmit",
            "software-receive",
            "software-system-clock",
        ] {
            assert!(
                ts.capabilities.iter().any(|x| x == c),
                "{name} lacks {c}: {ts:?}"
            );
        }
        assert!(!ts.hardware(), "{name}: {ts:?}");
        assert_eq!(ts.best(), "software");
        assert_eq!(ts.phc_index, None, "{name}: {ts:?}");
    }
    assert_eq!(clock.device, "t0");
    assert_eq!(clock.available, "software");
    // A device that is not there is an error that names it.
    let e = netns::run_in(&ns.0, || {
        wirespeed_host::ethtool::device_clock("192.0.2.1".parse().unwrap())
    })
    .unwrap_err();
    assert!(e.to_string().contains("192.0.2.1"), "{e}");
}
