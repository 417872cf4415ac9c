//! The flags of `wirespeed completions` and `wirespeed man`.

use std::path::PathBuf;

/// Options of `wirespeed completions`.
#[derive(clap::Args, Debug)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    pub shell: clap_complete::Shell,
}

/// Options of `wirespeed man`.
#[derive(clap::Args, Debug)]
pub struct ManArgs {
    /// Directory to write wirespeed.1, wirespeed-bench.1, ... into.
    #[arg(long)]
    pub out: PathBuf,
}
