//! Reading the captured output pipes straight into the kept bytes.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

use super::{cvt_len, retry_eintr};

/// Reads once from `fd` into the spare capacity of `buf` (at most `max` bytes), appends what was read and returns
/// its length; 0 means end of file. Retries `EINTR`; a non-blocking `fd` with nothing to read gives `WouldBlock`.
///
/// Reading straight into the vector saves copying every byte through a separate buffer.
pub(crate) fn read_append(fd: BorrowedFd<'_>, buf: &mut Vec<u8>, max: usize) -> io::Result<usize> {
    let spare = buf.spare_capacity_mut();
    let len = spare.len().min(max).min(isize::MAX.unsigned_abs());
    let n = retry_eintr(|| {
        // SAFETY: `spare` is writable memory of at least `len` bytes owned by `buf`, which is exclusively borrowed
        // across the call; read writes at most `len` bytes into it; `fd` is borrowed, so it stays open.
        cvt_len(unsafe { libc::read(fd.as_raw_fd(), spare.as_mut_ptr().cast(), len) })
    })?;
    let new_len = buf.len() + n;
    // SAFETY: read initialised the first `n <= len` bytes of the spare capacity, which directly follow the
    // initialised `buf.len()` bytes, so the first `new_len <= capacity` bytes are initialised.
    unsafe { buf.set_len(new_len) };
    Ok(n)
}
