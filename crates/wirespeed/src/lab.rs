//! `wirespeed lab up|down|exec|fault`: emulated hosts in network
//! namespaces, and faults planted in them.

use anyhow::{Context, Result, bail};
use std::path::Path;
use std::sync::atomic::Ordering;
use wirespeed_cli::lab::*;
use wirespeed_lab::fault::{DelayerOpts, FaultKind, FaultMatch, FaultSpec, run_delayer};
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
        LabCmd::Fault {
            name,
            host,
            delay,
            loss,
            rate,
            to,
            nic,
            forwarded,
            state_dir,
        } => {
            let kind = FaultKind::from_flags(delay.as_deref(), loss.as_deref(), rate.as_deref())?;
            let on = FaultMatch::from_flags(&to, nic.as_deref(), forwarded.as_deref())?;
            return fault(&name, FaultSpec { host, kind, on }, &state_dir);
        }
        LabCmd::Delayer {
            queue,
            delay_ms,
            exit_on_eof,
        } => {
            let stop = crate::stop::on_stop_signals()?;
            let o = DelayerOpts {
                queue,
                delay_ms,
                exit_on_eof,
            };
            let s = run_delayer(&o, &stop)?;
            eprintln!(
                "delayer: queue {queue}: {} packets held {delay_ms} ms (at most {} at once)",
                s.packets, s.most_held
            );
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

/// `lab fault`: plants `spec` in lab `name`, prints the commands, waits
/// for Ctrl-C or SIGTERM (or its delayer to die), then removes it.
fn fault(name: &str, spec: FaultSpec, state_dir: &Path) -> Result<()> {
    need_root()?;
    let state = load_state(name, state_dir)?;
    let stop = crate::stop::on_stop_signals()?;
    let mut planted = state
        .plant(&spec)
        .with_context(|| format!("plant {spec} in lab {name}"))?;
    for c in planted.commands() {
        println!("{c}");
    }
    println!("planted: {spec}; Ctrl-C or SIGTERM removes it");
    let _ = std::io::Write::flush(&mut std::io::stdout());
    let mut died = None;
    while !stop.load(Ordering::Relaxed) {
        if let Err(e) = planted.check() {
            died = Some(e);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let ran = planted.remove();
    for c in ran.as_deref().unwrap_or_default() {
        println!("{c}");
    }
    ran.with_context(|| format!("remove {spec} from lab {name}"))?;
    println!("removed: {spec}");
    if let Some(e) = died {
        return Err(anyhow::Error::new(e).context("the fault stopped holding"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use wirespeed_cli::{Cli, Cmd};

    /// The lab crate starts its delayer with a command line it spells
    /// itself: it must parse as the hidden `lab delayer`.
    #[test]
    fn the_lab_crates_delayer_command_parses() {
        let mut argv = vec!["wirespeed".to_string()];
        argv.extend(wirespeed_lab::fault::delayer_args(1003, 2.5));
        let cli = Cli::try_parse_from(&argv).unwrap_or_else(|e| panic!("{argv:?}: {e}"));
        let Cmd::Lab(super::LabCmd::Delayer {
            queue,
            delay_ms,
            exit_on_eof,
        }) = cli.cmd
        else {
            panic!("{argv:?} is not `lab delayer`");
        };
        assert_eq!((queue, delay_ms, exit_on_eof), (1003, 2.5, true));
    }
}
