//! [`grouptimeout`]'s waits as tokio futures: many jobs from one task or thread, and the whole job ended at its
//! deadline, when its future is dropped, and when a wait is cancelled.
//!
//! A [`grouptimeout::GroupChild`] (spawned with `spawn_group`, or contained with `grouptimeout-job`'s
//! `spawn_contained`) is handed to [`wait`] or [`wait_with_output`][wait-with-output], which return a future that
//! owns it:
//!
//! ```
//! use std::process::{Command, Stdio};
//! use std::time::Duration;
//! use grouptimeout::GroupCommandExt;
//! use tokio::time::Instant;
//!
//! # #[cfg(not(feature = "capture"))] fn main() {}
//! # #[cfg(feature = "capture")]
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> std::io::Result<()> {
//! let slow = Command::new("sh").args(["-c", "sleep 30 & sleep 30"]).spawn_group()?;
//! let quick = Command::new("sh")
//!     .args(["-c", "echo hello; sleep 30 &"])
//!     .stdout(Stdio::piped())
//!     .spawn_group()?;
//! let deadline = Instant::now() + Duration::from_millis(300);
//! let (slow, quick) = tokio::join!(
//!     grouptimeout_tokio::wait(slow, Some(deadline)),
//!     grouptimeout_tokio::wait_with_output(quick, Some(deadline)),
//! );
//! assert!(slow?.outcome.timed_out()); // the group was killed at the deadline, the leader reaped
//! let quick = quick?;
//! assert!(!quick.outcome.timed_out()); // exited in time; its background sleep was killed
//! assert_eq!(quick.stdout, b"hello\n");
//! # Ok(())
//! # }
//! ```
//!
//! For a service that runs one job per request (the README has it whole): contain each job with `grouptimeout-job`'s
//! `spawn_contained` (its `setsid` servers end with it); stream its output as it comes with [`output_lines`][output-lines]
//! (lines, and each stream's end); end it early with [`Capturing::set_deadline`][capturing-set-deadline] to now, which
//! keeps the grace period, the output and the usage; read what it used in the result ([`Waited::usage`],
//! [`Captured::usage`][captured-usage]). A `tokio::process::Command` is spawned through its std command:
//! `command.as_std_mut().spawn_contained()` (or `spawn_group()`); tokio's own settings (`kill_on_drop`) do not apply
//! to it, and are not needed.
//!
//! # What is promised
//!
//! 1. The same end-of-job sequence as the blocking waits, taken by the same code: the futures drive the core's
//!    stepped wait ([`GroupChild::step`](grouptimeout::GroupChild::step), [`Capture::step`][capture-step]), and
//!    nothing of the sequence (deadline, grace signal and `SIGCONT`, `SIGKILL`, the reap, the job's end, the reads
//!    and the drain of a capture) is written here again. The outcome, the captured output and the errors are those
//!    of [`GroupChild::wait_deadline`](grouptimeout::GroupChild::wait_deadline) and
//!    [`GroupChild::wait_with_output_deadline`][wait-with-output-deadline], with every
//!    promise of the core's documentation.
//! 2. A future dropped before it returned ends its job: it owns the child, whose drop kills the group (and a
//!    contained job's whole boundary) and reaps the leader, bounded. So cancellation never leaves a survivor that
//!    the blocking wait would not have left: the losing branch of `tokio::select!`, a wait inside
//!    [`tokio::time::timeout`] that ran out, an aborted task, a runtime that shuts down with the task in it.
//! 3. Unless detached: [`Waiting::detach`] gives the child back (and [`Capturing::detach`][capturing-detach] the
//!    capture), and the job goes on.
//! 4. No thread of its own, no signal handler, no `SIGCHLD`: between steps the future sleeps in the runtime's
//!    reactor, on descriptors of its own, and on the runtime's timer.
//! 5. A future polled in one runtime and then in another (moved to another runtime's task, or awaited in a second
//!    `block_on`) drops its registrations and its timer with the first runtime and registers anew with the one that
//!    polls it, in that poll: it wakes there at its deadline and for its job's events, whether the first runtime was
//!    dropped or lives on without driving it.
//!
//! # How it waits
//!
//! Each step of the core says what it waits for next ([`grouptimeout::Interest`]): the leader's exit descriptor
//! (a pidfd, on Linux), the capture's pipes, and an instant (the deadline, the end of a grace period, the drain's
//! limit, or the poll schedule's next check where no exit descriptor can be had). The future registers a duplicate
//! of each listed descriptor (`F_DUPFD_CLOEXEC`, its own; never the child's number, which the child closes at the
//! reap) with [`tokio::io::unix::AsyncFd`], drops the ones a step no longer lists, and sets a
//! [`tokio::time::sleep_until`] timer to the instant. When one is ready it steps again, then clears the readiness it
//! saw, so it wakes only for news. A future waiting for a long-running job costs nothing between events.
//!
//! Where a descriptor cannot be registered (no descriptor left for the duplicate, the reactor refused it), the future
//! steps every 10 ms instead until the step no longer lists it: slower to notice, never stuck. A step that asks for
//! the next one at once (the first wait's one yield; without a pidfd, the poll schedule's first millisecond and the
//! one after each signal) is taken after the future yields to the runtime's other tasks; a descriptor ready step
//! after step (a chatty pipe) makes the future yield after 16 steps in one poll.
//!
//! # What is not promised, and how it fails
//!
//! - **The drop blocks.** Dropping an unfinished future runs [`GroupChild`](grouptimeout::GroupChild)'s `Drop` in
//!   the thread that drops it, which kills and reaps before it returns (at most about a second; a `SIGKILL` and a
//!   reap usually take a fraction of a millisecond; a contained job's end waits for its boundary to empty). A drop
//!   cannot be awaited: to end a job without blocking a worker, use [`Waiting::set_deadline`] (or
//!   [`Capturing::set_deadline`][capturing-set-deadline], which keeps the output) with now, and await.
//! - **The runtime.** The futures need a tokio runtime with IO and time enabled
//!   ([`tokio::runtime::Builder::enable_all`], as `#[tokio::main]` sets); polled elsewhere they panic, as tokio's IO
//!   types do. Both the current-thread and the multi-thread runtime work (the futures are `Send`), and a future
//!   may move from one runtime to another between polls (point 5 above). A reactor error is returned as the future's
//!   error; the future keeps the child, whose drop ends the job.
//! - **The clock.** Deadlines are [`tokio::time::Instant`]s, handed to the core as the [`std::time::Instant`] they
//!   stand for: the core reads the real clock. With a paused runtime clock (`tokio::time::pause`, tests with
//!   `start_paused`) the runtime's time is not the core's; do not use these futures there.
//! - **The timer's grain.** tokio's timer has a grain of one millisecond and rounds up: a deadline is acted upon up
//!   to about a millisecond after it passed (the core checks the clock itself, so never before).
//! - **Everything the core does not promise** it does not promise here either (a process that left the group and the
//!   job's boundary, a member of another user, a leader stuck in the kernel): see the core's documentation.
//!
//! # Features
//!
//! `capture` (on by default): [`wait_with_output`][wait-with-output] and [`Capturing`][capturing], and
//! [`output_lines`][output-lines], over grouptimeout's `capture` feature (and tokio's `sync`, for the lines' channel).
//! Without it the crate is [`wait`] and [`Waiting`].
//!
//! # Re-exports
//!
//! What a user of the futures needs of `grouptimeout` is re-exported here ([`GroupCommandExt`] to spawn, [`signal`]
//! for a grace period, [`Outcome`], [`Usage`], [`GroupChild`]; with `capture`, `Captured` and `Stream`), so that a
//! service needs one `use` line of this crate, and one of `grouptimeout-job` for `spawn_contained`.
//!
//! # Auditing
//!
//! The crate's only unchecked code is in its private module `sys`, two blocks, each with its `SAFETY` argument: the
//! borrow of a descriptor number that the core listed, while the core keeps it open, to duplicate it; and the
//! registration of that duplicate (an `OwnedFd`) with the reactor.
//!
// Links to what the `capture` feature adds go to the item in a build with the feature, else to "Features" above, so
// that the docs of every build have no broken link.
#![cfg_attr(
    feature = "capture",
    doc = "[wait-with-output]: wait_with_output\n[capturing]: Capturing\n[capturing-detach]: Capturing::detach\n\
           [capture-step]: grouptimeout::Capture::step\n\
           [wait-with-output-deadline]: grouptimeout::GroupChild::wait_with_output_deadline\n\
           [output-lines]: output_lines\n[capturing-set-deadline]: Capturing::set_deadline\n\
           [captured-usage]: grouptimeout::Captured::usage"
)]
#![cfg_attr(
    not(feature = "capture"),
    doc = "[wait-with-output]: crate#features\n[capturing]: crate#features\n[capturing-detach]: crate#features\n\
           [capture-step]: crate#features\n[wait-with-output-deadline]: crate#features\n\
           [output-lines]: crate#features\n[capturing-set-deadline]: crate#features\n\
           [captured-usage]: crate#features"
)]
#![deny(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(not(unix))]
compile_error!("grouptimeout-tokio supports Unix only, as grouptimeout does");

#[cfg(all(unix, feature = "capture"))]
mod capturing;
#[cfg(unix)]
mod driver;
#[cfg(all(unix, feature = "capture"))]
mod output;
#[cfg(unix)]
mod sys;
#[cfg(unix)]
mod waiting;

#[cfg(all(unix, feature = "capture"))]
#[cfg_attr(docsrs, doc(cfg(feature = "capture")))]
pub use capturing::{wait_with_output, Capturing};
#[cfg(all(unix, feature = "capture"))]
#[cfg_attr(docsrs, doc(cfg(feature = "capture")))]
pub use output::{output_lines, Output, OutputLines};
#[cfg(unix)]
pub use waiting::{wait, Waited, Waiting};

#[cfg(unix)]
#[doc(no_inline)]
pub use grouptimeout::{signal, GroupChild, GroupCommandExt, Outcome, Usage};
#[cfg(all(unix, feature = "capture"))]
#[cfg_attr(docsrs, doc(cfg(feature = "capture")))]
#[doc(no_inline)]
pub use grouptimeout::{Captured, Stream};

/// The README's examples, compiled as doctests so that they stay true.
#[cfg(all(doctest, feature = "capture"))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
