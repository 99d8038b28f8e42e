//! The crate's only `unsafe`: thin, safe wrappers over the libc calls it needs.
//!
//! Each wrapper checks its arguments, retries `EINTR` where the call can be interrupted, and turns
//! a failure into `io::Error::last_os_error()` through [`cvt`].

use std::io;
use std::mem::MaybeUninit;

/// Turns the C convention "-1 and `errno`" into an `io::Error`.
fn cvt(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Runs `f` again while it fails with `EINTR`.
fn retry_eintr<T>(mut f: impl FnMut() -> io::Result<T>) -> io::Result<T> {
    loop {
        match f() {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// Converts a process or group id to `pid_t`, refusing 0, 1 and anything that does not fit.
///
/// This is the one guard against `kill(0, …)`, `kill(-1, …)` and `kill(-0, …)`, which would signal our own
/// group, every process we may signal, or init's group.
fn checked_pid(id: u32) -> io::Result<libc::pid_t> {
    match libc::pid_t::try_from(id) {
        Ok(pid) if pid > 1 => Ok(pid),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("refusing to signal process or group id {id}: ids 0 and 1 (and ids above i32::MAX) are never a group we started"),
        )),
    }
}

/// Whether our child `pid` has exited, *without* reaping it (`waitid` with `WNOWAIT`).
///
/// While the child stays unreaped, its pid and so its process group id cannot be reused, which is what makes a
/// later `kill(-pid, …)` safe. Fails with `ECHILD` when `pid` is not (or no longer) an unreaped child of ours.
pub(crate) fn has_exited(pid: u32) -> io::Result<bool> {
    let pid = checked_pid(pid)?;
    retry_eintr(|| {
        let mut info = MaybeUninit::<libc::siginfo_t>::zeroed();
        // SAFETY: `info` points to a zeroed `siginfo_t` that lives across the call; WNOWAIT leaves the child
        // waitable, so std's `Child` still owns and reaps it.
        cvt(unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                info.as_mut_ptr(),
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        })?;
        // SAFETY: zero-initialised and possibly filled in by the kernel: every bit pattern is a valid siginfo_t.
        let info = unsafe { info.assume_init() };
        // With WNOHANG and no exited child the kernel leaves (POSIX: unspecified) si_signo 0; we zeroed it.
        Ok(info.si_signo != 0)
    })
}

/// Sends `signal` to every process in group `pgid`. A group with no process left (`ESRCH`) counts as success.
///
/// The caller must hold the group's leader unreaped: that is what keeps `pgid` from naming someone else's group.
pub(crate) fn signal_group(pgid: u32, signal: libc::c_int) -> io::Result<()> {
    let pgid = checked_pid(pgid)?;
    // SAFETY: kill has no memory-safety preconditions; checked_pid ruled out the ids with special meanings.
    match cvt(unsafe { libc::kill(-pgid, signal) }) {
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Ok(()),
        other => other.map(drop),
    }
}

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

// ---------------------------------------------------------------------------------------------------------------
// Process-wide facilities, used only through the opt-in `host` module.
// ---------------------------------------------------------------------------------------------------------------

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicI32, Ordering};

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

/// Creates a pipe whose ends are both non-blocking and close-on-exec: `(read, write)`.
pub(crate) fn nonblocking_pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [-1 as libc::c_int; 2];
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        // SAFETY: `fds` is a live array of two ints, as pipe2 requires.
        cvt(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) })?;
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        // SAFETY: `fds` is a live array of two ints, as pipe requires.
        cvt(unsafe { libc::pipe(fds.as_mut_ptr()) })?;
    }
    // SAFETY: the kernel just gave us these two descriptors; nothing else owns them.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    for fd in [&read, &write] {
        // SAFETY: fcntl on a descriptor we own, with integer arguments only.
        cvt(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC) })?;
        // SAFETY: as above.
        cvt(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) })?;
    }
    Ok((read, write))
}

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

/// Reads one byte from the non-blocking `fd`: `Ok(None)` when there is none yet.
pub(crate) fn read_byte(fd: &OwnedFd) -> io::Result<Option<u8>> {
    retry_eintr(|| {
        let mut byte = 0u8;
        // SAFETY: reads at most one byte into a live local.
        let n = unsafe { libc::read(fd.as_raw_fd(), (&mut byte as *mut u8).cast(), 1) };
        match n {
            1 => Ok(Some(byte)),
            0 => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "signal pipe closed",
            )),
            _ => {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::WouldBlock {
                    Ok(None)
                } else {
                    Err(e)
                }
            }
        }
    })
}

/// Makes this process a child subreaper (Linux `PR_SET_CHILD_SUBREAPER`).
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) fn set_child_subreaper() -> io::Result<()> {
    // SAFETY: prctl with integer arguments only.
    cvt(unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0) }).map(drop)
}

/// Sends `signal` to the single process `pid` (never a group). `Ok(false)` when it no longer exists (`ESRCH`).
///
/// The caller must hold `pid` as an unreaped child of this process, which keeps the id from being reused.
pub(crate) fn signal_process(pid: u32, signal: libc::c_int) -> io::Result<bool> {
    let pid = checked_pid(pid)?;
    // SAFETY: kill has no memory-safety preconditions; checked_pid ruled out 0, 1 and negative ids.
    match cvt(unsafe { libc::kill(pid, signal) }) {
        Ok(_) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Reaps our child `pid` if it has exited, without blocking: `Ok(true)` when reaped (or already gone: `ECHILD`).
pub(crate) fn reap_if_exited(pid: u32) -> io::Result<bool> {
    let pid = checked_pid(pid)?;
    retry_eintr(|| {
        let mut status = 0;
        // SAFETY: `status` is a live int; waitpid on one specific pid, never -1 or a group.
        match cvt(unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) }) {
            Ok(0) => Ok(false),
            Ok(_) => Ok(true),
            Err(e) if e.raw_os_error() == Some(libc::ECHILD) => Ok(true),
            Err(e) => Err(e),
        }
    })
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

/// Puts `fd` into non-blocking mode (`O_NONBLOCK` on its open file description).
///
/// Used on the read ends of the child's output pipes, which only this process holds.
pub(crate) fn set_nonblocking(fd: std::os::fd::BorrowedFd<'_>) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let fd = fd.as_raw_fd();
    // SAFETY: F_GETFL takes no pointer argument; `fd` is borrowed, so it stays open across the call.
    let flags = cvt(unsafe { libc::fcntl(fd, libc::F_GETFL) })?;
    if flags & libc::O_NONBLOCK == 0 {
        // SAFETY: F_SETFL takes an int argument and no pointer; `fd` is borrowed, so it stays open.
        cvt(unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) })?;
    }
    Ok(())
}

/// Waits up to `timeout` for an event on `fds` (`ppoll` on Linux and Android, so sub-millisecond timeouts are
/// honoured; `poll` with the timeout rounded up to whole milliseconds elsewhere), and returns how many entries
/// have events.
///
/// An interrupted wait (`EINTR`) returns `Ok(0)`, like a timeout: callers loop on their own clock, so retrying
/// here with the same timeout could only wait longer than they asked.
pub(crate) fn poll(fds: &mut [libc::pollfd], timeout: std::time::Duration) -> io::Result<usize> {
    let nfds = libc::nfds_t::try_from(fds.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "too many fds to poll"))?;
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let ret = {
        let ts = libc::timespec {
            tv_sec: libc::time_t::try_from(timeout.as_secs()).unwrap_or(libc::time_t::MAX),
            tv_nsec: timeout.subsec_nanos() as _,
        };
        // SAFETY: `fds` is a valid, exclusively borrowed array of `nfds` pollfd entries and `ts` a valid timespec,
        // both living across the call; a null sigmask leaves the signal mask unchanged.
        unsafe { libc::ppoll(fds.as_mut_ptr(), nfds, &ts, std::ptr::null()) }
    };
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let ret = {
        // Round up, so that a sub-millisecond pause does not turn into a busy loop.
        let ms = timeout.as_nanos().div_ceil(1_000_000);
        let ms = libc::c_int::try_from(ms).unwrap_or(libc::c_int::MAX);
        // SAFETY: `fds` is a valid, exclusively borrowed array of `nfds` pollfd entries living across the call.
        unsafe { libc::poll(fds.as_mut_ptr(), nfds, ms) }
    };
    match cvt(ret) {
        Ok(n) => Ok(n as usize),
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(0),
        Err(e) => Err(e),
    }
}

/// Reads once from `fd` into the spare capacity of `buf` (at most `max` bytes), appends what was read and returns
/// its length; 0 means end of file. Retries `EINTR`; a non-blocking `fd` with nothing to read gives `WouldBlock`.
///
/// Reading straight into the vector saves copying every byte through a separate buffer.
pub(crate) fn read_append(
    fd: std::os::fd::BorrowedFd<'_>,
    buf: &mut Vec<u8>,
    max: usize,
) -> io::Result<usize> {
    use std::os::fd::AsRawFd;
    let spare = buf.spare_capacity_mut();
    let len = spare.len().min(max).min(isize::MAX as usize);
    let n = retry_eintr(|| {
        // SAFETY: `spare` is writable memory of at least `len` bytes owned by `buf`, which is exclusively borrowed
        // across the call; read writes at most `len` bytes into it; `fd` is borrowed, so it stays open.
        let ret = unsafe { libc::read(fd.as_raw_fd(), spare.as_mut_ptr().cast(), len) };
        if ret < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(ret as usize)
        }
    })?;
    let new_len = buf.len() + n;
    // SAFETY: read initialised the first `n <= len` bytes of the spare capacity, which directly follow the
    // initialised `buf.len()` bytes, so the first `new_len <= capacity` bytes are initialised.
    unsafe { buf.set_len(new_len) };
    Ok(n)
}
