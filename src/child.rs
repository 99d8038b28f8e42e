//! [`GroupChild`]: the one place a reader follows a wait from start to reap, the end-of-job sequence as a state
//! machine moved on by [`GroupChild::step`] — check the leader, at the deadline the grace signal and `SIGCONT`, the
//! grace period, `SIGKILL`, the reap under the handles' lock, the job's end — which the blocking waits drive (the
//! driver and the watch that says what a step sleeps on are in `wait.rs`). Its spawn, its `Debug` view and the drop
//! that does the same for a handle nobody waited for are in `child/life.rs`.

use std::io;
use std::process::{ChildStderr, ChildStdin, ChildStdout, ExitStatus};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crate::boundary::Job;
use crate::group::{is_stop_signal, leader_exited, signal_group};
use crate::handle::{GroupHandle, Reaped};
use crate::outcome::Outcome;
use crate::usage::Usage;
use crate::wait::{drive, ExitWatch, Step, Woke};

mod life;
#[cfg(feature = "capture")]
pub(crate) mod output;

/// A command running as the leader of its own process group; see
/// [`GroupCommandExt::spawn_group`](crate::GroupCommandExt::spawn_group).
///
/// Every wait returns only after the group was dealt with: at the deadline the whole group is killed and the
/// leader reaped; when the leader exits first, the rest of its group is killed (unless
/// [`set_kill_leftovers(false)`](GroupChild::set_kill_leftovers)). Dropping the handle without a wait kills the
/// group too, also when a panic unwinds; but with `panic = "abort"`, or when this process is killed, no drop runs
/// (see [`die_with_parent`][die-with-parent]).
///
/// # What is not reached
///
/// A group kill reaches the processes in the group when the signal is sent. A descendant that moved to another
/// group or session (`setsid`, `setpgid`, a double-forking daemon) is not reached; neither is a member this process
/// has no permission to signal (one that changed its user id). For the first,
/// [`spawn_contained`][spawn-contained] draws a boundary around the whole job (a cgroup of its own where one can be
/// made, see [`Contain`][contain-type]); against a process that may undo a boundary (one with this process's rights,
/// or root) only a container or another user helps.
///
/// [die-with-parent]: https://docs.rs/grouptimeout-job/latest/grouptimeout_job/trait.JobChildExt.html#tymethod.die_with_parent
/// [spawn-contained]: https://docs.rs/grouptimeout-job/latest/grouptimeout_job/trait.JobCommandExt.html#tymethod.spawn_contained
/// [contain-type]: https://docs.rs/grouptimeout-job/latest/grouptimeout_job/struct.Contain.html
#[must_use = "dropping a GroupChild kills its process group at once"]
pub struct GroupChild {
    /// The child's standard input, if it was piped.
    pub stdin: Option<ChildStdin>,
    /// The child's standard output, if it was piped.
    pub stdout: Option<ChildStdout>,
    /// The child's standard error, if it was piped.
    pub stderr: Option<ChildStderr>,
    /// The leader's pid (std's `Child` gave only that: the waits, the signals and the reap are this crate's).
    pid: u32,
    /// What the waits sleep on between checks of the leader (see `wait.rs`).
    watch: ExitWatch,
    /// Where a stepped wait stands in the end-of-job sequence.
    phase: Phase,
    grace: Option<(i32, Duration)>,
    kill_leftovers: bool,
    /// What a wait does once the leader exits on its own: end the job at once (`None`), or wait for the rest of it up
    /// to the deadline ([`set_wait_for_job`](GroupChild::set_wait_for_job): `Some(None)`) or up to a leak grace
    /// ([`set_leak_grace`](GroupChild::set_leak_grace): `Some(Some(grace))`). Then, once the leader has exited and the
    /// wait waits for the rest (the leader stays unreaped meanwhile: its id, the group's, stays ours): `Some` of the
    /// leak grace's end, or `Some(None)` where the deadline rules.
    #[allow(clippy::option_option, reason = "three cases each, documented here")]
    wait_for_job: Option<Option<Duration>>,
    #[allow(clippy::option_option, reason = "as above")]
    draining: Option<Option<Instant>>,
    /// What the capturing waits are told (see `capture/`).
    #[cfg(feature = "capture")]
    pub(crate) capture: output::Settings,
    /// Set once the leader was reaped; from then on its id is never signalled.
    outcome: Option<Outcome>,
    /// What the job used, set at the reap.
    usage: Option<Usage>,
    /// Shared with the [`GroupHandle`]s, made by the first call of [`handle`](GroupChild::handle).
    reaped: OnceLock<Arc<Reaped>>,
    /// The job's boundary beyond the group (`boundary.rs`: `grouptimeout-job`'s); nothing for a plain group.
    pub(crate) job: Job,
}

impl GroupChild {
    /// Reaps the leader if it has exited, without blocking.
    ///
    /// Returns `Ok(None)` while the leader runs, and, between the [`step`](GroupChild::step)s of a wait, while a
    /// leader that a step killed cannot be reaped yet (it never blocks). Once it has exited, the leftovers of its group are killed (see
    /// [`set_kill_leftovers`](GroupChild::set_kill_leftovers)), the leader is reaped and its status returned; later
    /// calls return the same status.
    ///
    /// # Errors
    ///
    /// The leader was reaped by someone else (the OS error `ECHILD`: `SIGCHLD` set to be ignored after the spawn,
    /// or a `waitpid(-1)` elsewhere in the program; the group is then never signalled), or a group kill failed
    /// (`EPERM`; the leader is reaped all the same, and later calls return its status). See
    /// [Errors](crate#errors).
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        if let Some(outcome) = self.outcome {
            return Ok(Some(outcome.status()));
        }
        // A leader found exited here is reaped at once; one that a step killed may not be reapable yet: no blocking.
        let running = matches!(self.phase, Phase::Running) && self.draining.is_none();
        if running {
            if !self.leader_exited()? {
                return Ok(None);
            }
            if self.wait_for_job.is_none() {
                self.end_group(false, self.kill_leftovers, None)?;
            }
        }
        Ok(match self.step_in(None, Woke(None, running))? {
            Step::Done(outcome) => Some(outcome.status()),
            Step::Pending(_) => None,
        })
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
    ///
    /// # Examples
    ///
    /// ```
    /// use std::process::Command;
    /// use std::time::Duration;
    /// use grouptimeout::GroupCommandExt;
    ///
    /// # fn main() -> std::io::Result<()> {
    /// // The leader exits in time; the `sleep` it left in its group is killed before the wait returns.
    /// let mut child = Command::new("sh").args(["-c", "sleep 30 & exit 3"]).spawn_group()?;
    /// let outcome = child.wait_timeout(Duration::from_secs(30))?;
    /// assert_eq!(outcome.to_string(), "exited with status 3");
    ///
    /// // The deadline passes first: the whole group is killed and the leader reaped.
    /// let mut child = Command::new("sleep").arg("30").spawn_group()?;
    /// let outcome = child.wait_timeout(Duration::from_millis(100))?;
    /// assert_eq!(outcome.to_string(), "timed out; killed by signal 9");
    /// # Ok(())
    /// # }
    /// ```
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
    /// [How it waits](crate#how-it-waits). The wait is [`step`](GroupChild::step)s with this deadline and a sleep
    /// between them: a wait after some steps goes on from where they left the sequence.
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

    /// The leader's exit as a descriptor (Linux): it becomes readable when the leader exits, so that an event loop
    /// can wait for many groups in one thread (`poll(2)`, `epoll`), then reap through [`try_wait`](GroupChild::try_wait).
    ///
    /// It is the pidfd the waits sleep on (close-on-exec, so no command inherits it), opened now if no wait opened
    /// it yet; the leader is unreaped then, so it names our child and no process that reused its pid (a contained job
    /// with a keeper, `grouptimeout-job`'s, watches the command instead: its pidfd names the command, held unreaped by
    /// the keeper, but in the instant in which the keeper, having reaped it, exits). It stays open,
    /// the same descriptor, until the leader is reaped (by any wait) or the handle dropped; the caller must not
    /// close it, and should stop polling it once `try_wait` returned the status. Opening it does not change how the
    /// waits behave.
    ///
    /// The promises hold as with any wait: once it is readable, `try_wait` kills the leftovers of the group (see
    /// [`set_kill_leftovers`](GroupChild::set_kill_leftovers)), reaps the leader and returns its status. The deadline
    /// is the caller's: when it passes, call [`kill`](GroupChild::kill), then [`wait`](GroupChild::wait) (which
    /// returns as soon as the killed leader can be reaped). A leader traced by another process (a debugger,
    /// `strace -p`) shows its exit to the tracer first: the descriptor is then readable while `try_wait` still
    /// returns `Ok(None)`, and stays readable. Take it out of the poll set then and call `try_wait` on a timer (every
    /// few milliseconds) until it returns the status.
    ///
    /// [`step`](GroupChild::step) does all of this for an event loop (the deadline, the grace, the kill, the reap,
    /// the traced leader), and lists this same descriptor in its [`Interest`](crate::Interest) where it has one;
    /// `examples/event_loop.rs` steps four jobs with one `poll(2)` in one thread.
    ///
    /// # Errors
    ///
    /// [`Unsupported`](io::ErrorKind::Unsupported) on systems other than Linux and in builds with
    /// `--cfg grouptimeout_portable` or `--cfg grouptimeout_no_pidfd` (the message says which); the error of
    /// `pidfd_open(2)` as it is where the kernel refuses one (`ENOSYS` before Linux 5.3, `EPERM` under some seccomp
    /// filters, `EMFILE`), with the waits unaffected (they fall back to their poll schedule). `ECHILD` when the
    /// leader was reaped by someone else, and [`InvalidInput`](io::ErrorKind::InvalidInput) once this handle reaped
    /// it (the descriptor is closed then).
    pub fn exit_fd(&mut self) -> io::Result<std::os::fd::BorrowedFd<'_>> {
        if self.outcome.is_some() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the leader was reaped: its exit descriptor is closed",
            ));
        }
        self.leader_exited()?;
        self.watch.exit_fd(self.job.watched(self.id()))
    }

    /// The leader's process id, which is also the id of its process group.
    ///
    /// For a job of `spawn_contained` in a cgroup or with its own reaper, the id of its keeper (see `Contain`), which is also the id of the
    /// command's process group, though the keeper is not in it; the command's own pid is `grouptimeout-job`'s
    /// `JobChildExt::command_id`. A signal sent to this pid reaches the command (the keeper passes it
    /// on), but for `SIGCONT` (it only wakes the keeper), and `SIGKILL` and `SIGSTOP`, which hit the keeper itself (a
    /// stopped keeper is continued by the next check of a wait or `try_wait`, see `Contain`): signal the job through
    /// this handle ([`signal`](GroupChild::signal)).
    #[must_use]
    pub fn id(&self) -> u32 {
        self.pid
    }

    /// Whether the leader was not reaped yet through this handle, so that its id still names our group.
    pub(crate) fn grace(&self) -> Option<(i32, Duration)> {
        self.grace
    }

    pub(crate) fn leader_unreaped(&self) -> bool {
        self.outcome.is_none()
    }

    /// At the deadline, send `signal` to the group (followed by `SIGCONT`, so that stopped members act on it), wait
    /// up to `grace` for the leader to exit, then send `SIGKILL` to the group and reap the leader.
    ///
    /// A stop signal (`SIGSTOP`, `SIGTSTP`, `SIGTTIN`, `SIGTTOU`) is not followed by `SIGCONT`: the group stays
    /// stopped for the grace period (a `SIGCONT` would undo the stop at once), and `SIGKILL` ends it, stopped or not.
    ///
    /// The default is no grace: `SIGKILL` at the deadline; a `signal` of 0 (which sends nothing) means that too,
    /// whatever `grace`. The leader's exit ends the grace period at once, and the
    /// members still running then are sent `SIGKILL`; so a wait with a grace period returns at most about `grace`
    /// after its deadline. An invalid `signal` is reported by the wait that hits the deadline, after the group was
    /// killed and the leader reaped.
    ///
    /// # When this process dies
    ///
    /// `grouptimeout-job`'s `die_with_parent` passes this plan on, so that the job follows it when this process dies
    /// (`SIGKILL` included): `signal` to the group (then `SIGCONT`, unless it stops), up to `grace`, then `SIGKILL` (to
    /// the whole job); without a grace, `SIGKILL` at once. Call it after this; calling it again passes on a grace set
    /// since. A guard of `die_with_parent` reads the plan from its pipe, and waits up to `grace` for the leader to
    /// exit. A job of `spawn_contained` with a keeper (its `Cgroup` and `Reaper` modes, guarded by the keeper from the
    /// spawn on) gets it from its keeper, to which `die_with_parent` sends the plan over the job's channel (the keeper
    /// keeps the last one and acts on it only once this process died), and which waits up to `grace` for the job to
    /// end (the command exited and nothing else of it is left).
    /// A `signal` of 0 or `SIGKILL`, or a zero `grace`, means `SIGKILL` at once. Not covered: a job whose guard or
    /// keeper was not told (no `die_with_parent` since the grace was set: the keeper's end is then `SIGKILL` at once),
    /// and a plan that a guard stopped with `SIGSTOP` could not take (its pipe full after thousands of calls: the
    /// guard keeps the last plan it read).
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

    /// Whether a wait, once the leader has exited on its own, waits for the rest of the job to exit on its own too,
    /// up to the deadline; at the deadline the job is ended as when the leader runs then (the
    /// [grace](GroupChild::set_grace) signal to the group, the grace period, which ends once the whole job is gone,
    /// then `SIGKILL`), and the outcome is [`Outcome::TimedOut`] with the leader's status. For jobs whose daemons
    /// must finish their work. The default is `false`. It sets what [`set_leak_grace`](GroupChild::set_leak_grace)
    /// sets (the wait for the rest of the job, bounded by the deadline here, by a grace there): the last call rules.
    ///
    /// While it waits, the leader stays unreaped (a zombie), so that the group's id cannot be given to another
    /// process; the rest of the job, once seen gone, is still sent `SIGKILL` (which reaches only what the check could
    /// not see), so [`set_kill_leftovers`](GroupChild::set_kill_leftovers) has no effect while this is on. Every
    /// driver honours it: the blocking waits, [`try_wait`](GroupChild::try_wait) (`Ok(None)` until the rest is gone),
    /// [`step`](GroupChild::step) (a `Pending` on what tells the job's end), the capturing waits.
    ///
    /// How the rest is seen: for a plain group, by a scan of `/proc` for a live member of the group (Linux; a
    /// process that left the group, `setsid` or `setpgid`, is not the group's and is not waited for; a zombie does
    /// not count), on the poll schedule of [How it waits](crate#how-it-waits) and never more often than 50 times
    /// the scan's own time apart (about 2 % of one CPU whatever `/proc` holds); elsewhere by `kill(-pgid, 0)`
    /// answering `ESRCH` or `EPERM` (a group of zombies). With `grouptimeout-job`'s `spawn_contained`, the whole
    /// job, however it daemonised: see its `Contain` docs. An event loop of the caller's own steps the wait
    /// ([`step`](GroupChild::step)) rather than polling [`exit_fd`](GroupChild::exit_fd), which stays readable from
    /// the leader's exit on.
    pub fn set_wait_for_job(&mut self, wait: bool) {
        self.wait_for_job = wait.then_some(None);
    }

    /// A leak grace, as a test runner gives one (nextest's `leak-timeout`): once the leader has exited on its own,
    /// what it left in its job gets up to `grace` to exit on its own too; what is still there then is sent `SIGKILL`,
    /// and the outcome stays [`Outcome::Exited`] (a deadline that passes meanwhile changes nothing: the leader was in
    /// time). The wait returns as soon as the rest is seen gone. A zero `grace` (the default) kills the leftovers at
    /// once, as [`set_kill_leftovers`](GroupChild::set_kill_leftovers) says; this call and
    /// [`set_wait_for_job`](GroupChild::set_wait_for_job) set the same thing (what a wait does after the leader's
    /// exit): the last call rules. A `grace` too large to represent as an [`Instant`] waits up to the deadline, as
    /// `set_wait_for_job(true)` does.
    ///
    /// It is that wait for the rest of the job, bounded by `grace` rather than by the deadline: the same drivers honour
    /// it, the rest is seen gone the same way (below), and the leftovers are killed after it whatever
    /// `set_kill_leftovers` says. A leader that exits after its deadline's grace signal gets no leak grace: the grace
    /// period's rules hold (its rest is killed at once). What it waits on is what the job's boundary sees: for a plain
    /// group, a live member of the group (a process that left it, `setsid` or `setpgid`, is neither waited for nor
    /// killed); with `grouptimeout-job`'s `spawn_contained`, every process of the job (a cgroup, the job's reaper) or
    /// those that carry its mark (lineage). What was killed, and whether it counts as leaked, `grouptimeout-job`'s
    /// `JobChildExt::leak_report` says.
    pub fn set_leak_grace(&mut self, grace: Duration) {
        self.wait_for_job = (!grace.is_zero()).then_some(Some(grace));
    }

    /// Sends `SIGKILL` to the whole group, without reaping the leader (as [`std::process::Child::kill`]); a later
    /// wait reaps it. Does nothing once the leader was reaped.
    ///
    /// # Errors
    ///
    /// As for [`signal`](GroupChild::signal).
    pub fn kill(&mut self) -> io::Result<()> {
        self.signal(crate::signal::SIGKILL)
    }

    /// Sends `signal` to every process in the group, and to the leader by its pid if it moved itself out of the
    /// group (every group signal of this crate does that, the deadline's and the drop's included). Once the leader
    /// was reaped, sends nothing and returns `Ok(())`: the group id may then name someone else's group.
    ///
    /// # Errors
    ///
    /// The OS error of `kill(2)` or `waitid(2)` as it is (see [Errors](crate#errors)): `EINVAL` for an invalid
    /// signal number (`InvalidInput`), `EPERM` when no member could be signalled for lack of permission
    /// (`PermissionDenied`), `ECHILD` when the leader was reaped by someone else (see
    /// [`try_wait`](GroupChild::try_wait)).
    pub fn signal(&mut self, signal: i32) -> io::Result<()> {
        if self.outcome.is_some() {
            return Ok(());
        }
        // Refuses (ECHILD) if someone else reaped the leader: its id may name another group by now.
        self.signal_group(signal)
    }

    /// A handle that signals the group from any thread, also while another thread waits for it (see
    /// [`GroupHandle`]). After the leader was reaped, the handle does nothing.
    ///
    /// # Examples
    ///
    /// Cancel a wait from another thread:
    ///
    /// ```
    /// use std::process::Command;
    /// use std::thread;
    /// use std::time::Duration;
    /// use grouptimeout::GroupCommandExt;
    ///
    /// # fn main() -> std::io::Result<()> {
    /// let mut child = Command::new("sleep").arg("30").spawn_group()?;
    /// let handle = child.handle();
    /// let canceller = thread::spawn(move || handle.kill());
    /// // The wait notices the leader's death as an exit, and returns long before its deadline.
    /// let outcome = child.wait_timeout(Duration::from_secs(30))?;
    /// canceller.join().expect("the canceller panicked")?;
    /// assert_eq!(outcome.to_string(), "killed by signal 9");
    /// # Ok(())
    /// # }
    /// ```
    #[must_use]
    pub fn handle(&self) -> GroupHandle {
        let reaped = self.reaped.get_or_init(|| Arc::new(Reaped::default()));
        if self.outcome.is_some() {
            *reaped.lock() = true;
        }
        GroupHandle::new(self.id(), Arc::clone(reaped), self.job.clone())
    }

    /// What the job used (see [`Usage`]): `Some` once a wait (any of them, [`step`](GroupChild::step) and the
    /// capturing waits included) reaped the leader, `None` before.
    ///
    /// For a plain group, the leader's resource usage at its reap ([`Measured::Leader`](crate::Measured::Leader):
    /// partial); a contained job of `grouptimeout-job` says what its boundary measured.
    #[must_use]
    pub fn usage(&self) -> Option<Usage> {
        self.usage
    }

    /// Reaps the leader (`judge` first tells a kept job's keeper to end the job, `kill`, or to keep what it left),
    /// with the handles locked out: none signals after the reap. The guard is ended by the caller, after the job's
    /// end.
    fn reap(&mut self, kill: bool) -> io::Result<ExitStatus> {
        self.job.judge(self.id(), kill);
        // `wait4`, the call std's `Child::wait` makes, with the resource usage.
        let reaped = match self.reaped.get() {
            None => crate::sys::reap(self.id()),
            Some(reaped) => {
                let mut reaped = reaped.lock();
                let status = crate::sys::reap(self.id());
                *reaped = true;
                status
            }
        };
        // The pid may be reused from now on: nothing is left to watch.
        self.watch.close();
        let (status, usage) = reaped?;
        self.usage = Some(usage);
        Ok(status)
    }

    /// Makes every handle do nothing from now on (the leader is not ours to signal any more).
    fn mark_reaped(&self) {
        if let Some(reaped) = self.reaped.get() {
            *reaped.lock() = true;
        }
    }

    /// [`wait_deadline`](GroupChild::wait_deadline) (no deadline for `None`): the steps, driven by the blocking
    /// driver.
    fn wait_until(&mut self, deadline: Option<Instant>) -> io::Result<Outcome> {
        drive(|woke| self.step_in(deadline, woke))
    }

    /// One non-blocking step of [`wait_deadline`](GroupChild::wait_deadline) (`None`: no deadline), for a loop of
    /// the caller's own: `Done` with the outcome once the wait is over, else `Pending` with what to wait on before
    /// the next step.
    ///
    /// Each step moves the wait on by one state of the same sequence the blocking waits follow (they are this step
    /// and a sleep in `ppoll` on its [`Interest`](crate::Interest)): it reads the clock, checks the leader, compares
    /// with the deadline; when the leader has exited, it kills the leftovers of its group (see
    /// [`set_kill_leftovers`](GroupChild::set_kill_leftovers)); at the deadline it sends the
    /// [grace](GroupChild::set_grace) signal and `SIGCONT` (unless the signal stops), and a later step, when the
    /// leader exited or the grace period ended, `SIGKILL` to the group; then the leader is reaped (under the lock
    /// of the [`GroupHandle`]s) and the job ended. It never blocks: a killed leader that cannot be reaped yet (in
    /// uninterruptible sleep, or traced) makes a `Pending` on its exit descriptor or on the poll schedule.
    ///
    /// - The deadline may differ from one call to the next: each step compares with the one it is given, until the
    ///   sequence started at a deadline (then the grace period's end rules). A blocking wait after some steps
    ///   continues from where they left.
    /// - Once `Done`, every later call returns the same outcome, as the waits do.
    /// - On `Pending`, sleep until a descriptor of [`Interest::readable`](crate::Interest::readable) is readable
    ///   (or hung up), [`writable`](crate::Interest::writable) is writable, or [`until`](crate::Interest::until)
    ///   passes, whichever comes first; then step again. Stepping earlier is harmless (it costs a check of the
    ///   leader). The descriptors are the child's (its pidfd, Linux): never close them; stop watching one that a step
    ///   no longer lists, and all of them once `Done` or after an `Err`. [`Interest`](crate::Interest) says what a
    ///   driver may rely on and what it does (registrations, duplicates of its own, yields).
    ///   Without a pidfd (other systems, `--cfg grouptimeout_no_pidfd`, a kernel that refuses one, a traced leader)
    ///   the interest is an instant alone, on the poll schedule of [How it waits](crate#how-it-waits); its first
    ///   `Pending` asks for an instant that has already come (a yield).
    /// - [`try_wait`](GroupChild::try_wait) and [`exit_fd`](GroupChild::exit_fd) keep working beside the steps
    ///   (`try_wait` opens no pidfd, asks for no yield, and never blocks).
    /// - The blocking waits, the capturing waits (through `Capture`), `grouptimeout-set` and
    ///   `grouptimeout-tokio` are drivers of these steps; a loop of the caller's own is one more.
    ///
    /// # Errors
    ///
    /// As for [`wait_deadline`](GroupChild::wait_deadline), at the step that met them; after an error the next step
    /// goes on from where the wait stood (an error of the kill at the deadline, with the leader still running,
    /// starts the sequence over at the next step, as a later wait does). An `Err` names nothing to sleep on: a step
    /// made again at once meets the same error at once (say `EPERM`, the leader now another user's), so a driver that
    /// retries pauses first, or gives up and drops the child (whose drop kills and reaps, bounded).
    ///
    /// # Examples
    ///
    /// A loop of its own with `poll(2)` (`examples/event_loop.rs` drives four jobs, one captured, with one `poll`):
    ///
    /// ```
    /// use std::process::Command;
    /// use std::time::{Duration, Instant};
    /// use grouptimeout::{GroupCommandExt, Step};
    ///
    /// # fn main() -> std::io::Result<()> {
    /// let mut child = Command::new("sleep").arg("30").spawn_group()?;
    /// let deadline = Instant::now() + Duration::from_millis(100);
    /// let outcome = loop {
    ///     match child.step(Some(deadline))? {
    ///         Step::Done(outcome) => break outcome,
    ///         Step::Pending(interest) => {
    ///             // A plain wait lists descriptors to read only; a capture's stdin is `interest.writable()`.
    ///             let mut fds: Vec<libc::pollfd> = interest
    ///                 .readable()
    ///                 .map(|fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 })
    ///                 .collect();
    ///             // No limit (-1) when only a descriptor can wake it; rounded up to whole milliseconds.
    ///             let ms = interest.until().map_or(-1, |until| {
    ///                 let left = until.saturating_duration_since(Instant::now());
    ///                 i32::try_from(left.as_micros().div_ceil(1000)).unwrap_or(i32::MAX)
    ///             });
    ///             if ms == 0 {
    ///                 std::thread::yield_now(); // an instant that has come: let the child run
    ///             }
    ///             // SAFETY: `fds` holds `fds.len()` initialised entries; an error (EINTR) just means: step again.
    ///             unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
    ///         }
    ///     }
    /// };
    /// assert!(outcome.timed_out());
    /// # Ok(())
    /// # }
    /// ```
    pub fn step(&mut self, deadline: Option<Instant>) -> io::Result<Step<Outcome>> {
        self.step_in(deadline, Woke::default())
    }

    /// [`step`](GroupChild::step), told what the driver saw while it slept (see [`Woke`]).
    pub(crate) fn step_in(
        &mut self,
        until: Option<Instant>,
        woke: Woke,
    ) -> io::Result<Step<Outcome>> {
        loop {
            if let Some(outcome) = self.outcome {
                return Ok(Step::Done(outcome));
            }
            let (until, in_grace) = match self.phase {
                Phase::Running => (self.draining.flatten().or(until), false),
                Phase::Grace(end) => (end, true),
                Phase::Reaping { .. } => return self.reap_step(woke),
            };
            let (pid, job) = (self.id(), &self.job);
            // Waiting for the rest of the job (up to a leak grace's end, if `leak`); what to wait for after an exit
            // (a leader that exits in a grace period gets no leak grace: its rest is killed at once).
            let draining = self.draining.is_some();
            let leak = matches!(self.draining, Some(Some(_)));
            let drain = self.wait_for_job.filter(|g| g.is_none() || !in_grace);
            let kill = in_grace || self.kill_leftovers || draining;
            let step = if draining {
                self.watch.rest_step(until, || job.rest_exited(pid))
            } else {
                self.watch.step(until, woke, || job.exited(pid))
            };
            match step {
                Ok(Step::Pending(interest)) => return Ok(Step::Pending(interest)),
                // The leader exited and the rest of the job is waited for: until the deadline or the grace period's
                // end, or the leak grace's.
                Ok(Step::Done(true)) if !draining && drain.is_some() => {
                    self.draining = drain.map(|g| g.and_then(|g| Instant::now().checked_add(g)));
                    self.watch.restart();
                }
                // The deadline passed with the leader (or the rest of the job, waited for) running: the sequence starts.
                Ok(Step::Done(false)) if !in_grace && !leak => self.start_sequence()?,
                // The leader exited on its own, after a grace signal, or the grace period or the leak grace is over:
                // the group's end.
                Ok(Step::Done(_)) => self.end_group(in_grace, kill, None)?,
                // A failed check still ends a grace period (or the wait for the rest of the job) in the kill and the
                // reap; its error comes after them.
                Err(e) if in_grace || draining => self.end_group(in_grace, true, Some(e))?,
                Err(e) => return Err(e),
            }
        }
    }

    /// The deadline passed with the leader running: the grace signal and `SIGCONT`, then the grace period; without
    /// a grace (or when its signal failed), the group's end at once.
    fn start_sequence(&mut self) -> io::Result<()> {
        // A grace signal of 0 sends nothing: as without a grace (and as `die_with_parent`'s plan reads it).
        let Some((signal, grace)) = self.grace.filter(|&(signal, _)| signal != 0) else {
            return self.end_group(true, true, None);
        };
        let mut sent = self.signal_group(signal);
        // A stopped member acts on nothing but SIGKILL until continued; but a stop signal must stay a stop.
        if sent.is_ok() && !is_stop_signal(signal) {
            sent = self.signal_group(crate::signal::SIGCONT);
        }
        if let Err(e) = sent {
            return self.end_group(true, true, Some(e));
        }
        self.phase = Phase::Grace(Instant::now().checked_add(grace));
        Ok(())
    }

    /// Kills the group if asked (`SIGKILL`; `late`: at the end of the sequence, the outcome is `TimedOut`), then
    /// tells a kept job's keeper what to do and goes on to the reap;
    /// `sent` is an earlier error of the sequence, returned after the reap.
    ///
    /// A failed kill still reaps a leader that has exited (and then reports the error). A leader that is still
    /// running after a failed kill (it switched to a user we may not signal) is not waited for, since that could
    /// last as long as it runs: the error returns at once, and the wait starts over at the next step or wait (or the
    /// drop tries again).
    fn end_group(&mut self, late: bool, kill: bool, sent: Option<io::Error>) -> io::Result<()> {
        let killed = kill
            .then(|| self.signal_group(crate::signal::SIGKILL).err())
            .flatten();
        match killed {
            Some(e) if !self.job.exited_checked(self.id())? => {
                self.phase = Phase::Running;
                Err(e)
            }
            killed => {
                // A kept job's command has exited (its descriptor stays readable): the reap waits for the keeper.
                self.watch
                    .watch_leader(self.id(), self.job.watched(self.id()));
                self.phase = Phase::Reaping(late, kill, killed, sent);
                self.job.take_reached();
                self.job.judge(self.id(), kill);
                Ok(())
            }
        }
    }

    /// The reap, once the group was dealt with: at once when the leader can be reaped (our own check), else
    /// `Pending` on its exit (the blocking driver blocks in the reap instead, as a blocking wait does). Then the
    /// outcome, the job's end, and the first error of the kill, the job's end and the sequence, in that order.
    fn reap_step(&mut self, woke: Woke<'_>) -> io::Result<Step<Outcome>> {
        if !woke.1 {
            let pid = self.id();
            if let Step::Pending(interest) = self.watch.step(None, woke, || leader_exited(pid))? {
                return Ok(Step::Pending(interest));
            }
        }
        let Phase::Reaping(timed_out, kill, killed, sent) = std::mem::take(&mut self.phase) else {
            unreachable!("reap_step runs in the phase Reaping");
        };
        // A failed reap (someone else reaped the leader) leaves the phase `Running`: the next step's check fails too.
        let status = self.reap(kill)?;
        let outcome = if timed_out {
            Outcome::TimedOut(status)
        } else {
            Outcome::Exited(status)
        };
        self.outcome = Some(outcome);
        // The boundary's measure of the whole job, while it still holds what it measured with.
        if let Some(usage) = &mut self.usage {
            self.job.usage(usage);
        }
        self.job.take_reached();
        // Also drops a guard: only now, for until the job's cgroup is gone, this process's death still ends it and
        // removes it.
        let ended = self.job.end(!kill);
        killed
            .or(ended.err())
            .or(sent)
            .map_or(Ok(Step::Done(outcome)), Err)
    }

    /// Whether no end-of-job sequence has started (a capture records whether its idle time would start it).
    #[cfg(feature = "capture")]
    pub(crate) fn running(&self) -> bool {
        matches!(self.phase, Phase::Running)
    }

    /// Whether the leader (for a kept job: the command) has exited, not reaped; `ECHILD` as for `has_exited`. The
    /// wait's check, which the boundary answers; the check before a signal is always our own (`Job::signal`).
    pub(crate) fn leader_exited(&self) -> io::Result<bool> {
        self.job.exited(self.id())
    }

    /// Signals the group first (or at once with the whole job), then the job's processes outside it (see
    /// [`Job::signal`]); the caller makes sure that this handle has not reaped the leader, and the signal refuses
    /// (`ECHILD`) one that someone else reaped.
    fn signal_group(&mut self, signal: i32) -> io::Result<()> {
        self.watch.restart();
        let pid = self.id();
        let job = &self.job;
        let sent = job.signal(pid, signal, || signal_group(pid, signal, job));
        self.job.take_reached();
        sent
    }
}

/// Where a stepped wait stands in the end-of-job sequence (see [`GroupChild::step`]).
#[derive(Debug, Default)]
enum Phase {
    /// Waiting for the leader's exit or the deadline.
    #[default]
    Running,
    /// The grace signal was sent at the deadline; the grace period ends at this instant (`None`: too far to tell).
    Grace(Option<Instant>),
    /// The group was dealt with and the keeper told: the leader is reaped as soon as it can be. Whether the wait
    /// timed out, whether the group was killed, the kill's error, and an earlier error of the sequence.
    Reaping(bool, bool, Option<io::Error>, Option<io::Error>),
}
