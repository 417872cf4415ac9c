//! The snapshot of a host's network knobs: wirespeed-types' serde types
//! (`wirespeed_types::host::snapshot`), re-exported at their old path.

pub use wirespeed_types::host::snapshot::*;
