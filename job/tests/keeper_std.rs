//! What std does that the kept spawn relies on (`job/src/keeper.rs`: the spawning child, which shares this
//! process's memory until it execs the keeper program, spawns the command with std's own `Command::spawn`), checked on
//! this toolchain, so that a std that changes it fails here, loudly and by name, instead of in the keeper's own tests
//! by a hung spawn or a lost error:
//!
//! 1. the spawn returns once the command's process has exec'd;
//! 2. a failed `exec` of the command is the spawn's error, with nothing left running or unreaped;
//! 3. the command inherits the caller's signal mask and ignored signals, as from `spawn_group` (std resets neither
//!    but `SIGPIPE`'s disposition, and the spawning child hands the caller's mask on).
//!
//! And two promises of the kept spawn beside them: the keeper is out of the command's group when the spawn returns,
//! and reaper leftovers are named also when the command dies during the kill. Reaper mode (no cgroup), so that this
//! runs on every Linux, as any user. The cases run one at a time (a lock), so that each may check this process's
//! children.
#![cfg(all(target_os = "linux", not(grouptimeout_portable)))]

mod common;

use common::{eventually, is_dead, state_and_group};

use std::fs;
use std::io;
use std::process::Command;
use std::sync::{mpsc, Mutex, MutexGuard};
use std::thread;
use std::time::Duration;

use grouptimeout::GroupChild;
use grouptimeout_job::{Contain, Containment, JobChildExt as _};

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

/// Assumption 1: the spawn returns as soon as the command's process has exec'd, its keeper running.
#[test]
fn the_spawn_returns_once_the_command_execs() {
    let _one = one_at_a_time();
    let mut child = spawn_within(
        "the command (sleep 20) runs under its keeper, but std's spawn in the spawning child no longer returns once \
         the command exec'd",
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

/// Assumption 2: a command that fails its `exec` under a keeper is the spawn's error (std's, which the spawning child
/// hands on), and nothing is left: no keeper was started, and the spawning child was reaped.
#[test]
fn a_failed_exec_under_a_keeper_is_the_spawns_error_and_leaves_nothing() {
    let _one = one_at_a_time();
    let got = spawn_within("a failed exec of the command in the spawning child", || {
        Command::new("/nonexistent/keeper_std/program")
    });
    let code = got.as_ref().err().and_then(io::Error::raw_os_error);
    if let Ok(mut child) = got {
        let _ = child.kill();
        let _ = child.wait();
    }
    assert_eq!(
        code,
        Some(libc::ENOENT),
        "std assumption broken: a failed exec of the command no longer reaches Command::spawn's error as its errno"
    );
    assert!(
        eventually(Duration::from_secs(5), || our_children().is_empty()),
        "after a failed exec, children are left: {:?}",
        our_children()
            .into_iter()
            .map(|pid| (pid, name_of(pid)))
            .collect::<Vec<_>>()
    );
}

/// Assumption 3: the command's blocked and ignored signals are the caller's, as `spawn_group` hands them on (the
/// spawning child blocks every signal while it runs, and gives its handlers nothing to do: what the command gets is
/// what the caller had). Checked in a re-run of this program, whose thread blocks `SIGUSR2` and which ignores
/// `SIGUSR1`.
#[test]
fn the_command_gets_the_callers_mask_and_ignored_signals() {
    let _one = one_at_a_time();
    let test = "the_command_gets_the_callers_mask_and_ignored_signals";
    if std::env::var_os("GROUPTIMEOUT_TEST_SIGNALS").is_some() {
        // SAFETY: sigaction with SIG_IGN and pthread_sigmask with sets that live across the calls.
        unsafe {
            libc::signal(libc::SIGUSR1, libc::SIG_IGN);
            let mut set = std::mem::zeroed::<libc::sigset_t>();
            libc::sigemptyset(&raw mut set);
            libc::sigaddset(&raw mut set, libc::SIGUSR2);
            libc::pthread_sigmask(libc::SIG_BLOCK, &raw const set, std::ptr::null_mut());
        }
        let masks = |pid: u32| -> Vec<String> {
            fs::read_to_string(format!("/proc/{pid}/status"))
                .unwrap_or_default()
                .lines()
                .filter(|l| l.starts_with("SigBlk:") || l.starts_with("SigIgn:"))
                .map(str::to_owned)
                .collect()
        };
        let mut plain =
            grouptimeout::GroupCommandExt::spawn_group(Command::new("sleep").arg("20")).unwrap();
        let mut kept = reaper().spawn(Command::new("sleep").arg("20")).unwrap();
        // Once each exec'd (`sleep`'s own name).
        assert!(eventually(Duration::from_secs(10), || name_of(plain.id())
            == "sleep"
            && name_of(kept.command_id()) == "sleep"));
        let (plain_masks, kept_masks) = (masks(plain.id()), masks(kept.command_id()));
        plain.kill().unwrap();
        kept.kill().unwrap();
        plain.wait().unwrap();
        kept.wait().unwrap();
        assert_eq!(plain_masks.len(), 2);
        assert_eq!(kept_masks, plain_masks);
        return;
    }
    common::passes_alone(test, &[("GROUPTIMEOUT_TEST_SIGNALS", "1")], "the inner run");
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
