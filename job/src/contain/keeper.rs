//! The keeper of a contained job, as this process sees it (the program itself is `job/keeper/`, the spawn
//! `crate::keeper`): the process the spawn made (the `GroupChild`'s id) is the job's keeper, and the command is its
//! child, in the group whose id is the keeper's pid. This process talks to it over the job's channel (one datagram
//! a message, `crate::protocol`): it sends the orders (kill the job, the verdict, the death plan) and reads the
//! notes (the command's stops, and the report the keeper writes just before it exits as the command did).
//!
//! A wait watches the command through a pidfd the spawning child opened; the keeper pins the command (unreaped)
//! until its own end. A command that left nothing running needs no verdict: its keeper ends at once. So does one
//! that left something running, once that has exited too and no verdict came (a wait for the whole job).

use std::io;
use std::os::fd::{AsFd as _, AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use super::proc::{lock, Leftover};
use crate::protocol::{Measured, Note, Order, Report};
use crate::sys;

#[derive(Debug)]
pub(crate) struct Keeper {
    /// This process's end of the job's channel.
    channel: OwnedFd,
    command: u32,
    /// A pidfd of the command, readable once it exited (`None`: the command is looked up in `/proc`).
    exit: Option<OwnedFd>,
    /// A pidfd of the keeper, for a wait for the whole job (see [`Keeper::rest_exited`]).
    own_exit: Option<OwnedFd>,
    notes: Mutex<Notes>,
    judged: AtomicBool,
    /// Whether this process sent the job `SIGKILL` (then the orphans the keeper found killed by it count as reached).
    killed: AtomicBool,
}

/// What the keeper said so far.
#[derive(Debug, Default)]
struct Notes {
    /// The signal that stopped the command, not taken yet.
    stop: Option<i32>,
    /// The keeper's last word.
    report: Option<Report>,
    /// Whether the keeper said it named the command's group for a kill (see [`Keeper::wait_listed`]).
    listed: bool,
}

impl Keeper {
    pub(crate) fn new(
        channel: OwnedFd,
        command: u32,
        exit: Option<OwnedFd>,
        own_exit: Option<OwnedFd>,
    ) -> Keeper {
        Keeper {
            channel,
            command,
            exit,
            own_exit,
            notes: Mutex::new(Notes::default()),
            judged: AtomicBool::new(false),
            killed: AtomicBool::new(false),
        }
    }

    /// The command's pid.
    pub(crate) fn command(&self) -> u32 {
        self.command
    }

    /// Reads what the keeper wrote since the last call.
    fn read_notes(&self) -> std::sync::MutexGuard<'_, Notes> {
        let mut notes = lock(&self.notes);
        loop {
            let bytes = match sys::receive_datagram(self.channel.as_fd()) {
                Ok(Some(bytes)) => bytes,
                // The keeper exited with orders of ours unread: the first read says so (once), the notes follow.
                Err(e) if e.raw_os_error() == Some(libc::ECONNRESET) => continue,
                _ => break,
            };
            match Note::decode(&bytes) {
                Some(Note::Stopped(signal)) => notes.stop = i32::try_from(signal).ok(),
                Some(Note::Report(report)) => notes.report = Some(report),
                Some(Note::Listed) => notes.listed = true,
                // End of file: the keeper exited (or will: it closes its end only then).
                None if bytes.is_empty() => break,
                None => {}
            }
        }
        notes
    }

    /// Whether the command has exited: its pidfd is readable, or `/proc` shows it dead (a zombie: the keeper holds
    /// it) or gone.
    fn command_exited(&self) -> bool {
        match &self.exit {
            Some(fd) => {
                let mut fds = [libc::pollfd {
                    fd: fd.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                }];
                sys::poll(&mut fds, Duration::ZERO).is_ok_and(|n| n > 0)
            }
            None => super::proc::Stat::read(self.command).is_none_or(|s| s.dead()),
        }
    }

    /// Whether the keeper `keeper` (our child) has exited, or the command has (the keeper then ends the job or waits
    /// for the verdict). A keeper found stopped (`kill -STOP` of its pid: it cannot block that) is continued.
    ///
    /// # Errors
    ///
    /// `ECHILD` as for `has_exited` (someone else reaped the keeper).
    pub(crate) fn exited(&self, keeper: u32) -> io::Result<bool> {
        match sys::exited_or_stopped(keeper)? {
            Some(true) => return Ok(true),
            Some(false) => sys::wake_child(keeper),
            None => {}
        }
        drop(self.read_notes());
        Ok(self.command_exited())
    }

    /// Tells the keeper to kill the whole job (this process signalled the command's group already): `false` if the
    /// keeper is gone without having ended the job (killed: then this process must end it).
    pub(crate) fn kill(&self) -> bool {
        self.killed.store(true, Ordering::SeqCst);
        sys::send_datagram(self.channel.as_fd(), &Order::Kill.encode()).is_ok() || self.left()
    }

    /// Waits, after [`kill`](Keeper::kill), until the keeper has stopped the command's group and named its members
    /// (its note), it has exited (its end of the channel closed), or `limit` has passed.
    pub(crate) fn wait_listed(&self, limit: Duration) {
        let deadline = std::time::Instant::now() + limit;
        let mut fds = [libc::pollfd {
            fd: self.channel.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }];
        while !self.read_notes().listed && fds[0].revents & libc::POLLHUP == 0 {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() || sys::poll(&mut fds, left).is_err() {
                return;
            }
        }
    }

    /// Whether the keeper exited on its own, after its report (one that exited without it was killed).
    pub(crate) fn left(&self) -> bool {
        self.read_notes().report.is_some()
    }

    /// The verdict, once the command exited: end the rest of the job (`kill`), or leave it running. Once only.
    pub(crate) fn judge(&self, kill: bool) {
        if !self.judged.swap(true, Ordering::SeqCst) {
            let _ = sys::send_datagram(self.channel.as_fd(), &Order::Verdict { kill }.encode());
        }
    }

    /// What the keeper does when this process dies: `signal` to the command's group (and the command), then up to
    /// `grace` for the job to end, then the whole job's kill. A signal of 0 or `SIGKILL`, or no grace: the kill at
    /// once. The keeper keeps the last plan it was sent.
    pub(crate) fn set_death_plan(&self, signal: i32, grace: Duration) {
        let grace_ms = u32::try_from(grace.as_nanos().div_ceil(1_000_000)).unwrap_or(u32::MAX);
        let plan = match u32::try_from(signal) {
            Ok(signal) if signal != 0 && signal != libc::SIGKILL.unsigned_abs() && grace_ms > 0 => {
                Order::DeathPlan { signal, grace_ms }
            }
            _ => Order::DeathPlan {
                signal: 0,
                grace_ms: 0,
            },
        };
        let _ = sys::send_datagram(self.channel.as_fd(), &plan.encode());
    }

    /// The signal that stopped the command since the last call (the keeper's note, taken).
    pub(crate) fn take_stop(&self) -> Option<i32> {
        self.read_notes().stop.take()
    }

    /// Whether the keeper `keeper` (our child) has exited, and its pidfd, readable once it has (`None` without one:
    /// the wait checks on its schedule). Waiting for the whole job, no verdict is given: the keeper, woken by each exit
    /// of its descendants (and so by the last one of the job), ends once nothing of the job but the command is left.
    ///
    /// # Errors
    ///
    /// `ECHILD` as for `has_exited` (someone else reaped the keeper).
    pub(crate) fn rest_exited(&self, keeper: u32) -> io::Result<(bool, Option<RawFd>)> {
        let exited = match sys::exited_or_stopped(keeper)? {
            Some(false) => {
                sys::wake_child(keeper);
                false
            }
            state => state.is_some(),
        };
        Ok((exited, self.own_exit.as_ref().map(AsRawFd::as_raw_fd)))
    }

    /// Moves what the keeper's kills reached into `reached` (once per pid), and, if this process sent the job
    /// `SIGKILL`, the orphans the keeper found killed by `SIGKILL` (this process's group kill reached them first).
    pub(crate) fn take_reached(&self, reached: &mut Vec<Leftover>) {
        let mut notes = self.read_notes();
        let Some(report) = notes.report.as_mut() else {
            return;
        };
        let mut killed = std::mem::take(&mut report.killed);
        if !self.killed.load(Ordering::SeqCst) {
            killed.clear();
        }
        for (pid, name) in report.reached.drain(..).chain(killed) {
            if !reached.iter().any(|l| l.pid == pid) {
                reached.push(Leftover { pid, name });
            }
        }
    }

    /// Refines `usage` (the keeper's own, from its reap: the command and every orphan it reaped) with what the
    /// keeper measured of the whole job (its report). Nothing from a keeper that was killed.
    pub(crate) fn usage(&self, usage: &mut grouptimeout::Usage) {
        use grouptimeout::Measured as How;
        let notes = self.read_notes();
        let Some(report) = &notes.report else {
            return;
        };
        usage.user = Duration::from_micros(report.user_us);
        usage.system = Duration::from_micros(report.system_us);
        usage.measured = match report.measured {
            Measured::Cgroup => How::Cgroup,
            Measured::Keeper => How::Keeper,
            Measured::Leader => How::Leader,
        };
        if let Some((memory, whole)) = report.memory {
            usage.memory = Some(memory);
            usage.memory_whole_job = whole;
        }
        usage.processes = report.processes;
    }

    /// What the keeper's report says of the job's end: whether it removed the job's folder, and what failed.
    pub(crate) fn ended(&self) -> (bool, Option<io::Error>) {
        let notes = self.read_notes();
        let Some(report) = &notes.report else {
            return (false, None);
        };
        let failure = report
            .failure
            .as_ref()
            .map(crate::protocol::Failure::to_error);
        (report.folder_removed, failure)
    }
}
