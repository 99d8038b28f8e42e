//! Opt-in, process-wide facilities for a program whose whole job is supervising one command, such as the
//! `grouptimeout` tool.
//!
//! Nothing else in this crate touches process-wide state. Everything here does, and only when called by name:
//! signal handlers and dispositions, the signal mask, the child-subreaper flag, reaping children, resource limits,
//! the terminal's foreground process group, stopping and exiting (the locale functions are the exception: they
//! keep a locale object of their own and leave the process's locale alone). A library that merely runs commands
//! should not call any of it.
//!
//! - [`Signals`]: receive signals synchronously (blocked, and taken with `sigtimedwait`), without a descriptor;
//!   [`signal_is_ignored`] to leave alone what the parent chose to ignore, and [`stop_ignoring`] for the one
//!   signal that must work (the timeout's).
//! - [`sigpipe_was_ignored_at_start`] and [`keep_sigpipe_ignored`]: pass an ignored `SIGPIPE` on to the command, as
//!   a program that does not reset it would; [`was_closed_at_start`]: whether a standard descriptor was closed
//!   before std's runtime opened `/dev/null` there.
//! - [`Subreaper`]: catch descendants that left the command's process group, reap the orphans adopted meanwhile,
//!   and leave alone the children this process had before. Linux only (Android included): it exists on every Unix
//!   so that a program builds everywhere, but elsewhere it fails.
//! - [`signal_child`]: signal one unreaped child of a [`std::process::Child`] by pid.
//! - [`exit_as_signaled`]: end this process the way a command that died of a signal ended.
//! - [`die_with_parent_forked`]: [`JobChildExt::die_with_parent`](grouptimeout_job::JobChildExt::die_with_parent) under the name it had when its guard was a fork.
//! - [`use_environment_charset`] and [`is_printable`]: the environment's character set, as a C program's
//!   `setlocale(LC_ALL, "")` takes it (without changing the process's locale), to quote arguments in messages as
//!   GNU's programs do.
//! - [`Terminal`], [`take_stop`], [`stop_self`] and [`stop_own_group`]: job control at a terminal, as shells do
//!   it: hand the terminal to the command's group and take it back, notice that the command was stopped (Ctrl-Z),
//!   and stop along with it.
//!
//! It lives in the tool's crate, not in `grouptimeout` or `grouptimeout-job`, because it also holds the one function
//! that runs before `main`: the record behind [`sigpipe_was_ignored_at_start`] and [`was_closed_at_start`]. A program that depends on those two
//! alone registers nothing before `main` (CI checks it).
//!
//! One room per facility: `signals`, `sigpipe`, `subreaper`, `terminal`, `guard`, `locale`.

mod guard;
mod locale;
mod signals;
mod sigpipe;
mod subreaper;
mod terminal;

pub use guard::die_with_parent_forked;
pub use locale::{is_printable, use_environment_charset};
pub use signals::{exit_as_signaled, signal_child, signal_is_ignored, stop_ignoring, Signals};
pub use sigpipe::{keep_sigpipe_ignored, sigpipe_was_ignored_at_start, was_closed_at_start};
pub use subreaper::{Subreaper, Sweep};
pub use terminal::{stop_own_group, stop_self, take_stop, Terminal};
