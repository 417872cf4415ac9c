//! Fuzz body for lab files (wirespeed-lab's `spec`). Shared by the
//! `lab_file` fuzz target and by crates/wirespeed-lab/tests/fuzz_corpus.rs,
//! which replays the corpus.

use wirespeed_lab::{Lab, LabSpec};

/// A lab file's text as `lab up FILE` reads it: parsed, validated, then
/// addressed and turned into the commands `up` would run.
pub fn lab_file(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(spec) = LabSpec::from_toml_str(text) {
        let _ = Lab::commands(&spec);
    }
}
