//! The one function this crate runs before `main`, the workspace's only one: it records whether `SIGPIPE` was
//! inherited ignored (a `pre_exec` step passes that on to a command), and which standard descriptors were closed.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use super::is_ignored;

/// Whether `SIGPIPE` was ignored when this process started; set by [`record_sigpipe_at_start`] before `main`.
static SIGPIPE_IGNORED_AT_START: AtomicBool = AtomicBool::new(false);

/// Bit N set: standard descriptor N (0, 1 or 2) was closed when this process started; set by
/// [`record_sigpipe_at_start`] before `main`.
static CLOSED_AT_START: AtomicU8 = AtomicU8::new(0);

/// Runs before `main`, so before std's runtime sets `SIGPIPE` to ignored in every Rust program and opens
/// `/dev/null` on a closed standard descriptor: records whether `SIGPIPE` was ignored already (inherited from the
/// parent), and which of descriptors 0, 1 and 2 were closed. It only reads the disposition and the descriptors' flags.
extern "C" fn record_sigpipe_at_start() {
    if let Ok(ignored) = is_ignored(libc::SIGPIPE) {
        SIGPIPE_IGNORED_AT_START.store(ignored, Ordering::SeqCst);
    }
    let mut closed = 0;
    for fd in 0..3 {
        // SAFETY: fcntl(F_GETFD) only reads the descriptor's flags (async-signal-safe, no memory of ours); it fails
        // only for a descriptor that is not open (EBADF).
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1 {
            closed |= 1 << fd;
        }
    }
    CLOSED_AT_START.store(closed, Ordering::SeqCst);
}

/// The loader calls the functions listed in this section before `main` (ELF `.init_array`; Mach-O
/// `__mod_init_func`). On other platforms nothing calls it and the flag stays `false`.
// SAFETY: placing a static in a link section is unsafe (edition 2024 spells the attribute `#[unsafe(link_section)]`;
// this crate is edition 2021, which has no such marker): the loader treats every word of these sections as a
// function to call before `main`, with no arguments. This static is exactly one such word: a pointer to an
// `extern "C" fn()` of the C calling convention, with no arguments and no return value. The function runs before
// std's runtime is set up: it only reads a signal disposition (`sigaction` with no new action, async-signal-safe, no
// allocation, no lock, no thread-local) and three descriptors' flags (`fcntl(F_GETFD)`, the same), and stores two
// atomics, none of which needs that runtime; it cannot panic (an error leaves the flag `false`). `.ci/audit.py` counts this static as one `unsafe` block of `host`.
#[used]
#[cfg_attr(
    any(
        target_os = "linux",
        target_os = "android",
        target_os = "freebsd",
        target_os = "netbsd",
        target_os = "openbsd",
        target_os = "dragonfly",
        target_os = "illumos",
        target_os = "solaris"
    ),
    link_section = ".init_array"
)]
#[cfg_attr(target_vendor = "apple", link_section = "__DATA,__mod_init_func")]
static RECORD_SIGPIPE_AT_START: extern "C" fn() = record_sigpipe_at_start;

/// Whether `SIGPIPE` was ignored when this process started (see [`record_sigpipe_at_start`]).
pub(crate) fn sigpipe_ignored_at_start() -> bool {
    SIGPIPE_IGNORED_AT_START.load(Ordering::SeqCst)
}

/// Whether standard descriptor `fd` (0, 1 or 2) was closed when this process started (see
/// [`record_sigpipe_at_start`]); `false` for any other descriptor.
pub(crate) fn closed_at_start(fd: i32) -> bool {
    (0..3).contains(&fd) && CLOSED_AT_START.load(Ordering::SeqCst) & (1 << fd) != 0
}

/// Makes `command`'s child set `SIGPIPE` to ignored just before its `exec`, after std reset it to the default.
pub(crate) fn ignore_sigpipe_in_child(command: &mut Command) {
    let ignore = || {
        // SAFETY: signal(2) is async-signal-safe and touches no memory of ours; SIG_IGN is a valid disposition.
        if unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) } == libc::SIG_ERR {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    };
    // SAFETY: the closure runs in the child between fork and exec: it only calls signal(2) (async-signal-safe) and
    // builds an io::Error from errno on failure, which does not allocate; it takes no lock and shares no state.
    unsafe { command.pre_exec(ignore) };
}
