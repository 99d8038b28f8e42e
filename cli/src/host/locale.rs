//! The environment's character set, as a C program takes it, for messages that show arguments as GNU's do.

use crate::sys;

/// Takes the character classification (`LC_CTYPE`) of the locale the environment names (`LC_ALL`, `LC_CTYPE`,
/// `LANG`, as C's `setlocale(LC_ALL, "")` resolves them), and returns whether its character set is UTF-8.
///
/// For a program that quotes what it was given as GNU's programs do (`quote()`): in a UTF-8 locale GNU shows
/// printable characters as they are (`'10€'`, between `‘` and `’`), in the C locale as octal escapes. GNU decides
/// with `setlocale(LC_ALL, "")` and the locale's character set (`nl_langinfo(CODESET)`); so does this. A locale
/// the system lacks (`LANG=en_US.UTF-8` where only `C.UTF-8` is installed), or any category of the environment
/// naming one (`LC_TIME=xx_XX.UTF-8`), makes the whole call fail, and the locale stays "C" (`false`), as GNU's then.
///
/// # What changes
///
/// Process-wide, and only the character classification: the other categories are set back to "C", so that the C
/// library's messages (`strerror`, which `std::io::Error` shows) stay English and nothing else of the program
/// changes. [`is_printable`] then answers for this locale. A command spawned afterwards is not affected (its locale
/// comes from its environment).
///
/// # What is not guaranteed
///
/// `setlocale` is not thread-safe: call it before any other thread runs (at the start of `main`).
#[must_use = "the answer is what the call is for"]
pub fn use_environment_charset() -> bool {
    sys::use_environment_ctype().is_some_and(|codeset| codeset.eq_ignore_ascii_case(b"UTF-8"))
}

/// Whether `c` is a printable character (`iswprint`) in the locale that [`use_environment_charset`] took: on Linux
/// the C library's own tables (an unassigned character of its Unicode version is not printable; U+200B and the
/// private-use characters are), as GNU's `quote()` asks them; elsewhere any character but a control character and
/// the line and paragraph separators (U+2028, U+2029).
///
/// Before [`use_environment_charset`] (or when it answered `false`) the locale is "C": on Linux then only
/// printable ASCII is printable.
#[must_use]
pub fn is_printable(c: char) -> bool {
    sys::is_printable(c)
}
