//! The guard process behind [`GroupChild::die_with_parent`](crate::JobChildExt::die_with_parent) (whose method is in
//! `child/guarded.rs`): the group dies with this process, however it dies (needs the `guard` feature).
//!
//! - `process`: the guard process itself, which [`GroupChild`](grouptimeout::GroupChild) holds and ends before the leader
//!   is reaped.
//! - `none.rs`: its stand-in in a build without the feature (no guard can exist).

mod process;

pub(crate) use process::{Guard, Start};
