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
    /// Plant a fault (delay, loss or a rate cap) on one host of a lab made
    /// by `lab up`, until Ctrl-C or SIGTERM, which remove it.
    ///
    /// Delay: iptables queues the packets to an NFQUEUE and a delayer
    /// holds each one; loss: iptables drops a random share; rate: an htb
    /// class with u32 filters (netem is not needed). Prints every command
    /// it runs. See docs/lab-file.md, "Faults".
    #[command(
        group(clap::ArgGroup::new("kind").required(true).args(["delay", "loss", "rate"])),
        group(clap::ArgGroup::new("on").required(true).args(["to", "nic", "forwarded"]))
    )]
    Fault {
        /// The lab's name.
        name: String,
        /// The host whose namespace holds the fault.
        host: String,
        /// Hold each packet this long (e.g. 2ms, 500us; at most 10s).
        #[arg(long, value_name = "TIME")]
        delay: Option<String>,
        /// Drop this share of the packets at random (e.g. 1%).
        #[arg(long, value_name = "PCT")]
        loss: Option<String>,
        /// Cap the packets at this rate (e.g. 50mbit).
        #[arg(long, value_name = "RATE")]
        rate: Option<String>,
        /// Packets the host sends or forwards to these addresses (one direction).
        #[arg(long, value_name = "ADDR[,ADDR]", value_delimiter = ',')]
        to: Vec<String>,
        /// Everything leaving or entering this device of the host (both
        /// directions; a rate caps both ends of its link).
        #[arg(long, value_name = "DEV")]
        nic: Option<String>,
        /// What the host forwards into or out of this device (a router's
        /// uplink, both directions).
        #[arg(long, value_name = "DEV")]
        forwarded: Option<String>,
        /// Where lab state is kept.
        #[arg(long, default_value = "/run/wirespeed/labs")]
        state_dir: PathBuf,
    },
    /// The delay fault's packet holder, started by `lab fault` and tests
    /// inside a host's namespace (not for people).
    #[command(hide = true)]
    Delayer {
        /// The NFQUEUE number to read.
        #[arg(long)]
        queue: u16,
        /// How long each packet is held, in milliseconds.
        #[arg(long)]
        delay_ms: f64,
        /// Exit when standard input closes (the planting process died).
        #[arg(long)]
        exit_on_eof: bool,
    },
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
