//! A job's cgroup folder, as the keeper and the forked guard handle it after the fork: a write to one of its control
//! files, the start of a file read on a fixed buffer, whether it is populated, and its removal with the sub-cgroups
//! below it (deepest first, however deep, on one frame), walked with `getdents64` on a buffer on the stack (no
//! allocation, no `opendir`).

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

/// Removes folder `folder` with the sub-cgroups below it, however deep, deepest first (see [`remove_below`]):
/// whether it is gone (removed, or not there). A folder that still holds a process (`EBUSY`) stays for the next try.
pub(crate) fn remove_tree(folder: &CStr) -> bool {
    if let Ok(dir) = super::open(folder, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC) {
        remove_below(dir);
        close(dir);
    }
    matches!(rmdir(folder), Ok(()) | Err(libc::ENOENT))
}

/// How many steps (a step opens or removes one folder) one call of `remove_below` takes at most: a tree of about
/// 30,000 sub-cgroups; the caller's next try goes on where it stopped.
pub(crate) const REMOVE_STEPS: u32 = 100_000;

/// Removes the (empty) sub-folders of the folder open as `top`, deepest first, however deep, in one pass and on one
/// frame (no recursion): it goes down through the first sub-folder of each level to one that has none, goes back up
/// (`..`, which in a cgroup tree is the folder it came from: a cgroup is renamed only within its parent) and removes
/// that one by the name it went down by, then reads the folder it stands in again. So each folder is opened twice or
/// so, whatever the depth. It stops at the first folder it cannot open or remove (`EBUSY`: one that holds a process),
/// and after [`REMOVE_STEPS`] steps; the caller tries again.
pub(crate) fn remove_below(top: RawFd) {
    // 4 KiB, 8-byte aligned, as getdents64 wants.
    let mut buf = [0u64; 512];
    // The name of the folder open as `dir`, as its parent lists it, while `named` (it went down into it last).
    let mut name = [0u8; 256];
    let mut named = false;
    let mut dir = top;
    let mut depth = 0u32;
    for _ in 0..REMOVE_STEPS {
        if first_sub_folder(dir, &mut buf, &mut name) {
            let Ok(sub) = CStr::from_bytes_until_nul(&name)
                .map_err(drop)
                .and_then(|sub| {
                    openat(
                        dir,
                        sub,
                        libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
                    )
                    .map_err(drop)
                })
            else {
                break;
            };
            if dir != top {
                close(dir);
            }
            (dir, depth, named) = (sub, depth + 1, true);
            continue;
        }
        if depth == 0 {
            break; // `top` has no sub-folder left
        }
        let Ok(parent) = openat(
            dir,
            c"..",
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        ) else {
            break;
        };
        close(dir);
        (dir, depth) = (parent, depth - 1);
        // Went up from a folder it had gone down into: remove that one. Else (up again from a folder whose sub-folder
        // it has just removed, and whose name it no longer holds) it goes down into it again, by its name.
        if std::mem::take(&mut named) {
            let Ok(sub) = CStr::from_bytes_until_nul(&name) else {
                break;
            };
            if unlinkat(dir, sub, libc::AT_REMOVEDIR).is_err() {
                break;
            }
        }
    }
    if dir != top {
        close(dir);
    }
}

/// Whether the folder open as `dir` has a sub-folder (read from its start with `getdents64` into `buf`); if so, its
/// name, NUL-terminated, into `name` (a name is at most 255 bytes).
fn first_sub_folder(dir: RawFd, buf: &mut [u64; 512], name: &mut [u8; 256]) -> bool {
    lseek(dir, 0, libc::SEEK_SET);
    loop {
        let bytes = match getdents64(dir, buf) {
            Ok(bytes) if !bytes.is_empty() => bytes,
            _ => return false,
        };
        // Each record: d_ino (8), d_off (8), d_reclen (2), d_type (1), d_name (NUL-terminated). The kernel's records
        // fit in what it wrote; `get` all the same, so that a short one ends the list instead of a panic. `at` stays
        // below the 4 KiB written, and a record's length below 64 KiB: no sum here can overflow.
        let mut at = 0;
        while at + 19 < bytes.len() {
            let (Some(&len_lo), Some(&len_hi), Some(&kind)) =
                (bytes.get(at + 16), bytes.get(at + 17), bytes.get(at + 18))
            else {
                return false;
            };
            let reclen = usize::from(u16::from_ne_bytes([len_lo, len_hi]));
            if reclen == 0 {
                return false;
            }
            let Some(found) = bytes.get(at + 19..(at + reclen).min(bytes.len())) else {
                return false;
            };
            let dot = found.first() == Some(&b'.') && matches!(found.get(1), Some(0 | b'.'));
            if kind == libc::DT_DIR && !dot {
                if let Some(len) = found
                    .iter()
                    .position(|&b| b == 0)
                    .filter(|&len| len < name.len())
                {
                    name[..=len].copy_from_slice(&found[..=len]);
                    return true;
                }
            }
            at += reclen;
        }
    }
}
