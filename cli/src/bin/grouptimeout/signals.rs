//! Signal names and numbers, as GNU `timeout` reads and prints them.

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
#[cfg_attr(
    any(target_os = "linux", target_os = "android"),
    allow(
        clippy::unnecessary_wraps,
        reason = "None on the systems without real-time signals"
    )
)]
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

/// Whether `signal` stops a process by default (`STOP`, `TSTP`, `TTIN`, `TTOU`).
pub fn is_stop_signal(signal: i32) -> bool {
    [libc::SIGSTOP, libc::SIGTSTP, libc::SIGTTIN, libc::SIGTTOU].contains(&signal)
}

/// Whether `signal`'s default action ends a process: every signal but the stops and those ignored by default
/// (`CHLD`, `CONT`, `URG`, `WINCH`).
pub fn terminates_by_default(signal: i32) -> bool {
    !is_stop_signal(signal)
        && ![libc::SIGCHLD, libc::SIGCONT, libc::SIGURG, libc::SIGWINCH].contains(&signal)
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
        let offset = i32::try_from(strtol_whole(rest)?).ok()?;
        return (0..=max - min).contains(&offset).then(|| min + offset);
    }
    if let Some(rest) = name.strip_prefix(b"RTMAX") {
        let offset = i32::try_from(strtol_whole(rest)?).ok()?;
        return (min - max..=0).contains(&offset).then(|| max + offset);
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
}
