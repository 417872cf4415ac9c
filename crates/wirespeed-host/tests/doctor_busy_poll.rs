//! Doctor's busy-poll rule over snapshots: named for request/response
//! work on a host that does not busy poll, with the host-wide sysctls as
//! its actions and `--busy-poll` to measure first; silent for bulk work,
//! where busy polling is set, and where the sysctls are not read (a
//! network namespace has none of its own).

use wirespeed_host::doctor::{BUSY_POLL_US, Goal, diagnose};
use wirespeed_host::snapshot::{BigTcpSupport, Known, Snapshot};

fn snapshot(busy: Option<(&str, &str)>) -> Snapshot {
    let mut sysctls = std::collections::BTreeMap::new();
    if let Some((read, poll)) = busy {
        sysctls.insert("net.core.busy_read".to_string(), Known::Value(read.into()));
        sysctls.insert("net.core.busy_poll".to_string(), Known::Value(poll.into()));
    }
    Snapshot {
        schema_version: 1,
        hostname: "fixture".into(),
        netns: None,
        kernel: "6.12.0".into(),
        cpus: 8,
        mem_total_bytes: Known::Value(16 << 30),
        big_tcp: BigTcpSupport {
            ipv6: true,
            ipv4: true,
        },
        links: vec![],
        routes: vec![],
        rules: vec![],
        egress: vec![],
        sysctls,
        sysctl_readonly: vec![],
    }
}

fn busy_poll_finding(s: &Snapshot, rr: bool) -> Option<wirespeed_host::Finding> {
    let goal = Goal {
        rr,
        ..Goal::default()
    };
    diagnose(s, &goal).into_iter().find(|f| f.id == "busy-poll")
}

#[test]
fn named_for_rr_on_a_host_that_does_not_busy_poll() {
    let f = busy_poll_finding(&snapshot(Some(("0", "0"))), true).expect("a busy-poll finding");
    let cmds: Vec<String> = f.actions.iter().map(|a| a.command()).collect();
    let want = BUSY_POLL_US.to_string();
    assert!(
        cmds.iter()
            .any(|c| c.contains("net.core.busy_read") && c.contains(&want))
            && cmds
                .iter()
                .any(|c| c.contains("net.core.busy_poll") && c.contains(&want)),
        "{cmds:?}"
    );
    assert_eq!(f.bench_flags.as_deref(), Some("--busy-poll 50"));
    assert!(
        f.evidence
            .iter()
            .any(|e| e.name == "net.core.busy_read" && e.value == "0")
    );
}

#[test]
fn silent_for_bulk_work_when_set_and_when_not_read() {
    assert!(busy_poll_finding(&snapshot(Some(("0", "0"))), false).is_none());
    assert!(busy_poll_finding(&snapshot(Some(("50", "0"))), true).is_none());
    assert!(busy_poll_finding(&snapshot(Some(("0", "50"))), true).is_none());
    assert!(busy_poll_finding(&snapshot(None), true).is_none());
}
