//! The environment's locale as a locale object of its own (`newlocale(3)`, never `setlocale`: nothing process-wide
//! changes) behind `host::use_environment_charset`, its character set (`nl_langinfo_l(CODESET)`), and the C library's
//! `iswprint_l(3)` in it behind `host::is_printable`.

use std::ffi::CStr;
use std::sync::OnceLock;

/// Every category, as C's `LC_ALL` names them for `newlocale`: musl's mask is not in the `libc` crate (its categories
/// are the six of POSIX, bits 0 to 5 as there).
#[cfg(target_env = "musl")]
const ALL_CATEGORIES: libc::c_int = libc::LC_CTYPE_MASK
    | libc::LC_NUMERIC_MASK
    | libc::LC_TIME_MASK
    | libc::LC_COLLATE_MASK
    | libc::LC_MONETARY_MASK
    | libc::LC_MESSAGES_MASK;
#[cfg(not(target_env = "musl"))]
const ALL_CATEGORIES: libc::c_int = libc::LC_ALL_MASK;

extern "C" {
    /// C's `nl_langinfo_l(3)` (POSIX 2008), which the `libc` crate binds on some systems only (not on macOS, whose C
    /// library has it).
    fn nl_langinfo_l(item: libc::nl_item, locale: libc::locale_t) -> *mut libc::c_char;
}

#[cfg(any(target_os = "linux", target_os = "android"))]
extern "C" {
    /// C's `iswprint_l(3)` (POSIX 2008): the `libc` crate does not bind it. `wint_t` is a 32-bit integer on every Linux
    /// C library; `wchar_t` values are Unicode scalar values in a UTF-8 locale (glibc, musl, bionic).
    fn iswprint_l(wc: u32, locale: libc::locale_t) -> libc::c_int;
}

/// A locale object that this module made with `newlocale` and never frees nor passes to `newlocale` again, so that
/// it stays valid and unchanged for the life of the process.
struct Locale(libc::locale_t);

// SAFETY: the object is never changed or freed after it was made (see `Locale`); the C library's `_l` functions only
// read it, from any thread (POSIX 2008 makes them thread-safe, which is what locale objects are for).
unsafe impl Send for Locale {}
// SAFETY: as above.
unsafe impl Sync for Locale {}

/// The locale [`use_environment_ctype`] took (at its first call), `None` inside where the environment named a locale
/// this system lacks.
static TAKEN: OnceLock<Option<Locale>> = OnceLock::new();

/// Takes, at the first call, a locale object of the environment's locale, as C's `setlocale(LC_ALL, "")` would resolve
/// it (`LC_ALL`, then each category's variable, then `LANG`) but without changing the process's locale; returns its
/// character set's name (`nl_langinfo_l(CODESET)`: `UTF-8`, `ANSI_X3.4-1968`), or `None` when the environment names,
/// for any category, a locale this system lacks (then [`is_printable`] answers for "C"). Later calls answer from the
/// same object.
///
/// Thread-safe: `newlocale` reads the environment (`getenv`) and the locale files and returns a new object; nothing
/// process-wide changes. (It reads the environment as any C library call does, outside `std::env`'s lock: a
/// `std::env::set_var` in another thread meanwhile is what `set_var`'s own safety contract rules out.)
pub(crate) fn use_environment_ctype() -> Option<Vec<u8>> {
    let taken = TAKEN.get_or_init(|| {
        // SAFETY: a valid C string and a null base (a new object); newlocale returns null on failure, else an object
        // this process owns, which `Locale` keeps for good.
        let made = unsafe { libc::newlocale(ALL_CATEGORIES, c"".as_ptr(), std::ptr::null_mut()) };
        (!made.is_null()).then_some(Locale(made))
    });
    let locale = taken.as_ref()?;
    // SAFETY: `locale` is a valid object for good (see `Locale`); nl_langinfo_l returns a NUL-terminated string owned by
    // the C library, valid while the object is (it is copied at once), or null.
    let codeset = unsafe { nl_langinfo_l(libc::CODESET, locale.0) };
    if codeset.is_null() {
        return Some(Vec::new());
    }
    // SAFETY: non-null and NUL-terminated (above).
    Some(unsafe { CStr::from_ptr(codeset) }.to_bytes().to_vec())
}

/// Whether `c` is printable: on Linux, where [`use_environment_ctype`] took a locale, as its character
/// classification says (`iswprint_l`: the C library's tables, which know the characters of its Unicode version, an
/// unassigned one not printable); before that, or where it took none, as the C locale says (printable ASCII, space
/// to `~`). Elsewhere any character but a control character and the line and paragraph separators (U+2028, U+2029).
pub(crate) fn is_printable(c: char) -> bool {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        match TAKEN.get() {
            // SAFETY: `locale` is a valid object for good (see `Locale`); iswprint_l only reads it and its tables, and
            // any value is a valid argument.
            Some(Some(locale)) => unsafe { iswprint_l(u32::from(c), locale.0) != 0 },
            _ => c == ' ' || c.is_ascii_graphic(),
        }
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        !c.is_control() && c != '\u{2028}' && c != '\u{2029}'
    }
}
