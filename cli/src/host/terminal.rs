//! Job control for a supervisor at a terminal: handing the controlling terminal to the command's group and taking
//! it back, noticing that the command was stopped, and stopping ourselves. Re-exported through [`crate::host`].

use std::fs::OpenOptions;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;

use crate::sys;
use grouptimeout::GroupChild;

/// This process's controlling terminal, for handing it to a command's process group and taking it back, as shells
/// do for their jobs.
///
/// A command started with [`spawn_group`](grouptimeout::GroupCommandExt::spawn_group) leads a new process group, which is not
/// the terminal's foreground group: it cannot read the terminal (the kernel stops it with `SIGTTIN`), and Ctrl-C,
/// Ctrl-\\ and Ctrl-Z reach this process's group instead of it. [`give_to`](Terminal::give_to) makes the command's
/// group the foreground group; [`take_back`](Terminal::take_back) returns the terminal to this process's group,
/// which must happen before this process exits, so that whoever waits for it (a shell) finds the terminal where
/// it left it.
///
/// The value holds a close-on-exec descriptor of the terminal; nothing changes when it is dropped (take the
/// terminal back first). Every method acts on the terminal's state, which is shared by every process of the
/// session: that is why this lives in [`host`](crate::host).
///
/// ```no_run
/// use std::process::Command;
/// use grouptimeout::GroupCommandExt;
/// use grouptimeout_cli::host::Terminal;
///
/// # fn main() -> std::io::Result<()> {
/// // Only a foreground job may hand the terminal on: in the background it belongs to someone else.
/// let terminal = Terminal::controlling()?.filter(|t| t.is_foreground().unwrap_or(false));
/// let mut child = Command::new("vi").spawn_group()?;
/// if let Some(terminal) = &terminal {
///     terminal.give_to(&child)?;
/// }
/// let status = child.wait();
/// // The group keeps the terminal after its last process exited: take it back before anything else.
/// if let Some(terminal) = &terminal {
///     if terminal.is_held_by(child.id())? {
///         terminal.take_back()?;
///     }
/// }
/// println!("vi exited: {}", status?);
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Terminal {
    fd: OwnedFd,
}

impl Terminal {
    /// Opens this process's controlling terminal: `/dev/tty`, or else the first of standard input, standard
    /// error and standard output that is the controlling terminal of this process's session. `Ok(None)` when
    /// this process has no controlling terminal (a daemon, a CI job, `setsid`), or none of those is it.
    ///
    /// It does not matter whether this process's group is the terminal's foreground group: check with
    /// [`is_foreground`](Terminal::is_foreground).
    ///
    /// # Errors
    ///
    /// Copying a standard descriptor failed (`EMFILE`: no descriptor left).
    pub fn controlling() -> io::Result<Option<Terminal>> {
        // O_NOCTTY: a process without a controlling terminal never acquires one here (it gets ENXIO instead).
        let tty = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOCTTY)
            .open("/dev/tty");
        if let Ok(file) = tty {
            return Ok(Some(Terminal { fd: file.into() }));
        }
        for fd in [
            io::stdin().as_fd(),
            io::stderr().as_fd(),
            io::stdout().as_fd(),
        ] {
            if sys::is_terminal(fd) && sys::is_our_controlling_terminal(fd) {
                return Ok(Some(Terminal {
                    fd: fd.try_clone_to_owned()?,
                }));
            }
        }
        Ok(None)
    }

    /// Whether this process's group is the terminal's foreground group, which is where a shell puts a job it
    /// runs in the foreground; `false` for a background job (`&`, `bg`).
    ///
    /// # Errors
    ///
    /// The terminal's foreground group cannot be read (the terminal was hung up).
    pub fn is_foreground(&self) -> io::Result<bool> {
        Ok(sys::foreground_group(self.fd.as_fd())? == sys::own_group()?)
    }

    /// Whether the process group `pgid` is the terminal's foreground group: for instance the group of a command
    /// this process gave the terminal to, to learn whether it still holds it (and not the shell, after a `bg`).
    ///
    /// Only compares ids, so it also answers after that command's leader was reaped (a group whose members are all
    /// gone keeps the terminal until someone takes it back); an id is reused only after many processes were started.
    ///
    /// # Errors
    ///
    /// As for [`is_foreground`](Terminal::is_foreground).
    pub fn is_held_by(&self, pgid: u32) -> io::Result<bool> {
        Ok(sys::foreground_group(self.fd.as_fd())? == pgid)
    }

    /// Makes `child`'s group the terminal's foreground group (`tcsetpgrp`), with `SIGTTOU` blocked in the calling
    /// thread for the call, so that it works from a background group too. The command can then read the terminal,
    /// and the terminal's Ctrl-C, Ctrl-\\ and Ctrl-Z signal its group, not this process.
    ///
    /// The command runs from the spawn on, and may try to read the terminal before this call: the kernel then stops
    /// its group with `SIGTTIN`, and it stays stopped. A supervisor notices with [`take_stop`] (on `SIGCHLD`) and
    /// continues the group with [`GroupChild::signal`]`(SIGCONT)` once the group holds the terminal.
    ///
    /// Refuses once the leader was reaped: its group id may name another group by then. It does not check whether
    /// this process's group had the terminal: a supervisor running in the background should not take it from
    /// whoever holds it (check [`is_foreground`](Terminal::is_foreground) first).
    ///
    /// # Errors
    ///
    /// The leader was reaped (`InvalidInput`); the group is not in this process's session, or has no process left
    /// (`EPERM`); the terminal was hung up (`EIO`, `ENOTTY`).
    pub fn give_to(&self, child: &GroupChild) -> io::Result<()> {
        if !grouptimeout::__private::leader_unreaped(child) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "not giving the terminal to group {}: its leader was reaped",
                    child.id()
                ),
            ));
        }
        sys::set_foreground_group(self.fd.as_fd(), child.id())
    }

    /// Makes this process's group the terminal's foreground group again, with `SIGTTOU` blocked for the call.
    ///
    /// Call it only when the terminal was given away by [`give_to`](Terminal::give_to) and is still held by that
    /// group ([`is_held_by`](Terminal::is_held_by), which still answers once the leader was reaped): when this process runs in the background, the terminal belongs
    /// to someone else (the shell), and this call would take it from them.
    ///
    /// # Errors
    ///
    /// The terminal was hung up (`EIO`, `ENOTTY`).
    pub fn take_back(&self) -> io::Result<()> {
        sys::set_foreground_group(self.fd.as_fd(), sys::own_group()?)
    }
}

impl AsFd for Terminal {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// If `child`'s leader stopped (Ctrl-Z at the terminal, `SIGSTOP`, `SIGTTIN` for reading the terminal from a
/// background group) since the last stop reported, consumes that report and returns the signal that stopped it.
///
/// A `waitid(P_PID, …, WSTOPPED | WNOHANG)`: it never blocks and never consumes an exit, so `child`'s waits still
/// see and reap it. Each stop is reported once. `Ok(None)` when the leader did not stop, already exited, or was
/// reaped. Only the leader is checked: members of its group that stop without it are not reported. A lineage job's
/// `SIGKILL` stops the leader with `SIGSTOP` for a moment first (see [`Contain`](grouptimeout_job::Contain)): a call from
/// another thread during such a kill may report that `SIGSTOP`.
///
/// A process learns of a child's stop through `SIGCHLD` ([`Signals`](crate::host::Signals) reports those), unless
/// its handler was installed with `SA_NOCLDSTOP`; otherwise call this when convenient.
///
/// # Errors
///
/// The `waitid` call failed for another reason than `ECHILD`, which does not happen in practice.
pub fn take_stop(child: &GroupChild) -> io::Result<Option<i32>> {
    if !grouptimeout::__private::leader_unreaped(child) {
        return Ok(None);
    }
    // A contained job's keeper reports its command's stops (it does not stop itself).
    if let Some(stop) = grouptimeout_job::__private::kept_stop(child) {
        return Ok(stop);
    }
    sys::take_stop(child.id())
}

/// Stops this process as Ctrl-Z would: raises `SIGTSTP`, and returns once this process is continued (`SIGCONT`,
/// as a shell's `fg` or `bg` sends).
///
/// For a supervisor whose command was stopped: the supervisor stops too, so that its parent (a shell) sees the job
/// stopped. It returns at once, without stopping, when `SIGTSTP` is ignored, handled or blocked in this process (a
/// blocked one stays pending), or when the kernel discards the signal because this process's group is orphaned (no
/// parent in the session could continue it, for instance under `script -c` or a shell without job control).
///
/// # Errors
///
/// `raise` failed, which does not happen in practice.
pub fn stop_self() -> io::Result<()> {
    sys::raise_stop()
}

/// Stops this process's whole process group as Ctrl-Z would stop it: sends `SIGTSTP` to the group, this process
/// included, and returns once this process is continued.
///
/// For a supervisor that handed the terminal to its command's group while its own group was the terminal's
/// foreground group: there a Ctrl-Z would have stopped its whole group, a script that runs it included (`sh -c
/// 'supervisor cmd; echo after'`), and its shell waits for that script, not for the supervisor. [`stop_self`] alone
/// would stop the supervisor and leave the script waiting for it, so the shell would show no prompt. This is what
/// `sudo` does in the same place. Call it only then: the other members of the group are stopped too.
///
/// As with [`stop_self`], nothing stops where `SIGTSTP` is ignored, or where the kernel discards it because the
/// group is orphaned; a member that handles it gets it.
///
/// # Errors
///
/// This process's group id is 0 or 1 (`InvalidInput`: init's group, never signalled), or `kill` failed.
pub fn stop_own_group() -> io::Result<()> {
    sys::stop_own_group()
}
