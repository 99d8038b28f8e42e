//! The crate's only `unsafe`: thin, safe wrappers over the libc calls it needs.
//!
//! One file per concern, each compiled only with the feature that uses it (README, "Auditing"):
//!
//! - core: `process` (waiting for and signalling processes and groups), `fd` (`poll`), `pidfd` (Linux);
//! - `capture`: `pipe` (non-blocking reads of the output pipes);
//! - `guard`: `guard` (the forked guard process, and the guard's pipe);
//! - `contain`: `contain` (extended attributes, entering a cgroup before `exec`, pidfd signals; Linux);
//! - `host`: `children` (signalling and reaping one child by pid), `signal` (dispositions, masks, the recording handler, waiting for blocked signals), `sigpipe` (the record
//!   before `main`), `subreaper` (Linux), `terminal` (the foreground group, stop reports, stopping ourselves).
//!
//! Each wrapper checks its arguments, retries `EINTR` where the call can be interrupted, and turns
//! a failure into `io::Error::last_os_error()` through [`cvt`].
//!
//! Where a wrapper says "on Linux", a build with `--cfg grouptimeout_portable` takes the branch of macOS and FreeBSD
//! instead wherever that branch is plain POSIX, so that Linux runs it too (the README's "Platforms" lists each point).

use std::io;

/// Turns the C convention "-1 and `errno`" into an `io::Error`.
fn cvt(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Runs `f` again while it fails with `EINTR`.
fn retry_eintr<T>(mut f: impl FnMut() -> io::Result<T>) -> io::Result<T> {
    loop {
        match f() {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// Converts a process or group id to `pid_t`, refusing 0, 1 and anything that does not fit.
///
/// This is the one guard against `kill(0, …)`, `kill(-1, …)` and `kill(-0, …)`, which would signal our own
/// group, every process we may signal, or init's group.
fn checked_pid(id: u32) -> io::Result<libc::pid_t> {
    match libc::pid_t::try_from(id) {
        Ok(pid) if pid > 1 => Ok(pid),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("refusing to signal process or group id {id}: ids 0 and 1 (and ids above i32::MAX) are never a group we started"),
        )),
    }
}

mod fd;
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
mod pidfd;
mod process;

#[cfg(feature = "capture")]
mod pipe;

#[cfg(feature = "guard")]
mod guard;

#[cfg(all(feature = "contain", target_os = "linux", not(grouptimeout_portable)))]
mod contain;

#[cfg(feature = "host")]
mod children;
#[cfg(feature = "host")]
mod signal;
#[cfg(feature = "host")]
mod sigpipe;
#[cfg(all(
    feature = "host",
    any(target_os = "linux", target_os = "android"),
    not(grouptimeout_portable)
))]
mod subreaper;
#[cfg(feature = "host")]
mod terminal;

pub(crate) use fd::*;
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
pub(crate) use pidfd::*;
pub(crate) use process::*;

#[cfg(feature = "capture")]
pub(crate) use pipe::*;

#[cfg(feature = "guard")]
pub(crate) use guard::*;

#[cfg(all(feature = "contain", target_os = "linux", not(grouptimeout_portable)))]
pub(crate) use contain::*;

#[cfg(feature = "host")]
pub(crate) use children::*;
#[cfg(feature = "host")]
pub(crate) use signal::*;
#[cfg(feature = "host")]
pub(crate) use sigpipe::*;
#[cfg(all(
    feature = "host",
    any(target_os = "linux", target_os = "android"),
    not(grouptimeout_portable)
))]
pub(crate) use subreaper::*;
#[cfg(feature = "host")]
pub(crate) use terminal::*;
