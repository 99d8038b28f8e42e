//! `SIGPIPE` inherited ignored stays ignored for the command, as with GNU `timeout` (which does not touch it), while
//! std resets it in every child it spawns; and `host::keep_sigpipe_ignored` for library users.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use grouptimeout::GroupCommandExt;
use grouptimeout_cli::host;

mod common;

const BIN: &str = env!("CARGO_BIN_EXE_grouptimeout");
const LIMIT: Duration = Duration::from_secs(20);

/// Runs `sh -c script` with the tool's path as `$0`, bounded; returns its status code, stdout and stderr.
fn sh(script: &str) -> (Option<i32>, String, String) {
    let child = Command::new("sh")
        .args(["-c", script, BIN])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn_group()
        .unwrap();
    let done = child.wait_with_output_timeout(LIMIT).unwrap();
    assert!(!done.outcome.timed_out(), "{script} hung");
    let text = |bytes: Vec<u8>| String::from_utf8_lossy(&bytes).into_owned();
    (
        done.outcome.status().code(),
        text(done.stdout),
        text(done.stderr),
    )
}

fn have_bash() -> bool {
    if Path::new("/bin/bash").exists() {
        return true;
    }
    common::skip_or_fail("sigpipe", "/bin/bash is absent");
    false
}

/// `yes` writing into a pipe whose reader is gone: 141 (killed by SIGPIPE) with SIGPIPE at its default, 1 (a write
/// error) with SIGPIPE ignored.
const YES_STATUS: &str = "bash -c 'yes | head -1 >/dev/null; echo ${PIPESTATUS[0]}'";

#[test]
fn ignored_sigpipe_stays_ignored_for_the_command() {
    if !have_bash() {
        return;
    }
    for option in ["", "--foreground"] {
        let (_, out, err) = sh(&format!(r#"trap '' PIPE; "$0" {option} 5 {YES_STATUS}"#));
        assert_eq!(out, "1\n", "{option}: {err}");
        // Not ignored at the start: the command gets the default, as std gives it.
        let (_, out, err) = sh(&format!(r#""$0" {option} 5 {YES_STATUS}"#));
        assert_eq!(out, "141\n", "{option}: {err}");
    }
    // GNU's own test (tests/timeout/timeout.sh): the command reports the broken pipe instead of dying of it.
    let (code, _, err) = sh(r#"trap '' PIPE && "$0" 10 yes | :"#);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("yes: standard output: Broken pipe"), "{err:?}");
}

#[test]
fn keep_sigpipe_ignored_sets_it_in_the_child_only() {
    let sigpipe_ignored = |keep: bool| {
        let mut command = Command::new("grep");
        command
            .args(["SigIgn", "/proc/self/status"])
            .stdout(Stdio::piped());
        if keep {
            host::keep_sigpipe_ignored(&mut command);
        }
        let done = command
            .spawn_group()
            .unwrap()
            .wait_with_output_timeout(LIMIT)
            .unwrap();
        let line = String::from_utf8(done.stdout).unwrap();
        let hex = line.trim().strip_prefix("SigIgn:").unwrap().trim();
        u64::from_str_radix(hex, 16).unwrap() & (1 << (libc::SIGPIPE - 1)) != 0
    };
    assert!(sigpipe_ignored(true));
    assert!(!sigpipe_ignored(false));
}
