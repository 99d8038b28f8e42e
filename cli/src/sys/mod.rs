//! All of this crate's library's `unsafe`: the process-wide calls behind [`crate::host`] (signals, the `SIGPIPE`
//! record before `main`, the subreaper flag, the terminal, one child by pid), the locale objects, and the forked
//! guard's `unsafe fn`. The plain system-call helpers (`cvt`, `has_exited`, …) are `grouptimeout`'s, reused through
//! its hidden interface (and vetted with it). The tool's one `unsafe` block is in its own `sys` module.

pub(crate) use grouptimeout::__private::sys::*;

mod children;
pub(crate) mod guard;
mod locale;
mod signal;
mod sigpipe;
#[cfg(all(
    any(target_os = "linux", target_os = "android"),
    not(grouptimeout_portable)
))]
mod subreaper;
mod terminal;

pub(crate) use children::*;
pub(crate) use locale::*;
pub(crate) use signal::*;
pub(crate) use sigpipe::*;
#[cfg(all(
    any(target_os = "linux", target_os = "android"),
    not(grouptimeout_portable)
))]
pub(crate) use subreaper::*;
pub(crate) use terminal::*;
