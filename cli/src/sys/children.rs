//! Signalling and reaping one child of ours by its pid, for `host`'s subreaper and `signal_child`.

use std::io;

use super::{checked_pid, cvt, retry_eintr};

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
        match cvt(unsafe { libc::waitpid(pid, &raw mut status, libc::WNOHANG) }) {
            Ok(0) => Ok(false),
            Ok(_) => Ok(true),
            Err(e) if e.raw_os_error() == Some(libc::ECHILD) => Ok(true),
            Err(e) => Err(e),
        }
    })
}
