//! What wirespeed reads from a host and what it changes there, as plain
//! serde types: the [`snapshot`] of its network knobs, doctor's
//! [`finding`]s, and tune's settings, plans and journal ([`tune`]).
//! wirespeed-host reads and changes hosts with them (re-exporting them at
//! its old paths); the report renders them.

pub mod finding;
pub mod snapshot;
pub mod tune;
