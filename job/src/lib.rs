//! A job boundary for [`grouptimeout`]: what a command started beyond its process group (`setsid`, daemons,
//! double forks) ends with it, and the job dies with this process however it dies.
//!
//! [`grouptimeout`] runs a command as the leader of a process group and ends the group; this crate, its sibling,
//! reaches what left the group:
//!
//! - [`JobCommandExt::spawn_contained`] starts the command inside a boundary of its own: a cgroup v2 of the job's
//!   (Linux, where one can be made), else below a keeper process that adopts every orphan of the job (any user,
//!   also in containers), else by its lineage (a mark in the environment); [`Contain`] chooses and says what each
//!   mode reaches and what it cannot catch. The result is a plain [`grouptimeout::GroupChild`]: the same waits,
//!   kill, signal and drop, which now end the whole job.
//! - [`JobChildExt`] tells what became of the job ([`containment`](JobChildExt::containment),
//!   [`leftovers`](JobChildExt::leftovers), [`leak_report`](JobChildExt::leak_report) (what was leaked, as a test
//!   runner reports it, and what the boundary could see: [`LeakReport`]), [`in_job`](JobChildExt::in_job), …), and
//!   [`die_with_parent`](JobChildExt::die_with_parent) makes any child's group (or job) die with this process.
//!   [`JobOutputExt`] tells the same of a finished job's result once the child is gone (a capturing wait's
//!   `grouptimeout::Captured`, a `grouptimeout-set` job's `Finished`).
//!
//! ```
//! use std::process::Command;
//! use std::time::Duration;
//! use grouptimeout_job::{JobChildExt, JobCommandExt};
//!
//! # fn main() -> std::io::Result<()> {
//! let mut child = Command::new("sh")
//!     .args(["-c", "setsid sleep 1 & sleep 30"])
//!     .spawn_contained()?;
//! child.die_with_parent()?;
//! let outcome = child.wait_timeout(Duration::from_millis(200))?;
//! assert!(outcome.timed_out());
//! // In a cgroup or under the job's reaper, the `setsid` sleep was killed too (with the group alone it escaped the
//! // kill, and ends by itself a second later).
//! println!("{:?}: {:?}", child.containment(), child.leftovers());
//! # Ok(())
//! # }
//! ```
//!
//! # How it hooks into `grouptimeout`
//!
//! Through one hidden extension point of `grouptimeout` (`grouptimeout::__private`: a `Boundary` trait that answers
//! which process ends a wait, whether it exited, how to signal beyond the group, and ends the job after the reap),
//! which this crate pins by its exact version. The wait's loop, the order "signal, then reap", and the reap stay
//! `grouptimeout`'s.
//!
//! # Auditing
//!
//! Every unchecked call into libc is in the private module `sys` (the kept spawn, the boundary's Linux calls, the
//! guard), each block with its `SAFETY` argument, and in the keeper program's own `sys` module (`keeper/sys/`, which
//! `build.rs` compiles into the program this crate embeds); `grouptimeout`'s `AUDITING.md` counts them per file.
#![doc = include_str!("../doc/keeper.md")]
#![deny(missing_docs)]
#![warn(clippy::pedantic)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(not(unix))]
compile_error!(
    "grouptimeout-job supports Unix only: it is built on process groups, cgroups and subreapers"
);

#[cfg(unix)]
mod child;
#[cfg(unix)]
mod contain;
#[cfg(unix)]
mod guard;
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
mod keeper;
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
#[allow(
    dead_code,
    reason = "the library and the keeper program each use their half"
)]
mod protocol;
#[cfg(unix)]
mod report;
#[cfg(unix)]
mod spawn;
#[cfg(unix)]
mod sys;

#[cfg(unix)]
pub use child::{JobChildExt, JobOutputExt};
#[cfg(unix)]
pub use contain::{Containment, Leftover};
#[cfg(unix)]
pub use report::{LeakReport, Seen};
#[cfg(unix)]
pub use spawn::{Contain, JobCommandExt};

/// The interface of the sibling crate `grouptimeout-cli` (which pins this crate by its exact version): not a public
/// API, and not covered by semantic versioning.
#[cfg(unix)]
#[doc(hidden)]
pub mod __private {
    use grouptimeout::GroupChild;

    /// A [`Leftover`](crate::Leftover) (non-exhaustive) found by the tool's own sweep.
    #[must_use]
    pub fn leftover(pid: u32, name: String) -> crate::Leftover {
        crate::Leftover { pid, name }
    }

    /// For a kept job (a keeper between this process and the command): the signal that stopped the command since
    /// the last call, if any; `None` for a child without a keeper.
    #[must_use]
    pub fn kept_stop(child: &GroupChild) -> Option<Option<i32>> {
        let attached = crate::child::attached(child)?;
        let job = attached.job();
        job.kept().then(|| job.take_stop())
    }
}

/// The README's Rust examples, compiled (and run, unless marked `no_run`) by `cargo test` so that they cannot drift
/// from the API.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
