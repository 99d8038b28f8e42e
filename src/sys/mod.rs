//! The crate's only `unsafe`: thin, safe wrappers over the libc calls it needs.
//!
//! One file per concern, each compiled only with the feature that uses it (`AUDITING.md` counts them):
//!
//! - core: `process` (waiting for and signalling processes and groups), `fd` (`poll`), `pidfd` (Linux);
//! - `capture`: `pipe` (non-blocking reads of the output pipes).
//!
//! The guard, the job boundary and the process-wide facilities have their `unsafe` in their own crates' `sys`
//! (`grouptimeout-job`, `grouptimeout-cli`).
//!
//! Each wrapper checks its arguments, retries `EINTR` where the call can be interrupted, and turns
//! a failure into `io::Error::last_os_error()` through [`cvt`].
//!
//! Where a wrapper says "on Linux", a build with `--cfg grouptimeout_portable` takes the branch of macOS and FreeBSD
//! instead wherever that branch is plain POSIX, so that Linux runs it too (`DEVELOPMENT.md`'s "Platforms" lists each
//! point).
// `pub` for `crate::__private::sys` (the sibling crates' reuse of these helpers), which is hidden: the lints for a
// public API's docs do not apply to it.
#![allow(
    clippy::missing_errors_doc,
    clippy::must_use_candidate,
    reason = "reached only through the hidden `__private::sys`, documented there"
)]

use std::io;

/// Turns the C convention "-1 and `errno`" into an `io::Error`, for the `int` of most calls and the `long` of
/// `syscall(2)`.
pub fn cvt<T: Copy + PartialEq + From<i8>>(ret: T) -> io::Result<T> {
    if ret == T::from(-1) {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Turns the result of a call that returns a byte count or -1 and `errno` (`read`, `getxattr`) into the count.
pub fn cvt_len(ret: isize) -> io::Result<usize> {
    usize::try_from(ret).map_err(|_| io::Error::last_os_error())
}

/// `e` itself where it holds an OS error number, so that the caller gets `raw_os_error()` and std's kind for it (an
/// `io::Error` holds a number or a message, never both: the system's text is then its message); else an error of
/// `e`'s kind with the message `what(&e)`, which says what failed. The one rule for every error the crate passes on.
pub fn os_error_or(e: io::Error, what: impl FnOnce(&io::Error) -> String) -> io::Error {
    if e.raw_os_error().is_some() {
        e
    } else {
        let message = what(&e);
        io::Error::new(e.kind(), message)
    }
}

/// Runs `f` again while it fails with `EINTR`.
pub fn retry_eintr<T>(mut f: impl FnMut() -> io::Result<T>) -> io::Result<T> {
    loop {
        match f() {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            other => return other,
        }
    }
}

/// Converts a process or group id to `pid_t`, refusing 0, 1 and anything that does not fit.
///
/// This is the one guard against `kill(0, …)`, `kill(-1, …)` and `kill(-0, …)`, which would signal our own
/// group, every process we may signal, or init's group; every id the crate passes to the system goes through it.
pub fn checked_pid(id: u32) -> io::Result<libc::pid_t> {
    match libc::pid_t::try_from(id) {
        Ok(pid) if pid > 1 => Ok(pid),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("refusing to signal process or group id {id}: ids 0 and 1 (and ids above i32::MAX) are never a group we started"),
        )),
    }
}

/// A process or group id the system gave us (`fork`, `getpgid`, `getpgrp`, `tcgetpgrp`), as the crate's `u32`;
/// the way back from [`checked_pid`]. A negative id, which no such call returns on success, is an `InvalidData` error.
pub fn kernel_pid(pid: libc::pid_t) -> io::Result<u32> {
    u32::try_from(pid).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("the system returned the negative process id {pid}"),
        )
    })
}

/// `waitid`'s `id_t` for a pid that [`checked_pid`] let through or an open descriptor (`P_PIDFD`): both are
/// non-negative `int`s, and `id_t` (`u32` on Linux and macOS, `i64` on FreeBSD) holds every one.
#[allow(
    clippy::cast_sign_loss,
    clippy::cast_lossless,
    reason = "the C API's contract: waitid takes a pid_t or a descriptor as id_t; both are >= 0 here"
)]
pub fn wait_id(id: libc::c_int) -> libc::id_t {
    debug_assert!(id >= 0);
    id as libc::id_t
}

mod fd;
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
mod pidfd;
mod process;

#[cfg(feature = "capture")]
mod pipe;

pub use fd::*;
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
pub use pidfd::*;
pub use process::*;

#[cfg(feature = "capture")]
pub(crate) use pipe::*;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checked_pid_refuses_the_ids_with_special_meanings_and_what_does_not_fit() {
        for id in [0, 1, 1 << 31, u32::MAX] {
            let e = checked_pid(id).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{id}");
        }
        assert_eq!(checked_pid(2).unwrap(), 2);
        assert_eq!(checked_pid((1 << 31) - 1).unwrap(), libc::pid_t::MAX);
    }

    #[test]
    fn kernel_pid_is_the_way_back_and_refuses_negative_ids() {
        assert_eq!(kernel_pid(checked_pid(4321).unwrap()).unwrap(), 4321);
        assert_eq!(kernel_pid(0).unwrap(), 0);
        assert_eq!(
            kernel_pid(-1).unwrap_err().kind(),
            io::ErrorKind::InvalidData
        );
    }

    #[cfg(feature = "capture")]
    #[test]
    fn cvt_len_takes_a_negative_count_as_the_os_error() {
        assert_eq!(cvt_len(7).unwrap(), 7);
        // SAFETY: close on an invalid descriptor only sets errno.
        assert_eq!(unsafe { libc::close(-1) }, -1);
        assert_eq!(cvt_len(-1).unwrap_err().raw_os_error(), Some(libc::EBADF));
    }
}
