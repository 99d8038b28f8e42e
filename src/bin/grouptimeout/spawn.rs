//! Starting the command as GNU's `execvp(3)` does, with its `/bin/sh` fallback for executables without `#!`.
//!
//! std spawns with `posix_spawnp` (or `execvp`'s search without the fallback), which fails with `ENOEXEC` for an
//! executable text file that does not start with `#!`; `execvp`, and so GNU `timeout`, runs such a file with
//! `/bin/sh`.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use crate::messages::os_error;

/// The shell `execvp` runs a file with when the kernel does not know its format.
const SHELL: &str = "/bin/sh";

/// `execvp`'s search path when `PATH` is not set (glibc's `_CS_PATH`).
const DEFAULT_PATH: &[u8] = b"/bin:/usr/bin";

/// Starts `command` (program, then arguments) with `start`. When that fails with `ENOEXEC`, finds the file
/// `execvp` would have run (the program itself if it holds a `/`, else the first entry of the `PATH` search that
/// neither is missing nor refuses execution, as `execvp` skips those) and starts `/bin/sh FILE ARG…` instead, as
/// `execvp` does.
///
/// # Errors
///
/// The error of the last start tried: the first one's when no file is found to run with `/bin/sh`.
pub fn like_execvp<T>(
    command: &[OsString],
    mut start: impl FnMut(&OsStr, &[OsString]) -> io::Result<T>,
) -> io::Result<T> {
    let (program, args) = (&command[0], &command[1..]);
    let first = match start(program, args) {
        Err(e) if os_error(&e) == Some(libc::ENOEXEC) => e,
        other => return other,
    };
    let with_shell = |file: OsString| [vec![file], args.to_vec()].concat();
    if program.as_bytes().contains(&b'/') {
        return start(OsStr::new(SHELL), &with_shell(program.clone()));
    }
    let path = std::env::var_os("PATH").map_or_else(|| DEFAULT_PATH.to_vec(), OsString::into_vec);
    for dir in path.split(|&b| b == b':') {
        // An empty entry is the current directory; execvp then passes the bare name on, as here.
        let file = if dir.is_empty() {
            program.clone()
        } else {
            OsString::from_vec([dir, b"/", program.as_bytes()].concat())
        };
        // Started by a path with a `/`, never searched for again.
        let direct = if dir.is_empty() {
            OsString::from_vec([b"./", program.as_bytes()].concat())
        } else {
            file.clone()
        };
        match start(&direct, args) {
            Err(e) if os_error(&e) == Some(libc::ENOEXEC) => {
                return start(OsStr::new(SHELL), &with_shell(file))
            }
            // The errors on which execvp tries the next entry.
            Err(e)
                if matches!(
                    os_error(&e),
                    Some(
                        libc::EACCES
                            | libc::ENOENT
                            | libc::ESTALE
                            | libc::ENOTDIR
                            | libc::ENODEV
                            | libc::ETIMEDOUT
                    )
                ) => {}
            other => return other,
        }
    }
    Err(first)
}
