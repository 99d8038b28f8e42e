//! The suite's own cleanup (`KillOnDrop` in tests/common) kills only the processes a test started: a listed pid
//! whose process ended and whose pid another process took since (another test's, or another copy of the suite's: the
//! suite's fork storms wrap the pids within seconds) is neither counted alive nor killed. Each test runs in a PID
//! namespace of its own, where it gives the pid to a new process on purpose (`spawn_with_pid`).
#![cfg(all(target_os = "linux", not(grouptimeout_portable)))]

mod common;

use common::*;
use std::process::{Child, Command};
use std::time::Duration;

/// Starts `sleep 60`.
fn sleeper() -> Child {
    Command::new("sleep").arg("60").spawn().unwrap()
}

/// Kills and reaps `first`, then starts a `sleep 60` that gets its pid; `None` (the test skipped) when the pid could
/// not be given. Not in the clock tick (10 ms) in which `first` started: start times count in ticks, and outside a
/// namespace that steers its pids a pid comes back only after the pids wrapped around (`kernel.pid_max` forks), which
/// takes far longer.
fn reuse_pid_of(test: &str, mut first: Child) -> Option<Child> {
    std::thread::sleep(Duration::from_millis(50));
    let pid = first.id();
    first.kill().unwrap();
    first.wait().unwrap();
    let second = spawn_with_pid(Command::new("sleep").arg("60"), pid);
    if second.is_none() {
        skip_or_fail(test, &format!("cannot give pid {pid} to a new process"));
    }
    second
}

/// Whether `child` still runs half a second later (nothing killed it), then kills and reaps it.
fn survives(mut child: Child) -> bool {
    let killed = eventually(Duration::from_millis(500), || {
        child.try_wait().unwrap().is_some()
    });
    let _ = child.kill();
    let _ = child.wait();
    !killed
}

/// A process listed when the test learned its pid; it ends, and a new process gets its pid: the list's kill spares
/// the new one, and does not count it alive.
#[test]
fn a_listed_pid_taken_by_another_process_is_spared() {
    const TEST: &str = "a_listed_pid_taken_by_another_process_is_spared";
    if !in_private_pid_namespace() {
        return in_own_pid_namespace(TEST);
    }
    let first = sleeper();
    let listed = KillOnDrop::new(vec![first.id()]);
    assert_eq!(listed.alive(), [first.id()], "the listed process runs");
    let Some(second) = reuse_pid_of(TEST, first) else {
        return;
    };
    assert_eq!(second.id(), listed.0[0]);
    assert_eq!(
        listed.alive(),
        [] as [u32; 0],
        "the pid's new process was taken for the listed one"
    );
    listed.kill();
    drop(listed);
    assert!(survives(second), "the pid's new process was killed");
}

/// A pid written to a file by the process that started it; the process ends, and a new one gets its pid before the
/// test reads the file: the new one is not taken for the one written (it started after the file was written).
#[test]
fn a_pid_file_read_after_its_pid_was_taken_again_lists_nothing_alive() {
    const TEST: &str = "a_pid_file_read_after_its_pid_was_taken_again_lists_nothing_alive";
    if !in_private_pid_namespace() {
        return in_own_pid_namespace(TEST);
    }
    let dir = TempDir::new("cleanup-pid-file");
    let file = dir.0.join("pid");
    let first = sleeper();
    std::fs::write(&file, format!("{}\n", first.id())).unwrap();
    // Read while it runs: the process written.
    let written = KillOnDrop::from_file(&file);
    assert_eq!(written.0, [first.id()], "the pid file's words");
    assert_eq!(written.alive(), [first.id()], "the process written runs");
    written.into_pids();
    // Past the 50 ms within which a start counts as before the write (clock ticks, the coarse file clock).
    std::thread::sleep(Duration::from_millis(200));
    let Some(second) = reuse_pid_of(TEST, first) else {
        return;
    };
    let listed = KillOnDrop::from_file(&file);
    assert_eq!(listed.0, [second.id()], "the pid file's words");
    assert_eq!(
        listed.alive(),
        [] as [u32; 0],
        "the pid's new process was taken for the one written"
    );
    drop(listed);
    assert!(survives(second), "the pid's new process was killed");
}
