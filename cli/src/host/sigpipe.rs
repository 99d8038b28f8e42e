//! What the parent left this process at its start, recorded before `main`: whether `SIGPIPE` was ignored (and
//! passing that on to a command), and whether a standard descriptor was closed.

use std::process::Command;

use crate::sys;

/// Whether `SIGPIPE` was ignored (`SIG_IGN`) when this process started, that is, inherited ignored from its parent
/// (a shell's `trap '' PIPE`).
///
/// Every Rust program sets `SIGPIPE` to ignored before `main`, so [`signal_is_ignored`](super::signal_is_ignored) cannot tell. This crate
/// records the disposition before that, from a function the loader runs before `main` (an ELF `.init_array` entry,
/// or Mach-O `__mod_init_func`); that function only reads the disposition, in every program linking this crate.
///
/// # What is not guaranteed
///
/// On a platform other than Linux, Android, the BSDs, illumos, Solaris and Apple's, this is always `false`. Code
/// that changes `SIGPIPE` in its own pre-`main` initializer, ahead of this crate's, is not seen.
#[must_use]
pub fn sigpipe_was_ignored_at_start() -> bool {
    sys::sigpipe_ignored_at_start()
}

/// Whether standard descriptor `fd` (0, 1 or 2) was closed when this process started (a shell's `>&-`); `false`
/// for any other descriptor.
///
/// std's runtime opens `/dev/null` on a standard descriptor that is closed when the program starts, before `main`,
/// so that a file opened later never takes its number by accident: writes to standard output then succeed and are
/// lost. A program that must report them as failed, as C programs see them (GNU's `--help >&-` fails with `write
/// error: Bad file descriptor`), asks this. Recorded by the same function as
/// [`sigpipe_was_ignored_at_start`], before std's runtime, which only reads each descriptor's flags
/// (`fcntl(F_GETFD)`).
///
/// # What is not guaranteed
///
/// As for [`sigpipe_was_ignored_at_start`]: always `false` on a platform without that record, and a descriptor
/// opened or closed by code that runs before `main` ahead of this crate's is not seen as the parent left it.
#[must_use]
pub fn was_closed_at_start(fd: i32) -> bool {
    sys::closed_at_start(fd)
}

/// Makes `command` start with `SIGPIPE` ignored, as it would start if exec'ed by a process that inherited it
/// ignored (see [`sigpipe_was_ignored_at_start`]); returns `command` for chaining.
///
/// std resets `SIGPIPE` to its default in every child it spawns (it ignores `SIGPIPE` itself, and an ignored signal
/// survives `exec`). This adds a [`pre_exec`](std::os::unix::process::CommandExt::pre_exec) step that sets it
/// back to ignored after that reset, just before the `exec`. Works with
/// [`spawn_group`](grouptimeout::GroupCommandExt::spawn_group) and with plain [`Command::spawn`].
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
