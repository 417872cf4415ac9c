//! Loads an HTML report in headless Chromium (Debian's `chromium`) and
//! reads back what the page's self-check script wrote into the DOM.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

/// What the browser saw: the dumped DOM and its log on stderr.
pub struct Loaded {
    /// The DOM after the page's scripts ran.
    pub dom: String,
    /// Chromium's log (console messages and script errors).
    pub log: String,
}

/// Loads `html` headless; None (with a note) when chromium is not installed.
pub fn load(html: &Path, test: &str) -> Option<Loaded> {
    let Some(bin) = ["chromium", "chromium-browser"].into_iter().find(|b| {
        Command::new(b)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    }) else {
        eprintln!(
            "skipping the browser check of {test}: chromium is not installed (apt-get install chromium)"
        );
        return None;
    };
    let profile = html.with_extension("chromium-profile");
    let out = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
            &format!("--user-data-dir={}", profile.display()),
            "--dump-dom",
        ])
        .arg(format!("file://{}", html.display()))
        .output()
        .expect("run chromium");
    let _ = std::fs::remove_dir_all(&profile);
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(Loaded {
        dom: String::from_utf8_lossy(&out.stdout).into_owned(),
        log: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

/// Asserts the page loaded without script errors and that every one of its
/// `expect` charts drew the marks it announces.
pub fn assert_every_chart_has_data(html: &Path, expect: usize, test: &str) {
    let Some(l) = load(html, test) else { return };
    let check = l
        .dom
        .split("id=\"selfcheck\"")
        .nth(1)
        .map(|s| s.split('>').next().unwrap_or(""))
        .unwrap_or_else(|| panic!("no #selfcheck in the DOM:\n{}", l.dom));
    // Chromium may order attributes differently; look for each one.
    assert!(
        check.contains(&format!("data-charts=\"{expect}\"")),
        "charts: {check}"
    );
    assert!(
        check.contains(&format!("data-charts-with-data=\"{expect}\"")),
        "charts with data: {check}"
    );
    assert!(!check.contains("data-errors"), "script errors: {check}");
    for bad in ["Uncaught", "CONSOLE(", "ERR_FILE_NOT_FOUND", "net::ERR"] {
        assert!(!l.log.contains(bad), "browser log has {bad:?}:\n{}", l.log);
    }
}
