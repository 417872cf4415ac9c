//! Replays the fuzz corpus of the control-frame decoder and message parser
//! and of the data preamble (fuzz/corpus/{control,preamble}, kept by
//! cargo-fuzz; docs/fuzzing.md) through the fuzz targets' own bodies:
//! every input that once found new code must still end without a panic
//! and quickly.

#[path = "../../../fuzz/bodies/engine.rs"]
mod bodies;
#[path = "../../../fuzz/bodies/replay.rs"]
mod replay;

#[test]
fn control_corpus_replays_without_panic() {
    replay::replay("control", bodies::control);
}

#[test]
fn preamble_corpus_replays_without_panic() {
    replay::replay("preamble", bodies::preamble);
}
