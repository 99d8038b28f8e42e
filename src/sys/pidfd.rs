//! Opening a pidfd (Linux) for our unreaped leader, which a wait sleeps on until the leader exits (also used by the
//! guard and the job boundary).

use std::io;

/// Opens a pidfd for process `pid` (Linux 5.3 and later): a descriptor that becomes readable when the process exits.
///
/// The kernel always sets close-on-exec on a pidfd, so no command inherits it. The caller must hold `pid` as an
/// unreaped child, so that it names our child and not a process that reused the id. Fails with `ENOSYS` on older
/// kernels, `EPERM` under some seccomp filters, `EMFILE`/`ENFILE` without a free descriptor. (The lineage scan of
/// `crate::contain` opens pidfds of processes that are not our children, and checks them after the open.)
pub fn pidfd_open(pid: u32) -> io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd as _;
    let pid = super::checked_pid(pid)?;
    // SAFETY: pidfd_open takes a pid and flags, no pointers.
    let fd = super::cvt(unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0 as libc::c_uint) })?;
    let fd = libc::c_int::try_from(fd).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "pidfd_open returned no descriptor",
        )
    })?;
    // SAFETY: the kernel just gave us this descriptor; nothing else owns it.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}
