//! `GroupHandle`: signalling a group from other threads, never after its leader was reaped.

mod common;

use std::os::unix::process::ExitStatusExt;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use grouptimeout::{GroupCommandExt, GroupHandle, Outcome};

const LONG: Duration = Duration::from_secs(60);

#[test]
fn a_handle_is_clone_send_sync_and_debug() {
    fn check<T: Clone + Send + Sync + std::fmt::Debug>() {}
    check::<GroupHandle>();
}

/// Issue 24.4: `GroupChild` is `Send` and `Sync`, as std's `Child` is, so a `&GroupChild` (its `id`, `try_wait` needs
/// `&mut`) can be shared with other threads.
#[test]
fn a_group_child_is_send_and_sync_as_std_child_is() {
    fn check<T: Send + Sync + std::fmt::Debug>() {}
    check::<std::process::Child>();
    check::<grouptimeout::GroupChild>();
    check::<Outcome>();
}

#[test]
fn a_kill_from_another_thread_ends_a_blocked_wait() {
    let mut child = Command::new("sh")
        .args(["-c", "sleep 30 & sleep 30"])
        .spawn_group()
        .unwrap();
    let handle = child.handle();
    assert_eq!(handle.id(), child.id());
    let killer = thread::spawn(move || {
        thread::sleep(Duration::from_millis(200));
        handle.kill()
    });
    let started = Instant::now();
    let outcome = child.wait_timeout(LONG).unwrap();
    killer.join().unwrap().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the wait missed the kill"
    );
    assert!(matches!(outcome, Outcome::Exited(_)), "{outcome:?}");
    assert_eq!(outcome.status().signal(), Some(libc::SIGKILL));
    assert!(eventually(Duration::from_secs(2), || live_members(
        child.id()
    )
    .is_empty()));
}

#[test]
fn handles_hammering_a_group_while_it_is_reaped_never_fail() {
    for _ in 0..20 {
        let mut child = Command::new("sh")
            .args(["-c", "sleep 0.05"])
            .spawn_group()
            .unwrap();
        let handle = child.handle();
        let done = AtomicBool::new(false);
        let outcome = thread::scope(|s| {
            let hammers: Vec<_> = (0..3)
                .map(|_| {
                    let handle = handle.clone();
                    let done = &done;
                    s.spawn(move || {
                        let mut sent = 0u32;
                        while !done.load(Ordering::SeqCst) {
                            handle.signal(libc::SIGCONT)?;
                            sent += 1;
                        }
                        handle.signal(libc::SIGCONT)?;
                        Ok::<u32, std::io::Error>(sent)
                    })
                })
                .collect();
            let outcome = child.wait_timeout(LONG);
            done.store(true, Ordering::SeqCst);
            for hammer in hammers {
                hammer.join().unwrap().unwrap();
            }
            outcome
        });
        assert_eq!(outcome.unwrap().status().code(), Some(0));
        handle.kill().unwrap();
        assert!(format!("{handle:?}").contains("reaped: true"), "{handle:?}");
    }
}

/// `strace` the scenarios below and check that no kill(2) names a leader's pid, or its group, after its reap.
#[test]
fn a_handle_sends_nothing_after_the_reap() {
    let Some(lines) = strace_scenario(
        "a_handle_sends_nothing_after_the_reap",
        "handle_scenarios_for_strace",
    ) else {
        return;
    };
    let mut reaped = Vec::new();
    let mut kills_of_leaders = 0;
    for event in reaps_and_kills(&lines) {
        match event {
            Traced::Reaped(pid) => reaped.push(pid),
            Traced::Killed(target) => {
                assert!(
                    !reaped.contains(&target.abs()),
                    "{target} signalled after its reap:\n{lines}"
                );
                kills_of_leaders += 1;
            }
        }
    }
    assert!(
        kills_of_leaders >= 2 && reaped.len() >= 2,
        "the trace misses the scenarios:\n{lines}"
    );
}

/// Started under strace by `a_handle_sends_nothing_after_the_reap`.
#[test]
#[ignore = "run by a_handle_sends_nothing_after_the_reap"]
fn handle_scenarios_for_strace() {
    // Reaped by a wait: a kill through the handle before it, none after.
    let mut child = Command::new("sleep").arg("30").spawn_group().unwrap();
    let handle = child.handle();
    handle.kill().unwrap();
    assert_eq!(
        child.wait_timeout(LONG).unwrap().status().signal(),
        Some(libc::SIGKILL)
    );
    handle.kill().unwrap();
    handle.signal(libc::SIGTERM).unwrap();
    child.handle().kill().unwrap();
    // Reaped by the drop.
    let child = Command::new("sleep").arg("30").spawn_group().unwrap();
    let handle = child.handle();
    drop(child);
    handle.kill().unwrap();
    handle.signal(libc::SIGTERM).unwrap();
}
