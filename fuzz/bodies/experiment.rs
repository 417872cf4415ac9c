//! Fuzz body for experiment files (wirespeed-experiment's `experiment`).
//! Shared by the `experiment_file` fuzz target and by
//! crates/wirespeed-experiment/tests/fuzz_corpus.rs, which replays the
//! corpus.

use std::path::Path;
use wirespeed_experiment::experiment::{Overrides, parse_str};

/// An experiment file's text as `wirespeed experiment FILE` checks it,
/// without reading other files or touching the host: TOML, the inline
/// `[lab]`, modes, repeats, durations, tunes, every cell's lab patch,
/// `lab_set`, bench arguments through bench's parser, sweeps, placeholders;
/// then the dry run's description of a valid plan.
pub fn experiment_file(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(plan) = parse_str(
        text,
        Path::new("fuzz/experiment.toml"),
        &Overrides::default(),
    ) {
        let _ = plan.describe();
    }
}
