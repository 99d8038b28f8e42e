//! The crate's only `unsafe`: thin, safe wrappers over the libc calls it needs.
//!
//! - `process`: waiting for and signalling processes and groups;
//! - `signal`: dispositions, masks, the recording handler and waiting for blocked signals (for the opt-in `host`
//!   module);
//! - `fd`: pipes, non-blocking descriptors, `poll` and reads;
//! - `guard`: the forked guard process that kills a group when its supervisor dies;
//! - `linux`: Linux-only process controls (the subreaper flag, peeking at exited children);
//! - `terminal`: the terminal's foreground group, stop reports, stopping ourselves (used by `host::Terminal`);
//! - `contain`: the job boundary's calls (extended attributes, entering a cgroup before `exec`, pidfd signals).
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

#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
mod contain;
mod fd;
mod guard;
#[cfg(all(
    any(target_os = "linux", target_os = "android"),
    not(grouptimeout_portable)
))]
mod linux;
mod process;
mod signal;
mod terminal;

#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
pub(crate) use contain::*;
pub(crate) use fd::*;
pub(crate) use guard::*;
#[cfg(all(
    any(target_os = "linux", target_os = "android"),
    not(grouptimeout_portable)
))]
pub(crate) use linux::*;
pub(crate) use process::*;
pub(crate) use signal::*;
pub(crate) use terminal::*;
