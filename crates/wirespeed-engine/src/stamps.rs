//! The timestamp records of `--breakdown`, as each side keeps and reports
//! them: plain data, shared by the sides that take them
//! ([`crate::timestamps`]), the report that carries the server's
//! ([`crate::proto`]) and the join that adds them up ([`crate::breakdown`]).

use serde::{Deserialize, Serialize};

/// Most records a side keeps per flow: beyond, it keeps every other one
/// (a stride both sides derive from the transaction number alone). Only
/// the transactions of the current stride are timestamped at all, so the
/// cost falls as a test runs on.
pub const CAP: usize = 8192;

/// One transaction at one side: (number, five segments in ns, in the
/// client's measured window, the client's own monotonic-clock round trip
/// in ns or 0 at the server). The client's segments are connect (crr; 0
/// otherwise), send stack, queue, SND-to-receive-timestamp and receive
/// stack; the server's are accept (crr; 0 otherwise), receive stack,
/// application, send stack and queue.
pub type Rec = (u64, [i64; 5], bool, i64);

/// One flow's timestamp records, as a side reports them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FlowStamps {
    /// Roster flow id.
    pub id: u32,
    /// Records kept are those whose number is a multiple of this.
    pub stride: u64,
    /// The records, by transaction number.
    pub recs: Vec<Rec>,
    /// Transactions a timestamp was missing for.
    pub incomplete: u64,
    /// Transactions seen (stamped or not).
    pub transactions: u64,
    /// Nanoseconds spent on timestamp bookkeeping.
    pub cost_ns: u64,
}

impl FlowStamps {
    /// Keeps `r` if its number is in the stride, halving the records
    /// (doubling the stride) past [`CAP`].
    pub(crate) fn keep(&mut self, r: Rec) {
        if !r.0.is_multiple_of(self.stride) {
            return;
        }
        self.recs.push(r);
        if self.recs.len() > CAP {
            self.stride *= 2;
            let s = self.stride;
            self.recs.retain(|r| r.0.is_multiple_of(s));
        }
    }
}
