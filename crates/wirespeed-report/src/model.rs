//! The capacity model's output as text: `wirespeed model`'s ceilings and
//! price table, and `wirespeed explain`'s verdict on a result.

use crate::{heading, human_bps, human_size, human_us, new_table};
use std::fmt::Write;
use wirespeed_model::{Ceilings, Evidence, Explanation, ModelReport};
use wirespeed_types::TestResult;

fn opt_bps(x: Option<f64>) -> String {
    x.map(human_bps).unwrap_or_else(|| "-".into())
}

fn plural(n: u32, one: &str) -> String {
    crate::plural(u64::from(n), one, &format!("{one}s"))
}

/// `wirespeed model`'s text: the ceilings, flows needed, target and price table.
pub fn model_text(m: &ModelReport) -> String {
    let c = &m.ceilings;
    let mut out = String::new();
    let _ = writeln!(out, "{}: {}", c.profile, m.description);
    let _ = writeln!(out, "{}", machine_line(c));
    let mut t = new_table(&["ceiling", "how", "one way", "both ways"], 2);
    let mut row = |name: &str, key: &str, one: Option<f64>, both: Option<f64>, show_both: bool| {
        t.add_row(vec![
            name.to_string(),
            c.basis.get(key).cloned().unwrap_or_default(),
            opt_bps(one),
            if show_both {
                opt_bps(both)
            } else {
                String::new()
            },
        ]);
    };
    row("per flow", "per_flow", c.per_flow_bps, None, true);
    let nic_both = c.per_nic_bps.map(|x| 2.0 * x);
    row("per NIC", "per_nic", c.per_nic_bps, nic_both, true);
    let (one, both) = (c.per_vm_one_way_bps, c.per_vm_both_ways_bps);
    row("per VM", "per_vm_one_way", one, both, true);
    if c.vm_total_bps.is_some() {
        row("VM total", "vm_total", c.vm_total_bps, None, false);
    }
    if c.network_share.is_some() {
        row("network", "network", c.network_bps, None, false);
    }
    let _ = writeln!(out, "{t}");
    let flows = |n: Option<u32>| match n {
        Some(n) => plural(n, "flow"),
        None => "any (no per-flow cap known)".into(),
    };
    if c.per_nic_bps.is_some() {
        let _ = writeln!(
            out,
            "  flows per NIC to reach the NIC ceiling: {}",
            flows(c.flows_per_nic)
        );
    }
    if c.per_vm_one_way_bps.is_some() {
        let _ = writeln!(
            out,
            "  flows to reach the VM ceiling: {}",
            flows(c.flows_per_vm)
        );
    }
    if let Some(t) = m.target_bps {
        let _ = writeln!(
            out,
            "  target {}: {}",
            human_bps(t),
            match m.flows_for_target {
                Some(n) => format!("{} at the per-flow cap", plural(n, "flow")),
                None => "no per-flow cap known".into(),
            }
        );
    }
    for n in &c.notes {
        let _ = writeln!(out, "  note: {n}");
    }
    for s in &m.sources {
        let _ = writeln!(out, "  source: {s}");
    }
    let pt = &m.prices;
    if !pt.rows.is_empty() {
        let _ = writeln!(out, "\nprice per delivered Gbit/s ({}):", pt.currency);
        let mut head = vec![
            "instance",
            "vCPUs",
            "NICs",
            "delivered",
            "per hour",
            "per Gbit/s-hour",
        ];
        let target_col = pt.target_bps.map(|t| format!("meets {}", human_bps(t)));
        if let Some(h) = &target_col {
            head.push(h);
        }
        let mut t = new_table(&head, 1);
        for r in &pt.rows {
            let mut row = vec![
                r.instance.clone(),
                r.vcpus.to_string(),
                r.nics.to_string(),
                opt_bps(r.delivered_bps),
                format!("{:.4}", r.price_per_hour),
                r.price_per_gbit_hour
                    .map(|v| format!("{v:.4}"))
                    .unwrap_or_else(|| "-".into()),
            ];
            if let Some(ok) = r.meets_target {
                row.push(if ok { "yes" } else { "no" }.into());
            }
            t.add_row(row);
        }
        let _ = writeln!(out, "{t}");
        if let Some(b) = &pt.best_value {
            let _ = writeln!(out, "  best value per delivered Gbit/s: {b}");
        }
        if let Some(t) = pt.target_bps {
            let _ = writeln!(
                out,
                "  cheapest that delivers {}: {}",
                human_bps(t),
                pt.cheapest_meeting_target
                    .as_deref()
                    .unwrap_or("none listed")
            );
        }
    }
    out
}

fn machine_line(c: &Ceilings) -> String {
    let mut parts = Vec::new();
    if let Some(i) = &c.instance {
        parts.push(i.clone());
    }
    if let Some(v) = c.vcpus {
        parts.push(plural(v, "vCPU"));
    }
    parts.push(plural(c.nics, "NIC"));
    parts.join(", ")
}

fn evidence_text(e: &Evidence) -> String {
    let v = match e.unit.as_str() {
        "bit/s" => human_bps(e.value),
        "bytes" if e.value >= 0.0 => human_size(e.value as u64),
        "%" => format!("{:.1}%", e.value),
        "us" => human_us(e.value),
        u => {
            let n = format!("{:.3}", e.value);
            let n = n.trim_end_matches('0').trim_end_matches('.');
            // Counts and ratios read best bare: flows=4, fairness=0.62.
            match u {
                "flows" | "threads" | "segments" | "vcpus" | "ratio" | "jain" => n.to_string(),
                _ => format!("{n} {u}"),
            }
        }
    };
    format!("{}={v}", e.name)
}

/// `wirespeed explain`'s text for one result: % of each ceiling, then each
/// bottleneck with its evidence.
pub fn explanation_text(r: &TestResult, c: Option<&Ceilings>, e: &Explanation) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "explain: {}", heading(r));
    if let Some(c) = c {
        let _ = writeln!(out, "  model: {}, {}", c.profile, machine_line(c));
    }
    if !e.percent_of.is_empty() {
        let mut t = new_table(&["ceiling", "ceiling", "measured", "% of it"], 1);
        for p in &e.percent_of {
            t.add_row(vec![
                p.ceiling.clone(),
                human_bps(p.ceiling_bps),
                human_bps(p.measured_bps),
                format!("{:.1}%", p.percent),
            ]);
        }
        let _ = writeln!(out, "{t}");
    }
    for b in &e.bottlenecks {
        let _ = writeln!(out, "  [{}] {}", b.kind.name(), b.message);
        if !b.evidence.is_empty() {
            let ev: Vec<String> = b.evidence.iter().map(evidence_text).collect();
            let _ = writeln!(out, "      evidence: {}", ev.join(", "));
        }
    }
    for n in &e.notes {
        let _ = writeln!(out, "  note: {n}");
    }
    let _ = writeln!(out, "  {}", e.summary);
    out
}
