//! The previous release and this build measure each other (issue 44,
//! item 5): the previous release's binary (k8s/testenv/prev-release.sh,
//! a pinned commit built once and cached under target/) serves and this
//! build's client measures, then the other way round, over loopback,
//! for a stream and an rr test. The control protocol's handshake agrees
//! across the release (the previous one states no version; this one
//! takes that as control protocol 1). The fleet protocol across the
//! release is tested on the real cluster (k8s_watch's rolling upgrade).

use crate::common;

use common::{bin, first_result, heavy, serve};
use std::process::Command;

/// A `serve` of `server` on `port`, and `client`'s bench of each workload
/// against it: each measures.
fn measures(server: &str, client: &str, port: &str) {
    let mut cmd = Command::new(server);
    cmd.args(["serve", "--bind", "127.0.0.1", "--port", port]);
    let _s = serve(cmd);
    for w in ["stream", "rr"] {
        let out = Command::new(client)
            .args(["bench", "127.0.0.1", "--port", port, "-w", w])
            .args(["--duration", "1s", "--format", "json"])
            .output()
            .expect("run the client");
        let r = first_result(&out);
        let figure = if w == "stream" {
            r["throughput_bps"].as_f64()
        } else {
            r["transactions_per_s"].as_f64()
        };
        assert!(
            figure.is_some_and(|x| x > 0.0),
            "{client} against {server}, {w}: {r}"
        );
    }
}

#[test]
fn the_previous_release_and_this_one_measure_each_other() {
    let _h = heavy();
    let prev = common::prev_release();
    measures(&prev, bin(), "5471");
    measures(bin(), &prev, "5472");
}
