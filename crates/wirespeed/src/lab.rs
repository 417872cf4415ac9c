//! `wirespeed lab up|down|exec`: emulated hosts in network namespaces.

use anyhow::{Context, Result, bail};
use wirespeed_cli::lab::*;
use wirespeed_lab::{Lab, LabSpec, destroy, load_state};

fn need_root() -> Result<()> {
    crate::need_root("labs create network namespaces: run as root (or under sudo)")
}

/// Runs a lab subcommand.
pub fn run(c: LabCmd) -> Result<()> {
    match c {
        LabCmd::Up { file, state_dir } => {
            let text = wirespeed_host::fsroot::read_text_file(&file)
                .with_context(|| format!("read lab file {}", file.display()))?;
            let spec =
                LabSpec::from_toml_str(&text).with_context(|| format!("in {}", file.display()))?;
            need_root()?;
            let (lab, note) = Lab::up_recorded(&spec, &state_dir)?;
            if let Some(n) = note {
                eprintln!("{n}");
            }
            print!("{}", wirespeed_experiment::demo::describe_lab(&lab, &spec));
            let state = lab.keep()?;
            let path = state_dir.join(format!("{}.json", state.name));
            println!(
                "lab {} is up; state in {}; remove it with `wirespeed lab down {}`",
                state.name,
                path.display(),
                state.name
            );
        }
        LabCmd::Demo(a) => return crate::demo::run(a),
        LabCmd::Down { name, state_dir } => {
            need_root()?;
            let state = load_state(&name, &state_dir)?;
            if let Some(pid) = state.pid.filter(|_| state.building)
                && wirespeed_lab::pid_alive(pid)
            {
                bail!(
                    "lab {name} is still being built by process {pid}: stop it first (it removes the lab when it fails)"
                );
            }
            destroy(&state)?;
            let _ = std::fs::remove_file(state_dir.join(format!("{name}.json")));
            if state.building {
                println!("lab {name} removed (a build that never finished)");
            } else {
                println!("lab {name} removed");
            }
        }
        LabCmd::Exec {
            name,
            host,
            cmd,
            state_dir,
        } => {
            need_root()?;
            let state = load_state(&name, &state_dir)?;
            if !state.spec.hosts.iter().any(|h| h.name == host) {
                bail!("lab {name} has no host {host:?}");
            }
            let ns = state.ns(&host);
            if !std::path::Path::new("/run/netns").join(&ns).exists() {
                bail!(
                    "namespace {ns} of lab {name} is gone (removed outside wirespeed?): `wirespeed lab down {name}` clears the rest"
                );
            }
            // exec: the command replaces this process, so nothing is left
            // behind when either is killed, and its exit status is ours.
            use std::os::unix::process::CommandExt;
            let err = std::process::Command::new("ip")
                .args(["netns", "exec", &ns])
                .args(&cmd)
                .exec();
            return Err(anyhow::Error::new(err)
                .context("cannot run `ip netns exec` (is iproute2 installed?)"));
        }
    }
    Ok(())
}
