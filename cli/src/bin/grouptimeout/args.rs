//! The `grouptimeout` command line: options, by hand, GNU `getopt_long` style.
//!
//! Pure functions, no process state (but the locale its messages quote in, see [`crate::messages::quote`]): everything
//! here is unit-tested below.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::time::Duration;

use crate::duration::parse_duration;
use crate::messages::quote;
use crate::signals::parse_signal;

/// What to run and how.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "one field per flag of the command line, as GNU's has them"
)]
pub struct Options {
    /// Signal sent at the timeout (`-s`); default `SIGTERM`.
    pub signal: i32,
    /// `-k`: send `SIGKILL` this long after the first signal; `None` for never (absent or 0).
    pub kill_after: Option<Duration>,
    /// `-p`/`--preserve-status`.
    pub preserve_status: bool,
    /// `-f`/`--foreground`.
    pub foreground: bool,
    /// `-v`/`--verbose`.
    pub verbose: bool,
    /// `--leave-running`: do not kill what the command leaves running when it exits by itself.
    pub leave_running: bool,
    /// `--stats`: say what the job used once it has ended.
    pub stats: bool,
    /// The timeout; `None` for none (0, or too large to represent).
    pub duration: Option<Duration>,
    /// The command and its arguments; never empty.
    pub command: Vec<OsString>,
}

/// The result of parsing the arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    /// Run a command.
    Run(Options),
    /// `--help`.
    Help,
    /// `--version`.
    Version,
}

/// A usage error: the message (without the program name) to print before the "Try --help" line; exit 125.
///
/// Bytes, not text: like GNU's `getopt_long`, the messages about options show the option as given, invalid UTF-8
/// included.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub Vec<u8>);

impl UsageError {
    fn new(message: impl Into<Vec<u8>>) -> UsageError {
        UsageError(message.into())
    }

    /// `prefix'arg'suffix`, `arg` as given (GNU's `getopt_long` does not escape it).
    fn raw(prefix: &str, arg: &[u8], suffix: &str) -> UsageError {
        UsageError([prefix.as_bytes(), b"'", arg, b"'", suffix.as_bytes()].concat())
    }
}

/// The `--help` text: its usage line names the tool as it was run (`program`, `argv[0]` as given, as GNU's does:
/// `Usage: timeout ...` through a `timeout` symlink).
pub fn help(program: &[u8]) -> Vec<u8> {
    [b"Usage: ", program, HELP_AFTER_NAME.as_bytes()].concat()
}

/// The `--version` text, worded as GNU's: the name and version, then the license (no authors line: the crate names
/// none).
pub const VERSION: &str = concat!(
    "grouptimeout ",
    env!("CARGO_PKG_VERSION"),
    "\n\
License MIT OR Apache-2.0: the MIT License <https://opensource.org/license/mit>
or the Apache License 2.0 <https://www.apache.org/licenses/LICENSE-2.0>,
at your option.
This is free software: you are free to change and redistribute it.
There is NO WARRANTY, to the extent permitted by law.
"
);

/// The `--help` text after the usage line's `Usage: NAME`.
const HELP_AFTER_NAME: &str = " [OPTION]... DURATION COMMAND [ARG]...
Run COMMAND as the leader of a new process group; if it still runs after
DURATION, send it SIGNAL. On exit, nothing COMMAND started is left running.

On Linux, what COMMAND starts is found within one of these job boundaries
(-v names the one it got, and why, when it is not the cgroup):
  cgroup   as root, or in a delegated cgroup v2: a cgroup made for the job;
           escapes: only a process moved out of it (as root may do)
  reaper   as any other user, and as root in a container: a keeper process
           that adopts every orphan of the job; escapes: if the job kills
           the keeper, what lineage misses
  lineage  where no keeper can be started (say RLIMIT_NPROC is reached): the
           group and a mark in the environment of its processes; escapes: a
           process that left the group and cleared or hid its environment
           (env -i; setuid programs, ssh-agent)
Elsewhere only the group is reached; with --foreground (no group), on Linux,
every orphan COMMAND leaves, once it exits.

  -s, --signal=SIGNAL      signal to send on timeout (default TERM): a name
                             like HUP, SIGTERM or RTMIN+2, or a number
  -k, --kill-after=DURATION  send KILL to the group if it still runs this long
                             after the first signal was sent
  -p, --preserve-status    exit with COMMAND's status even after a timeout
  -f, --foreground         keep COMMAND in this process group, as GNU does;
                             rarely needed (see below). SIGNAL and KILL then
                             reach COMMAND only (on Linux the rest is killed
                             once COMMAND exits)
  -v, --verbose            report every signal sent, on stderr, the
                             processes killed besides COMMAND, and a job
                             boundary weaker than the cgroup, with why
      --leave-running      when COMMAND exits by itself, leave the processes
                             it started running (default: kill them)
      --stats              once the job has ended, say on stderr what it
                             used: its CPU time and peak memory, each marked
                             \"leader and its waited children\" where it
                             counts only COMMAND and what COMMAND waited
                             for. No line with --foreground: COMMAND then
                             has no job boundary, and the boundary is what
                             measures a job
      --help               display this help and exit
      --version            output version information and exit

DURATION is a floating-point number with an optional suffix: s (seconds, the
default), m (minutes), h (hours) or d (days). 0 means no timeout.

Signals TERM, INT, HUP, QUIT, USR1 and USR2 sent to grouptimeout are passed on
to the group (and start the --kill-after countdown), unless grouptimeout was
started with them ignored (nohup): then COMMAND inherits them ignored. SIGNAL
itself always reaches COMMAND with its default action.
ALRM sent to grouptimeout means: time is up.

At a terminal, when grouptimeout runs in the foreground, COMMAND's group gets
the terminal: COMMAND can read it, Ctrl-C reaches it, and Ctrl-Z stops it and
grouptimeout (the timeout keeps running; fg or bg continues them). In a
pipeline, COMMAND's group gets it only once COMMAND reads it (or writes to it
under stty tostop), and gives it back to the pipeline when COMMAND is done;
meanwhile the other commands of the pipeline cannot read it, and the timeout's
signals do not reach them. A COMMAND that must share the terminal with them
needs --foreground.

Exit status:
  124  COMMAND timed out (and --preserve-status was not given)
  125  grouptimeout itself failed (bad option, duration or signal), or the
       fork of COMMAND failed
  126  COMMAND was found but could not be run
  127  COMMAND was not found
  137  KILL had to be sent (128+9); if it could not be sent (COMMAND runs as
       a user grouptimeout may not signal), grouptimeout says so and exits,
       leaving COMMAND running. Without --foreground, grouptimeout then dies
       of KILL itself, as GNU does (a shell shows 137)
  -    otherwise COMMAND's status; if it died of a signal (KILL included),
       grouptimeout ends with the same signal (core dumps off)
";

/// A long option: its name and whether it takes an argument.
const LONG_OPTIONS: &[(&str, bool)] = &[
    ("kill-after", true),
    ("signal", true),
    ("verbose", false),
    ("foreground", false),
    ("preserve-status", false),
    ("leave-running", false),
    ("stats", false),
    ("help", false),
    ("version", false),
];

/// Parses the arguments after the program name, GNU `getopt_long` style with `+` (options end at the first
/// operand): short options may be clustered (`-vk1`), long ones abbreviated to any unambiguous prefix.
///
/// # Errors
///
/// A usage error with GNU's wording.
#[allow(
    clippy::too_many_lines,
    reason = "getopt_long's loop over the arguments, read top to bottom"
)]
pub fn parse_args(args: &[OsString]) -> Result<Parsed, UsageError> {
    let mut opts = Options {
        signal: libc::SIGTERM,
        kill_after: None,
        preserve_status: false,
        foreground: false,
        verbose: false,
        leave_running: false,
        stats: false,
        duration: None,
        command: Vec::new(),
    };
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_bytes();
        i += 1;
        if arg == b"--" {
            break;
        }
        if let Some(body) = arg.strip_prefix(b"--") {
            let (name, value) = match body.iter().position(|&b| b == b'=') {
                Some(eq) => (&body[..eq], Some(&body[eq + 1..])),
                None => (body, None),
            };
            let (long, takes_arg) = match_long(name, arg)?;
            let value = match (takes_arg, value) {
                (true, Some(v)) => Some(v),
                (true, None) => match args.get(i) {
                    Some(next) => {
                        i += 1;
                        Some(next.as_bytes())
                    }
                    None => {
                        return Err(UsageError::new(format!(
                            "option '--{long}' requires an argument"
                        )))
                    }
                },
                (false, Some(_)) => {
                    return Err(UsageError::new(format!(
                        "option '--{long}' doesn't allow an argument"
                    )))
                }
                (false, None) => None,
            };
            match long {
                "kill-after" => opts.kill_after = option_duration(value.unwrap_or_default())?,
                "signal" => opts.signal = option_signal(value.unwrap_or_default())?,
                "verbose" => opts.verbose = true,
                "foreground" => opts.foreground = true,
                "preserve-status" => opts.preserve_status = true,
                "leave-running" => opts.leave_running = true,
                "stats" => opts.stats = true,
                "help" => return Ok(Parsed::Help),
                _ => return Ok(Parsed::Version),
            }
        } else if arg.len() > 1 && arg[0] == b'-' {
            let mut j = 1;
            while j < arg.len() {
                let c = arg[j];
                j += 1;
                match c {
                    b'v' => opts.verbose = true,
                    b'f' => opts.foreground = true,
                    b'p' => opts.preserve_status = true,
                    b'k' | b's' => {
                        let value = if j < arg.len() {
                            &arg[j..]
                        } else if let Some(next) = args.get(i) {
                            i += 1;
                            next.as_bytes()
                        } else {
                            return Err(UsageError::raw(
                                "option requires an argument -- ",
                                &[c],
                                "",
                            ));
                        };
                        if c == b'k' {
                            opts.kill_after = option_duration(value)?;
                        } else {
                            opts.signal = option_signal(value)?;
                        }
                        break;
                    }
                    _ => return Err(UsageError::raw("invalid option -- ", &[c], "")),
                }
            }
        } else {
            i -= 1;
            break;
        }
    }
    let operands = &args[i..];
    if operands.len() < 2 {
        return Err(UsageError::new(if operands.is_empty() {
            "missing operand".to_string()
        } else {
            format!("missing command after {}", quote(operands[0].as_bytes()))
        }));
    }
    opts.duration = option_duration(operands[0].as_bytes())?;
    opts.command = operands[1..].to_vec();
    Ok(Parsed::Run(opts))
}

/// Finds the long option `name` stands for: an exact name, or the only one it is a prefix of.
fn match_long(name: &[u8], arg: &[u8]) -> Result<(&'static str, bool), UsageError> {
    if let Some(&(long, takes)) = LONG_OPTIONS.iter().find(|(l, _)| l.as_bytes() == name) {
        return Ok((long, takes));
    }
    let candidates: Vec<_> = LONG_OPTIONS
        .iter()
        .filter(|(l, _)| !name.is_empty() && l.as_bytes().starts_with(name))
        .collect();
    // A prefix that GNU's own options make unique stays theirs (`--s` is `--signal`, as in GNU's `timeout`), whatever
    // the tool's own options (`--stats`, `--leave-running`) add.
    let gnu: Vec<_> = candidates
        .iter()
        .filter(|(l, _)| !["stats", "leave-running"].contains(l))
        .collect();
    match (&candidates[..], &gnu[..]) {
        ([&(long, takes)], _) | (_, [&&(long, takes)]) => Ok((long, takes)),
        ([], _) => Err(UsageError::raw("unrecognized option ", arg, "")),
        _ => {
            let list: Vec<String> = candidates.iter().map(|(l, _)| format!("'--{l}'")).collect();
            let name = [b"--", name].concat();
            Err(UsageError::raw(
                "option ",
                &name,
                &format!(" is ambiguous; possibilities: {}", list.join(" ")),
            ))
        }
    }
}

fn option_duration(arg: &[u8]) -> Result<Option<Duration>, UsageError> {
    parse_duration(arg)
        .ok_or_else(|| UsageError::new(format!("invalid time interval {}", quote(arg))))
}

fn option_signal(arg: &[u8]) -> Result<i32, UsageError> {
    parse_signal(arg).ok_or_else(|| UsageError::new(format!("{}: invalid signal", quote(arg))))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--help` lists exactly the options the parser takes, short and long (tests/manual.rs checks the man page and
    /// the completions against `--help`).
    #[test]
    fn help_lists_the_options_the_parser_takes() {
        let help = String::from_utf8(help(b"grouptimeout")).unwrap();
        let mut listed = std::collections::BTreeSet::new();
        for line in help.lines().filter(|l| l.starts_with("  ")) {
            for word in line.split_whitespace() {
                let option = word.trim_end_matches(',').split('=').next().unwrap();
                if option.len() < 2 || !option.starts_with('-') {
                    break;
                }
                listed.insert(option.to_string());
            }
        }
        // Each option with an argument that suits both that take one (`1`: HUP, one second), then DURATION and
        // COMMAND.
        let takes = |option: &str| parse_args(&args(&[option, "1", "5", "true"])).is_ok();
        for option in &listed {
            assert!(
                takes(option),
                "--help lists {option}, which the parser refuses"
            );
        }
        for (name, _) in LONG_OPTIONS {
            assert!(
                listed.contains(&format!("--{name}")),
                "--help lacks --{name}"
            );
        }
        for letter in b'a'..=b'z' {
            let option = format!("-{}", char::from(letter));
            assert_eq!(takes(&option), listed.contains(&option), "{option}");
        }
        assert!(listed.len() >= 13, "{listed:?}");
    }

    #[test]
    fn no_panic_on_random_bytes() {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let alphabet = b"0123456789abcdefxXpPeE.+- \t()infatyINFsmhd\xff\xc3";
        for _ in 0..20_000 {
            let mut s = Vec::new();
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            for k in 0..(x % 12) {
                s.push(alphabet[usize::try_from((x >> (4 * k)) % alphabet.len() as u64).unwrap()]);
            }
            let _ = parse_duration(&s);
            let _ = parse_signal(&s);
            let arg: OsString = std::os::unix::ffi::OsStringExt::from_vec(s);
            let _ = parse_args(&[arg.clone(), arg]);
        }
    }

    fn args(list: &[&str]) -> Vec<OsString> {
        list.iter().map(OsString::from).collect()
    }

    fn run(list: &[&str]) -> Options {
        match parse_args(&args(list)) {
            Ok(Parsed::Run(o)) => o,
            other => panic!("{list:?}: {other:?}"),
        }
    }

    fn err(list: &[&str]) -> String {
        match parse_args(&args(list)) {
            Err(UsageError(m)) => String::from_utf8(m).unwrap(),
            other => panic!("{list:?}: {other:?}"),
        }
    }

    #[test]
    fn options() {
        let o = run(&["1", "true"]);
        assert_eq!(
            (o.signal, o.kill_after, o.duration),
            (libc::SIGTERM, None, Some(Duration::from_secs(1)))
        );
        assert_eq!(o.command, args(&["true"]));
        let o = run(&["-vpf", "-sKILL", "-k", "2", "--leave", "3", "cmd", "-v"]);
        assert!(o.verbose && o.preserve_status && o.foreground && o.leave_running);
        assert_eq!(
            (o.signal, o.kill_after),
            (libc::SIGKILL, Some(Duration::from_secs(2)))
        );
        assert_eq!(o.command, args(&["cmd", "-v"]));
        let o = run(&[
            "--sig=HUP",
            "--kill=1",
            "--pres",
            "--verb",
            "--fore",
            "--signal",
            "INT",
            "0",
            "x",
        ]);
        assert_eq!(
            (o.signal, o.kill_after, o.duration),
            (libc::SIGINT, Some(Duration::from_secs(1)), None)
        );
        assert!(o.preserve_status && o.verbose && o.foreground);
        let o = run(&["-k0", "--", "-0", "x"]);
        assert_eq!((o.kill_after, o.duration), (None, None));
        // Options end at the first operand.
        assert_eq!(run(&["1", "-v", "true"]).command, args(&["-v", "true"]));
        assert!(!run(&["1", "-v", "true"]).verbose);
        // `--s` is GNU's `--signal` still; `--st` is the tool's `--stats`.
        assert_eq!(run(&["--s=HUP", "1", "true"]).signal, libc::SIGHUP);
        let o = run(&["--st", "1", "true"]);
        assert!(o.stats && !o.verbose);
        assert_eq!(parse_args(&args(&["--help", "--bogus"])), Ok(Parsed::Help));
        assert_eq!(parse_args(&args(&["--vers"])), Ok(Parsed::Version));
    }

    #[test]
    fn quotes_like_gnu_in_the_c_locale() {
        for (arg, quoted) in [
            (&b"abc"[..], "'abc'"),
            (b"", "''"),
            (b"a'b", r"'a\'b'"),
            (b"''", r"'\'\''"),
            (b"a b", "'a b'"),
            (b"a\\b", r"'a\\b'"),
            (b"a\"$`~#?*", "'a\"$`~#?*'"),
            (b"\x07\x08\x0c\n\r\t\x0b", r"'\a\b\f\n\r\t\v'"),
            (b"\x01\x1b\x7f\x80\xff", r"'\001\033\177\200\377'"),
            ("é".as_bytes(), r"'\303\251'"),
        ] {
            assert_eq!(quote(arg), quoted, "{arg:?}");
        }
    }

    #[test]
    fn option_errors_show_the_option_as_given() {
        use std::os::unix::ffi::OsStringExt;
        let bytes = |list: &[&[u8]]| -> Vec<OsString> {
            list.iter()
                .map(|a| OsString::from_vec(a.to_vec()))
                .collect()
        };
        let usage = |list: &[&[u8]]| match parse_args(&bytes(list)) {
            Err(UsageError(message)) => message,
            other => panic!("{list:?}: {other:?}"),
        };
        assert_eq!(usage(&[b"-\xff"]), b"invalid option -- '\xff'");
        assert_eq!(usage(&[b"--a'\xff"]), b"unrecognized option '--a'\xff'");
        assert_eq!(usage(&[b"1\xff", b"x"]), b"invalid time interval '1\\377'");
        assert_eq!(
            usage(&[b"-s", b"a'", b"1", b"x"]),
            b"'a\\'': invalid signal"
        );
    }

    #[test]
    fn usage_errors() {
        assert_eq!(
            err(&["--ver"]),
            "option '--ver' is ambiguous; possibilities: '--verbose' '--version'"
        );
        assert_eq!(err(&["-x"]), "invalid option -- 'x'");
        assert_eq!(err(&["--foo=1"]), "unrecognized option '--foo=1'");
        assert_eq!(err(&["--signal"]), "option '--signal' requires an argument");
        assert_eq!(err(&["-s"]), "option requires an argument -- 's'");
        assert_eq!(
            err(&["--verbose=1"]),
            "option '--verbose' doesn't allow an argument"
        );
        assert_eq!(err(&["-s", "FOO", "1", "x"]), "'FOO': invalid signal");
        assert_eq!(err(&["abc", "true"]), "invalid time interval 'abc'");
        assert_eq!(
            err(&["-k", "-1", "1", "true"]),
            "invalid time interval '-1'"
        );
        assert_eq!(err(&[]), "missing operand");
        assert_eq!(err(&["1"]), "missing command after '1'");
        assert_eq!(err(&["-5", "true"]), "invalid option -- '5'");
        assert_eq!(err(&["--", "-5", "true"]), "invalid time interval '-5'");
        assert_eq!(err(&["-", "true"]), "invalid time interval '-'");
        assert_eq!(err(&["--=1"]), "unrecognized option '--=1'");
    }
}
