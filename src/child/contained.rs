//! What a [`GroupChild`] tells of its job's boundary: [`containment`](GroupChild::containment),
//! [`leftovers`](GroupChild::leftovers) and [`in_job`](GroupChild::in_job) (the boundary itself is in `contain/`).
//!
//! Needs the `contain` feature (on by default).

use super::GroupChild;
use crate::contain::{Containment, Leftover};

/// Needs the `contain` feature (on by default).
impl GroupChild {
    /// Which boundary the job has: [`Containment::Group`] for [`spawn_group`](crate::GroupCommandExt::spawn_group), else what
    /// [`spawn_contained`](crate::GroupCommandExt::spawn_contained) could make (see [`Contain`](crate::Contain)).
    ///
    /// Needs the `contain` feature (on by default).
    #[must_use]
    pub fn containment(&self) -> Containment {
        self.job.containment()
    }

    /// The processes besides the leader that the job's `SIGKILL`s reached (pid and name at the time), once each, in
    /// the order found; complete when a wait has returned (a [`GroupHandle`](crate::GroupHandle)'s kills are added at the next wait).
    /// Empty for a [`spawn_group`](crate::GroupCommandExt::spawn_group) child (no scan is made for a plain group), and when
    /// nothing was left to kill.
    ///
    /// Needs the `contain` feature (on by default).
    #[must_use]
    pub fn leftovers(&self) -> &[Leftover] {
        &self.leftovers
    }

    /// Whether process `pid` belongs to the job now: it is in the job's cgroup; or it carries the job's lineage mark
    /// or is in the leader's group; or, for a plain group, it is in the leader's group.
    ///
    /// Needs the `contain` feature (on by default).
    ///
    /// For a supervisor that sweeps orphans (a subreaper, see [`host::Subreaper`][host-subreaper]) and must
    /// leave alone those that are not the job's. The answer is about whatever process `pid` names at the time of
    /// the call: the caller keeps the pid from being reused (an unreaped child of its own, such as an adopted
    /// orphan, is).
    ///
    #[cfg_attr(feature = "host", doc = "[host-subreaper]: crate::host::Subreaper")]
    #[cfg_attr(not(feature = "host"), doc = "[host-subreaper]: crate#features")]
    #[must_use]
    pub fn in_job(&self, pid: u32) -> bool {
        self.job.contains(self.id(), pid)
    }
}
