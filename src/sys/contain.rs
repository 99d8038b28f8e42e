//! Linux calls of the job boundary (`crate::contain`): extended attributes of a cgroup folder, entering a cgroup
//! before `exec`, and signalling through a pidfd.

use std::ffi::CString;
use std::fs::File;
use std::io::{self, Read as _};
use std::os::fd::{AsFd as _, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::{cvt, cvt_len};

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

/// The hook that [`enter_at_exec`] added to a `Command`; dropping it disarms the hook, so that a later spawn of the
/// same `Command` never writes to whatever the descriptor numbers name by then.
#[derive(Debug)]
pub(crate) struct EnterHook {
    armed: Arc<AtomicBool>,
    /// The read end of the pipe on which a child that could not enter the cgroup says so (one byte).
    report: File,
    /// Its write end, which the hook's child writes to (by number).
    _write: OwnedFd,
}

impl EnterHook {
    /// Disarms the hook and tells whether a child of a spawn made while it was armed failed to enter the cgroup (its
    /// write to `cgroup.procs` failed, so the spawn failed with that write's error). Call after the spawn returned.
    pub(crate) fn entry_failed(self) -> bool {
        self.armed.store(false, Ordering::SeqCst);
        // Non-blocking: a child forked meanwhile by another thread may hold the write end until its own `exec`.
        let mut byte = [0u8; 1];
        (&self.report).read(&mut byte).is_ok_and(|n| n == 1)
    }
}

impl Drop for EnterHook {
    fn drop(&mut self) {
        self.armed.store(false, Ordering::SeqCst);
    }
}

/// Makes the child of every spawn of `command`, while the returned hook lives, move itself into the cgroup whose
/// `cgroup.procs` is `procs` (open for writing) just before it calls `exec`: it writes "0" there, which moves the
/// writing process. The write is async-signal-safe, so this is sound in a multi-threaded process; a failed write
/// fails the spawn with the write's error (std passes it on), and [`EnterHook::entry_failed`] tells it apart from a
/// failed `exec`.
///
/// This adds a `pre_exec` hook, so std forks and execs instead of using `posix_spawn` (see
/// `GroupCommandExt::spawn_contained` for the cost); the hook stays on `command`, disarmed, after the returned value is
/// dropped.
///
/// # Errors
///
/// The pipe for the report cannot be made (`EMFILE`, ...).
pub(crate) fn enter_at_exec(command: &mut Command, procs: BorrowedFd<'_>) -> io::Result<EnterHook> {
    let (report, write) = super::cloexec_pipe()?;
    super::set_nonblocking(report.as_fd())?;
    let fds = (procs.as_raw_fd(), write.as_raw_fd());
    let armed = Arc::new(AtomicBool::new(true));
    let hook = Arc::clone(&armed);
    // SAFETY: the hook runs in the forked child before exec and calls only `write(2)`, which is async-signal-safe;
    // it allocates nothing and takes no lock (an atomic load is a plain read of memory copied by the fork). While
    // armed, both descriptors are open: the returned hook owns the write end and disarms before closing it, and
    // the caller keeps `procs` open while the hook lives.
    unsafe {
        command.pre_exec(move || {
            if !hook.load(Ordering::SeqCst) {
                return Ok(());
            }
            if libc::write(fds.0, b"0".as_ptr().cast(), 1) == 1 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            libc::write(fds.1, b"!".as_ptr().cast(), 1);
            Err(e)
        })
    };
    Ok(EnterHook {
        armed,
        report: File::from(report),
        _write: write,
    })
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
