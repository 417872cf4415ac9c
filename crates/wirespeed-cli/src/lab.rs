//! The flags of `wirespeed lab`.

use std::path::PathBuf;

/// Lab subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum LabCmd {
    /// Build the lab a TOML file describes and keep it until `lab down`.
    Up {
        /// The lab file.
        file: PathBuf,
        /// Where lab state is kept.
        #[arg(long, default_value = "/run/wirespeed/labs")]
        state_dir: PathBuf,
    },
    /// Remove a lab built by `lab up`.
    Down {
        /// The lab's name.
        name: String,
        /// Where lab state is kept.
        #[arg(long, default_value = "/run/wirespeed/labs")]
        state_dir: PathBuf,
    },
    /// The demo: report 2's lab, doctor, tuning, the ladder, report.html.
    Demo(crate::demo::DemoArgs),
    /// Run a command on one host of a lab.
    Exec {
        /// The lab's name.
        name: String,
        /// The host.
        host: String,
        /// The command and its arguments (after --).
        #[arg(last = true, required = true)]
        cmd: Vec<String>,
        /// Where lab state is kept.
        #[arg(long, default_value = "/run/wirespeed/labs")]
        state_dir: PathBuf,
    },
}
