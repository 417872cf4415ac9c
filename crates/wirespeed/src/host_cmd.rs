//! `wirespeed inspect`, `doctor` and `tune`: flags, then wirespeed-host's
//! tune session (`session`) and its renderings; `--netns` re-runs
//! this binary there through wirespeed-host's typed helper
//! (`reentry::enter_netns`, which also remounts /sys for that namespace).

use anyhow::{Result, bail};
use wirespeed_cli::host::*;
use wirespeed_experiment::doctor_peer;
use wirespeed_host::Snapshot;
use wirespeed_host::reentry::{self};
use wirespeed_host::session::{self, Show};
use wirespeed_host::tune::{JournalCheck, Plan, StateDir};

/// Re-runs this process inside namespace `--netns` when asked to and
/// not already there; returns only when no re-run is needed.
pub fn enter_netns(at: &Where) -> Result<()> {
    match &at.netns {
        Some(name) => Ok(reentry::enter_netns(name)?),
        None => Ok(()),
    }
}

/// The terminal: the plan rendered, lines on stdout, warnings on stderr.
pub struct Terminal {
    /// Print the plan (not with --json).
    pub show_plan: bool,
}

impl Show for Terminal {
    fn plan(&mut self, plan: &Plan) {
        if self.show_plan {
            print!("{}", wirespeed_report::host::plan(plan));
        }
    }
    fn line(&mut self, text: &str) {
        println!("{text}");
    }
    fn warn(&mut self, text: &str) {
        eprintln!("{text}");
    }
}

/// Settles the journal of `at` before a command (see [`session::settle`]);
/// a failure is a warning.
pub(crate) fn settle_first(at: &Where, roll: bool) {
    if at.root.is_none() {
        let place = at.place();
        let st = StateDir::new(default_state_dir(at));
        session::settle_or_warn(&st, &place, roll, &mut Terminal { show_plan: false });
    }
}

pub(crate) fn snapshot(at: &Where) -> Result<Snapshot> {
    Ok(at.place().snapshot()?)
}

/// Runs `wirespeed inspect`.
pub fn run_inspect(a: InspectArgs) -> Result<()> {
    enter_netns(&a.at)?;
    settle_first(&a.at, false);
    let s = snapshot(&a.at)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&s)?);
    } else {
        print!("{}", wirespeed_report::host::snapshot(&s));
    }
    Ok(())
}

/// Runs `wirespeed doctor`.
pub fn run_doctor(a: DoctorArgs) -> Result<()> {
    enter_netns(&a.at)?;
    settle_first(&a.at, true);
    let r = doctor_peer::doctor(&a.at.place(), &doctor_request(&a)?)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        print!(
            "{}",
            wirespeed_report::host::findings(&r.findings, &r.peer_tests)
        );
    }
    Ok(())
}

/// Tune's changing commands need root (CAP_NET_ADMIN and /proc/sys writes).
fn need_root() -> Result<()> {
    crate::need_root(
        "tune changes kernel settings: run it as root (or under sudo); `tune plan` works without",
    )
}

/// Runs `wirespeed tune ...`.
pub fn run_tune(c: TuneCmd) -> Result<()> {
    let mut term = Terminal { show_plan: true };
    match c {
        TuneCmd::Plan(a) => {
            enter_netns(&a.state.at)?;
            let place = a.state.at.place();
            session::settle(&state_dir(&a.state)?, &place, true, &mut term)?;
            let plan = session::make_plan(&place, &plan_request(&a)?)?.plan;
            if a.json {
                println!("{}", serde_json::to_string_pretty(&plan)?);
            } else {
                print!("{}", wirespeed_report::host::plan(&plan));
            }
        }
        TuneCmd::Apply(a) => {
            need_root()?;
            enter_netns(&a.plan.state.at)?;
            let o = apply_options(&a)?;
            let st = state_dir(&a.plan.state)?;
            term.show_plan = !a.plan.json;
            let place = a.plan.state.at.place();
            session::apply(&st, &place, &plan_request(&a.plan)?, &o, &mut term)?;
        }
        TuneCmd::Confirm(a) => {
            enter_netns(&a.at)?;
            if session::confirm(&state_dir(&a)?)? {
                println!(
                    "confirmed: the automatic rollback is cancelled (wirespeed tune rollback still restores)"
                );
            } else {
                println!("nothing waits for confirmation");
            }
        }
        TuneCmd::Rollback(a) => {
            need_root()?;
            enter_netns(&a.state.at)?;
            let st = state_dir(&a.state)?;
            if let Some(text) = session::rollback(&st, &a.state.at.place(), a.if_overdue)? {
                println!("{text}");
            }
        }
        TuneCmd::Status(a) => {
            enter_netns(&a.at)?;
            match session::status(&state_dir(&a)?)? {
                None => println!("no journal: wirespeed has changed nothing here"),
                Some(j) => {
                    let text = wirespeed_report::host::journal(
                        &j,
                        j.watchdog_alive(),
                        j.from_earlier_boot(),
                    );
                    print!("{text}");
                    if let Some(p) = session::journal_problem(&j) {
                        bail!("{p}");
                    }
                }
            }
        }
        TuneCmd::Watchdog(a) => session::watchdog(&state_dir(&a)?, &a.at.place())?,
    }
    Ok(())
}
