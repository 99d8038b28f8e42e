//! The interface between this crate and its sibling `grouptimeout-job` (and, through it, the tool's crate), in the
//! way of `serde`'s `__private`: hidden from the docs and not covered by semantic versioning. The sibling pins this
//! crate by its exact version (`=x.y.z`), so that the two always come from one release; that keeps other versions
//! out, not other crates: any crate can name this module. What a crate that does can do to this crate's promises:
//!
//! - A boundary it attaches (`spawn`, `attach`) steers the child's waits as `boundary.rs` says (a wait that
//!   sleeps to its deadline, a leader that left its group spared the signal by pid, a wait or a drop that blocks);
//!   it cannot make this crate signal after a foreign reap that this crate's check saw, nor keep the group from its
//!   signal. `Boundary` is an `unsafe` trait: an implementation that breaks its contract (a watched pid that names
//!   another process, a descriptor closed before `end`) breaks the promises that rest on it, the exit descriptor's
//!   and, in a driver that borrows a listed descriptor, I/O safety.
//! - The helpers of `sys` are this crate's own calls, with the preconditions their docs state and nothing to
//!   enforce them: `sys::signal_group` signals whatever group and pid it is given (above 1), so a caller that does
//!   not hold that group's leader unreaped can signal someone else's. They touch no `GroupChild`.
//! - The views (`boundary`, `grace`, `leader_unreaped`, `leader_exited`) only read.
//!
//! What it gives: the `Boundary` a job attaches to a [`GroupChild`], a few read-only views of a child's state, and
//! this crate's system-call helpers (`sys`) that its siblings reuse, so that their own unchecked calls do not repeat
//! them.

use std::io;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

pub use crate::boundary::Boundary;
use crate::boundary::Job;
pub use crate::group::is_stop_signal;
pub use crate::wait::DROP_REAP_LIMIT;
use crate::GroupChild;

/// This crate's system-call helpers that its siblings reuse (all of them safe functions; the unchecked calls behind
/// them are counted here): the calls this crate makes itself, and two rules that both siblings share and that hold no
/// unchecked call (`kernel_pid`, `os_error_or`). A call that only one sibling makes is that sibling's.
pub mod sys {
    #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
    pub use crate::sys::pidfd_open;
    pub use crate::sys::{
        checked_pid, children_are_auto_reaped, current_action, cvt, cvt_len, group_has_members,
        has_exited, kernel_pid, os_error_or, poll, retry_eintr, set_nonblocking, signal_group,
        wait_id,
    };
}

/// [`GroupCommandExt::spawn_group`](crate::GroupCommandExt::spawn_group) with a boundary attached from the start.
///
/// # Errors
///
/// As for `spawn_group`.
pub fn spawn(command: &mut Command, boundary: Arc<dyn Boundary>) -> io::Result<GroupChild> {
    GroupChild::spawn(command, Job(Some(boundary)))
}

/// A child whose leader `pid`, our unreaped child (exit signal `SIGCHLD`), the boundary's own spawn made (a kept
/// job's keeper), with the command's standard streams and a pidfd of the process a wait watches (`watched`, the
/// boundary's [`Boundary::watched`]; `None`: the waits follow the poll schedule). From here on this crate reaps `pid`
/// (`wait4`) and signals its group as for any child.
pub fn spawned(
    pid: u32,
    stdio: (
        Option<std::process::ChildStdin>,
        Option<std::process::ChildStdout>,
        Option<std::process::ChildStderr>,
    ),
    watched: Option<std::os::fd::OwnedFd>,
    boundary: Arc<dyn Boundary>,
) -> GroupChild {
    let watch = crate::wait::ExitWatch::new(None, watched);
    GroupChild::new(pid, stdio, watch, Job(Some(boundary)))
}

/// The boundary attached to `child`, if any.
#[must_use]
pub fn boundary(child: &GroupChild) -> Option<&Arc<dyn Boundary>> {
    child.job.0.as_ref()
}

/// Attaches `boundary` to a child that has none yet (a guard for a plain group). Handles made before keep the job
/// they were made with (the group alone), and the wait's watch stays on the leader: attach this way only a boundary
/// that watches the leader and adds nothing to a signal (a guard's). Returns it back if the child already has one.
///
/// # Errors
///
/// The boundary, unchanged, when the child has one already.
pub fn attach(
    child: &mut GroupChild,
    boundary: Arc<dyn Boundary>,
) -> Result<(), Arc<dyn Boundary>> {
    if child.job.0.is_some() {
        return Err(boundary);
    }
    child.job = Job(Some(boundary));
    Ok(())
}

/// A finished job's result that kept the record of its job's boundary (see `Boundary::record`): what
/// `grouptimeout-job`'s `JobOutputExt` reads. `Captured` (feature `capture`) is one; so is a driver's result that
/// keeps the record it took from its child once the wait was done (`grouptimeout-set`'s `Finished`).
pub trait Recorded {
    /// The record, if the job had a boundary.
    fn boundary_record(&self) -> Option<&(dyn std::any::Any + Send + Sync)>;
}

#[cfg(feature = "capture")]
impl Recorded for crate::Captured {
    fn boundary_record(&self) -> Option<&(dyn std::any::Any + Send + Sync)> {
        self.job.as_deref()
    }
}

/// The signal and grace of [`GroupChild::set_grace`], if set.
#[must_use]
pub fn grace(child: &GroupChild) -> Option<(i32, Duration)> {
    child.grace()
}

/// Whether the leader is not reaped yet (by a wait of this child).
#[must_use]
pub fn leader_unreaped(child: &GroupChild) -> bool {
    child.leader_unreaped()
}

/// Whether the leader (or the watched process) has exited, without reaping it.
///
/// # Errors
///
/// As `waitid` fails for the leader (`ECHILD`: someone else reaped it).
pub fn leader_exited(child: &GroupChild) -> io::Result<bool> {
    child.leader_exited()
}
