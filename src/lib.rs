//! Run a command in its own process group, wait for it with a deadline, and leave no process of that group
//! running when the wait returns.
//!
//! [`std::process::Child::kill`] ends only the direct child. A shell that ran `sleep 30 && curl … &` leaves the
//! grandchild running, with the environment and the working directory it was given. This crate starts the command
//! as the leader of a new process group and deals with the whole group:
//!
//! ```
//! use std::process::Command;
//! use std::time::Duration;
//! use grouptimeout::{GroupCommandExt, Outcome};
//!
//! # fn main() -> std::io::Result<()> {
//! let mut child = Command::new("sh").args(["-c", "sleep 30 & sleep 30"]).spawn_group()?;
//! match child.wait_timeout(Duration::from_millis(100))? {
//!     Outcome::Exited(status) => println!("exited with {status}; its leftovers were killed"),
//!     Outcome::TimedOut(status) => println!("timed out ({status}): the whole group was killed"),
//!     Outcome::Idle(_) => unreachable!("only a capture with an idle timeout ends idle"),
//! }
//! # Ok(())
//! # }
//! ```
//!
//! To capture the output as well, pipe it and use [`GroupChild::wait_with_output_timeout`][output-timeout]: unlike
//! [`std::process::Command::output`] it returns at the deadline, does not hang on a pipe held open by a process that
//! left the group, and keeps at most [`GroupChild::set_output_limit`][output-limit] bytes of each stream (head and tail):
//!
//! ```
//! use std::process::{Command, Stdio};
//! use std::time::Duration;
//! use grouptimeout::GroupCommandExt;
//!
//! # #[cfg(not(feature = "capture"))] fn main() {}
//! # #[cfg(feature = "capture")]
//! # fn main() -> std::io::Result<()> {
//! let mut child = Command::new("sh")
//!     .args(["-c", "echo out; echo err >&2"])
//!     .stdout(Stdio::piped())
//!     .stderr(Stdio::piped())
//!     .spawn_group()?;
//! child.set_output_limit(1 << 20);
//! let captured = child.wait_with_output_timeout(Duration::from_secs(10))?;
//! assert_eq!(captured.stdout, b"out\n");
//! assert_eq!(captured.stderr, b"err\n");
//! assert!(!captured.outcome.timed_out() && captured.stdout_omitted == 0 && captured.pipes_closed);
//! # Ok(())
//! # }
//! ```
//!
//! A group can outlive the code that owns it in two more ways, each with an opt-in remedy:
//! [`GroupChild::handle`] gives a [`GroupHandle`] that signals the group from other threads while one thread waits,
//! and never after the leader was reaped; the sibling crate [`grouptimeout-job`][grouptimeout-job]'s
//! [`die_with_parent`][die-with-parent] makes the group die with this process, however it dies (a guard process in the
//! group notices its death).
//!
//! # The sibling crates
//!
//! This crate is the core that the design promises, small enough to vet alone: it spawns, waits, signals and
//! reaps, and registers nothing that runs before `main`. What reaches beyond the process group, and what drives many
//! waits at once, is a crate of its own, so that a dependent that needs only the group vets only this one:
//!
//! - [`grouptimeout-job`][grouptimeout-job]: `spawn_contained` (a cgroup of the job's own, the job's own reaper, a
//!   lineage mark), `die_with_parent` and its guard. It extends the same [`GroupChild`] through a hidden extension
//!   point of this crate (`__private`), which it pins by exact version; the waits, the order "signal the group, then
//!   reap the leader" and the reap stay here.
//! - [`grouptimeout-cli`][grouptimeout-cli]: the `grouptimeout` tool, and `host`, the process-wide facilities such a
//!   supervisor program needs (signal handlers, the subreaper, the terminal, the `SIGPIPE` record before `main`).
//! - [`grouptimeout-set`][grouptimeout-set]: `JobSet`, many jobs waited from one thread (one `epoll` on Linux), each
//!   through this crate's stepped wait ([`GroupChild::step`]).
//! - [`grouptimeout-tokio`][grouptimeout-tokio]: the waits as tokio futures over the same steps; a future dropped
//!   before it returned ends its job. It has its own lock file, so that tokio never enters the workspace's.
//!
//! # What is promised
//!
//! 1. [`spawn_group`](GroupCommandExt::spawn_group) starts the command as the leader of a new process group, whose id
//!    is the leader's pid.
//! 2. When the deadline passes, every process in the group is sent `SIGKILL` (after an optional graceful signal,
//!    see [`GroupChild::set_grace`]), and the leader is reaped, before the wait returns.
//! 3. When the leader exits before the deadline, the rest of its group is sent `SIGKILL` before the wait returns
//!    (unless [`GroupChild::set_kill_leftovers`] turns that off; [`GroupChild::set_wait_for_job`] waits for it to
//!    exit on its own first, up to the deadline, and [`GroupChild::set_leak_grace`] up to a leak grace).
//! 4. Dropping a [`GroupChild`] that was not waited for kills the group and reaps the leader, waiting at most
//!    about a second.
//! 5. No signal reaches a process outside the group. The group is signalled only while its leader is unreaped
//!    (alive or a zombie), and an unreaped leader's pid, which is the group id, cannot be given to anyone else.
//!
//! A process that receives `SIGKILL` is gone for every purpose that matters here (it runs no more instructions),
//! but the kernel may need a moment to tear it down; a wait does not wait for that.
//!
//! # What is not promised
//!
//! - A descendant that leaves the group (`setsid`, `setpgid`, a double-forking daemon) is not reached by a group
//!   kill. `grouptimeout-job`'s [`spawn_contained`][spawn-contained] reaches them too (a cgroup of the job's own, the
//!   job's own reaper, or a lineage mark; see its [`Contain`][contain-type] for each mode's guarantee and what it
//!   cannot catch), and so does the `grouptimeout` command-line tool on Linux.
//! - A member this process may not signal (one that switched to another user) survives the group kill.
//! - A wait returns once the killed leader is reaped, which can be later than its deadline: while the leader is
//!   stuck in uninterruptible sleep, and while a tracer of the leader does not run (`strace -p`, then `SIGSTOP` to
//!   `strace`: the exit is shown to the tracer first; measured with the tool, a 1.5 s timeout returned after 4.0 s,
//!   when `strace` was continued). A drop waits only about a second for it.
//! - The guarantee needs the leader to stay unreaped until this crate reaps it. A process that ignores `SIGCHLD`
//!   lets the kernel reap children at once: [`spawn_group`](GroupCommandExt::spawn_group) refuses to run there. Code
//!   elsewhere in the program that calls `waitpid(-1)` breaks it too; a wait that notices reports an error and
//!   signals nothing.
//! - Promise 4 needs the drop to run. A panic runs it only with `panic = "unwind"` (the default); with
//!   `panic = "abort"`, and when this process is killed (`SIGKILL`, the OOM killer, a Ctrl-C it does not handle),
//!   aborts or calls [`std::process::exit`], no destructor runs and the group keeps running. Making the group die
//!   with this process is what `grouptimeout-job`'s opt-in [`die_with_parent`][die-with-parent] is for.
//! - The command's group is not the terminal's foreground group: the command cannot read the terminal, and Ctrl-C
//!   does not reach it. The section "The terminal" of [`spawn_group`](GroupCommandExt::spawn_group) says what to do.
//!
//! # Features
//!
//! With `default-features = false` the crate is its core: [`spawn_group`](GroupCommandExt::spawn_group),
//! [`GroupChild`]'s waits and their steps ([`GroupChild::step`], [`Step`], [`Interest`]), `kill`, `signal`, `set_grace`
//! and `set_kill_leftovers`, [`GroupHandle`], [`Outcome`] and the [`signal`] constants. One feature, `capture` (on by
//! default), adds the capturing waits and their steps ([`Capture`][capture-type]); each item it adds says so.
//! Features only add: code that builds with some features builds with more. [`GroupCommandExt`], whose
//! `output_timeout` only `capture` adds, is sealed (no other crate can implement it), so a feature that another crate
//! in the build turns on breaks no implementation. `AUDITING.md`, in the package, counts the crate's code lines, and
//! its blocks that call libc unchecked, all in `src/sys/`.
//!
//! # Errors
//!
//! Every fallible call returns an [`std::io::Error`]. An `io::Error` holds either an OS error number or a message
//! of its own, never both (`raw_os_error()` is `None` for an error made with a message). This crate picks the number
//! where a system call failed on the thing the caller named, so that callers can match on it as they do on std's
//! errors:
//!
//! - [`spawn_group`](GroupCommandExt::spawn_group): std's own spawn error, as
//!   [`Command::spawn`](std::process::Command::spawn) returns it: `ENOENT` for a missing program (`kind()`
//!   [`NotFound`](std::io::ErrorKind::NotFound)), `EACCES` for one that is not executable or is a directory
//!   ([`PermissionDenied`](std::io::ErrorKind::PermissionDenied)), `ENOEXEC`, `EAGAIN`… The message is the
//!   system's text; like std's, it does not name the program, which the caller has.
//! - [`signal`](GroupChild::signal), [`kill`](GroupChild::kill) and [`GroupHandle`]'s: the error of `kill(2)`:
//!   `EPERM` when no member of the group could be signalled (they switched to a user this process may not signal),
//!   `EINVAL` for an invalid signal number ([`InvalidInput`](std::io::ErrorKind::InvalidInput)).
//! - The waits and [`signal`](GroupChild::signal) (and `grouptimeout-job`'s [`die_with_parent`][die-with-parent]): `ECHILD`
//!   (10 on Linux, macOS and FreeBSD; `kind()` std's kind for it) when the leader was reaped by someone else (a
//!   `SIGCHLD` set to be ignored after the spawn, a `waitpid(-1)` elsewhere in the program). The group was not
//!   signalled then, since its id may already name someone else's group.
//! - A wait that hits the deadline with an invalid grace signal ([`GroupChild::set_grace`]) returns `EINVAL`, after
//!   the group was killed and the leader reaped.
//!
//! The same holds for steps the crates take on their own: where a system call failed (a pidfd, a capture's pipe; in
//! `grouptimeout-job`, the guard process of [`die_with_parent`][die-with-parent], the job's cgroup or `/proc` for
//! [`spawn_contained`][spawn-contained]), the error is that OS error itself, whose message is the
//! system's text (say what failed where you show it). Errors that no system call gave carry no OS error number
//! (`raw_os_error()` is `None`), and their message says what failed and why; each `# Errors` section names them,
//! such as [`spawn_group`](GroupCommandExt::spawn_group) in a process that ignores `SIGCHLD`
//! ([`Unsupported`](std::io::ErrorKind::Unsupported)).
//!
//! ```
//! use std::process::Command;
//! use grouptimeout::GroupCommandExt;
//!
//! let err = Command::new("/nonexistent/program").spawn_group().unwrap_err();
//! assert_eq!(err.raw_os_error(), Some(2)); // ENOENT
//! assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
//! ```
//!
//! # Platforms
//!
//! Unix only: process groups are a Unix concept, and on other targets the crate stops with a `compile_error!` that
//! says so. Tested on Linux (glibc and musl); also type-checked for macOS and FreeBSD (not linked nor run there).
//!
//! # How it waits
//!
//! No threads, no signal handlers, no process-wide state (the process-wide facilities a supervisor program asks for by
//! name are `grouptimeout-cli`'s `host`, not this crate's). Every wait is one state machine, the end-of-job sequence,
//! moved on by steps ([`GroupChild::step`]): a step reads the clock, checks the leader with `waitid(…, WNOWAIT)`
//! (which notices an exit without reaping), compares with the deadline, and takes the next step of the sequence (the
//! leftovers' kill after an exit; at the deadline the grace signal and `SIGCONT`, then after the grace period
//! `SIGKILL`; the reap, under the handles' lock; the job's end). It never blocks: it returns
//! [`Step::Pending`] with an [`Interest`], the descriptors and the instant to wait for, or [`Step::Done`]. The
//! blocking waits ([`wait`](GroupChild::wait), [`wait_timeout`](GroupChild::wait_timeout),
//! [`wait_deadline`](GroupChild::wait_deadline), and the capturing waits through [`Capture`][capture-type]) are
//! these steps and a sleep in `ppoll` on each interest, never past the deadline; a loop of the caller's own (`poll`,
//! `epoll`, mio, an async runtime) can drive the same steps for many jobs in one thread
//! (`examples/event_loop.rs`).
//!
//! - On Linux 5.3 and later, the sleep ends when the leader exits: the first step that has to wait asks for one
//!   yield of the CPU (a short command that shares the CPU ends meanwhile, and needs nothing more), the next opens a
//!   pidfd for the leader, which is unreaped (so its pid cannot name anyone else), and asks to sleep on it until the
//!   deadline. The exit is noticed as soon as a blocking `wait` would notice it, and a long wait does not wake up
//!   in between. The pidfd is close-on-exec (no command inherits it) and is closed when the leader is reaped or the
//!   handle dropped. Grace periods, the drop and the capturing waits sleep on it too (a capturing wait polls it
//!   together with the output pipes).
//! - Where no pidfd can be had (older kernels, a seccomp filter that refuses `pidfd_open`, no free descriptor,
//!   other Unix systems, or a build with `--cfg grouptimeout_no_pidfd` or `--cfg grouptimeout_portable`), the steps
//!   fall back, silently, to a poll schedule: they ask to be stepped again at once (with a yield) for the leader's
//!   first millisecond, then after 1/20 of the leader's age, at most 10 ms. After the group was sent a signal (a
//!   grace signal, [`GroupChild::kill`], a drop), the schedule starts over from that moment, so a leader that exits
//!   on the signal is noticed at once. A capturing wait spends those pauses in `poll(2)` on the output pipes,
//!   reading whatever arrives; once every pipe reached end of file it restarts the schedule too, since the leader is
//!   then most likely exiting.
//! - A leader traced by another process (a debugger, `strace -p`) shows its exit to the tracer first: its pidfd is
//!   readable before this process can wait for it. The steps then switch to the schedule for this leader rather
//!   than spin. A killed leader that cannot be reaped yet (traced, or in uninterruptible sleep) makes a step
//!   `Pending`, never a blocked step; the blocking waits block in the reap then, as std's `wait` does.
//! - [`GroupChild::exit_fd`] lends out the leader's pidfd (opened then if no step opened it yet), readable once the
//!   leader exits, for a loop that reaps through [`GroupChild::try_wait`] and keeps the deadlines itself; the steps
//!   do both for it.
//!
// Links to what a feature adds go to the item in a build with the feature, else to "Features" above, so that the
// docs of every build have no broken link (CI builds the core-only docs with warnings denied).
#![cfg_attr(
    feature = "capture",
    doc = "[output-timeout]: GroupChild::wait_with_output_timeout\n[output-limit]: GroupChild::set_output_limit\n\
           [capture-type]: Capture"
)]
#![cfg_attr(
    not(feature = "capture"),
    doc = "[output-timeout]: crate#features\n[output-limit]: crate#features\n[capture-type]: crate#features"
)]
//! [die-with-parent]: https://docs.rs/grouptimeout-job/latest/grouptimeout_job/trait.JobChildExt.html#tymethod.die_with_parent
//! [spawn-contained]: https://docs.rs/grouptimeout-job/latest/grouptimeout_job/trait.JobCommandExt.html#tymethod.spawn_contained
//! [contain-type]: https://docs.rs/grouptimeout-job/latest/grouptimeout_job/struct.Contain.html
//! [grouptimeout-job]: https://docs.rs/grouptimeout-job
//! [grouptimeout-cli]: https://docs.rs/grouptimeout-cli
//! [grouptimeout-set]: https://docs.rs/grouptimeout-set
//! [grouptimeout-tokio]: https://docs.rs/grouptimeout-tokio
#![deny(missing_docs)]
// docs.rs shows which feature an item needs (`--cfg docsrs`, see Cargo.toml).
#![cfg_attr(docsrs, feature(doc_cfg))]
// Pedantic too (CI's clippy runs deny warnings): a finding is fixed, or allowed where it stands with its reason.
#![warn(clippy::pedantic)]

// One clear error instead of a flood: everything below is gated on `unix`, so this is all a Windows build reports.
#[cfg(not(unix))]
compile_error!(
    "grouptimeout supports Unix only: it is built on process groups (setpgid, kill(-pgid, sig), waitid), which \
     are a Unix concept; Windows has job objects instead, which this crate does not use"
);

// The core: what `default-features = false` builds.
#[cfg(unix)]
mod child;
#[cfg(unix)]
mod group;
#[cfg(unix)]
mod handle;
#[cfg(unix)]
mod outcome;
#[cfg(unix)]
pub mod signal;
#[cfg(unix)]
mod spawn;
#[cfg(unix)]
mod sys;
#[cfg(unix)]
mod usage;
#[cfg(unix)]
mod wait;

#[cfg(unix)]
mod boundary;
#[cfg(all(unix, feature = "capture"))]
mod capture;

#[cfg(unix)]
pub use child::GroupChild;
#[cfg(unix)]
pub use handle::GroupHandle;
#[cfg(unix)]
pub use outcome::Outcome;
#[cfg(unix)]
pub use usage::{Measured, Usage};
/// Extends [`std::process::Command`] with [`spawn_group`](GroupCommandExt::spawn_group) (and, with the `capture`
/// feature, `output_timeout`).
///
/// The trait is sealed: it is implemented for [`Command`](std::process::Command) only, and no other crate can implement it (its supertrait
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
// Defined here, at the root, not in `spawn`: where a dependent names only `grouptimeout-job` in its code, rustc
// suggests a missing trait by the path where it is defined (not by its re-export), which must then compile.
#[cfg(unix)]
pub trait GroupCommandExt: spawn::Sealed {
    /// Spawns the command as the leader of a new process group and returns a handle that waits for it with a
    /// deadline and leaves no process of the group running.
    ///
    /// This sets [`process_group(0)`](std::os::unix::process::CommandExt::process_group) on the `Command` and nothing
    /// else, so std keeps its fast `posix_spawn` path. When this returns, the child already leads its own group, whose
    /// id is the child's pid ([`GroupChild::id`]). The setting stays on the `Command` (std has no way to take it off
    /// again): a later plain [`spawn`](std::process::Command::spawn), [`output`](std::process::Command::output) or
    /// [`status`](std::process::Command::status) of the same `Command` also starts its child as the leader of a new group,
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
    /// - A command that must read the terminal: run it in this process's group with plain [`Command::spawn`](std::process::Command::spawn), as
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
    ///   [`ErrorKind`](std::io::ErrorKind): `ENOENT` (`NotFound`) for a missing program, `EACCES` (`PermissionDenied`)
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
    fn spawn_group(&mut self) -> std::io::Result<GroupChild>;

    /// [`spawn_group`](GroupCommandExt::spawn_group) with standard output and standard error piped, then
    /// [`wait_with_output_timeout`](GroupChild::wait_with_output_timeout): the group's counterpart of
    /// [`Command::output`](std::process::Command::output), which returns at the deadline.
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
    fn output_timeout(&mut self, timeout: std::time::Duration) -> std::io::Result<Captured>;
}
#[cfg(unix)]
pub use wait::{Interest, Step};

#[cfg(all(unix, feature = "capture"))]
#[cfg_attr(docsrs, doc(cfg(feature = "capture")))]
pub use capture::{Capture, Captured, Stream};

/// The interface of the sibling crate `grouptimeout-job` (which pins this crate by its exact version): not a public
/// API, and not covered by semantic versioning.
#[cfg(unix)]
#[doc(hidden)]
pub mod __private;

/// The README's Rust examples, compiled (and run, unless marked `no_run`) by `cargo test` so that they cannot drift
/// from the API; with the default feature, which its capture example needs.
#[cfg(all(doctest, feature = "capture"))]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
