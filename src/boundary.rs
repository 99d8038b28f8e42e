//! The one extension point of a [`GroupChild`](crate::GroupChild): what a job reaches beyond its process group.
//!
//! A child from [`spawn_group`](crate::GroupCommandExt::spawn_group) has no boundary: its job is its group, and
//! every method of [`Job`] below does what a plain group needs. The sibling crate `grouptimeout-job` (its
//! `spawn_contained`, `die_with_parent`) attaches a [`Boundary`] through the hidden module `__private`, and pins
//! this crate by its exact version, so that nothing but that crate can depend on this interface.
//!
//! What stays here, whatever a boundary does: the wait's loop (check, sleep, never past the deadline), the group's
//! signal (sent here after the boundary's [`signal`](Boundary::signal) if that did not send it), the reap under the
//! handles' lock, and the order "signal the job, reap the leader, end the job". A boundary answers the questions
//! below (which process ends the wait, has it exited, how to reach what the group does not hold) and ends its own job
//! after the reap. Its answers are trusted: a boundary that said a running leader had exited would make the reap
//! block until it exits, and one that answered [`signal_kept`](Boundary::signal_kept) without signalling would leave
//! a kept group running. So `grouptimeout-job` is its one implementation, and it names this crate by its exact
//! version; the module is hidden and outside semantic versioning (any crate can name it, but nothing promises it a
//! version from one release to the next).

use std::any::Any;
use std::fmt;
use std::io;
use std::sync::Arc;

/// What a job beyond its process group adds to a child's waits, kills and drop (implemented by `grouptimeout-job`;
/// not a public API: its methods may change with any version, which is why that crate pins this one exactly).
///
/// Every method is called with the leader unreaped by this crate, except [`take_reached`](Boundary::take_reached)
/// (also right after the reap), and [`end`](Boundary::end) and [`record`](Boundary::record), which follow it.
#[doc(hidden)]
pub trait Boundary: fmt::Debug + Send + Sync + Any {
    /// The process whose exit ends a wait: `leader`, or the command below a keeper.
    fn watched(&self, leader: u32) -> u32;

    /// Whether the watched process has exited (without reaping the leader).
    ///
    /// # Errors
    ///
    /// As `waitid` fails for the leader (`ECHILD`: someone else reaped it).
    fn exited(&self, leader: u32) -> io::Result<bool>;

    /// Sends `signal` to the job: `group` signals the leader's group (once: later calls do nothing; if the boundary
    /// does not call it, the caller does after this returns), the boundary adds what the group misses.
    ///
    /// # Errors
    ///
    /// The group's error, else the first error of the boundary's own signals.
    fn signal(
        &self,
        leader: u32,
        signal: i32,
        group: &mut dyn FnMut() -> io::Result<()>,
    ) -> io::Result<()>;

    /// Signals the group `pgid` on the job's behalf where plain `kill(-pgid)` would not do (a kept group); `None`
    /// means: use `kill`.
    fn signal_kept(&self, pgid: u32, signal: i32) -> Option<io::Result<()>>;

    /// Tells the job, right before the leader's reap, whether what is left is killed (`kill`) or kept.
    fn judge(&self, leader: u32, kill: bool);

    /// Records what the kills so far reached besides the leader.
    fn take_reached(&self);

    /// Ends the job after the leader's reap (or at the drop): removes what it made; `keep` leaves its members
    /// running.
    ///
    /// # Errors
    ///
    /// What could not be removed.
    fn end(&self, keep: bool) -> io::Result<()>;

    /// What a capturing wait's result keeps of the job (called once the leader was reaped): a record that holds none
    /// of the job's resources (descriptors, a keeper's page), so that a kept result does not keep them open.
    fn record(&self) -> Option<Arc<dyn Any + Send + Sync>>;

    /// The boundary as [`Any`], for the crate that made it to find its own type again.
    fn as_any(&self) -> &dyn Any;
}

/// What a capturing wait's result keeps of its job: its boundary's [`record`](Boundary::record), if any.
#[cfg(feature = "capture")]
#[derive(Clone, Default)]
pub(crate) struct Record(pub(crate) Option<Arc<dyn Any + Send + Sync>>);

#[cfg(feature = "capture")]
impl fmt::Debug for Record {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "Record(..)"
        } else {
            "Record(None)"
        })
    }
}

/// A child's job: its group alone (`None`), or a group with a [`Boundary`].
#[derive(Debug, Clone, Default)]
pub(crate) struct Job(pub(crate) Option<Arc<dyn Boundary>>);

impl Job {
    pub(crate) fn signal(
        &self,
        leader: u32,
        signal: i32,
        group: impl FnOnce() -> io::Result<()>,
    ) -> io::Result<()> {
        let Some(boundary) = &self.0 else {
            return group();
        };
        let mut group = Some(group);
        let sent = boundary.signal(leader, signal, &mut || {
            group.take().map_or(Ok(()), |group| group())
        });
        // The group is signalled whatever the boundary did: that promise is this crate's.
        match group.take() {
            Some(group) => group().and(sent),
            None => sent,
        }
    }

    pub(crate) fn watched(&self, id: u32) -> u32 {
        self.0.as_ref().map_or(id, |b| b.watched(id))
    }

    pub(crate) fn exited(&self, id: u32) -> io::Result<bool> {
        match &self.0 {
            Some(boundary) => boundary.exited(id),
            None => crate::sys::has_exited(id),
        }
    }

    pub(crate) fn judge(&self, id: u32, kill: bool) {
        if let Some(boundary) = &self.0 {
            boundary.judge(id, kill);
        }
    }

    pub(crate) fn signal_kept(&self, pgid: u32, signal: i32) -> Option<io::Result<()>> {
        self.0.as_ref()?.signal_kept(pgid, signal)
    }

    pub(crate) fn take_reached(&self) {
        if let Some(boundary) = &self.0 {
            boundary.take_reached();
        }
    }

    pub(crate) fn end(&self, keep: bool) -> io::Result<()> {
        self.0.as_ref().map_or(Ok(()), |b| b.end(keep))
    }

    #[cfg(feature = "capture")]
    pub(crate) fn record(&self) -> Record {
        Record(self.0.as_ref().and_then(|b| b.record()))
    }
}

#[cfg(test)]
mod tests {
    use super::{Boundary, Job};
    use std::any::Any;
    use std::io;
    use std::sync::Arc;

    /// A boundary that forgets the group.
    #[derive(Debug)]
    struct Forgetful;

    impl Boundary for Forgetful {
        fn watched(&self, leader: u32) -> u32 {
            leader
        }
        fn exited(&self, _: u32) -> io::Result<bool> {
            Ok(false)
        }
        fn signal(&self, _: u32, _: i32, _: &mut dyn FnMut() -> io::Result<()>) -> io::Result<()> {
            Ok(())
        }
        fn signal_kept(&self, _: u32, _: i32) -> Option<io::Result<()>> {
            None
        }
        fn judge(&self, _: u32, _: bool) {}
        fn take_reached(&self) {}
        fn end(&self, _: bool) -> io::Result<()> {
            Ok(())
        }
        fn record(&self) -> Option<Arc<dyn Any + Send + Sync>> {
            None
        }
        fn as_any(&self) -> &dyn Any {
            self
        }
    }

    #[test]
    fn the_group_is_signalled_once_whatever_the_boundary_does() {
        let job = Job(Some(Arc::new(Forgetful)));
        let mut sent = 0;
        let result = job.signal(1, 0, || {
            sent += 1;
            Err(io::Error::from_raw_os_error(libc::EPERM))
        });
        assert_eq!(sent, 1);
        assert_eq!(result.unwrap_err().raw_os_error(), Some(libc::EPERM));
    }
}
