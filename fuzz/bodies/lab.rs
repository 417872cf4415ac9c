//! Fuzz bodies for lab files (wirespeed-lab's `spec`) and, for now, the
//! library part of experiment files. Shared by the `lab_file` and
//! `experiment_file` fuzz targets and by
//! crates/wirespeed-lab/tests/fuzz_corpus.rs, which replays the corpus.

use wirespeed_lab::plan::address;
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

/// An experiment file's text, as far as a library parses it today: the
/// TOML, then an inline `[lab]` as the experiment loader reads it (named
/// "exp" when it has no name, deserialised, validated, addressed).
///
/// TODO: the experiment loader lives in the binary
/// (crates/wirespeed/src/experiment.rs, private `load`); once it is in a
/// library, call its parse entry point here instead (the corpus under
/// fuzz/corpus/experiment_file stays valid: it is experiment files).
pub fn experiment_file(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(file) = text.parse::<toml::Table>() else {
        return;
    };
    let Some(toml::Value::Table(lab)) = file.get("lab") else {
        return;
    };
    let mut lab = lab.clone();
    lab.entry("name")
        .or_insert_with(|| toml::Value::String("exp".into()));
    let Ok(spec) = toml::Value::Table(lab).try_into::<LabSpec>() else {
        return;
    };
    if spec.validate().is_ok() {
        let _ = address(&spec);
    }
}
