//! `set_wait_for_job`: after the leader exits, a wait waits for the rest of its group to exit on its own, up to the
//! deadline, then ends it as at any deadline; and it does so without a busy loop.
#![cfg(target_os = "linux")]

mod common;

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;
use grouptimeout::{GroupChild, GroupCommandExt, Outcome, Step};

const LONG: Duration = Duration::from_secs(30);

/// A leader that exits at once, leaving in its group a background subshell (not `setsid`: a process that leaves the
/// group is not the group's) that writes `written` after a second; its pid goes to `pids`.
fn leader_leaving_a_writer(dir: &Path) -> (GroupChild, KillOnDrop) {
    leader_leaving(dir, "sleep 1")
}

/// The same, but the subshell writes `written` only once `go` exists (at most 50 ms later): a test that must end the
/// rest before it writes does not depend on how fast a loaded machine gets to its wait.
fn leader_leaving_a_waiter(dir: &Path) -> (GroupChild, KillOnDrop) {
    let go = dir.join("go");
    leader_leaving(
        dir,
        &format!("until [ -e '{}' ]; do sleep 0.05; done", go.display()),
    )
}

/// A leader that exits at once, leaving a background subshell in its group that runs `first`, then writes `written`.
fn leader_leaving(dir: &Path, first: &str) -> (GroupChild, KillOnDrop) {
    let (file, pids) = (dir.join("written"), dir.join("pids"));
    let script = format!(
        "({first}; echo done > '{}') & echo $! > '{}'",
        file.display(),
        pids.display()
    );
    let mut child = Command::new("sh")
        .args(["-c", &script])
        .spawn_group()
        .unwrap();
    child.set_wait_for_job(true);
    // The leader writes the pid file before it exits; the wait below reaps it only after that.
    assert!(eventually(LONG, || fs::read_to_string(&pids)
        .is_ok_and(|s| s.ends_with('\n'))));
    let held = KillOnDrop::from_file(&pids);
    (child, held)
}

#[test]
fn a_wait_for_the_job_returns_once_the_group_has_finished() {
    let dir = TempDir::new("whole-group");
    let (mut child, held) = leader_leaving_a_writer(&dir.0);
    let pgid = child.id();
    let (start, cpu) = (Instant::now(), thread_cpu());
    let outcome = child.wait_timeout(LONG).unwrap();
    let (took, cpu) = (start.elapsed(), thread_cpu().saturating_sub(cpu));
    assert!(
        matches!(outcome, Outcome::Exited(s) if s.success()),
        "{outcome:?}"
    );
    assert_eq!(
        fs::read_to_string(dir.0.join("written")).ok().as_deref(),
        Some("done\n"),
        "the wait returned after {took:?}, before the rest of the group had done its work"
    );
    assert!(held.alive().is_empty() && live_members(pgid).is_empty());
    eprintln!("{cpu:?} of CPU for a wait of {took:?}");
    // A scan of /proc each time: on the schedule, spaced by its own cost; a busy loop would burn the whole second.
    assert!(
        cpu < Duration::from_millis(100),
        "{cpu:?} of CPU for a wait of {took:?}"
    );
}

#[test]
fn a_wait_for_the_job_ends_it_at_the_deadline() {
    let dir = TempDir::new("whole-group-deadline");
    // Its rest runs until told to write (`go`), which comes only after the wait: with a rest of a fixed second, a
    // loaded machine that took half of it to reach the wait saw the rest end by itself before the deadline.
    let (mut child, held) = leader_leaving_a_waiter(&dir.0);
    let pgid = child.id();
    let start = Instant::now();
    let outcome = child.wait_timeout(Duration::from_millis(500)).unwrap();
    assert!(start.elapsed() >= Duration::from_millis(500));
    assert!(
        matches!(outcome, Outcome::TimedOut(s) if s.success()),
        "{outcome:?}"
    );
    // Sent SIGKILL before the wait returned: dead within moments.
    assert!(held.survivors_after(LONG).is_empty());
    assert!(eventually(LONG, || live_members(pgid).is_empty()));
    fs::write(dir.0.join("go"), "").unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        !dir.0.join("written").exists(),
        "the rest of the group ran on after the deadline"
    );
}

/// A step of the wait while the rest runs is `Pending`, never `Done`: the stepped drivers (the set, tokio, a caller's
/// own loop) wait for the job too.
#[test]
fn a_stepped_wait_for_the_job_waits_too() {
    let dir = TempDir::new("whole-group-step");
    let (mut child, held) = leader_leaving_a_writer(&dir.0);
    let deadline = Instant::now() + LONG;
    let mut steps = 0;
    let outcome = loop {
        steps += 1;
        match child.step(Some(deadline)).unwrap() {
            Step::Done(outcome) => break outcome,
            Step::Pending(interest) => {
                if held.alive().is_empty() {
                    continue;
                }
                let until = interest.until().unwrap_or(deadline);
                std::thread::sleep(until.saturating_duration_since(Instant::now()));
            }
        }
    };
    assert!(!outcome.timed_out());
    assert!(dir.0.join("written").exists() && held.alive().is_empty());
    assert!(steps < 200, "{steps} steps for a wait of about a second");
}

#[test]
fn try_wait_for_the_job_says_none_until_the_group_has_finished() {
    let dir = TempDir::new("whole-group-try");
    let (mut child, held) = leader_leaving_a_writer(&dir.0);
    assert!(eventually(LONG, || is_dead(child.id())));
    assert!(
        child.try_wait().unwrap().is_none(),
        "try_wait returned before the rest of the group ended"
    );
    assert!(eventually(LONG, || child.try_wait().unwrap().is_some()));
    assert!(dir.0.join("written").exists() && held.alive().is_empty());
}

/// At the deadline the grace signal reaches the group, and the grace period lasts until the rest of the group has
/// exited (not until the leader's exit, which came long before): a member that takes its time to finish on `SIGTERM`
/// finishes.
#[test]
fn the_grace_period_waits_for_the_rest_of_the_group() {
    let dir = TempDir::new("whole-group-grace");
    let file = dir.0.join("finished");
    let script = format!(
        "(trap 'sleep 0.5; echo finished > \"{}\"; exit' TERM; while :; do sleep 0.1; done) &",
        file.display()
    );
    let mut child = Command::new("sh")
        .args(["-c", &script])
        .spawn_group()
        .unwrap();
    let pgid = child.id();
    child.set_wait_for_job(true);
    child.set_grace(libc::SIGTERM, LONG);
    // The subshell has set its trap once its loop runs a `sleep`.
    assert!(eventually(LONG, || live_members(pgid).len() >= 2));
    let start = Instant::now();
    let outcome = child.wait_timeout(Duration::from_millis(300)).unwrap();
    assert!(outcome.timed_out(), "{outcome:?}");
    assert!(start.elapsed() < LONG, "the grace period ran to its end");
    assert_eq!(
        fs::read_to_string(&file).ok().as_deref(),
        Some("finished\n")
    );
    assert!(eventually(LONG, || live_members(pgid).is_empty()));
}
