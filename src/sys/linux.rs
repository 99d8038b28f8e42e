//! Linux-only process controls.

use std::io;

use super::cvt;

/// Makes this process a child subreaper (Linux `PR_SET_CHILD_SUBREAPER`).
pub(crate) fn set_child_subreaper() -> io::Result<()> {
    // SAFETY: prctl with integer arguments only.
    cvt(unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0) }).map(drop)
}
