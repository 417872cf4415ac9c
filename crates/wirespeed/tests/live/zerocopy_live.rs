//! Receive without copying (`--rx-zerocopy`, TCP_ZEROCOPY_RECEIVE) and
//! busy-polled request/response (`--busy-poll`) between two namespaces
//! joined by veth, with `wirespeed serve` in one and `wirespeed bench` in
//! the other. Needs root; skips (with a note) otherwise.

use crate::common;
use common::{
    assert_clean_failure, bin, first_result, heavy, lab_spec_with_server, root_or_skip, run,
};
use serde_json::Value;
use wirespeed_lab::{Lab, LabSpec};

/// IPv4 with TCP timestamps: 20 + 32 header bytes, so this MTU gives an
/// MSS of 15 pages (61440 bytes).
const PAGE_MTU: u32 = 15 * 4096 + 52;

fn lab(prefix: &str, mtu: Option<u32>) -> (Lab, common::ServerProc) {
    let mut spec = LabSpec::two_hosts(&Lab::unique(prefix), 1, None);
    spec.links[0].mtu = mtu;
    lab_spec_with_server(&spec)
}

fn bench(lab: &Lab, args: &[&str]) -> std::process::Output {
    let server = lab.addr4("b", 0).unwrap().to_string();
    let mut cmd = lab.command("a", bin());
    cmd.args(["bench", &server, "--json", "-d", "2s", "--warmup", "0.5s"])
        .args(args);
    run(cmd)
}

fn u(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} missing in {v}"))
}

/// Every flow's receiver counted each byte it took in once, mapped or
/// copied: the two add up to what the server received.
fn zc_of(flow: &Value) -> &Value {
    let z = &flow["rx_zerocopy"];
    assert!(z.is_object(), "no rx_zerocopy in {flow}");
    assert_eq!(
        u(z, "mapped_bytes") + u(z, "copied_bytes"),
        u(flow, "server_received_total"),
        "mapped + copied is every byte received: {z}"
    );
    z
}

// An MSS of whole pages and a MSG_ZEROCOPY sender (over veth the kernel
// copies its pages into fresh order-0 pages at the receiving socket,
// which are mappable): most bytes arrive mapped. With a copying sender
// (its page fragments are compound pages) the same link maps none, and
// the test says so in a note.
#[test]
fn rx_zerocopy_maps_whole_pages_and_says_when_the_kernel_copies() {
    if !root_or_skip("rx_zerocopy") {
        return;
    }
    let _g = heavy();
    let (lab, _server) = lab("t-rxzc", Some(PAGE_MTU));
    let out = bench(&lab, &["--rx-zerocopy", "--zerocopy", "-F", "2"]);
    let r = first_result(&out);
    assert_eq!(r["spec"]["rx_zerocopy"], true, "the spec carries the flag");
    let flows = r["flows"].as_array().expect("flows");
    assert_eq!(flows.len(), 2);
    for fl in flows {
        let z = zc_of(fl);
        let frac = z["fraction"].as_f64().unwrap();
        assert!(
            frac > 0.5,
            "an MSS of whole pages from a zerocopy sender maps most bytes: {z}"
        );
        assert!(z.get("fallback").is_none(), "{z}");
    }

    let out = bench(&lab, &["--rx-zerocopy"]);
    let r = first_result(&out);
    let z = zc_of(&r["flows"][0]);
    assert!(
        z["fraction"].as_f64().unwrap() < 0.5,
        "a copying sender's compound pages are not mapped: {z}"
    );
    let notes = r["notes"].to_string();
    assert!(
        notes.contains("rx-zerocopy: the kernel mapped") && notes.contains("4096"),
        "the note names what the kernel needs: {notes}"
    );
}

// Reverse: the client receives, mapped, over a standard 1500-byte MTU
// (1448-byte segments, never a whole page): all copied, counted, and the
// transfer is whole.
#[test]
fn rx_zerocopy_at_the_client_with_a_1500_mtu_copies_and_counts_every_byte() {
    if !root_or_skip("rx_zerocopy_reverse") {
        return;
    }
    let _g = heavy();
    let (lab, _server) = lab("t-rxzcr", None);
    let out = bench(&lab, &["--rx-zerocopy", "-R"]);
    let r = first_result(&out);
    let fl = &r["flows"][0];
    let z = &fl["rx_zerocopy"];
    assert_eq!(
        u(z, "mapped_bytes") + u(z, "copied_bytes"),
        u(fl, "client_received_total"),
        "{z}"
    );
    assert_eq!(u(z, "mapped_bytes"), 0, "1448-byte segments fill no page");
    assert!(r["throughput_bps"].as_f64().unwrap() > 1e8);
}

#[test]
fn bad_zerocopy_and_busy_poll_flags_fail_cleanly() {
    assert_clean_failure(
        &["bench", "127.0.0.1", "--rx-zerocopy", "-w", "rr"],
        "--rx-zerocopy covers the stream workload only",
    );
    assert_clean_failure(
        &["bench", "127.0.0.1", "--rx-zerocopy", "--skip-rx-copy"],
        "choose one",
    );
    assert_clean_failure(
        &["bench", "127.0.0.1", "-w", "rr", "--busy-poll", "0"],
        "busy poll of 0 us must be between 1 and 1000",
    );
    assert_clean_failure(
        &["bench", "127.0.0.1", "-w", "rr", "--busy-poll", "lots"],
        "--busy-poll",
    );
}

// Busy-polled rr: both sides set SO_BUSY_POLL, the spec carries it to the
// server, and transactions flow. (Whether it lowers latency depends on the
// NIC having NAPI: docs/benchmarks.md.)
#[test]
fn busy_poll_rr_runs_on_both_sides() {
    if !root_or_skip("busy_poll_rr") {
        return;
    }
    let _g = heavy();
    let (lab, _server) = lab("t-bpoll", None);
    let out = bench(&lab, &["-w", "rr", "--busy-poll", "50"]);
    let r = first_result(&out);
    assert_eq!(r["spec"]["busy_poll_us"], 50);
    assert!(
        r["transactions_per_s"].as_f64().unwrap() > 100.0,
        "{}",
        r["transactions_per_s"]
    );
    assert!(r["latency"]["p99_us"].as_f64().unwrap() > 0.0);
}
