//! The stand-in for `contain/` in a build without the `contain` feature: a job is its process group alone, so
//! every call of [`Job`] does nothing.

use std::io;

/// A plain group's job: nothing beyond the group.
#[derive(Debug, Clone, Default)]
pub(crate) struct Job(());

/// Nothing is ever reached beyond the group.
pub(crate) type Leftovers = ();

#[allow(
    clippy::unused_self,
    clippy::unnecessary_wraps,
    reason = "a stand-in: the same signatures as the real `Job`, so that its callers have no cfg"
)]
impl Job {
    pub(crate) fn signal(
        &self,
        _leader: u32,
        _signal: i32,
        group: impl FnOnce() -> io::Result<()>,
    ) -> io::Result<()> {
        group()
    }

    pub(crate) fn watched(&self, id: u32) -> u32 {
        id
    }

    pub(crate) fn exited(&self, id: u32) -> io::Result<bool> {
        crate::sys::has_exited(id)
    }

    pub(crate) fn judge(&self, _id: u32, _kill: bool) {}

    pub(crate) fn signal_kept(&self, _pgid: u32, _signal: i32) -> Option<io::Result<()>> {
        None
    }

    pub(crate) fn take_reached(&self, _leftovers: &mut Leftovers, _guard: Option<u32>) {}

    pub(crate) fn end(&self, _keep: bool) -> io::Result<()> {
        Ok(())
    }

    #[cfg(feature = "guard")]
    pub(crate) fn cgroup_folder(&self) -> Option<&std::path::Path> {
        None
    }
}
