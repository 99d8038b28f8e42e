//! `set_leak_grace` (issue 44.2): once the leader has exited on its own, what it left in its group gets up to the
//! grace to exit on its own; what is still there then is killed, and the outcome stays `Exited` whatever the deadline
//! did meanwhile. A leader that exits in its deadline's grace period gets none.
#![cfg(target_os = "linux")]

mod common;

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;
use grouptimeout::{GroupChild, GroupCommandExt, Outcome};

const LONG: Duration = Duration::from_secs(30);

/// `sh -c "(rest) & echo $! > pids; leader"` in `dir`, as a plain group with a leak grace of `grace`, once the pid of
/// its background subshell `rest` is in `pids`.
fn leader(dir: &Path, rest: &str, leader: &str, grace: Duration) -> (GroupChild, KillOnDrop) {
    let mut child = Command::new("sh")
        .args(["-c", &format!("({rest}) & echo $! > pids; {leader}")])
        .current_dir(dir)
        .spawn_group()
        .unwrap();
    child.set_leak_grace(grace);
    let pids = dir.join("pids");
    assert!(eventually(LONG, || fs::read_to_string(&pids)
        .is_ok_and(|s| s.ends_with('\n'))));
    (child, KillOnDrop::from_file(pids))
}

/// A leftover that ends 0.3 s after the leader's exit is waited for (it writes its file), and the wait returns once it
/// is gone, long before the grace's end; its deadline (0.1 s) passes meanwhile and changes nothing: `Exited`.
#[test]
fn a_leftover_that_exits_within_the_leak_grace_is_waited_for() {
    let dir = TempDir::new("leak-grace-exits");
    let (mut child, held) = leader(&dir.0, "sleep 0.3; echo done > written", "", LONG);
    let pgid = child.id();
    let start = Instant::now();
    let outcome = child.wait_timeout(Duration::from_millis(100)).unwrap();
    let took = start.elapsed();
    assert!(
        matches!(outcome, Outcome::Exited(s) if s.success()),
        "{outcome:?}"
    );
    assert_eq!(
        fs::read_to_string(dir.0.join("written")).ok().as_deref(),
        Some("done\n"),
        "the leftover was killed after {took:?}, before it could finish within its grace"
    );
    assert!(took < LONG / 2, "the wait ran to the grace's end: {took:?}");
    assert!(held.alive().is_empty() && live_members(pgid).is_empty());
}

/// A leftover still running at the grace's end is killed then, not at the leader's exit (it lived to write its file
/// 0.1 s later), and the outcome is the leader's exit.
#[test]
fn a_leftover_still_there_at_the_leak_grace_end_is_killed() {
    let dir = TempDir::new("leak-grace-killed");
    let rest = "sleep 0.1; echo alive > written; sleep 60";
    let (mut child, held) = leader(&dir.0, rest, "", Duration::from_secs(1));
    let pgid = child.id();
    let outcome = child.wait_timeout(LONG).unwrap();
    assert!(
        matches!(outcome, Outcome::Exited(s) if s.success()),
        "{outcome:?}"
    );
    assert!(
        dir.0.join("written").exists(),
        "the leftover was killed at the leader's exit"
    );
    assert!(
        held.survivors_after(LONG).is_empty(),
        "the leftover survived"
    );
    assert!(eventually(LONG, || live_members(pgid).is_empty()));
}

/// A leader that exits in its deadline's grace period (on `SIGTERM`) gets no leak grace: the rest of its group, which
/// ignores `SIGTERM`, is killed at once, so its file is never written; the outcome is `TimedOut`.
#[test]
fn a_leader_that_exits_in_its_grace_period_gets_no_leak_grace() {
    let dir = TempDir::new("leak-grace-timed-out");
    let rest = "trap '' TERM; sleep 1; echo done > written";
    let (mut child, held) = leader(&dir.0, rest, "trap 'exit 0' TERM; sleep 60 & wait", LONG);
    child.set_grace(libc::SIGTERM, LONG);
    let outcome = child.wait_timeout(Duration::from_millis(300)).unwrap();
    assert!(outcome.timed_out(), "{outcome:?}");
    assert!(held.survivors_after(LONG).is_empty());
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        !dir.0.join("written").exists(),
        "the rest ran on after the leader's exit in its grace period"
    );
}

/// The two settings of what a wait does after the leader's exit are one: the last call rules, and a zero grace is
/// the default (the leftover killed at once).
#[test]
fn a_zero_leak_grace_kills_at_once() {
    let dir = TempDir::new("leak-grace-zero");
    let (mut child, held) = leader(&dir.0, "sleep 0.3; echo done > written", "", LONG);
    child.set_wait_for_job(true);
    child.set_leak_grace(Duration::ZERO);
    let outcome = child.wait_timeout(LONG).unwrap();
    assert!(!outcome.timed_out(), "{outcome:?}");
    assert!(held.survivors_after(LONG).is_empty());
    std::thread::sleep(Duration::from_millis(800));
    assert!(
        !dir.0.join("written").exists(),
        "the leftover was not killed at once"
    );
}
