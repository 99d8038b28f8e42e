//! A program that uses `die_with_parent` and a `host::Subreaper` together sweeps while its command runs, passing the
//! guard (`GroupChild::guard_id`) in `owned`: the guard survives the sweep and still kills the group when the program
//! is killed (issue 16, point 3).
//!
//! Not a libtest binary (`harness = false` in `Cargo.toml`): the subreaper lists the main thread's children, and
//! libtest runs each test in a thread of its own. `main` runs the check; the program it kills is this binary again,
//! started with `GROUPTIMEOUT_GUARD_PIDS` set.

mod common;

use std::fs;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{
    linux_only, pids_from_file, state_and_group, survivors_after, temp_path, wait_for_members,
    KillOnDrop,
};
use grouptimeout::GroupCommandExt;
use grouptimeout_cli::host;
use grouptimeout_job::JobChildExt as _;

/// Where the program writes its leader's and guard's pids; set only in the program.
const PIDS_VAR: &str = "GROUPTIMEOUT_GUARD_PIDS";
/// `shell` (the default guard) or `fork` (`host::die_with_parent_forked`).
const HOW_VAR: &str = "GROUPTIMEOUT_GUARD_HOW";

fn main() {
    if let Some(file) = std::env::var_os(PIDS_VAR) {
        return sweep_and_hang(std::path::Path::new(&file));
    }
    if !cfg!(any(target_os = "linux", target_os = "android"))
        || linux_only("a_subreaper_sweep_leaves_the_guard_alone", "the subreaper")
    {
        return;
    }
    for how in ["shell", "fork"] {
        a_subreaper_sweep_leaves_the_guard_alone(how);
    }
    println!("test a_subreaper_sweep_leaves_the_guard_alone (shell and fork guards) ... ok");
}

fn a_subreaper_sweep_leaves_the_guard_alone(how: &str) {
    let file = temp_path(&format!("guard-sweep-{how}"));
    let mut program = Command::new(std::env::current_exe().unwrap())
        .env(PIDS_VAR, &file)
        .env(HOW_VAR, how)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let pids = pids_from_file(&file, 2);
    let written = pids.len() == 2;
    let _cleanup = KillOnDrop::new(pids.clone());
    if !written {
        let _ = program.kill();
        let _ = program.wait();
        panic!("the program did not report its group ({how}): {pids:?}");
    }
    let (leader, guard) = (pids[0], pids[1]);
    assert_eq!(
        state_and_group(guard).map(|(s, g)| (s != 'Z', g)),
        Some((true, leader)),
        "the guard ({how}) did not survive the sweep"
    );
    program.kill().unwrap();
    program.wait().unwrap();
    assert_eq!(survivors_after(Duration::from_secs(5), &pids), [], "{how}");
}

/// The program: a subreaper, a guarded command, a sweep and a reap of exited children with the leader and the guard
/// as `owned`; reports the leader's and the guard's pids and waits to be killed.
fn sweep_and_hang(file: &std::path::Path) {
    let mut subreaper = host::Subreaper::new().unwrap();
    let mut child = Command::new("sleep").arg("60").spawn_group().unwrap();
    if std::env::var_os(HOW_VAR).is_some_and(|how| how == "fork") {
        // SAFETY: no library of this test registers a `pthread_atfork` handler (std, `libc` and the workspace's crates
        // register none), so the fork runs the C library's own alone, which the condition allows in a process of any
        // number of threads.
        host::die_with_parent_forked(&mut child).unwrap();
    } else {
        child.die_with_parent().unwrap();
    }
    let owned = [child.id(), child.guard_id().unwrap()];
    // The guard is in the group once the call returns (the shell guard and the program guard alike); wait for it all
    // the same (bounded), so that the sweep surely finds it there.
    wait_for_members(child.id(), 2);
    let swept = subreaper.sweep(&owned, Duration::from_secs(5)).unwrap();
    assert_eq!(swept.left, []);
    subreaper.reap_exited(&owned, None).unwrap();
    fs::write(file, format!("{} {}\n", owned[0], owned[1])).unwrap();
    // Killed long before this; a bounded wait in case the killer fails (the drop then kills the group).
    let _ = child.wait_timeout(Duration::from_secs(30));
}
