//! The README's demo command: `wirespeed lab demo` builds report 2's lab,
//! runs doctor, tunes, benches, runs the ladder and writes report.html,
//! leaving no namespace behind. Needs root; skips (with a note) otherwise.

use crate::common;
use common::{bin, heavy, root_or_skip};

#[test]
fn lab_demo_tunes_both_nics_writes_the_report_and_cleans_up() {
    if !root_or_skip("lab_demo") {
        return;
    }
    let _g = heavy();
    let dir = std::env::temp_dir().join(format!("ws-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let html = dir.join("report.html");
    let child = std::process::Command::new(bin())
        .args([
            "lab",
            "demo",
            "--duration",
            "1.5",
            "--out",
            html.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "demo failed: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    for step in [
        "== 1.",
        "== 2. wirespeed doctor",
        "== 3. wirespeed tune apply",
        "== 4. after tuning",
        "== 5. the ladder",
    ] {
        assert!(text.contains(step), "{step:?} missing:\n{text}");
    }
    assert!(
        text.contains("never sends"),
        "doctor should name the unused NIC:\n{text}"
    );
    let line = text
        .lines()
        .find(|l| l.contains("of the 2 Gbit/s of caps"))
        .expect("the after-tuning line");
    let pct: f64 = line
        .split("), ")
        .nth(1)
        .and_then(|r| r.split('%').next())
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or(0.0);
    assert!(pct >= 90.0, "after tuning only {pct}%: {line}");
    let page = std::fs::read_to_string(&html).expect("report.html written");
    assert!(page.contains("<svg") && page.contains("+ second NIC, source routing"));
    let results: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(html.with_extension("results.json")).unwrap(),
    )
    .unwrap();
    let cells = results["cells"].as_array().unwrap();
    let median = |name: &str| {
        let c = cells
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no cell {name}"));
        c["stats"]["median"].as_f64().unwrap()
    };
    // The ladder: the second NIC doubles, the last one-way step reaches
    // 95% of the two caps, both ways nearly doubles again.
    let (base, second, last, both) = (
        median("one flow, one NIC"),
        median("+ second NIC, source routing"),
        median("+ 4 flows per NIC"),
        median("+ both ways (bidir)"),
    );
    assert!(second >= 1.8 * base, "second NIC {second} vs {base}");
    assert!(last >= 0.95 * 2e9, "last one-way step {last}");
    assert!(both >= 1.8 * last, "both ways {both} vs one way {last}");
    let ns = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .unwrap();
    let left = String::from_utf8_lossy(&ns.stdout);
    assert!(
        !left.contains(&format!("demo-p{pid}-")),
        "namespaces left behind:\n{left}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
