//! All of this crate's library's `unsafe`: the process-wide calls behind [`crate::host`] (signals, the `SIGPIPE`
//! record before `main`, the subreaper flag, the terminal, one child by pid), and the locale objects. The plain
//! system-call helpers (`cvt`, `has_exited`, …) are `grouptimeout`'s, reused through its hidden interface (and vetted
//! with it). The tool has no `unsafe` of its own.

pub(crate) use grouptimeout::__private::sys::*;

mod children;
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
