//! The forked guard process (see `crate::guard`): a copy of this process that joins a group and kills it when the
//! pipe from its supervisor reaches end of file.

use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, OwnedFd};

use super::checked_pid;

/// The highest signal number the forked guard sets to be ignored: Linux's `SIGRTMAX`; elsewhere FreeBSD's
/// (`sigaction` refuses the numbers a system lacks).
#[cfg(all(
    any(target_os = "linux", target_os = "android"),
    not(grouptimeout_portable)
))]
const LAST_SIGNAL: libc::c_int = 64;
#[cfg(not(all(
    any(target_os = "linux", target_os = "android"),
    not(grouptimeout_portable)
)))]
const LAST_SIGNAL: libc::c_int = 128;

/// Forks a guard that ignores every catchable signal, joins group `pgid`, keeps only `read` (as its standard input)
/// open, and then reads it: one byte makes it exit quietly; end of file or an error makes it send `SIGKILL` to its
/// own group. Returns its pid at once, without waiting for the guard to join the group.
///
/// The forked child calls only async-signal-safe functions (`sigaction`, `sigprocmask`, `setpgid`, `dup2`, `close`,
/// `read`, `kill`, `_exit`, and `close_range` or
/// `getrlimit`), so this is sound in a multi-threaded process. It joins the group only after it ignores
/// every signal, so a signal sent to the group never finds it unprotected, and this process need not wait for it:
/// if this process dies meanwhile, the guard still joins, then reads end of file. If it cannot join (the group has no
/// process left), it exits at once without signalling anything, since it is still in this process's group then.
pub(crate) fn fork_guard(pgid: u32, read: &OwnedFd) -> io::Result<u32> {
    let pgid = checked_pid(pgid)?;
    let read = read.as_raw_fd();
    let mut ignore = MaybeUninit::<libc::sigaction>::zeroed();
    // SAFETY: `ignore` is a zeroed sigaction we own; we set its handler to SIG_IGN and empty its mask.
    let ignore = unsafe {
        let p = ignore.as_mut_ptr();
        (*p).sa_sigaction = libc::SIG_IGN;
        libc::sigemptyset(&mut (*p).sa_mask);
        ignore.assume_init()
    };
    // Every signal blocked across the fork, so that none reaches the child before it ignores it (a handler of ours,
    // such as the host's signal pipe, would otherwise run in the child too).
    let mut all = MaybeUninit::<libc::sigset_t>::zeroed();
    let mut old = MaybeUninit::<libc::sigset_t>::zeroed();
    // SAFETY: both are live sigset_t values; sigfillset initialises `all`, pthread_sigmask fills in `old`.
    let rc = unsafe {
        libc::sigfillset(all.as_mut_ptr());
        libc::pthread_sigmask(libc::SIG_SETMASK, all.as_ptr(), old.as_mut_ptr())
    };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    // SAFETY: the child runs `guard_main`, which calls only async-signal-safe functions and never returns.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        guard_main(pgid, read, &ignore);
    }
    let forked = if pid == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(pid as u32)
    };
    // SAFETY: `old` was filled in by the successful pthread_sigmask above.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, old.as_ptr(), std::ptr::null_mut()) };
    forked
}

/// The body of the forked guard; see [`fork_guard`]. Never returns, never allocates.
fn guard_main(pgid: libc::pid_t, read: libc::c_int, ignore: &libc::sigaction) -> ! {
    for signal in 1..=LAST_SIGNAL {
        if signal != libc::SIGKILL && signal != libc::SIGSTOP {
            // SAFETY: `ignore` is a valid sigaction; an invalid signal number only fails with EINVAL.
            unsafe { libc::sigaction(signal, ignore, std::ptr::null_mut()) };
        }
    }
    let mut none = MaybeUninit::<libc::sigset_t>::zeroed();
    // SAFETY: a live sigset_t, emptied, then set as the mask: pending signals, all ignored now, are discarded.
    unsafe {
        libc::sigemptyset(none.as_mut_ptr());
        libc::sigprocmask(libc::SIG_SETMASK, none.as_ptr(), std::ptr::null_mut());
    }
    // SAFETY: setpgid and dup2 take integer arguments only.
    let armed = unsafe { libc::setpgid(0, pgid) == 0 && libc::dup2(read, 0) == 0 };
    if !armed {
        // Maybe still in our supervisor's group: never signal anything from here.
        // SAFETY: _exit ends this process at once.
        unsafe { libc::_exit(127) };
    }
    close_from(1);
    let mut byte = 0u8;
    loop {
        // SAFETY: reads at most one byte into a live local.
        let n = unsafe { libc::read(0, (&mut byte as *mut u8).cast(), 1) };
        if n > 0 {
            // Dismissed: leave the group alone.
            // SAFETY: as above.
            unsafe { libc::_exit(0) };
        }
        if n == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            break;
        }
    }
    // End of file: the supervisor died. We are a member of the group, which keeps its id from being reused.
    // SAFETY: kill with pid 0 signals this process's own group, which setpgid made the command's.
    unsafe {
        libc::kill(0, libc::SIGKILL);
        libc::_exit(1)
    }
}

/// Closes every descriptor from `first` on (`close_range` on Linux, a bounded loop where that is missing).
fn close_from(first: libc::c_int) {
    #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
    {
        // SAFETY: close_range takes integer arguments only; closing our own descriptors in this forked child.
        if unsafe {
            libc::syscall(
                libc::SYS_close_range,
                first as libc::c_uint,
                libc::c_uint::MAX,
                0,
            )
        } == 0
        {
            return;
        }
    }
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into a live rlimit struct.
    let max = match unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } {
        0 => limit.rlim_cur.min(65_536) as libc::c_int,
        _ => 65_536,
    };
    for fd in first..max {
        // SAFETY: closing a descriptor number; EBADF for one that is not open is harmless.
        unsafe { libc::close(fd) };
    }
}
