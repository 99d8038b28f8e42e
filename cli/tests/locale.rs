//! `host::use_environment_charset` and `host::is_printable` (issue 42.8): the environment's locale is taken as a locale
//! object of the crate's own, so that both are safe to call while other threads run. Nothing process-wide changes
//! (the process's locale stays as it was), and `is_printable` answers for the locale taken, never for the process's.
//! Each case runs in a child process of this test binary (the locale is taken once per process), with the locale
//! variables it names and no others.
#![cfg(unix)]

use std::ffi::CStr;
use std::process::Command;

use grouptimeout_cli::host;

mod common;

/// Set in the child process that runs a case.
const CHILD: &str = "GROUPTIMEOUT_TEST_LOCALE_CHILD";

/// Whether this system has the `C.UTF-8` locale (musl takes any name; glibc needs it installed). Otherwise `test` is
/// skipped (see `common::skip_or_fail`).
fn have_c_utf8(test: &str) -> bool {
    let have = cfg!(target_env = "musl")
        || Command::new("locale").arg("-a").output().is_ok_and(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .any(|l| l.eq_ignore_ascii_case("c.utf8"))
        });
    if !have {
        common::skip_or_fail(test, "no C.UTF-8 locale (locale -a)");
    }
    have
}

/// In this test binary's parent run: runs `test` again alone in a child process (on its main thread) with the
/// locale variables `vars` and no others, asserts that it passed, and returns `true`. In the child: `false`, and the
/// test goes on to its case.
fn in_child(test: &str, vars: &[(&str, &str)]) -> bool {
    if std::env::var_os(CHILD).is_some() {
        return false;
    }
    let mut child = Command::new(std::env::current_exe().unwrap());
    child
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(CHILD, "1");
    for var in [
        "LC_ALL",
        "LC_CTYPE",
        "LC_MESSAGES",
        "LC_TIME",
        "LANG",
        "LANGUAGE",
    ] {
        child.env_remove(var);
    }
    let out = child.envs(vars.iter().copied()).output().unwrap();
    // The case ran (a name that matched nothing would pass too).
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("1 passed"),
        "{test} {vars:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    true
}

/// The process's locale for `category` (`setlocale(category, NULL)`).
fn process_locale(category: libc::c_int) -> String {
    // SAFETY: a null locale only queries; the string returned is copied at once, on the case's only thread.
    let name = unsafe { libc::setlocale(category, std::ptr::null()) };
    assert!(!name.is_null());
    // SAFETY: non-null and NUL-terminated, owned by the C library until the next setlocale.
    unsafe { CStr::from_ptr(name) }
        .to_string_lossy()
        .into_owned()
}

#[test]
fn the_environments_charset_is_taken_without_changing_the_process_locale() {
    let test = "the_environments_charset_is_taken_without_changing_the_process_locale";
    if !have_c_utf8(test) || in_child(test, &[("LC_ALL", "C.UTF-8")]) {
        return;
    }
    // Before: the C locale's answers.
    assert!(host::is_printable('a') && host::is_printable(' '));
    assert!(!host::is_printable('é') && !host::is_printable('\u{7}'));
    assert!(host::use_environment_charset());
    // The process's locale is still C in every category (before the change, LC_CTYPE was now C.UTF-8).
    assert_eq!(process_locale(libc::LC_CTYPE), "C");
    assert_eq!(process_locale(libc::LC_ALL), "C");
    // `is_printable` answers for the locale taken.
    assert!(host::is_printable('é') && host::is_printable('€') && host::is_printable('a'));
    assert!(!host::is_printable('\u{7}') && !host::is_printable('\u{85}'));
    if cfg!(target_env = "gnu") {
        // glibc's tables: an unassigned character is not printable (musl's do not know it).
        assert!(!host::is_printable('\u{378}'));
    }
    // Taken once: a second call answers the same.
    assert!(host::use_environment_charset());
}

#[test]
fn is_printable_answers_for_the_locale_taken_not_the_processs() {
    let test = "is_printable_answers_for_the_locale_taken_not_the_processs";
    if !have_c_utf8(test) || in_child(test, &[("LC_ALL", "C.UTF-8")]) {
        return;
    }
    // The program sets its own locale to the environment's (UTF-8); no locale was taken through `host`, so
    // `is_printable` still answers for C (before the change it asked `iswprint`, which follows the process's locale).
    // SAFETY: a valid C string, on the case's only thread.
    let set = unsafe { libc::setlocale(libc::LC_ALL, c"".as_ptr()) };
    assert!(!set.is_null());
    assert_eq!(process_locale(libc::LC_CTYPE), "C.UTF-8");
    assert!(!host::is_printable('é'));
    assert!(host::is_printable('a'));
}

#[test]
fn a_missing_locale_of_any_category_takes_none() {
    let test = "a_missing_locale_of_any_category_takes_none";
    // musl takes any name (a missing one is C.UTF-8 by that name), glibc refuses it, as its setlocale does.
    if cfg!(target_env = "musl")
        || !have_c_utf8(test)
        || in_child(test, &[("LANG", "C.UTF-8"), ("LC_TIME", "xx_XX.UTF-8")])
    {
        return;
    }
    assert!(!host::use_environment_charset());
    assert!(!host::is_printable('é'));
    assert_eq!(process_locale(libc::LC_CTYPE), "C");
}
