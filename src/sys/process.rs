//! Waiting for our children without reaping them, and signalling processes and groups by checked ids.

use std::io;
use std::mem::MaybeUninit;

use super::{checked_pid, cvt, retry_eintr};

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

/// Sends `signal` to every process in group `pgid` and to the group's leader, whose pid is `pgid`, even if the
/// leader has moved itself to another group (`setpgid`). A group with no process left (`ESRCH`) counts as success.
///
/// `SIGKILL` goes to the leader by pid every time (a second `SIGKILL` changes nothing). Any other signal goes to
/// the leader by pid only when it is no longer in its group, so that a leader that handles the signal sees it once.
/// (A leader that leaves and rejoins its group between the two calls may then miss that signal; it cannot miss a
/// `SIGKILL`.)
///
/// The caller must hold the group's leader unreaped: that is what keeps `pgid` from naming someone else's group or
/// process.
pub(crate) fn signal_group(pgid: u32, signal: libc::c_int) -> io::Result<()> {
    let pgid = checked_pid(pgid)?;
    // SAFETY: kill has no memory-safety preconditions; checked_pid ruled out the ids with special meanings.
    let group = gone_is_ok(cvt(unsafe { libc::kill(-pgid, signal) }));
    // SAFETY: getpgid has no memory-safety preconditions.
    let moved = signal == libc::SIGKILL || unsafe { libc::getpgid(pgid) } != pgid;
    if !moved {
        return group;
    }
    // SAFETY: as above; a positive pid signals the one leader.
    let leader = gone_is_ok(cvt(unsafe { libc::kill(pgid, signal) }));
    group.and(leader)
}

/// The process group of process `pid` (`getpgid`).
pub(crate) fn group_of(pid: u32) -> io::Result<u32> {
    let pid = checked_pid(pid)?;
    // SAFETY: getpgid has no memory-safety preconditions.
    cvt(unsafe { libc::getpgid(pid) }).map(|pgid| pgid as u32)
}

/// `ESRCH` (no such process or group) means "already gone": success.
fn gone_is_ok(result: io::Result<libc::c_int>) -> io::Result<()> {
    match result {
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Ok(()),
        other => other.map(drop),
    }
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
    waitpid(pid, libc::WNOHANG)
}

fn waitpid(pid: u32, flags: libc::c_int) -> io::Result<bool> {
    let pid = checked_pid(pid)?;
    retry_eintr(|| {
        let mut status = 0;
        // SAFETY: `status` is a live int; waitpid on one specific pid, never -1 or a group.
        match cvt(unsafe { libc::waitpid(pid, &mut status, flags) }) {
            Ok(0) => Ok(false),
            Ok(_) => Ok(true),
            Err(e) if e.raw_os_error() == Some(libc::ECHILD) => Ok(true),
            Err(e) => Err(e),
        }
    })
}
