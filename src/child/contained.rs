//! What a [`GroupChild`] tells of its job's boundary: [`containment`](GroupChild::containment),
//! [`command_id`](GroupChild::command_id), [`leftovers`](GroupChild::leftovers) and [`in_job`](GroupChild::in_job)
//! (the boundary itself is in `contain/`).
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

    /// Why the job's boundary is weaker than the first mode [`spawn_contained`](crate::GroupCommandExt::spawn_contained)
    /// tried: each mode that was tried and could not be had, with its reason, in the order tried
    /// (`cgroup: …; reaper: …`). `None` when the job got the first mode tried (and for
    /// [`spawn_group`](crate::GroupCommandExt::spawn_group)).
    ///
    /// A fallback is never silent: where [`containment`](GroupChild::containment) is less than the caller could
    /// expect (an unprivileged user gets no cgroup, a process limit left no room for the keeper, a caller's
    /// `pre_exec` hook made the keeper impossible), this says why. The tool's `-v` prints it.
    ///
    /// Needs the `contain` feature (on by default).
    #[must_use]
    pub fn fallback_reason(&self) -> Option<&str> {
        self.job.fallback()
    }

    /// The command's own process id: [`id`](GroupChild::id) for a plain group and wherever the command is the
    /// process the spawn made (lineage mode, the group alone); for a job of `spawn_contained` in a cgroup or with its
    /// own reaper, the pid of its keeper's child, the command (see [`Contain`](crate::Contain)), never equal to
    /// `id()`, which is the keeper's.
    ///
    /// Needs the `contain` feature (on by default).
    ///
    /// For looking at the command (`/proc/PID/…`; [`in_job`](GroupChild::in_job) is `true` for it while it runs),
    /// not for signalling it: in a kept job the command is not this process's child, and once it has exited and been
    /// reaped (by its keeper, when a wait reaps the job) its pid may name another process. Signal the job through
    /// this handle ([`signal`](GroupChild::signal)), which reaches the command and its group while they are the job's.
    #[must_use]
    pub fn command_id(&self) -> u32 {
        self.job.watched(self.id())
    }

    /// The processes besides the leader that the job's `SIGKILL`s reached (pid and name at the time), once each, in
    /// the order found (in reaper mode: those this process found below the keeper; what the keeper itself kills at
    /// the job's end, orphans of those killed, is not listed); complete when a wait has returned (a [`GroupHandle`](crate::GroupHandle)'s kills are added at the next wait).
    /// Empty for a [`spawn_group`](crate::GroupCommandExt::spawn_group) child (no scan is made for a plain group), and when
    /// nothing was left to kill.
    ///
    /// Needs the `contain` feature (on by default).
    #[must_use]
    pub fn leftovers(&self) -> &[Leftover] {
        &self.leftovers
    }

    /// Whether process `pid` belongs to the job now: it is in the job's cgroup; or it descends from the job's
    /// reaper (its parents, followed up at most 64 steps, reach the keeper, [`id`](GroupChild::id); the keeper
    /// itself is not the job's); or it carries the job's lineage mark or is in the leader's group; or, for a plain
    /// group, it is in the leader's group. A reaper job whose keeper was killed, or was reaped, is told by its mark
    /// and group instead, as in lineage mode.
    ///
    /// Needs the `contain` feature (on by default).
    ///
    /// For a supervisor that sweeps orphans (a subreaper, see [`host::Subreaper`][host-subreaper]) and must
    /// leave alone those that are not the job's. The answer is about whatever process `pid` names at the time of
    /// the call: the caller keeps the pid from being reused (an unreaped child of its own, such as an adopted
    /// orphan, is).
    ///
    /// The same in every mode, `false` for:
    /// - a process that has exited (a zombie, a killed member not reaped yet: it runs no more code; on Linux, where
    ///   `/proc` tells);
    /// - the guard of [`die_with_parent`][die-with-parent], a member of the group (and not of the job's cgroup):
    ///   it is this process's, not the job's;
    /// - a process that is in the leader's group only, once the leader was reaped: the group id may name someone
    ///   else's group by then (a lineage mark or the job's cgroup still count).
    ///
    /// It reads `/proc/PID/stat` (of `pid`, and in reaper mode of its parents), and, in lineage mode,
    /// `/proc/PID/environ` (which reads empty for a moment while the process is in the middle of `execve`: that is
    /// read again, at least 20 times and until the process has run 20 ms on a CPU, for up to a second where it waits
    /// for one; a process started with no environment, `env -i`, is told at once).
    ///
    #[cfg_attr(feature = "host", doc = "[host-subreaper]: crate::host::Subreaper")]
    #[cfg_attr(not(feature = "host"), doc = "[host-subreaper]: crate#features")]
    #[cfg_attr(
        feature = "guard",
        doc = "[die-with-parent]: GroupChild::die_with_parent"
    )]
    #[cfg_attr(not(feature = "guard"), doc = "[die-with-parent]: crate#features")]
    #[must_use]
    pub fn in_job(&self, pid: u32) -> bool {
        if self.guard.as_ref().is_some_and(|guard| guard.id() == pid) {
            return false;
        }
        self.job.contains(self.id(), pid, self.outcome.is_none())
    }
}
