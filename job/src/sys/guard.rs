//! The guard of `die_with_parent` as this process holds it (see `crate::guard`): its pipe written without a
//! `SIGPIPE`, and the guard process itself, our child, held by a pidfd where one can be had (signalled and reaped
//! through it).

use std::fs::File;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, OwnedFd};

use super::{checked_pid, cvt, wait_id};

/// Writes `bytes` to the guard's pipe `pipe` (non-blocking) in one `write`, whole or not at all as a pipe does for a
/// short write, without a `SIGPIPE` where the guard is gone (this thread blocks it for the call, and takes the one the
/// write raised, if it was not pending before): a host that has not ignored `SIGPIPE` must not die of a dead guard.
pub(crate) fn write_to_guard(pipe: &File, bytes: &[u8]) -> io::Result<()> {
    let mut only = MaybeUninit::<libc::sigset_t>::zeroed();
    let mut old = MaybeUninit::<libc::sigset_t>::zeroed();
    let mut pending = MaybeUninit::<libc::sigset_t>::zeroed();
    // SAFETY: the sets live across the calls; pthread_sigmask, sigpending and write take valid pointers and lengths.
    unsafe {
        libc::sigemptyset(only.as_mut_ptr());
        libc::sigaddset(only.as_mut_ptr(), libc::SIGPIPE);
        libc::sigpending(pending.as_mut_ptr());
        let was_pending = libc::sigismember(pending.as_ptr(), libc::SIGPIPE) == 1;
        libc::pthread_sigmask(libc::SIG_BLOCK, only.as_ptr(), old.as_mut_ptr());
        let wrote = libc::write(pipe.as_raw_fd(), bytes.as_ptr().cast(), bytes.len());
        let e = io::Error::last_os_error();
        libc::sigpending(pending.as_mut_ptr());
        if !was_pending && libc::sigismember(pending.as_ptr(), libc::SIGPIPE) == 1 {
            // Pending now, so sigwait returns at once.
            let mut taken = 0;
            libc::sigwait(only.as_ptr(), &raw mut taken);
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, old.as_ptr(), std::ptr::null_mut());
        if wrote < 0 {
            return Err(e);
        }
    }
    Ok(())
}

/// How a child process ended, as `waitid` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// It exited with this status.
    Exited(i32),
    /// This signal ended it.
    Killed(i32),
}

/// `CLD_EXITED`, the `si_code` of a child that exited: 1 on Linux, macOS and the BSDs (libc 0.2.139 defines it for
/// Linux only).
const CLD_EXITED: libc::c_int = 1;

/// One child process of ours (a guard), held by a pidfd where one can be had, else by its pid.
///
/// The pidfd (Linux 5.4 and later: `pidfd_open`, and `waitid(P_PIDFD)`) is opened by [`Held::new`] while the process
/// is our unreaped child, so it names that process for good: once someone else reaped it (a subreaper's sweep, a
/// `waitpid(-1)` elsewhere in the program), a signal through it fails with `ESRCH` and a wait with `ECHILD`, even
/// when its pid was given to a new process. Held by its pid (other systems, older kernels, no descriptor left, the
/// `grouptimeout_no_pidfd` and `grouptimeout_portable` cfgs), a pid reaped by someone else and given to another child of ours cannot be told
/// apart from it.
#[derive(Debug)]
pub(crate) struct Held {
    pid: libc::pid_t,
    pidfd: Option<OwnedFd>,
}

impl Held {
    /// Holds our unreaped child `pid`; the caller makes sure nothing reaped it yet.
    pub(crate) fn new(pid: u32) -> io::Result<Held> {
        // Any failure (ENOSYS before Linux 5.3, EPERM under seccomp, EMFILE) leaves the pid.
        #[cfg(all(
            target_os = "linux",
            not(grouptimeout_no_pidfd),
            not(grouptimeout_portable)
        ))]
        let pidfd = super::pidfd_open(pid).ok();
        #[cfg(not(all(
            target_os = "linux",
            not(grouptimeout_no_pidfd),
            not(grouptimeout_portable)
        )))]
        let pidfd = None;
        let held = Held {
            pid: checked_pid(pid)?,
            pidfd,
        };
        // Linux 5.3 has pidfds but not `waitid(P_PIDFD)` (EINVAL): one peek, which succeeds for our unreaped child,
        // tells.
        if held.pidfd.is_some() && held.wait(libc::WNOWAIT).is_err() {
            return Ok(Held {
                pidfd: None,
                ..held
            });
        }
        Ok(held)
    }

    /// The pidfd, if the process is held by one.
    pub(crate) fn pidfd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        use std::os::fd::AsFd as _;
        self.pidfd.as_ref().map(|fd| fd.as_fd())
    }

    /// Whether it has exited, without reaping it; fails with `ECHILD` once it is not our unreaped child any more.
    pub(crate) fn has_exited(&self) -> io::Result<bool> {
        self.wait(libc::WNOWAIT).map(|end| end.is_some())
    }

    /// Sends it `SIGKILL` (through the pidfd if there is one); `ESRCH` (reaped already) counts as success.
    pub(crate) fn kill(&self) -> io::Result<()> {
        let sent = match &self.pidfd {
            #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
            // SAFETY: pidfd_send_signal takes a descriptor, a signal number, a null siginfo and flags 0.
            Some(fd) => cvt(unsafe {
                libc::syscall(
                    libc::SYS_pidfd_send_signal,
                    fd.as_raw_fd(),
                    libc::SIGKILL,
                    std::ptr::null::<libc::siginfo_t>(),
                    0 as libc::c_uint,
                )
            })
            .map(drop),
            // SAFETY: kill has no memory-safety preconditions; checked_pid ruled out 0, 1 and negative ids.
            _ => cvt(unsafe { libc::kill(self.pid, libc::SIGKILL) }).map(drop),
        };
        match sent {
            Err(e) if e.raw_os_error() != Some(libc::ESRCH) => Err(e),
            _ => Ok(()),
        }
    }

    /// Reaps it if it has exited, without blocking: how it ended, or `None` while it runs. Fails with `ECHILD` once
    /// it is not our unreaped child any more.
    pub(crate) fn reap_if_exited(&self) -> io::Result<Option<End>> {
        self.wait(0)
    }

    /// `waitid` for exit, without blocking, with `flags` added.
    fn wait(&self, flags: libc::c_int) -> io::Result<Option<End>> {
        let (idtype, id) = match &self.pidfd {
            #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
            Some(fd) => (libc::P_PIDFD, wait_id(fd.as_raw_fd())),
            _ => (libc::P_PID, wait_id(self.pid)),
        };
        super::retry_eintr(|| {
            let mut info = MaybeUninit::<libc::siginfo_t>::zeroed();
            // SAFETY: `info` is a zeroed siginfo_t that lives across the call, which may fill it in; one process (a
            // pid or a pidfd) is waited for, never a group or any child. Then zero-initialised and possibly filled
            // in: every bit pattern is a valid siginfo_t, and `si_pid` and `si_status` read integers in it.
            let (pid, code, status) = unsafe {
                cvt(libc::waitid(
                    idtype,
                    id,
                    info.as_mut_ptr(),
                    flags | libc::WEXITED | libc::WNOHANG,
                ))?;
                let info = info.assume_init();
                (info.si_pid(), info.si_code, info.si_status())
            };
            // With WNOHANG and no exited child there is no report (pid 0).
            Ok((pid != 0).then_some(if code == CLD_EXITED {
                End::Exited(status)
            } else {
                End::Killed(status)
            }))
        })
    }
}
