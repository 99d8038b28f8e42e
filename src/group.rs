//! Signalling a group whose leader this process has not reaped: the one path every group signal takes, from a
//! [`GroupChild`](crate::GroupChild) and from a [`GroupHandle`](crate::GroupHandle).

use std::io;

use crate::boundary::Job;
use crate::sys;

/// Whether our child `pid`, the leader of a group, has exited, without reaping it. `ECHILD` (the OS error as it is):
/// it was reaped by someone else (`SIGCHLD` ignored, a `waitpid(-1)`), and its id may be reused.
pub(crate) fn leader_exited(pid: u32) -> io::Result<bool> {
    sys::has_exited(pid)
}

/// Whether `signal` stops a process by default (`SIGSTOP`, `SIGTSTP`, `SIGTTIN`, `SIGTTOU`): never follow one with
/// `SIGCONT`, which would undo it.
#[must_use]
pub fn is_stop_signal(signal: i32) -> bool {
    [libc::SIGSTOP, libc::SIGTSTP, libc::SIGTTIN, libc::SIGTTOU].contains(&signal)
}

/// This crate's own signal to group `pgid`, which every signal it sends to a group takes, whatever the job's boundary
/// did or answered: first its own check of the leader (our child `pgid`, `waitid` with `WNOWAIT`), which refuses with
/// `ECHILD` a leader reaped by someone else (its id may name another group by then); then `kill(-pgid)`, and the
/// leader by its pid (`sys::signal_group`). The one thing a boundary decides here is whether the pid `pgid` is its
/// keeper, outside the group (see `Boundary::keeps_group`): the keeper then gets `SIGCONT` (its wake-up) instead of
/// the signal. A failed `kill(2)` is returned as the OS error it is (`EPERM`, `EINVAL`).
pub(crate) fn signal_group(pgid: u32, signal: i32, job: &Job) -> io::Result<()> {
    leader_exited(pgid)?;
    match sys::signal_group_kept(pgid, signal, job.keeps_group(pgid)) {
        // macOS answers EPERM for a group of zombies: once the leader has exited, that means "gone".
        Err(e) if e.raw_os_error() == Some(libc::EPERM) && leader_exited(pgid)? => Ok(()),
        other => other,
    }
}

/// [`GroupChild::signal`](crate::GroupChild::signal) for a leader that this crate has not reaped yet (the caller
/// makes sure of that): the group first and the rest of the job after it (see [`Job::signal`]), each refusing a
/// leader reaped by someone else.
pub(crate) fn signal_unreaped_group(pgid: u32, signal: i32, job: &Job) -> io::Result<()> {
    job.signal(pgid, signal, || signal_group(pgid, signal, job))
}
