//! All of this crate's `unsafe` (the keeper program's own is `job/keeper/sys/`): the kept spawn (`spawn.rs`: the
//! program's memory file, the spawning child made with `clone` and what it does, the job's channel), the job
//! boundary's Linux calls (`contain.rs`), the guard of `die_with_parent` as this process holds it (`guard.rs`) and two
//! plain calls only this crate makes (`posix.rs`: the guard's pipe, a process's group). The plain system-call helpers
//! that the core has for its own calls (`cvt`, `has_exited`, `poll`, …) are `grouptimeout`'s, reused through its
//! hidden interface (and vetted with it).

pub(crate) use grouptimeout::__private::sys::*;

pub(crate) mod guard;
pub(crate) use guard::*;
mod posix;
pub(crate) use posix::*;

#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
mod contain;
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
mod spawn;

#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
pub(crate) use contain::*;
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
pub(crate) use spawn::*;
