//! Records the git commit this crate is built from, for the image's
//! `org.opencontainers.image.revision` label ("unknown" outside git).

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !s.is_empty()).then_some(s)
}

fn main() {
    let commit = git(&["rev-parse", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=WIRESPEED_GIT_COMMIT={commit}");
    // Rebuild when HEAD moves: HEAD itself, the branch it names, packed refs.
    let mut watch = vec!["HEAD".to_string(), "packed-refs".to_string()];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watch.push(branch);
    }
    for w in watch {
        // A watched path that does not exist would rerun this every build.
        match git(&["rev-parse", "--git-path", &w]) {
            Some(p) if std::path::Path::new(&p).exists() => {
                println!("cargo:rerun-if-changed={p}");
            }
            _ => {}
        }
    }
}
