//! The system calls of the set's one sleep, as safe wrappers: on Linux `epoll`, the set's own duplicates of the
//! descriptors it registers there, and `ppoll` (a sleep below a millisecond); `poll(2)` elsewhere.
//! Wrappers only: the set's logic is in the modules above. Every `unsafe` block of the crate is in this file.
//!
//! `EINTR` is an empty wake-up here (no event, no error): the caller recomputes its timeout and sleeps again.

use std::io;
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd, RawFd};
use std::time::Duration;

/// `Ok(())` or the OS error of a call that returned -1.
fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// An epoll instance (Linux), closed on drop (which also removes every registration it holds).
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
#[derive(Debug)]
pub struct Epoll(OwnedFd);

/// The operation of [`Epoll::control`].
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
#[derive(Debug, Clone, Copy)]
pub enum Control {
    /// `EPOLL_CTL_ADD`: watch a descriptor not yet watched.
    Add,
    /// `EPOLL_CTL_DEL`: stop watching a descriptor.
    Delete,
}

#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
impl Epoll {
    /// `epoll_create1(EPOLL_CLOEXEC)`: a new instance (one descriptor; `EMFILE` when none is left).
    pub fn new() -> io::Result<Epoll> {
        // SAFETY: no pointer is passed; on success the kernel gives us a new descriptor that nothing else owns.
        let fd = check(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        // SAFETY: `fd` was just returned by epoll_create1, is open, and is owned by nothing else.
        Ok(Epoll(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// `epoll_ctl(op, fd)` with `events` and `data` (ignored for [`Control::Delete`]).
    pub fn control(&self, op: Control, fd: RawFd, events: u32, data: u64) -> io::Result<()> {
        let op = match op {
            Control::Add => libc::EPOLL_CTL_ADD,
            Control::Delete => libc::EPOLL_CTL_DEL,
        };
        let mut event = libc::epoll_event { events, u64: data };
        // SAFETY: `event` is a valid epoll_event that outlives the call (the kernel copies it); a bad `fd` is an error
        // (EBADF, ENOENT), not undefined behaviour.
        check(unsafe { libc::epoll_ctl(self.0.as_raw_fd(), op, fd, &raw mut event) }).map(drop)
    }

    /// `epoll_wait` for at most `timeout_ms` (-1: no limit): fills `events` (cleared first) up to its capacity.
    pub fn wait(
        &self,
        events: &mut Vec<libc::epoll_event>,
        timeout_ms: libc::c_int,
    ) -> io::Result<()> {
        events.clear();
        let room = libc::c_int::try_from(events.capacity().max(1)).unwrap_or(libc::c_int::MAX);
        events.reserve(1);
        // SAFETY: the kernel writes at most `room` events into the vector's spare capacity, which holds at least that
        // many (reserved above); `set_len` below covers only the `n` it reported written.
        let n =
            unsafe { libc::epoll_wait(self.0.as_raw_fd(), events.as_mut_ptr(), room, timeout_ms) };
        match check(n) {
            Ok(n) => {
                let n = usize::try_from(n).unwrap_or(0).min(events.capacity());
                // SAFETY: the first `n` elements were written by epoll_wait (see above), and `n` ≤ capacity.
                unsafe { events.set_len(n) };
                Ok(())
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Sleeps at most `timeout` (nanoseconds counted, unlike `epoll_wait`'s milliseconds: for the sleeps below a
    /// millisecond; one of a second or more is cut to just under a second) until the instance has an event to give:
    /// `ppoll` on its descriptor. Whether it has one (`EINTR`: not yet, as a timeout).
    pub fn ready_within(&self, timeout: Duration) -> io::Result<bool> {
        let mut fd = libc::pollfd {
            fd: self.0.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let nanos = timeout
            .min(Duration::from_nanos(999_999_999))
            .subsec_nanos();
        #[allow(
            clippy::cast_lossless,
            reason = "tv_nsec is a c_long: i64 here, i32 on 32-bit targets (no From<u32>); nanoseconds < 10^9 fit both"
        )]
        let ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: nanos as _,
        };
        // SAFETY: `fd` is one valid pollfd and `ts` a valid timespec, both living across the call; a null signal mask
        // leaves the thread's mask unchanged.
        match check(unsafe { libc::ppoll(&raw mut fd, 1, &raw const ts, std::ptr::null()) }) {
            Ok(n) => Ok(n > 0),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(false),
            Err(e) => Err(e),
        }
    }
}

/// A duplicate of `fd` that the set owns (`F_DUPFD_CLOEXEC`, numbered 3 or above, as std's `try_clone`): the same
/// open file under a number of its own, which stays open until the set closes it, whatever the descriptor's owner
/// does with `fd` meanwhile. `EMFILE` when this process has no descriptor left; `EBADF` when `fd` is not open.
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
pub fn dup(fd: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: no pointer is passed; a number that is not an open descriptor is an error (EBADF), not undefined
    // behaviour, and the new descriptor is returned to us alone.
    let own = check(unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) })?;
    // SAFETY: `own` was just returned by fcntl, is open, and is owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(own) })
}

/// `poll(2)` on `fds` for at most `timeout_ms` (-1: no limit); sets their `revents`.
#[cfg(not(all(target_os = "linux", not(grouptimeout_portable))))]
pub fn poll(fds: &mut [libc::pollfd], timeout_ms: libc::c_int) -> io::Result<()> {
    for fd in fds.iter_mut() {
        fd.revents = 0;
    }
    let n = libc::nfds_t::try_from(fds.len())
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: `fds` is a valid slice of `n` pollfds for the length of the call.
    match check(unsafe { libc::poll(fds.as_mut_ptr(), n, timeout_ms) }) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(()),
        Err(e) => Err(e),
    }
}

/// A timeout in whole milliseconds for `epoll_wait` / `poll`, rounded up (`up`: a sleep never ends before `timeout`)
/// or down (it never ends after it, but may end before), at most `c_int::MAX`; `None` (no limit) is -1.
pub fn millis(timeout: Option<Duration>, up: bool) -> libc::c_int {
    match timeout {
        None => -1,
        Some(t) => {
            let ms = if up {
                t.as_nanos().div_ceil(1_000_000)
            } else {
                t.as_nanos() / 1_000_000
            };
            libc::c_int::try_from(ms).unwrap_or(libc::c_int::MAX)
        }
    }
}
