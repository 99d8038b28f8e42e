//! The `grouptimeout` tool's crate: the binary `grouptimeout` (GNU `timeout`'s interface over
//! [`grouptimeout`] and [`grouptimeout_job`]), and [`host`], the process-wide facilities such a supervisor program
//! needs and a library must not have (signal handlers, the subreaper flag, the terminal, and the `SIGPIPE` record
//! that runs before `main`).
//!
//! Install the tool with `cargo install grouptimeout-cli` (from a checkout: `cargo install --path cli`). A program
//! that supervises one command as the tool does may depend on this crate for [`host`]; a library should depend on
//! `grouptimeout` (and `grouptimeout-job`) only, which register nothing before `main`.
#![deny(missing_docs)]
#![warn(clippy::pedantic)]

#[cfg(not(unix))]
compile_error!(
    "grouptimeout-cli supports Unix only: GNU timeout's interface is Unix signals and exit statuses, and the tool \
     and its `host` module are built on them (signal dispositions and masks, process groups, the terminal's \
     foreground group, a child subreaper) and on the two Unix-only libraries it drives"
);

#[cfg(unix)]
pub mod host;
#[cfg(unix)]
mod sys;

/// The README's Rust examples (this crate's `README.md`), compiled (and run, unless marked `no_run`) by `cargo test` so
/// that they cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
