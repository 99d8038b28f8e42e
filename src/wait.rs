//! How a wait sleeps between two steps: the stepped wait's public [`Interest`] and [`Step`], what a step of a wait
//! for an exit asks to sleep on ([`ExitWatch`]), and the one blocking driver of every step ([`drive`]).
//!
//! On Linux (5.3 and later) a pidfd of the leader becomes readable when the leader exits: a wait sleeps in `ppoll` on
//! it until the deadline, or indefinitely, and wakes at the exit. The pidfd is opened by the first step that has to
//! sleep after one yield of the CPU (a short command that shares this CPU ends during it, and its wait needs no
//! pidfd at all: opening and closing one costs about a fifth of a spawn's CPU). It is opened while the leader is
//! unreaped, so the pid names our child, and closed at the reap. Where no pidfd can be had (an older kernel, a
//! seccomp filter, no descriptor left, another Unix, or the `grouptimeout_no_pidfd` or `grouptimeout_portable`
//! cfg) the steps follow [`poll_step`].

use std::io;
use std::os::fd::{AsFd as _, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::thread;
use std::time::{Duration, Instant};

/// What a stepped wait needs before its next step: the descriptors to wait on and the instant to wake at; see
/// [`GroupChild::step`](crate::GroupChild::step).
///
/// A driver sleeps until one of [`readable`](Interest::readable) is readable (or has hung up, or an error), the
/// [`writable`](Interest::writable) one is writable, or [`until`](Interest::until) passes, whichever comes first,
/// then steps again. Waking earlier is always allowed: a step when nothing happened costs one check of the leader.
/// Sleeping longer than asked is not: it delays a deadline, a grace period's end, or the poll schedule's next check.
///
/// # What a driver may rely on, and what it does
///
/// - **The descriptors are the child's** (its pidfd, a capture's pipes): a driver never reads, writes or closes them.
/// - **A listed number names the same file until a step stops listing it.** A step may close a descriptor it listed
///   before (a capture's standard input after its last byte, the pidfd at the reap, any of them in a step that
///   returns `Err`), but it never opens a descriptor it keeps after it closed one, so a number listed by two
///   consecutive steps, in the same direction or not, names the same file in both. (A capture keeps an output pipe
///   at end of file open, unlisted, until it is done or dropped.)
/// - **Watch what the last `Pending` lists, by number and direction.** With `poll(2)`, pass the listed descriptors
///   at each sleep. With registrations (`epoll`, a reactor), right after each step deregister what it no longer
///   lists, register what is new and keep the rest; after `Done` or `Err` drop every registration of the job (an
///   `Err` may have closed any descriptor; a `Capture` stepped again after an `Err` lists what it has then).
/// - **Register a duplicate of your own** (`F_DUPFD_CLOEXEC`), not the listed number: an `epoll` registration lives
///   as long as the open file, not the descriptor, and the file outlives the child's close while another process
///   holds a copy of it (a child this process forked without exec holds a copy of every descriptor). The
///   registration then stays, an `EPOLL_CTL_DEL` by the closed number fails (`EBADF`, `ENOENT`) without removing it,
///   and the closed pidfd or pipe, ready for ever, wakes every sleep until the copy is closed (or reports under a
///   number that names another file by then): a failed deregistration never means "deregistered". Deregister and
///   close the duplicate right after the step that stops listing its number: a kept copy holds the file open (a copy
///   of a capture's standard input keeps the command from seeing end of file).
/// - **Step what is due.** A step without news from its driver polls the descriptors it listed last itself (without
///   waiting) where it needs to know: stepping every job at every wake-up is correct, stepping only those whose
///   descriptor was ready or whose instant came is cheaper.
/// - **Yield for an instant that has come.** The first `Pending` of a wait is usually `until` = now and no descriptor
///   (one yield, so that a short command on this CPU ends meanwhile; the next step opens the pidfd), and without a
///   pidfd so is every `Pending` of the leader's first millisecond and of the millisecond after each signal to the
///   group: a driver that can yield the CPU (`std::thread::yield_now`, `tokio::task::yield_now`) should, rather than
///   spin in `poll` with a zero timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interest {
    read: [RawFd; 3],
    reads: usize,
    write: Option<RawFd>,
    until: Option<Instant>,
}

impl Interest {
    /// An interest in nothing but the instant `until` (`None`: no instant).
    pub(crate) fn until_at(until: Option<Instant>) -> Interest {
        Interest {
            read: [-1; 3],
            reads: 0,
            write: None,
            until,
        }
    }

    /// Adds `fd` to the descriptors to wait on for readability (at most 3).
    pub(crate) fn and_read(mut self, fd: RawFd) -> Interest {
        self.read[self.reads] = fd;
        self.reads += 1;
        self
    }

    /// Sets the descriptor to wait on for writability.
    #[cfg(feature = "capture")]
    pub(crate) fn and_write(mut self, fd: Option<RawFd>) -> Interest {
        self.write = fd;
        self
    }

    /// Wakes at `until` at the latest (the earlier of it and the instant already set).
    pub(crate) fn no_later_than(mut self, until: Option<Instant>) -> Interest {
        self.until = match (self.until, until) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self
    }

    /// The descriptors to watch for readability (`POLLIN`, `EPOLLIN`; a hang-up or an error counts as readiness too):
    /// the leader's exit descriptor (a pidfd, Linux) while the step waits for the leader's exit, or the job's
    /// (`grouptimeout-job`'s, for a contained job) while it waits for the rest of the job
    /// ([`set_wait_for_job`](crate::GroupChild::set_wait_for_job),
    /// [`set_leak_grace`](crate::GroupChild::set_leak_grace)), and while capturing the output pipes not yet at
    /// end of file. At most 3.
    ///
    /// Each descriptor belongs to the child: it stays open and names the same file while consecutive steps list it,
    /// until the wait is done or the child (or its capture, `Capture`) is dropped. A driver never closes one, and
    /// stops watching it once a step no longer lists it. The step that stops listing a descriptor may have closed it
    /// already (a capture's standard input after its last byte, the exit descriptor at the reap, any of them in a
    /// step that returns an error); but a step never opens a descriptor it keeps after it closed one (a capture's
    /// step writes its input after the child's step, which may open the exit descriptor), so a number that a step
    /// lists names the file that the last step listed under it, if any. With `epoll` (or any API that holds a
    /// registration between sleeps), register a duplicate of your own of each, never the listed number: see
    /// [`Interest`], "What a driver may rely on, and what it does".
    pub fn readable(&self) -> impl Iterator<Item = RawFd> + '_ {
        self.read[..self.reads].iter().copied()
    }

    /// The descriptor to watch for writability (`POLLOUT`): a capture's standard input while
    /// input (`set_input`) is left to write; owned by the child, as the readable ones.
    #[must_use]
    pub fn writable(&self) -> Option<RawFd> {
        self.write
    }

    /// Step again at this instant at the latest: a deadline, the end of a grace period or of a capture's drain, or
    /// the poll schedule's next check where no descriptor tells the leader's exit (the first step that waits asks
    /// for one yield: an instant at or before now, so a short command that shares the CPU can end). `None`: only
    /// when a descriptor is ready. An instant at or before now means "step again at once" (a driver that can yield
    /// the CPU before it does lets a child on the same CPU run).
    #[must_use]
    pub fn until(&self) -> Option<Instant> {
        self.until
    }
}

/// The result of one step of a stepped wait ([`GroupChild::step`](crate::GroupChild::step),
/// and, with the `capture` feature, `Capture::step`).
#[derive(Debug)]
pub enum Step<T> {
    /// The wait is over, and every promise of the blocking wait holds: the group was dealt with, the leader reaped,
    /// the job ended.
    Done(T),
    /// Not over: sleep as the [`Interest`] says (or less), then step again.
    Pending(Interest),
}

/// What the driver saw while it slept before a step: the `poll` entries of the last [`Interest`] with their events
/// (the blocking driver knows them); or nothing (a caller's own driver), and then a step that needs to know polls
/// the descriptor itself, without waiting. Then whether the step may block in the reap of a leader that was killed
/// (the blocking driver's way, which costs no extra check).
#[derive(Clone, Copy, Default)]
pub(crate) struct Woke<'a>(pub(crate) Option<&'a [libc::pollfd]>, pub(crate) bool);

impl Woke<'_> {
    /// Whether `fd` is ready (any event: readable, writable, hung up).
    pub(crate) fn ready(&self, fd: RawFd) -> bool {
        if let Some(fds) = self.0 {
            return fds.iter().any(|p| p.fd == fd && p.revents != 0);
        }
        let mut fds = [pollfd(fd, libc::POLLIN)];
        crate::sys::poll(&mut fds, Duration::ZERO).is_ok_and(|n| n > 0)
    }
}

/// A `poll` entry for `fd` and `events`.
pub(crate) fn pollfd(fd: RawFd, events: libc::c_short) -> libc::pollfd {
    libc::pollfd {
        fd,
        events,
        revents: 0,
    }
}

/// Fills `fds` with the descriptors of `interest` (readable first, then the writable one); returns how many.
pub(crate) fn poll_set(interest: &Interest, fds: &mut [libc::pollfd; 4]) -> usize {
    let mut n = 0;
    for fd in interest.readable() {
        fds[n] = pollfd(fd, libc::POLLIN);
        n += 1;
    }
    if let Some(fd) = interest.writable() {
        fds[n] = pollfd(fd, libc::POLLOUT);
        n += 1;
    }
    n
}

/// The blocking driver of every wait: steps, then sleeps in `ppoll` on the [`Interest`]'s descriptors until its
/// instant (an instant already past: a zero-timeout `poll` of them, if any, and one yield of the CPU; no
/// descriptor: a plain sleep), then steps again with what the sleep saw, until a step is done.
pub(crate) fn drive<T>(mut step: impl FnMut(Woke<'_>) -> io::Result<Step<T>>) -> io::Result<T> {
    let mut fds = [pollfd(-1, 0); 4];
    let mut seen = None;
    loop {
        let interest = match step(Woke(seen.map(|n| &fds[..n]), true))? {
            Step::Done(done) => return Ok(done),
            Step::Pending(interest) => interest,
        };
        let n = poll_set(&interest, &mut fds);
        let left = interest
            .until
            .map(|until| until.saturating_duration_since(Instant::now()));
        // An instant already past with no descriptor: a yield alone (no `poll` with nothing to poll).
        if n > 0 || left != Some(Duration::ZERO) {
            crate::sys::poll(&mut fds[..n], left.unwrap_or(Duration::MAX))?;
        }
        if left == Some(Duration::ZERO) {
            thread::yield_now();
        }
        seen = Some(n);
    }
}

/// What a step of a wait for an exit asks to sleep on: the leader's pidfd if there is one, else the poll schedule.
#[derive(Debug)]
pub(crate) struct ExitWatch {
    /// The leader's pid, until a pidfd was opened for it or could not be (or the leader was reaped).
    pid: Option<u32>,
    /// Whether the one yield before the pidfd is opened was taken.
    yielded: bool,
    /// Readable once the leader exited; closed at the reap (or by the drop of the handle).
    pidfd: Option<OwnedFd>,
    /// Where the poll schedule counts from: the spawn, or the last signal sent to the group (after which the
    /// leader's exit is likely soon, whatever its age).
    since: Instant,
    /// The last step found the pidfd readable and the leader still running.
    fired: bool,
    /// The pidfd turned readable twice while the leader could not be waited for (its tracer was told first): the
    /// steps follow the schedule, and the pidfd stays open for [`exit_fd`](Self::exit_fd) until the reap.
    traced: bool,
}

impl ExitWatch {
    /// Watches our unreaped child `pid`, with a pidfd opened when a wait first has to sleep, where one can be opened
    /// (silently without one otherwise); or, given `pidfd` (opened by whoever could open it race-free: a kept job's
    /// spawn, for its command, which is not our child), through it (`None` with no `pid`: the poll schedule alone).
    pub(crate) fn new(pid: Option<u32>, pidfd: Option<OwnedFd>) -> ExitWatch {
        ExitWatch {
            pid,
            yielded: pid.is_none(),
            pidfd,
            since: Instant::now(),
            fired: false,
            traced: false,
        }
    }

    /// For a kept job (`watched`, the command, is not the `leader`): from now on watches the leader, our unreaped
    /// child (the keeper, whose exit ends the reap), its pidfd opened before the old one is closed, so that no
    /// descriptor number a step listed names another file within the step.
    pub(crate) fn watch_leader(&mut self, leader: u32, watched: u32) {
        if watched != leader {
            *self = ExitWatch::new(None, open_pidfd(leader).ok());
        }
    }

    /// Waits until `exited` says the process has exited (`true`) or `deadline` passes (`false`; `None`: no
    /// deadline), without reaping or signalling: [`step`](Self::step) driven by the one blocking driver.
    pub(crate) fn wait_exit(
        &mut self,
        deadline: Option<Instant>,
        mut exited: impl FnMut() -> io::Result<bool>,
    ) -> io::Result<bool> {
        drive(|woke| self.step(deadline, woke, &mut exited))
    }

    /// One step of a wait for the exit: reads the clock, then checks with `exited`, then compares with `until`
    /// (deadline order): `Done(true)` when the process has exited, `Done(false)` when `until` has passed, else
    /// what to sleep on (see [`interest`](Self::interest)).
    pub(crate) fn step(
        &mut self,
        until: Option<Instant>,
        woke: Woke<'_>,
        exited: impl FnOnce() -> io::Result<bool>,
    ) -> io::Result<Step<bool>> {
        let now = Instant::now();
        if exited()? {
            return Ok(Step::Done(true));
        }
        if until.is_some_and(|until| until <= now) {
            return Ok(Step::Done(false));
        }
        Ok(Step::Pending(self.interest(now, until, woke)))
    }

    /// One step of the wait for the rest of a job whose leader has exited: reads the clock, then `rest` (whether
    /// the rest is gone, and a descriptor that turns readable when that may have changed), then compares with
    /// `until`, as [`step`](Self::step) does. Without a descriptor, the next check follows the poll schedule (from
    /// the last [`restart`](Self::restart)), and comes no sooner than 50 times the check's own time (a scan of
    /// `/proc` costs what it holds: at most about 2 % of a CPU). With one, the next check comes at the latest
    /// [`REST_RECHECK`] later: a descriptor is never the only wake-up (its notice may never come: a keeper stopped
    /// after the check, `kill -STOP`, does not exit until a check continues it).
    pub(crate) fn rest_step(
        &mut self,
        until: Option<Instant>,
        rest: impl FnOnce() -> io::Result<(bool, Option<RawFd>)>,
    ) -> io::Result<Step<bool>> {
        let now = Instant::now();
        let (gone, fd) = rest()?;
        if gone {
            return Ok(Step::Done(true));
        }
        if until.is_some_and(|until| until <= now) {
            return Ok(Step::Done(false));
        }
        let scan = poll_step(now.saturating_duration_since(self.since)).max(now.elapsed() * 50);
        let step = if fd.is_some() { REST_RECHECK } else { scan };
        let interest = Interest::until_at(now.checked_add(step)).no_later_than(until);
        Ok(Step::Pending(
            fd.map_or(interest, |fd| interest.and_read(fd)),
        ))
    }

    /// The leader's pidfd for the caller's own event loop, opened now if no step opened it yet (the caller has just
    /// found `pid`, the leader, unreaped); open until [`close`](Self::close). The error of `pidfd_open` as it is, or
    /// `Unsupported` where this build has no pidfds.
    pub(crate) fn exit_fd(&mut self, pid: u32) -> io::Result<BorrowedFd<'_>> {
        let fd = match self.pidfd.take() {
            Some(fd) => fd,
            None => open_pidfd(pid)?,
        };
        self.pid = None;
        let fd: &OwnedFd = self.pidfd.insert(fd);
        Ok(fd.as_fd())
    }

    /// The group was just signalled: the poll schedule starts over, since the leader's exit is likely soon.
    pub(crate) fn restart(&mut self) {
        self.since = Instant::now();
    }

    /// Closes the pidfd (the leader was reaped); later steps follow the schedule.
    pub(crate) fn close(&mut self) {
        self.pid = None;
        self.pidfd = None;
    }

    /// What to sleep on after a check at `now` that found the leader running, with `until` the deadline (`None`:
    /// none): the pidfd until `until`, since the sleep ends at the exit anyway; without one, [`poll_step`] of the
    /// schedule's age, never past `until`.
    ///
    /// The first interest of all is a yield (`now`); the second opens the pidfd. The caller has just found the
    /// leader unreaped, and only the reap, which calls [`close`](Self::close), makes it go: so the pid is our
    /// child's.
    ///
    /// A pidfd that is readable while the leader cannot be waited for yet (a leader traced by another process: its
    /// tracer sees the exit first, and the parent only once the tracer let go of it) would turn the sleep into a
    /// busy loop. When the pidfd was readable (as `woke` saw it) and the leader still runs, the interest is the
    /// pidfd at `now` (the leader may have exited right after the check); the second time in a row, the watch
    /// restarts the schedule and follows it from then on (the pidfd stays open until the reap: an
    /// [`exit_fd`](Self::exit_fd) lent out must not close under its borrower).
    fn interest(&mut self, now: Instant, until: Option<Instant>, woke: Woke<'_>) -> Interest {
        let mut fresh = false;
        if let Some(pid) = self.pid {
            if !self.yielded {
                self.yielded = true;
                return Interest::until_at(Some(now)).no_later_than(until);
            }
            self.pid = None;
            self.pidfd = open_pidfd(pid).ok();
            fresh = true;
        }
        if let Some(fd) = self
            .pidfd
            .as_ref()
            .filter(|_| !self.traced)
            .map(AsRawFd::as_raw_fd)
        {
            if fresh || !woke.ready(fd) {
                self.fired = false;
                return Interest::until_at(until).and_read(fd);
            }
            if !self.fired {
                self.fired = true;
                return Interest::until_at(Some(now)).and_read(fd);
            }
            self.traced = true;
            self.since = now;
        }
        let step = poll_step(now.saturating_duration_since(self.since));
        Interest::until_at(now.checked_add(step)).no_later_than(until)
    }
}

#[cfg(all(
    target_os = "linux",
    not(grouptimeout_no_pidfd),
    not(grouptimeout_portable)
))]
fn open_pidfd(pid: u32) -> io::Result<OwnedFd> {
    // A wait takes any failure (ENOSYS before Linux 5.3, EPERM under seccomp, EMFILE, ...) as "no pidfd": the
    // schedule is in charge then.
    crate::sys::pidfd_open(pid)
}

#[cfg(not(all(
    target_os = "linux",
    not(grouptimeout_no_pidfd),
    not(grouptimeout_portable)
)))]
fn open_pidfd(_pid: u32) -> io::Result<OwnedFd> {
    let why = if cfg!(not(target_os = "linux")) {
        "pidfds are Linux-only"
    } else if cfg!(grouptimeout_portable) {
        "this build has `--cfg grouptimeout_portable`"
    } else {
        "this build has `--cfg grouptimeout_no_pidfd`"
    };
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        format!("the leader's exit has no descriptor: {why}"),
    ))
}

/// How long [`Drop`] waits for a killed leader (and a guard's drop for the killed guard) to become reapable.
pub const DROP_REAP_LIMIT: Duration = Duration::from_secs(1);

/// The longest sleep of a wait for the rest of a job on a descriptor of its boundary's, before it checks again.
const REST_RECHECK: Duration = Duration::from_secs(1);

/// The longest step of the poll schedule.
const MAX_STEP: Duration = Duration::from_millis(10);

/// The pause before the next check of a leader that has been running (or was last signalled) `age` ago, when no
/// pidfd tells its exit; zero means "yield the CPU once".
///
/// Checking right away for the first millisecond catches short commands as soon as a blocking `wait` would. After
/// that, a pause of 1/20 of the age keeps the added latency near 2.5 % of the child's run time, and the cap keeps a
/// long wait at about 100 wake-ups a second. `bench/` measures the effect of each constant.
pub(crate) fn poll_step(age: Duration) -> Duration {
    const SPIN: Duration = Duration::from_millis(1);
    if age < SPIN {
        Duration::ZERO
    } else {
        (age / 20).min(MAX_STEP)
    }
}
