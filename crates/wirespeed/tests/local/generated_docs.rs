//! The man pages (docs/man) and shell completions (contrib/completions)
//! in the repo are what this binary generates: a CLI change that forgets
//! to regenerate them fails here, saying how.

use crate::common;

use common::{bin, ws};
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

const REGENERATE: &str = "regenerate with: for s in bash zsh fish; do \
    target/release/wirespeed completions $s > contrib/completions/wirespeed.$s; done; \
    rm -rf docs/man && target/release/wirespeed man --out docs/man";

#[test]
fn completions_in_the_repo_are_current() {
    for shell in ["bash", "zsh", "fish"] {
        let out = ws(&["completions", shell]);
        assert!(out.status.success(), "completions {shell} failed");
        let path = repo().join(format!("contrib/completions/wirespeed.{shell}"));
        let kept = std::fs::read(&path).unwrap_or_default();
        assert!(
            kept == out.stdout,
            "{} is not what `wirespeed completions {shell}` prints; {REGENERATE}",
            path.display()
        );
    }
}

#[test]
fn man_pages_in_the_repo_are_current() {
    let dir = std::env::temp_dir().join(format!("ws-man-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = Command::new(bin())
        .args(["man", "--out"])
        .arg(&dir)
        .output()
        .expect("run wirespeed man");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let names = |d: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .map(|r| {
                r.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    };
    let kept_dir = repo().join("docs/man");
    let (made, kept) = (names(&dir), names(&kept_dir));
    let same_pages = made == kept;
    let stale: Vec<&String> = made
        .iter()
        .filter(|n| std::fs::read(dir.join(n)).ok() != std::fs::read(kept_dir.join(n)).ok())
        .collect();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        same_pages,
        "pages made {made:?} vs kept {kept:?}; {REGENERATE}"
    );
    assert!(stale.is_empty(), "stale man pages {stale:?}; {REGENERATE}");
    assert!(made.iter().any(|n| n == "wirespeed-k8s-run.1"), "{made:?}");
}

#[test]
fn version_names_the_commit_and_completions_refuse_an_unknown_shell() {
    let out = ws(&["--version"]);
    let v = String::from_utf8_lossy(&out.stdout);
    assert!(v.starts_with("wirespeed ") && v.contains("(commit "), "{v}");
    common::assert_clean_failure(&["completions", "tcsh"], "invalid value");
}
