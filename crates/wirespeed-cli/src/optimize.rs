//! The flags of `wirespeed optimize`.

use crate::host::Where;
use wirespeed_experiment::optimize::OptimizeArgs;

/// Options of `wirespeed optimize`.
#[derive(clap::Args, Debug)]
pub struct OptimizeCmd {
    /// The search's flags.
    #[command(flatten)]
    pub args: OptimizeArgs,
    /// Where it runs.
    #[command(flatten)]
    pub at: Where,
}
