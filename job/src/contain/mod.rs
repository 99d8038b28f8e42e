//! The job boundary of [`spawn_contained`](crate::JobCommandExt::spawn_contained): which processes belong to a job
//! besides its process group, and how they are ended. The [`Contain`](crate::Contain) builder that spawns a job is in
//! `spawn.rs`, and what a [`GroupChild`](grouptimeout::GroupChild) tells of its job in `child.rs`: this
//! room sits below both and imports neither.
//!
//! - `cgroup`: a cgroup v2 of the job's own, ended with `cgroup.kill` and removed once empty (Linux).
//! - `keeper`: the job's keeper, the process between this one and a kept job's command (see `crate::keeper`).
//! - `reaper`: the job's own reaper (its keeper, a child subreaper): its descendants found and signalled (Linux).
//! - `lineage`: a per-job random mark in the environment, found in `/proc` and checked through a pidfd (Linux).
//!
//! - `job`: [`Job`], what the boundary attached to a [`GroupChild`](grouptimeout::GroupChild) (`child.rs`) holds of the
//!   boundary.
//! - `proc`: what the two Linux modes share (`/proc/PID/stat`, signals through checked pidfds).

#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
pub(crate) mod cgroup;
mod job;
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
pub(crate) mod keeper;
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
pub(crate) mod lineage;
mod proc;
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
mod reaper;

#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
pub(crate) use job::Bound;
pub use job::Containment;
pub(crate) use job::Job;
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
pub(crate) use proc::room_for;
pub use proc::Leftover;
