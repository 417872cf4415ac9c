//! `--breakdown` at the client: joins its own per-transaction segments
//! with the server's (from the server's report) by flow and transaction
//! number, and sums them up into the result's `breakdown`.

use crate::stamps::{CAP, FlowStamps};
use std::collections::HashMap;
use wirespeed_types::breakdown::{Breakdown, Joined, summarize};
#[cfg(test)]
use wirespeed_types::breakdown::{CRR_SEGMENTS, RR_SEGMENTS};

/// What is wrong with the timestamp records of a server's report; the
/// text follows "the server's report".
#[derive(Debug, thiserror::Error)]
pub enum BadStamps {
    /// Records of more flows than the test has.
    #[error("has timestamps of {got} flows, the test has {flows}")]
    TooManyFlows {
        /// Flows with records.
        got: usize,
        /// Flows in the test.
        flows: usize,
    },
    /// A flow unknown to the test, too many records or a bad stride.
    #[error("has malformed timestamps for flow {id} ({records} records, stride {stride})")]
    Malformed {
        /// The flow the records name.
        id: u32,
        /// How many records it has.
        records: usize,
        /// Its sampling stride.
        stride: u64,
    },
}

/// Checks the server's timestamp records: known flows, bounded counts.
pub fn check(stamps: &[FlowStamps], flows: usize) -> Result<(), BadStamps> {
    if stamps.len() > flows {
        return Err(BadStamps::TooManyFlows {
            got: stamps.len(),
            flows,
        });
    }
    for s in stamps {
        if s.id as usize >= flows || s.recs.len() > CAP + 1 || !s.stride.is_power_of_two() {
            return Err(BadStamps::Malformed {
                id: s.id,
                records: s.recs.len(),
                stride: s.stride,
            });
        }
    }
    Ok(())
}

/// One flow's transactions with both sides' segments, in the order of
/// [`wirespeed_types::breakdown::SEGMENTS`]; the wire is the client's SND
/// to receive-timestamp time less the server's whole turn (its accept
/// included: the request was stamped before it).
fn join(c: &FlowStamps, s: &FlowStamps, out: &mut Vec<Joined>) -> u64 {
    let stride = c.stride.max(s.stride);
    let theirs: HashMap<u64, [i64; 5]> = s
        .recs
        .iter()
        .filter(|r| r.0.is_multiple_of(stride))
        .map(|r| (r.0, r.1))
        .collect();
    for (seq, m, window, rtt) in &c.recs {
        if !window || !seq.is_multiple_of(stride) {
            continue;
        }
        if let Some(t) = theirs.get(seq) {
            let turn: i64 = t.iter().sum();
            let parts = [
                m[0],
                m[1],
                m[2],
                m[3] - turn,
                t[0],
                t[1],
                t[2],
                t[3],
                t[4],
                m[4],
            ];
            out.push((c.id, *seq, parts, *rtt));
        }
    }
    stride
}

/// The result's breakdown over the segments `which` (indices into
/// [`wirespeed_types::breakdown::SEGMENTS`]) from both sides' records;
/// None (with a note saying why) when no transaction had every timestamp.
pub fn combine(
    mine: &[FlowStamps],
    theirs: &[FlowStamps],
    which: &[usize],
    all_p50_us: Option<f64>,
    notes: &mut Vec<String>,
) -> Option<Breakdown> {
    let mut joined = Vec::new();
    let mut stride = 1;
    for c in mine {
        if let Some(s) = theirs.iter().find(|s| s.id == c.id) {
            stride = stride.max(join(c, s, &mut joined));
        }
    }
    if theirs.is_empty() {
        notes.push(
            "--breakdown: the server sent no timestamps (an older wirespeed, or its kernel has no software timestamping); no breakdown".into(),
        );
        return None;
    }
    let Some(mut b) = summarize(joined, which) else {
        notes.push(
            "--breakdown: no transaction had every timestamp on both sides; no breakdown".into(),
        );
        return None;
    };
    let stamped: u64 = mine.iter().map(|c| c.transactions).sum();
    let cost: u64 = mine.iter().map(|c| c.cost_ns).sum();
    b.sampled_every = stride;
    b.stamping_cost_us = all_p50_us.map_or(0.0, |p| b.measured_p50_us - p);
    b.incomplete = mine.iter().chain(theirs).map(|c| c.incomplete).sum();
    b.cost_ns_per_transaction = if stamped > 0 {
        cost as f64 / stamped as f64
    } else {
        0.0
    };
    if b.incomplete > b.transactions / 100 {
        let at = |s: &[FlowStamps]| s.iter().map(|c| c.incomplete).sum::<u64>();
        b.notes.push(format!(
            "{} transactions lacked a timestamp and are left out ({} at the client, {} at the server)",
            b.incomplete,
            at(mine),
            at(theirs)
        ));
    }
    Some(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(id: u32, stride: u64, recs: Vec<(u64, [i64; 5], bool, i64)>) -> FlowStamps {
        FlowStamps {
            id,
            stride,
            transactions: recs.len() as u64,
            recs,
            ..FlowStamps::default()
        }
    }

    #[test]
    fn joins_by_number_at_the_coarser_stride() {
        let c = side(
            0,
            1,
            (0..8)
                .map(|i| (i, [0, 1000, 2000, 20_000, 3000], i > 0, 26_500))
                .collect(),
        );
        let s = side(
            0,
            2,
            (0..8)
                .step_by(2)
                .map(|i| (i, [0, 4000, 1000, 2000, 1000], true, 0))
                .collect(),
        );
        let mut notes = Vec::new();
        let b = combine(&[c], &[s], &RR_SEGMENTS, Some(25.0), &mut notes).expect("breakdown");
        // Numbers 2, 4, 6: 0 is outside the window, odd ones unsampled.
        assert_eq!(b.transactions, 3);
        assert_eq!(b.sampled_every, 2);
        let p50 = b.at(50.0).expect("p50");
        assert!((p50.round_trip_us - 26.0).abs() < 1e-9);
        assert!((p50.parts_us[2] - 12.0).abs() < 1e-9, "{p50:?}");
        assert!((b.measured_p50_us - 26.5).abs() < 1e-9);
        assert!((b.stamping_cost_us - 1.5).abs() < 1e-9);
        assert!((b.sum_error_p50 - 0.5 / 26.5).abs() < 1e-9);
        assert!(notes.is_empty());
    }

    #[test]
    fn crr_has_the_handshake_and_the_accept_and_still_adds_up() {
        // Client: connect 30, send 1, queue 2, SND-to-rx 40, read 3 (us);
        // server: accept 5, rx 6, app 1, send 2, queue 1: wire 25.
        let c = side(
            0,
            1,
            vec![(0, [30_000, 1000, 2000, 40_000, 3000], true, 76_000)],
        );
        let s = side(0, 1, vec![(0, [5000, 6000, 1000, 2000, 1000], true, 0)]);
        let mut notes = Vec::new();
        let b = combine(&[c], &[s], &CRR_SEGMENTS, None, &mut notes).expect("breakdown");
        let p50 = b.at(50.0).expect("p50");
        assert_eq!(p50.parts_us.len(), 10);
        assert!((p50.round_trip_us - 76.0).abs() < 1e-9);
        let at = |k: &str| p50.parts_us[b.position(k).expect(k)];
        assert!((at("client_connect") - 30.0).abs() < 1e-9);
        assert!((at("server_accept") - 5.0).abs() < 1e-9);
        assert!((at("wire") - 25.0).abs() < 1e-9);
        assert_eq!(b.sum_error_p50, 0.0);
    }

    #[test]
    fn says_why_there_is_none() {
        let mut notes = Vec::new();
        assert!(
            combine(
                &[side(0, 1, Vec::new())],
                &[],
                &RR_SEGMENTS,
                None,
                &mut notes
            )
            .is_none()
        );
        assert!(notes[0].contains("server sent no timestamps"));
        assert!(check(&[side(5, 1, Vec::new())], 1).is_err());
        assert!(check(&[side(0, 3, Vec::new())], 1).is_err());
    }
}
