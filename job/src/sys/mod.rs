//! All of this crate's `unsafe`: the async-signal-safe calls that the keeper and the forked guard share
//! (`signal_safe/`), the keeper's special blocks (`clone.rs`: making the command's process and the group helper;
//! `page.rs`: the shared page and the `pre_exec` hook; `shed.rs`: the unmapping), the job boundary's Linux calls
//! (`contain.rs`), the forked guard (`guard.rs`) and two plain calls only this crate makes (`posix.rs`: the guard's
//! pipe, a process's group). The keeper's logic is `crate::keeper`, safe code over these. The plain system-call
//! helpers that the core has for its own calls (`cvt`, `has_exited`, `poll`, …) are `grouptimeout`'s, reused through
//! its hidden interface (and vetted with it).

pub(crate) use grouptimeout::__private::sys::*;

pub(crate) mod guard;
pub(crate) use guard::*;
mod posix;
pub(crate) use posix::*;

pub(crate) mod signal_safe;

#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
pub(crate) mod clone;
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
mod contain;
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
pub(crate) mod page;
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
pub(crate) mod shed;

#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
pub(crate) use contain::*;
