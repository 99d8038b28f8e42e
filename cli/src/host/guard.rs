//! [`die_with_parent_forked`]: the guard of [`JobChildExt::die_with_parent`](grouptimeout_job::JobChildExt::die_with_parent), forked from this process.
//! An `unsafe fn` (a `fork` runs the `pthread_atfork` handlers of this process's libraries), so it is defined with
//! this crate's other `unsafe` code, in `sys`.

pub use crate::sys::guard::die_with_parent_forked;
