//! The controlling terminal's foreground process group, stop reports of a child, and stopping ourselves: the job
//! control calls behind the opt-in `host::Terminal`.

use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, BorrowedFd};

use super::{block, checked_pid, cvt, kernel_pid, retry_eintr, set_mask, wait_id};

/// Whether `fd` refers to a terminal.
pub(crate) fn is_terminal(fd: BorrowedFd<'_>) -> bool {
    // SAFETY: isatty only inspects the descriptor, which `BorrowedFd` keeps open across the call.
    unsafe { libc::isatty(fd.as_raw_fd()) == 1 }
}

/// Whether the terminal `fd` is the controlling terminal of this process's session (`tcgetsid` == `getsid(0)`).
pub(crate) fn is_our_controlling_terminal(fd: BorrowedFd<'_>) -> bool {
    // SAFETY: tcgetsid and getsid have no memory-safety preconditions; the descriptor is open (BorrowedFd).
    let (terminal, ours) = unsafe { (libc::tcgetsid(fd.as_raw_fd()), libc::getsid(0)) };
    terminal != -1 && terminal == ours
}

/// This process's process group id.
pub(crate) fn own_group() -> io::Result<u32> {
    // SAFETY: getpgrp has no preconditions and cannot fail.
    kernel_pid(unsafe { libc::getpgrp() })
}

/// The foreground process group of the terminal `fd` (`tcgetpgrp`).
pub(crate) fn foreground_group(fd: BorrowedFd<'_>) -> io::Result<u32> {
    // SAFETY: tcgetpgrp only reads terminal state; the descriptor is open (BorrowedFd).
    kernel_pid(cvt(unsafe { libc::tcgetpgrp(fd.as_raw_fd()) })?)
}

/// Makes `pgid` the foreground process group of the terminal `fd` (`tcsetpgrp`), with `SIGTTOU` blocked in the
/// calling thread for the call: from a background group the call would otherwise stop this process. The mask is
/// restored afterwards; a blocked `SIGTTOU` lets the call through without raising one, so nothing stays pending.
pub(crate) fn set_foreground_group(fd: BorrowedFd<'_>, pgid: u32) -> io::Result<()> {
    let pgid = checked_pid(pgid)?;
    let saved = block(&[libc::SIGTTOU])?;
    // SAFETY: tcsetpgrp changes only terminal state; the descriptor is open (BorrowedFd).
    let result = retry_eintr(|| cvt(unsafe { libc::tcsetpgrp(fd.as_raw_fd(), pgid) }));
    let _ = set_mask(&saved);
    result.map(drop)
}

/// If our child `pid` has stopped since its last reported stop, consumes that report and returns the signal that
/// stopped it (`waitid` with `WSTOPPED | WNOHANG`, no `WEXITED`: an exit is never consumed, so std still reaps it).
/// `Ok(None)` when it has not stopped, or is not (or no longer) an unreaped child of ours (`ECHILD`).
pub(crate) fn take_stop(pid: u32) -> io::Result<Option<i32>> {
    let pid = checked_pid(pid)?;
    retry_eintr(|| {
        let mut info = MaybeUninit::<libc::siginfo_t>::zeroed();
        // SAFETY: `info` points to a zeroed `siginfo_t` that lives across the call.
        let rc = unsafe {
            libc::waitid(
                libc::P_PID,
                wait_id(pid),
                info.as_mut_ptr(),
                libc::WSTOPPED | libc::WNOHANG,
            )
        };
        match cvt(rc) {
            Err(e) if e.raw_os_error() == Some(libc::ECHILD) => return Ok(None),
            other => other?,
        };
        // SAFETY: zero-initialised and possibly filled in by the kernel: every bit pattern is a valid siginfo_t.
        let info = unsafe { info.assume_init() };
        // With WNOHANG and no stopped child the kernel leaves si_signo 0 (we zeroed it).
        if info.si_signo == 0 || info.si_code != libc::CLD_STOPPED {
            return Ok(None);
        }
        // SAFETY: a SIGCHLD siginfo filled in by waitid: si_status holds the stop signal.
        Ok(Some(unsafe { info.si_status() }))
    })
}

/// Raises `SIGTSTP` in the calling thread, with whatever disposition this process has for it.
pub(crate) fn raise_stop() -> io::Result<()> {
    // SAFETY: raise has no memory-safety preconditions.
    cvt(unsafe { libc::raise(libc::SIGTSTP) }).map(drop)
}

/// Sends `SIGTSTP` to this process's own process group (this process included), as Ctrl-Z sends it to the
/// foreground group. Refuses a group id of 0 or 1 (see [`checked_pid`]).
pub(crate) fn stop_own_group() -> io::Result<()> {
    let pgid = checked_pid(own_group()?)?;
    // SAFETY: kill has no memory-safety preconditions; checked_pid ruled out the ids with special meanings.
    cvt(unsafe { libc::kill(-pgid, libc::SIGTSTP) }).map(drop)
}
