//! OpenMetrics text as the older Prometheus text format.

/// OpenMetrics text as the Prometheus text format (0.0.4): a counter's
/// HELP and TYPE lines name its `_total` sample, and there is no `# EOF`.
/// prometheus-client writes only OpenMetrics; promtool and plain `curl`
/// users read the older format.
pub fn openmetrics_to_prometheus(om: &str) -> String {
    let mut out = String::with_capacity(om.len());
    let mut help: Option<&str> = None;
    for line in om.lines() {
        if line == "# EOF" {
            continue;
        }
        if line.starts_with("# HELP ") {
            if let Some(h) = help.replace(line) {
                out.push_str(h);
                out.push('\n');
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ")
            && let Some(name) = rest.strip_suffix(" counter")
            && !name.ends_with("_total")
        {
            if let Some(h) = help.take() {
                let text = h.strip_prefix(&format!("# HELP {name} ")).unwrap_or("");
                out.push_str(&format!("# HELP {name}_total {text}\n"));
            }
            out.push_str(&format!("# TYPE {name}_total counter\n"));
            continue;
        }
        if let Some(h) = help.take() {
            out.push_str(h);
            out.push('\n');
        }
        out.push_str(line);
        out.push('\n');
    }
    if let Some(h) = help {
        out.push_str(h);
        out.push('\n');
    }
    out
}
