//! Waiting for our children without reaping them, and signalling processes and groups by checked ids.

use std::io;
use std::mem::MaybeUninit;
use std::os::unix::process::ExitStatusExt as _;
use std::process::ExitStatus;
use std::time::Duration;

use super::{checked_pid, cvt, retry_eintr, wait_id};

/// Whether our child `pid` has exited, *without* reaping it (`waitid` with `WNOWAIT`).
///
/// While the child stays unreaped, its pid and so its process group id cannot be reused, which is what makes a
/// later `kill(-pid, …)` safe. Fails with `ECHILD` when `pid` is not (or no longer) an unreaped child of ours.
pub fn has_exited(pid: u32) -> io::Result<bool> {
    let pid = checked_pid(pid)?;
    retry_eintr(|| {
        let mut info = MaybeUninit::<libc::siginfo_t>::zeroed();
        // SAFETY: `info` points to a zeroed `siginfo_t` that lives across the call; WNOWAIT leaves the child
        // waitable, so std's `Child` still owns and reaps it.
        cvt(unsafe {
            libc::waitid(
                libc::P_PID,
                wait_id(pid),
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

/// Reaps our child `pid`, blocking until it exits (`wait4`, the call std's `Child::wait` makes, which also gives the
/// child's resource usage): its status, and its usage (the child's and that of the descendants it waited for). Fails
/// with `ECHILD` when `pid` is not an unreaped child of ours.
pub fn reap(pid: u32) -> io::Result<(ExitStatus, crate::Usage)> {
    let pid = checked_pid(pid)?;
    retry_eintr(|| {
        let mut status = 0;
        let mut usage = MaybeUninit::<libc::rusage>::zeroed();
        // SAFETY: `status` and the zeroed `usage` live across the call, which writes at most one of each. Then
        // zero-initialised and possibly filled in by the kernel: every bit pattern is a valid rusage.
        let usage = unsafe {
            cvt(libc::wait4(pid, &raw mut status, 0, usage.as_mut_ptr()))?;
            usage.assume_init()
        };
        let time = |t: libc::timeval| {
            let (s, us) = (t.tv_sec.try_into(), t.tv_usec.try_into());
            Duration::from_secs(s.unwrap_or(0)) + Duration::from_micros(us.unwrap_or(0))
        };
        // Kilobytes, but bytes on macOS.
        let unit = if cfg!(target_vendor = "apple") {
            1
        } else {
            1024
        };
        let rss = u64::try_from(usage.ru_maxrss)
            .unwrap_or(0)
            .saturating_mul(unit);
        let used = crate::Usage::of_leader(time(usage.ru_utime), time(usage.ru_stime), rss);
        Ok((ExitStatus::from_raw(status), used))
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
pub fn signal_group(pgid: u32, signal: libc::c_int) -> io::Result<()> {
    signal_group_kept(pgid, signal, false)
}

/// [`signal_group`], or for a group whose id names a keeper outside it (`kept`: the pid `pgid` is a process of the
/// job's boundary that passes on to the command what reaches its pid), the group alone, and the keeper `SIGCONT`
/// after `SIGKILL` or `SIGCONT` (its wake-up: a keeper stopped with its command goes on; its error is ignored, a
/// keeper that exited needs no waking).
pub(crate) fn signal_group_kept(pgid: u32, signal: libc::c_int, kept: bool) -> io::Result<()> {
    let pgid = checked_pid(pgid)?;
    // SAFETY: kill has no memory-safety preconditions; checked_pid ruled out the ids with special meanings.
    let group = gone_is_ok(cvt(unsafe { libc::kill(-pgid, signal) }));
    let to_leader = if kept {
        (signal == libc::SIGKILL || signal == libc::SIGCONT).then_some(libc::SIGCONT)
    } else {
        // SAFETY: getpgid has no memory-safety preconditions.
        (signal == libc::SIGKILL || unsafe { libc::getpgid(pgid) } != pgid).then_some(signal)
    };
    let Some(to_leader) = to_leader else {
        return group;
    };
    // SAFETY: as above; a positive pid signals the one leader.
    let leader = gone_is_ok(cvt(unsafe { libc::kill(pgid, to_leader) }));
    if kept {
        return group;
    }
    group.and(leader)
}

/// Whether group `pgid`, whose leader (pid `pgid`) has exited and is held unreaped, has a member left that runs,
/// other than `except`: on Linux, a process in `/proc` whose `stat` names the group and is not a zombie (`/proc` as
/// mounted: one of another PID namespace names other groups); elsewhere `kill(-pgid, 0)` (a group of zombies answers
/// `ESRCH`, or `EPERM` on macOS), which counts `except` too.
#[cfg(target_os = "linux")]
pub fn group_has_members(pgid: u32, except: Option<u32>) -> io::Result<bool> {
    let group = pgid.to_string();
    for entry in std::fs::read_dir("/proc")?.flatten() {
        let member = entry.file_name().to_str().and_then(|s| s.parse().ok());
        if member.is_none() || member == Some(pgid) || member == except {
            continue;
        }
        // Gone meanwhile: not a member. After the name (which may hold anything): state, ppid, pgrp.
        let stat = std::fs::read(entry.path().join("stat")).unwrap_or_default();
        let after = stat
            .iter()
            .rposition(|&b| b == b')')
            .map_or(&[][..], |i| &stat[i..]);
        let mut fields = after.split(|&b| b == b' ').skip(1);
        let (state, _, pgrp) = (fields.next(), fields.next(), fields.next());
        if pgrp == Some(group.as_bytes()) && !matches!(state, Some(b"Z" | b"X" | b"x")) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// [`group_has_members`] where there is no `/proc`: `kill(-pgid, 0)`.
#[cfg(not(target_os = "linux"))]
pub fn group_has_members(pgid: u32, _except: Option<u32>) -> io::Result<bool> {
    let pgid = checked_pid(pgid)?;
    // SAFETY: kill has no memory-safety preconditions; signal 0 sends nothing; checked_pid ruled out the ids with
    // special meanings.
    match cvt(unsafe { libc::kill(-pgid, 0) }) {
        Err(e) if matches!(e.raw_os_error(), Some(libc::ESRCH | libc::EPERM)) => Ok(false),
        other => other.map(|_| true),
    }
}

/// `ESRCH` (no such process or group) means "already gone": success.
fn gone_is_ok(result: io::Result<libc::c_int>) -> io::Result<()> {
    match result {
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Ok(()),
        other => other.map(drop),
    }
}

/// Whether this process has SIGCHLD set to be ignored (`SIG_IGN`) or its children auto-reaped (`SA_NOCLDWAIT`).
///
/// Either way the kernel reaps our children as soon as they exit, so nothing would pin a group id.
pub fn children_are_auto_reaped() -> io::Result<bool> {
    let action = current_action(libc::SIGCHLD)?;
    Ok(action.sa_sigaction == libc::SIG_IGN || action.sa_flags & libc::SA_NOCLDWAIT != 0)
}

/// The current disposition of `signal`.
pub fn current_action(signal: libc::c_int) -> io::Result<libc::sigaction> {
    let mut old = MaybeUninit::<libc::sigaction>::zeroed();
    // SAFETY: a null `act` only reads the current disposition into `old`, which lives across the call.
    cvt(unsafe { libc::sigaction(signal, std::ptr::null(), old.as_mut_ptr()) })?;
    // SAFETY: zero-initialised and filled in by a successful sigaction.
    Ok(unsafe { old.assume_init() })
}
