//! [`GroupHandle`]: signalling a group from any thread while another one waits for it.

use std::fmt;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::boundary::Job;
use crate::group::signal_unreaped_group;

/// Whether the leader was reaped, under the lock that every handle takes to signal.
#[derive(Debug, Default)]
pub(crate) struct Reaped(Mutex<bool>);

impl Reaped {
    /// Takes the lock (a panic of another holder does not matter: the flag is a plain bool).
    pub(crate) fn lock(&self) -> MutexGuard<'_, bool> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Signals the process group of a [`GroupChild`](crate::GroupChild) from any thread, also while another thread is
/// blocked in one of its waits; made by [`GroupChild::handle`](crate::GroupChild::handle).
///
/// A handle signals the group only while its leader is unreaped, so it never reaches a process outside the group:
/// the reap of the leader (by a wait, or by the drop of the `GroupChild`) and a handle's signal take the same lock,
/// and once the leader was reaped, or the `GroupChild` dropped, every handle does nothing and returns `Ok(())`.
/// Handles are cheap to clone; a `GroupChild` for which no handle was made pays nothing for them.
///
/// What a handle sends is seen by a wait as anything else is: a leader killed through a handle is noticed as an
/// exit, the wait handles the leftovers and returns the leader's status (killed by `SIGKILL`).
#[derive(Clone)]
pub struct GroupHandle {
    pid: u32,
    reaped: Arc<Reaped>,
    /// The job's boundary beyond the group (`spawn_contained`).
    job: Job,
}

impl GroupHandle {
    pub(crate) fn new(pid: u32, reaped: Arc<Reaped>, job: Job) -> GroupHandle {
        GroupHandle { pid, reaped, job }
    }

    /// The leader's process id, which is also the id of its process group (as [`GroupChild::id`](crate::GroupChild::id)).
    #[must_use]
    pub fn id(&self) -> u32 {
        self.pid
    }

    /// Sends `signal` to every process in the group, and to the leader by its pid if it moved itself out of the
    /// group, as [`GroupChild::signal`](crate::GroupChild::signal) does. Once the leader was reaped (or its
    /// `GroupChild` dropped), sends nothing and returns `Ok(())`.
    ///
    /// The call holds a lock shared with the reap of the leader, for the time of the `kill(2)` calls: a wait that
    /// is about to reap waits that long.
    ///
    /// # Errors
    ///
    /// As for [`GroupChild::signal`](crate::GroupChild::signal), the OS error as it is: `EINVAL` for an invalid
    /// signal number, `EPERM` when no member could be signalled for lack of permission, `ECHILD` when the leader was
    /// reaped by someone else.
    pub fn signal(&self, signal: i32) -> io::Result<()> {
        let reaped = self.reaped.lock();
        if *reaped {
            return Ok(());
        }
        signal_unreaped_group(self.pid, signal, &self.job)
    }

    /// Sends `SIGKILL` to the whole group; see [`signal`](GroupHandle::signal). The leader is reaped by the
    /// `GroupChild`'s wait (or drop), not here.
    ///
    /// # Errors
    ///
    /// As for [`signal`](GroupHandle::signal).
    pub fn kill(&self) -> io::Result<()> {
        self.signal(crate::signal::SIGKILL)
    }
}

impl fmt::Debug for GroupHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GroupHandle")
            .field("id", &self.pid)
            .field("reaped", &*self.reaped.lock())
            .finish_non_exhaustive()
    }
}
