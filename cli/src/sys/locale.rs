//! The environment's locale: `setlocale(3)` and `nl_langinfo(CODESET)` behind `host::use_environment_charset`,
//! and the C library's `iswprint(3)` behind `host::is_printable`.

use std::ffi::CStr;

/// Takes the environment's locale for the character classification only (`LC_CTYPE`), if the whole of it can be
/// had as C's `setlocale(LC_ALL, "")` takes it; returns the character set's name then (`nl_langinfo(CODESET)`:
/// `UTF-8`, `ANSI_X3.4-1968`), or `None` when the environment names a locale this system lacks (the locale stays
/// "C", as a C program's does then).
///
/// Not thread-safe (as `setlocale` itself): call it before any thread is started.
pub(crate) fn use_environment_ctype() -> Option<Vec<u8>> {
    let empty = c"";
    // SAFETY: a valid C string; setlocale only changes the process's locale (no thread runs yet, see above).
    if unsafe { libc::setlocale(libc::LC_ALL, empty.as_ptr()) }.is_null() {
        return None;
    }
    // Everything back to "C" but the character classification: messages (`strerror`) stay English, numbers and
    // times as C's.
    // SAFETY: valid C strings, as above; both locales exist (the first call succeeded with the environment's).
    unsafe {
        libc::setlocale(libc::LC_ALL, c"C".as_ptr());
        libc::setlocale(libc::LC_CTYPE, empty.as_ptr());
    }
    // SAFETY: nl_langinfo returns a pointer to a NUL-terminated string owned by the C library, valid until the next
    // setlocale (it is copied at once).
    let codeset = unsafe { libc::nl_langinfo(libc::CODESET) };
    if codeset.is_null() {
        return Some(Vec::new());
    }
    // SAFETY: non-null and NUL-terminated (above).
    Some(unsafe { CStr::from_ptr(codeset) }.to_bytes().to_vec())
}

#[cfg(any(target_os = "linux", target_os = "android"))]
extern "C" {
    /// C's `iswprint(3)`: the `libc` crate does not bind it. `wint_t` is a 32-bit integer on every Linux C library;
    /// `wchar_t` values are Unicode scalar values in a UTF-8 locale (glibc, musl, bionic).
    fn iswprint(wc: u32) -> libc::c_int;
}

/// Whether the locale's character classification calls `c` printable (`iswprint`): on Linux the C library's tables,
/// which know the characters of its Unicode version (an unassigned one is not printable); elsewhere any character
/// but a control character and the line and paragraph separators (U+2028, U+2029).
pub(crate) fn is_printable(c: char) -> bool {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        // SAFETY: iswprint only reads the locale's tables; any value is a valid argument.
        unsafe { iswprint(u32::from(c)) != 0 }
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    {
        !c.is_control() && c != '\u{2028}' && c != '\u{2029}'
    }
}
