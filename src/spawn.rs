//! [`GroupCommandExt`]: spawning a [`std::process::Command`] as the leader of a new process group.

use std::io;
use std::process::Command;

use crate::boundary::Job;
use crate::child::GroupChild;

/// Extends [`std::process::Command`] with [`spawn_group`](GroupCommandExt::spawn_group) (and, with the `capture`
/// feature, `output_timeout`).
///
/// The trait is sealed: it is implemented for [`Command`] only, and no other crate can implement it (its supertrait
/// is private). So a feature that adds a method (such as `capture`'s `output_timeout`) breaks no one, whichever
/// crate in a build turns it on; features only add. Import it to call its methods:
///
/// ```
/// use grouptimeout::GroupCommandExt as _;
///
/// # fn main() -> std::io::Result<()> {
/// let mut child = std::process::Command::new("true").spawn_group()?;
/// assert!(child.wait()?.success());
/// # Ok(())
/// # }
/// ```
///
/// An implementation outside this crate does not compile, in every build (`E0277`: the private supertrait is not
/// implemented):
///
/// ```compile_fail,E0277
/// struct Mine;
///
/// impl grouptimeout::GroupCommandExt for Mine {
///     fn spawn_group(&mut self) -> std::io::Result<grouptimeout::GroupChild> {
///         unimplemented!()
///     }
/// }
/// ```
pub trait GroupCommandExt: sealed::Sealed {
    /// Spawns the command as the leader of a new process group and returns a handle that waits for it with a
    /// deadline and leaves no process of the group running.
    ///
    /// This sets [`process_group(0)`](std::os::unix::process::CommandExt::process_group) on the `Command` and nothing
    /// else, so std keeps its fast `posix_spawn` path. When this returns, the child already leads its own group, whose
    /// id is the child's pid ([`GroupChild::id`]). The setting stays on the `Command` (std has no way to take it off
    /// again): a later plain [`spawn`](Command::spawn), [`output`](Command::output) or
    /// [`status`](Command::status) of the same `Command` also starts its child as the leader of a new group,
    /// unsupervised by this crate. Build a new `Command` for those.
    ///
    /// # The terminal
    ///
    /// The new group is not the terminal's foreground process group, so the command is out of the terminal's job
    /// control. If it reads from the controlling terminal, the kernel stops it with `SIGTTIN` (or fails the read with
    /// `EIO` once its group is orphaned), and the wait runs into its deadline. Ctrl-C, Ctrl-Z and Ctrl-\\ signal the
    /// terminal's foreground group, which holds this process and not the command. Writing to the terminal works
    /// (unless `stty tostop` is set).
    ///
    /// - A command that needs no input: give it [`Stdio::null()`](std::process::Stdio::null) or a pipe as its
    ///   standard input, and it never touches the terminal for reading.
    /// - A command that must read the terminal: run it in this process's group with plain [`Command::spawn`], as
    ///   the `grouptimeout` tool's `--foreground` does (there is then no group of its own to kill); or make its group
    ///   the terminal's foreground group after the spawn and take the terminal back after the wait, as shells and
    ///   the `grouptimeout` tool do: [`host::Terminal`][host-terminal] (opt-in, process-wide), with
    ///   [`host::take_stop`][host-take-stop] and [`host::stop_self`][host-stop-self] to pass a
    ///   Ctrl-Z on to this process's parent.
    /// - Ctrl-C ends this process by default without running any destructor, so the command's group keeps running:
    ///   catch `SIGINT` and pass it on with [`GroupChild::signal`] (a supervisor program can use
    ///   [`host::Signals`][host-signals]).
    ///
    /// # Errors
    ///
    /// - The spawn failed: std's error as it is, with the OS error number (`raw_os_error()`) and std's
    ///   [`ErrorKind`](io::ErrorKind): `ENOENT` (`NotFound`) for a missing program, `EACCES` (`PermissionDenied`)
    ///   for one that is not executable or is a directory, `ENOEXEC` for a script without `#!` (no `/bin/sh`
    ///   fallback is tried), `EAGAIN` when no process could be created. Like std's, its message does not name the
    ///   program (see [Errors](crate#errors)).
    /// - This process ignores `SIGCHLD` (`SIG_IGN`, or a handler with `SA_NOCLDWAIT`): the kernel would reap the
    ///   leader the moment it exits, nothing would keep its group id from being reused, and a later group kill
    ///   could hit an unrelated process. Nothing is spawned; restore the default disposition to use this crate.
    ///
    /// [host-terminal]: https://docs.rs/grouptimeout-cli/latest/grouptimeout_cli/host/struct.Terminal.html
    /// [host-take-stop]: https://docs.rs/grouptimeout-cli/latest/grouptimeout_cli/host/fn.take_stop.html
    /// [host-stop-self]: https://docs.rs/grouptimeout-cli/latest/grouptimeout_cli/host/fn.stop_self.html
    /// [host-signals]: https://docs.rs/grouptimeout-cli/latest/grouptimeout_cli/host/struct.Signals.html
    fn spawn_group(&mut self) -> io::Result<GroupChild>;

    /// [`spawn_group`](GroupCommandExt::spawn_group) with standard output and standard error piped, then
    /// [`wait_with_output_timeout`](GroupChild::wait_with_output_timeout): the group's counterpart of
    /// [`Command::output`], which returns at the deadline.
    ///
    /// Needs the `capture` feature (on by default).
    ///
    /// Both streams are piped whatever the `Command` said (std's `Command` does not tell what was set), and the
    /// setting stays on it, as [`process_group(0)`](std::os::unix::process::CommandExt::process_group) does. Standard
    /// input is left as set, inherited by default (`output` gives `/dev/null` unless set): give a command that must
    /// not read the terminal [`Stdio::null()`](std::process::Stdio::null). The output limit is the default (16 MiB
    /// per stream); to set it, or to write input, spawn with `spawn_group` and wait as this does.
    ///
    /// # Errors
    ///
    /// As for [`spawn_group`](GroupCommandExt::spawn_group), then as for
    /// [`wait_with_output_deadline`](GroupChild::wait_with_output_deadline).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::process::Command;
    /// use std::time::Duration;
    /// use grouptimeout::GroupCommandExt;
    ///
    /// # fn main() -> std::io::Result<()> {
    /// let out = Command::new("sh").args(["-c", "echo out; echo err >&2"]).output_timeout(Duration::from_secs(10))?;
    /// assert_eq!((&out.stdout[..], &out.stderr[..]), (&b"out\n"[..], &b"err\n"[..]));
    /// # Ok(())
    /// # }
    /// ```
    #[cfg(feature = "capture")]
    #[cfg_attr(docsrs, doc(cfg(feature = "capture")))]
    fn output_timeout(&mut self, timeout: std::time::Duration) -> io::Result<crate::Captured>;
}

/// The supertrait that seals [`GroupCommandExt`]: public in a private module, so no other crate can name it.
mod sealed {
    pub trait Sealed {}

    impl Sealed for std::process::Command {}
}

impl GroupCommandExt for Command {
    fn spawn_group(&mut self) -> io::Result<GroupChild> {
        GroupChild::spawn(self, Job::default())
    }

    #[cfg(feature = "capture")]
    fn output_timeout(&mut self, timeout: std::time::Duration) -> io::Result<crate::Captured> {
        crate::capture::output(self, timeout)
    }
}
