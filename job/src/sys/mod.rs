//! All of this crate's `unsafe`: the keeper (`keeper.rs`), the job boundary's Linux calls (`contain.rs`) and the
//! forked guard (`guard.rs`). The plain system-call helpers (`cvt`, `has_exited`, `poll`, …) are `grouptimeout`'s,
//! reused through its hidden interface (and vetted with it).

pub(crate) use grouptimeout::__private::sys::*;

mod guard;
pub(crate) use guard::*;

#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
mod contain;
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
mod keeper;

#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
pub(crate) use contain::*;
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
pub(crate) use keeper::*;
