//! `wirespeed optimize HOST`: the flags, `--netns`, the tune journal
//! settled first, then wirespeed-experiment's search; the table or JSON.

use crate::host_cmd::enter_netns;
use anyhow::Result;
use wirespeed_cli::optimize::*;

/// Runs `wirespeed optimize`.
pub fn run(c: OptimizeCmd) -> Result<()> {
    // Before a --netns re-exec too: on Ctrl-C the search finishes its
    // step and rolls back.
    wirespeed_experiment::sys::catch_stop_signals();
    enter_netns(&c.at)?;
    let a = &c.args;
    if !a.no_host {
        // A tune journal left unconfirmed past its deadline goes first.
        crate::host_cmd::settle_first(&c.at, true);
    }
    let fs =
        c.at.root
            .clone()
            .map(wirespeed_host::Fs::at)
            .unwrap_or_default();
    let done = wirespeed_experiment::optimize::run(a, fs)?;
    if a.json {
        println!("{}", done.json);
    } else {
        print!("{}", done.text);
    }
    Ok(())
}
