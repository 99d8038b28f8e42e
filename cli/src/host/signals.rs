//! Signals for a supervisor: received synchronously ([`Signals`]), dispositions inherited from the parent
//! ([`signal_is_ignored`], [`stop_ignoring`]), one signal for a plain child ([`signal_child`]), and an exit that looks
//! like a death by a signal ([`exit_as_signaled`]).

use std::io;
use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::sys;

/// Signals received synchronously: blocked, and taken one at a time by [`wait`](Signals::wait).
///
/// [`install`](Signals::install) sets, for each signal given, a handler that only notes that the signal arrived,
/// and blocks those signals in the calling thread. A blocked signal stays pending until [`wait`](Signals::wait)
/// takes it (`sigtimedwait(2)`); the handler runs only while the signals are unblocked, inside
/// [`unblocked`](Signals::unblocked), and what it notes is reported by the next `wait`. Dropping the value unblocks
/// the signals (a signal still pending then goes to the handler and is dropped) and restores the previous
/// dispositions and mask. Uses no file descriptor.
///
/// # What is guaranteed
///
/// - A signal that arrives after `install` returned is reported by a later `wait` (several deliveries of the same
///   signal may be reported once: the kernel merges pending standard signals).
/// - While the value lives, none of these signals can end the process or interrupt it: a program that keeps it
///   until it exits (calling [`std::process::exit`] or [`exit_as_signaled`] without dropping it) cannot be killed
///   by one of them while it computes its exit status.
/// - Handlers revert to the default disposition across `exec`, so a command spawned while the value lives starts
///   with default dispositions for these signals, including any that this process had ignored (an inherited
///   `SIG_IGN`, such as `SIGCHLD` ignored by a careless parent, is replaced).
/// - `SIGCHLD` may be in the set: it is never installed with `SA_NOCLDWAIT`, so children stay waitable (this is
///   what lets [`GroupCommandExt::spawn_group`](grouptimeout::GroupCommandExt::spawn_group) run in a process started with
///   `SIGCHLD` ignored). It is reported when a child stops or continues too, not only when one exits (see
///   [`take_stop`](super::take_stop)).
///
/// # What is not guaranteed
///
/// - A spawned command inherits the signal mask of the moment (std does not reset it): spawn it inside
///   [`unblocked`](Signals::unblocked), or it starts with these signals blocked. Other signals this process had
///   blocked stay blocked for the command either way.
/// - Process-wide: one `Signals` at a time per process (a second `install` fails), and other code installing
///   handlers for the same signals replaces ours. The mask is the calling thread's: in a multi-threaded program,
///   other threads must block these signals too, or the kernel may deliver them there (then they are noted and
///   reported, but do not wake a `wait` in progress).
/// - Signal numbers up to 64 only.
#[derive(Debug)]
#[must_use = "dropping a Signals restores the previous signal handlers and mask at once"]
pub struct Signals {
    set: Vec<i32>,
    /// The child whose exit the last `SIGCHLD` taken by `wait` reported.
    exited: Option<u32>,
    saved: Vec<(i32, sys::SavedAction)>,
    mask: Option<sys::SavedMask>,
}

impl std::fmt::Debug for sys::SavedAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SavedAction")
    }
}

impl std::fmt::Debug for sys::SavedMask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SavedMask")
    }
}

/// Whether a `Signals` is installed in this process.
static INSTALLED: AtomicBool = AtomicBool::new(false);

impl Signals {
    /// Installs the recording handler for each of `signals`, then blocks them in the calling thread.
    ///
    /// Install it *before* spawning the command you supervise (and spawn it inside
    /// [`unblocked`](Signals::unblocked)): from then on no handled signal can end this process and leave the command
    /// running unsupervised.
    ///
    /// # Errors
    ///
    /// Another `Signals` is installed (`AlreadyExists`); a signal cannot be caught (`SIGKILL`, `SIGSTOP`) or is not
    /// a valid number below 65 (`InvalidInput`). On error every disposition changed so far is restored. A failed
    /// `sigaction` or `sigprocmask` gives its OS error itself (`raw_os_error()`); the other errors carry none.
    pub fn install(signals: &[i32]) -> io::Result<Signals> {
        if INSTALLED.swap(true, Ordering::SeqCst) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                "a grouptimeout_cli::host::Signals is already installed in this process",
            ));
        }
        let mut installed = Signals {
            set: signals.to_vec(),
            exited: None,
            saved: Vec::with_capacity(signals.len()),
            mask: None,
        };
        sys::clear_recorded(signals);
        for &signal in signals {
            let saved = sys::install_recording_handler(signal, true).map_err(|e| {
                crate::sys::os_error_or(e, |e| {
                    format!("cannot install a handler for signal {signal}: {e}")
                })
            })?;
            installed.saved.push((signal, saved));
        }
        installed.mask = Some(sys::block(signals)?);
        Ok(installed)
    }

    /// Waits until a handled signal arrives, at most `timeout` (`None`: no limit), and returns its number, or
    /// `None` when the time is up. `Some(Duration::ZERO)` only checks.
    ///
    /// One signal per call; signals noted by the handler (inside [`unblocked`](Signals::unblocked)) come first,
    /// lowest number first. It never returns `None` before `timeout` has passed. On Linux, FreeBSD and NetBSD the
    /// wait is one `sigtimedwait(2)`; elsewhere (macOS) it checks the pending signals every 10 ms.
    ///
    /// # Errors
    ///
    /// The wait failed, which does not happen in practice.
    pub fn wait(&mut self, timeout: Option<Duration>) -> io::Result<Option<i32>> {
        let deadline = timeout.map(|t| Instant::now().checked_add(t));
        self.exited = None;
        loop {
            if let Some(signal) = sys::take_recorded(&self.set) {
                return Ok(Some(signal));
            }
            let left = match deadline {
                // No limit: wait a day at a time.
                None | Some(None) => Duration::from_secs(86_400),
                Some(Some(deadline)) => deadline.saturating_duration_since(Instant::now()),
            };
            if let Some((signal, exited)) = sys::wait_blocked(&self.set, left)? {
                self.exited = exited;
                return Ok(Some(signal));
            }
            if left.is_zero() {
                return Ok(None);
            }
        }
    }

    /// When the last [`wait`](Signals::wait) returned a `SIGCHLD` that reports a child's exit: that child's pid, if
    /// the kernel said (Linux and Android; `None` elsewhere, for a stop or a continue, and for a `SIGCHLD` that
    /// arrived inside [`unblocked`](Signals::unblocked)). Pending `SIGCHLD`s merge, so other children may have
    /// exited too: this is a hint for [`Subreaper::reap_exited`](super::Subreaper::reap_exited), not a list.
    #[must_use]
    pub fn exited_child(&self) -> Option<u32> {
        self.exited
    }

    /// Runs `f` with the handled signals unblocked (as they were before [`install`](Signals::install) blocked them,
    /// whatever else the mask holds), then blocks them again. Signals that arrive meanwhile are noted by the handler
    /// and reported by the next [`wait`](Signals::wait).
    ///
    /// Spawn the supervised command in here, so that it does not inherit the handled signals blocked.
    ///
    /// # Errors
    ///
    /// Changing the signal mask failed (invalid arguments only; `f` did not run).
    pub fn unblocked<T>(&mut self, f: impl FnOnce() -> T) -> io::Result<T> {
        let _previous = sys::unblock(&self.set)?;
        let result = f();
        sys::block(&self.set)?;
        Ok(result)
    }
}

impl Drop for Signals {
    fn drop(&mut self) {
        // Unblock first: a pending signal goes to the recording handler rather than to a restored default action.
        if let Some(mask) = &self.mask {
            let _ = sys::unblock(&self.set);
            let _ = sys::set_mask(mask);
        }
        for (signal, saved) in self.saved.iter().rev() {
            let _ = sys::restore_action(*signal, saved);
        }
        sys::clear_recorded(&self.set);
        INSTALLED.store(false, Ordering::SeqCst);
    }
}

/// Whether `signal` is set to be ignored (`SIG_IGN`) in this process, for instance because the parent started it
/// under `nohup` (`SIGHUP`) or as a background job of a non-interactive shell (`SIGINT`, `SIGQUIT`).
///
/// An ignored signal stays ignored across `exec`, so a command spawned now inherits it; a handler installed by
/// [`Signals::install`] would replace that with the default disposition in the command. A supervisor that
/// wants to leave such choices of its parent intact checks this first and does not handle those signals.
///
/// # Errors
///
/// `signal` is not a valid signal number.
pub fn signal_is_ignored(signal: i32) -> io::Result<bool> {
    sys::is_ignored(signal)
}

/// Resets `signal` to its default disposition if this process ignores it (`SIG_IGN`), and says whether it did.
///
/// For the signal a supervisor sends at its timeout: started as a background job of a script (`SIGINT` ignored) or
/// under `trap '' TERM`, a command spawned now would inherit that signal ignored and the timeout would do nothing.
/// A signal that is handled or already at its default disposition is left as it is.
///
/// # Errors
///
/// `signal` is not a valid signal number, or its disposition cannot be changed (`SIGKILL` and `SIGSTOP` are never
/// ignored, so they are left alone without error).
pub fn stop_ignoring(signal: i32) -> io::Result<bool> {
    sys::stop_ignoring(signal)
}

/// Sends `signal` to the one process `child` (by pid, not its group), unless it was already reaped.
///
/// For a command spawned with plain [`std::process::Command::spawn`] (no process group of its own), where
/// [`Child::kill`] can send only `SIGKILL`. It asks `child` first ([`Child::try_wait`]): once it was reaped (by
/// [`Child::wait`] or [`Child::try_wait`], or by someone else: `ECHILD`), its pid may name another process, even
/// another child of this process, so nothing is sent and `Ok(())` is returned; a child that has exited is reaped by
/// that call (its status stays with `child`, for the next wait) and is sent nothing either. Taking `&mut Child` keeps
/// other code from reaping it between that check and the signal.
///
/// # Errors
///
/// The signal number is invalid, or the process may not be signalled (`PermissionDenied`).
pub fn signal_child(child: &mut Child, signal: i32) -> io::Result<()> {
    // Ask `child` itself, not the kernel about its pid: once `child` was reaped, the pid may name another child of
    // ours. A child that has exited is reaped here (its status stays with `child`) and needs no signal.
    match child.try_wait() {
        Err(e) if e.raw_os_error() == Some(libc::ECHILD) => return Ok(()),
        Err(e) => return Err(e),
        Ok(Some(_)) => return Ok(()),
        Ok(None) => {}
    }
    sys::signal_process(child.id(), signal).map(drop)
}

/// Ends this process the way a command that died of `signal` ended, so that its parent sees the same wait status
/// (a shell shows `128 + signal`).
///
/// Turns core dumps off (`RLIMIT_CORE` 0, so that re-raising `SIGSEGV` or `SIGQUIT` leaves no core file of this
/// process), sets `signal` to its default disposition, unblocks it and raises it (`SIGKILL` and `SIGSTOP`, which
/// have no other disposition and cannot be blocked, are raised as they are: a `SIGKILL` ends the process, a
/// `SIGSTOP` stops it until it is continued). If this process is still alive after that (the signal's default
/// action is to ignore it or to stop, or it could not be raised), it exits with status `128 + signal`. Destructors
/// of the current stack do not run; flush what must be flushed before.
pub fn exit_as_signaled(signal: i32) -> ! {
    let _ = sys::disable_core_dumps();
    let _ = sys::raise_default(signal);
    std::process::exit(128 + signal.clamp(0, 127))
}
