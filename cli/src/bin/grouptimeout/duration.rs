//! The DURATION grammar: C's `strtod` (decimal, hex floats, exponents, `inf`) with a suffix `s`, `m`, `h` or `d`.

use std::time::Duration;

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
    #[allow(
        clippy::cast_precision_loss,
        reason = "rounded to the 53 bits of a double, as strtod does"
    )]
    let mut value = mantissa as f64;
    let mut e = i32::try_from(exp2.clamp(-4000, 4000)).expect("clamped to a few thousand");
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
#[allow(
    clippy::option_option,
    reason = "invalid (None), no timeout (Some(None)) and a timeout are three answers"
)]
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
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "whole is in [0, 2^64) and nanos in [0, 1e9]: both fit"
)]
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

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(clippy::option_option, reason = "parse_duration's answer as it is")]
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
}
