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
