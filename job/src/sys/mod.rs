//! All of this crate's `unsafe`: the async-signal-safe calls that the keeper and the forked guard share
//! (`signal_safe/`), the keeper's special blocks (`clone.rs`: making the command's process and the group helper;
//! `page.rs`: the shared page and the `pre_exec` hook; `shed.rs`: the unmapping), the job boundary's Linux calls
//! (`contain.rs`) and the forked guard (`guard.rs`). The keeper's logic is `crate::keeper`, safe code over these. The
//! plain system-call helpers (`cvt`, `has_exited`, `poll`, …) are `grouptimeout`'s, reused through its hidden
//! interface (and vetted with it).

pub(crate) use grouptimeout::__private::sys::*;

mod guard;
pub(crate) use guard::*;

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
