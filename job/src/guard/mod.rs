//! The guard process behind [`JobChildExt::die_with_parent`](crate::JobChildExt::die_with_parent) (whose method is in
//! `child.rs`): the group dies with this process, however it dies.
//!
//! - `process`: the guard process itself, which the boundary attached to a [`GroupChild`](grouptimeout::GroupChild)
//!   holds (`child.rs`, `Attached`) and ends after the leader's reap and the job's end.

mod process;

pub(crate) use process::Guard;
