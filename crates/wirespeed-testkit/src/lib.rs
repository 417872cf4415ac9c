//! What the test crates of this workspace share, and nothing else: the
//! rule that a test which cannot run here (no root, a missing tool)
//! says why and passes on a developer's machine, but fails under
//! `CI=true`, where `.ci/run` installed everything and a skip would hide
//! a test that never ran. A dev-dependency only; the product never links it.
#![forbid(unsafe_code)]

/// Whether this is CI (`CI=true` or `CI=1`), where nothing may skip.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// True when `ok`; otherwise prints `SKIP test: why` and returns false,
/// or panics with `why` under CI.
pub fn require(ok: bool, why: &str, test: &str) -> bool {
    if ok {
        return true;
    }
    assert!(!in_ci(), "{test}: {why} (CI=true: not skipping)");
    eprintln!("SKIP {test}: {why}");
    false
}

/// [`require`] for root (network namespaces, qdiscs, sysctls).
pub fn need_root(test: &str) -> bool {
    require(is_root(), "needs root (network namespaces)", test)
}

/// [`require`] for a program on PATH (`tool --version` runs).
pub fn need_tool(tool: &str, package: &str, test: &str) -> bool {
    let found = std::process::Command::new(tool)
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok();
    require(
        found,
        &format!("{tool} is not installed (apt-get install {package})"),
        test,
    )
}

/// Whether the effective user is root, read from /proc/self/status.
pub fn is_root() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1).map(|e| e == "0"))
        .unwrap_or(false)
}

/// A peer that accepts TCP connections on loopback and never answers
/// (a trickle that never starts): its address. It holds the first
/// [`SILENT_HELD`] connections open until the test process ends.
pub fn silent_listener() -> std::net::SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let addr = l.local_addr().expect("a bound listener has an address");
    std::thread::spawn(move || {
        let mut held = Vec::new();
        while held.len() < SILENT_HELD {
            match l.accept() {
                Ok((c, _)) => held.push(c),
                Err(_) => break,
            }
        }
        // Held, not closed: the peer stays silent, not gone.
        loop {
            std::thread::park();
        }
    });
    addr
}

/// How many connections [`silent_listener`] accepts and holds.
pub const SILENT_HELD: usize = 16;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn met_requirements_never_skip() {
        assert!(require(true, "unused", "t"));
    }

    /// Run by the test below in a child process, never alone.
    #[test]
    #[ignore]
    fn child_that_cannot_run() {
        require(false, "the planted reason", "child_that_cannot_run");
    }

    fn child(ci: Option<&str>) -> std::process::Output {
        let mut c = std::process::Command::new(std::env::current_exe().unwrap());
        c.args([
            "--ignored",
            "--exact",
            "tests::child_that_cannot_run",
            "--nocapture",
        ]);
        match ci {
            Some(v) => c.env("CI", v),
            None => c.env_remove("CI"),
        };
        c.output().unwrap()
    }

    #[test]
    fn a_test_that_cannot_run_fails_under_ci_and_skips_elsewhere() {
        let ci = child(Some("true"));
        let err = String::from_utf8_lossy(&ci.stderr);
        assert!(!ci.status.success(), "CI=true passed a skipped test: {err}");
        assert!(
            err.contains("the planted reason (CI=true: not skipping)"),
            "{err}"
        );
        let dev = child(None);
        let err = String::from_utf8_lossy(&dev.stderr);
        assert!(dev.status.success(), "{err}");
        assert!(
            err.contains("SKIP child_that_cannot_run: the planted reason"),
            "{err}"
        );
    }

    #[test]
    fn root_is_read_from_the_effective_uid() {
        let euid = std::fs::read_to_string("/proc/self/status")
            .unwrap()
            .lines()
            .find(|l| l.starts_with("Uid:"))
            .unwrap()
            .split_whitespace()
            .nth(2)
            .unwrap()
            .to_string();
        assert_eq!(is_root(), euid == "0");
    }
}
