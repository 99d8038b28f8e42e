//! Test helpers of the job boundary (`grouptimeout-job`), for the test crates of `job/` and `cli/` (beside
//! `tests/common/mod.rs`, which they include as `common`).
#![allow(dead_code)]
#![cfg(target_os = "linux")]

use std::process::Command;

/// A `Contain` that requires a cgroup, if a cgroup can be made here (checked with a spawn of `true`); else `None`,
/// and the test skipped (or failed where it must run: see `skip_or_fail`), saying why.
pub fn cgroup_or_skip(test: &str) -> Option<grouptimeout_job::Contain> {
    let mut how = grouptimeout_job::Contain::new();
    how.require(grouptimeout_job::Containment::Cgroup);
    if let Err(e) = how
        .spawn(&mut Command::new("true"))
        .and_then(|mut c| c.wait())
    {
        crate::common::skip_or_fail(test, &format!("no cgroup can be made here: {e}"));
        return None;
    }
    Some(how)
}

/// Spawns `script` under `sh -c` with `how`, stdout piped, and checks that it got containment `mode`; returns the
/// child and the first `n` lines it printed (pids, or "ready").
pub fn start_job(
    how: &grouptimeout_job::Contain,
    mode: grouptimeout_job::Containment,
    script: &str,
    n: usize,
) -> (grouptimeout::GroupChild, Vec<String>) {
    use grouptimeout_job::JobChildExt as _;
    use std::io::BufRead as _;
    let mut child = how
        .spawn(
            Command::new("sh")
                .args(["-c", script])
                .stdout(std::process::Stdio::piped()),
        )
        .expect("spawn_contained");
    assert_eq!(child.containment(), mode);
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let lines = (0..n)
        .map(|_| {
            let mut line = String::new();
            out.read_line(&mut line).expect("a line from the command");
            line.trim().to_string()
        })
        .collect();
    (child, lines)
}

/// Runs `test` (the test `linux::test` of this binary) again as nobody through `setpriv`, and checks that it passed,
/// unless this runs as nobody already: `false` then, and the caller runs its scenario. Skipped (see `skip_or_fail`)
/// where that cannot be done.
pub fn as_nobody(test: &str) -> bool {
    use crate::common::{have, runnable_by_anyone, skip_or_fail};
    if std::env::var_os("GROUPTIMEOUT_TEST_UNPRIVILEGED").is_some() {
        return false;
    }
    if !crate::common::is_root() {
        skip_or_fail(test, "not root, so setpriv cannot switch to nobody");
        return true;
    }
    if !have(test, "setpriv", "--version") {
        return true;
    }
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        // A copy every user may run: the checkout may be in a folder only we may enter.
        .arg(runnable_by_anyone(&std::env::current_exe().unwrap()))
        .args(["--exact", &format!("linux::{test}"), "--nocapture"])
        .env("GROUPTIMEOUT_TEST_UNPRIVILEGED", "1")
        .output()
        .unwrap();
    let output =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    // What the scenario printed, in this test's output too.
    print!("{output}");
    assert!(
        out.status.success() && output.contains("1 passed"),
        "{output}"
    );
    true
}
