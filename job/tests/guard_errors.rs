//! Issue 24.4: the errors of `die_with_parent` keep the OS error number where a system call failed. The scenario runs
//! in this test binary, re-run under `prlimit` with 4 to 15 descriptors, so that the guard's pipe or its spawn fails
//! for want of one (`EMFILE`); the error must then be that OS error itself, not a message that only names it.
#![cfg(unix)]

mod common;

use std::process::{Command, Stdio};

use grouptimeout::GroupCommandExt;
use grouptimeout_job::JobChildExt as _;

const SCENARIO: &str = "GROUPTIMEOUT_TEST_GUARD_ERRORS";

/// One line per run: `spawn-failed`, `guarded`, or `error <raw_os_error> <message>`.
fn scenario() {
    let child = Command::new("sleep")
        .arg("30")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn_group();
    let Ok(mut child) = child else {
        println!("RESULT spawn-failed");
        return;
    };
    match child.die_with_parent() {
        Ok(()) => println!("RESULT guarded"),
        Err(e) => println!("RESULT error {:?} {e}", e.raw_os_error()),
    }
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn guard_errors_keep_the_os_error() {
    let test = "guard_errors_keep_the_os_error";
    if std::env::var_os(SCENARIO).is_some() {
        scenario();
        return;
    }
    if !common::have(test, "prlimit", "--version") {
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let mut emfile = 0;
    let mut results = Vec::new();
    for fds in 4..16 {
        let out = Command::new("prlimit")
            .arg(format!("--nofile={fds}"))
            .arg(&exe)
            .args(["--exact", test, "--nocapture", "--test-threads=1"])
            .env(SCENARIO, "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        // libtest writes `test NAME ... ` on the same line first.
        let Some(result) = stdout
            .lines()
            .find_map(|l| l.split_once("RESULT ").map(|(_, r)| r))
        else {
            // Too few descriptors for the test harness itself.
            continue;
        };
        results.push(format!("{fds}: {result}"));
        if let Some(error) = result.strip_prefix("error ") {
            if error.starts_with(&format!("Some({})", libc::EMFILE)) {
                emfile += 1;
            } else {
                // No OS error number only where no system call failed: the shell could not run its script (dash
                // exits 2 when a redirection finds no descriptor).
                assert!(
                    error.starts_with("None ") && error.contains("/bin/sh exited (status "),
                    "an error without its OS error number: {results:#?}"
                );
            }
        }
    }
    assert!(
        emfile > 0,
        "no run failed for want of a descriptor (EMFILE), so the check did not run: {results:#?}"
    );
}
