//! The set's one sleep over every job's descriptors.
//!
//! On Linux, one `epoll` instance holds every descriptor of every job, registered when a job's step first lists it
//! and deregistered (`EPOLL_CTL_DEL`) as soon as a step no longer lists it or the job's wait is done, before the
//! job could close it (a descriptor that the step which stopped listing it closed was deregistered by its close: the
//! failed `EPOLL_CTL_DEL` is ignored); each registration's data is its job's slot. So a sleep costs one `epoll_wait`, and a
//! wake-up hands over only the jobs whose descriptors are ready, whatever the number of jobs. The sleep's timeout
//! counts milliseconds; a sleep shorter than one is a `ppoll` on the epoll descriptor (nanoseconds), so that a job's
//! instant is not missed by up to a millisecond.
//!
//! Elsewhere (and with `--cfg grouptimeout_portable`), each sleep is one `poll(2)` over the descriptors of every
//! job, listed anew: its cost grows with the number of jobs (there, without a pidfd, a job's exit is found by the
//! poll schedule of its steps anyway).

use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

use crate::sys;

/// One descriptor of a job, and whether it is watched for writing (else for reading).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Watch {
    /// The descriptor (the job's: never closed here).
    pub(crate) fd: RawFd,
    /// Watched for writing (a capture's stdin), else for reading (an exit descriptor, an output pipe).
    pub(crate) write: bool,
}

/// The one sleep of a set.
pub(crate) struct Sleep {
    #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
    epoll: sys::Epoll,
    #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
    events: Vec<libc::epoll_event>,
    #[cfg(not(all(target_os = "linux", not(grouptimeout_portable))))]
    fds: Vec<libc::pollfd>,
}

// By hand: `libc`'s structs implement `Debug` only with its `extra_traits` feature (Debian's packaged libc has it off).
impl std::fmt::Debug for Sleep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut s = f.debug_struct("Sleep");
        #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
        s.field("epoll", &self.epoll)
            .field("events", &self.events.len());
        #[cfg(not(all(target_os = "linux", not(grouptimeout_portable))))]
        s.field("fds", &self.fds.len());
        s.finish()
    }
}

/// How many events one `epoll_wait` takes at most; more ready descriptors are taken by the next one (epoll hands
/// them over in turn).
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
const EVENTS: usize = 256;

#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
impl Sleep {
    /// A new sleep: one epoll instance, so one descriptor (`EMFILE` when none is left).
    pub(crate) fn new() -> io::Result<Sleep> {
        Ok(Sleep {
            epoll: sys::Epoll::new()?,
            events: Vec::with_capacity(EVENTS),
        })
    }

    /// What epoll is told to watch `watch.fd` for.
    fn events(watch: Watch) -> u32 {
        // (`EPOLLHUP` and `EPOLLERR` are reported always: a pipe's other end closed wakes its job too.)
        if watch.write {
            libc::EPOLLOUT as u32
        } else {
            libc::EPOLLIN as u32
        }
    }

    /// Makes what is watched for the job in `slot` what its last step listed (`want`), keyed by number and
    /// direction: deregisters first what is no longer listed, then registers what is new (the core keeps a listed
    /// number naming the same file until a step stops listing it). A deregistration that fails with `EBADF`,
    /// `ENOENT` or `EPERM` is no error: the step closed that descriptor, and its close deregistered it (the number
    /// is free, or names a file that another thread opened since: `EPERM` when that file cannot be polled, as a
    /// regular file or `/proc/PID/stat`). `watched` is kept equal
    /// to what is registered, also on error (the OS error of the first `epoll_ctl` that failed: `ENOMEM`, `ENOSPC`
    /// past the user's limit of watches).
    pub(crate) fn watch(
        &mut self,
        slot: usize,
        watched: &mut Vec<Watch>,
        want: &[Watch],
    ) -> io::Result<()> {
        let mut failed = None;
        watched.retain(|&w| {
            if want.contains(&w) {
                return true;
            }
            match self.epoll.control(sys::Control::Delete, w.fd, 0, 0) {
                Ok(()) => false,
                // The step that stopped listing it closed it (a capture's input after its last byte, the exit
                // descriptor at the reap, any of them in a step that failed): the close took it out of the epoll set
                // (`EBADF`: the number is free; `ENOENT`: another file of this process took it since; `EPERM`: one
                // that cannot be polled did, which epoll checks first).
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::EBADF | libc::ENOENT | libc::EPERM)
                    ) =>
                {
                    false
                }
                Err(e) => {
                    failed.get_or_insert(e);
                    true
                }
            }
        });
        for &w in want {
            if failed.is_some() {
                break;
            }
            if watched.contains(&w) {
                continue;
            }
            let data = u64::try_from(slot).unwrap_or(u64::MAX);
            match self
                .epoll
                .control(sys::Control::Add, w.fd, Self::events(w), data)
            {
                Ok(()) => watched.push(w),
                Err(e) => failed = Some(e),
            }
        }
        failed.map_or(Ok(()), Err)
    }

    /// Deregisters everything in `watched` (a job whose wait is done, or that leaves the set), before the job may
    /// close it. Errors are left: a descriptor that a step closed itself is no longer registered.
    pub(crate) fn unwatch(&mut self, watched: &mut Vec<Watch>) {
        for w in watched.drain(..) {
            let _ = self.epoll.control(sys::Control::Delete, w.fd, 0, 0);
        }
    }

    /// Sleeps until a watched descriptor is ready or `timeout` passed (`None`: no limit), and adds to `woken` the
    /// slot of each job that has a ready descriptor (a job may be listed more than once). `jobs` is not used here:
    /// epoll holds the registrations.
    pub(crate) fn sleep<'a>(
        &mut self,
        timeout: Option<Duration>,
        _jobs: impl Iterator<Item = (usize, &'a [Watch])>,
        woken: &mut Vec<usize>,
    ) -> io::Result<()> {
        match timeout {
            // Below epoll's millisecond: wait for the epoll descriptor itself, to the nanosecond, then take the events.
            Some(t) if t < Duration::from_millis(1) => {
                if !self.epoll.ready_within(t)? {
                    return Ok(());
                }
                self.epoll.wait(&mut self.events, 0)?;
            }
            // Rounded down: the rest (below a millisecond) is the branch above.
            t => self.epoll.wait(&mut self.events, sys::millis(t, false))?,
        }
        woken.extend(
            self.events
                .iter()
                .map(|e| usize::try_from(e.u64).unwrap_or(usize::MAX)),
        );
        Ok(())
    }
}

#[cfg(not(all(target_os = "linux", not(grouptimeout_portable))))]
impl Sleep {
    /// A new sleep: nothing to open.
    #[allow(
        clippy::unnecessary_wraps,
        reason = "the same signature as Linux's, whose epoll may fail"
    )]
    pub(crate) fn new() -> io::Result<Sleep> {
        Ok(Sleep { fds: Vec::new() })
    }

    /// Notes what the job in `slot` waits on: `poll(2)` takes the lists anew at each sleep.
    #[allow(
        clippy::unnecessary_wraps,
        clippy::unused_self,
        reason = "the same signature as Linux's, whose epoll may fail"
    )]
    pub(crate) fn watch(
        &mut self,
        _slot: usize,
        watched: &mut Vec<Watch>,
        want: &[Watch],
    ) -> io::Result<()> {
        watched.clear();
        watched.extend_from_slice(want);
        Ok(())
    }

    /// Forgets what a job waits on.
    #[allow(clippy::unused_self, reason = "the same signature as Linux's")]
    pub(crate) fn unwatch(&mut self, watched: &mut Vec<Watch>) {
        watched.clear();
    }

    /// One `poll(2)` over the descriptors of every job in `jobs`, for at most `timeout` (rounded up to a
    /// millisecond); adds to `woken` the slot of each job that has a ready descriptor.
    pub(crate) fn sleep<'a>(
        &mut self,
        timeout: Option<Duration>,
        jobs: impl Iterator<Item = (usize, &'a [Watch])>,
        woken: &mut Vec<usize>,
    ) -> io::Result<()> {
        self.fds.clear();
        let mut slots = Vec::new();
        for (slot, watched) in jobs {
            for w in watched {
                self.fds.push(libc::pollfd {
                    fd: w.fd,
                    events: if w.write { libc::POLLOUT } else { libc::POLLIN },
                    revents: 0,
                });
                slots.push(slot);
            }
        }
        sys::poll(&mut self.fds, sys::millis(timeout, true))?;
        woken.extend(
            self.fds
                .iter()
                .zip(slots)
                .filter(|(fd, _)| fd.revents != 0)
                .map(|(_, slot)| slot),
        );
        Ok(())
    }
}

#[cfg(all(test, target_os = "linux", not(grouptimeout_portable)))]
mod tests {
    use super::{Sleep, Watch};
    use std::fs::File;
    use std::os::fd::AsRawFd as _;
    use std::os::unix::net::UnixStream;

    /// A step closed a watched descriptor, and before the set deregistered it another thread opened a file that
    /// cannot be polled (`/proc/PID/stat`, as a test's death check does) and got its number: `EPOLL_CTL_DEL` fails
    /// with `EPERM`. That is no error (the close deregistered it): the job stays watched, not made blind.
    #[test]
    fn a_closed_descriptor_whose_number_names_an_unpollable_file_is_no_error() {
        let mut sleep = Sleep::new().unwrap();
        let (ours, _peer) = UnixStream::pair().unwrap();
        let watch = Watch {
            fd: ours.as_raw_fd(),
            write: true,
        };
        let mut watched = Vec::new();
        sleep.watch(0, &mut watched, &[watch]).unwrap();
        drop(ours);
        // The lowest free number is given first: open until the file has the closed one (at once, unless another
        // test of this binary took it meanwhile).
        let mut held = Vec::new();
        while held.last().is_none_or(|f: &File| f.as_raw_fd() != watch.fd) {
            assert!(held.len() < 1000, "number {} not given again", watch.fd);
            held.push(File::open("/proc/self/stat").unwrap());
        }
        sleep.watch(0, &mut watched, &[]).unwrap();
        assert!(watched.is_empty());
    }
}
