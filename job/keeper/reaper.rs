//! The job as the keeper's descendants: the keeper is a child subreaper (in both modes: set before the command
//! started), so every orphan of the job becomes its child, however it daemonised. Here: its children as `/proc`
//! lists them, the orphans reaped as they exit (never the command before the keeper's end), and the kill of what is
//! left: the keeper's children killed (each pinned until the keeper reaps it: its pid names no other process), reaped,
//! and again with the orphans their deaths hand it, layer by layer, until the command is its only child.

use std::fs;
use std::io;
use std::time::{Duration, Instant};

use crate::sys;

/// The children of process `pid` (of each of its threads), alive or exited and not reaped; `None` where `/proc`
/// cannot tell.
pub(crate) fn children(pid: u32) -> Option<Vec<u32>> {
    let mut found = Vec::new();
    let tasks = fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    for task in tasks.flatten() {
        let path = task.path().join("children");
        let text = fs::read_to_string(path).ok()?;
        found.extend(
            text.split_whitespace()
                .filter_map(|p| p.parse::<u32>().ok()),
        );
    }
    Some(found)
}

/// Names in `reached` every process below the keeper (found through `/proc/PID/task/TID/children`, at most
/// [`WALK_AT_MOST`]) that is in the process group `group` (the command's: the keeper left it), but the command: whether
/// every one of them, the command too, is stopped or dead.
pub(crate) fn name_group(group: u32, command: u32, reached: &mut Vec<(u32, String)>) -> bool {
    let mut stopped = true;
    let mut below = children(std::process::id()).unwrap_or_default();
    let mut at = 0;
    while let Some(&pid) = below.get(at) {
        at += 1;
        let Some(stat) = Stat::read(pid) else {
            continue;
        };
        if stat.group == group {
            stopped &= matches!(stat.state, b'T' | b't') || stat.dead();
            if pid != command {
                record(reached, pid, stat.name);
            }
        }
        if below.len() < WALK_AT_MOST {
            below.extend(children(pid).unwrap_or_default());
        }
    }
    stopped
}

/// How many processes [`name_group`] looks at, at most.
const WALK_AT_MOST: usize = 100_000;

/// Reaps the keeper's children that exited, but the command: `waitid(P_ALL, WNOWAIT)` names one that exited; once
/// that is the command (a zombie until the keeper's end), the children `/proc` lists are reaped one by one instead.
/// Those that `SIGKILL` killed go to `killed` (pid, and the name read before the reap).
pub(crate) fn reap_orphans(command: u32, killed: &mut Vec<(u32, String)>) {
    loop {
        let Ok(Some(exited)) = sys::wait_child(0, sys::WEXITED | sys::WNOWAIT) else {
            return;
        };
        let exited = exited.pid.unsigned_abs();
        if exited != command {
            reap_killed(exited, killed);
            continue;
        }
        for child in children(std::process::id()).unwrap_or_default() {
            if child != command
                && sys::wait_child(child, sys::WEXITED | sys::WNOWAIT).is_ok_and(|e| e.is_some())
            {
                reap_killed(child, killed);
            }
        }
        return;
    }
}

/// Reaps the child `pid` if it exited; one that `SIGKILL` killed goes to `killed` (its name read before the reap).
fn reap_killed(pid: u32, killed: &mut Vec<(u32, String)>) {
    let name = Stat::read(pid).map(|s| s.name);
    if let Ok(Some(exit)) = sys::wait_child(pid, sys::WEXITED) {
        if exit.code != sys::CLD_EXITED && exit.status == sys::SIGKILL {
            record(killed, pid, name.unwrap_or_default());
        }
    }
}

/// Reaps the command (waiting for its exit, which a kill has made certain): its report, `None` if it cannot.
pub(crate) fn reap(command: u32) -> Option<sys::Report> {
    loop {
        match sys::wait_child(command, sys::WEXITED) {
            Ok(Some(exit)) => return Some(exit),
            // Not yet (a process stuck in uninterruptible sleep dies when it wakes): a pause, never a spin.
            Ok(None) => {
                let _ = sys::poll_for(&mut [], Some(Duration::from_millis(5)));
            }
            Err(_) => return None,
        }
    }
}

/// Kills the job's processes below the keeper (the command, dead or dying, aside): every child of the keeper's is
/// sent `SIGKILL` (and named in `reached` the first time), those that exited are reaped (named in `killed` where
/// `SIGKILL` ended one the keeper had not signalled, say the caller's group kill), and this is done again with the
/// orphans their deaths hand the keeper, until the command (dead) is its only child, within `limit`.
///
/// # Errors
///
/// A kill refused (another user's process: the pids and names said).
pub(crate) fn kill(
    command: u32,
    limit: Duration,
    reached: &mut Vec<(u32, String)>,
    killed: &mut Vec<(u32, String)>,
) -> io::Result<()> {
    let deadline = Instant::now() + limit;
    let mut denied: Vec<(u32, String)> = Vec::new();
    loop {
        // Asked before the list: once the command is a zombie, its children are the keeper's already.
        let command_dead =
            sys::wait_child(command, sys::WEXITED | sys::WNOWAIT).is_ok_and(|e| e.is_some());
        let mut others = 0;
        for child in children(std::process::id()).unwrap_or_default() {
            if child == command || denied.iter().any(|(p, _)| *p == child) {
                continue;
            }
            others += 1;
            match Stat::read(child) {
                Some(stat) if !stat.dead() && !reached.iter().any(|(p, _)| *p == child) => {
                    // Our child, unreaped: its pid is pinned.
                    match sys::send_signal(i32::try_from(child).unwrap_or(0), sys::SIGKILL) {
                        Err(e) if e.raw_os_error() == Some(1) => denied.push((child, stat.name)),
                        _ => record(reached, child, stat.name),
                    }
                }
                _ => reap_killed(child, killed),
            }
        }
        if (others == 0 && command_dead) || Instant::now() >= deadline {
            break;
        }
        let _ = sys::poll_for(&mut [], Some(Duration::from_micros(200)));
    }
    if denied.is_empty() {
        return Ok(());
    }
    let named: Vec<String> = denied.iter().map(|(p, n)| format!("{p} ({n})")).collect();
    Err(io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!(
            "no permission to signal the job's processes {} (another user's: a setuid program?)",
            named.join(", ")
        ),
    ))
}

/// Records `pid` as reached by a kill (once).
pub(crate) fn record(reached: &mut Vec<(u32, String)>, pid: u32, name: String) {
    if !reached.iter().any(|(p, _)| *p == pid) {
        reached.push((pid, name));
    }
}

/// The kernel's flag of a task in its exit (`include/linux/sched.h`), in `/proc/PID/stat`'s flags.
const PF_EXITING: u64 = 0x4;

/// What a process's `/proc/PID/stat` says that a kill needs.
pub(crate) struct Stat {
    pub(crate) name: String,
    state: u8,
    /// Its process group.
    group: u32,
    /// Exited, killed by `SIGKILL` (its exit status says so).
    killed: bool,
    /// In its exit (the kernel's `PF_EXITING`, from the start of its exit on).
    exiting: bool,
}

impl Stat {
    /// `None` when the process is gone.
    pub(crate) fn read(pid: u32) -> Option<Stat> {
        let text = fs::read(format!("/proc/{pid}/stat")).ok()?;
        let open = text.iter().position(|&b| b == b'(')?;
        let close = text.iter().rposition(|&b| b == b')')?;
        let fields: Vec<&[u8]> = text.get(close + 2..)?.split(|&b| b == b' ').collect();
        let number = |at: usize| -> Option<u64> {
            std::str::from_utf8(fields.get(at)?.trim_ascii_end())
                .ok()?
                .parse()
                .ok()
        };
        // After the name: state (field 3), ppid, pgrp (5), session, tty_nr, tpgid, flags (9), ... exit_code (52).
        let state = *fields.first()?.first()?;
        let dead = matches!(state, b'Z' | b'X' | b'x');
        Some(Stat {
            name: String::from_utf8_lossy(text.get(open + 1..close)?).into_owned(),
            state,
            group: u32::try_from(number(2)?).ok()?,
            killed: dead && number(49).is_some_and(|code| code & 0x7f == 9),
            exiting: number(6).is_some_and(|flags| flags & PF_EXITING != 0),
        })
    }

    /// A zombie, or dead.
    pub(crate) fn dead(&self) -> bool {
        matches!(self.state, b'Z' | b'X' | b'x')
    }

    /// Dead, or in its exit.
    pub(crate) fn dying(&self) -> bool {
        self.dead() || self.exiting
    }

    /// Whether a `SIGKILL` just sent may have reached it: it still runs, or it exited killed by `SIGKILL`.
    pub(crate) fn reached_by_kill(&self) -> bool {
        !self.dead() || self.killed
    }
}
