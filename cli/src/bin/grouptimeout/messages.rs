//! The tool's messages on standard error, worded as GNU `timeout` 9.1 words them in the C locale, and quoted as it
//! quotes them in the C locale or a UTF-8 one.

use std::ffi::OsStr;
use std::fmt::Write as _;
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::sync::OnceLock;

use crate::{EXIT_CANCELED, EXIT_CANNOT_INVOKE, EXIT_ENOENT};

/// The name the tool was run as, for messages: `argv[0]` exactly as given, as GNU's `program_name` is (`timeout`,
/// `/usr/bin/timeout`, `./timeout`, even empty); `grouptimeout` when there is no `argv[0]` at all.
pub fn program() -> &'static OsStr {
    static NAME: OnceLock<std::ffi::OsString> = OnceLock::new();
    NAME.get_or_init(|| {
        std::env::args_os()
            .next()
            .unwrap_or_else(|| "grouptimeout".into())
    })
}

/// Whether messages quote in a UTF-8 locale: decided by the first message that quotes (see [`quote`]).
static UTF8: OnceLock<bool> = OnceLock::new();

/// Quotes `arg` for a message as GNU's `quote()` does in the environment's locale: `'10\342\202\254'` in the C
/// locale, `‘10€’` in a UTF-8 one (see [`quote_in`]).
///
/// The first call takes the environment's locale for the character classification, as GNU's `setlocale(LC_ALL, "")`
/// does (see [`host::use_environment_charset`](grouptimeout_cli::host::use_environment_charset)), and quotes in it
/// from then on if its character set is UTF-8, otherwise as in the C locale. Only then: a run that quotes nothing
/// (most runs) does not pay for loading the locale (about 0.1 ms).
pub fn quote(arg: &[u8]) -> String {
    // The unit tests quote as in the C locale, whatever locale runs them (`quote_in` tests the UTF-8 one).
    let utf8 = || !cfg!(test) && grouptimeout_cli::host::use_environment_charset();
    let quoting = if *UTF8.get_or_init(utf8) {
        Quoting::Utf8(grouptimeout_cli::host::is_printable)
    } else {
        Quoting::C
    };
    quote_in(arg, quoting)
}

/// An argument of a message, quoted ([`quote`]) the first time a message shows it.
pub struct Quoted<'a> {
    arg: &'a [u8],
    quoted: std::cell::OnceCell<String>,
}

impl<'a> Quoted<'a> {
    pub fn new(arg: &'a [u8]) -> Quoted<'a> {
        Quoted {
            arg,
            quoted: std::cell::OnceCell::new(),
        }
    }
}

impl std::fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.quoted.get_or_init(|| quote(self.arg)))
    }
}

/// How [`quote_in`] shows characters: as GNU's `quote()` does in the C locale, or in a UTF-8 one (with the locale's
/// printable characters, see [`host::is_printable`](grouptimeout_cli::host::is_printable)).
#[derive(Clone, Copy)]
pub enum Quoting {
    C,
    Utf8(fn(char) -> bool),
}

/// Quotes a name or an argument for a message as GNU's `quote()` does (gnulib's `locale_quoting_style`, no
/// translation), in the C locale or a UTF-8 one ([`Quoting`]).
///
/// - C: between `'` and `'`; `'` and `\` escaped by a backslash, `\a \b \f \n \r \t \v` for those control
///   characters, and every other byte outside printable ASCII as a backslash and three octal digits (`é` in UTF-8 is
///   `\303\251`). The result is ASCII and unambiguous: `a'b` is `'a\'b'`.
/// - UTF-8: between `‘` and `’`; `\` and `’` escaped by a backslash (`'` is not), the same letters for those
///   control characters, a printable character as it is (`‘10€’`), and each byte of anything else as three octal
///   digits: an invalid or incomplete sequence (byte by byte, `‘1\377’`) and a character that is not printable (a
///   control character, U+2028, a character the C library does not know).
pub fn quote_in(arg: &[u8], quoting: Quoting) -> String {
    let (left, right) = match quoting {
        Quoting::C => ('\'', '\''),
        Quoting::Utf8(_) => ('\u{2018}', '\u{2019}'),
    };
    let octal = |quoted: &mut String, bytes: &[u8]| {
        for byte in bytes {
            let _ = write!(quoted, "\\{byte:03o}");
        }
    };
    let mut quoted = String::with_capacity(arg.len() + 6);
    quoted.push(left);
    let mut rest = arg;
    while let Some(&byte) = rest.first() {
        let letter = match byte {
            b'\\' => Some(byte),
            b'\'' if matches!(quoting, Quoting::C) => Some(byte),
            0x07 => Some(b'a'),
            0x08 => Some(b'b'),
            0x0c => Some(b'f'),
            b'\n' => Some(b'n'),
            b'\r' => Some(b'r'),
            b'\t' => Some(b't'),
            0x0b => Some(b'v'),
            _ => None,
        };
        if let Some(letter) = letter {
            quoted.push('\\');
            quoted.push(char::from(letter));
            rest = &rest[1..];
            continue;
        }
        if let b' '..=b'~' = byte {
            quoted.push(char::from(byte));
            rest = &rest[1..];
            continue;
        }
        let Quoting::Utf8(printable) = quoting else {
            octal(&mut quoted, &rest[..1]);
            rest = &rest[1..];
            continue;
        };
        // The character the next bytes encode, if they are valid UTF-8 (at most 4 bytes); else one byte escaped.
        let head = &rest[..rest.len().min(4)];
        let valid = match std::str::from_utf8(head) {
            Ok(text) => text,
            Err(e) => std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or_default(),
        };
        let Some(c) = valid.chars().next() else {
            octal(&mut quoted, &rest[..1]);
            rest = &rest[1..];
            continue;
        };
        let bytes = &rest[..c.len_utf8()];
        if printable(c) {
            if c == right {
                quoted.push('\\');
            }
            quoted.push(c);
        } else {
            octal(&mut quoted, bytes);
        }
        rest = &rest[bytes.len()..];
    }
    quoted.push(right);
    quoted
}

/// Writes `NAME: message` and a newline to standard error in one write, `NAME` being [`program`]; a failed write
/// is ignored (`eprintln!` would panic on a closed pipe). Every ` (os error N)` that std's `io::Error` adds to the
/// system's text is left out, here and in errors from the library nested in the message, so that errors read as
/// C's `strerror` does (`No such file or directory`).
pub fn say(message: &[u8]) {
    let line = [
        program().as_bytes(),
        b": ",
        &without_os_error_numbers(message),
        b"\n",
    ]
    .concat();
    let _ = io::stderr().write_all(&line);
}

/// `message` without the ` (os error N)` parts.
fn without_os_error_numbers(message: &[u8]) -> Vec<u8> {
    const MARK: &[u8] = b" (os error ";
    let mut out = Vec::with_capacity(message.len());
    let mut i = 0;
    while i < message.len() {
        if message[i..].starts_with(MARK) {
            let after = &message[i + MARK.len()..];
            let digits = after.iter().take_while(|b| b.is_ascii_digit()).count();
            if digits > 0 && after.get(digits) == Some(&b')') {
                i += MARK.len() + digits + 1;
                continue;
            }
        }
        out.push(message[i]);
        i += 1;
    }
    out
}

/// A usage error: the message, then GNU's pointer to `--help`.
pub fn usage_error(message: &[u8]) {
    say(message);
    let hint = [
        b"Try '",
        program().as_bytes(),
        b" --help' for more information.\n",
    ]
    .concat();
    let _ = io::stderr().write_all(&hint);
}

/// The innermost `io::Error` behind `e`, for an error that keeps another as its `source()` (the library's spawn
/// error is std's own, with its OS error number, and needs no unwrapping).
fn innermost(e: &io::Error) -> &io::Error {
    let mut inner = e;
    while let Some(next) = inner
        .get_ref()
        .and_then(|custom| custom.source())
        .and_then(|source| source.downcast_ref::<io::Error>())
    {
        inner = next;
    }
    inner
}

/// The OS error number behind `e`, if any (see [`innermost`]).
pub fn os_error(e: &io::Error) -> Option<i32> {
    innermost(e).raw_os_error()
}

/// GNU's message and exit status for a command that could not be started: `failed to run command 'x': No such file
/// or directory` (127 for `ENOENT`, else 126), or, when the process could not be created (`EAGAIN`: a process limit
/// such as `RLIMIT_NPROC`), `fork system call failed: Resource temporarily unavailable` (125).
pub fn spawn_failure(command: &OsStr, e: &io::Error) -> (String, i32) {
    let why = innermost(e).to_string();
    match os_error(e) {
        Some(libc::EAGAIN) => (format!("fork system call failed: {why}"), EXIT_CANCELED),
        code => (
            format!("failed to run command {}: {why}", quote(command.as_bytes())),
            if code == Some(libc::ENOENT) {
                EXIT_ENOENT
            } else {
                EXIT_CANNOT_INVOKE
            },
        ),
    }
}

/// How many of the processes left behind `-v` names; the rest are counted.
const NAMED_LEFTOVERS: usize = 10;

/// `-v`'s line about what the job left behind and the tool killed (pid and name of each): `killed 2 processes left
/// behind: 1234 (sleep), 1240 (sh)`. One line of bounded length: at most [`NAMED_LEFTOVERS`] are named (`, and 5 more`), and a name's
/// control characters are shown as `?` (a name has at most 15 bytes, from `/proc/PID/comm`).
pub fn killed_leftovers(killed: &[(u32, &str)]) -> String {
    let noun = if killed.len() == 1 {
        "process"
    } else {
        "processes"
    };
    format!(
        "killed {} {noun} left behind: {}",
        killed.len(),
        name_list(killed)
    )
}

/// The line about adopted orphans left running because the tool could not tell whether they are the command's:
/// their environment, which carries the job's mark, cannot be read (a setuid or non-dumpable program, such as
/// `ssh-agent`, run by an unprivileged tool). Named as in [`killed_leftovers`].
pub fn unknown_leftovers(left: &[(u32, &str)]) -> String {
    format!(
        "left running {}, which may be the command's: cannot read {} environment (setuid or non-dumpable)",
        name_list(left),
        if left.len() == 1 { "its" } else { "their" }
    )
}

/// What `--stats`' line says inside a figure's parentheses when the figure covers only the leader and the descendants
/// it waited for (`wait4`'s rusage), not every process of the job: for the CPU time and for the memory alike.
const PARTIAL: &str = "leader and its waited children";

/// `--stats`' line: `stats: cpu 1.02s (user 0.98s, system 0.04s), memory 3.1 MiB (whole job), peak 4 processes`. The
/// CPU time in seconds with two decimals; a partial measurement (the leader's own rusage: a lineage job, a plain
/// group, a keeper that was killed) is marked `; leader and its waited children` ([`PARTIAL`]) inside the
/// parentheses. The memory says whether it is the whole job's (`memory.peak`) or the largest process's, and the
/// largest process's is marked partial in the same words where the processes measured were the leader and what it
/// waited for: everywhere but reaper mode, whose keeper reaped every process of the job (in cgroup mode without the
/// memory controller the keeper reaped the command alone, and a daemon's memory is in no rusage it sees). What is
/// unknown is left out.
pub fn stats(usage: &grouptimeout::Usage) -> String {
    use std::fmt::Write as _;
    let seconds = |d: std::time::Duration| format!("{:.2}s", d.as_secs_f64());
    let partial = match usage.measured {
        grouptimeout::Measured::Leader => format!("; {PARTIAL}"),
        _ => String::new(),
    };
    let mut line = format!(
        "stats: cpu {} (user {}, system {}{partial})",
        seconds(usage.cpu()),
        seconds(usage.user),
        seconds(usage.system)
    );
    if let Some(bytes) = usage.memory {
        #[allow(clippy::cast_precision_loss, reason = "shown with one decimal")]
        let mib = bytes as f64 / f64::from(1 << 20);
        let of = match usage.measured {
            _ if usage.memory_whole_job => "whole job".to_owned(),
            grouptimeout::Measured::Keeper => "largest process".to_owned(),
            _ => format!("largest process; {PARTIAL}"),
        };
        let _ = write!(line, ", memory {mib:.1} MiB ({of})");
    }
    if let Some(n) = usage.processes {
        let _ = write!(line, ", peak {n} processes");
    }
    line
}

/// `1234 (sleep), 1240 (sh)`: at most [`NAMED_LEFTOVERS`] named, then `, and 5 more`.
fn name_list(processes: &[(u32, &str)]) -> String {
    let named: Vec<String> = processes
        .iter()
        .take(NAMED_LEFTOVERS)
        .map(|&(pid, name)| {
            let name: String = name
                .chars()
                .take(16)
                .map(|c| if c.is_control() { '?' } else { c })
                .collect();
            // No name: it could not be read (no descriptor left).
            if name.is_empty() {
                pid.to_string()
            } else {
                format!("{pid} ({name})")
            }
        })
        .collect();
    let more = match processes.len().saturating_sub(NAMED_LEFTOVERS) {
        0 => String::new(),
        n => format!(", and {n} more"),
    };
    format!("{}{more}", named.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_say_the_cpu_first_and_mark_the_leaders_usage_partial() {
        use grouptimeout::GroupCommandExt as _;
        let mut child = std::process::Command::new("true").spawn_group().unwrap();
        child.wait().unwrap();
        let line = stats(&child.usage().unwrap());
        assert!(line.starts_with("stats: cpu 0."), "{line}");
        assert!(
            line.contains("s; leader and its waited children), memory "),
            "{line}"
        );
        assert!(
            line.ends_with(" MiB (largest process; leader and its waited children)"),
            "{line}"
        );
    }

    /// Issue 42.12: the largest process's memory is partial, in the CPU figure's words, unless the keeper reaped every
    /// process of the job (reaper mode): in cgroup mode without the memory controller it is the command's and what
    /// the command waited for, while the CPU time is the cgroup's, the whole job's.
    #[test]
    fn stats_mark_the_memory_partial_where_it_is() {
        use grouptimeout::{GroupCommandExt as _, Measured};
        let mut child = std::process::Command::new("true").spawn_group().unwrap();
        child.wait().unwrap();
        let mut usage = child.usage().unwrap();
        for (measured, whole_job, cpu, memory) in [
            (
                Measured::Cgroup,
                false,
                "system 0.00s)",
                "(largest process; leader and its waited children)",
            ),
            (Measured::Cgroup, true, "system 0.00s)", "(whole job)"),
            (
                Measured::Keeper,
                false,
                "system 0.00s)",
                "(largest process)",
            ),
            (
                Measured::Leader,
                false,
                "system 0.00s; leader and its waited children)",
                "(largest process; leader and its waited children)",
            ),
        ] {
            usage.measured = measured;
            usage.memory_whole_job = whole_job;
            usage.system = std::time::Duration::ZERO;
            let line = stats(&usage);
            assert!(line.contains(&format!("{cpu}, memory ")), "{line}");
            assert!(line.ends_with(&format!(" MiB {memory}")), "{line}");
        }
    }

    #[test]
    fn quotes_like_gnu_in_a_utf8_locale() {
        // The C library's tables stand in as: printable unless a control character or U+0378 (unassigned).
        let printable = |c: char| !c.is_control() && c != '\u{378}';
        for (arg, quoted) in [
            ("10€".as_bytes(), "‘10€’"),
            (b"", "‘’"),
            (b"a'b\\", r"‘a'b\\’"),
            ("a’b‘".as_bytes(), r"‘a\’b‘’"),
            (b"\x07\t\x01\x7f", r"‘\a\t\001\177’"),
            ("\u{85}\u{378}é".as_bytes(), r"‘\302\205\315\270é’"),
            (b"1\xff\xc0\xaf\xed\xa0\x80", r"‘1\377\300\257\355\240\200’"),
            (b"\xe2\x82x\xe2\x82", r"‘\342\202x\342\202’"),
        ] {
            assert_eq!(quote_in(arg, Quoting::Utf8(printable)), quoted, "{arg:?}");
        }
    }

    #[test]
    fn the_line_about_leftovers_is_one_bounded_line() {
        assert_eq!(
            killed_leftovers(&[(12, "sleep")]),
            "killed 1 process left behind: 12 (sleep)"
        );
        let many: Vec<(u32, &str)> = (1..=12).map(|pid| (pid, "a\nb")).collect();
        let line = killed_leftovers(&many);
        assert!(!line.contains('\n'), "{line}");
        assert!(line.starts_with("killed 12 processes left behind: 1 (a?b), 2 (a?b), "));
        assert!(line.ends_with(", 10 (a?b), and 2 more"), "{line}");
    }

    #[test]
    fn os_errors_read_as_strerror() {
        let enoent = io::Error::from_raw_os_error(libc::ENOENT);
        assert_eq!(
            without_os_error_numbers(
                b"a: No such file or directory (os error 2); b (os error x) (os error 12)"
            ),
            b"a: No such file or directory; b (os error x)"
        );
        let wrapped = io::Error::new(io::ErrorKind::NotFound, Wrapped(enoent));
        assert_eq!(os_error(&wrapped), Some(libc::ENOENT));
        assert_eq!(
            spawn_failure(OsStr::new("a'b"), &wrapped),
            (
                r"failed to run command 'a\'b': No such file or directory (os error 2)".to_string(),
                EXIT_ENOENT
            )
        );
        let eagain = io::Error::from_raw_os_error(libc::EAGAIN);
        assert_eq!(
            spawn_failure(OsStr::new("x"), &eagain),
            (
                "fork system call failed: Resource temporarily unavailable (os error 11)"
                    .to_string(),
                EXIT_CANCELED
            )
        );
        let custom = io::Error::new(io::ErrorKind::Unsupported, "no way");
        assert_eq!(
            spawn_failure(OsStr::new("x"), &custom),
            (
                "failed to run command 'x': no way".to_string(),
                EXIT_CANNOT_INVOKE
            )
        );
    }

    /// An error that keeps an `io::Error` as its source, as the library's spawn error does.
    #[derive(Debug)]
    struct Wrapped(io::Error);

    impl std::fmt::Display for Wrapped {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "wrapped: {}", self.0)
        }
    }

    impl std::error::Error for Wrapped {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }
}
