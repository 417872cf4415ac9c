//! iperf3's flags on `wirespeed bench`: the combinations that make no
//! sense fail with a reason and a non-zero exit, before any connection
//! (no server needed, no root).

use crate::common;
use common::assert_clean_failure;

fn bench(extra: &[&str]) -> Vec<String> {
    ["bench", "127.0.0.1", "-p", "9"]
        .iter()
        .chain(extra)
        .map(|s| s.to_string())
        .collect()
}

#[test]
fn senseless_iperf3_combinations_are_refused_with_a_reason() {
    let cases: &[(&[&str], &str)] = &[
        (&["-u", "-w", "rr"], "cannot be used with"),
        (&["-n", "1G", "-t", "5"], "cannot be used with"),
        (&["-n", "1G", "-k", "10"], "cannot be used with"),
        (&["-4", "-6"], "cannot be used with"),
        (&["--tos", "0x10", "--dscp", "ef"], "cannot be used with"),
        (&["-B", "10.0.0.1", "--path", "a=b"], "cannot be used with"),
        (&["-Z", "-u"], "sendfile"),
        (&["-Z", "--zerocopy"], "either -z/--sendfile or --zerocopy"),
        (&["-m", "-u"], "mptcp runs tcp"),
        (&["--dont-fragment"], "udp"),
        (&["--tos", "300"], "0-255"),
        (&["--dscp", "64"], "0-63"),
        (&["--dscp", "af51"], "0-63"),
        (&["-n", "0"], "above 0"),
        (&["--cport", "65535", "-P", "4"], "below 65536"),
        (&["-B", "eth0"], "ip address"),
        (&["-4", "-B", "::1"], "family"),
        (&["--connect-timeout", "0"], "at least 1 ms"),
        (
            &["--format", "iperf3-json", "-w", "rr"],
            "stream and udp-stream",
        ),
        (&["--json-stream", "--format", "kv"], "json lines"),
        (&["--format", "xml"], "iperf3-json"),
        (&["--timestamps=%Y %!"], "unrecognized specifier"),
    ];
    for (extra, needle) in cases {
        let args = bench(extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_clean_failure(&args, needle);
    }
}

#[test]
fn a_family_the_server_address_is_not_of_is_refused_before_connecting() {
    assert_clean_failure(&["bench", "::1", "-4"], "no address of the family -4");
    assert_clean_failure(&["bench", "127.0.0.1", "-6"], "no address of the family -6");
}

// fleet run builds its tests from bench's flags too: the ones that pick
// how bench reaches its one server are refused there, not ignored.
#[test]
fn fleet_run_refuses_the_flags_that_pick_how_bench_reaches_its_server() {
    let dir = common::temp_dir("i3fleet");
    let fleet = dir.join("fleet.toml");
    let agent = |n: &str, ip: &str| {
        format!("[[agent]]\nname = \"{n}\"\ncontrol = \"{ip}:5300\"\nhttp = \"{ip}:5380\"\n")
    };
    let text = agent("a", "127.0.0.1") + &agent("b", "127.0.0.2");
    std::fs::write(&fleet, text).unwrap();
    let key = dir.join("key");
    std::fs::write(&key, [7u8; 32]).unwrap();
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let (f, k) = (fleet.to_str().unwrap(), key.to_str().unwrap());
    for flag in [&["-4"][..], &["-B", "127.0.0.1"], &["--cport", "4000"]] {
        let args = [&["fleet", "run", "--agents", f, "--key-file", k][..], flag].concat();
        assert_clean_failure(&args, "do not apply");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

// Found: on a refused connection `--format iperf3-json` printed nothing,
// where `iperf3 -J` prints {"start": {"connected": [], "version",
// "system_info"}, "intervals": [], "end": {}, "error": "..."}. Now it
// prints that document (and exits non-zero), and --json-stream ends with
// an error event.
#[test]
fn a_refused_connection_is_an_iperf3_error_document() {
    // Port 1 on loopback: nothing listens there.
    let out = common::ws(&["bench", "127.0.0.1:1", "--format", "iperf3-json"]);
    assert!(!out.status.success(), "exited 0");
    let text = String::from_utf8_lossy(&out.stdout);
    let doc: serde_json::Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("not one JSON document ({e}): {text:?}"));
    let error = doc["error"].as_str().unwrap_or_default();
    assert!(error.contains("Connection refused"), "{doc}");
    assert_eq!(doc["start"]["connected"], serde_json::json!([]), "{doc}");
    assert!(doc["start"]["version"].is_string(), "{doc}");
    assert!(doc["start"]["system_info"].is_string(), "{doc}");
    assert_eq!(doc["intervals"], serde_json::json!([]), "{doc}");
    assert_eq!(doc["end"], serde_json::json!({}), "{doc}");
    // The stream has an error event with the reason, whichever format.
    for extra in [&[][..], &["--format", "iperf3-json"]] {
        let args = [&["bench", "127.0.0.1:1", "--json-stream"][..], extra].concat();
        let out = common::ws(&args);
        assert!(!out.status.success(), "{args:?} exited 0");
        let text = String::from_utf8_lossy(&out.stdout);
        let events: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect();
        let error = events.iter().find(|v| v["event"] == "error");
        let why = error.and_then(|v| v["data"].as_str()).unwrap_or_default();
        assert!(why.contains("Connection refused"), "{args:?}: {text}");
    }
}
