//! Behaviour of the library on real process trees. Death is read from `/proc/PID/stat`.

mod common;

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use grouptimeout::{GroupChild, GroupCommandExt, Outcome};

const LONG: Duration = Duration::from_secs(60);

fn sh(script: &str) -> Command {
    let mut cmd = Command::new("sh");
    cmd.args(["-c", script]);
    cmd
}

fn spawn_sh_piped(script: &str) -> GroupChild {
    sh(script)
        .stdout(Stdio::piped())
        .spawn_group()
        .expect("spawn sh")
}

#[test]
fn late_write_of_a_background_grandchild_never_happens() {
    let file = temp_path("late");
    let script = format!("(sleep 1; echo late > '{}') & sleep 30", file.display());
    let mut child = sh(&script).spawn_group().unwrap();
    let outcome = child.wait_timeout(Duration::from_millis(300)).unwrap();
    assert!(outcome.timed_out(), "{outcome:?}");
    assert_eq!(outcome.status().signal(), Some(libc::SIGKILL));
    thread::sleep(Duration::from_secs(2));
    assert!(
        !file.exists(),
        "the grandchild outlived the wait and wrote {}",
        file.display()
    );
}

#[test]
fn leftovers_are_killed_when_the_leader_exits() {
    let mut child = spawn_sh_piped("sleep 30 & echo $!; exit 3");
    let sleeper = read_pid(child.stdout.take().unwrap());
    let _cleanup = KillOnDrop::new(vec![sleeper]);
    let started = Instant::now();
    let outcome = child.wait_timeout(LONG).unwrap();
    assert_eq!(outcome, Outcome::Exited(outcome.status()));
    assert_eq!(outcome.status().code(), Some(3));
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the wait did not return promptly"
    );
    // SIGKILL is pending when the wait returns; the kernel may need a moment to finish the process.
    assert_eq!(
        survivors_after(Duration::from_secs(5), &[sleeper]),
        Vec::<u32>::new()
    );
}

#[test]
fn leftovers_survive_when_asked() {
    let mut child = spawn_sh_piped("sleep 30 & echo $!; exit 3");
    let sleeper = read_pid(child.stdout.take().unwrap());
    let _cleanup = KillOnDrop::new(vec![sleeper]);
    child.set_kill_leftovers(false);
    assert_eq!(child.wait_timeout(LONG).unwrap().status().code(), Some(3));
    thread::sleep(Duration::from_millis(300));
    assert!(
        !is_dead(sleeper),
        "the leftover was killed although set_kill_leftovers(false)"
    );
}

/// Spawns `script`, waits until its group has `members` live processes, times it out, and checks each one died.
fn assert_whole_tree_dies(script: &str, members: usize, grace: Option<Duration>) {
    let mut child = sh(script).spawn_group().unwrap();
    let pids = wait_for_members(child.id(), members);
    let _cleanup = KillOnDrop::new(pids.clone());
    if let Some(grace) = grace {
        child.set_grace(libc::SIGTERM, grace);
    }
    let outcome = child.wait_timeout(Duration::from_millis(200)).unwrap();
    assert!(outcome.timed_out(), "{script}: {outcome:?}");
    let alive = survivors_after(Duration::from_secs(10), &pids);
    assert!(
        alive.is_empty(),
        "{script} (grace {grace:?}): {} of {} members survived",
        alive.len(),
        pids.len()
    );
}

const IGNORES_TERM: &str = "trap '' TERM; sleep 30 & sleep 30 & wait";
const STOPPED: &str = "trap '' HUP; sleep 30 & kill -STOP $!; sleep 30 & kill -STOP $$; wait";
const CHAIN_OF_50: &str =
    "s='if [ $1 -gt 0 ]; then sh -c \"$0\" \"$0\" $(($1 - 1)); true; else sleep 30; fi'; sh -c \"$s\" \"$s\" 49; true";
const FAN_OUT_300: &str = "i=0; while [ $i -lt 300 ]; do sleep 30 & i=$((i + 1)); done; wait";

#[test]
fn members_ignoring_term_die() {
    assert_whole_tree_dies(IGNORES_TERM, 3, None);
    assert_whole_tree_dies(IGNORES_TERM, 3, Some(Duration::from_millis(300)));
}

#[test]
fn stopped_members_die() {
    for grace in [None, Some(Duration::from_secs(30))] {
        let mut child = sh(STOPPED).spawn_group().unwrap();
        assert!(
            eventually(LONG, || matches!(
                state_and_group(child.id()),
                Some(('T', _))
            )),
            "leader never stopped"
        );
        let pids = wait_for_members(child.id(), 3);
        let _cleanup = KillOnDrop::new(pids.clone());
        if let Some(grace) = grace {
            child.set_grace(libc::SIGTERM, grace);
        }
        let started = Instant::now();
        assert!(child
            .wait_timeout(Duration::from_millis(100))
            .unwrap()
            .timed_out());
        // SIGCONT made the stopped leader act on SIGTERM, which ended the grace period early.
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "grace {grace:?}: SIGTERM was not acted on"
        );
        assert!(
            survivors_after(Duration::from_secs(10), &pids).is_empty(),
            "grace {grace:?}"
        );
    }
}

#[test]
fn a_chain_of_50_nested_shells_dies() {
    assert_whole_tree_dies(CHAIN_OF_50, 51, None);
    assert_whole_tree_dies(CHAIN_OF_50, 51, Some(Duration::from_millis(300)));
}

#[test]
fn a_fan_out_of_300_sleeps_dies() {
    assert_whole_tree_dies(FAN_OUT_300, 301, None);
    assert_whole_tree_dies(FAN_OUT_300, 301, Some(Duration::from_millis(300)));
}

#[test]
fn a_fork_storm_leaves_no_survivor() {
    let mut child = sh("while :; do sleep 100 & done").spawn_group().unwrap();
    let pgid = child.id();
    wait_for_members(pgid, 50);
    assert!(child
        .wait_timeout(Duration::from_millis(300))
        .unwrap()
        .timed_out());
    // Nothing new can join the group once it is empty; wait (bounded) for the kernel to finish the killed ones.
    let mut alive = Vec::new();
    let none_left = eventually(Duration::from_secs(10), || {
        alive = live_members(pgid);
        alive.is_empty()
    });
    // Found again with their start times, so that a member that died meanwhile is not taken for its pid's next owner.
    drop(KillOnDrop::scan(|pid| {
        state_and_group(pid).is_some_and(|(_, group)| group == pgid)
    }));
    assert!(
        none_left,
        "{} members of the fork storm survived",
        alive.len()
    );
}

#[test]
fn a_graceful_child_runs_its_handler_and_ends_the_grace_early() {
    let file = temp_path("graceful");
    let script = format!(
        "trap 'echo cleaned > \"{}\"; exit 7' TERM; sleep 30 & wait",
        file.display()
    );
    let mut child = sh(&script).spawn_group().unwrap();
    wait_for_members(child.id(), 2);
    child.set_grace(libc::SIGTERM, Duration::from_secs(30));
    let started = Instant::now();
    let outcome = child.wait_timeout(Duration::from_millis(200)).unwrap();
    assert_eq!(outcome, Outcome::TimedOut(outcome.status()));
    assert_eq!(
        outcome.status().code(),
        Some(7),
        "the TERM handler did not run to its exit"
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the wait sat out the grace period"
    );
    assert_eq!(fs::read_to_string(&file).unwrap(), "cleaned\n");
    let _ = fs::remove_file(file);
}

#[test]
fn drop_kills_the_group_and_reaps_the_leader() {
    let mut child = spawn_sh_piped("sleep 30 & echo $!; sleep 30");
    let sleeper = read_pid(child.stdout.take().unwrap());
    let leader = child.id();
    let _cleanup = KillOnDrop::new(vec![sleeper, leader]);
    let started = Instant::now();
    drop(child);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "drop blocked for {:?}",
        started.elapsed()
    );
    assert_reaped_and_killed(leader, sleeper);
}

/// The leader was reaped by us (it is gone, or its pid already names a process that is not our child), and the
/// background `sleeper` died.
fn assert_reaped_and_killed(leader: u32, sleeper: u32) {
    assert_ne!(
        parent_of(leader),
        Some(std::process::id()),
        "the leader is left as our zombie"
    );
    assert!(survivors_after(Duration::from_secs(5), &[sleeper]).is_empty());
}

#[test]
fn drop_after_the_leader_exited_kills_leftovers_and_reaps() {
    let mut child = spawn_sh_piped("sleep 30 & echo $!");
    let sleeper = read_pid(child.stdout.take().unwrap());
    let leader = child.id();
    let _cleanup = KillOnDrop::new(vec![sleeper]);
    assert!(eventually(LONG, || matches!(
        state_and_group(leader),
        Some(('Z', _))
    )));
    drop(child);
    assert_reaped_and_killed(leader, sleeper);
}

#[test]
fn concurrent_jobs_never_harm_a_bystander() {
    let mut bystanders: Vec<_> = (0..3)
        .map(|_| {
            use std::os::unix::process::CommandExt as _;
            Command::new("sleep")
                .arg("60")
                .process_group(0)
                .spawn()
                .unwrap()
        })
        .collect();
    let bystander_pids: Vec<u32> = bystanders.iter().map(std::process::Child::id).collect();
    let _cleanup = KillOnDrop::new(bystander_pids.clone());
    let workers: Vec<_> = (0..8)
        .map(|t| {
            thread::spawn(move || {
                for job in 0..8 {
                    // Half the jobs time out after a short wait; the others exit early (their wait is long, so
                    // that a loaded machine cannot turn them into timeouts).
                    let times_out = (t + job) % 2 == 0;
                    let (script, timeout) = if times_out {
                        ("sleep 30 & sleep 30", Duration::from_millis(50 + 20 * job))
                    } else {
                        ("sleep 30 & exit 0", LONG)
                    };
                    let mut child = sh(script).spawn_group().unwrap();
                    let outcome = child.wait_timeout(timeout).unwrap();
                    assert_eq!(outcome.timed_out(), times_out, "{script}: {outcome:?}");
                }
            })
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
    for (pid, child) in bystander_pids.iter().zip(&mut bystanders) {
        assert!(!is_dead(*pid), "bystander {pid} was hit");
        assert_eq!(child.try_wait().unwrap(), None);
        child.kill().unwrap();
        child.wait().unwrap();
    }
}

/// Issue 18.3: an error a system call returned is that OS error itself, so `raw_os_error()` is the errno and
/// `kind()` std's kind for it.
fn assert_os_error(err: &io::Error, errno: i32, kind: io::ErrorKind) {
    assert_eq!(err.raw_os_error(), Some(errno), "{err:?}");
    assert_eq!(err.kind(), kind, "{err:?}");
}

#[test]
fn spawn_errors_are_the_os_errors() {
    let err = Command::new("/nonexistent/grouptimeout-nope")
        .spawn_group()
        .unwrap_err();
    assert_os_error(&err, libc::ENOENT, io::ErrorKind::NotFound);

    let file = temp_path("not-executable");
    fs::write(&file, "#!/bin/sh\n").unwrap();
    fs::set_permissions(&file, fs::Permissions::from_mode(0o644)).unwrap();
    let err = Command::new(&file).spawn_group().unwrap_err();
    let _ = fs::remove_file(&file);
    assert_os_error(&err, libc::EACCES, io::ErrorKind::PermissionDenied);

    let err = Command::new(std::env::temp_dir())
        .spawn_group()
        .unwrap_err();
    assert_os_error(&err, libc::EACCES, io::ErrorKind::PermissionDenied);
}

#[test]
fn invalid_signals_of_handles_and_grace_are_einval() {
    let mut child = Command::new("sleep").arg("30").spawn_group().unwrap();
    let pid = child.id();
    let err = child.handle().signal(-3).unwrap_err();
    assert_os_error(&err, libc::EINVAL, io::ErrorKind::InvalidInput);
    assert!(!is_dead(pid), "nothing was sent");
    // A grace signal is sent at the deadline: the wait kills and reaps, then returns the error.
    child.set_grace(12345, LONG);
    let err = child.wait_timeout(Duration::ZERO).unwrap_err();
    assert_os_error(&err, libc::EINVAL, io::ErrorKind::InvalidInput);
    assert!(child.wait().unwrap().signal() == Some(libc::SIGKILL));
}

#[test]
fn a_group_this_process_may_not_signal_is_eperm() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        skip_or_fail(
            "a_group_this_process_may_not_signal_is_eperm",
            "needs root (to give up the right to signal a group it started)",
        );
        return;
    }
    let out = run_self_under(&["env"], "signals_after_dropping_root");
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The scenario prints the leader's pid and start time first; kill it whatever happened (it is root's, and now an
    // orphan), if it is still that process.
    let leader: Vec<(u32, u64)> = stdout
        .lines()
        .filter_map(|l| {
            let mut words = l.split_once("leader ")?.1.split_whitespace();
            Some((words.next()?.parse().ok()?, words.next()?.parse().ok()?))
        })
        .collect();
    drop(KillOnDrop::started(&leader));
    assert!(
        out.status.success() && stdout.contains("1 passed") && leader.len() == 1,
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Started by `a_group_this_process_may_not_signal_is_eperm`, as root: starts a group, then gives up root for good
/// (this whole test process), so that the group's members are another user's.
#[test]
#[ignore = "run by a_group_this_process_may_not_signal_is_eperm"]
fn signals_after_dropping_root() {
    // Not on our stdout and stderr: the test above reads them to the end, and the sleep outlives this process.
    let mut child = Command::new("sleep")
        .arg("30")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn_group()
        .unwrap();
    // Straight to the process's stdout: libtest captures `println!` of a passing test.
    let started = start_time(child.id()).expect("the leader's start time");
    writeln!(io::stdout(), "leader {} {started}", child.id()).unwrap();
    // SAFETY: plain system calls; libc applies them to every thread of the process.
    unsafe {
        assert_eq!(libc::setgroups(0, std::ptr::null()), 0);
        // As root, setgid and setuid set the real, effective and saved ids alike: no way back.
        assert_eq!(libc::setgid(65534), 0);
        assert_eq!(libc::setuid(65534), 0);
    }
    for err in [
        child.signal(libc::SIGTERM).unwrap_err(),
        child.kill().unwrap_err(),
        child.handle().kill().unwrap_err(),
    ] {
        assert_os_error(&err, libc::EPERM, io::ErrorKind::PermissionDenied);
    }
    // The drop cannot kill it either (it waits about a second); the test above kills it as root.
    drop(child);
}

#[test]
fn zero_timeout_reports_what_it_finds() {
    let mut done = Command::new("true").spawn_group().unwrap();
    assert!(eventually(LONG, || matches!(
        state_and_group(done.id()),
        Some(('Z', _))
    )));
    assert!(!done.wait_timeout(Duration::ZERO).unwrap().timed_out());

    let mut running = Command::new("sleep").arg("30").spawn_group().unwrap();
    let pid = running.id();
    let outcome = running.wait_timeout(Duration::ZERO).unwrap();
    assert_eq!(outcome, Outcome::TimedOut(outcome.status()));
    assert!(is_dead(pid));
}

#[test]
fn unrepresentable_deadlines_wait_like_wait() {
    let mut child = sh("sleep 0.2; exit 4").spawn_group().unwrap();
    assert_eq!(
        child.wait_timeout(Duration::MAX).unwrap(),
        Outcome::Exited(ExitStatusExt::from_raw(4 << 8))
    );

    let far = Instant::now() + Duration::from_secs(200 * 365 * 86_400);
    let mut child = sh("exit 5").spawn_group().unwrap();
    assert_eq!(child.wait_deadline(far).unwrap().status().code(), Some(5));
}

#[test]
fn after_the_reap_waits_repeat_and_signals_are_not_sent() {
    let mut child = Command::new("sleep").arg("30").spawn_group().unwrap();
    let first = child.wait_timeout(Duration::from_millis(50)).unwrap();
    assert!(first.timed_out());
    assert_eq!(child.wait_timeout(LONG).unwrap(), first);
    assert_eq!(child.wait().unwrap(), first.status());
    assert_eq!(child.try_wait().unwrap(), Some(first.status()));
    child.kill().unwrap();
    // An invalid signal number would fail with EINVAL if anything were sent.
    child.signal(12345).unwrap();
}

#[test]
fn signal_reaches_the_group_and_rejects_bad_numbers() {
    let mut child = spawn_sh_piped("sleep 30 & echo $!; wait");
    let sleeper = read_pid(child.stdout.take().unwrap());
    let _cleanup = KillOnDrop::new(vec![sleeper]);
    let err = child.signal(12345).unwrap_err();
    assert_os_error(&err, libc::EINVAL, io::ErrorKind::InvalidInput);
    assert_eq!(child.try_wait().unwrap(), None);
    child.signal(libc::SIGUSR1).unwrap();
    let status = child.wait_timeout(LONG).unwrap().status();
    assert_eq!(status.signal(), Some(libc::SIGUSR1));
    assert!(survivors_after(Duration::from_secs(5), &[sleeper]).is_empty());
}

#[test]
fn kill_then_wait_reports_the_kill() {
    let mut child = spawn_sh_piped("sleep 30 & echo $!; wait");
    let sleeper = read_pid(child.stdout.take().unwrap());
    let _cleanup = KillOnDrop::new(vec![sleeper]);
    child.kill().unwrap();
    assert!(
        survivors_after(Duration::from_secs(5), &[sleeper]).is_empty(),
        "kill missed a member"
    );
    assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGKILL));
}

/// Runs one `#[ignore]`d test of this binary in a fresh process, started through `launcher`.
fn run_self_under(launcher: &[&str], test: &str) -> std::process::Output {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = Command::new(launcher[0]);
    cmd.args(&launcher[1..])
        .arg(exe)
        .args(["--ignored", "--exact", test, "--test-threads=1"]);
    cmd.env("GROUPTIMEOUT_SELF_TEST", "1").output().unwrap()
}

#[test]
fn a_host_ignoring_sigchld_gets_a_clear_error() {
    if !common::have("a_host_ignoring_sigchld_gets_a_clear_error", "perl", "-v") {
        return;
    }
    let out = run_self_under(
        &["perl", "-e", "$SIG{CHLD} = 'IGNORE'; exec @ARGV or die"],
        "refuses_when_sigchld_ignored",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Started by `a_host_ignoring_sigchld_gets_a_clear_error` with SIGCHLD ignored.
#[test]
#[ignore = "run by a_host_ignoring_sigchld_gets_a_clear_error"]
fn refuses_when_sigchld_ignored() {
    assert!(
        std::env::var_os("GROUPTIMEOUT_SELF_TEST").is_some(),
        "run through its parent test"
    );
    let status = fs::read_to_string("/proc/self/status").unwrap();
    let ignored = status
        .lines()
        .find_map(|l| l.strip_prefix("SigIgn:"))
        .unwrap()
        .trim();
    assert_ne!(
        u64::from_str_radix(ignored, 16).unwrap() & (1 << (libc::SIGCHLD - 1)),
        0,
        "SIGCHLD is not ignored"
    );
    let err = Command::new("true").spawn_group().unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::Unsupported);
    assert!(err.to_string().contains("SIGCHLD"), "{err}");
}

#[test]
fn no_group_is_signalled_after_its_leader_was_reaped() {
    let Some(lines) = strace_scenario(
        "no_group_is_signalled_after_its_leader_was_reaped",
        "scenarios_for_strace",
    ) else {
        return;
    };
    let mut reaped = Vec::new();
    let mut group_kills = 0;
    for event in reaps_and_kills(&lines) {
        match event {
            Traced::Reaped(pid) => reaped.push(pid),
            Traced::Killed(target) if target < 0 => {
                let pgid = -target;
                assert!(
                    !reaped.contains(&pgid),
                    "group {pgid} signalled after its leader was reaped:\n{lines}"
                );
                group_kills += 1;
            }
            Traced::Killed(_) => {}
        }
    }
    // The timeout, the leftovers and the drop each send at least one group kill, and three leaders are reaped.
    assert!(
        group_kills >= 3 && reaped.len() >= 3,
        "the trace misses the scenarios:\n{lines}"
    );
}

/// Started under strace by `no_group_is_signalled_after_its_leader_was_reaped`.
#[test]
#[ignore = "run by no_group_is_signalled_after_its_leader_was_reaped"]
fn scenarios_for_strace() {
    let mut timed_out = sh("sleep 30 & sleep 30").spawn_group().unwrap();
    assert!(timed_out
        .wait_timeout(Duration::from_millis(100))
        .unwrap()
        .timed_out());
    timed_out.kill().unwrap();
    let mut leftovers = sh("sleep 30 & exit 0").spawn_group().unwrap();
    assert!(!leftovers.wait_timeout(LONG).unwrap().timed_out());
    leftovers.signal(libc::SIGTERM).unwrap();
    drop(sh("sleep 30 & sleep 30").spawn_group().unwrap());
}

#[test]
fn a_leader_reaped_by_someone_else_is_never_signalled() {
    let mut child = Command::new("true").spawn_group().unwrap();
    let pid = child.id();
    // Someone else (here: the test itself) reaps the leader, as a `waitpid(-1)` elsewhere in a program would.
    let mut status = 0;
    let raw_pid = libc::pid_t::try_from(pid).unwrap();
    // SAFETY: `status` is a live int; `pid` is our unreaped child, which nothing else in this test waits for.
    let reaped = unsafe { libc::waitpid(raw_pid, &raw mut status, 0) };
    assert_eq!(reaped, raw_pid);
    // ECHILD as it is (issue 18.3): std's kind for it, and the errno.
    let echild = |err: io::Error| {
        assert_eq!(err.raw_os_error(), Some(libc::ECHILD), "{err:?}");
        assert_eq!(
            err.kind(),
            io::Error::from_raw_os_error(libc::ECHILD).kind(),
            "{err:?}"
        );
    };
    echild(child.kill().unwrap_err());
    echild(child.signal(libc::SIGTERM).unwrap_err());
    echild(child.handle().kill().unwrap_err());
    echild(child.try_wait().unwrap_err());
    echild(child.wait_timeout(Duration::ZERO).unwrap_err());
}

/// A leader that moves itself into its parent's process group (ours), prints its pid and sleeps 20 s: a group kill
/// alone would hit an empty group and leave it running.
fn spawn_leader_that_leaves_its_group() -> (GroupChild, KillOnDrop) {
    let mut child = Command::new("perl")
        .args([
            "-e",
            "$| = 1; setpgrp(0, getpgrp(getppid())) or die; print \"$$\\n\"; sleep 20",
        ])
        .stdout(Stdio::piped())
        .spawn_group()
        .expect("spawn perl");
    let leader = read_pid(child.stdout.take().unwrap());
    assert_eq!(leader, child.id());
    assert_eq!(
        state_and_group(leader).map(|(_, g)| g),
        Some(common::own_group())
    );
    (child, KillOnDrop::new(vec![leader]))
}

#[test]
fn a_leader_that_left_its_group_is_killed_at_the_deadline() {
    if !common::have(
        "a_leader_that_left_its_group_is_killed_at_the_deadline",
        "perl",
        "-v",
    ) {
        return;
    }
    let (mut child, _cleanup) = spawn_leader_that_leaves_its_group();
    let started = Instant::now();
    let outcome = child.wait_timeout(Duration::from_millis(300)).unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the wait lasted the leader's life"
    );
    assert_eq!(outcome, Outcome::TimedOut(outcome.status()));
    assert_eq!(outcome.status().signal(), Some(libc::SIGKILL));
}

#[test]
fn a_leader_that_left_its_group_gets_the_grace_signal() {
    if !common::have(
        "a_leader_that_left_its_group_gets_the_grace_signal",
        "perl",
        "-v",
    ) {
        return;
    }
    let (mut child, _cleanup) = spawn_leader_that_leaves_its_group();
    child.set_grace(libc::SIGTERM, Duration::from_secs(30));
    let outcome = child.wait_timeout(Duration::from_millis(300)).unwrap();
    assert_eq!(outcome, Outcome::TimedOut(outcome.status()));
    assert_eq!(
        outcome.status().signal(),
        Some(libc::SIGTERM),
        "the leader did not get the grace signal"
    );
}

#[test]
fn a_leader_that_left_its_group_is_killed_by_drop() {
    if !common::have(
        "a_leader_that_left_its_group_is_killed_by_drop",
        "perl",
        "-v",
    ) {
        return;
    }
    let (child, _cleanup) = spawn_leader_that_leaves_its_group();
    let leader = child.id();
    drop(child);
    assert_ne!(
        parent_of(leader),
        Some(std::process::id()),
        "the leader is still running (or left as our zombie) after the drop"
    );
}

#[test]
fn a_stop_signal_as_grace_signal_is_not_undone_by_sigcont() {
    // Issue 16.10: the grace signal used to be followed by SIGCONT whatever it was, so a SIGSTOP never held.
    let mut child = Command::new("sleep").arg("30").spawn_group().unwrap();
    let pid = child.id();
    let _cleanup = KillOnDrop::new(vec![pid]);
    child.set_grace(libc::SIGSTOP, Duration::from_secs(3));
    let watcher = thread::spawn(move || {
        // Stopped soon after the deadline, and still stopped a while later: no SIGCONT followed.
        eventually(Duration::from_secs(2), || {
            matches!(state_and_group(pid), Some(('T', _)))
        }) && {
            thread::sleep(Duration::from_millis(500));
            matches!(state_and_group(pid), Some(('T', _)))
        }
    });
    let outcome = child.wait_timeout(Duration::from_millis(200)).unwrap();
    assert!(outcome.timed_out(), "{outcome:?}");
    // SIGKILL ended the stopped group after the grace period.
    assert_eq!(outcome.status().signal(), Some(libc::SIGKILL));
    assert!(watcher.join().unwrap(), "the group did not stay stopped");
}

/// Issue 24.5: `spawn_group` sets `process_group(0)` on the caller's `Command`, and it stays there, as its docs say: a
/// later plain `spawn` of the same `Command` starts a leader of a new group too.
#[test]
fn the_process_group_setting_stays_on_the_command() {
    if common::linux_only(
        "the_process_group_setting_stays_on_the_command",
        "/proc/PID/stat",
    ) {
        return;
    }
    let mut cmd = Command::new("sleep");
    cmd.arg("30");
    let mut group = cmd.spawn_group().unwrap();
    let mut plain = cmd.spawn().unwrap();
    let (_, pgid) = common::state_and_group(plain.id()).unwrap();
    plain.kill().unwrap();
    plain.wait().unwrap();
    group.kill().unwrap();
    group.wait().unwrap();
    assert_eq!(
        pgid,
        plain.id(),
        "a plain spawn after spawn_group did not lead a group"
    );
    assert_ne!(pgid, common::own_group());
}

/// A grace signal of 0 sends nothing, so a grace period after it would only delay the `SIGKILL`: the deadline kills
/// at once, as without a grace (and as `die_with_parent`'s plan reads it). Before, the wait sent nothing and slept
/// the whole grace period (here 60 s).
#[test]
fn a_grace_signal_of_zero_kills_at_the_deadline() {
    let mut child = Command::new("sleep").arg("60").spawn_group().unwrap();
    child.set_grace(0, Duration::from_secs(60));
    let started = Instant::now();
    let outcome = child.wait_timeout(Duration::from_millis(100)).unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        outcome,
        Outcome::TimedOut(std::process::ExitStatus::from_raw(libc::SIGKILL))
    );
}
