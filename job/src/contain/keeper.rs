//! The keeper of a contained job, as this process sees it (the keeper's own code is `crate::keeper`): the
//! process std spawned (the `GroupChild`'s id) is the job's keeper, and the command is its child, in the group
//! whose id is the keeper's pid. A wait watches the command; once it exited, the reap gives the keeper the verdict
//! (end the job, or keep what it left), and the keeper exits as the command did. A command that left nothing running
//! needs no verdict: its keeper ends the job and exits at once, and the wait sees the keeper's exit. So does one that
//! left something running, once that has exited too and the verdict was not given yet (a wait for the whole job, see
//! `GroupChild::set_wait_for_job`).

use std::io;
use std::os::fd::{AsFd as _, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

#[derive(Debug)]
pub(crate) struct Keeper {
    page: crate::sys::page::SharedPage,
    /// Set once the verdict was given: the keeper may reap the command from then on, so its pid is never read again.
    judged: AtomicBool,
    /// A pidfd of the keeper, for a wait for the whole job (see [`Keeper::ended_job`]): `None` where none can be had.
    exit: OnceLock<Option<OwnedFd>>,
}

impl Keeper {
    pub(crate) fn new() -> io::Result<Keeper> {
        Ok(Keeper {
            page: crate::sys::page::SharedPage::new()?,
            judged: AtomicBool::new(false),
            exit: OnceLock::new(),
        })
    }

    pub(crate) fn page(&self) -> &crate::sys::page::SharedPage {
        &self.page
    }

    /// What the keeper does when this process dies (see `SharedPage::set_death_plan`).
    pub(crate) fn set_death_plan(&self, signal: i32, grace: std::time::Duration) {
        self.page.set_death_plan(signal, grace);
    }

    /// The spawn returned (see `SharedPage::spawned`).
    pub(crate) fn spawned(&self) {
        self.page.spawned();
    }

    /// The command's pid (known once the spawn returned).
    pub(crate) fn command(&self) -> Option<u32> {
        self.page.command()
    }

    /// Whether the command has exited (a zombie of the keeper's, which keeps it unreaped until the verdict), as the
    /// keeper says through the shared page.
    pub(crate) fn command_exited(&self) -> bool {
        if self.judged.load(Ordering::SeqCst) {
            return false;
        }
        self.page.command_exited()
    }

    /// Whether the keeper `keeper` (our child) has exited, and a descriptor readable once it has (its pidfd; `None`
    /// without one: the wait checks on its schedule). Waiting for the whole job, the verdict is held back: the keeper
    /// reaps the job's orphans as they exit (each wakes it, a `SIGCHLD`), and once the command, exited, is its only
    /// child, it ends the job and exits as the command did (see `keeper/watch.rs`).
    ///
    /// # Errors
    ///
    /// `ECHILD` as for `has_exited` (someone else reaped the keeper).
    pub(crate) fn ended_job(&self, keeper: u32) -> io::Result<(bool, Option<BorrowedFd<'_>>)> {
        // A stopped keeper (`kill -STOP` of its pid) is continued, as a wait's check does (see `Job::exited`).
        let exited = match crate::sys::exited_or_stopped(keeper)? {
            Some(false) => {
                crate::sys::wake_child(keeper);
                false
            }
            state => state.is_some(),
        };
        // Opened after the check above found the keeper unreaped: the pid names our child.
        let fd = self.exit.get_or_init(|| {
            #[cfg(grouptimeout_no_pidfd)]
            return None;
            #[cfg(not(grouptimeout_no_pidfd))]
            crate::sys::pidfd_open(keeper).ok()
        });
        Ok((exited, fd.as_ref().map(OwnedFd::as_fd)))
    }

    /// Reaper mode: while `on`, the keeper `keeper` leaves the job's exited orphans unreaped (see
    /// `SharedPage::hold_orphans`).
    pub(crate) fn hold_orphans(&self, keeper: u32, on: bool) {
        self.page.hold_orphans(keeper, on);
    }

    /// Whether the keeper exited on its own (after the verdict, or when this process died): a keeper that exited
    /// without it was killed.
    pub(crate) fn left(&self) -> bool {
        self.page.keeper_left()
    }

    /// What the keeper said of its failure to start the command, beyond its errno (see `SharedPage::failure`).
    pub(crate) fn failure(&self) -> Option<crate::keeper::KeeperFailure> {
        self.page.failure()
    }

    /// The signal that stopped the command since the last call (see `SharedPage::take_stop`).
    pub(crate) fn take_stop(&self) -> Option<i32> {
        self.page.take_stop()
    }

    /// Tells the keeper `keeper` (our unreaped child) what to do once the command exited: end the job or keep it.
    /// Once only.
    pub(crate) fn judge(&self, keeper: u32, kill: bool) {
        if !self.judged.swap(true, Ordering::SeqCst) {
            self.page.give_verdict(keeper, kill);
        }
    }
}
