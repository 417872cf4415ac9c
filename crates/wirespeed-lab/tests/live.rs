//! Labs built for real (root only; skipped with a note otherwise): what the
//! spec says is what the kernel shows, and nothing is left behind on drop,
//! on panic, on a failed build, or by a killed process.

use serde_json::Value;
use std::path::Path;
use std::process::Command;
use wirespeed_lab::{CapKind, HostSpec, Lab, LabSpec, LinkSpec, RouteSpec, VxlanSpec};

use wirespeed_testkit::need_root as root_or_skip;

fn ns_exists(ns: &str) -> bool {
    Path::new("/run/netns").join(ns).exists()
}

/// `ip -j ARGS` inside a namespace, parsed.
fn ip_json(ns: &str, args: &[&str]) -> Value {
    let out = Command::new("ip")
        .args(["-n", ns, "-j"])
        .args(args)
        .output()
        .expect("run ip");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("ip -j gives JSON")
}

fn link(ns: &str, dev: &str) -> Value {
    ip_json(ns, &["-d", "link", "show", "dev", dev])[0].clone()
}

#[test]
fn the_kernel_shows_what_the_spec_says() {
    if !root_or_skip("the_kernel_shows_what_the_spec_says") {
        return;
    }
    let mut spec = LabSpec::two_hosts(&Lab::unique("lt-spec"), 2, None);
    spec.links[0].mtu = Some(9000);
    spec.links[0].rate = Some("500mbit".into());
    spec.links[0].gso_max_size = Some(185000);
    spec.links[0].gro_max_size = Some(185000);
    spec.links[0].gso_ipv4_max_size = Some(150000);
    spec.links[0].gro = Some(false);
    spec.links[1].rate = Some("300mbit".into());
    spec.links[1].cap = CapKind::Htb;
    spec.hosts[0] = HostSpec {
        name: "a".into(),
        loopback: vec!["10.250.0.1/32".into()],
        source_routing: true,
        sysctl: [(
            "net.ipv4.fib_multipath_hash_policy".to_string(),
            "1".to_string(),
        )]
        .into_iter()
        .collect(),
    };
    spec.hosts[1].loopback.push("10.250.0.2/32".into());
    spec.hosts[1].loopback.push("fd00:250::2/128".into());
    spec.vxlans.push(VxlanSpec {
        link: 0,
        id: 77,
        port: 4789,
        ..VxlanSpec::default()
    });
    spec.routes.push(RouteSpec {
        host: "a".into(),
        dst: "10.250.0.2/32".into(),
        links: vec![0, 1],
    });
    spec.routes.push(RouteSpec {
        host: "a".into(),
        dst: "fd00:250::2/128".into(),
        links: vec![0, 1],
    });
    spec.routes.push(RouteSpec {
        host: "b".into(),
        dst: "10.250.0.1/32".into(),
        links: vec![1],
    });
    let lab = Lab::up(&spec).expect("lab up");
    let (na, nb) = (lab.ns("a"), lab.ns("b"));
    let e0 = link(&na, "eth0");
    assert_eq!(e0["mtu"], 9000);
    assert_eq!(e0["gso_max_size"], 185000);
    assert_eq!(e0["gro_max_size"], 185000);
    assert_eq!(link(&nb, "eth0")["mtu"], 9000, "both ends get the MTU");
    let vx = link(&na, "vx0");
    assert_eq!(vx["mtu"], 8950, "overlay MTU is the underlay's minus 50");
    // iproute2 before 6.3 does not show it: read it over netlink.
    let v4 = wirespeed_host::netns::run_in(&na, || {
        let mut h = wirespeed_host::tune::Host::open(wirespeed_host::Fs::at("/"))?;
        h.read(&wirespeed_host::tune::Setting::GsoIpv4MaxSize { dev: "eth0".into() })
    });
    assert_eq!(v4.unwrap(), "150000");
    assert_eq!(vx["linkinfo"]["info_data"]["id"], 77);
    assert_eq!(vx["linkinfo"]["info_data"]["port"], 4789, "{vx}");
    assert_eq!(
        vx["linkinfo"]["info_data"]["remote"],
        lab.addr4("b", 0).unwrap().to_string(),
        "{vx}"
    );
    assert_eq!(vx["linkinfo"]["info_data"]["link"], "eth0", "{vx}");
    let gro = Command::new("ip")
        .args(["netns", "exec", &na, "ethtool", "-k", "eth0"])
        .output()
        .unwrap();
    let gro = String::from_utf8_lossy(&gro.stdout).to_string();
    assert!(
        gro.lines()
            .any(|l| l.starts_with("generic-receive-offload: off")),
        "{gro}"
    );
    let qd = |ns: &str, dev: &str| -> Value {
        let out = Command::new("tc")
            .args(["-n", ns, "-j", "qdisc", "show", "dev", dev])
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap()
    };
    assert_eq!(qd(&na, "eth0")[0]["kind"], "tbf");
    assert_eq!(qd(&nb, "eth0")[0]["kind"], "tbf", "caps apply both ways");
    assert_eq!(qd(&na, "eth1")[0]["kind"], "htb");
    let addrs = ip_json(&na, &["addr", "show", "dev", "lo"]);
    assert!(addrs.to_string().contains("10.250.0.1"));
    let routes = ip_json(&na, &["route", "show", "10.250.0.2/32"]);
    assert_eq!(
        routes[0]["nexthops"].as_array().map(Vec::len),
        Some(2),
        "{routes}"
    );
    let routes6 = ip_json(&na, &["-6", "route", "show", "fd00:250::2/128"]);
    assert_eq!(
        routes6[0]["nexthops"].as_array().map(Vec::len),
        Some(2),
        "{routes6}"
    );
    let one = ip_json(&nb, &["route", "show", "10.250.0.1/32"]);
    assert_eq!(one[0]["gateway"], lab.addr4("a", 1).unwrap().to_string());
    assert_eq!(one[0]["dev"], "eth1");
    let table = ip_json(&na, &["-6", "route", "show", "table", "101"]).to_string();
    assert!(table.contains("\"dev\":\"eth1\""), "{table}");
    // Traffic crosses the overlay, the multipath route and the v6 one:
    // a TCP connection from a thread in a to a listener in b.
    use wirespeed_host::netns::run_in;
    for to in [
        lab.vxlan("b", 0).unwrap().addr4.to_string(),
        "10.250.0.2".to_string(),
        "fd00:250::2".to_string(),
    ] {
        let ip: std::net::IpAddr = to.parse().unwrap();
        let l = run_in(&nb, || Ok(std::net::TcpListener::bind((ip, 0))))
            .unwrap()
            .unwrap();
        let at = l.local_addr().unwrap();
        let c = run_in(&na, || {
            Ok(std::net::TcpStream::connect_timeout(
                &at,
                std::time::Duration::from_secs(5),
            ))
        })
        .unwrap();
        assert!(c.is_ok(), "connect to {at}: {c:?}");
    }
    let rules = ip_json(&na, &["rule", "show"]).to_string();
    assert!(
        rules.contains(&lab.addr4("a", 1).unwrap().to_string()),
        "{rules}"
    );
    let sysctl = Command::new("ip")
        .args([
            "netns",
            "exec",
            &na,
            "cat",
            "/proc/sys/net/ipv4/fib_multipath_hash_policy",
        ])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&sysctl.stdout).trim(), "1");
    lab.down().unwrap();
    assert!(!ns_exists(&na) && !ns_exists(&nb));
}

#[test]
fn drop_removes_the_lab_even_on_panic() {
    if !root_or_skip("drop_removes_the_lab_even_on_panic") {
        return;
    }
    let spec = LabSpec::two_hosts(&Lab::unique("lt-panic"), 1, None);
    let ns = format!("{}-a", spec.name);
    let r = std::panic::catch_unwind(|| {
        let _lab = Lab::up(&spec).expect("lab up");
        assert!(ns_exists(&ns));
        panic!("a failing test");
    });
    assert!(r.is_err());
    assert!(!ns_exists(&ns), "the panic left {ns} behind");
}

#[test]
fn a_failed_build_leaves_nothing_and_names_the_command() {
    if !root_or_skip("a_failed_build_leaves_nothing") {
        return;
    }
    let mut spec = LabSpec::two_hosts(&Lab::unique("lt-fail"), 1, None);
    spec.hosts[1]
        .sysctl
        .insert("net.ipv4.no_such_knob".into(), "1".into());
    let err = Lab::up(&spec).unwrap_err().to_string();
    assert!(err.contains("net.ipv4.no_such_knob"), "{err}");
    for h in ["a", "b"] {
        assert!(!ns_exists(&format!("{}-{h}", spec.name)));
    }
}

#[test]
fn namespaces_of_a_killed_process_are_swept() {
    if !root_or_skip("namespaces_of_a_killed_process_are_swept") {
        return;
    }
    // A pid far above pid_max's default cannot be alive.
    let stale = "lt-stale-p4000000-0-a";
    // A process a killed run left inside (a server without a parent) is
    // killed with its namespace; so is one inside a lab that goes down.
    // The process makes the namespace and only then is it named, so that
    // another test's sweep never sees it empty.
    // Readiness: the child has left this process's namespace.
    let entered = |pid: u32| {
        let end = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while std::fs::read_link(format!("/proc/{pid}/ns/net")).ok()
            == std::fs::read_link("/proc/self/ns/net").ok()
            && std::time::Instant::now() < end
        {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    };
    let mut orphan = Command::new("unshare")
        .args(["--net", "sleep", "300"])
        .spawn()
        .unwrap();
    entered(orphan.id());
    let st = Command::new("ip")
        .args(["netns", "attach", stale, &orphan.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let lab = Lab::up(&LabSpec::two_hosts(&Lab::unique("lt-sweep"), 1, None)).unwrap();
    assert!(!ns_exists(stale), "the stale namespace is still there");
    let mut inside = lab.command("a", "sleep").arg("300").spawn().unwrap();
    entered(inside.id());
    lab.down().unwrap();
    for (what, child) in [("stale", &mut orphan), ("lab", &mut inside)] {
        let end = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let status = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break Some(st);
            }
            if std::time::Instant::now() > end {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            status.and_then(|s| s.signal()),
            Some(9),
            "the process in the {what} namespace was not killed"
        );
    }
}

#[test]
fn shared_subnets_number_the_nics_in_order() {
    if !root_or_skip("shared_subnets_number_the_nics_in_order") {
        return;
    }
    let mut spec = LabSpec::two_hosts(&Lab::unique("lt-share"), 0, None);
    for _ in 0..2 {
        spec.links.push(LinkSpec {
            a: "a".into(),
            b: "b".into(),
            subnet: Some("10.66.0.0/24".into()),
            ..LinkSpec::default()
        });
    }
    let lab = Lab::up(&spec).unwrap();
    assert_eq!(lab.addr4("a", 1).unwrap().to_string(), "10.66.0.3");
    assert_eq!(lab.addr4("b", 1).unwrap().to_string(), "10.66.0.4");
    let a = ip_json(&lab.ns("a"), &["addr", "show", "dev", "eth1"]).to_string();
    assert!(a.contains("10.66.0.3"), "{a}");
}
