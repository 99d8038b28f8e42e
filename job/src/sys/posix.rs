//! Two plain calls that only this crate makes, on the caller's side: the guard's close-on-exec pipe, and the process
//! group of a process (`getpgid`), which tells whether a process is a member of a job's group.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};

use super::{checked_pid, cvt, kernel_pid};

/// Creates a pipe whose ends are both close-on-exec (and blocking): `(read, write)`.
///
/// On Linux both ends get the flag atomically (`pipe2`), so a command spawned meanwhile by another thread never
/// inherits an end; elsewhere it is set right after `pipe(2)`, as std does for its own pipes.
pub(crate) fn cloexec_pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds: [libc::c_int; 2] = [-1; 2];
    #[cfg(all(
        any(target_os = "linux", target_os = "android"),
        not(grouptimeout_portable)
    ))]
    {
        // SAFETY: `fds` is a live array of two ints, as pipe2 requires.
        cvt(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    }
    #[cfg(not(all(
        any(target_os = "linux", target_os = "android"),
        not(grouptimeout_portable)
    )))]
    {
        // SAFETY: `fds` is a live array of two ints, as pipe requires.
        cvt(unsafe { libc::pipe(fds.as_mut_ptr()) })?;
    }
    // SAFETY: the kernel just gave us these two descriptors; nothing else owns them.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    #[cfg(not(all(
        any(target_os = "linux", target_os = "android"),
        not(grouptimeout_portable)
    )))]
    for fd in [&read, &write] {
        // SAFETY: fcntl on a descriptor we own, with integer arguments only.
        cvt(unsafe {
            libc::fcntl(
                std::os::fd::AsRawFd::as_raw_fd(fd),
                libc::F_SETFD,
                libc::FD_CLOEXEC,
            )
        })?;
    }
    Ok((read, write))
}

/// The process group of process `pid` (`getpgid`).
pub(crate) fn group_of(pid: u32) -> io::Result<u32> {
    let pid = checked_pid(pid)?;
    // SAFETY: getpgid has no memory-safety preconditions.
    kernel_pid(cvt(unsafe { libc::getpgid(pid) })?)
}
