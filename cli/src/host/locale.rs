//! The environment's character set, as a C program takes it, for messages that show arguments as GNU's do.

use crate::sys;

/// Takes the locale the environment names (`LC_ALL`, each category's variable, `LANG`, as C's `setlocale(LC_ALL, "")`
/// resolves them) as a locale object of this module's, and returns whether its character set is UTF-8.
///
/// For a program that quotes what it was given as GNU's programs do (`quote()`): in a UTF-8 locale GNU shows
/// printable characters as they are (`'10€'`, between `‘` and `’`), in the C locale as octal escapes. GNU decides
/// with `setlocale(LC_ALL, "")` and the locale's character set (`nl_langinfo(CODESET)`); this takes the same locale
/// with `newlocale` and asks its character set with `nl_langinfo_l`. A locale the system lacks
/// (`LANG=en_US.UTF-8` where only `C.UTF-8` is installed), or any category of the environment naming one
/// (`LC_TIME=xx_XX.UTF-8`), takes none, and the answer is "C"'s (`false`), as GNU's then.
///
/// # What changes
///
/// Only what [`is_printable`] answers for: the locale taken. Nothing process-wide: the process's locale (what
/// `setlocale` sets, and the C library's functions without `_l` use) stays as it was, "C" unless the program set it
/// itself, so the C library's messages (`strerror`, which `std::io::Error` shows) stay as they were. A command
/// spawned afterwards is not affected either (its locale comes from its environment).
///
/// The environment is read at the first call; later calls answer from the locale taken then, even if the
/// environment changed meanwhile.
///
/// # Threads
///
/// Safe to call from any thread, at any time, also while other threads run: it calls neither `setlocale` nor
/// `nl_langinfo`, only `newlocale` and `nl_langinfo_l`, which make and read an object of their own. Like any
/// C library function that reads the environment (`getenv`), it relies on no other thread changing the environment
/// meanwhile, which [`std::env::set_var`]'s own safety contract already rules out.
#[must_use = "the answer is what the call is for"]
pub fn use_environment_charset() -> bool {
    sys::use_environment_ctype().is_some_and(|codeset| codeset.eq_ignore_ascii_case(b"UTF-8"))
}

/// Whether `c` is a printable character in the locale that [`use_environment_charset`] took: on Linux the C
/// library's own tables (`iswprint_l`; an unassigned character of its Unicode version is not printable, U+200B and
/// the private-use characters are; musl's do not depend on the locale), as GNU's `quote()` asks them (`iswprint`);
/// elsewhere any character but a control character and the line and paragraph separators (U+2028, U+2029).
///
/// Before [`use_environment_charset`] was called, or where it took no locale, it answers for the C locale, whatever
/// the process's own locale is: on Linux then only printable ASCII (space to `~`) is printable.
///
/// Safe to call from any thread, at any time: it reads the locale object taken, never the process's locale.
#[must_use]
pub fn is_printable(c: char) -> bool {
    sys::is_printable(c)
}
