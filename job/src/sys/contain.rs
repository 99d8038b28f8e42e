//! Linux calls of the job boundary (`crate::contain`): extended attributes of a cgroup folder, several descriptors
//! watched as one (epoll), signalling through a pidfd, and a kept job's keeper seen from this process (stopped or
//! exited, woken).

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd as _, BorrowedFd, FromRawFd as _, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;

use super::{checked_pid, cvt, cvt_len, retry_eintr, wait_id};

/// Whether this process may make a folder in `dir` (`access(W_OK)`: `EACCES` for a user without the right, `EROFS`
/// on a read-only mount).
pub(crate) fn writable(dir: &Path) -> io::Result<()> {
    let dir = CString::new(dir.as_os_str().as_bytes())?;
    // SAFETY: a NUL-terminated path that lives across the call.
    cvt(unsafe { libc::access(dir.as_ptr(), libc::W_OK) }).map(drop)
}

/// Whether `path` is on a cgroup v2 file system (`statfs`); `false` where it cannot be told.
pub(crate) fn is_cgroup2(path: &Path) -> bool {
    /// `CGROUP2_SUPER_MAGIC` (include/uapi/linux/magic.h).
    const CGROUP2: u64 = 0x6367_7270;
    let Ok(path) = CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    let mut fs = std::mem::MaybeUninit::<libc::statfs>::zeroed();
    // SAFETY: a NUL-terminated path and a statfs struct that live across the call, which fills the struct.
    if unsafe { libc::statfs(path.as_ptr(), fs.as_mut_ptr()) } != 0 {
        return false;
    }
    // SAFETY: zero-initialised, filled in by statfs.
    let fs = unsafe { fs.assume_init() };
    #[allow(
        clippy::unnecessary_cast,
        clippy::cast_sign_loss,
        reason = "f_type is i64 on glibc and u64 on musl; the magic number is positive"
    )]
    let kind = fs.f_type as u64;
    kind == CGROUP2
}

/// The value of extended attribute `name` of `path` (at most 64 bytes of it); `None` when it is not set
/// (`ENODATA`) or the file system has no extended attributes (`ENOTSUP`).
pub(crate) fn getxattr(path: &Path, name: &str) -> io::Result<Option<Vec<u8>>> {
    let path = CString::new(path.as_os_str().as_bytes())?;
    let name = CString::new(name)?;
    let mut value = [0u8; 64];
    // SAFETY: both names are NUL-terminated strings that live across the call; `value` is a writable buffer of the
    // length passed, into which getxattr writes at most that many bytes.
    let n = cvt_len(unsafe {
        libc::getxattr(
            path.as_ptr(),
            name.as_ptr(),
            value.as_mut_ptr().cast(),
            value.len(),
        )
    });
    match n {
        Ok(n) => Ok(Some(value[..n].to_vec())),
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::ENODATA | libc::ENOTSUP | libc::ERANGE)
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// An epoll descriptor (close-on-exec) that is readable while any of `fds` has its events (level-triggered; an error
/// or a hang-up counts too): one descriptor that stands for several in a wait's `Interest`, and that turns a
/// `POLLPRI` (a cgroup's `cgroup.events` at a change of what it says) into the `POLLIN` an `Interest` lists. It holds
/// the files, not their numbers: each leaves it when its last descriptor is closed. `EMFILE`, `ENOMEM` as the calls
/// fail.
pub(crate) fn readable_when_any(fds: &[(BorrowedFd<'_>, libc::c_int)]) -> io::Result<OwnedFd> {
    // SAFETY: no pointer arguments; a descriptor returned is ours alone, owned at once.
    let epoll = unsafe { OwnedFd::from_raw_fd(cvt(libc::epoll_create1(libc::EPOLL_CLOEXEC))?) };
    for (fd, events) in fds {
        let mut event = libc::epoll_event {
            // The flags are positive constants (EPOLLIN, EPOLLPRI).
            events: events.unsigned_abs(),
            u64: 0,
        };
        // SAFETY: two live descriptors (the epoll one, owned above; `fd`, borrowed for the call) and an event that
        // lives across the call, which only reads it.
        cvt(unsafe {
            libc::epoll_ctl(
                epoll.as_raw_fd(),
                libc::EPOLL_CTL_ADD,
                fd.as_raw_fd(),
                &raw mut event,
            )
        })?;
    }
    Ok(epoll)
}

/// Sends `signal` to the process a pidfd names (`pidfd_send_signal`, Linux 5.1): `Ok(false)` when it has exited.
///
/// Unlike `kill(2)` this never reaches another process that reused the pid.
pub(crate) fn pidfd_send_signal(pidfd: BorrowedFd<'_>, signal: libc::c_int) -> io::Result<bool> {
    // SAFETY: integer arguments and a null siginfo pointer, which the call allows (it then fills one in itself).
    let rc = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd.as_raw_fd(),
            signal,
            std::ptr::null::<libc::siginfo_t>(),
            0 as libc::c_uint,
        )
    };
    match cvt(rc) {
        Ok(_) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Whether our unreaped child `pid` (a kept job's keeper) has exited (`Some(true)`), is stopped (`Some(false)`: a
/// stop that no `waitid`/`waitpid` with `WSTOPPED`/`WUNTRACED` has consumed), or neither (`None`): one
/// `waitid(WEXITED | WSTOPPED | WNOHANG | WNOWAIT)`, which consumes nothing (std still reaps the child, and the stop
/// stays reported). `ECHILD` (the OS error as it is) when it is not, or no longer, an unreaped child of ours.
pub(crate) fn exited_or_stopped(pid: u32) -> io::Result<Option<bool>> {
    let pid = checked_pid(pid)?;
    retry_eintr(|| {
        let mut info = std::mem::MaybeUninit::<libc::siginfo_t>::zeroed();
        // SAFETY: `info` is a zeroed siginfo_t that lives across the call, which may fill it in; WNOWAIT consumes no
        // report. Zero-initialised and possibly filled in: every bit pattern is a valid siginfo_t.
        let (reported, code) = unsafe {
            cvt(libc::waitid(
                libc::P_PID,
                wait_id(pid),
                info.as_mut_ptr(),
                libc::WEXITED | libc::WSTOPPED | libc::WNOHANG | libc::WNOWAIT,
            ))?;
            let info = info.assume_init();
            (info.si_pid(), info.si_code)
        };
        // With WNOHANG and no report there is none (pid 0).
        Ok((reported != 0).then_some(code != libc::CLD_STOPPED))
    })
}

/// Sends `SIGCONT` to our unreaped child `pid` (a kept job's keeper): it goes on if it was stopped (even with every
/// signal blocked, as a keeper has them), and wakes to look at its job again. Errors are ignored: a keeper that has
/// exited needs no waking.
pub(crate) fn wake_child(pid: u32) {
    if let Ok(pid) = checked_pid(pid) {
        // SAFETY: kill has no memory-safety preconditions; the pid is checked (> 1), and the caller holds it as an
        // unreaped child of ours, so it names that child.
        unsafe { libc::kill(pid, libc::SIGCONT) };
    }
}
