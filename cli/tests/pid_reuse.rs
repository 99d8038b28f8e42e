//! A reaped child's pid given to another child of ours: `host::signal_child` must not signal it.
//!
//! Giving a pid out again means setting the pid namespace's last allocated pid back: the test runs in a PID namespace
//! of its own (`common::in_own_pid_namespace`), so that no process outside it has its pid allocation steered.

mod common;

use std::process::Command;
use std::time::Duration;

use common::{
    eventually, in_own_pid_namespace, in_private_pid_namespace, is_dead, skip_or_fail,
    spawn_with_pid,
};

/// Kills and reaps the child on every way out of the test (it is ours and unreaped until then).
struct Reap(std::process::Child);

impl Drop for Reap {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

const TEST: &str = "signal_child_never_signals_a_reaped_child_whose_pid_was_reused";

#[test]
fn signal_child_never_signals_a_reaped_child_whose_pid_was_reused() {
    if !in_private_pid_namespace() {
        return in_own_pid_namespace(TEST);
    }
    let mut reaped = Command::new("true").spawn().expect("spawn true");
    reaped.wait().expect("wait true");
    let pid = reaped.id();
    let Some(reuser) = spawn_with_pid(Command::new("sleep").arg("60"), pid) else {
        return skip_or_fail(
            TEST,
            &format!("cannot give pid {pid} to a new child (ns_last_pid not writable)"),
        );
    };
    let _reuser = Reap(reuser);
    // `reaped` was reaped by its own `wait`: its pid now names `_reuser`, another unreaped child of ours.
    grouptimeout_cli::host::signal_child(&mut reaped, libc::SIGKILL).expect("signal_child");
    assert!(
        !eventually(Duration::from_millis(300), || is_dead(pid)),
        "signal_child killed pid {pid}, which its (reaped) child no longer owned"
    );
}
