//! The Linux child-subreaper role of `host::Subreaper`: setting the flag, and finding an exited child without reaping
//! it.

use std::io;

use super::cvt;

/// Makes this process a child subreaper (Linux `PR_SET_CHILD_SUBREAPER`).
pub(crate) fn set_child_subreaper() -> io::Result<()> {
    // SAFETY: prctl with integer arguments only.
    cvt(unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0) }).map(drop)
}

/// The pid of one of our children that has exited, without reaping it (`waitid(P_ALL)` with `WNOWAIT`); `None`
/// when no child has exited yet or we have no child at all.
///
/// The kernel reports the same exited child again until it is reaped.
pub(crate) fn peek_exited_child() -> io::Result<Option<u32>> {
    super::retry_eintr(|| {
        let mut info = std::mem::MaybeUninit::<libc::siginfo_t>::zeroed();
        // SAFETY: `info` points to a zeroed `siginfo_t` that lives across the call; WNOWAIT leaves the child
        // waitable, so nothing is reaped here.
        let rc = unsafe {
            libc::waitid(
                libc::P_ALL,
                0,
                info.as_mut_ptr(),
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        match cvt(rc) {
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::ECHILD) => return Ok(None),
            Err(e) => return Err(e),
        }
        // SAFETY: zero-initialised and possibly filled in by the kernel: every bit pattern is a valid siginfo_t, and
        // si_pid reads the field waitid sets (0, as we zeroed it, when no child has exited).
        let pid = unsafe { info.assume_init().si_pid() };
        Ok(u32::try_from(pid).ok().filter(|&pid| pid > 0))
    })
}
