//! Reaper mode, as this process sees it (the keeper's own part is `crate::keeper`): the job is the keeper's
//! descendants, since the keeper is a child subreaper and every orphan of the job is re-parented to it, however it
//! daemonised. This process finds them by walking `/proc/PID/task/TID/children` down from the keeper (nothing but the
//! job's own processes is read, so the cost does not grow with the host's process count), and signals each through a
//! pidfd opened before its parent is checked again, so a pid reused meanwhile is never signalled.

use std::fs;
use std::io;
use std::os::fd::{AsFd as _, AsRawFd as _, OwnedFd};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::proc::{record, Leftover, Stat};

/// How deep a walk goes below the keeper (and how far `in_tree` follows parents up).
const DEPTH_LIMIT: usize = 64;
/// How long a `SIGKILL` walks again for processes that appeared meanwhile (re-parented to the keeper).
const KILL_LIMIT: Duration = Duration::from_secs(1);

/// The children of process `pid` (of each of its threads; of its main thread only for `single`, a process known to
/// have no other, such as the keeper), as `/proc` lists them now.
fn children(pid: u32, single: bool) -> Vec<u32> {
    let mut found = Vec::new();
    let mut read = |path: String| {
        if let Ok(text) = fs::read_to_string(path) {
            found.extend(
                text.split_whitespace()
                    .filter_map(|p| p.parse::<u32>().ok()),
            );
        }
    };
    if single {
        read(format!("/proc/{pid}/task/{pid}/children"));
        return found;
    }
    match fs::read_dir(format!("/proc/{pid}/task")) {
        Ok(tasks) => {
            for task in tasks.flatten() {
                read(format!(
                    "/proc/{pid}/task/{}/children",
                    task.file_name().to_string_lossy()
                ));
            }
        }
        Err(_) => read(format!("/proc/{pid}/task/{pid}/children")),
    }
    found
}

/// Whether the process a pidfd names has exited (its pidfd is readable then).
fn exited(pidfd: &OwnedFd) -> bool {
    let mut fds = [libc::pollfd {
        fd: pidfd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    }];
    crate::sys::poll(&mut fds, Duration::ZERO).is_ok_and(|n| n > 0)
}

/// What one kill of the job has done so far.
struct Walk<'a> {
    command: u32,
    /// The keeper's group helper (see `make_group` in `sys/keeper.rs`): a child of the keeper, not of the job, whose
    /// pid is the id of the group the keeper moved to (a pid that names a group is given to no other process). It
    /// exits at once, but on a busy machine it may still run when a job that ended as fast is killed.
    helper: Option<u32>,
    sent: Vec<u32>,
    /// Those it may not signal (pid and name), named in the error.
    denied: Vec<(u32, String)>,
    /// How many live processes (not refused) the current pass found.
    live: usize,
    /// The processes found dead (zombies, which the keeper holds unreaped during the kill).
    dead: Vec<u32>,
    /// Whether the current pass found one dead that no pass before had: its children were re-parented to the keeper
    /// as it died, maybe after this pass read the keeper's children, so the next pass looks for them there.
    newly_dead: bool,
    reached: &'a Mutex<Vec<Leftover>>,
}

impl Walk<'_> {
    /// Kills the live children of `parent` (named by `parent_fd` below the keeper, whose pid is pinned: it is our
    /// unreaped child) and their descendants, depth first.
    fn visit(&mut self, parent: u32, parent_fd: Option<&OwnedFd>, depth: usize) -> io::Result<()> {
        if depth > DEPTH_LIMIT {
            return Ok(());
        }
        // The keeper (no `parent_fd`) runs one thread.
        for pid in children(parent, parent_fd.is_none()) {
            if pid <= 1 || (parent_fd.is_none() && Some(pid) == self.helper) {
                continue;
            }
            let pidfd = match crate::sys::pidfd_open(pid) {
                Ok(fd) => fd,
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => continue,
                Err(e) => {
                    return Err(crate::sys::os_error_or(e, |e| {
                        format!("cannot open a pidfd for process {pid} of the job: {e}")
                    }))
                }
            };
            // After the open: the pidfd names this process if its parent is still `parent`, and `parent` still names
            // the process checked before (alive, so its pid is its own).
            let Some(stat) = Stat::read(pid) else {
                continue;
            };
            if stat.ppid != parent || parent_fd.is_some_and(exited) {
                continue;
            }
            if stat.dead() {
                // A member that the group's SIGKILL (sent first) has killed already: recorded, as a cgroup's are.
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
                match crate::sys::pidfd_send_signal(pidfd.as_fd(), libc::SIGKILL) {
                    Ok(true) => {
                        self.sent.push(pid);
                        if pid != self.command {
                            record(self.reached, pid, stat.name);
                        }
                    }
                    Ok(false) => continue,
                    Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
                        if !self.denied.iter().any(|(p, _)| *p == pid) {
                            self.denied.push((pid, stat.name));
                            self.live -= 1;
                        }
                    }
                    Err(e) => {
                        return Err(crate::sys::os_error_or(e, |e| {
                            format!("cannot kill process {pid} of the job: {e}")
                        }))
                    }
                }
            }
            self.visit(pid, Some(&pidfd), depth + 1)?;
        }
        Ok(())
    }
}

/// Kills the job's processes below `keeper` (the command `command` among them), after the caller signalled the
/// command's group (stop first, then the rest): every process found is killed and recorded (but the command), and the
/// walk is made again until it finds none alive and none newly dead (those killed have died, and their children,
/// re-parented to the keeper as their parents died, were killed in turn: a process that died between the pass's read
/// of the keeper's children and its own check has moved its children to the keeper after that read, so the pass
/// that first finds it dead does not end the kill), within about a second; the keeper then ends what is left when
/// it gets the verdict. (Other signals reach the command's group only: see `Job::signal`.)
///
/// # Errors
///
/// A pidfd that cannot be opened (no descriptor left: the OS error), or a kill refused for want of permission
/// (`PermissionDenied`, the pids named; the others were killed).
pub(super) fn kill(keeper: u32, command: u32, reached: &Mutex<Vec<Leftover>>) -> io::Result<()> {
    let deadline = Instant::now() + KILL_LIMIT;
    let mut walk = Walk {
        command,
        helper: Stat::read(keeper)
            .map(|s| s.pgid)
            .filter(|&group| group != keeper),
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
        walk.visit(keeper, None, 0)?;
        if (walk.live == 0 && !walk.newly_dead) || Instant::now() >= deadline {
            break;
        }
        // Killed, and dying: a pause, then a look at what is left (and what their deaths re-parented).
        std::thread::sleep(Duration::from_micros(100));
    }
    if walk.denied.is_empty() {
        Ok(())
    } else {
        let named: Vec<String> = walk
            .denied
            .iter()
            .map(|(pid, name)| format!("{pid} ({name})"))
            .collect();
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "no permission to signal the job's processes {} (another user's: a setuid program?)",
                named.join(", ")
            ),
        ))
    }
}

/// Whether live process `pid` descends from `keeper` (its parents, followed up at most `DEPTH_LIMIT` steps, reach
/// it). The keeper itself is not the job's, nor its group helper.
pub(super) fn in_tree(keeper: u32, pid: u32) -> bool {
    if pid == keeper {
        return false;
    }
    let mut at = pid;
    for _ in 0..DEPTH_LIMIT {
        let Some(stat) = Stat::read(at) else {
            return false;
        };
        if stat.dead() {
            return false;
        }
        if stat.ppid == keeper {
            // The keeper's group helper (see `Walk::helper`) is the keeper's, not the job's.
            return at != pid || Stat::read(keeper).is_none_or(|k| k.pgid != pid);
        }
        if stat.ppid <= 1 {
            return false;
        }
        at = stat.ppid;
    }
    false
}
