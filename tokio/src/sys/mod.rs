//! The adapter's only `unsafe` code: a registration with the runtime's reactor of a descriptor of its own, made from
//! a number that a step of the core listed.

use std::io;
use std::os::fd::{BorrowedFd, OwnedFd, RawFd};

use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

/// A new descriptor (`fcntl(F_DUPFD_CLOEXEC)`, close-on-exec) naming the file that `raw` names now, registered with
/// the current runtime's reactor for `interest`. It is the caller's: deregistering and closing it never touches the
/// child's own descriptor.
///
/// Call only with a number that the `Interest` of the latest step listed, before any other step of the same child
/// or capture: the core keeps each listed descriptor open, naming the same file, until a later step no longer lists
/// it (the contract of `grouptimeout::Interest`).
///
/// # Panics
///
/// Outside a tokio runtime with IO enabled (tokio's own panic).
pub(crate) fn watch(raw: RawFd, interest: Interest) -> io::Result<AsyncFd<OwnedFd>> {
    if raw < 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "grouptimeout listed a negative descriptor number to wait on",
        ));
    }
    // SAFETY: `raw` is not -1 (checked above), and it was listed by the `Interest` of the step that just returned;
    // the caller holds the child (or the capture) mutably, so no other step ran since, and the core keeps a listed
    // descriptor open and naming the same file until a later step no longer lists it (its own, and a job boundary's,
    // which the `unsafe` trait `Boundary` binds to the same). So it is open for this borrow, which ends with the
    // `dup` below, before the caller steps again.
    let fd = unsafe { BorrowedFd::borrow_raw(raw) }.try_clone_to_owned()?;
    // SAFETY: an `OwnedFd` is an open descriptor that it alone closes, when dropped: it stays open, naming the same
    // file, for as long as the `AsyncFd` owns it, and its `as_raw_fd` is the same number all that time.
    let registered = unsafe { AsyncFd::register_with_interest(fd, interest) };
    registered.map_err(|err| err.into_parts().1)
}
