//! The one extension point of a [`GroupChild`](crate::GroupChild): what a job reaches beyond its process group.
//!
//! A child from [`spawn_group`](crate::GroupCommandExt::spawn_group) has no boundary: its job is its group, and
//! every method of [`Job`] below does what a plain group needs. The sibling crate `grouptimeout-job` (its
//! `spawn_contained`, `die_with_parent`) attaches a [`Boundary`] through the hidden module `__private`, and names this
//! crate by its exact version, so that the two always come from the same release. That pin keeps other versions out,
//! not other crates: the module is hidden and outside semantic versioning, but any crate can name it and implement
//! [`Boundary`]. So this crate trusts no boundary with its signals; what it does rely on, the two promises of the
//! `unsafe` trait's contract (the pid it opens a pidfd on, the descriptor it sleeps on), is written there.
//!
//! - Before every signal it sends, it checks its own child itself (`waitid` with `WNOWAIT`), whatever the
//!   boundary's [`exited`](Boundary::exited) says, and refuses with `ECHILD` once someone else reaped it. It checks
//!   before the boundary's [`signal`](Boundary::signal) too (a boundary that works from the leader's pid never
//!   starts on a reaped one), and again right before its own `kill(2)`. What that holds: no signal of this crate
//!   follows a foreign reap that came before that last check. A reap in the instant between the check and the
//!   `kill(2)` (a `waitpid(-1)` on another thread) is not seen: the signal then goes to the group id and the pid of
//!   a process just reaped. It reaches another process only if that id was given to one in that instant, which
//!   takes the pids to wrap around (`pid_max` new processes; and, for the group's signal, no member of the group left
//!   alive, since a live member keeps the group's id from being given out).
//! - At every signal it sends the group's signal itself (`kill(-pgid)`, and the leader by pid): exactly once, at
//!   the moment the boundary's [`signal`](Boundary::signal) calls for it, or after it returns if it did not. A
//!   boundary can add to what a signal reaches, never take away from the group. The one thing it decides is whether
//!   the leader's pid is its keeper, outside the group ([`keeps_group`](Boundary::keeps_group)): the keeper is then
//!   sent `SIGCONT` after `SIGKILL` and `SIGCONT` (its wake-up), and nothing else: a `SIGKILL` would end it before
//!   it ended its job, and any other signal it would pass on to the command a second time.
//! - The reap stays here, under the handles' lock; no signal of this crate follows it.
//!
//! What a boundary's answers can still do, since they steer the wait: [`exited`](Boundary::exited) saying `true`
//! ends a wait as an exit (the leftovers' kill and the reap follow, which then blocks until the leader exits);
//! saying `false`, or a [`watched`](Boundary::watched) process that does not exit, makes a wait sleep on to its
//! deadline, or without one for as long as it lies; so does a [`rest_exited`](Boundary::rest_exited) that answers
//! `false`. [`keeps_group`](Boundary::keeps_group) saying `true` of a leader that left its group (`setpgid`) spares
//! that leader the signal by pid (the group is signalled all the same): the reap then waits for the leader's own
//! exit, and the drop gives up after `DROP_REAP_LIMIT` and leaves it running. Any of its methods can block, and with
//! them a wait or a drop. And a boundary is code that runs in this process: it can send any signal of its own, reap
//! the leader itself (this crate then refuses with `ECHILD` as for any foreign reap); what this crate promises is
//! what its own signals do.

use std::any::Any;
use std::fmt;
use std::io;
use std::sync::Arc;

/// What a job beyond its process group adds to a child's waits, kills and drop (implemented by `grouptimeout-job`;
/// not a public API: its methods may change with any version, which is why that crate pins this one exactly). What
/// its answers can and cannot change is in the module's docs.
///
/// Every method is called with the leader unreaped by this crate, except [`take_reached`](Boundary::take_reached)
/// (also right after the reap), and [`usage`](Boundary::usage), [`end`](Boundary::end) and
/// [`record`](Boundary::record), which follow it.
///
/// # Safety
///
/// An implementation promises two things that this crate, and drivers of its steps, rely on without checking:
///
/// 1. **The descriptor of [`rest_exited`](Boundary::rest_exited).** A `Some(fd)` it returns is a descriptor the
///    boundary owns, open, and it stays open and names the same file from that call until [`end`](Boundary::end)
///    returns (or the boundary is dropped, if `end` is never called); the boundary never closes it earlier, nor
///    gives it to anyone who may. The wait lists it in its [`Interest`](crate::Interest), whose contract promises
///    drivers exactly that; a driver may borrow it from its number (`grouptimeout-tokio` makes a `BorrowedFd` of it
///    with `BorrowedFd::borrow_raw`, whose soundness rests on this promise).
/// 2. **The pid of [`watched`](Boundary::watched).** It is `leader`, or the pid of a process held unreaped by a
///    process of the boundary's own (the leader itself, which this crate holds unreaped) until that holder exits, or
///    reaps it as its last act before it exits; and [`exited`](Boundary::exited) answers `true` once the holder has
///    exited. So the pid names that process and no other whenever `exited` has just answered `false`, but in the
///    holder's last instant. This crate opens a pidfd on that pid right after such an answer (at a wait's first
///    sleep, and in [`GroupChild::exit_fd`](crate::GroupChild::exit_fd)), sleeps on it, and lends it out as the
///    leader's exit descriptor, through which a caller may signal. (That last instant is let through, as for this
///    crate's own signals: a pidfd opened in it names another process only if that one was given the pid in that
///    instant, after the pids wrapped around.)
///
/// Nothing else is promised: every other answer is untrusted (see the module's docs), and a boundary that breaks
/// neither promise cannot make this crate signal after a foreign reap it saw, nor keep the group from its signal.
///
/// An implementation without `unsafe` does not compile:
///
/// ```compile_fail
/// use std::{any::Any, io, sync::Arc};
/// use grouptimeout::__private::Boundary;
///
/// #[derive(Debug)]
/// struct Mine;
///
/// impl Boundary for Mine {
///     fn watched(&self, leader: u32) -> u32 { leader }
///     fn exited(&self, leader: u32) -> io::Result<bool> { grouptimeout::__private::sys::has_exited(leader) }
///     fn signal(&self, _: u32, _: i32, group: &mut dyn FnMut() -> io::Result<()>) -> io::Result<()> { group() }
///     fn keeps_group(&self, _: u32) -> bool { false }
///     fn judge(&self, _: u32, _: bool) {}
///     fn take_reached(&self) {}
///     fn end(&self, _: bool) -> io::Result<()> { Ok(()) }
///     fn record(&self) -> Option<Arc<dyn Any + Send + Sync>> { None }
///     fn as_any(&self) -> &dyn Any { self }
/// }
/// ```
#[doc(hidden)]
pub unsafe trait Boundary: fmt::Debug + Send + Sync + Any {
    /// The process whose exit ends a wait: `leader`, or the command below a keeper.
    fn watched(&self, leader: u32) -> u32;

    /// Whether the watched process has exited (without reaping the leader): what a wait checks between its sleeps.
    /// It never replaces this crate's own check of its child before a signal.
    ///
    /// # Errors
    ///
    /// As `waitid` fails for the leader (`ECHILD`: someone else reaped it).
    fn exited(&self, leader: u32) -> io::Result<bool>;

    /// Sends `signal` to the job: `group` is this crate's own signal to the leader's group (it checks the leader
    /// first; once: later calls do nothing; if the boundary does not call it, the caller does after this returns),
    /// and the boundary adds what the group misses.
    ///
    /// # Errors
    ///
    /// The group's error, else the first error of the boundary's own signals.
    fn signal(
        &self,
        leader: u32,
        signal: i32,
        group: &mut dyn FnMut() -> io::Result<()>,
    ) -> io::Result<()>;

    /// Whether the pid `leader` (this crate's child, whose pid is the group's id) is the boundary's keeper, a process
    /// outside the group that passes on to the command what reaches its pid: the group's signal then spares it (it
    /// gets `SIGCONT` after `SIGKILL` and `SIGCONT`, and nothing else). The group itself is signalled either way.
    fn keeps_group(&self, leader: u32) -> bool;

    /// Once the leader has exited and the wait waits for the whole job (`set_wait_for_job`, `set_leak_grace`), with
    /// the leader unreaped: whether the rest of the job is gone, and a descriptor (the boundary's, open until
    /// [`end`](Boundary::end): see the trait's contract) that turns readable when that may have changed (`None`: the
    /// wait checks again on its schedule; with one, when it turns readable, and a second later at the latest). Called
    /// at every step of that wait; a `true` ends it as an exit (the job's `SIGKILL` follows), an error too (returned
    /// after the reap).
    ///
    /// Provided: the plain group's answer (a live member of the group `leader` other than the leader).
    ///
    /// # Errors
    ///
    /// What kept the boundary from telling.
    fn rest_exited(&self, leader: u32) -> io::Result<(bool, Option<std::os::fd::RawFd>)> {
        crate::sys::group_has_members(leader, None).map(|alive| (!alive, None))
    }

    /// Tells the job, right before the leader's reap, whether what is left is killed (`kill`) or kept.
    fn judge(&self, leader: u32, kill: bool);

    /// Records what the kills so far reached besides the leader.
    fn take_reached(&self);

    /// Ends the job after the leader's reap (or at the drop): removes what it made; `keep` leaves its members
    /// running.
    ///
    /// # Errors
    ///
    /// What could not be removed.
    fn end(&self, keep: bool) -> io::Result<()>;

    /// Refines `usage`, the leader's own (from its reap), with what the boundary measured of the whole job; called
    /// once, right after the leader's reap and before [`end`](Boundary::end). Provided: leaves it as it is.
    fn usage(&self, usage: &mut crate::Usage) {
        let _ = usage;
    }

    /// What a finished job's result keeps of the job (called once the leader was reaped: by a capturing wait, and by
    /// a driver that hands over a result of its own, see `Recorded`): a record that holds none of the job's resources
    /// (its descriptors), so that a kept result does not keep them open.
    fn record(&self) -> Option<Arc<dyn Any + Send + Sync>>;

    /// The boundary as [`Any`], for the crate that made it to find its own type again.
    fn as_any(&self) -> &dyn Any;
}

/// A child's job: its group alone (`None`), or a group with a [`Boundary`].
#[derive(Debug, Clone, Default)]
pub(crate) struct Job(pub(crate) Option<Arc<dyn Boundary>>);

impl Job {
    /// Sends `signal` to the job of our unreaped child `leader`: `group` (this crate's own signal to the group, which
    /// checks the leader again right before its `kill`) exactly once, and what the boundary adds. Refuses (`ECHILD`)
    /// before the boundary acts if someone else reaped the leader.
    pub(crate) fn signal(
        &self,
        leader: u32,
        signal: i32,
        group: impl FnOnce() -> io::Result<()>,
    ) -> io::Result<()> {
        let Some(boundary) = &self.0 else {
            return group();
        };
        crate::sys::has_exited(leader)?;
        let mut group = Some(group);
        let sent = boundary.signal(leader, signal, &mut || {
            group.take().map_or(Ok(()), |group| group())
        });
        // The group is signalled whatever the boundary did: that promise is this crate's.
        match group.take() {
            Some(group) => group().and(sent),
            None => sent,
        }
    }

    /// Whether the pid `leader` is the boundary's keeper, outside the group (see [`Boundary::keeps_group`]).
    pub(crate) fn keeps_group(&self, leader: u32) -> bool {
        self.0.as_ref().is_some_and(|b| b.keeps_group(leader))
    }

    pub(crate) fn watched(&self, id: u32) -> u32 {
        self.0.as_ref().map_or(id, |b| b.watched(id))
    }

    /// The wait's check: the boundary's [`exited`](Boundary::exited), else our own. Not the check before a signal
    /// (`group::leader_exited`, always our own).
    pub(crate) fn exited(&self, id: u32) -> io::Result<bool> {
        self.0
            .as_ref()
            .map_or_else(|| crate::sys::has_exited(id), |b| b.exited(id))
    }

    /// Our own check (`ECHILD` refuses a leader reaped by someone else), then the boundary's: whether a leader whose
    /// kill failed may be reaped without blocking for long.
    pub(crate) fn exited_checked(&self, id: u32) -> io::Result<bool> {
        if crate::sys::has_exited(id)? {
            return Ok(true);
        }
        self.0.as_ref().map_or(Ok(false), |b| b.exited(id))
    }

    /// Whether the rest of the job of `id` (exited, unreaped) is gone, and what tells a change (see
    /// [`Boundary::rest_exited`]).
    pub(crate) fn rest_exited(&self, id: u32) -> io::Result<(bool, Option<std::os::fd::RawFd>)> {
        match &self.0 {
            Some(boundary) => boundary.rest_exited(id),
            None => crate::sys::group_has_members(id, None).map(|alive| (!alive, None)),
        }
    }

    pub(crate) fn judge(&self, id: u32, kill: bool) {
        self.0.iter().for_each(|b| b.judge(id, kill));
    }

    /// Moves what the job's kills reached into the leftovers (see [`Boundary::take_reached`]).
    pub(crate) fn take_reached(&self) {
        self.0.iter().for_each(|b| b.take_reached());
    }

    pub(crate) fn end(&self, keep: bool) -> io::Result<()> {
        self.0.as_ref().map_or(Ok(()), |b| b.end(keep))
    }

    pub(crate) fn usage(&self, usage: &mut crate::Usage) {
        self.0.iter().for_each(|b| b.usage(usage));
    }

    /// What a capturing wait's result keeps of its job: its boundary's [`record`](Boundary::record), if any.
    #[cfg(feature = "capture")]
    pub(crate) fn record(&self) -> Option<Arc<dyn Any + Send + Sync>> {
        self.0.as_ref().and_then(|b| b.record())
    }
}

#[cfg(test)]
mod tests {
    use super::{Boundary, Job};
    use std::any::Any;
    use std::io;
    use std::sync::Arc;

    /// A boundary that forgets the group.
    #[derive(Debug)]
    struct Forgetful;

    // SAFETY: its `watched` is the leader, and it lists no descriptor (the provided `rest_exited`).
    unsafe impl Boundary for Forgetful {
        fn watched(&self, leader: u32) -> u32 {
            leader
        }
        fn exited(&self, _: u32) -> io::Result<bool> {
            Ok(false)
        }
        fn signal(&self, _: u32, _: i32, _: &mut dyn FnMut() -> io::Result<()>) -> io::Result<()> {
            Ok(())
        }
        fn keeps_group(&self, _: u32) -> bool {
            false
        }
        fn judge(&self, _: u32, _: bool) {}
        fn take_reached(&self) {}
        fn end(&self, _: bool) -> io::Result<()> {
            Ok(())
        }
        fn record(&self) -> Option<Arc<dyn Any + Send + Sync>> {
            None
        }
        fn as_any(&self) -> &dyn Any {
            self
        }
    }

    #[test]
    fn the_group_is_signalled_once_whatever_the_boundary_does() {
        // The job's signal checks its leader first: an unreaped child of ours.
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let job = Job(Some(Arc::new(Forgetful)));
        let mut sent = 0;
        let result = job.signal(child.id(), 0, || {
            sent += 1;
            Err(io::Error::from_raw_os_error(libc::EPERM))
        });
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(sent, 1);
        assert_eq!(result.unwrap_err().raw_os_error(), Some(libc::EPERM));
    }
}
