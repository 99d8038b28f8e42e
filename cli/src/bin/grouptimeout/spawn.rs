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
/// `execvp` would have run (the program itself if it holds a `/`, else the first entry of the search through
/// `path`, the value of `PATH`, that neither is missing nor refuses execution, as `execvp` skips those) and starts
/// `/bin/sh FILE ARG…` instead, as `execvp` does.
///
/// # Errors
///
/// The error of the last start tried: the first one's when no file is found to run with `/bin/sh`.
pub fn like_execvp<T>(
    command: &[OsString],
    path: Option<&OsStr>,
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
    let path = path.map_or(DEFAULT_PATH, OsStr::as_bytes);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `like_execvp` with a `start` that fails as `errors` says for each program (else succeeds), and returns
    /// what it tried to start, each as one line.
    fn tries(
        command: &[&str],
        path: Option<&str>,
        errors: &[(&str, i32)],
    ) -> (Vec<String>, Option<i32>) {
        let command: Vec<OsString> = command.iter().map(OsString::from).collect();
        let mut tried = Vec::new();
        let result = like_execvp(&command, path.map(OsStr::new), |program, args| {
            let line: Vec<_> = std::iter::once(program)
                .chain(args.iter().map(OsString::as_os_str))
                .map(|a| a.to_string_lossy().into_owned())
                .collect();
            tried.push(line.join(" "));
            match errors.iter().find(|(p, _)| OsStr::new(p) == program) {
                Some(&(_, errno)) => Err(io::Error::from_raw_os_error(errno)),
                None => Ok(()),
            }
        });
        (tried, result.err().and_then(|e| e.raw_os_error()))
    }

    #[test]
    fn runs_with_sh_the_file_execvp_would_have_run() {
        let enoexec = [
            ("x", libc::ENOEXEC),
            ("./x", libc::ENOEXEC),
            ("/b/x", libc::ENOEXEC),
        ];
        // A path: straight to the shell, arguments kept.
        assert_eq!(
            tries(&["./x", "a b", "c"], None, &enoexec),
            (vec!["./x a b c".into(), "/bin/sh ./x a b c".into()], None)
        );
        // A name: the search skips missing and refused files, and stops at the one that is not a known format.
        let errors = [
            ("/a/x", libc::ENOENT),
            ("/d/x", libc::EACCES),
            enoexec[0],
            enoexec[2],
        ];
        assert_eq!(
            tries(&["x", "y"], Some("/a:/d:/b:/c"), &errors).0,
            ["x y", "/a/x y", "/d/x y", "/b/x y", "/bin/sh /b/x y"]
        );
        // An empty entry is the current directory.
        assert_eq!(
            tries(&["x"], Some(":/b"), &enoexec).0,
            ["x", "./x", "/bin/sh x"]
        );
        // Without PATH, execvp's default search.
        assert_eq!(
            tries(
                &["x"],
                None,
                &[
                    enoexec[0],
                    ("/bin/x", libc::ENOENT),
                    ("/usr/bin/x", libc::ENOEXEC)
                ]
            )
            .0,
            ["x", "/bin/x", "/usr/bin/x", "/bin/sh /usr/bin/x"]
        );
        // Another error ends the search with it; none found: the first error.
        assert_eq!(
            tries(&["x"], Some("/a:/b"), &[enoexec[0], ("/a/x", libc::EIO)]),
            (vec!["x".into(), "/a/x".into()], Some(libc::EIO))
        );
        assert_eq!(
            tries(&["x"], Some("/a"), &[enoexec[0], ("/a/x", libc::ENOENT)]),
            (vec!["x".into(), "/a/x".into()], Some(libc::ENOEXEC))
        );
        // Other errors, and success, are left alone.
        assert_eq!(
            tries(&["x"], None, &[("x", libc::ENOENT)]),
            (vec!["x".into()], Some(libc::ENOENT))
        );
        assert_eq!(tries(&["x"], None, &[]), (vec!["x".into()], None));
    }
}
