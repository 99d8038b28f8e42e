//! Signals of `host`: dispositions and masks, the recording handler of `host::Signals`, waiting for blocked
//! signals, and re-raising one to exit as a command did.

use std::io;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::current_action;
use super::cvt;

/// Signals the recording handler saw, by number: set by [`on_signal`], taken by [`take_recorded`].
static RECORDED: [AtomicBool; SIGNAL_LIMIT] = [const { AtomicBool::new(false) }; SIGNAL_LIMIT];

/// Signal numbers the recording handler can note: below this (64 real-time and standard signals on Linux).
pub(crate) const SIGNAL_LIMIT: usize = 65;

/// The recording handler: notes that `signal` arrived. Async-signal-safe: one atomic store, `errno` untouched.
extern "C" fn on_signal(signal: libc::c_int) {
    if let Some(flag) = usize::try_from(signal).ok().and_then(|s| RECORDED.get(s)) {
        flag.store(true, Ordering::SeqCst);
    }
}

/// Takes (and clears) the lowest of `signals` that the recording handler noted, if any.
pub(crate) fn take_recorded(signals: &[libc::c_int]) -> Option<libc::c_int> {
    let mut sorted = signals.to_vec();
    sorted.sort_unstable();
    sorted.into_iter().find(|&s| {
        usize::try_from(s)
            .ok()
            .and_then(|s| RECORDED.get(s))
            .is_some_and(|flag| flag.swap(false, Ordering::SeqCst))
    })
}

/// Forgets what the recording handler noted for `signals`.
pub(crate) fn clear_recorded(signals: &[libc::c_int]) {
    while take_recorded(signals).is_some() {}
}

/// A saved signal disposition, restored by [`restore_action`].
pub(crate) struct SavedAction(libc::sigaction);

/// Installs the recording handler for `signal` (`SA_RESTART`, never `SA_NOCLDWAIT`; for `SIGCHLD`, `SA_NOCLDSTOP`
/// only when `child_stops` is false) and returns the previous disposition.
pub(crate) fn install_recording_handler(
    signal: libc::c_int,
    child_stops: bool,
) -> io::Result<SavedAction> {
    if usize::try_from(signal).map_or(true, |s| s >= SIGNAL_LIMIT) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("signal {signal} is out of range"),
        ));
    }
    let mut act = MaybeUninit::<libc::sigaction>::zeroed();
    let mut old = MaybeUninit::<libc::sigaction>::zeroed();
    let handler: extern "C" fn(libc::c_int) = on_signal;
    // SAFETY: `act` is a zeroed sigaction we own; we fill in its fields before passing it on.
    let act = unsafe {
        let p = act.as_mut_ptr();
        // The C API's own contract: `sa_sigaction` holds the handler's address as a `sighandler_t` (a `size_t`).
        (*p).sa_sigaction = handler as libc::sighandler_t;
        (*p).sa_flags = libc::SA_RESTART
            | if signal == libc::SIGCHLD && !child_stops {
                libc::SA_NOCLDSTOP
            } else {
                0
            };
        libc::sigemptyset(&raw mut (*p).sa_mask);
        act.assume_init()
    };
    // SAFETY: both pointers are live sigaction structs; the handler is async-signal-safe (see `on_signal`).
    cvt(unsafe { libc::sigaction(signal, &raw const act, old.as_mut_ptr()) })?;
    // SAFETY: filled in by the successful sigaction.
    Ok(SavedAction(unsafe { old.assume_init() }))
}

/// Sets `signal` to its default disposition if it is ignored (`SIG_IGN`); returns whether it was.
pub(crate) fn stop_ignoring(signal: libc::c_int) -> io::Result<bool> {
    if !is_ignored(signal)? {
        return Ok(false);
    }
    // SAFETY: SIG_DFL is a valid disposition; signal() only changes process state.
    if unsafe { libc::signal(signal, libc::SIG_DFL) } == libc::SIG_ERR {
        return Err(io::Error::last_os_error());
    }
    Ok(true)
}

/// Restores a disposition saved by [`install_recording_handler`].
pub(crate) fn restore_action(signal: libc::c_int, saved: &SavedAction) -> io::Result<()> {
    // SAFETY: `saved.0` is a disposition the kernel gave us; a null `old` pointer is allowed.
    cvt(unsafe { libc::sigaction(signal, &raw const saved.0, std::ptr::null_mut()) }).map(drop)
}

/// A saved signal mask of the calling thread, restored by [`set_mask`].
pub(crate) struct SavedMask(libc::sigset_t);

/// Builds a `sigset_t` holding `signals`.
fn sigset(signals: &[libc::c_int]) -> io::Result<libc::sigset_t> {
    let mut set = MaybeUninit::<libc::sigset_t>::zeroed();
    // SAFETY: `set` is a live sigset_t; sigemptyset initialises it.
    cvt(unsafe { libc::sigemptyset(set.as_mut_ptr()) })?;
    for &s in signals {
        // SAFETY: `set` was initialised by sigemptyset; sigaddset checks `s`.
        cvt(unsafe { libc::sigaddset(set.as_mut_ptr(), s) })?;
    }
    // SAFETY: initialised above.
    Ok(unsafe { set.assume_init() })
}

/// Changes the calling thread's mask (`how`: `SIG_BLOCK` or `SIG_UNBLOCK`) for `signals`; returns the previous mask.
fn change_mask(how: libc::c_int, signals: &[libc::c_int]) -> io::Result<SavedMask> {
    let set = sigset(signals)?;
    let mut old = MaybeUninit::<libc::sigset_t>::zeroed();
    // SAFETY: both pointers are live sigset_t values.
    let rc = unsafe { libc::pthread_sigmask(how, &raw const set, old.as_mut_ptr()) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    // SAFETY: filled in by the successful pthread_sigmask.
    Ok(SavedMask(unsafe { old.assume_init() }))
}

/// Unblocks `signals` in the calling thread and returns the previous mask.
pub(crate) fn unblock(signals: &[libc::c_int]) -> io::Result<SavedMask> {
    change_mask(libc::SIG_UNBLOCK, signals)
}

/// Blocks `signals` in the calling thread and returns the previous mask.
pub(crate) fn block(signals: &[libc::c_int]) -> io::Result<SavedMask> {
    change_mask(libc::SIG_BLOCK, signals)
}

/// Waits up to `timeout` for one of the blocked `signals` to be pending, takes it and returns its number and, for a
/// `SIGCHLD` that reports a child's exit (Linux), that child's pid; `Ok(None)` when the time is up or the wait was
/// interrupted (callers loop on their own clock).
///
/// `sigtimedwait` where it exists. Elsewhere (macOS, OpenBSD) a pending signal is looked for with `sigpending`
/// and taken with `sigwait`, and the wait sleeps at most 10 ms at a time: a signal is seen up to 10 ms late.
#[cfg(any(
    all(
        any(target_os = "linux", target_os = "android"),
        not(grouptimeout_portable)
    ),
    target_os = "freebsd",
    target_os = "netbsd"
))]
pub(crate) fn wait_blocked(
    signals: &[libc::c_int],
    timeout: Duration,
) -> io::Result<Option<(libc::c_int, Option<u32>)>> {
    let set = sigset(signals)?;
    #[allow(
        clippy::cast_lossless,
        reason = "tv_nsec is a c_long: i64 here, i32 on 32-bit targets (no From<u32>); nanoseconds < 10^9 fit both"
    )]
    let ts = libc::timespec {
        // `time_t` is inferred (naming it is deprecated on musl); 68 years at most fits every `time_t`.
        tv_sec: timeout.as_secs().try_into().unwrap_or(i32::MAX.into()),
        tv_nsec: timeout.subsec_nanos() as _,
    };
    let mut info = MaybeUninit::<libc::siginfo_t>::zeroed();
    // SAFETY: `set`, `info` and `ts` are live locals across the call; the kernel writes only into `info`.
    match cvt(unsafe { libc::sigtimedwait(&raw const set, info.as_mut_ptr(), &raw const ts) }) {
        Ok(signal) => {
            // SAFETY: zero-initialised and filled in by the kernel: every bit pattern is a valid siginfo_t.
            let info = unsafe { info.assume_init() };
            Ok(Some((signal, exited_child(signal, &info))))
        }
        Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EINTR)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The pid of the child whose exit `info` (of `signal`) reports, if it reports one (Linux and Android).
#[cfg(all(
    any(target_os = "linux", target_os = "android"),
    not(grouptimeout_portable)
))]
fn exited_child(signal: libc::c_int, info: &libc::siginfo_t) -> Option<u32> {
    let exited = [libc::CLD_EXITED, libc::CLD_KILLED, libc::CLD_DUMPED];
    if signal != libc::SIGCHLD || !exited.contains(&info.si_code) {
        return None;
    }
    // SAFETY: for SIGCHLD with a CLD_* code the kernel filled in the child fields, si_pid among them.
    let pid = unsafe { info.si_pid() };
    u32::try_from(pid).ok().filter(|&pid| pid > 1)
}

/// Elsewhere the pid is not used.
#[cfg(any(target_os = "freebsd", target_os = "netbsd"))]
fn exited_child(_signal: libc::c_int, _info: &libc::siginfo_t) -> Option<u32> {
    None
}

/// See the Linux version above.
#[cfg(not(any(
    all(
        any(target_os = "linux", target_os = "android"),
        not(grouptimeout_portable)
    ),
    target_os = "freebsd",
    target_os = "netbsd"
)))]
pub(crate) fn wait_blocked(
    signals: &[libc::c_int],
    timeout: Duration,
) -> io::Result<Option<(libc::c_int, Option<u32>)>> {
    let set = sigset(signals)?;
    let mut pending = MaybeUninit::<libc::sigset_t>::zeroed();
    // SAFETY: `pending` is a live sigset_t that sigpending fills in.
    cvt(unsafe { libc::sigpending(pending.as_mut_ptr()) })?;
    // SAFETY: filled in by the successful sigpending.
    let pending = unsafe { pending.assume_init() };
    let is_pending = |signal| {
        // SAFETY: `pending` is an initialised sigset_t; sigismember only reads it.
        unsafe { libc::sigismember(&raw const pending, signal) == 1 }
    };
    if signals.iter().any(|&s| is_pending(s)) {
        let mut signal = 0;
        // SAFETY: `set` and `signal` are live locals; one of the blocked signals in `set` is pending, so this returns
        // at once.
        let rc = unsafe { libc::sigwait(&raw const set, &raw mut signal) };
        return if rc == 0 {
            Ok(Some((signal, None)))
        } else {
            Err(io::Error::from_raw_os_error(rc))
        };
    }
    std::thread::sleep(timeout.min(Duration::from_millis(10)));
    Ok(None)
}

/// Sets the calling thread's signal mask back to `saved`.
pub(crate) fn set_mask(saved: &SavedMask) -> io::Result<()> {
    // SAFETY: `saved.0` is a mask the kernel gave us; a null `old` pointer is allowed.
    let rc = unsafe {
        libc::pthread_sigmask(libc::SIG_SETMASK, &raw const saved.0, std::ptr::null_mut())
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(rc))
    }
}

/// Turns core dumps off for this process (`RLIMIT_CORE` = 0).
pub(crate) fn disable_core_dumps() -> io::Result<()> {
    let limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: a live rlimit struct.
    cvt(unsafe { libc::setrlimit(libc::RLIMIT_CORE, &raw const limit) }).map(drop)
}

/// Sets `signal` to its default disposition, unblocks it, and raises it in the calling thread. `SIGKILL` and
/// `SIGSTOP` are raised as they are: they can be neither caught nor blocked, and `signal(2)` refuses them (`EINVAL`).
pub(crate) fn raise_default(signal: libc::c_int) -> io::Result<()> {
    if signal != libc::SIGKILL && signal != libc::SIGSTOP {
        // SAFETY: SIG_DFL is a valid disposition; signal() only changes process state.
        if unsafe { libc::signal(signal, libc::SIG_DFL) } == libc::SIG_ERR {
            return Err(io::Error::last_os_error());
        }
        let _previous = unblock(&[signal])?;
    }
    // SAFETY: raise has no memory-safety preconditions.
    cvt(unsafe { libc::raise(signal) }).map(drop)
}

/// Whether `signal`'s disposition in this process is `SIG_IGN`.
pub(crate) fn is_ignored(signal: libc::c_int) -> io::Result<bool> {
    Ok(current_action(signal)?.sa_sigaction == libc::SIG_IGN)
}
