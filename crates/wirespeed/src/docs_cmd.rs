//! `wirespeed completions SHELL` and `wirespeed man --out DIR`: shell
//! completions (clap_complete) and one man page per command (clap_mangen),
//! both generated from the clap definitions. The repo keeps the generated
//! files in contrib/completions and docs/man; a test fails when they are
//! not what this binary generates.

use anyhow::{Context, Result};
use std::io::Write;
use std::path::Path;
use wirespeed_cli::docs::*;

/// Prints the completion script for `a.shell` of command `cmd` (a closed
/// pipe, as from `| head`, ends it quietly).
pub fn completions(a: &CompletionsArgs, mut cmd: clap::Command) -> Result<()> {
    let mut buf = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "wirespeed", &mut buf);
    match std::io::stdout().write_all(&buf) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(e).context("write the completion script")
        }
        _ => Ok(()),
    }
}

/// Writes a man page for `cmd` and each of its subcommands, recursively,
/// into `a.out`; prints how many.
pub fn man(a: &ManArgs, cmd: clap::Command) -> Result<()> {
    std::fs::create_dir_all(&a.out).with_context(|| format!("create {}", a.out.display()))?;
    let mut n = 0;
    write_pages(&a.out, cmd, "wirespeed", &mut n)?;
    println!("wrote {n} man pages to {}", a.out.display());
    Ok(())
}

fn write_pages(dir: &Path, cmd: clap::Command, name: &str, n: &mut usize) -> Result<()> {
    // The page's title is the full command name (wirespeed-k8s-run).
    let cmd = cmd.name(name.to_string()).bin_name(name.replace('-', " "));
    let mut buf = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .render(&mut buf)
        .with_context(|| format!("render the man page of {name}"))?;
    let path = dir.join(format!("{name}.1"));
    std::fs::write(&path, buf).with_context(|| format!("write {}", path.display()))?;
    *n += 1;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let sub_name = format!("{name}-{}", sub.get_name());
        write_pages(dir, sub.clone(), &sub_name, n)?;
    }
    Ok(())
}
