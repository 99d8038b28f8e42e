//! The set's one sleep over every job's descriptors.
//!
//! On Linux, one `epoll` instance watches every descriptor of every job, each through a duplicate that the set owns:
//! when a job's step first lists a descriptor, the set duplicates it and registers the duplicate; as soon as a step
//! no longer lists it or the job's wait is done (or the job leaves the set), the set deregisters the duplicate
//! (`EPOLL_CTL_DEL`) and closes it. The job's own descriptor is never registered, so what its step does with it
//! (closing it at the reap, after a capture's last byte of input) cannot leave a registration behind: an epoll
//! registration lives until the last reference to its *file* is closed, and a child forked without exec holds a copy
//! of every descriptor, so the close of the job's descriptor does not take it out of the epoll set, and a closed
//! pidfd that stayed registered, readable for ever, would wake every sleep. Each registration's data is its job's
//! slot. So a sleep costs one `epoll_wait`, and a wake-up hands over only the jobs whose descriptors are ready,
//! whatever the number of jobs; a watched descriptor costs one more descriptor (the duplicate). The sleep's timeout
//! counts milliseconds; a sleep shorter than one is a `ppoll` on the epoll descriptor (nanoseconds), so that a job's
//! instant is not missed by up to a millisecond.
//!
//! Elsewhere (and with `--cfg grouptimeout_portable`), each sleep is one `poll(2)` over the descriptors of every
//! job, listed anew: its cost grows with the number of jobs (there, without a pidfd, a job's exit is found by the
//! poll schedule of its steps anyway). `poll(2)` holds nothing between two sleeps: the job's descriptors are used
//! as they are.

use std::io;
use std::os::fd::RawFd;
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
use std::os::fd::{AsRawFd as _, OwnedFd};
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

/// A descriptor of a job that the sleep watches: what the job's step listed, and (Linux) the set's own duplicate of
/// it, which is what is registered with epoll, deregistered and closed when this is dropped from a job's list.
#[derive(Debug)]
pub(crate) struct Watched {
    watch: Watch,
    #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
    own: OwnedFd,
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
    /// direction (the core keeps a listed number naming the same file until a step stops listing it): first
    /// deregisters and closes the duplicates of what is no longer listed, then duplicates and registers what is new.
    /// `watched` is kept equal to what is registered, also on error: the OS error of the first call that failed
    /// (`EMFILE` for a duplicate when no descriptor is left; `ENOMEM`, `ENOSPC` past the user's limit of watches).
    pub(crate) fn watch(
        &mut self,
        slot: usize,
        watched: &mut Vec<Watched>,
        want: &[Watch],
    ) -> io::Result<()> {
        let mut failed = None;
        watched.retain(|w| {
            if want.contains(&w.watch) {
                return true;
            }
            // Our duplicate is open and registered: only a bug fails this (kept, to be retried by `unwatch`).
            match self
                .epoll
                .control(sys::Control::Delete, w.own.as_raw_fd(), 0, 0)
            {
                Ok(()) => false,
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
            if watched.iter().any(|old| old.watch == w) {
                continue;
            }
            let data = u64::try_from(slot).unwrap_or(u64::MAX);
            let registered = sys::dup(w.fd).and_then(|own| {
                (self.epoll).control(sys::Control::Add, own.as_raw_fd(), Self::events(w), data)?;
                Ok(own)
            });
            match registered {
                Ok(own) => watched.push(Watched { watch: w, own }),
                Err(e) => failed = Some(e),
            }
        }
        failed.map_or(Ok(()), Err)
    }

    /// Deregisters and closes everything in `watched` (a job whose wait is done, or that leaves the set, or whose
    /// step unwound). A deregistration that fails is left (it does not, for an open registered duplicate).
    pub(crate) fn unwatch(&mut self, watched: &mut Vec<Watched>) {
        for w in watched.drain(..) {
            let _ = (self.epoll).control(sys::Control::Delete, w.own.as_raw_fd(), 0, 0);
        }
    }

    /// Sleeps until a watched descriptor is ready or `timeout` passed (`None`: no limit), and adds to `woken` the
    /// slot of each job that has a ready descriptor (a job may be listed more than once). `jobs` is not used here:
    /// epoll holds the registrations.
    pub(crate) fn sleep<'a>(
        &mut self,
        timeout: Option<Duration>,
        _jobs: impl Iterator<Item = (usize, &'a [Watched])>,
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
        watched: &mut Vec<Watched>,
        want: &[Watch],
    ) -> io::Result<()> {
        watched.clear();
        watched.extend(want.iter().map(|&watch| Watched { watch }));
        Ok(())
    }

    /// Forgets what a job waits on.
    #[allow(clippy::unused_self, reason = "the same signature as Linux's")]
    pub(crate) fn unwatch(&mut self, watched: &mut Vec<Watched>) {
        watched.clear();
    }

    /// One `poll(2)` over the descriptors of every job in `jobs`, for at most `timeout` (rounded up to a
    /// millisecond); adds to `woken` the slot of each job that has a ready descriptor.
    pub(crate) fn sleep<'a>(
        &mut self,
        timeout: Option<Duration>,
        jobs: impl Iterator<Item = (usize, &'a [Watched])>,
        woken: &mut Vec<usize>,
    ) -> io::Result<()> {
        self.fds.clear();
        let mut slots = Vec::new();
        for (slot, watched) in jobs {
            for Watched { watch: w } in watched {
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
    use std::time::Duration;

    /// Issue 42.5: a job's descriptor that has another reference (the copy a child forked without exec holds; here a
    /// `dup`) is closed by the job's step, which no longer lists it: its file lives on, and a registration of the
    /// job's own descriptor would live on with it, readable for ever (its peer gone). The set registered its own
    /// duplicate, which it deregisters itself: no sleep wakes for it any more.
    #[test]
    fn a_closed_descriptor_held_elsewhere_wakes_no_sleep() {
        let mut sleep = Sleep::new().unwrap();
        let (ours, peer) = UnixStream::pair().unwrap();
        let forked = ours.try_clone().unwrap();
        let watch = Watch {
            fd: ours.as_raw_fd(),
            write: false,
        };
        let mut watched = Vec::new();
        sleep.watch(7, &mut watched, &[watch]).unwrap();
        drop(peer);
        let mut woken = Vec::new();
        let look = Some(Duration::ZERO);
        sleep.sleep(look, std::iter::empty(), &mut woken).unwrap();
        assert_eq!(woken, [7]);
        drop(ours);
        sleep.watch(7, &mut watched, &[]).unwrap();
        assert!(watched.is_empty());
        woken.clear();
        sleep.sleep(look, std::iter::empty(), &mut woken).unwrap();
        assert_eq!(woken, [] as [usize; 0]);
        drop(forked);
    }

    /// A step closed a watched descriptor, and before the set deregistered it another thread opened a file that
    /// cannot be polled (`/proc/PID/stat`, as a test's death check does) and got its number. The set deregisters its
    /// own duplicate, not that number: no error, and the job stays watched, not made blind.
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
