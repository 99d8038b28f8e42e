//! Spawning a command as the leader of its own process group, and waiting for it with a deadline.

use std::fmt;
use std::io;
use std::os::unix::process::CommandExt as _;
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, ExitStatus};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crate::contain::{Contain, Containment, Job, Leftover};
use crate::guard::{Guard, Start};
use crate::handle::{GroupHandle, Reaped};
use crate::sys;
use crate::wait::ExitWatch;

/// Extends [`std::process::Command`] with [`spawn_group`](CommandExt::spawn_group).
pub trait CommandExt {
    /// Spawns the command as the leader of a new process group and returns a handle that waits for it with a
    /// deadline and leaves no process of the group running.
    ///
    /// This sets [`process_group(0)`](std::os::unix::process::CommandExt::process_group) and nothing else, so std
    /// keeps its fast `posix_spawn` path. When this returns, the child already leads its own group, whose id is
    /// the child's pid ([`GroupChild::id`]).
    ///
    /// # The terminal
    ///
    /// The new group is not the terminal's foreground process group, so the command is out of the terminal's job
    /// control. If it reads from the controlling terminal, the kernel stops it with `SIGTTIN` (or fails the read with
    /// `EIO` once its group is orphaned), and the wait runs into its deadline. Ctrl-C, Ctrl-Z and Ctrl-\\ signal the
    /// terminal's foreground group, which holds this process and not the command. Writing to the terminal works
    /// (unless `stty tostop` is set).
    ///
    /// - A command that needs no input: give it [`Stdio::null()`](std::process::Stdio::null) or a pipe as its
    ///   standard input, and it never touches the terminal for reading.
    /// - A command that must read the terminal: run it in this process's group with plain [`Command::spawn`], as
    ///   the `grouptimeout` tool's `--foreground` does (there is then no group of its own to kill); or make its group
    ///   the terminal's foreground group after the spawn and take the terminal back after the wait, as shells and
    ///   the `grouptimeout` tool do: [`host::Terminal`](crate::host::Terminal) (opt-in, process-wide), with
    ///   [`host::take_stop`](crate::host::take_stop) and [`host::stop_self`](crate::host::stop_self) to pass a
    ///   Ctrl-Z on to this process's parent.
    /// - Ctrl-C ends this process by default without running any destructor, so the command's group keeps running:
    ///   catch `SIGINT` and pass it on with [`GroupChild::signal`] (a supervisor program can use
    ///   [`host::Signals`](crate::host::Signals)).
    ///
    /// # Errors
    ///
    /// - The spawn failed: the error keeps std's [`ErrorKind`](io::ErrorKind) (`NotFound` for a missing program,
    ///   `PermissionDenied` for one that is not executable or is a directory) and its message names the program.
    ///   Its [`source()`](std::error::Error::source), reached through [`io::Error::get_ref`], is std's own
    ///   `io::Error`, which holds the OS error number (`raw_os_error`), for instance `ENOEXEC` for a script without
    ///   `#!` (no `/bin/sh` fallback is tried) or `EAGAIN` when no process could be created.
    /// - This process ignores `SIGCHLD` (`SIG_IGN`, or a handler with `SA_NOCLDWAIT`): the kernel would reap the
    ///   leader the moment it exits, nothing would keep its group id from being reused, and a later group kill
    ///   could hit an unrelated process. Nothing is spawned; restore the default disposition to use this crate.
    fn spawn_group(&mut self) -> io::Result<GroupChild>;

    /// [`spawn_group`](CommandExt::spawn_group) plus a job boundary: every promise of `spawn_group` holds, and
    /// wherever the group is killed (the deadline, a grace signal, the leftovers after the leader's exit,
    /// [`kill`](GroupChild::kill) and [`signal`](GroupChild::signal), a [`GroupHandle`]'s, the drop), the job's
    /// processes that left the group (`setsid`, double-forking daemons) are signalled too, before the call returns.
    ///
    /// The boundary is a cgroup v2 of the job's own where one can be made (Linux), else the job's lineage (a mark in
    /// the environment, Linux), else the group alone; [`GroupChild::containment`] says which, and
    /// [`GroupChild::leftovers`] lists what the kills reached. [`Contain`] chooses otherwise (a cgroup folder
    /// delegated to a service, no fallback), and says what each mode reaches and what it cannot catch.
    ///
    /// The cost: in cgroup mode the child enters the cgroup before `exec` (a `pre_exec` hook: std forks instead of
    /// using `posix_spawn`, which costs more the larger this process is), and the folder is made and removed; in
    /// lineage mode each kill scans `/proc`. `BENCHMARKS.md` has the numbers.
    ///
    /// # Errors
    ///
    /// As for [`Contain::spawn`]: as for `spawn_group`, or the child could not enter the cgroup made for it.
    fn spawn_contained(&mut self) -> io::Result<GroupChild>;
}

impl CommandExt for Command {
    fn spawn_group(&mut self) -> io::Result<GroupChild> {
        spawn_with(self, Job::default())
    }

    fn spawn_contained(&mut self) -> io::Result<GroupChild> {
        Contain::new().spawn(self)
    }
}

/// [`CommandExt::spawn_group`], for a job with the boundary `job`.
pub(crate) fn spawn_with(command: &mut Command, job: Job) -> io::Result<GroupChild> {
    if sys::children_are_auto_reaped()? {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!(
                "not spawning {:?}: this process ignores SIGCHLD (SIG_IGN or SA_NOCLDWAIT), so the kernel \
                 reaps children at once and a process group id could be reused before it is signalled; \
                 restore SIGCHLD's default disposition first",
                command.get_program()
            ),
        ));
    }
    let child = command.process_group(0).spawn().map_err(|error| {
        io::Error::new(
            error.kind(),
            SpawnError {
                program: command.get_program().to_owned(),
                error,
            },
        )
    })?;
    Ok(GroupChild::new(child, job))
}

/// A failed spawn: names the program, and keeps std's error as its `source()`.
#[derive(Debug)]
struct SpawnError {
    program: std::ffi::OsString,
    error: io::Error,
}

impl fmt::Display for SpawnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot run {:?}: {}", self.program, self.error)
    }
}

impl std::error::Error for SpawnError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// How a wait ended: with the leader's exit status either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The leader exited before the deadline. Unless [`GroupChild::set_kill_leftovers`] turned it off, every
    /// other member of its group was sent `SIGKILL` before the wait returned.
    Exited(ExitStatus),
    /// The deadline passed first: the group was signalled (see [`GroupChild::set_grace`]), sent `SIGKILL`, and the
    /// leader reaped. The status is the leader's; it may have exited on its own during a grace period.
    TimedOut(ExitStatus),
}

impl Outcome {
    /// The leader's exit status.
    #[must_use]
    pub fn status(&self) -> ExitStatus {
        match *self {
            Outcome::Exited(status) | Outcome::TimedOut(status) => status,
        }
    }

    /// Whether the deadline passed before the leader exited.
    #[must_use]
    pub fn timed_out(&self) -> bool {
        matches!(self, Outcome::TimedOut(_))
    }
}

/// A command running as the leader of its own process group; see [`CommandExt::spawn_group`].
///
/// Every wait returns only after the group was dealt with: at the deadline the whole group is killed and the
/// leader reaped; when the leader exits first, the rest of its group is killed (unless
/// [`set_kill_leftovers(false)`](GroupChild::set_kill_leftovers)). Dropping the handle without a wait kills the
/// group too, also when a panic unwinds; but with `panic = "abort"`, or when this process is killed, no drop runs
/// (see [`die_with_parent`](GroupChild::die_with_parent)).
///
/// # What is not reached
///
/// A group kill reaches the processes in the group when the signal is sent. A descendant that moved to another
/// group or session (`setsid`, `setpgid`, a double-forking daemon) is not reached; neither is a member this process
/// has no permission to signal (one that changed its user id). For a hard boundary use cgroups or a container.
#[must_use = "dropping a GroupChild kills its process group at once"]
pub struct GroupChild {
    /// The child's standard input, if it was piped.
    pub stdin: Option<ChildStdin>,
    /// The child's standard output, if it was piped.
    pub stdout: Option<ChildStdout>,
    /// The child's standard error, if it was piped.
    pub stderr: Option<ChildStderr>,
    child: Child,
    /// What the waits sleep on between checks of the leader (see `wait.rs`).
    watch: ExitWatch,
    grace: Option<(i32, Duration)>,
    kill_leftovers: bool,
    /// The most bytes of each output stream kept by the capturing waits (see `capture.rs`).
    pub(crate) output_limit: usize,
    /// Set once the leader was reaped; from then on its id is never signalled.
    outcome: Option<Outcome>,
    /// The guard of [`die_with_parent`](GroupChild::die_with_parent), ended before the leader is reaped.
    guard: Option<Guard>,
    /// Shared with the [`GroupHandle`]s, made by the first call of [`handle`](GroupChild::handle).
    reaped: OnceLock<Arc<Reaped>>,
    /// The job's boundary beyond the group (`contain/`); nothing for [`CommandExt::spawn_group`].
    job: Job,
    /// What the job's kills reached besides the leader.
    leftovers: Vec<Leftover>,
}

impl fmt::Debug for GroupChild {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GroupChild")
            .field("id", &self.id())
            .field("stdin", &self.stdin)
            .field("stdout", &self.stdout)
            .field("stderr", &self.stderr)
            .field("outcome", &self.outcome)
            .field("guard", &self.guard_id())
            .field("containment", &self.containment())
            .finish_non_exhaustive()
    }
}

/// How long [`Drop`] waits for a killed leader (and a guard's drop for the killed guard) to become reapable.
pub(crate) const DROP_REAP_LIMIT: Duration = Duration::from_secs(1);

impl GroupChild {
    fn new(mut child: Child, job: Job) -> GroupChild {
        let watch = ExitWatch::new(child.id());
        GroupChild {
            stdin: child.stdin.take(),
            stdout: child.stdout.take(),
            stderr: child.stderr.take(),
            child,
            watch,
            grace: None,
            kill_leftovers: true,
            output_limit: crate::capture::DEFAULT_OUTPUT_LIMIT,
            outcome: None,
            guard: None,
            reaped: OnceLock::new(),
            job,
            leftovers: Vec::new(),
        }
    }

    /// The leader's process id, which is also the id of its process group.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// The pid of the guard process of [`die_with_parent`](GroupChild::die_with_parent) (or
    /// [`host::die_with_parent_forked`](crate::host::die_with_parent_forked)) while this handle holds it: `None`
    /// before, and once a wait, [`Drop`] or a failed start ended it.
    ///
    /// The guard is a child of this process. Code that signals or reaps this process's children by pid must leave it
    /// alone, as it leaves the leader: pass it in `owned`, with [`id`](GroupChild::id), to
    /// [`host::Subreaper::sweep`](crate::host::Subreaper::sweep) and
    /// [`reap_exited`](crate::host::Subreaper::reap_exited). A guard killed or reaped by other code no longer guards
    /// the group.
    pub fn guard_id(&self) -> Option<u32> {
        self.guard.as_ref().map(Guard::id)
    }

    /// Which boundary the job has: [`Containment::Group`] for [`spawn_group`](CommandExt::spawn_group), else what
    /// [`spawn_contained`](CommandExt::spawn_contained) could make (see [`Contain`]).
    pub fn containment(&self) -> Containment {
        self.job.containment()
    }

    /// The processes besides the leader that the job's `SIGKILL`s reached (pid and name at the time), once each, in
    /// the order found; complete when a wait has returned (a [`GroupHandle`]'s kills are added at the next wait).
    /// Empty for a [`spawn_group`](CommandExt::spawn_group) child (no scan is made for a plain group), and when
    /// nothing was left to kill.
    pub fn leftovers(&self) -> &[Leftover] {
        &self.leftovers
    }

    /// Whether process `pid` belongs to the job now: it is in the job's cgroup; or it carries the job's lineage mark
    /// or is in the leader's group; or, for a plain group, it is in the leader's group.
    ///
    /// For a supervisor that sweeps orphans (a subreaper, see [`host::Subreaper`](crate::host::Subreaper)) and must
    /// leave alone those that are not the job's. The answer is about whatever process `pid` names at the time of
    /// the call: the caller keeps the pid from being reused (an unreaped child of its own, such as an adopted
    /// orphan, is).
    pub fn in_job(&self, pid: u32) -> bool {
        self.job.contains(self.id(), pid)
    }

    /// Whether the leader was not reaped yet through this handle, so that its id still names our group.
    pub(crate) fn leader_unreaped(&self) -> bool {
        self.outcome.is_none()
    }

    /// At the deadline, send `signal` to the group (followed by `SIGCONT`, so that stopped members act on it), wait
    /// up to `grace` for the leader to exit, then send `SIGKILL` to the group and reap the leader.
    ///
    /// A stop signal (`SIGSTOP`, `SIGTSTP`, `SIGTTIN`, `SIGTTOU`) is not followed by `SIGCONT`: the group stays
    /// stopped for the grace period (a `SIGCONT` would undo the stop at once), and `SIGKILL` ends it, stopped or not.
    ///
    /// The default is no grace: `SIGKILL` at the deadline. The leader's exit ends the grace period at once, and the
    /// members still running then are sent `SIGKILL`; so a wait with a grace period returns at most about `grace`
    /// after its deadline. An invalid `signal` is reported by the wait that hits the deadline, after the group was
    /// killed and the leader reaped.
    pub fn set_grace(&mut self, signal: i32, grace: Duration) {
        self.grace = Some((signal, grace));
    }

    /// Whether members still running when the leader exits on its own are sent `SIGKILL` before a wait returns.
    ///
    /// The default is `true`. With `false`, they are left running after [`Outcome::Exited`]; they are still killed
    /// at a deadline, by [`kill`](GroupChild::kill), and by drop while the leader is unreaped.
    pub fn set_kill_leftovers(&mut self, kill: bool) {
        self.kill_leftovers = kill;
    }

    /// Reaps the leader if it has exited, without blocking.
    ///
    /// Returns `Ok(None)` while the leader runs. Once it has exited, the leftovers of its group are killed (see
    /// [`set_kill_leftovers`](GroupChild::set_kill_leftovers)), the leader is reaped and its status returned; later
    /// calls return the same status.
    ///
    /// # Errors
    ///
    /// The leader was reaped by someone else (`ECHILD`: `SIGCHLD` set to be ignored after the spawn, or a
    /// `waitpid(-1)` elsewhere in the program; the group is then never signalled), or a group kill failed (the
    /// leader is reaped all the same, and later calls return its status).
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        if let Some(outcome) = self.outcome {
            return Ok(Some(outcome.status()));
        }
        if !self.leader_exited()? {
            return Ok(None);
        }
        self.finish(false, self.kill_leftovers)
            .map(|o| Some(o.status()))
    }

    /// Waits for the leader to exit, with no deadline, then handles its leftovers as
    /// [`try_wait`](GroupChild::try_wait) does.
    ///
    /// # Errors
    ///
    /// As for [`try_wait`](GroupChild::try_wait).
    pub fn wait(&mut self) -> io::Result<ExitStatus> {
        self.wait_until(None).map(|o| o.status())
    }

    /// Waits at most `timeout` for the leader to exit; see [`wait_deadline`](GroupChild::wait_deadline).
    ///
    /// A timeout too large to represent as an [`Instant`] (such as [`Duration::MAX`]) means no deadline.
    ///
    /// # Errors
    ///
    /// As for [`wait_deadline`](GroupChild::wait_deadline).
    pub fn wait_timeout(&mut self, timeout: Duration) -> io::Result<Outcome> {
        self.wait_until(Instant::now().checked_add(timeout))
    }

    /// Waits until the leader exits or `deadline` passes, and returns only after the group was dealt with.
    ///
    /// - The leader exits first: [`Outcome::Exited`], after the leftovers of its group were sent `SIGKILL` (see
    ///   [`set_kill_leftovers`](GroupChild::set_kill_leftovers)).
    /// - The deadline passes first: the group is stopped as [`set_grace`](GroupChild::set_grace) says, then sent
    ///   `SIGKILL`, the leader is reaped, and the result is [`Outcome::TimedOut`]. The wait does not return before
    ///   the deadline. It blocks until the killed leader can be reaped, which is at once unless it is stuck in
    ///   uninterruptible sleep, or traced by a process that does not run (a stopped `strace -p`: the tracer sees the
    ///   exit first, and this process can reap the leader only after it did).
    ///
    /// In between, the wait sleeps: on Linux until the leader exits (a pidfd), elsewhere on a poll schedule; see
    /// [How it waits](crate#how-it-waits).
    ///
    /// The clock is read before the leader is checked, so a leader found exited is reported as exited even when the
    /// check ran after the deadline. A deadline in the past still checks once. After the leader was reaped, every
    /// wait returns the same outcome again and signals nothing.
    ///
    /// # Errors
    ///
    /// As for [`try_wait`](GroupChild::try_wait); and an invalid grace signal, after which the group was killed and
    /// the leader reaped (a later wait returns the outcome). If the group kill at the deadline fails and the leader
    /// still runs (it switched to a user this process may not signal), the error returns at once without a reap,
    /// rather than waiting as long as the leader lives; a later wait, or the drop, tries again.
    pub fn wait_deadline(&mut self, deadline: Instant) -> io::Result<Outcome> {
        self.wait_until(Some(deadline))
    }

    /// Sends `SIGKILL` to the whole group, without reaping the leader (as [`std::process::Child::kill`]); a later
    /// wait reaps it. Does nothing once the leader was reaped.
    ///
    /// # Errors
    ///
    /// As for [`signal`](GroupChild::signal).
    pub fn kill(&mut self) -> io::Result<()> {
        self.signal(libc::SIGKILL)
    }

    /// Sends `signal` to every process in the group, and to the leader by its pid if it moved itself out of the
    /// group (every group signal of this crate does that, the deadline's and the drop's included). Once the leader
    /// was reaped, sends nothing and returns `Ok(())`: the group id may then name someone else's group.
    ///
    /// # Errors
    ///
    /// The signal number is invalid (`InvalidInput`), no member could be signalled for lack of permission
    /// (`PermissionDenied`), or the leader was reaped by someone else (see [`try_wait`](GroupChild::try_wait)).
    pub fn signal(&mut self, signal: i32) -> io::Result<()> {
        if self.outcome.is_some() {
            return Ok(());
        }
        // Refuses (ECHILD) if someone else reaped the leader: its id may name another group by now.
        self.leader_exited()?;
        self.signal_group(signal)
    }

    /// From this call on, if this process dies for any reason while the leader is unreaped (`SIGKILL`, the OOM
    /// killer, `panic = "abort"`, [`std::process::exit`], an unhandled signal), every process in the group is
    /// sent `SIGKILL`.
    ///
    /// It starts a guard process in the group: `/bin/sh`, spawned (through std's `posix_spawn` path) into the
    /// leader's group, that ignores every catchable signal and waits for end of file on a pipe whose write end only
    /// this process holds (close-on-exec). Like any child, it inherits the descriptors of this process that are not
    /// close-on-exec (std makes all of its own close-on-exec), so it keeps such a descriptor open as long as it runs,
    /// even after the command closed its copy. When this process dies the kernel closes that end, and the guard sends
    /// `SIGKILL` to its group, which its membership keeps from being reused. The call returns once the guard ignores
    /// signals, so a member's `kill 0`, or a grace signal, cannot disarm it; it cost +0.28 ms per command in
    /// `BENCHMARKS.md`'s run (row 8; more under load), most of it the shell's start. Calling it again does nothing.
    ///
    /// Whatever ends the group ends the guard too, before the leader is reaped: every wait and [`Drop`] send it
    /// `SIGKILL` and reap it, so no process, pipe or zombie is left behind. That reap waits at most about a second (a
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
    pub fn die_with_parent(&mut self) -> io::Result<()> {
        self.arrange_guard(Start::Shell)
    }

    /// [`die_with_parent`](GroupChild::die_with_parent) with the guard started by `how`.
    pub(crate) fn arrange_guard(&mut self, how: Start) -> io::Result<()> {
        if self.outcome.is_some() || self.guard.is_some() {
            return Ok(());
        }
        self.leader_exited()?;
        self.guard = Some(Guard::start(self.id(), how, self.job.cgroup_folder())?);
        Ok(())
    }

    /// A handle that signals the group from any thread, also while another thread waits for it (see
    /// [`GroupHandle`]). After the leader was reaped, the handle does nothing.
    pub fn handle(&self) -> GroupHandle {
        let reaped = self.reaped.get_or_init(|| Arc::new(Reaped::default()));
        if self.outcome.is_some() {
            *reaped.lock() = true;
        }
        GroupHandle::new(self.id(), Arc::clone(reaped), self.job.clone())
    }

    /// Ends the guard, then reaps the leader, with the handles locked out: none signals after the reap.
    fn reap(&mut self) -> io::Result<ExitStatus> {
        self.guard = None;
        let status = match self.reaped.get() {
            None => self.child.wait(),
            Some(reaped) => {
                let mut reaped = reaped.lock();
                let status = self.child.wait();
                *reaped = true;
                status
            }
        };
        // The pid may be reused from now on: nothing is left to watch.
        self.watch.close();
        status
    }

    /// Makes every handle do nothing from now on (the leader is not ours to signal any more).
    fn mark_reaped(&self) {
        if let Some(reaped) = self.reaped.get() {
            *reaped.lock() = true;
        }
    }

    fn wait_until(&mut self, deadline: Option<Instant>) -> io::Result<Outcome> {
        self.wait_until_with(deadline, ExitWatch::sleep)
    }

    /// [`wait_deadline`](GroupChild::wait_deadline) (no deadline for `None`), pausing between checks of the leader
    /// with `pause` (see [`wait_for_exit`](GroupChild::wait_for_exit)).
    pub(crate) fn wait_until_with(
        &mut self,
        deadline: Option<Instant>,
        mut pause: impl FnMut(&ExitWatch, Option<Duration>) -> io::Result<()>,
    ) -> io::Result<Outcome> {
        if let Some(outcome) = self.outcome {
            return Ok(outcome);
        }
        if self.wait_for_exit(deadline, &mut pause)? {
            return self.finish(false, self.kill_leftovers);
        }
        let mut sent = Ok(());
        if let Some((signal, grace)) = self.grace {
            sent = self.signal_group(signal);
            // A stopped member acts on nothing but SIGKILL until continued; but a stop signal must stay a stop.
            if sent.is_ok() && !is_stop_signal(signal) {
                sent = self.signal_group(libc::SIGCONT);
            }
            if sent.is_ok() {
                // A failed wait still ends in the kill and the reap below; its error is returned after them.
                sent = self
                    .wait_for_exit(Instant::now().checked_add(grace), &mut pause)
                    .map(drop);
            }
        }
        let outcome = self.finish(true, true)?;
        sent.map(|()| outcome)
    }

    /// Waits until the leader has exited (`true`) or `deadline` passes (`false`), without reaping or signalling;
    /// `pause` as for [`ExitWatch::wait_for`].
    fn wait_for_exit(
        &mut self,
        deadline: Option<Instant>,
        pause: impl FnMut(&ExitWatch, Option<Duration>) -> io::Result<()>,
    ) -> io::Result<bool> {
        let pid = self.id();
        self.watch.wait_for(deadline, || leader_exited(pid), pause)
    }

    fn leader_exited(&self) -> io::Result<bool> {
        leader_exited(self.id())
    }

    /// Signals the job's processes outside the group, then the group; the caller makes sure the leader is not
    /// reaped yet.
    fn signal_group(&mut self, signal: i32) -> io::Result<()> {
        self.watch.restart();
        let job = self.job.signal(self.id(), signal);
        self.take_reached();
        signal_group(self.id(), signal).and(job)
    }

    /// Moves what the job's kills reached into the leftovers, except the guard of `die_with_parent` (a member of the
    /// group that lineage kills find): it is ours, not something the job left behind.
    fn take_reached(&mut self) {
        self.job.take_reached(&mut self.leftovers);
        if let Some(pid) = self.guard_id() {
            self.leftovers.retain(|left| left.pid != pid);
        }
    }

    /// Kills the group if asked, then reaps the leader and records the outcome.
    ///
    /// A failed kill still reaps a leader that has exited (and then reports the error). A leader that is still
    /// running after a failed kill (it switched to a user we may not signal) is not waited for, since that could
    /// last as long as it runs: the error returns at once, and a later wait or the drop tries again.
    fn finish(&mut self, timed_out: bool, kill_group: bool) -> io::Result<Outcome> {
        let killed = if kill_group {
            self.signal_group(libc::SIGKILL)
        } else {
            Ok(())
        };
        match killed {
            Err(e) if !self.leader_exited()? => Err(e),
            killed => {
                self.take_reached();
                let status = self.reap()?;
                let outcome = if timed_out {
                    Outcome::TimedOut(status)
                } else {
                    Outcome::Exited(status)
                };
                self.outcome = Some(outcome);
                self.job.take_reached(&mut self.leftovers);
                let ended = self.job.end(!kill_group);
                killed.and(ended).map(|()| outcome)
            }
        }
    }
}

/// Whether our child `pid`, the leader of a group, has exited, without reaping it; an error that says so when it was
/// reaped by someone else.
fn leader_exited(pid: u32) -> io::Result<bool> {
    sys::has_exited(pid).map_err(|e| {
        if e.raw_os_error() == Some(libc::ECHILD) {
            io::Error::new(
                e.kind(),
                format!(
                    "the group leader (pid {pid}) was reaped by someone else (is SIGCHLD ignored, or does the \
                     program call waitpid(-1)?); its group was not signalled, since the id may be reused"
                ),
            )
        } else {
            e
        }
    })
}

/// Whether `signal` stops a process by default (`SIGSTOP`, `SIGTSTP`, `SIGTTIN`, `SIGTTOU`): never follow one with
/// `SIGCONT`, which would undo it.
pub(crate) fn is_stop_signal(signal: i32) -> bool {
    [libc::SIGSTOP, libc::SIGTSTP, libc::SIGTTIN, libc::SIGTTOU].contains(&signal)
}

/// Signals group `pgid` (and its leader by pid); the caller makes sure the leader is not reaped yet.
fn signal_group(pgid: u32, signal: i32) -> io::Result<()> {
    match sys::signal_group(pgid, signal) {
        // macOS answers EPERM for a group of zombies: once the leader has exited, that means "gone".
        Err(e) if e.raw_os_error() == Some(libc::EPERM) && leader_exited(pgid)? => Ok(()),
        other => other.map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot send signal {signal} to process group {pgid}: {e}"),
            )
        }),
    }
}

/// [`GroupChild::signal`] for a leader that this crate has not reaped yet (the caller makes sure of that): refuses
/// a leader reaped by someone else, then signals the group.
pub(crate) fn signal_unreaped_group(pgid: u32, signal: i32, job: &Job) -> io::Result<()> {
    leader_exited(pgid)?;
    let in_job = job.signal(pgid, signal);
    signal_group(pgid, signal).and(in_job)
}

/// Kills the group and reaps the leader, unless a wait already did.
///
/// Waits at most about a second for the killed leader to become reapable. A leader stuck in uninterruptible sleep
/// (a hung NFS read, say), or traced by a stopped tracer, may take longer: it then stays a zombie of this process after it dies, as with a
/// dropped [`std::process::Child`]. Nothing is signalled if the leader was reaped by someone else.
impl Drop for GroupChild {
    fn drop(&mut self) {
        if self.outcome.is_some() || self.leader_exited().is_err() {
            self.guard = None;
            self.mark_reaped();
            let _ = self.job.end(false);
            return;
        }
        let _ = self.signal_group(libc::SIGKILL);
        let reapable = self.wait_for_exit(
            Instant::now().checked_add(DROP_REAP_LIMIT),
            ExitWatch::sleep,
        );
        if matches!(reapable, Ok(true)) {
            let _ = self.reap();
        } else {
            self.guard = None;
            self.mark_reaped();
        }
        let _ = self.job.end(false);
    }
}
