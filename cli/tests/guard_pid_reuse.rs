//! A guard reaped by someone else, whose pid a new child of ours then got: ending the guard must neither signal
//! that child nor wait for it (issue 16, point 2).
//!
//! In a test binary of its own: it makes this process a child subreaper (process-wide). It gives a pid out again (see
//! `common::spawn_with_pid`), so it runs in a PID namespace of its own (`common::in_own_pid_namespace`), where it is
//! PID 1 and no process outside has its pid allocation steered. On Linux the guard is held by a pidfd; where the crate holds it by its pid (the
//! `grouptimeout_no_pidfd` and `grouptimeout_portable` cfgs, other systems) this cannot be told apart, as documented,
//! and the test does not run.
#![cfg(all(
    target_os = "linux",
    not(grouptimeout_no_pidfd),
    not(grouptimeout_portable)
))]

mod common;

use std::process::Command;
use std::time::Duration;

use common::{
    eventually, in_own_pid_namespace, in_private_pid_namespace, is_dead, returns_within,
    skip_or_fail, spawn_with_pid, state_and_group,
};
use grouptimeout::GroupCommandExt;
use grouptimeout_cli::host;
use grouptimeout_job::JobChildExt as _;

const TEST: &str = "a_guard_reaped_by_someone_else_is_never_signalled_by_its_reused_pid";

/// Kills and reaps the child on every way out of the test (it is ours and unreaped until then).
struct Reap(std::process::Child);

impl Drop for Reap {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_guard_reaped_by_someone_else_is_never_signalled_by_its_reused_pid() {
    if !in_private_pid_namespace() {
        return in_own_pid_namespace(TEST);
    }
    let mut subreaper = match host::Subreaper::new() {
        Ok(subreaper) => subreaper,
        Err(e) => return skip_or_fail(TEST, &format!("no subreaper here: {e}")),
    };
    // Should the guard's pid be taken first (nothing else runs in this namespace), the scenario starts again, with a
    // new guard.
    let mut rounds = 0;
    let (child, guard, reuser) = loop {
        rounds += 1;
        let mut child = Command::new("sleep").arg("60").spawn_group().unwrap();
        child.die_with_parent().unwrap();
        let guard = child.guard_id().expect("a guard");
        // The command kills the guard (SIGKILL cannot be ignored) and the subreaper, told only of the leader, reaps
        // it.
        assert!(Command::new("kill")
            .args(["-KILL", &guard.to_string()])
            .status()
            .unwrap()
            .success());
        assert!(eventually(Duration::from_secs(10), || is_dead(guard)));
        subreaper.reap_exited(&[child.id()], Some(guard)).unwrap();
        assert_eq!(state_and_group(guard), None, "the guard was not reaped");
        if let Some(reuser) = spawn_with_pid(Command::new("sleep").arg("60"), guard) {
            break (child, guard, reuser);
        }
        // Not dropped: its drop would end the guard, whose pid someone else's process may hold now. The leader is
        // killed and stays a zombie until this test process exits.
        let _ = Command::new("kill")
            .args(["-KILL", &child.id().to_string()])
            .status();
        std::mem::forget(child);
        if rounds == 5 {
            return skip_or_fail(
                TEST,
                &format!("cannot give pid {guard} to a new child, 5 times (ns_last_pid not writable, or the pid was taken first)"),
            );
        }
    };
    let mut reuser = Reap(reuser);
    // The drop ends the guard: on today's main it sent SIGKILL to the reuser and blocked in waitpid on it. Run it in a
    // thread, bounded: if it blocks, the reuser is killed after 20 s so that the test fails rather than hangs.
    let took = returns_within(
        Duration::from_secs(20),
        move || drop(child),
        || {
            let _ = reuser.0.kill();
        },
    )
    .expect("the drop blocked (waiting for a pid that is no longer its guard)");
    assert!(
        !eventually(Duration::from_millis(300), || is_dead(guard)),
        "the drop killed pid {guard}, which its (reaped) guard no longer owned"
    );
    assert!(took < Duration::from_secs(5), "the drop took {took:?}");
    assert!(reuser.0.try_wait().unwrap().is_none());
}
