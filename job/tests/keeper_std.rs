//! The std internals that the job's keeper (src/sys/keeper.rs) relies on, checked on this toolchain, so that a std
//! that changes them fails here, loudly and by name, instead of in the keeper's own tests by a hung spawn or a lost
//! error.
//!
//! The keeper is made inside a `pre_exec` hook (std forks, runs the hooks in the child, then execs), and relies on:
//!
//! 1. std passing the OS error code of a hook's error to the spawn's error unchanged, however large: the keeper fails
//!    the spawn with `KEEPER_FAILED` (1 << 20) plus its errno, which no `exec` error is, so that this process tells
//!    "the keeper could not start the command" from "the command's exec failed";
//! 2. std's spawn returning once the command's process has exec'd, although the keeper (the process std forked)
//!    never returns from the hook and never execs: std waits on a close-on-exec pipe that the child inherits (end of
//!    file once every copy of its write end is closed), and the keeper closes its copy (`close_all_but`);
//! 3. std reporting a failed `exec` of the command's process through that pipe, and then reaping the process it
//!    forked (the keeper, which exits at once when the command failed its `exec` before the spawn returned).
//!
//! Reaper mode (no cgroup), so that this runs on every Linux, as any user. The cases run one at a time (a lock), so
//! that each may check this process's children.
#![cfg(all(target_os = "linux", not(grouptimeout_portable)))]

mod common;

use common::{eventually, is_dead, state_and_group};

use std::fs;
use std::io;
use std::os::unix::process::CommandExt as _;
use std::process::Command;
use std::sync::{mpsc, Mutex, MutexGuard};
use std::thread;
use std::time::Duration;

use grouptimeout::GroupChild;
use grouptimeout_job::{Contain, Containment, JobChildExt as _};

/// The keeper's `KEEPER_FAILED` (src/sys/keeper.rs): added to the errno of a keeper that could not start the command.
const KEEPER_FAILED: i32 = 1 << 20;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn reaper() -> Contain {
    let mut contain = Contain::new();
    contain.cgroup(false).require(Containment::Reaper);
    contain
}

/// Spawns the command `make` gives in reaper mode, on a thread of its own: its result, or a panic that says `what` if
/// the spawn has not returned within 10 s (a spawn that std no longer ends as the keeper expects would hang).
fn spawn_within(
    what: &'static str,
    make: impl FnOnce() -> Command + Send + 'static,
) -> io::Result<GroupChild> {
    let (sent, spawned) = mpsc::channel();
    thread::spawn(move || {
        let _ = sent.send(reaper().spawn(&mut make()));
    });
    match spawned.recv_timeout(Duration::from_secs(10)) {
        Ok(spawned) => spawned,
        Err(timeout) => panic!(
            "std assumption broken ({timeout}): Command::spawn did not return within 10 s: {what}"
        ),
    }
}

/// The children of this process (every thread's), alive or not yet reaped.
fn our_children() -> Vec<u32> {
    let mut children = Vec::new();
    for task in fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .flatten()
    {
        let list = fs::read_to_string(task.path().join("children")).unwrap_or_default();
        children.extend(
            list.split_whitespace()
                .filter_map(|pid| pid.parse::<u32>().ok()),
        );
    }
    children
}

/// The name (`comm`) of process `pid`, empty once it is gone.
fn name_of(pid: u32) -> String {
    fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim()
        .to_owned()
}

/// Assumption 1, std alone: a `pre_exec` hook's error reaches the spawn's error with its OS error code unchanged,
/// for the codes the keeper uses (`KEEPER_FAILED` plus an errno), and std reaps the child it forked.
#[test]
fn std_passes_a_pre_exec_hooks_error_code_unchanged() {
    let _one = one_at_a_time();
    for errno in [libc::EAGAIN, libc::EPERM, libc::ESRCH, libc::EINVAL, 4095] {
        let code = KEEPER_FAILED + errno;
        let mut command = Command::new("/bin/sh");
        command.arg("-c").arg("exit 0");
        // SAFETY: the hook only builds an io::Error from an integer (no allocation for an OS error).
        unsafe { command.pre_exec(move || Err(io::Error::from_raw_os_error(code))) };
        let got = command.spawn().map(|mut child| child.wait());
        let got_code = got.as_ref().err().and_then(io::Error::raw_os_error);
        assert_eq!(
            got_code,
            Some(code),
            "std assumption broken: a pre_exec hook's error no longer reaches Command::spawn's error with its OS \
             error code unchanged (hook returned code {code}, spawn gave {got:?}); the job's keeper (src/sys/keeper.rs, \
             KEEPER_FAILED) reports through that code that it could not start the command"
        );
        assert!(
            eventually(Duration::from_secs(5), || our_children().is_empty()),
            "std assumption broken: std no longer reaps the child whose pre_exec hook failed (children left: {:?})",
            our_children()
        );
    }
}

/// Assumption 1, through the keeper: a keeper that could not make the command's process (no process may be made:
/// `RLIMIT_NPROC` 0, set by a hook that runs before the keeper's) fails the spawn with its own error, which names
/// the reason, and not with a raw code of std's.
#[test]
fn a_keeper_that_cannot_start_the_command_fails_the_spawn_with_its_own_error() {
    let _one = one_at_a_time();
    // SAFETY: getuid has no preconditions.
    let root = unsafe { libc::getuid() } == 0;
    // Root (of the first user namespace) is not held to RLIMIT_NPROC: the command then runs as nobody (std switches
    // users before the hooks), which is.
    for as_nobody in [false, true] {
        if as_nobody && !root {
            break;
        }
        let make = move || {
            let mut command = Command::new("/bin/sh");
            command.arg("-c").arg("exit 0");
            if as_nobody {
                command.uid(65534).gid(65534);
            }
            // SAFETY: setrlimit with a struct that lives across the call: async-signal-safe.
            unsafe {
                command.pre_exec(|| {
                    let none = libc::rlimit {
                        rlim_cur: 0,
                        rlim_max: 0,
                    };
                    if libc::setrlimit(libc::RLIMIT_NPROC, &raw const none) != 0 {
                        return Err(io::Error::last_os_error());
                    }
                    Ok(())
                })
            };
            command
        };
        let spawned = spawn_within(
            "std reads a pre_exec hook's error from its close-on-exec pipe and then waits for the process it \
             forked (the keeper, which exits at once when it could not start the command)",
            make,
        );
        match spawned {
            // Not held to the limit (root, or CAP_SYS_RESOURCE): the keeper started the command.
            Ok(mut child) => {
                child.wait().expect("the job ends");
            }
            Err(e) => {
                assert!(
                    e.raw_os_error().is_none_or(|code| code < KEEPER_FAILED)
                        && e.to_string().contains("RLIMIT_NPROC")
                        && e.kind() == io::ErrorKind::WouldBlock,
                    "std assumption broken: the keeper's error (KEEPER_FAILED + EAGAIN through its pre_exec hook) \
                     did not reach Command::spawn's error as its OS error code, so the crate no longer tells a \
                     keeper that could not start the command (src/sys/keeper.rs, KEEPER_FAILED) from a failed \
                     exec; the spawn's error: {e:?} ({e})"
                );
                assert!(
                    eventually(Duration::from_secs(5), || our_children().is_empty()),
                    "std no longer reaps the keeper whose pre_exec hook failed (children left: {:?})",
                    our_children()
                );
                return;
            }
        }
    }
    eprintln!(
        "skipped: this user is not held to RLIMIT_NPROC, and cannot run the command as nobody"
    );
}

/// Assumption 2: the spawn returns as soon as the command's process has exec'd, while the keeper (which std forked,
/// and whose hook never returns) lives on: std waits on its close-on-exec pipe, which the keeper closes.
#[test]
fn the_spawn_returns_once_the_command_execs_though_the_keeper_never_returns() {
    let _one = one_at_a_time();
    let mut child = spawn_within(
        "the command (sleep 20) runs under its keeper, but std's spawn no longer returns once the forked child's \
         copies of its close-on-exec error pipe are closed (the command's at its exec, the keeper's by close_all_but \
         in src/sys/keeper.rs), or it now waits for the forked process itself (the keeper, which never returns from \
         its pre_exec hook)",
        || {
            let mut command = Command::new("/bin/sleep");
            command.arg("20");
            command
        },
    )
    .expect("a reaper job spawns");
    let keeper = child.id();
    let command = child.command_id();
    let running = state_and_group(command).is_some_and(|(state, _)| state != 'Z')
        && name_of(command) == "sleep"
        && !is_dead(keeper);
    child.kill().expect("the job is killed");
    child.wait().expect("the job is reaped");
    assert!(
        running,
        "the spawn returned, but the command (pid {command}, {:?}) or its keeper (pid {keeper}) was not running",
        name_of(command)
    );
    assert!(is_dead(keeper) && is_dead(command));
}

/// Assumption 3: a command that fails its `exec` under a keeper is the spawn's error (std reads the errno from its
/// pipe), and std reaps the keeper (which ends the job and exits at once).
#[test]
fn a_failed_exec_under_a_keeper_is_the_spawns_error_and_std_reaps_the_keeper() {
    let _one = one_at_a_time();
    let got = spawn_within(
        "after the command's failed exec, std reads its errno from the close-on-exec pipe and then waits for the \
         process it forked (the keeper, which exits at once when the command failed its exec before the spawn \
         returned)",
        || Command::new("/nonexistent/keeper_std/program"),
    );
    let code = got.as_ref().err().and_then(io::Error::raw_os_error);
    if let Ok(mut child) = got {
        let _ = child.kill();
        let _ = child.wait();
    }
    assert_eq!(
        code,
        Some(libc::ENOENT),
        "std assumption broken: a failed exec of the command (made by the keeper inside std's pre_exec hook) no \
         longer reaches Command::spawn's error through std's close-on-exec error pipe as its errno"
    );
    assert!(
        eventually(Duration::from_secs(5), || our_children().is_empty()),
        "std assumption broken: after a failed exec std no longer reaps the process it forked (the keeper, which \
         exits as soon as the command failed its exec); children left: {:?}",
        our_children()
            .into_iter()
            .map(|pid| (pid, name_of(pid)))
            .collect::<Vec<_>>()
    );
}

/// The keeper leaves the command's group before the spawn returns (it joins its helper's group before it closes its
/// copy of std's error pipe): a caller that kills the command's group right after the spawn, say a `wait_timeout`
/// whose deadline passed on a busy machine, must not kill the keeper with it. A keeper killed so took the job's
/// orphans along to init (reaper mode), and `leftovers()` came back empty (seen as `0 leftovers` in row 10b of the
/// bench: the keeper, preempted between that close and its `setpgid`, was still in the group).
#[test]
fn the_keeper_has_left_the_commands_group_when_the_spawn_returns() {
    let _one = one_at_a_time();
    // Two busy threads, so that the keeper is more often preempted (the race was one of some hundred spawns).
    let _busy = StopOnDrop::busy(2);
    for _ in 0..500 {
        let mut child = reaper()
            .spawn(Command::new("/bin/sleep").arg("20"))
            .expect("a reaper job spawns");
        let keeper = child.id();
        let group = state_and_group(keeper).map(|(_, group)| group);
        child.kill().expect("the job is killed");
        child.wait().expect("the job is reaped");
        assert!(
            group.is_some_and(|group| group != keeper),
            "right after the spawn, the keeper (pid {keeper}) was in group {group:?}, the command's"
        );
    }
}

/// Stops and joins the busy threads, also when an assertion failed.
struct StopOnDrop(
    std::sync::Arc<std::sync::atomic::AtomicBool>,
    Vec<thread::JoinHandle<()>>,
);

impl StopOnDrop {
    /// Starts `n` threads that spin until the value is dropped.
    fn busy(n: usize) -> StopOnDrop {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let busy = (0..n)
            .map(|_| {
                let stop = stop.clone();
                thread::spawn(move || while !stop.load(std::sync::atomic::Ordering::Relaxed) {})
            })
            .collect();
        StopOnDrop(stop, busy)
    }
}

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
        for busy in self.1.drain(..) {
            let _ = busy.join();
        }
    }
}

/// Reaper mode: `leftovers()` names the job's escapees also when the command dies between the kill's read of the
/// keeper's children and its check of the command (its children, handed to the keeper after that read, were not
/// looked for: the kill ended with none recorded, about one job in 200 on a busy machine). Jobs of 20 `setsid`
/// escapees ended at once, beside two busy threads.
#[test]
fn reaper_leftovers_name_the_escapees_of_a_command_that_dies_during_the_kill() {
    let _one = one_at_a_time();
    let _busy = StopOnDrop::busy(2);
    let script = "i=0; while [ $i -lt 20 ]; do setsid sleep 30 & i=$((i+1)); done; echo ready; exec sleep 30";
    for round in 0..150 {
        let mut child = reaper()
            .spawn(
                Command::new("sh")
                    .args(["-c", script])
                    .stdout(std::process::Stdio::piped()),
            )
            .expect("a reaper job spawns");
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().expect("its stdout")),
            &mut line,
        )
        .expect("the job says it is ready");
        let outcome = child
            .wait_timeout(Duration::ZERO)
            .expect("the job is ended");
        assert!(outcome.timed_out(), "{outcome}");
        let left: Vec<u32> = child.leftovers().iter().map(|l| l.pid).collect();
        assert!(
            eventually(Duration::from_secs(10), || left
                .iter()
                .all(|&pid| is_dead(pid))),
            "escapees {left:?} alive 10 s after the wait"
        );
        assert!(
            left.len() >= 20,
            "job {round}: {} of the 20 escapees in leftovers()",
            left.len()
        );
    }
}
