//! `poll(2)` (`ppoll` on Linux): the sleep of every wait, on the leader's pidfd, and of a capture, on its pipes; and
//! `O_NONBLOCK` for `capture`'s pipes and `grouptimeout-job`'s guard pipe.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

use super::cvt;

/// Waits up to `timeout` for an event on `fds` (`ppoll` on Linux and Android, so sub-millisecond timeouts are
/// honoured; `poll` with the timeout rounded up to whole milliseconds elsewhere), and returns how many entries
/// have events.
///
/// A timeout too long for the call (such as [`Duration::MAX`](std::time::Duration::MAX)) waits without a limit.
/// An interrupted wait (`EINTR`) returns `Ok(0)`, like a timeout: callers loop on their own clock, so retrying
/// here with the same timeout could only wait longer than they asked.
pub fn poll(fds: &mut [libc::pollfd], timeout: std::time::Duration) -> io::Result<usize> {
    let nfds = libc::nfds_t::try_from(fds.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "too many fds to poll"))?;
    #[cfg(all(
        any(target_os = "linux", target_os = "android"),
        not(grouptimeout_portable)
    ))]
    let ret = {
        // `tv_sec`'s type (`time_t`) is inferred: naming `libc::time_t` is deprecated on musl.
        #[allow(
            clippy::cast_lossless,
            reason = "tv_nsec is a c_long: i64 here, i32 on 32-bit targets (no From<u32>); nanoseconds < 10^9 fit both"
        )]
        let ts = timeout
            .as_secs()
            .try_into()
            .ok()
            .map(|tv_sec| libc::timespec {
                tv_sec,
                tv_nsec: timeout.subsec_nanos() as _,
            });
        let ts_ptr = ts.as_ref().map_or(std::ptr::null(), std::ptr::from_ref);
        // SAFETY: `fds` is a valid, exclusively borrowed array of `nfds` pollfd entries and `ts_ptr` null (no
        // limit) or a valid timespec, both living across the call; a null sigmask leaves the signal mask unchanged.
        unsafe { libc::ppoll(fds.as_mut_ptr(), nfds, ts_ptr, std::ptr::null()) }
    };
    #[cfg(not(all(
        any(target_os = "linux", target_os = "android"),
        not(grouptimeout_portable)
    )))]
    let ret = {
        // Round up, so that a sub-millisecond pause does not turn into a busy loop.
        let ms = timeout.as_nanos().div_ceil(1_000_000);
        let ms = libc::c_int::try_from(ms).unwrap_or(-1);
        // SAFETY: `fds` is a valid, exclusively borrowed array of `nfds` pollfd entries living across the call.
        unsafe { libc::poll(fds.as_mut_ptr(), nfds, ms) }
    };
    match cvt(ret) {
        // A count of ready descriptors: never negative.
        Ok(n) => Ok(usize::try_from(n).unwrap_or(0)),
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(0),
        Err(e) => Err(e),
    }
}

/// Puts `fd` into non-blocking mode (`O_NONBLOCK` on its open file description).
///
/// Used on read ends that only this process holds, and on the write end of a guard's pipe.
pub fn set_nonblocking(fd: BorrowedFd<'_>) -> io::Result<()> {
    let fd = fd.as_raw_fd();
    // SAFETY: F_GETFL takes no pointer argument; `fd` is borrowed, so it stays open across the call.
    let flags = cvt(unsafe { libc::fcntl(fd, libc::F_GETFL) })?;
    if flags & libc::O_NONBLOCK == 0 {
        // SAFETY: F_SETFL takes an int argument and no pointer; `fd` is borrowed, so it stays open.
        cvt(unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) })?;
    }
    Ok(())
}
