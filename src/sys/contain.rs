//! Linux calls of the job boundary (`crate::contain`): extended attributes of a cgroup folder, entering a cgroup
//! before `exec`, and signalling through a pidfd.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd as _, BorrowedFd};
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

/// Added to the errno of a failed write to `cgroup.procs` in the hook: std passes the hook's OS error code to the
/// parent as the spawn's error, and no `exec` error is this large, so the parent tells a failed entry from a failed
/// `exec` without a descriptor of its own for the report.
const ENTRY_FAILED: i32 = 1 << 20;

/// The hook that [`enter_at_exec`] added to a `Command`; dropping it disarms the hook (so that a later spawn of the
/// same `Command` never writes to whatever the descriptor number names by then), then closes `cgroup.procs`.
#[derive(Debug)]
pub(crate) struct EnterHook {
    armed: Arc<AtomicBool>,
    /// The cgroup's `cgroup.procs`, which the hook's child writes to (by number); closed after the spawn.
    _procs: File,
}

impl EnterHook {
    /// Disarms the hook, closes `cgroup.procs`, and tells whether `spawn_error`, the error of a spawn made while the
    /// hook was armed, is the hook's: its child could not enter the cgroup (`Some`, that write's OS error), so the
    /// command did not run.
    pub(crate) fn entry_error(self, spawn_error: &io::Error) -> Option<io::Error> {
        drop(self);
        let code = spawn_error.raw_os_error()?;
        (code > ENTRY_FAILED).then(|| io::Error::from_raw_os_error(code - ENTRY_FAILED))
    }
}

impl Drop for EnterHook {
    fn drop(&mut self) {
        self.armed.store(false, Ordering::SeqCst);
    }
}

/// Makes the child of every spawn of `command`, while the returned hook lives, move itself into the cgroup whose
/// `cgroup.procs` is `procs` (open for writing; the hook owns it) just before it calls `exec`: it writes "0" there,
/// which moves the writing process. The write is async-signal-safe, so this is sound in a multi-threaded process; a
/// failed write fails the spawn, and [`EnterHook::entry_error`] tells it apart from a failed `exec`. No other
/// descriptor is held for it: the spawn needs one more than a plain one (and std's own pipe of a forked spawn).
///
/// This adds a `pre_exec` hook, so std forks and execs instead of using `posix_spawn` (see
/// `GroupCommandExt::spawn_contained` for the cost); the hook stays on `command`, disarmed, after the returned value is
/// dropped.
pub(crate) fn enter_at_exec(command: &mut Command, procs: File) -> EnterHook {
    let fd = procs.as_raw_fd();
    let armed = Arc::new(AtomicBool::new(true));
    let hook = Arc::clone(&armed);
    // SAFETY: the hook runs in the forked child before exec and calls only `write(2)` and reads `errno`, both
    // async-signal-safe; it allocates nothing and takes no lock (an atomic load is a plain read of memory copied by
    // the fork). While armed, `fd` is open: the returned hook owns it and disarms before closing it.
    unsafe {
        command.pre_exec(move || {
            if !hook.load(Ordering::SeqCst) || libc::write(fd, b"0".as_ptr().cast(), 1) == 1 {
                return Ok(());
            }
            let errno = io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO);
            Err(io::Error::from_raw_os_error(ENTRY_FAILED + errno))
        })
    };
    EnterHook {
        armed,
        _procs: procs,
    }
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
