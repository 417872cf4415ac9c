//! The workload registry: one row per workload. What a workload *is* (its
//! name, socket type, the figure it is judged by) is its row of
//! [`wirespeed_types::spec::WORKLOADS`]; its row here ([`WorkloadDef`],
//! from [`crate::workload_def`]) adds the data plane. A new workload is one
//! file with a `WORKLOAD` constant and one line in [`REGISTRY`].

use crate::spec::{FlowKind, FlowPlan, Workload};
pub use crate::workload_def::{FlowArgs, ListenerArgs, WorkloadDef};

/// Every workload's data plane.
pub static REGISTRY: &[WorkloadDef] = &[
    crate::stream::WORKLOAD,
    crate::rr::WORKLOAD,
    crate::crr::WORKLOAD,
    crate::udp_stream::WORKLOAD,
    crate::udp_rr::WORKLOAD,
];

/// The registry row of `w`.
pub fn def(w: Workload) -> &'static WorkloadDef {
    REGISTRY
        .iter()
        .find(|d| d.workload == w)
        .expect("every workload has a row in REGISTRY (a unit test checks)")
}

/// The row that builds flow `plan` of a test of `w`: the latency probe
/// beside a stream test is an rr flow.
pub fn def_for(w: Workload, plan: &FlowPlan) -> &'static WorkloadDef {
    if plan.kind == FlowKind::Probe {
        def(Workload::Rr)
    } else {
        def(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::WORKLOADS;

    #[test]
    fn every_workload_has_exactly_one_row() {
        for i in WORKLOADS {
            let n = REGISTRY.iter().filter(|d| d.workload == i.workload).count();
            assert_eq!(n, 1, "{}", i.name);
        }
        assert_eq!(REGISTRY.len(), WORKLOADS.len());
    }
}
