//! The tune module's unit tests.
use super::JournalCheck;
use super::journal::{new_journal, now_unix};
use super::*;
use crate::fsroot::sysctl_path;
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[test]
fn a_plan_and_a_journal_written_before_the_settings_were_one_table_still_read() {
    // Recorded with the code of commit d4efe41 (one match per method).
    let plan: Plan =
        serde_json::from_str(include_str!("../../tests/fixtures/plan-v1.json")).unwrap();
    assert_eq!(plan.steps.len(), 11, "one step per kind of setting");
    for s in &plan.steps {
        assert_eq!(s.action.command(), s.command, "{:?}", s.action.setting);
    }
    let j: Journal =
        serde_json::from_str(include_str!("../../tests/fixtures/journal-v1.json")).unwrap();
    let labels: Vec<String> = j.entries.iter().map(|e| e.setting.label()).collect();
    assert_eq!(labels[1], "mtu of j0");
    assert_eq!(labels[6], "rx-gro of j0");
    assert_eq!(
        labels[10],
        "source routing of 10.9.9.1/24 via j0 (table 190)"
    );
    let steps: Vec<Setting> = plan
        .steps
        .iter()
        .map(|s| s.action.setting.clone())
        .collect();
    let entries: Vec<Setting> = j.entries.iter().map(|e| e.setting.clone()).collect();
    assert_eq!(steps, entries);
}

#[test]
fn commands_read_like_what_people_type() {
    let a = Action::sysctl("net.ipv4.tcp_rmem", "4096 131072 16777216");
    assert_eq!(
        a.command(),
        "sysctl -w net.ipv4.tcp_rmem=\"4096 131072 16777216\""
    );
    let m = Action {
        setting: Setting::Mtu { dev: "eth1".into() },
        value: "9000".into(),
    };
    assert_eq!(m.command(), "ip link set dev eth1 mtu 9000");
    let g = Action {
        setting: Setting::GsoIpv4MaxSize { dev: "eth1".into() },
        value: "185000".into(),
    };
    assert_eq!(g.command(), "ip link set dev eth1 gso_ipv4_max_size 185000");
    let s = Action {
        setting: Setting::SourceRoute {
            dev: "eth1".into(),
            addr: "10.0.0.3/24".into(),
            table: 101,
            priority: 1001,
        },
        value: "present".into(),
    };
    assert_eq!(
        s.command(),
        "ip rule add from 10.0.0.3/32 table 101 priority 1001 && ip route add 10.0.0.0/24 dev eth1 src 10.0.0.3 table 101"
    );
}

#[test]
fn ipv6_sizes_rank_before_ipv4_ones() {
    let s = |setting| Action {
        setting,
        value: "1".into(),
    };
    let mut v = [
        s(Setting::GsoIpv4MaxSize { dev: "a".into() }),
        s(Setting::GsoMaxSize { dev: "a".into() }),
        s(Setting::Mtu { dev: "a".into() }),
    ];
    v.sort_by_key(|a| a.setting.rank());
    assert!(matches!(v[0].setting, Setting::Mtu { .. }));
    assert!(matches!(v[1].setting, Setting::GsoMaxSize { .. }));
}

fn temp_state(tag: &str) -> (PathBuf, StateDir) {
    let dir = std::env::temp_dir().join(format!("ws-journal-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    (dir.clone(), StateDir::new(&dir))
}

fn journal(deadline: Option<f64>) -> Journal {
    Journal {
        created_unix: 1.0,
        deadline_unix: deadline,
        entries: vec![Entry {
            setting: Setting::Sysctl { key: "k.k".into() },
            old: "1".into(),
            new: "0".into(),
            side_effect_of: None,
        }],
        ..new_journal()
    }
}

#[test]
fn journals_round_trip_and_confirm_clears_the_deadline() {
    let (dir, st) = temp_state("rt");
    assert!(st.load().unwrap().is_none());
    let j = journal(Some((now_unix() + 3600.0).floor()));
    st.save(&j).unwrap();
    assert_eq!(st.load().unwrap(), Some(j));
    assert!(confirm(&st).unwrap().unwrap().deadline_unix.is_some());
    assert_eq!(st.load().unwrap().unwrap().deadline_unix, None);
    // No temporary file is left beside the journal.
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!names.iter().any(|n| n.contains("tmp")), "{names:?}");
    std::fs::write(dir.join("journal.json"), b"{not json").unwrap();
    let e = st.load().unwrap_err().to_string();
    assert!(
        e.contains("not a wirespeed journal") && e.contains("mv "),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_late_confirm_is_refused_and_the_journal_is_overdue() {
    let (dir, st) = temp_state("late");
    st.save(&journal(Some(now_unix() - 5.0))).unwrap();
    let j = st.load().unwrap().unwrap();
    assert!(j.overdue_s().is_some_and(|s| s >= 5.0));
    let e = confirm(&st).unwrap_err().to_string();
    assert!(
        e.contains("too late to confirm") && e.contains("rollback"),
        "{e}"
    );
    assert!(st.load().unwrap().unwrap().deadline_unix.is_some());
    // A journal of another boot is stale; one of this boot is not.
    assert!(!j.from_earlier_boot());
    let old = Journal {
        boot_id: Some("00000000-0000-0000-0000-000000000000".into()),
        ..j
    };
    assert!(old.from_earlier_boot() == boot_id().is_some());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_lock_is_exclusive_and_a_waiter_names_the_holder() {
    let (dir, st) = temp_state("lock");
    let held = st.lock().unwrap();
    let short = st.clone().with_lock_wait(Duration::from_millis(200));
    let t = Instant::now();
    let e = short.lock().unwrap_err().to_string();
    assert!(t.elapsed() >= Duration::from_millis(200));
    assert!(
        e.contains("another wirespeed tune holds the lock")
            && e.contains(&format!("pid {}", std::process::id())),
        "{e}"
    );
    drop(held);
    short.lock().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn unsafe_state_dirs_and_symlinked_journals_are_refused() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, st) = temp_state("unsafe");
    st.save(&journal(None)).unwrap();
    let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700, "created 0700");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let e = st.lock().unwrap_err().to_string();
    assert!(e.contains("writable by other users"), "{e}");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let target = dir.join("elsewhere.json");
    std::fs::rename(dir.join("journal.json"), &target).unwrap();
    std::os::unix::fs::symlink(&target, dir.join("journal.json")).unwrap();
    let e = st.load().unwrap_err().to_string();
    assert!(e.contains("symbolic link"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn only_net_sysctls_are_per_namespace() {
    for k in [
        "net.ipv4.tcp_rmem",
        "net.ipv4.conf.eth0.rp_filter",
        "net/ipv4/tcp_wmem",
    ] {
        assert!(!sysctl_is_host_wide(k), "{k}");
        assert!(netns_sysctl_refusal(k).is_none(), "{k}");
    }
    for k in [
        "kernel.hostname",
        "vm.swappiness",
        "fs.file-max",
        "kernel/hostname",
        "net.core.rmem_max",
        "net.core.netdev_max_backlog",
        "net.ipv4.tcp_mem",
    ] {
        assert!(sysctl_is_host_wide(k), "{k}");
        let why = netns_sysctl_refusal(k).unwrap();
        assert!(why.contains(k) && why.contains("host"), "{why}");
    }
    assert!(valid_sysctl_name("net.ipv4.conf.eth0/100.rp_filter"));
    for bad in ["", "net", "net..x", ".net.x", "net.x y", "net./x", "a\nb.c"] {
        assert!(!valid_sysctl_name(bad), "{bad:?}");
    }
    assert_eq!(
        sysctl_path("net.ipv4.conf.eth0/100.rp_filter"),
        "proc/sys/net/ipv4/conf/eth0.100/rp_filter"
    );
    assert_eq!(
        sysctl_path("net/ipv4/tcp_rmem"),
        "proc/sys/net/ipv4/tcp_rmem"
    );
}
