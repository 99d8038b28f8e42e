//! The job as the keeper's descendants: the keeper is a child subreaper (in both modes: set before the command
//! started), so every orphan of the job becomes its child, however it daemonised. Here: its children as `/proc`
//! lists them, the orphans reaped as they exit (never the command before the keeper's end), and reaper mode's kill:
//! the tree walked from the keeper down, each process signalled through a pidfd opened before its parent is checked
//! again (a pid reused meanwhile is never signalled), again until nothing is left.

use std::fs;
use std::io;
use std::os::fd::{AsRawFd as _, OwnedFd};
use std::time::{Duration, Instant};

use crate::sys::{self, PollFd};

/// How deep a walk goes below the keeper.
const DEPTH_LIMIT: usize = 64;

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

/// Kills every child of the keeper's but the command (pinned: its children), reaps them, and repeats with the
/// orphans that brings, until the command (dead) is its only child, within about `limit`.
pub(crate) fn reap_all_but(command: u32, limit: Duration, killed: &mut Vec<(u32, String)>) {
    let deadline = Instant::now() + limit;
    loop {
        // Asked before the list: once the command is a zombie, its children are the keeper's already.
        let command_dead =
            sys::wait_child(command, sys::WEXITED | sys::WNOWAIT).is_ok_and(|exit| exit.is_some());
        let mut others = 0;
        for child in children(std::process::id()).unwrap_or_default() {
            if child != command {
                others += 1;
                let _ = sys::send_signal(i32::try_from(child).unwrap_or(0), sys::SIGKILL);
                reap_killed(child, killed);
            }
        }
        if (others == 0 && command_dead) || Instant::now() >= deadline {
            return;
        }
        let _ = sys::poll_for(&mut [], Some(Duration::from_millis(1)));
    }
}

/// Reaper mode: kills the job's processes below the keeper `me` (the command among them), after the keeper
/// signalled the command's group: every process found is killed and recorded in `reached` (but the command), and
/// the walk is made again until it finds none alive and none newly dead (their children, re-parented to the
/// keeper as they died, are killed in turn), within `limit`.
///
/// # Errors
///
/// A pidfd that cannot be opened, or a kill refused (another user's process, named).
pub(crate) fn kill(
    me: u32,
    command: u32,
    limit: Duration,
    reached: &mut Vec<(u32, String)>,
) -> io::Result<()> {
    let deadline = Instant::now() + limit;
    let mut walk = Walk {
        command,
        sent: Vec::new(),
        denied: Vec::new(),
        live: 0,
        dead: Vec::new(),
        newly_dead: false,
        reached,
    };
    loop {
        walk.live = 0;
        walk.newly_dead = false;
        walk.visit(me, None, 0)?;
        if (walk.live == 0 && !walk.newly_dead) || Instant::now() >= deadline {
            break;
        }
        let _ = sys::poll_for(&mut [], Some(Duration::from_micros(100)));
    }
    if walk.denied.is_empty() {
        return Ok(());
    }
    let named: Vec<String> = walk
        .denied
        .iter()
        .map(|(p, n)| format!("{p} ({n})"))
        .collect();
    Err(io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!(
            "no permission to signal the job's processes {} (another user's: a setuid program?)",
            named.join(", ")
        ),
    ))
}

/// What one kill of the job has done so far.
struct Walk<'a> {
    command: u32,
    sent: Vec<u32>,
    /// Those it may not signal (pid and name).
    denied: Vec<(u32, String)>,
    /// How many live processes (not refused) the current pass found.
    live: usize,
    /// The processes found dead (zombies: nothing is reaped during the kill).
    dead: Vec<u32>,
    /// Whether the current pass found one dead that no pass before had: its children moved to the keeper as it died,
    /// maybe after this pass read the keeper's children, so the next pass looks for them there.
    newly_dead: bool,
    reached: &'a mut Vec<(u32, String)>,
}

impl Walk<'_> {
    /// Kills the live children of `parent` (named by `parent_fd` below the keeper) and their descendants, depth
    /// first.
    fn visit(&mut self, parent: u32, parent_fd: Option<&OwnedFd>, depth: usize) -> io::Result<()> {
        if depth > DEPTH_LIMIT {
            return Ok(());
        }
        for pid in children(parent).unwrap_or_default() {
            if pid <= 1 {
                continue;
            }
            let pidfd = match sys::pidfd_open(pid) {
                Ok(fd) => fd,
                Err(e) if e.raw_os_error() == Some(3) => continue,
                Err(e) => return Err(e),
            };
            // After the open: the pidfd names this process if its parent is still `parent`, and `parent` is still
            // the process checked before.
            let Some(stat) = Stat::read(pid) else {
                continue;
            };
            if stat.ppid != parent || parent_fd.is_some_and(exited) {
                continue;
            }
            if stat.dead() {
                if stat.killed && pid != self.command {
                    record(self.reached, pid, stat.name);
                }
                if !self.dead.contains(&pid) {
                    self.dead.push(pid);
                    self.newly_dead = true;
                }
                continue;
            }
            if !self.denied.iter().any(|(p, _)| *p == pid) {
                self.live += 1;
            }
            if !self.sent.contains(&pid) {
                match sys::pidfd_signal(&pidfd, sys::SIGKILL) {
                    Ok(true) => {
                        self.sent.push(pid);
                        if pid != self.command {
                            record(self.reached, pid, stat.name);
                        }
                    }
                    Ok(false) => continue,
                    Err(e) if e.raw_os_error() == Some(1) => {
                        if !self.denied.iter().any(|(p, _)| *p == pid) {
                            self.denied.push((pid, stat.name));
                            self.live -= 1;
                        }
                    }
                    Err(e) => return Err(e),
                }
            }
            self.visit(pid, Some(&pidfd), depth + 1)?;
        }
        Ok(())
    }
}

/// Whether the process a pidfd names has exited (its pidfd is readable then).
fn exited(pidfd: &OwnedFd) -> bool {
    let mut fds = [PollFd {
        fd: pidfd.as_raw_fd(),
        events: sys::POLLIN,
        revents: 0,
    }];
    sys::poll_for(&mut fds, Some(Duration::ZERO)).is_ok_and(|n| n > 0)
}

/// Records `pid` as reached by a kill (once).
pub(crate) fn record(reached: &mut Vec<(u32, String)>, pid: u32, name: String) {
    if !reached.iter().any(|(p, _)| *p == pid) {
        reached.push((pid, name));
    }
}

/// What a process's `/proc/PID/stat` says that a kill needs.
pub(crate) struct Stat {
    pub(crate) name: String,
    state: u8,
    pub(crate) ppid: u32,
    /// Exited, killed by `SIGKILL` (its exit status says so).
    killed: bool,
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
        // After the name: state (field 3), ppid (4), ... exit_code (52).
        let state = *fields.first()?.first()?;
        let dead = matches!(state, b'Z' | b'X' | b'x');
        Some(Stat {
            name: String::from_utf8_lossy(text.get(open + 1..close)?).into_owned(),
            state,
            ppid: u32::try_from(number(1)?).ok()?,
            killed: dead && number(49).is_some_and(|code| code & 0x7f == 9),
        })
    }

    /// A zombie, or dead.
    pub(crate) fn dead(&self) -> bool {
        matches!(self.state, b'Z' | b'X' | b'x')
    }

    /// Whether a `SIGKILL` just sent may have reached it: it still runs, or it exited killed by `SIGKILL`.
    pub(crate) fn reached_by_kill(&self) -> bool {
        !self.dead() || self.killed
    }
}
