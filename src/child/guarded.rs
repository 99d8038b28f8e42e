//! [`GroupChild::die_with_parent`]: the group dies with this process, however it dies; the guard process that does
//! it is in `guard/`.
//!
//! Needs the `guard` feature (on by default).

use std::io;

use super::GroupChild;
use crate::guard::{Guard, Start};

/// Needs the `guard` feature (on by default).
impl GroupChild {
    /// From this call on, if this process dies for any reason while the leader is unreaped (`SIGKILL`, the OOM
    /// killer, `panic = "abort"`, [`std::process::exit`], an unhandled signal), every process in the group is
    /// sent `SIGKILL`: at once, or, with a grace set before this call ([`set_grace`](GroupChild::set_grace); calling
    /// this again passes on a grace set since), after its signal and up to its grace for the leader to exit, as at a
    /// deadline.
    ///
    /// Needs the `guard` feature (on by default).
    ///
    /// It starts a guard process in the group: `/bin/sh`, spawned (through std's `posix_spawn` path) into the
    /// leader's group, that ignores every catchable signal and waits for end of file on a pipe whose write end only
    /// this process holds (close-on-exec). Like any child, it inherits the descriptors of this process that are not
    /// close-on-exec (std makes all of its own close-on-exec), so it keeps such a descriptor open as long as it runs,
    /// even after the command closed its copy. When this process dies the kernel closes that end, and the guard sends
    /// `SIGKILL` to its group, which its membership keeps from being reused. The call returns once the guard ignores
    /// signals, so a member's `kill 0`, or a grace signal, cannot disarm it; it cost +0.28 ms per command in
    /// `BENCHMARKS.md`'s run (row 8; more under load), most of it the shell's start. Calling it again starts no
    /// other guard, and passes on a grace set since.
    ///
    /// Every wait and [`Drop`] end the guard (`SIGKILL` and a reap) once the job has ended: after the leader's reap
    /// and, for a job in a cgroup of its own, after its folder was removed; so no process, pipe or zombie is left
    /// behind. That reap waits at most about a second (a
    /// guard that does not die by then, stuck in uninterruptible sleep or held by a stopped tracer, is left to become
    /// a zombie of this process). On Linux (5.4 and later) the guard is held by a pidfd opened while it was our
    /// unreaped child: if other code reaps it (a `waitpid(-1)`, a subreaper's sweep), nothing is ever sent to, nor
    /// waited for, a process that reused its pid. Elsewhere (and where no pidfd can be had) it is held by its pid,
    /// and only while `waitid` says it is our unreaped child; other code that reaps it there must not let its pid be
    /// given to another child of ours before this handle ends: leave it alone ([`guard_id`](GroupChild::guard_id)). When the leader exits and
    /// [`set_kill_leftovers(false)`](GroupChild::set_kill_leftovers) keeps its leftovers, the guard alone is ended
    /// and the leftovers are left as they were (no longer guarded). While the guard runs it is one more member of
    /// the group (its pid is not the leader's), and it holds the group's id even after all other members are gone.
    ///
    /// A job of `spawn_contained` in a cgroup or under its own reaper needs none: its keeper guards it from before
    /// the command's first instruction (see `Contain`), so no guard is started and [`guard_id`](GroupChild::guard_id)
    /// stays `None`; this call passes the grace of [`set_grace`](GroupChild::set_grace) on to the keeper.
    ///
    /// # What is not reached
    ///
    /// The processes in the group when the guard kills it: not those that left the group before (see
    /// [`GroupChild`]). A process forked from this one without `exec` (a daemon of its own) inherits the pipe's
    /// write end and delays the end of file until it exits. A `SIGKILL` or `SIGSTOP` sent to the guard itself
    /// (`kill -9 0` in the command kills the group anyway) disarms it.
    ///
    /// # Errors
    ///
    /// The guard cannot be started (`/bin/sh` missing, no process or descriptor left); the group is gone (the leader
    /// left it and no member is left: `PermissionDenied`); `/bin/sh` exited without arming it (a `/bin/sh` that is
    /// not a shell); it was killed before it could ignore signals three times in a row, or did not start within 5 s;
    /// or the leader was reaped by someone else. Nothing is left running
    /// then. Once the leader was reaped by this crate there is nothing left to guard: `Ok(())`.
    ///
    /// Where a system call failed (the pipe, the spawn of `/bin/sh` or the fork, opening the job's `cgroup.kill`:
    /// `EMFILE`, `EAGAIN`, `ENOENT`…; `ECHILD`), the error is that OS error itself (`raw_os_error()`, std's kind;
    /// its message the system's text, so say what failed when you show it). The others carry no OS error number,
    /// and their message names the group: `/bin/sh` exited without arming the guard, was killed three times, or
    /// did not start within 5 s (`TimedOut`); the group is gone (`PermissionDenied`).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::process::Command;
    /// use std::time::Duration;
    /// use grouptimeout::GroupCommandExt;
    ///
    /// # fn main() -> std::io::Result<()> {
    /// let mut child = Command::new("sleep").arg("30").spawn_group()?;
    /// child.die_with_parent()?;
    /// // From here on, a `kill -9` of this process (or the OOM killer, or `std::process::exit`) kills the group.
    /// let outcome = child.wait_timeout(Duration::from_millis(100))?;
    /// assert!(outcome.timed_out()); // the group, guard included, was killed and reaped
    /// # Ok(())
    /// # }
    /// ```
    pub fn die_with_parent(&mut self) -> io::Result<()> {
        self.arrange_guard(Start::Shell)
    }

    /// [`die_with_parent`](GroupChild::die_with_parent) with the guard started by `how`.
    pub(crate) fn arrange_guard(&mut self, how: Start) -> io::Result<()> {
        // A kept job's keeper is its guard already (see `Contain`).
        #[cfg(feature = "contain")]
        let kept = self.job.kept();
        #[cfg(not(feature = "contain"))]
        let kept = false;
        if self.leader_unreaped() && self.guard.is_none() && !kept {
            self.leader_exited()?;
            self.guard = Some(Guard::start(self.id(), how, self.job.cgroup_folder())?);
        }
        // The plan of `set_grace` for this process's death: to the guard, or to the keeper.
        if let Some((signal, grace)) = self.grace {
            #[cfg(feature = "contain")]
            self.job.set_death_plan(signal, grace);
            if let Some(guard) = &self.guard {
                guard.set_plan(signal, grace);
            }
        }
        Ok(())
    }

    /// The pid of the guard process of [`die_with_parent`](GroupChild::die_with_parent) (or
    /// [`host::die_with_parent_forked`][host-forked]) while this handle holds it: `None`
    /// before, and once a wait, [`Drop`] or a failed start ended it.
    ///
    /// Needs the `guard` feature (on by default).
    ///
    /// The guard is a child of this process. Code that signals or reaps this process's children by pid must leave it
    /// alone, as it leaves the leader: pass it in `owned`, with [`id`](GroupChild::id), to
    /// [`host::Subreaper::sweep`][host-sweep] and [`reap_exited`][host-reap-exited]. A guard killed or reaped by
    /// other code no longer guards the group.
    ///
    #[cfg_attr(
        feature = "host",
        doc = "[host-forked]: crate::host::die_with_parent_forked\n[host-sweep]: crate::host::Subreaper::sweep\n\
               [host-reap-exited]: crate::host::Subreaper::reap_exited"
    )]
    #[cfg_attr(
        not(feature = "host"),
        doc = "[host-forked]: crate#features\n[host-sweep]: crate#features\n[host-reap-exited]: crate#features"
    )]
    #[must_use]
    pub fn guard_id(&self) -> Option<u32> {
        self.guard.as_ref().map(Guard::id)
    }
}
