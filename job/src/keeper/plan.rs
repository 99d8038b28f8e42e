//! The keeper's plan: what it needs, prepared before the fork (the hook allocates nothing), held by value.

use std::ffi::CStr;
use std::io;
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;

use crate::sys;
use crate::sys::page::PageRef;

/// What the keeper needs, prepared before the fork (the hook allocates nothing). Held by value, not on the heap: the
/// keeper keeps a copy on its own stack, and sheds the rest of the caller's memory (see `shed.rs`).
#[derive(Clone, Copy)]
pub(super) struct Plan {
    pub(super) supervisor: libc::pid_t,
    /// This process's real user id: a keeper that runs as another one was switched by std (`Command::uid`).
    pub(super) uid: libc::uid_t,
    /// The job's cgroup folder (NUL-terminated), which the keeper makes (so that no folder is left by a supervisor
    /// that dies before the keeper exists) and removes; `None` in reaper mode (the keeper is the job's child subreaper
    /// instead).
    pub(super) folder: Option<[u8; PATH_MAX]>,
    pub(super) page: PageRef,
    /// This system's page size.
    pub(super) page_size: usize,
    /// What the loader said before the fork: the static TLS's size, the loaded objects' zero-filled data, whether
    /// the keeper's calls are safe from the shed.
    pub(super) loaded: sys::shed::Loaded,
}

/// The longest path a system call takes, its NUL included.
pub(super) const PATH_MAX: usize = libc::PATH_MAX as usize;

impl Plan {
    pub(super) fn folder(&self) -> Option<&CStr> {
        self.folder
            .as_ref()
            .and_then(|path| CStr::from_bytes_until_nul(path).ok())
    }
}

/// A path as a `Plan` holds it; `ENAMETOOLONG` (as a system call would say) if it is too long, `EINVAL` if it holds
/// a NUL.
pub(super) fn path_bytes(path: &Path) -> io::Result<[u8; PATH_MAX]> {
    let bytes = path.as_os_str().as_bytes();
    if bytes.contains(&0) {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    let mut held = [0; PATH_MAX];
    held.get_mut(..bytes.len())
        .filter(|_| bytes.len() < PATH_MAX)
        .ok_or_else(|| io::Error::from_raw_os_error(libc::ENAMETOOLONG))?
        .copy_from_slice(bytes);
    Ok(held)
}
