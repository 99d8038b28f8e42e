//! Signal dispositions and masks, and the handler that writes to the `host::SignalPipe`.

use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use super::cvt;

/// Whether this process has SIGCHLD set to be ignored (`SIG_IGN`) or its children auto-reaped (`SA_NOCLDWAIT`).
///
/// Either way the kernel reaps our children as soon as they exit, so nothing would pin a group id.
pub(crate) fn children_are_auto_reaped() -> io::Result<bool> {
    let action = current_action(libc::SIGCHLD)?;
    Ok(action.sa_sigaction == libc::SIG_IGN || action.sa_flags & libc::SA_NOCLDWAIT != 0)
}

/// The current disposition of `signal`.
fn current_action(signal: libc::c_int) -> io::Result<libc::sigaction> {
    let mut old = MaybeUninit::<libc::sigaction>::zeroed();
    // SAFETY: a null `act` only reads the current disposition into `old`, which lives across the call.
    cvt(unsafe { libc::sigaction(signal, std::ptr::null(), old.as_mut_ptr()) })?;
    // SAFETY: zero-initialised and filled in by a successful sigaction.
    Ok(unsafe { old.assume_init() })
}

/// The write end of the signal pipe of the one installed `host::SignalPipe`, or -1.
static SIGNAL_PIPE_WRITE: AtomicI32 = AtomicI32::new(-1);

#[cfg(any(target_os = "linux", target_os = "android"))]
fn errno_location() -> *mut libc::c_int {
    // SAFETY: returns a pointer to the calling thread's errno; no preconditions.
    unsafe { libc::__errno_location() }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn errno_location() -> *mut libc::c_int {
    // SAFETY: returns a pointer to the calling thread's errno; no preconditions.
    unsafe { libc::__error() }
}

/// The signal handler: writes the signal number as one byte to the pipe. Async-signal-safe: one atomic load and
/// one `write(2)`; `errno` is saved and restored.
extern "C" fn on_signal(signal: libc::c_int) {
    let fd = SIGNAL_PIPE_WRITE.load(Ordering::SeqCst);
    if fd < 0 {
        return;
    }
    let errno = errno_location();
    // SAFETY: `errno` points to this thread's errno, valid for the thread's lifetime.
    let saved = unsafe { *errno };
    let byte = signal as u8;
    // SAFETY: writes one byte from a live local to a descriptor: no memory is touched but `byte`. A full pipe fails
    // with EAGAIN and loses the byte (the reader is awake anyway). In a multi-threaded host, a handler racing the
    // drop of `host::SignalPipe` may write to a descriptor number reused meanwhile (documented there).
    unsafe { libc::write(fd, (&byte as *const u8).cast(), 1) };
    // SAFETY: as above.
    unsafe { *errno = saved };
}

/// A saved signal disposition, restored by [`restore_action`].
pub(crate) struct SavedAction(libc::sigaction);

/// Makes `fd` the descriptor the signal handler writes to. Fails if another one is registered.
pub(crate) fn register_signal_pipe(fd: &OwnedFd) -> io::Result<()> {
    SIGNAL_PIPE_WRITE
        .compare_exchange(-1, fd.as_raw_fd(), Ordering::SeqCst, Ordering::SeqCst)
        .map(drop)
        .map_err(|_| {
            io::Error::new(
                io::ErrorKind::AlreadyExists,
                "a grouptimeout::host::SignalPipe is already installed in this process",
            )
        })
}

/// Stops the signal handler from writing anywhere.
pub(crate) fn unregister_signal_pipe() {
    SIGNAL_PIPE_WRITE.store(-1, Ordering::SeqCst);
}

/// Installs the pipe-writing handler for `signal` (`SA_RESTART`; for `SIGCHLD` also `SA_NOCLDSTOP`, never
/// `SA_NOCLDWAIT`) and returns the previous disposition.
pub(crate) fn install_pipe_handler(signal: libc::c_int) -> io::Result<SavedAction> {
    let mut act = MaybeUninit::<libc::sigaction>::zeroed();
    let mut old = MaybeUninit::<libc::sigaction>::zeroed();
    let handler: extern "C" fn(libc::c_int) = on_signal;
    // SAFETY: `act` is a zeroed sigaction we own; we fill in its fields before passing it on.
    let act = unsafe {
        let p = act.as_mut_ptr();
        (*p).sa_sigaction = handler as libc::sighandler_t;
        (*p).sa_flags = libc::SA_RESTART
            | if signal == libc::SIGCHLD {
                libc::SA_NOCLDSTOP
            } else {
                0
            };
        libc::sigemptyset(&mut (*p).sa_mask);
        act.assume_init()
    };
    // SAFETY: both pointers are live sigaction structs; the handler is async-signal-safe (see `on_signal`).
    cvt(unsafe { libc::sigaction(signal, &act, old.as_mut_ptr()) })?;
    // SAFETY: filled in by the successful sigaction.
    Ok(SavedAction(unsafe { old.assume_init() }))
}

/// Restores a disposition saved by [`install_pipe_handler`].
pub(crate) fn restore_action(signal: libc::c_int, saved: &SavedAction) -> io::Result<()> {
    // SAFETY: `saved.0` is a disposition the kernel gave us; a null `old` pointer is allowed.
    cvt(unsafe { libc::sigaction(signal, &saved.0, std::ptr::null_mut()) }).map(drop)
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

/// Unblocks `signals` in the calling thread and returns the previous mask.
pub(crate) fn unblock(signals: &[libc::c_int]) -> io::Result<SavedMask> {
    let set = sigset(signals)?;
    let mut old = MaybeUninit::<libc::sigset_t>::zeroed();
    // SAFETY: both pointers are live sigset_t values.
    let rc = unsafe { libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, old.as_mut_ptr()) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    // SAFETY: filled in by the successful pthread_sigmask.
    Ok(SavedMask(unsafe { old.assume_init() }))
}

/// Sets the calling thread's signal mask back to `saved`.
pub(crate) fn set_mask(saved: &SavedMask) -> io::Result<()> {
    // SAFETY: `saved.0` is a mask the kernel gave us; a null `old` pointer is allowed.
    let rc = unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &saved.0, std::ptr::null_mut()) };
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
    cvt(unsafe { libc::setrlimit(libc::RLIMIT_CORE, &limit) }).map(drop)
}

/// Sets `signal` to its default disposition, unblocks it, and raises it in the calling thread.
pub(crate) fn raise_default(signal: libc::c_int) -> io::Result<()> {
    // SAFETY: SIG_DFL is a valid disposition; signal() only changes process state.
    if unsafe { libc::signal(signal, libc::SIG_DFL) } == libc::SIG_ERR {
        return Err(io::Error::last_os_error());
    }
    let _previous = unblock(&[signal])?;
    // SAFETY: raise has no memory-safety preconditions.
    cvt(unsafe { libc::raise(signal) }).map(drop)
}

/// Whether `signal`'s disposition in this process is `SIG_IGN`.
pub(crate) fn is_ignored(signal: libc::c_int) -> io::Result<bool> {
    Ok(current_action(signal)?.sa_sigaction == libc::SIG_IGN)
}

/// Whether `SIGPIPE` was ignored when this process started; set by [`record_sigpipe_at_start`] before `main`.
static SIGPIPE_IGNORED_AT_START: AtomicBool = AtomicBool::new(false);

/// Runs before `main`, so before std's runtime sets `SIGPIPE` to ignored in every Rust program: records whether it
/// was ignored already (inherited from the parent). It only reads the disposition.
extern "C" fn record_sigpipe_at_start() {
    if let Ok(ignored) = is_ignored(libc::SIGPIPE) {
        SIGPIPE_IGNORED_AT_START.store(ignored, Ordering::SeqCst);
    }
}

/// The loader calls the functions listed in this section before `main` (ELF `.init_array`; Mach-O
/// `__mod_init_func`). On other platforms nothing calls it and the flag stays `false`.
#[used]
#[cfg_attr(
    any(
        target_os = "linux",
        target_os = "android",
        target_os = "freebsd",
        target_os = "netbsd",
        target_os = "openbsd",
        target_os = "dragonfly",
        target_os = "illumos",
        target_os = "solaris"
    ),
    link_section = ".init_array"
)]
#[cfg_attr(target_vendor = "apple", link_section = "__DATA,__mod_init_func")]
static RECORD_SIGPIPE_AT_START: extern "C" fn() = record_sigpipe_at_start;

/// Whether `SIGPIPE` was ignored when this process started (see [`record_sigpipe_at_start`]).
pub(crate) fn sigpipe_ignored_at_start() -> bool {
    SIGPIPE_IGNORED_AT_START.load(Ordering::SeqCst)
}

/// Makes `command`'s child set `SIGPIPE` to ignored just before its `exec`, after std reset it to the default.
pub(crate) fn ignore_sigpipe_in_child(command: &mut Command) {
    let ignore = || {
        // SAFETY: signal(2) is async-signal-safe and touches no memory of ours; SIG_IGN is a valid disposition.
        if unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) } == libc::SIG_ERR {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    };
    // SAFETY: the closure runs in the child between fork and exec: it only calls signal(2) (async-signal-safe) and
    // builds an io::Error from errno on failure, which does not allocate; it takes no lock and shares no state.
    unsafe { command.pre_exec(ignore) };
}
