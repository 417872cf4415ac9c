#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| wirespeed_fuzz::lab::experiment_file(data));
