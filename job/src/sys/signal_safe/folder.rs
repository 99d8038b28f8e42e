//! A job's cgroup folder, as the keeper and the forked guard handle it after the fork: a write to one of its control
//! files, the start of a file read on a fixed buffer, whether it is populated, and its removal with the sub-cgroups
//! below it (deepest first), walked with `getdents64` on a buffer on the stack (no allocation, no `opendir`).

use std::ffi::CStr;
use std::os::fd::RawFd;

use super::{close, errno, getdents64, lseek, openat, read_start, rmdir, unlinkat, write};

/// Writes `value` to the control file open as `fd` (`cgroup.kill`, `cgroup.procs`): a cgroup file takes a value in
/// one `write`, whole or not at all. The errno if it was not taken whole (a short write sets none: then the one left
/// by the last call that failed).
pub(crate) fn write_control(fd: RawFd, value: &[u8]) -> Result<(), i32> {
    match write(fd, value) {
        Ok(n) if n == value.len() => Ok(()),
        Ok(_) => Err(errno()),
        Err(e) => Err(e),
    }
}

/// Opens control file `name` of the folder open as `dir` and writes `value` to it (see [`write_control`]).
pub(crate) fn write_control_at(dir: RawFd, name: &CStr, value: &[u8]) -> Result<(), i32> {
    let fd = openat(dir, name, libc::O_WRONLY | libc::O_CLOEXEC)?;
    let written = write_control(fd, value);
    close(fd);
    written
}

/// Whether `cgroup.events` of the folder open as `dir` says `populated 1` (or cannot be read).
pub(crate) fn populated(dir: RawFd) -> bool {
    let mut buf = [0u8; 128];
    read_start(dir, c"cgroup.events", &mut buf)
        .is_none_or(|text| !text.windows(11).any(|w| w == b"populated 0"))
}

/// Removes folder `folder` with the sub-cgroups below it, at most `depth` levels down, deepest first: whether it is
/// gone (removed, or not there). A folder that still holds a process (`EBUSY`) stays for the next try.
pub(crate) fn remove_tree(folder: &CStr, depth: u32) -> bool {
    if let Ok(dir) = super::open(folder, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC) {
        remove_below(dir, depth);
        close(dir);
    }
    matches!(rmdir(folder), Ok(()) | Err(libc::ENOENT))
}

/// Removes the (empty) sub-folders of the folder open as `dir`, each after the ones below it, at most `depth` levels
/// down; those that cannot be removed yet are left. Reads the folder from its start (`lseek`), so that `dir` may be
/// read again.
pub(crate) fn remove_below(dir: RawFd, depth: u32) {
    let Some(below) = depth.checked_sub(1) else {
        return;
    };
    lseek(dir, 0, libc::SEEK_SET);
    for_each_folder(dir, |name| {
        if let Ok(sub) = openat(
            dir,
            name,
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        ) {
            remove_below(sub, below);
            close(sub);
        }
        unlinkat(dir, name, libc::AT_REMOVEDIR);
    });
}

/// Calls `f` with the name of each folder in the folder open as `dir` (from where its offset is), but `.` and `..`.
fn for_each_folder(dir: RawFd, mut f: impl FnMut(&CStr)) {
    let mut buf = [0u64; 512]; // 4 KiB, 8-byte aligned, as getdents64 wants
    loop {
        let bytes = match getdents64(dir, &mut buf) {
            Ok(bytes) if !bytes.is_empty() => bytes,
            _ => return,
        };
        // Each record: d_ino (8), d_off (8), d_reclen (2), d_type (1), d_name (NUL-terminated). The kernel's records
        // fit in what it wrote; `get` all the same, so that a short one ends the list instead of a panic. `at` stays
        // below the 4 KiB written, and a record's length below 64 KiB: no sum here can overflow.
        let mut at = 0;
        while at + 19 < bytes.len() {
            let (Some(&len_lo), Some(&len_hi), Some(&kind)) =
                (bytes.get(at + 16), bytes.get(at + 17), bytes.get(at + 18))
            else {
                return;
            };
            let reclen = usize::from(u16::from_ne_bytes([len_lo, len_hi]));
            if reclen == 0 {
                return;
            }
            let Some(name) = bytes.get(at + 19..(at + reclen).min(bytes.len())) else {
                return;
            };
            let dot = name.first() == Some(&b'.') && matches!(name.get(1), Some(0 | b'.'));
            if kind == libc::DT_DIR && !dot {
                if let Ok(name) = CStr::from_bytes_until_nul(name) {
                    f(name);
                }
            }
            at += reclen;
        }
    }
}
