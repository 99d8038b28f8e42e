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
    let mut old = MaybeUninit::<libc::sigaction>::zeroed();
    // SAFETY: a null `act` only reads the current disposition into `old`, which lives across the call.
    cvt(unsafe { libc::sigaction(libc::SIGCHLD, std::ptr::null(), old.as_mut_ptr()) })?;
    // SAFETY: zero-initialised and filled in by a successful sigaction.
    let old = unsafe { old.assume_init() };
    Ok(old.sa_sigaction == libc::SIG_IGN || old.sa_flags & libc::SA_NOCLDWAIT != 0)
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
