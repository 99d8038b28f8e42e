//! A reaped child's pid given to another child of ours: `host::signal_child` must not signal it.
//!
//! In a test binary of its own: giving a pid out again means setting the pid namespace's last allocated pid back,
//! which hands the pids freed since out again sooner than usual; no other test of this process may be watching one
//! of those die meanwhile.

mod common;

use std::io::{self, Write as _};
use std::process::Command;
use std::time::Duration;

use common::{eventually, is_dead, spawn_with_pid};

/// Kills and reaps the child on every way out of the test (it is ours and unreaped until then).
struct Reap(std::process::Child);

impl Drop for Reap {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn signal_child_never_signals_a_reaped_child_whose_pid_was_reused() {
    let mut reaped = Command::new("true").spawn().expect("spawn true");
    reaped.wait().expect("wait true");
    let pid = reaped.id();
    let Some(reuser) = spawn_with_pid(Command::new("sleep").arg("60"), pid) else {
        let _ = writeln!(
            io::stderr(),
            "SKIPPED signal_child_never_signals_a_reaped_child_whose_pid_was_reused: cannot give pid {pid} to a new \
             child (not root, or the pid was taken first)"
        );
        return;
    };
    let _reuser = Reap(reuser);
    // `reaped` was reaped by its own `wait`: its pid now names `_reuser`, another unreaped child of ours.
    grouptimeout::host::signal_child(&mut reaped, libc::SIGKILL).expect("signal_child");
    assert!(
        !eventually(Duration::from_millis(300), || is_dead(pid)),
        "signal_child killed pid {pid}, which its (reaped) child no longer owned"
    );
}
