//! Opt-in, process-wide facilities for a program whose whole job is supervising one command, such as the
//! `grouptimeout` tool.
//!
//! Nothing else in this crate touches process-wide state. Everything here does, and only when called by name:
//! signal handlers, the signal mask, the child-subreaper flag, reaping children, resource limits, exiting.
//! A library that merely runs commands should not call any of it.
//!
//! - [`SignalPipe`]: receive signals synchronously through a self-pipe, without blocking them; and
//!   [`signal_is_ignored`] to leave alone what the parent chose to ignore.
//! - [`sigpipe_was_ignored_at_start`] and [`keep_sigpipe_ignored`]: pass an ignored `SIGPIPE` on to the command, as
//!   a program that does not reset it would.
//! - [`become_child_subreaper`], [`sweep_children`] and [`reap_exited_children`]: catch descendants that left the
//!   command's process group, and reap the orphans adopted meanwhile. Linux only (Android included): they exist
//!   on every Unix so that a program builds everywhere, but elsewhere they fail.
//! - [`signal_child`]: signal one unreaped child of a [`std::process::Child`] by pid.
//! - [`exit_as_signaled`]: end this process the way a command that died of a signal ended.
//! - [`die_with_parent_forked`]: [`GroupChild::die_with_parent`] with a forked guard, cheaper in a small process.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::process::{Child, Command};
use std::thread;
use std::time::{Duration, Instant};

use crate::guard::Start;
use crate::sys;
use crate::GroupChild;

/// Signal handlers that turn signals into bytes on a pipe, read synchronously with [`wait`](SignalPipe::wait).
///
/// [`install`](SignalPipe::install) sets, for each signal given, a handler that only writes the signal number to a
/// non-blocking, close-on-exec pipe (one `write(2)`, which is async-signal-safe), and unblocks those signals in the
/// calling thread. Dropping the value restores the previous dispositions and signal mask.
///
/// # What is guaranteed
///
/// - A signal that arrives after `install` returned is reported by a later `wait` (several deliveries of the same
///   signal may be reported once or several times; the kernel itself merges pending standard signals).
/// - Handlers revert to the default disposition across `exec`, so a command spawned while the pipe is installed
///   starts with default dispositions for these signals, including any that this process had ignored (an
///   inherited `SIG_IGN`, such as `SIGCHLD` ignored by a careless parent, is replaced). The pipe's descriptors are
///   close-on-exec and never reach the command.
/// - `SIGCHLD` may be in the set: its handler uses `SA_NOCLDSTOP` and never `SA_NOCLDWAIT`, so children stay
///   waitable; this is what lets [`CommandExt::spawn_group`](crate::CommandExt::spawn_group) run in a process
///   started with `SIGCHLD` ignored.
///
/// # What is not guaranteed
///
/// - The handled signals are unblocked in the calling thread, and a command spawned meanwhile inherits that mask
///   (std does not reset the mask of a spawned command): it starts with those signals unblocked, whatever this
///   process's own mask was. Other blocked signals stay blocked for the command too.
/// - Process-wide: one `SignalPipe` at a time per process (a second `install` fails), and other code installing
///   handlers for the same signals replaces ours. In a multi-threaded program the signals may also be delivered to
///   other threads (still reported), and a handler running on another thread while the value is dropped could
///   write one byte to a just-closed, reused descriptor. Single-threaded supervisors are not affected.
#[derive(Debug)]
#[must_use = "dropping a SignalPipe restores the previous signal handlers at once"]
pub struct SignalPipe {
    /// Closed only after the handlers were restored (fields drop after `Drop::drop`), and before `read`, so that a
    /// late handler never writes into a pipe without a reader (which would raise `SIGPIPE`).
    _write: OwnedFd,
    read: OwnedFd,
    saved: Vec<(i32, sys::SavedAction)>,
    mask: Option<sys::SavedMask>,
}

impl std::fmt::Debug for sys::SavedAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SavedAction")
    }
}

impl std::fmt::Debug for sys::SavedMask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SavedMask")
    }
}

impl SignalPipe {
    /// Installs the pipe-writing handler for each of `signals`, then unblocks them in the calling thread.
    ///
    /// Install it *before* spawning the command you supervise: from then on no handled signal can end this process
    /// and leave the command running unsupervised.
    ///
    /// # Errors
    ///
    /// Another `SignalPipe` is installed (`AlreadyExists`); a signal cannot be caught (`SIGKILL`, `SIGSTOP`) or is
    /// not a valid number (`InvalidInput`); the pipe cannot be created. On error every disposition changed so far
    /// is restored.
    pub fn install(signals: &[i32]) -> io::Result<SignalPipe> {
        let (read, write) = sys::nonblocking_pipe()?;
        sys::register_signal_pipe(&write)?;
        let mut pipe = SignalPipe {
            read,
            _write: write,
            saved: Vec::with_capacity(signals.len()),
            mask: None,
        };
        for &signal in signals {
            let saved = sys::install_pipe_handler(signal).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("cannot install a handler for signal {signal}: {e}"),
                )
            })?;
            pipe.saved.push((signal, saved));
        }
        pipe.mask = Some(sys::unblock(signals)?);
        Ok(pipe)
    }

    /// Waits until a handled signal arrives, at most `timeout` (`None`: no limit), and returns its number, or
    /// `None` when the time is up. `Some(Duration::ZERO)` only checks.
    ///
    /// Signals are returned in the order they arrived, one per call. The wait is a `poll(2)` on the pipe (`ppoll`
    /// on Linux); it never returns `None` before `timeout` has passed.
    ///
    /// # Errors
    ///
    /// Reading or polling the pipe failed, which does not happen in practice.
    pub fn wait(&mut self, timeout: Option<Duration>) -> io::Result<Option<i32>> {
        let deadline = timeout.map(|t| Instant::now().checked_add(t));
        loop {
            if let Some(byte) = sys::read_byte(&self.read)? {
                return Ok(Some(i32::from(byte)));
            }
            let left = match deadline {
                // No limit: poll for a day at a time.
                None | Some(None) => Duration::from_secs(86_400),
                Some(Some(deadline)) => match deadline.saturating_duration_since(Instant::now()) {
                    Duration::ZERO => return Ok(None),
                    left => left,
                },
            };
            let mut readable = [libc::pollfd {
                fd: self.read.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            }];
            sys::poll(&mut readable, left)?;
        }
    }
}

impl Drop for SignalPipe {
    fn drop(&mut self) {
        for (signal, saved) in self.saved.iter().rev() {
            let _ = sys::restore_action(*signal, saved);
        }
        if let Some(mask) = &self.mask {
            let _ = sys::set_mask(mask);
        }
        sys::unregister_signal_pipe();
    }
}

/// Whether `signal` is set to be ignored (`SIG_IGN`) in this process, for instance because the parent started it
/// under `nohup` (`SIGHUP`) or as a background job of a non-interactive shell (`SIGINT`, `SIGQUIT`).
///
/// An ignored signal stays ignored across `exec`, so a command spawned now inherits it; a handler installed by
/// [`SignalPipe::install`] would replace that with the default disposition in the command. A supervisor that
/// wants to leave such choices of its parent intact checks this first and does not handle those signals.
///
/// # Errors
///
/// `signal` is not a valid signal number.
pub fn signal_is_ignored(signal: i32) -> io::Result<bool> {
    sys::is_ignored(signal)
}

/// Whether `SIGPIPE` was ignored (`SIG_IGN`) when this process started, that is, inherited ignored from its parent
/// (a shell's `trap '' PIPE`).
///
/// Every Rust program sets `SIGPIPE` to ignored before `main`, so [`signal_is_ignored`] cannot tell. This crate
/// records the disposition before that, from a function the loader runs before `main` (an ELF `.init_array` entry,
/// or Mach-O `__mod_init_func`); that function only reads the disposition, in every program linking this crate.
///
/// # What is not guaranteed
///
/// On a platform other than Linux, Android, the BSDs, illumos, Solaris and Apple's, this is always `false`. Code
/// that changes `SIGPIPE` in its own pre-`main` initializer, ahead of this crate's, is not seen.
pub fn sigpipe_was_ignored_at_start() -> bool {
    sys::sigpipe_ignored_at_start()
}

/// Makes `command` start with `SIGPIPE` ignored, as it would start if exec'ed by a process that inherited it
/// ignored (see [`sigpipe_was_ignored_at_start`]); returns `command` for chaining.
///
/// std resets `SIGPIPE` to its default in every child it spawns (it ignores `SIGPIPE` itself, and an ignored signal
/// survives `exec`). This adds a [`pre_exec`](std::os::unix::process::CommandExt::pre_exec) step that sets it
/// back to ignored after that reset, just before the `exec`. Works with
/// [`spawn_group`](crate::CommandExt::spawn_group) and with plain [`Command::spawn`].
///
/// # Cost
///
/// Any `pre_exec` step makes std give up `posix_spawn` for `fork` + `exec`: about a quarter slower for a small
/// program, and tens of milliseconds for one with a large memory footprint. Call it only when needed, for instance
/// when [`sigpipe_was_ignored_at_start`] says so.
///
/// If setting the disposition fails in the child (it does not in practice), the spawn fails with that error.
pub fn keep_sigpipe_ignored(command: &mut Command) -> &mut Command {
    sys::ignore_sigpipe_in_child(command);
    command
}

/// Makes this process a *child subreaper* (Linux `prctl(PR_SET_CHILD_SUBREAPER)`): a descendant whose parent dies
/// is re-parented to this process instead of to init, so that [`sweep_children`] can find it. Linux only (Android
/// included): elsewhere it fails.
///
/// Process-wide and, for processes already adopted, irreversible. Adopted processes become children of this
/// process: when they exit they stay zombies until reaped, for instance by [`sweep_children`].
///
/// # Errors
///
/// The `prctl` call failed; on systems other than Linux and Android this always fails with `Unsupported`.
pub fn become_child_subreaper() -> io::Result<()> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        sys::set_child_subreaper()
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "child subreapers exist only on Linux",
        ))
    }
}

/// What [`sweep_children`] did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Sweep {
    /// How many child processes were reaped (killed ones and ones that had already exited).
    pub reaped: usize,
    /// Children still listed when the time limit ran out: stuck in uninterruptible sleep, or not ours to signal
    /// (`EPERM`). Empty when the sweep finished.
    pub left: Vec<u32>,
}

/// Sends `SIGKILL` to every child process of this process, except the pids in `keep`, reaps them, and repeats with
/// the children this adopts meanwhile, until none is left or `limit` has passed. Linux only: elsewhere it fails.
///
/// The children are listed in `/proc/self/task/*/children`: the ones this process spawned and, after
/// [`become_child_subreaper`], the orphans it adopted. Pass in `keep` the pid of every child that other code still
/// owns and will wait for (a [`std::process::Child`] not yet waited for): it is neither signalled nor reaped. Each
/// listed child is signalled by its pid (never a group, never -1) while it is an unreaped child of this process, so
/// the pid cannot name anyone else; each is reaped by its pid (never `waitpid(-1)`).
///
/// Every round kills what it lists and reaps what has died; a killed child's own children are adopted and listed
/// in the next round. Between rounds without progress it sleeps briefly (50 µs, doubling to 10 ms). A child that
/// does not die (stuck in uninterruptible sleep, or owned by another user) cannot hang the sweep: it ends after
/// `limit` and reports what is left.
///
/// # Errors
///
/// `SIGCHLD` is ignored in this process (the kernel would reap children at once and their pids could be reused
/// before they are signalled: `Unsupported`); `/proc/self/task/*/children` cannot be read (not Linux, or a kernel
/// without `CONFIG_PROC_CHILDREN`); reaping failed.
pub fn sweep_children(keep: &[u32], limit: Duration) -> io::Result<Sweep> {
    if sys::children_are_auto_reaped()? {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "not sweeping children: SIGCHLD is ignored, so their pids could be reused before they are signalled",
        ));
    }
    let deadline = Instant::now().checked_add(limit);
    let mut sweep = Sweep::default();
    let mut pause = Duration::from_micros(50);
    loop {
        let pids: Vec<u32> = list_children()?
            .into_iter()
            .filter(|pid| !keep.contains(pid))
            .collect();
        if pids.is_empty() {
            return Ok(sweep);
        }
        for &pid in &pids {
            // EPERM (another user's process) is reported through `left` when the time runs out.
            let _ = sys::signal_process(pid, libc::SIGKILL);
        }
        let before = sweep.reaped;
        for &pid in &pids {
            if sys::reap_if_exited(pid)? {
                sweep.reaped += 1;
            }
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            sweep.left = pids;
            return Ok(sweep);
        }
        if sweep.reaped == before {
            thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(10));
        } else {
            pause = Duration::from_micros(50);
        }
    }
}

/// Reaps every child process of this process that has already exited, except the pids in `keep`, without
/// signalling anything; returns how many were reaped. Linux only: elsewhere it fails.
///
/// For a long-running [child subreaper](become_child_subreaper): adopted orphans that exit stay zombies until
/// reaped, and a command that keeps starting short-lived daemons would otherwise pile them up. Call it when
/// `SIGCHLD` arrives. As in [`sweep_children`], only listed pids are waited for, one by one (never
/// `waitpid(-1)`), and the pids in `keep` (children that other code owns, such as a [`std::process::Child`]) are
/// left alone.
///
/// # Errors
///
/// As for [`sweep_children`].
pub fn reap_exited_children(keep: &[u32]) -> io::Result<usize> {
    if sys::children_are_auto_reaped()? {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "not reaping children: SIGCHLD is ignored, so the kernel reaps them itself",
        ));
    }
    let mut reaped = 0;
    for pid in list_children()? {
        if !keep.contains(&pid) && sys::reap_if_exited(pid)? {
            reaped += 1;
        }
    }
    Ok(reaped)
}

/// The pids listed in `/proc/self/task/*/children`, without duplicates.
fn list_children() -> io::Result<Vec<u32>> {
    let mut pids = Vec::new();
    for task in std::fs::read_dir("/proc/self/task")? {
        let path = task?.path().join("children");
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            // A thread that ended since the directory was read.
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => {
                return Err(io::Error::new(
                    e.kind(),
                    format!("cannot read {}: {e}", path.display()),
                ))
            }
        };
        for pid in text.split_ascii_whitespace().filter_map(|s| s.parse().ok()) {
            if !pids.contains(&pid) {
                pids.push(pid);
            }
        }
    }
    Ok(pids)
}

/// Sends `signal` to the one process `child` (by pid, not its group), unless it was already reaped.
///
/// For a command spawned with plain [`std::process::Command::spawn`] (no process group of its own), where
/// [`Child::kill`] can send only `SIGKILL`. Taking `&mut Child` keeps other code from reaping it meanwhile; an
/// exited but unreaped child still holds its pid, so the signal cannot reach anyone else. Once reaped (by
/// [`Child::wait`] or [`Child::try_wait`]), nothing is sent and `Ok(())` is returned.
///
/// # Errors
///
/// The signal number is invalid, or the process may not be signalled (`PermissionDenied`).
pub fn signal_child(child: &mut Child, signal: i32) -> io::Result<()> {
    match sys::has_exited(child.id()) {
        Err(e) if e.raw_os_error() == Some(libc::ECHILD) => return Ok(()),
        Err(e) => return Err(e),
        Ok(_) => {}
    }
    sys::signal_process(child.id(), signal).map(drop)
}

/// Ends this process the way a command that died of `signal` ended, so that its parent sees the same wait status
/// (a shell shows `128 + signal`).
///
/// Turns core dumps off (`RLIMIT_CORE` 0, so that re-raising `SIGSEGV` or `SIGQUIT` leaves no core file of this
/// process), sets `signal` to its default disposition, unblocks it and raises it. If this process is still alive
/// after that (the signal's default action is to ignore it, or it could not be raised), it exits with status
/// `128 + signal`. Destructors of the current stack do not run; flush what must be flushed before.
pub fn exit_as_signaled(signal: i32) -> ! {
    let _ = sys::disable_core_dumps();
    let _ = sys::raise_default(signal);
    std::process::exit(128 + signal.clamp(0, 127))
}

/// [`GroupChild::die_with_parent`] with a guard forked from this process (`fork(2)` without `exec`) instead of a
/// `/bin/sh` spawned through `posix_spawn`; what it guarantees, and how it ends, is the same.
///
/// In a small process, such as a command-line supervisor, a fork costs a fraction of a shell's start (measured by
/// the bench, `bench/`). But `fork` copies this process's page tables, so it costs more the more memory this
/// process maps (milliseconds at hundreds of MiB), which is why the library's default is the shell. The forked
/// child calls only async-signal-safe functions, so this is sound in a multi-threaded process: it ignores every
/// catchable signal, only then joins the command's group, closes every descriptor but its pipe (on Linux with
/// `close_range`; elsewhere those below the `RLIMIT_NOFILE` soft limit, at most 65,536), and waits. Since a
/// signal cannot disarm it before it joins the group, this returns right after the fork, without waiting for the
/// guard to run; if the group has no process left to join by then, the guard exits quietly (there is nothing to
/// guard).
///
/// # Errors
///
/// As for [`GroupChild::die_with_parent`]; `fork` can also fail for lack of memory or processes.
pub fn die_with_parent_forked(child: &mut GroupChild) -> io::Result<()> {
    child.arrange_guard(Start::Fork)
}
