//! What a contained spawn leaves of its caller on the paths beside the usual one: the calling thread's
//! `PR_SET_KEEPCAPS` (a root `Command::uid` job, whose spawn once set it around a fork, must leave it as it was, and
//! gets its cgroup). (A keeper that a caller's `pre_exec` hook killed is no longer a case: the hooks bind the
//! command's process alone, see `keeper_program.rs`.)
#![cfg(all(target_os = "linux", not(grouptimeout_portable)))]

mod common;
#[path = "common/job.rs"]
mod job;

use std::io;
use std::os::unix::process::CommandExt as _;
use std::process::Command;
use std::sync::{Mutex, MutexGuard};
use std::thread;
use std::time::Duration;

use grouptimeout::GroupChild;
use grouptimeout_job::{Contain, Containment, JobChildExt as _};

/// One test at a time: each checks what its own spawns left (the folders this process made).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// This thread's `PR_SET_KEEPCAPS`.
fn keepcaps() -> i32 {
    // SAFETY: prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_GET_KEEPCAPS, 0, 0, 0, 0) }
}

/// Sets this thread's `PR_SET_KEEPCAPS` to `on`.
fn set_keepcaps(on: bool) {
    // SAFETY: prctl with integer arguments.
    let set = unsafe { libc::prctl(libc::PR_SET_KEEPCAPS, libc::c_ulong::from(on), 0, 0, 0) };
    assert_eq!(set, 0, "PR_SET_KEEPCAPS: {}", io::Error::last_os_error());
}

/// Waits for `child` (a job of `true`), at most 10 s.
fn finish(mut child: GroupChild) {
    let outcome = child
        .wait_timeout(Duration::from_secs(10))
        .expect("the job ends");
    assert!(
        !outcome.timed_out() && outcome.status().success(),
        "{outcome:?}"
    );
}

/// Runs `f` on a thread of its own (the flag is a thread's), and gives its result.
fn on_a_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    thread::spawn(f).join().expect("the test's thread")
}

/// A caller's `PR_SET_KEEPCAPS`, on or off, is as it was after contained spawns of every kept mode: the default
/// (a cgroup as root, else the reaper) and the reaper, which never needs the flag. The spawn used to clear it
/// (a `Restore` built and dropped at once), so that the caller's own later `setuid` lost its capabilities.
#[test]
fn a_spawn_leaves_the_callers_keepcaps_as_it_was() {
    let _one = one_at_a_time();
    for on in [true, false] {
        let got = on_a_thread(move || {
            set_keepcaps(on);
            let mut seen = Vec::new();
            for cgroup in [true, false] {
                let mut contain = Contain::new();
                contain.cgroup(cgroup);
                let child = contain
                    .spawn(&mut Command::new("true"))
                    .expect("spawn_contained");
                let mode = child.containment();
                finish(child);
                seen.push((mode, keepcaps()));
            }
            seen
        });
        for (mode, flag) in got {
            assert_eq!(
                flag,
                i32::from(on),
                "a {mode:?} spawn changed the calling thread's PR_SET_KEEPCAPS from {on}"
            );
        }
    }
}

/// As root, a `Command::uid` job spawned from a thread that has `PR_SET_KEEPCAPS` on gets its cgroup (its keeper keeps
/// its capabilities across std's user switch, as the spawn would have arranged), and the flag stays on. It used to be
/// cleared before the fork, so that the keeper lost `CAP_DAC_OVERRIDE` and the job fell back to the reaper, saying
/// that the keeper could not keep the capability.
#[test]
fn a_root_uid_job_from_a_thread_with_keepcaps_gets_its_cgroup() {
    let test = "a_root_uid_job_from_a_thread_with_keepcaps_gets_its_cgroup";
    let _one = one_at_a_time();
    if !common::is_root() {
        common::skipped(test, "runs as root only (Command::uid to another user)");
        return;
    }
    if job::cgroup_or_skip(test).is_none() {
        return;
    }
    let (mode, why, flag) = on_a_thread(|| {
        set_keepcaps(true);
        let child = Contain::new()
            .spawn(Command::new("true").uid(65534).gid(65534))
            .expect("spawn_contained");
        let got = (
            child.containment(),
            child.fallback_reason().map(str::to_owned),
        );
        finish(child);
        (got.0, got.1, keepcaps())
    });
    assert_eq!(
        (mode, why.as_deref()),
        (Containment::Cgroup, None),
        "a root Command::uid job from a thread with PR_SET_KEEPCAPS on"
    );
    assert_eq!(flag, 1, "the thread's PR_SET_KEEPCAPS was cleared");
}
