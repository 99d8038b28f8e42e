//! A reaped child's pid given to another child of ours: `host::signal_child` must not signal it.
//!
//! In a test binary of its own: giving a pid out again means setting the pid namespace's last allocated pid back,
//! which hands the pids freed since out again sooner than usual; no other test of this process may be watching one
//! of those die meanwhile.

mod common;

use std::fs;
use std::io::{self, Write as _};
use std::process::Command;
use std::time::Duration;

use common::{eventually, is_dead};

/// Spawns `cmd` so that it gets pid `pid` (free again after a reap), by setting the pid namespace's last allocated pid
/// (`/proc/sys/kernel/ns_last_pid`, root only) just below it. `None` when that cannot be done here, or another process
/// of the machine took the pid first each time. Few attempts: each one moves the allocation back to `pid`, so that
/// the pids handed out since are handed out again sooner than usual.
fn spawn_with_pid(cmd: &mut Command, pid: u32) -> Option<std::process::Child> {
    for _ in 0..20 {
        fs::write("/proc/sys/kernel/ns_last_pid", (pid - 1).to_string()).ok()?;
        let child = cmd.spawn().expect("spawn");
        if child.id() == pid {
            return Some(child);
        }
        let mut child = child;
        let _ = child.kill();
        let _ = child.wait();
    }
    None
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
    /// Kills and reaps the child on every way out of the test (it is ours and unreaped until then).
    struct Reap(std::process::Child);
    impl Drop for Reap {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _reuser = Reap(reuser);
    // `reaped` was reaped by its own `wait`: its pid now names `_reuser`, another unreaped child of ours.
    grouptimeout::host::signal_child(&mut reaped, libc::SIGKILL).expect("signal_child");
    assert!(
        !eventually(Duration::from_millis(300), || is_dead(pid)),
        "signal_child killed pid {pid}, which its (reaped) child no longer owned"
    );
}
