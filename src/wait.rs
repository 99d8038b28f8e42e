//! How a wait sleeps between two checks of the leader: until the leader's exit, or on a poll schedule.
//!
//! On Linux (5.3 and later) a pidfd of the leader becomes readable when the leader exits: a wait sleeps in `ppoll` on
//! it until the deadline, or indefinitely, and wakes at the exit. The pidfd is opened by the first wait that has to
//! sleep, after one yield of the CPU (a short command that shares this CPU ends during it, and its wait needs no
//! pidfd at all: opening and closing one costs about a fifth of a spawn's CPU). It is opened while the leader is
//! unreaped, so the pid names our child, and closed at the reap. Where no pidfd can be had (an older kernel, a
//! seccomp filter, no descriptor left, another Unix, or the `grouptimeout_no_pidfd` or `grouptimeout_portable`
//! cfg) the sleep follows [`poll_step`].

use std::io;
use std::os::fd::{AsFd as _, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

/// What a wait sleeps on: the leader's pidfd if there is one, else the poll schedule.
#[derive(Debug)]
pub struct ExitWatch {
    /// The leader's pid, until a pidfd was opened for it or could not be (or the leader was reaped).
    pid: Option<u32>,
    /// Whether the one yield before the pidfd is opened was taken.
    yielded: bool,
    /// Readable once the leader exited; closed at the reap (or by the drop of the handle).
    pidfd: Option<OwnedFd>,
    /// Where the poll schedule counts from: the spawn, or the last signal sent to the group (after which the
    /// leader's exit is likely soon, whatever its age).
    since: Instant,
    /// The last pause ended with the pidfd readable (set by the pauses, taken by [`next_pause`](Self::next_pause)).
    /// Atomic only so that [`GroupChild`](crate::GroupChild) is `Sync`, as std's `Child` is: the waits that use it
    /// take `&mut`.
    seen: AtomicBool,
    /// The pause before that did too, and the leader still could not be waited for.
    fired: bool,
    /// The pidfd turned readable twice while the leader could not be waited for (its tracer was told first): the
    /// pauses follow the schedule, and the pidfd stays open for [`exit_fd`](Self::exit_fd) until the reap.
    traced: bool,
}

#[allow(
    clippy::missing_errors_doc,
    reason = "public only for the hidden `__private`: the errors are those of `exited` and of the pause"
)]
impl ExitWatch {
    /// Watches our unreaped child `pid`: with a pidfd, opened when a wait first has to sleep, where one can be
    /// opened; silently without one otherwise.
    pub(crate) fn new(pid: u32) -> ExitWatch {
        ExitWatch {
            pid: Some(pid),
            yielded: false,
            pidfd: None,
            since: Instant::now(),
            seen: AtomicBool::new(false),
            fired: false,
            traced: false,
        }
    }

    /// Watches a process through `pidfd` (opened while it was our unreaped child) from the first pause; without one,
    /// on the poll schedule.
    #[must_use]
    pub fn on(pidfd: Option<OwnedFd>) -> ExitWatch {
        ExitWatch {
            pid: None,
            yielded: true,
            pidfd,
            since: Instant::now(),
            seen: AtomicBool::new(false),
            fired: false,
            traced: false,
        }
    }

    /// Checks with `exited` until it says the process has exited (`true`) or `deadline` passes (`false`; `None`: no
    /// deadline), without reaping or signalling.
    ///
    /// Between checks it calls `pause` with the watch and the pause's length ([`next_pause`](Self::next_pause)):
    /// with a pidfd, the time left before `deadline` (`None`: no limit), to be slept on the pidfd so that the exit
    /// ends it; without one, the poll schedule's step, where zero means "yield the CPU once". The length is never
    /// longer than the time left. `pause` may return early (the loop checks again), but must not take longer than
    /// asked.
    pub fn wait_for(
        &mut self,
        deadline: Option<Instant>,
        mut exited: impl FnMut() -> io::Result<bool>,
        mut pause: impl FnMut(&ExitWatch, Option<Duration>) -> io::Result<()>,
    ) -> io::Result<bool> {
        loop {
            let now = Instant::now();
            if exited()? {
                return Ok(true);
            }
            let left = match deadline.map(|d| d.saturating_duration_since(now)) {
                Some(Duration::ZERO) => return Ok(false),
                left => left,
            };
            let len = self.next_pause(now, left);
            pause(self, len)?;
        }
    }

    /// The leader's pidfd, while the wait sleeps on it.
    pub(crate) fn pidfd(&self) -> Option<BorrowedFd<'_>> {
        self.pidfd
            .as_ref()
            .filter(|_| !self.traced)
            .map(|fd| fd.as_fd())
    }

    /// The leader's pidfd for the caller's own event loop, opened now if no pause opened it yet (the caller has just
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

    /// Closes the pidfd (the leader was reaped); later pauses follow the schedule.
    pub(crate) fn close(&mut self) {
        self.pid = None;
        self.pidfd = None;
    }

    /// How long the pause after a check at `now` that found the leader running may last, with `left` until the
    /// deadline (`None`: no deadline). With a pidfd that is `left`, since the sleep ends at the exit anyway; without
    /// one, [`poll_step`] of the schedule's age, never more than `left`.
    ///
    /// The first pause of all is zero (one yield); the second opens the pidfd. The caller has just found the leader
    /// unreaped, and only the reap, which calls [`close`](Self::close), makes it go: so the pid is our child's.
    ///
    /// A pidfd that is readable while the leader cannot be waited for yet (a leader traced by another process: its
    /// tracer sees the exit first, and the parent only once the tracer let go of it) would turn the sleep into a
    /// busy loop. When the last pause ended on a readable pidfd and the leader still runs, the pause is zero (the
    /// leader may have exited right after the check, and the zero pause polls the pidfd again); the second time in
    /// a row, the watch restarts the schedule and follows it from then on (the pidfd stays open until the reap: an
    /// [`exit_fd`](Self::exit_fd) lent out must not close under its borrower).
    pub(crate) fn next_pause(&mut self, now: Instant, left: Option<Duration>) -> Option<Duration> {
        if let Some(pid) = self.pid {
            if !self.yielded {
                self.yielded = true;
                return Some(Duration::ZERO);
            }
            self.pid = None;
            self.pidfd = open_pidfd(pid).ok();
        }
        if self.pidfd.is_some() && !self.traced {
            if !self.seen.swap(false, Ordering::Relaxed) {
                self.fired = false;
                return left;
            }
            if !self.fired {
                self.fired = true;
                return Some(Duration::ZERO);
            }
            self.traced = true;
            self.since = now;
        }
        let step = poll_step(now.saturating_duration_since(self.since));
        Some(left.map_or(step, |left| left.min(step)))
    }

    /// A pause that polled the pidfd found it readable: the leader exited (or its tracer was told so).
    pub(crate) fn exit_seen(&self) {
        self.seen.store(true, Ordering::Relaxed);
    }

    /// The plain waits' pause: sleeps in `ppoll` on the pidfd until the leader exits or `pause` passes (`None`: no
    /// limit); without one, as [`sleep_pause`] (a `None` pause does not happen there: [`next_pause`](Self::next_pause)
    /// always gives the schedule's step).
    pub fn sleep(&self, pause: Option<Duration>) -> io::Result<()> {
        use std::os::fd::AsRawFd as _;
        let Some(pidfd) = self.pidfd() else {
            sleep_pause(pause.unwrap_or(MAX_STEP));
            return Ok(());
        };
        let mut fds = [libc::pollfd {
            fd: pidfd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }];
        crate::sys::poll(&mut fds, pause.unwrap_or(Duration::MAX))?;
        if fds[0].revents != 0 {
            self.exit_seen();
        }
        Ok(())
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

/// The longest step of the poll schedule.
const MAX_STEP: Duration = Duration::from_millis(10);

/// The pause of the plain waits without a pidfd: yield the CPU once for a zero pause, sleep otherwise.
pub(crate) fn sleep_pause(pause: Duration) {
    if pause.is_zero() {
        thread::yield_now();
    } else {
        thread::sleep(pause);
    }
}

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
