//! Linux-only process controls.

use std::io;

use super::cvt;

/// Makes this process a child subreaper (Linux `PR_SET_CHILD_SUBREAPER`).
pub(crate) fn set_child_subreaper() -> io::Result<()> {
    // SAFETY: prctl with integer arguments only.
    cvt(unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0) }).map(drop)
}

/// The pid of one of our children that has exited, without reaping it (`waitid(P_ALL)` with `WNOWAIT`); `None`
/// when no child has exited yet or we have no child at all.
///
/// The kernel reports the same exited child again until it is reaped.
pub(crate) fn peek_exited_child() -> io::Result<Option<u32>> {
    super::retry_eintr(|| {
        let mut info = std::mem::MaybeUninit::<libc::siginfo_t>::zeroed();
        // SAFETY: `info` points to a zeroed `siginfo_t` that lives across the call; WNOWAIT leaves the child
        // waitable, so nothing is reaped here.
        let rc = unsafe {
            libc::waitid(
                libc::P_ALL,
                0,
                info.as_mut_ptr(),
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        match cvt(rc) {
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::ECHILD) => return Ok(None),
            Err(e) => return Err(e),
        }
        // SAFETY: zero-initialised and possibly filled in by the kernel: every bit pattern is a valid siginfo_t, and
        // si_pid reads the field waitid sets (0, as we zeroed it, when no child has exited).
        let pid = unsafe { info.assume_init().si_pid() };
        Ok(u32::try_from(pid).ok().filter(|&pid| pid > 0))
    })
}

/// Opens a pidfd for process `pid` (Linux 5.3 and later): a descriptor that becomes readable when the process exits.
///
/// The kernel always sets close-on-exec on a pidfd, so no command inherits it. The caller must hold `pid` as an
/// unreaped child, so that it names our child and not a process that reused the id. Fails with `ENOSYS` on older
/// kernels, `EPERM` under some seccomp filters, `EMFILE`/`ENFILE` without a free descriptor. (The lineage scan of
/// `crate::contain` opens pidfds of processes that are not our children, and checks them after the open.)
#[cfg(target_os = "linux")]
pub(crate) fn pidfd_open(pid: u32) -> io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd as _;
    let pid = super::checked_pid(pid)?;
    // SAFETY: pidfd_open takes a pid and flags, no pointers.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0 as libc::c_uint) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = libc::c_int::try_from(fd).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "pidfd_open returned no descriptor",
        )
    })?;
    // SAFETY: the kernel just gave us this descriptor; nothing else owns it.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}
