//! Command-line parsing for the `grouptimeout` tool: options, durations and signal names, by hand.
//!
//! Pure functions, no process state: everything here is unit-tested below.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::time::Duration;

/// The name used in messages.
pub const PROGRAM: &str = "grouptimeout";

/// What to run and how.
#[derive(Debug, Clone, PartialEq, Eq)]
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

/// The `--help` text.
pub const HELP: &str = "\
Usage: grouptimeout [OPTION]... DURATION COMMAND [ARG]...
Run COMMAND as the leader of a new process group; if it still runs after
DURATION, send it SIGNAL. On exit, nothing COMMAND started is left running.

  -s, --signal=SIGNAL      signal to send on timeout (default TERM): a name
                             like HUP, SIGTERM or RTMIN+2, or a number
  -k, --kill-after=DURATION  send KILL to the group if it still runs this long
                             after the first signal was sent
  -p, --preserve-status    exit with COMMAND's status even after a timeout
  -f, --foreground         keep COMMAND in this process group, so it can read
                             the terminal and get its signals; SIGNAL and KILL
                             then reach COMMAND only (on Linux the rest is
                             killed once COMMAND exits)
  -v, --verbose            report every signal sent, on stderr
      --leave-running      when COMMAND exits by itself, leave the processes
                             it started running (default: kill them)
      --help               display this help and exit
      --version            output version information and exit

DURATION is a floating-point number with an optional suffix: s (seconds, the
default), m (minutes), h (hours) or d (days). 0 means no timeout.

Signals TERM, INT, HUP, QUIT, USR1 and USR2 sent to grouptimeout are passed on
to the group (and start the --kill-after countdown), unless grouptimeout was
started with them ignored (nohup): then COMMAND inherits them ignored.
ALRM sent to grouptimeout means: time is up.

Exit status:
  124  COMMAND timed out (and --preserve-status was not given)
  125  grouptimeout itself failed (bad option, duration or signal)
  126  COMMAND was found but could not be run
  127  COMMAND was not found
  137  KILL had to be sent (128+9)
  -    otherwise COMMAND's status; if it died of a signal, grouptimeout
       ends with the same signal (core dumps off)
";

/// A long option: its name and whether it takes an argument.
const LONG_OPTIONS: &[(&str, bool)] = &[
    ("kill-after", true),
    ("signal", true),
    ("verbose", false),
    ("foreground", false),
    ("preserve-status", false),
    ("leave-running", false),
    ("help", false),
    ("version", false),
];

/// Quotes an argument for a message: `'text'` (invalid UTF-8 shown lossily).
pub fn quote(arg: &[u8]) -> String {
    format!("'{}'", String::from_utf8_lossy(arg))
}

/// Parses the arguments after the program name, GNU `getopt_long` style with `+` (options end at the first
/// operand): short options may be clustered (`-vk1`), long ones abbreviated to any unambiguous prefix.
///
/// # Errors
///
/// A usage error with GNU's wording.
pub fn parse_args(args: &[OsString]) -> Result<Parsed, UsageError> {
    let mut opts = Options {
        signal: libc::SIGTERM,
        kill_after: None,
        preserve_status: false,
        foreground: false,
        verbose: false,
        leave_running: false,
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
                        return Err(UsageError(format!(
                            "option '--{long}' requires an argument"
                        )))
                    }
                },
                (false, Some(_)) => {
                    return Err(UsageError(format!(
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
                            return Err(UsageError(format!(
                                "option requires an argument -- '{}'",
                                c as char
                            )));
                        };
                        if c == b'k' {
                            opts.kill_after = option_duration(value)?;
                        } else {
                            opts.signal = option_signal(value)?;
                        }
                        break;
                    }
                    _ => {
                        let shown = String::from_utf8_lossy(&arg[j - 1..j]).into_owned();
                        return Err(UsageError(format!("invalid option -- '{shown}'")));
                    }
                }
            }
        } else {
            i -= 1;
            break;
        }
    }
    let operands = &args[i..];
    if operands.len() < 2 {
        return Err(UsageError(if operands.is_empty() {
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
    match candidates[..] {
        [&(long, takes)] => Ok((long, takes)),
        [] => Err(UsageError(format!("unrecognized option {}", quote(arg)))),
        _ => {
            let list: Vec<String> = candidates.iter().map(|(l, _)| format!("'--{l}'")).collect();
            Err(UsageError(format!(
                "option '--{}' is ambiguous; possibilities: {}",
                String::from_utf8_lossy(name),
                list.join(" ")
            )))
        }
    }
}

fn option_duration(arg: &[u8]) -> Result<Option<Duration>, UsageError> {
    parse_duration(arg).ok_or_else(|| UsageError(format!("invalid time interval {}", quote(arg))))
}

fn option_signal(arg: &[u8]) -> Result<i32, UsageError> {
    parse_signal(arg).ok_or_else(|| UsageError(format!("{}: invalid signal", quote(arg))))
}

// ---------------------------------------------------------------------------------------------------------------
// Durations
// ---------------------------------------------------------------------------------------------------------------

/// A number as C's `strtod` reads it: its value, whether it had a minus sign, whether any digit of its mantissa
/// was non-zero (so that a value that underflowed to 0 is known to be positive), and how many bytes it used.
#[derive(Debug, Clone, Copy, PartialEq)]
struct CNumber {
    value: f64,
    negative: bool,
    nonzero: bool,
    len: usize,
}

/// Reads the longest prefix of `s` that C's `strtod` in the C locale would convert: leading white space, a sign,
/// then `inf`/`infinity`/`nan[(…)]` (any case), a hexadecimal float (`0x1.8p3`), or a decimal one (`1.5e-3`).
/// `None` when there is no number at all.
fn strtod_prefix(s: &[u8]) -> Option<CNumber> {
    let mut i = s
        .iter()
        .take_while(|&&b| matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'))
        .count();
    let negative = s.get(i) == Some(&b'-');
    if matches!(s.get(i), Some(b'+' | b'-')) {
        i += 1;
    }
    let rest = &s[i..];
    let starts_ci =
        |word: &[u8]| rest.len() >= word.len() && rest[..word.len()].eq_ignore_ascii_case(word);
    let number = |value: f64, nonzero: bool, len: usize| CNumber {
        value: if negative { -value } else { value },
        negative,
        nonzero,
        len: i + len,
    };
    if starts_ci(b"infinity") {
        return Some(number(f64::INFINITY, true, 8));
    }
    if starts_ci(b"inf") {
        return Some(number(f64::INFINITY, true, 3));
    }
    if starts_ci(b"nan") {
        let mut len = 3;
        if rest.get(3) == Some(&b'(') {
            let inner = rest[4..]
                .iter()
                .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
                .count();
            if rest.get(4 + inner) == Some(&b')') {
                len = 4 + inner + 1;
            }
        }
        return Some(number(f64::NAN, false, len));
    }
    if starts_ci(b"0x") {
        let after = &rest[2..];
        let starts_hex = after.first().is_some_and(u8::is_ascii_hexdigit)
            || (after.first() == Some(&b'.') && after.get(1).is_some_and(u8::is_ascii_hexdigit));
        if starts_hex {
            let (value, nonzero, len) = hex_float(after);
            return Some(number(value, nonzero, 2 + len));
        }
        // "0x" without hex digits: strtod reads just the "0".
        return Some(number(0.0, false, 1));
    }
    let int_digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    let mut len = int_digits;
    let mut frac_digits = 0;
    if rest.get(len) == Some(&b'.') {
        frac_digits = rest[len + 1..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        if int_digits + frac_digits > 0 {
            len += 1 + frac_digits;
        }
    }
    if int_digits + frac_digits == 0 {
        return None;
    }
    let mantissa = &rest[..len];
    len += exponent_len(&rest[len..], b'e');
    let nonzero = mantissa.iter().any(|b| (b'1'..=b'9').contains(b));
    // The slice is ASCII digits, '.', 'e' and signs in a form Rust's correctly rounded parser accepts.
    let value = std::str::from_utf8(&rest[..len])
        .ok()
        .and_then(|t| t.parse::<f64>().ok())?;
    Some(number(value, nonzero, len))
}

/// The length of an exponent part (`e-12`, `p+3`) at the start of `s`, or 0 when there is no complete one.
fn exponent_len(s: &[u8], letter: u8) -> usize {
    if !s.first().is_some_and(|b| b.eq_ignore_ascii_case(&letter)) {
        return 0;
    }
    let sign = usize::from(matches!(s.get(1), Some(b'+' | b'-')));
    let digits = s[1 + sign..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    if digits == 0 {
        0
    } else {
        1 + sign + digits
    }
}

/// Reads a hexadecimal float after its `0x` (which the caller checked is followed by a hex digit, or by `.` and a
/// hex digit): `(value, nonzero mantissa, length)`. Rounds to nearest; only results in the subnormal range may be
/// rounded twice.
fn hex_float(s: &[u8]) -> (f64, bool, usize) {
    let mut mantissa: u64 = 0;
    let mut exp2: i64 = 0;
    let mut sticky = false;
    let mut nonzero = false;
    let mut seen_point = false;
    let mut len = 0;
    for &b in s {
        if b == b'.' && !seen_point {
            seen_point = true;
        } else if let Some(d) = (b as char).to_digit(16) {
            nonzero |= d != 0;
            if mantissa < 1 << 60 {
                mantissa = mantissa * 16 + u64::from(d);
                if seen_point {
                    exp2 -= 4;
                }
            } else {
                sticky |= d != 0;
                if !seen_point {
                    exp2 += 4;
                }
            }
        } else {
            break;
        }
        len += 1;
    }
    let elen = exponent_len(&s[len..], b'p');
    if elen > 0 {
        let digits = &s[len + 1..len + elen];
        let (negative, digits) = match digits.first() {
            Some(b'-') => (true, &digits[1..]),
            Some(b'+') => (false, &digits[1..]),
            _ => (false, digits),
        };
        let mut e: i64 = 0;
        for &d in digits {
            e = (e * 10 + i64::from(d - b'0')).min(1 << 40);
        }
        exp2 += if negative { -e } else { e };
        len += elen;
    }
    if mantissa == 0 {
        return (0.0, nonzero, len);
    }
    if sticky {
        // Below the 53 bits a double keeps: only breaks ties the right way.
        mantissa |= 1;
    }
    let mut value = mantissa as f64;
    let mut e = exp2.clamp(-4000, 4000) as i32;
    while e > 1000 {
        value *= 2f64.powi(1000);
        e -= 1000;
    }
    while e < -1000 {
        value *= 2f64.powi(-1000);
        e += 1000;
    }
    (value * 2f64.powi(e), nonzero, len)
}

/// Parses a DURATION as GNU `timeout` does: a `strtod` number (C locale) and at most one suffix character
/// `s`, `m`, `h` or `d`. Returns `Some(None)` for "no timeout" (0, or too large to represent), `Some(Some(d))`
/// for a timeout (a positive value too small to represent is rounded up to 1 ns), and `None` for an invalid
/// duration (no number, trailing garbage, NaN, negative).
///
/// Differences from GNU 9.1: a literal that underflows (`1e-400`) is positive, so it times out at once, where GNU
/// reads it as 0 (no timeout); a negative one (`-1e-400`) is rejected, where GNU accepts it as 0. `-0` is accepted
/// as 0 by both.
pub fn parse_duration(s: &[u8]) -> Option<Option<Duration>> {
    let number = strtod_prefix(s)?;
    let suffix = &s[number.len..];
    if suffix.len() > 1 {
        return None;
    }
    let multiplier = match suffix.first() {
        None | Some(b's') => 1.0,
        Some(b'm') => 60.0,
        Some(b'h') => 3600.0,
        Some(b'd') => 86400.0,
        Some(_) => return None,
    };
    if number.value.is_nan() || number.value < 0.0 || (number.negative && number.nonzero) {
        return None;
    }
    let seconds = number.value * multiplier;
    if seconds == 0.0 {
        return Some(number.nonzero.then_some(Duration::from_nanos(1)));
    }
    Some(seconds_to_duration(seconds))
}

/// Converts positive seconds to a `Duration`, rounding up to whole nanoseconds (at least 1); `None` when too large.
fn seconds_to_duration(seconds: f64) -> Option<Duration> {
    // 2^64: the first value whose whole seconds do not fit a u64.
    if seconds.is_nan() || seconds >= 18_446_744_073_709_551_616.0 {
        return None;
    }
    let whole = seconds.floor();
    let nanos = ((seconds - whole) * 1e9).ceil();
    let (mut secs, mut nanos) = (whole as u64, nanos as u32);
    if nanos >= 1_000_000_000 {
        nanos = 0;
        secs = secs.checked_add(1)?;
    }
    let d = Duration::new(secs, nanos);
    Some(if d.is_zero() {
        Duration::from_nanos(1)
    } else {
        d
    })
}

// ---------------------------------------------------------------------------------------------------------------
// Signals
// ---------------------------------------------------------------------------------------------------------------

/// Signal names in the order GNU prefers when naming a number (so 6 is ABRT, 29 is POLL).
const SIGNALS: &[(&str, i32)] = &[
    ("HUP", libc::SIGHUP),
    ("INT", libc::SIGINT),
    ("QUIT", libc::SIGQUIT),
    ("ILL", libc::SIGILL),
    ("TRAP", libc::SIGTRAP),
    ("ABRT", libc::SIGABRT),
    ("IOT", libc::SIGABRT),
    ("BUS", libc::SIGBUS),
    ("FPE", libc::SIGFPE),
    ("KILL", libc::SIGKILL),
    ("USR1", libc::SIGUSR1),
    ("SEGV", libc::SIGSEGV),
    ("USR2", libc::SIGUSR2),
    ("PIPE", libc::SIGPIPE),
    ("ALRM", libc::SIGALRM),
    ("TERM", libc::SIGTERM),
    #[cfg(any(target_os = "linux", target_os = "android"))]
    ("STKFLT", libc::SIGSTKFLT),
    ("CHLD", libc::SIGCHLD),
    ("CLD", libc::SIGCHLD),
    ("CONT", libc::SIGCONT),
    ("STOP", libc::SIGSTOP),
    ("TSTP", libc::SIGTSTP),
    ("TTIN", libc::SIGTTIN),
    ("TTOU", libc::SIGTTOU),
    ("URG", libc::SIGURG),
    ("XCPU", libc::SIGXCPU),
    ("XFSZ", libc::SIGXFSZ),
    ("VTALRM", libc::SIGVTALRM),
    ("PROF", libc::SIGPROF),
    ("WINCH", libc::SIGWINCH),
    #[cfg(any(target_os = "linux", target_os = "android"))]
    ("POLL", libc::SIGPOLL),
    ("IO", libc::SIGIO),
    #[cfg(any(target_os = "linux", target_os = "android"))]
    ("PWR", libc::SIGPWR),
    ("SYS", libc::SIGSYS),
];

/// The real-time signal range, `None` where there is none.
fn realtime_range() -> Option<(i32, i32)> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        Some((libc::SIGRTMIN(), libc::SIGRTMAX()))
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        None
    }
}

/// Whether `n` is 0 or a signal this system has a name for.
fn is_known_signal(n: i32) -> bool {
    n == 0
        || SIGNALS.iter().any(|&(_, s)| s == n)
        || realtime_range().is_some_and(|(min, max)| (min..=max).contains(&n))
}

/// GNU's name for signal `n`: `EXIT` for 0, `TERM`, `RTMIN+2`, `RTMAX-1`…, or the number.
pub fn signal_name(n: i32) -> String {
    if n == 0 {
        return "EXIT".to_string();
    }
    if let Some(&(name, _)) = SIGNALS.iter().find(|&&(_, s)| s == n) {
        return name.to_string();
    }
    if let Some((min, max)) = realtime_range().filter(|(min, max)| (*min..=*max).contains(&n)) {
        return if n <= min + (max - min) / 2 {
            if n == min {
                "RTMIN".into()
            } else {
                format!("RTMIN+{}", n - min)
            }
        } else if n == max {
            "RTMAX".into()
        } else {
            format!("RTMAX{}", n - max)
        };
    }
    n.to_string()
}

/// Parses a signal as GNU `timeout` does: a name in any case, with or without `SIG` (`TERM`, `sigkill`, `CLD`,
/// `RTMIN+2`, `RTMIN2`, `RTMAX-1`, `EXIT` for 0), or a decimal number of a known signal or 0. A number 128+N is
/// read as signal N (an exit status, as `kill -l` takes it). `None` for anything else.
///
/// Difference from GNU 9.1: GNU also maps larger numbers through a bit mask (265 and 393 are KILL, 256 is 0);
/// we reject those.
pub fn parse_signal(s: &[u8]) -> Option<i32> {
    let n = if s.first().is_some_and(u8::is_ascii_digit) {
        let n = decimal(s)?;
        if (128..=192).contains(&n) && !is_known_signal(n) {
            n - 128
        } else {
            n
        }
    } else {
        let upper = s.to_ascii_uppercase();
        signal_by_name(&upper).or_else(|| upper.strip_prefix(b"SIG").and_then(signal_by_name))?
    };
    is_known_signal(n).then_some(n)
}

/// A string of decimal digits and nothing else, as an `i32`.
fn decimal(s: &[u8]) -> Option<i32> {
    if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    s.iter().try_fold(0i32, |n, &d| {
        n.checked_mul(10)?.checked_add(i32::from(d - b'0'))
    })
}

/// An upper-case name (without `SIG`), or digits up to 64, as a signal number (not yet checked to exist).
fn signal_by_name(name: &[u8]) -> Option<i32> {
    if name.first().is_some_and(u8::is_ascii_digit) {
        return decimal(name).filter(|&n| n <= 64);
    }
    if name == b"EXIT" {
        return Some(0);
    }
    if let Some(&(_, n)) = SIGNALS.iter().find(|(s, _)| s.as_bytes() == name) {
        return Some(n);
    }
    let (min, max) = realtime_range()?;
    if let Some(rest) = name.strip_prefix(b"RTMIN") {
        let offset = strtol_whole(rest)?;
        return (0..=i64::from(max - min))
            .contains(&offset)
            .then(|| min + offset as i32);
    }
    if let Some(rest) = name.strip_prefix(b"RTMAX") {
        let offset = strtol_whole(rest)?;
        return (i64::from(min - max)..=0)
            .contains(&offset)
            .then(|| max + offset as i32);
    }
    None
}

/// What C's `strtol(s, &end, 10)` returns when it must use all of `s` (`*end == 0`): empty is 0; otherwise
/// optional white space, an optional sign and at least one digit.
fn strtol_whole(s: &[u8]) -> Option<i64> {
    if s.is_empty() {
        return Some(0);
    }
    let s = &s[s
        .iter()
        .take_while(|b| matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'))
        .count()..];
    let (negative, digits) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let n = i64::from(decimal(digits)?);
    Some(if negative { -n } else { n })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dur(s: &str) -> Option<Option<Duration>> {
        parse_duration(s.as_bytes())
    }

    #[test]
    fn durations_like_gnu() {
        let secs = |s: f64| Some(Some(Duration::from_secs_f64(s)));
        assert_eq!(dur("1"), secs(1.0));
        assert_eq!(dur("1.5"), secs(1.5));
        assert_eq!(dur(".5s"), secs(0.5));
        assert_eq!(dur("5."), secs(5.0));
        assert_eq!(dur("2m"), secs(120.0));
        assert_eq!(dur("1.5h"), secs(5400.0));
        assert_eq!(dur("1d"), secs(86400.0));
        assert_eq!(dur("1e1"), secs(10.0));
        assert_eq!(dur("1E+1s"), secs(10.0));
        assert_eq!(dur("+3"), secs(3.0));
        assert_eq!(dur(" \t3"), secs(3.0));
        assert_eq!(dur("0x10"), secs(16.0));
        assert_eq!(dur("0x1p3"), secs(8.0));
        assert_eq!(dur("0X.8P1m"), secs(60.0));
        assert_eq!(dur("0x1.8"), secs(1.5));
        // No timeout: zero, -0, infinity, overflow.
        for s in [
            "0", "0.0", "-0", "0x0", "0d", "inf", "INFINITY", "infs", "1e309", "1e308d", "0x1p1024",
        ] {
            assert_eq!(dur(s), Some(None), "{s}");
        }
        // Tiny positive values still time out.
        for s in ["1e-10", "1e-400", "0x1p-2000", "4e-324"] {
            assert_eq!(dur(s), Some(Some(Duration::from_nanos(1))), "{s}");
        }
        assert_eq!(dur("1.0000000001"), Some(Some(Duration::new(1, 1))));
        for s in [
            "", " ", "s", ".", "-1", "-0.5", "-1e-400", "nan", "NaN", "nan(1)", "-inf", "1x",
            "1ss", "1 ", "1e", "1e+", "0x", "0xs", "0x1p", "infinit", "1,5", "1.5.", "--1", "+-1",
            "1e5ms", "\u{e9}",
        ] {
            assert_eq!(dur(s), None, "{s:?}");
        }
    }

    #[test]
    fn huge_mantissas_and_exponents() {
        let long = format!("{}e-495", "1".repeat(500));
        assert_eq!(dur(&long).unwrap().unwrap().as_secs(), 11111);
        assert_eq!(dur(&format!("{}e-400", "1".repeat(500))), Some(None));
        assert_eq!(dur("1e99999999999999999999999"), Some(None));
        assert_eq!(
            dur("0x1p-99999999999999999999999"),
            Some(Some(Duration::from_nanos(1)))
        );
        assert_eq!(
            dur(&format!("0x{}p-4000", "f".repeat(300))),
            Some(Some(Duration::from_nanos(1)))
        );
    }

    #[test]
    fn signals_like_gnu() {
        let sig = |s: &str| parse_signal(s.as_bytes());
        assert_eq!(sig("TERM"), Some(libc::SIGTERM));
        assert_eq!(sig("sigterm"), Some(libc::SIGTERM));
        assert_eq!(sig("Kill"), Some(libc::SIGKILL));
        assert_eq!(sig("CLD"), Some(libc::SIGCHLD));
        assert_eq!(sig("9"), Some(9));
        assert_eq!(sig("09"), Some(9));
        assert_eq!(sig("0"), Some(0));
        assert_eq!(sig("EXIT"), Some(0));
        assert_eq!(sig("sig0"), Some(0));
        assert_eq!(sig("SIG9"), Some(9));
        assert_eq!(sig("137"), Some(9));
        assert_eq!(sig("128"), Some(0));
        let (min, max) = realtime_range().unwrap();
        assert_eq!(sig("RTMIN"), Some(min));
        assert_eq!(sig("rtmin+2"), Some(min + 2));
        assert_eq!(sig("RTMIN2"), Some(min + 2));
        assert_eq!(sig("RTMAX"), Some(max));
        assert_eq!(sig("SIGRTMAX-1"), Some(max - 1));
        assert_eq!(sig("RTMAX-0"), Some(max));
        for s in [
            "",
            "SIG",
            "FOO",
            "+9",
            " 9",
            "9 ",
            "-9",
            "65",
            "32",
            "33",
            "127",
            "255",
            "265",
            "99999999999",
            "RTMIN+",
            "RTMIN-1",
            "RTMAX+1",
            "RTMAX1",
            "SIG137",
            "0x9",
            "UNUSED",
            "EMT",
        ] {
            assert_eq!(sig(s), None, "{s:?}");
        }
    }

    #[test]
    fn signal_names_like_gnu() {
        assert_eq!(signal_name(0), "EXIT");
        assert_eq!(signal_name(libc::SIGTERM), "TERM");
        assert_eq!(signal_name(libc::SIGABRT), "ABRT");
        assert_eq!(signal_name(libc::SIGIO), "POLL");
        let (min, max) = realtime_range().unwrap();
        assert_eq!(signal_name(min), "RTMIN");
        assert_eq!(signal_name(min + 2), "RTMIN+2");
        assert_eq!(signal_name(max), "RTMAX");
        assert_eq!(signal_name(max - 14), "RTMAX-14");
        for n in 0..=64 {
            if is_known_signal(n) {
                assert_eq!(parse_signal(signal_name(n).as_bytes()), Some(n), "{n}");
            }
        }
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
                s.push(alphabet[((x >> (4 * k)) % alphabet.len() as u64) as usize]);
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
            Err(UsageError(m)) => m,
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
        assert_eq!(parse_args(&args(&["--help", "--bogus"])), Ok(Parsed::Help));
        assert_eq!(parse_args(&args(&["--vers"])), Ok(Parsed::Version));
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
