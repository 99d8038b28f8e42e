//! [`JobChildExt`]: what a [`GroupChild`] tells of its job's boundary (its containment, command, leftovers, members)
//! and [`die_with_parent`](JobChildExt::die_with_parent); and [`Attached`], the boundary this crate attaches to a
//! child through `grouptimeout`'s hidden extension point (the boundary itself is in `contain/`, the guard in
//! `guard/`).

use std::io;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, RwLock};

use grouptimeout::__private::{self as core, Boundary};
use grouptimeout::GroupChild;

use crate::contain::{Containment, Job, Leftover};
use crate::guard::Guard;
use crate::report::LeakReport;

/// [`grouptimeout::GroupChild`]'s methods for its job: import it to call them on any child, of
/// [`spawn_contained`](crate::JobCommandExt::spawn_contained) or of `spawn_group`.
///
/// The trait is sealed: it is implemented for [`GroupChild`] only.
///
/// Once a wait has ended the job (the leader reaped, the job ended, its cgroup folder removed), the child, and its
/// [`GroupHandle`](grouptimeout::GroupHandle)s, keep only a record of it for these methods: no descriptor of the job
/// (its keeper's channel, its pidfds, its cgroup's files), so that a caller may keep many finished children.
///
pub trait JobChildExt: sealed::Sealed {
    /// Which boundary the job has: [`Containment::Group`] for [`spawn_group`](grouptimeout::GroupCommandExt::spawn_group), else what
    /// [`spawn_contained`](crate::JobCommandExt::spawn_contained) could make (see [`Contain`](crate::Contain)).
    ///
    #[must_use]
    fn containment(&self) -> Containment;

    /// Why the job's boundary is weaker than the first mode [`spawn_contained`](crate::JobCommandExt::spawn_contained)
    /// tried: each mode that was tried and could not be had, with its reason, in the order tried
    /// (`cgroup: …; reaper: …`). `None` when the job got the first mode tried (and for
    /// [`spawn_group`](grouptimeout::GroupCommandExt::spawn_group)).
    ///
    /// A fallback is never silent: where [`containment`](JobChildExt::containment) is less than the caller could
    /// expect (an unprivileged user gets no cgroup, a process limit left no room for the keeper, the keeper program
    /// cannot run here: `vm.memfd_noexec` = 2, a seccomp rule on `memfd_create` or `execveat`), this says why. The
    /// tool's `-v` prints it.
    ///
    #[must_use]
    fn fallback_reason(&self) -> Option<&str>;

    /// The command's own process id: [`id`](GroupChild::id) for a plain group and wherever the command is the
    /// process the spawn made (lineage mode, the group alone); for a job of `spawn_contained` in a cgroup or with its
    /// own reaper, the pid of its keeper's child, the command (see [`Contain`](crate::Contain)), never equal to
    /// `id()`, which is the keeper's.
    ///
    /// For looking at the command (`/proc/PID/…`; [`in_job`](JobChildExt::in_job) is `true` for it while it runs),
    /// not for signalling it: in a kept job the command is not this process's child, and once it has exited and been
    /// reaped (by its keeper, when a wait reaps the job) its pid may name another process. Signal the job through
    /// this handle ([`signal`](GroupChild::signal)), which reaches the command and its group while they are the job's.
    #[must_use]
    fn command_id(&self) -> u32;

    /// The processes besides the leader that the job's `SIGKILL`s reached (pid and name at the time), once each, in
    /// the order found (in reaper mode: those this process found below the keeper; what the keeper itself kills at
    /// the job's end, orphans of those killed, is not listed); complete when a wait has returned (a [`GroupHandle`](grouptimeout::GroupHandle)'s kills are added at the next wait).
    /// Empty for a [`spawn_group`](grouptimeout::GroupCommandExt::spawn_group) child (no scan is made for a plain group), and when
    /// nothing was left to kill: an empty list is "no leaks" only where the boundary sees the whole job (see
    /// [`leak_report`](JobChildExt::leak_report), which says what the boundary could see and which kills were leaks).
    /// For a kept job (cgroup, reaper) the command itself is listed too when a kill reached it while it ran.
    ///
    /// In cgroup mode the cgroup is frozen (`cgroup.freeze`) while its processes are listed, then killed: the list is
    /// every process the kill ended, however fast the job forks, with the name it had (the freeze waits for each one
    /// to stop where it can be frozen: a process just forked, or in the middle of an `exec`, runs until then). Where
    /// the freeze cannot be had (`cgroup.freeze` not writable, no descriptor left) or is not complete within a second
    /// (a process in uninterruptible sleep, such as a hung NFS read, freezes only once it wakes; the kill then waits
    /// that second), the list is read while the job runs: a process forked between the list and the kill is ended
    /// unlisted, and one that exits by itself in that moment and is reaped at once is listed.
    ///
    #[must_use]
    fn leftovers(&self) -> Vec<Leftover>;

    /// What the job left behind, as a test runner reports leaks: what [`leftovers`](JobChildExt::leftovers) lists,
    /// whether it was leaked (killed after the command had exited on its own, at once or at the end of a
    /// [leak grace](GroupChild::set_leak_grace)) or killed with the job (a deadline, `kill`, a signal while the command
    /// ran), and what the job's boundary can see at all: a plain group's report says that it lists nothing, not that
    /// nothing leaked. See [`LeakReport`]. Complete once a wait has returned.
    #[must_use]
    fn leak_report(&self) -> LeakReport;

    /// Whether process `pid` belongs to the job now: it is in the job's cgroup; or it descends from the job's
    /// reaper (its parents, followed up at most 64 steps, reach the keeper, [`id`](GroupChild::id); the keeper
    /// itself is not the job's); or it carries the job's lineage mark or is in the leader's group; or, for a plain
    /// group, it is in the leader's group. A reaper job whose keeper was killed, or was reaped, is told by its mark
    /// and group instead, as in lineage mode.
    ///
    /// For a supervisor that sweeps orphans (a subreaper, see [`host::Subreaper`](https://docs.rs/grouptimeout-cli/latest/grouptimeout_cli/host/struct.Subreaper.html)) and must
    /// leave alone those that are not the job's. The answer is about whatever process `pid` names at the time of
    /// the call: the caller keeps the pid from being reused (an unreaped child of its own, such as an adopted
    /// orphan, is).
    ///
    /// The same in every mode, `false` for:
    /// - a process that has exited (a zombie, a killed member not reaped yet: it runs no more code; on Linux, where
    ///   `/proc` tells);
    /// - the guard of [`die_with_parent`](JobChildExt::die_with_parent), a member of the group (and not of the job's cgroup):
    ///   it is this process's, not the job's;
    /// - a process that is in the leader's group only, once the leader was reaped: the group id may name someone
    ///   else's group by then (a lineage mark or the job's cgroup still count).
    ///
    /// It reads `/proc/PID/stat` (of `pid`, and in reaper mode of its parents), and, in lineage mode,
    /// `/proc/PID/environ` (which reads empty for a moment while the process is in the middle of `execve`: that is
    /// read again, at least 20 times and until the process has run 20 ms on a CPU, for up to a second where it waits
    /// for one; a process started with no environment, `env -i`, is told at once).
    ///
    #[must_use]
    fn in_job(&self, pid: u32) -> bool;

    /// From this call on, if this process dies for any reason while the leader is unreaped (`SIGKILL`, the OOM
    /// killer, `panic = "abort"`, [`std::process::exit`], an unhandled signal), every process in the group is
    /// sent `SIGKILL`: at once, or, with a grace set before this call ([`set_grace`](GroupChild::set_grace); calling
    /// this again passes on a grace set since), after its signal and up to its grace for the leader to exit, as at a
    /// deadline.
    ///
    /// It starts a guard process in the group that waits for end of file on a pipe whose write end only this process
    /// holds (close-on-exec). When this process dies the kernel closes that end, and the guard sends `SIGKILL` to its
    /// group, which its membership keeps from being reused. On Linux the guard is this crate's keeper program in its
    /// guard mode (`group-guard`; see [`Contain`](crate::Contain)), started as a kept spawn starts its keeper: a
    /// child that shares this process's memory until it execs the program (no copy of this process, whatever its
    /// size, and no `pthread_atfork` handler runs), which joins the leader's group with every signal blocked before
    /// it execs. It holds its pipe and `/dev/null` only. Elsewhere (and where the program cannot run here) it is
    /// `/bin/sh`, spawned (through std's `posix_spawn` path) into the group, which ignores every catchable signal (its
    /// `trap`s) before it says it is armed; like any child, it inherits the descriptors of this process that are not
    /// close-on-exec (std makes all of its own close-on-exec), so it keeps such a descriptor open as long as it runs.
    /// Either way the call returns once a member's `kill 0`, or a grace signal, cannot disarm the guard; its cost
    /// per command is `BENCHMARKS.md`'s row 8. Calling it again starts no other guard, and passes on a grace set
    /// since.
    ///
    /// Every wait and [`Drop`] end the guard (`SIGKILL` and a reap) once the job has ended: after the leader's reap
    /// and, for a job in a cgroup of its own, after its folder was removed; so no process, pipe or zombie is left
    /// behind. That reap waits at most about a second (a
    /// guard that does not die by then, stuck in uninterruptible sleep or held by a stopped tracer, is left to become
    /// a zombie of this process). On Linux (5.4 and later) the guard is held by a pidfd opened while it was our
    /// unreaped child: if other code reaps it (a `waitpid(-1)`, a subreaper's sweep), nothing is ever sent to, nor
    /// waited for, a process that reused its pid. Elsewhere (and where no pidfd can be had) it is held by its pid,
    /// and only while `waitid` says it is our unreaped child; other code that reaps it there must not let its pid be
    /// given to another child of ours before this handle ends: leave it alone ([`guard_id`](JobChildExt::guard_id)). When the leader exits and
    /// [`set_kill_leftovers(false)`](GroupChild::set_kill_leftovers) keeps its leftovers, the guard alone is ended
    /// and the leftovers are left as they were (no longer guarded). While the guard runs it is one more member of
    /// the group (its pid is not the leader's), and it holds the group's id even after all other members are gone.
    ///
    /// A job of `spawn_contained` in a cgroup or under its own reaper needs none: its keeper guards it from before
    /// the command's first instruction (see `Contain`), so no guard is started and [`guard_id`](JobChildExt::guard_id)
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
    /// The guard cannot be started (no process or descriptor left; the shell guard: `/bin/sh` missing); the group is
    /// gone (the leader left it and no member is left: `PermissionDenied`); the shell guard exited without arming it
    /// (a `/bin/sh` that is not a shell); it was killed before it could ignore signals three times in a row, or did
    /// not start within 5 s; or the leader was reaped by someone else. Nothing is left running
    /// then. Once the leader was reaped by this crate there is nothing left to guard: `Ok(())`.
    ///
    /// Where a system call failed (the pipe, the start of the guard, joining the group:
    /// `EMFILE`, `EAGAIN`, `ENOENT`…; `ECHILD`), the error is that OS error itself (`raw_os_error()`, std's kind;
    /// its message the system's text, so say what failed when you show it). The others carry no OS error number,
    /// and their message names the group: the shell guard exited without arming it, was killed three times, or
    /// did not start within 5 s (`TimedOut`); the group is gone (`PermissionDenied`).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::process::Command;
    /// use std::time::Duration;
    /// use grouptimeout::GroupCommandExt;
    /// use grouptimeout_job::JobChildExt;
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
    fn die_with_parent(&mut self) -> io::Result<()>;

    /// The pid of the guard process of [`die_with_parent`](JobChildExt::die_with_parent) (or
    /// [`host::die_with_parent_forked`](https://docs.rs/grouptimeout-cli/latest/grouptimeout_cli/host/fn.die_with_parent_forked.html)) while this handle holds it: `None`
    /// before, and once a wait, [`Drop`] or a failed start ended it.
    ///
    /// The guard is a child of this process. Code that signals or reaps this process's children by pid must leave it
    /// alone, as it leaves the leader: pass it in `owned`, with [`id`](GroupChild::id), to
    /// [`host::Subreaper::sweep`](https://docs.rs/grouptimeout-cli/latest/grouptimeout_cli/host/struct.Subreaper.html#method.sweep) and [`reap_exited`](https://docs.rs/grouptimeout-cli/latest/grouptimeout_cli/host/struct.Subreaper.html#method.reap_exited). A guard killed or reaped by
    /// other code no longer guards the group.
    ///
    #[must_use]
    fn guard_id(&self) -> Option<u32>;
}

mod sealed {
    pub trait Sealed {}

    impl Sealed for grouptimeout::GroupChild {}

    /// What [`JobOutputExt`](super::JobOutputExt) is implemented for: a finished job's result that kept its job's
    /// record.
    pub trait Finished {}

    impl<T: grouptimeout::__private::Recorded + ?Sized> Finished for T {}
}

impl JobChildExt for GroupChild {
    fn containment(&self) -> Containment {
        attached(self).map_or(Containment::Group, |a| a.job().containment())
    }

    fn fallback_reason(&self) -> Option<&str> {
        attached(self)?.fallback.get().map(|why| &**why)
    }

    fn command_id(&self) -> u32 {
        attached(self).map_or(self.id(), |a| a.job().watched(self.id()))
    }

    fn leftovers(&self) -> Vec<Leftover> {
        attached(self).map_or_else(Vec::new, |a| lock(&a.leftovers).clone())
    }

    fn leak_report(&self) -> LeakReport {
        let leaked = attached(self).and_then(|a| a.leaked.get().copied());
        LeakReport::new(self.containment(), self.leftovers(), leaked)
    }

    fn in_job(&self, pid: u32) -> bool {
        let unreaped = core::leader_unreaped(self);
        match attached(self) {
            Some(a) if a.guard_id() == Some(pid) => false,
            Some(a) => a.job().contains(self.id(), pid, unreaped),
            None => Job::default().contains(self.id(), pid, unreaped),
        }
    }

    fn die_with_parent(&mut self) -> io::Result<()> {
        arrange_guard(self)
    }

    fn guard_id(&self) -> Option<u32> {
        attached(self)?.guard_id()
    }
}

/// What a finished job's result tells of its job (see [`JobChildExt`]): import it to call them on a
/// [`grouptimeout::Captured`] (a capturing wait's result), or a `grouptimeout_set::Finished` (a job of a `JobSet`,
/// whichever way it was added), once the child itself is gone.
///
/// The trait is sealed: it is implemented for the results that keep their job's record, and the record holds none of
/// the job's resources (no descriptor). These docs show its bounds by the names of two hidden traits (`Finished`, a
/// private supertrait, and `Recorded`, the core's hidden interface): the types that implement it are exactly
/// `grouptimeout::Captured` (feature `capture`) and `grouptimeout_set::Finished`.
pub trait JobOutputExt: sealed::Finished {
    /// The job's boundary, as [`JobChildExt::containment`] said before the wait consumed the child.
    #[must_use]
    fn containment(&self) -> Containment;

    /// What the job's kills reached besides the leader, as [`JobChildExt::leftovers`] says after a wait (complete:
    /// the wait has returned).
    #[must_use]
    fn leftovers(&self) -> Vec<Leftover>;

    /// What the job left behind, as [`JobChildExt::leak_report`] says after a wait (complete).
    #[must_use]
    fn leak_report(&self) -> LeakReport;
}

impl<T: core::Recorded + ?Sized> JobOutputExt for T {
    fn containment(&self) -> Containment {
        finished(self).map_or(Containment::Group, |f| f.containment)
    }

    fn leftovers(&self) -> Vec<Leftover> {
        finished(self).map_or_else(Vec::new, |f| f.leftovers.clone())
    }

    fn leak_report(&self) -> LeakReport {
        finished(self).map_or_else(
            || LeakReport::new(Containment::Group, Vec::new(), None),
            |f| LeakReport::new(f.containment, f.leftovers.clone(), f.leaked),
        )
    }
}

/// What a finished job's result keeps of its job ([`Boundary::record`]): what [`JobOutputExt`] reads, and none of
/// the job's resources (its keeper's channel, its pidfds).
#[derive(Debug)]
struct Finished {
    containment: Containment,
    leftovers: Vec<Leftover>,
    leaked: Option<bool>,
}

fn finished<T: core::Recorded + ?Sized>(result: &T) -> Option<&Finished> {
    result.boundary_record()?.downcast_ref()
}

/// A job's boundary as `grouptimeout` holds it: the job (`contain/`), the guard of `die_with_parent`, what the kills
/// reached, and why the boundary is weaker than the first mode tried.
#[derive(Debug, Default)]
pub(crate) struct Attached {
    /// The job; once it has ended, its record (see [`Boundary::end`]), so that a finished child kept by the caller
    /// (and its handles) holds none of the job's resources.
    job: RwLock<Job>,
    guard: Mutex<Option<Guard>>,
    leftovers: Mutex<Vec<Leftover>>,
    /// Set at the first signal sent to the job: whether its command had exited by then, on its own (see
    /// [`LeakReport::leaked`]).
    leaked: OnceLock<bool>,
    fallback: OnceLock<Arc<str>>,
}

impl Attached {
    pub(crate) fn new(job: Job, fallback: Option<Arc<str>>) -> Arc<Attached> {
        let attached = Attached {
            job: RwLock::new(job),
            ..Attached::default()
        };
        if let Some(why) = fallback {
            let _ = attached.fallback.set(why);
        }
        Arc::new(attached)
    }

    #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
    pub(crate) fn set_fallback(&self, why: Arc<str>) {
        let _ = self.fallback.set(why);
    }

    fn guard_id(&self) -> Option<u32> {
        lock(&self.guard).as_ref().map(Guard::id)
    }

    /// The job, or its record once it has ended (a clone: a call made meanwhile keeps the job it started with).
    pub(crate) fn job(&self) -> Job {
        self.job
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

// SAFETY: the contract's two promises (see `Boundary`). The descriptor of `rest_exited`: a kept job's pidfd of its
// keeper (`Keeper::rest_exited`), made at the spawn and held by the keeper's handle in the job's `Arc`ed inner state,
// which `self.job` holds until `end` swaps it for a record that holds none (a call in flight holds a clone, which only
// keeps it open longer); nothing closes it before. The pid of `watched`: the leader, or for a kept job the command, a
// child of the keeper (the leader, unreaped here), which the keeper reaps only as the last act before its own exit
// (the keeper program, `job/keeper/keep.rs`: after the verdict, or once nothing of the job is left); `exited` answers
// `true` once the keeper has exited (`Keeper::exited` asks `waitid` about the keeper first), and the core watches the
// command through a pidfd the spawning child opened while it was that child's parent.
unsafe impl Boundary for Attached {
    fn watched(&self, leader: u32) -> u32 {
        self.job().watched(leader)
    }

    fn exited(&self, leader: u32) -> io::Result<bool> {
        self.job().exited(leader)
    }

    fn signal(
        &self,
        leader: u32,
        signal: i32,
        group: &mut dyn FnMut() -> io::Result<()>,
    ) -> io::Result<()> {
        let job = self.job();
        if signal != 0 {
            self.leaked
                .get_or_init(|| job.exited(leader).unwrap_or(false));
        }
        job.signal(leader, signal, group)
    }

    fn keeps_group(&self, _leader: u32) -> bool {
        self.job().kept()
    }

    fn rest_exited(&self, leader: u32) -> io::Result<(bool, Option<std::os::fd::RawFd>)> {
        self.job().rest_exited(leader, self.guard_id())
    }

    fn judge(&self, leader: u32, kill: bool) {
        self.job().judge(leader, kill);
    }

    fn take_reached(&self) {
        let guard = self.guard_id();
        self.job().take_reached(&mut lock(&self.leftovers), guard);
    }

    fn usage(&self, usage: &mut grouptimeout::Usage) {
        self.job().usage(usage);
    }

    /// Ends the job, then keeps only its record (whatever the end's result: a job is ended once): a finished child
    /// that the caller keeps holds no descriptor of the job.
    fn end(&self, keep: bool) -> io::Result<()> {
        let job = self.job();
        let ended = job.end(keep);
        // The guard last: until the job's cgroup is gone, this process's death still ends it and removes it.
        lock(&self.guard).take();
        let record = job.record();
        drop(job);
        *self.job.write().unwrap_or_else(PoisonError::into_inner) = record;
        ended
    }

    fn record(&self) -> Option<Arc<dyn std::any::Any + Send + Sync>> {
        Some(Arc::new(Finished {
            containment: self.job().containment(),
            leftovers: lock(&self.leftovers).clone(),
            leaked: self.leaked.get().copied(),
        }))
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn of(boundary: Option<&Arc<dyn Boundary>>) -> Option<&Attached> {
    boundary?.as_any().downcast_ref()
}

/// The boundary this crate attached to `child`, if any.
pub(crate) fn attached(child: &GroupChild) -> Option<&Attached> {
    of(core::boundary(child))
}

/// [`die_with_parent`](JobChildExt::die_with_parent).
pub(crate) fn arrange_guard(child: &mut GroupChild) -> io::Result<()> {
    if attached(child).is_none() {
        // A plain group's guard needs a boundary to live in: one that adds nothing else.
        if core::attach(child, Attached::new(Job::default(), None)).is_err() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "this child carries a job boundary of another version of grouptimeout-job",
            ));
        }
    }
    let Some(a) = attached(child) else {
        return Ok(());
    };
    let job = a.job();
    // A kept job's keeper is its guard already (see `Contain`).
    if core::leader_unreaped(child) && a.guard_id().is_none() && !job.kept() {
        core::leader_exited(child)?;
        let guard = Guard::start(child.id())?;
        *lock(&a.guard) = Some(guard);
    }
    // The plan of `set_grace` for this process's death: to the guard, or to the keeper.
    if let Some((signal, grace)) = core::grace(child) {
        job.set_death_plan(signal, grace);
        if let Some(guard) = &*lock(&a.guard) {
            guard.set_plan(signal, grace);
        }
    }
    Ok(())
}
