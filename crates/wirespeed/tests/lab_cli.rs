//! `wirespeed lab up | exec | down` from a TOML file, as a user runs them.

mod common;
use common::{bin, root_or_skip, run};
use std::path::Path;
use std::process::Command;

fn ws(args: &[&str]) -> std::process::Output {
    let mut c = Command::new(bin());
    c.args(args);
    run(c)
}

#[test]
fn lab_up_exec_down() {
    if !root_or_skip("lab_up_exec_down") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("ws-labcli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let name = format!("lc-p{}-0", std::process::id());
    let file = dir.join("lab.toml");
    std::fs::write(
        &file,
        format!(
            "name = \"{name}\"\n[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n\
             [[link]]\na = \"a\"\nb = \"b\"\nmtu = 4000\nrate = \"100mbit\"\n"
        ),
    )
    .unwrap();
    let state = dir.join("state");
    let (f, s) = (file.to_str().unwrap(), state.to_str().unwrap());
    let out = ws(&["lab", "up", f, "--state-dir", s]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("eth0"), "{text}");
    assert!(Path::new("/run/netns").join(format!("{name}-a")).exists());
    // Bringing the same lab up twice is refused, and the first stays.
    let again = ws(&["lab", "up", f, "--state-dir", s]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("exists already"));
    // exec runs in the host's namespace: it sees the lab's NIC.
    let out = ws(&[
        "lab",
        "exec",
        &name,
        "a",
        "--state-dir",
        s,
        "--",
        "cat",
        "/sys/class/net/eth0/mtu",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "4000");
    let bad_host = ws(&["lab", "exec", &name, "zz", "--state-dir", s, "--", "true"]);
    assert!(!bad_host.status.success());
    assert!(String::from_utf8_lossy(&bad_host.stderr).contains("no host"));
    let out = ws(&["lab", "down", &name, "--state-dir", s]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!Path::new("/run/netns").join(format!("{name}-a")).exists());
    let gone = ws(&["lab", "down", &name, "--state-dir", s]);
    assert!(!gone.status.success(), "down of a lab that is not up fails");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_lab_file_names_the_line_and_field() {
    let dir = std::env::temp_dir().join(format!("ws-labbad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bad.toml");
    std::fs::write(
        &file,
        "name = \"bad\"\n[[host]]\nname = \"a\"\n[[link]]\na = \"a\"\nb = \"nowhere\"\n",
    )
    .unwrap();
    let out = ws(&[
        "lab",
        "up",
        file.to_str().unwrap(),
        "--state-dir",
        dir.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("line 6") && err.contains("`b`") && err.contains("nowhere"),
        "{err}"
    );
    assert!(!err.contains("panicked"));
    let _ = std::fs::remove_dir_all(&dir);
}
