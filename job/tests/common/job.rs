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

/// Runs `test` (the test `linux::test` of this binary) again as nobody: see `common::rerun_as_nobody`.
pub fn as_nobody(test: &str) -> bool {
    crate::common::rerun_as_nobody(test, &format!("linux::{test}"))
}
