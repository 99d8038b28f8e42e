//! Cgroup mode: the job's folder, where the keeper was born with the command. The keeper lives in it until it must
//! kill: then it moves itself to its caller's cgroup (a migration, off the caller's thread), freezes the folder,
//! lists its processes with their names, kills them all (`cgroup.kill`), waits for `populated 0`, reads what the job
//! used and removes the folder, deepest first. A job that ended on its own needs none of it: the keeper exits inside
//! the folder, and its caller removes it after the keeper's reap.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write as _};
use std::os::fd::AsRawFd as _;
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::protocol::cgroup_tree as tree;
use crate::reaper::{record, Stat};
use crate::sys::{self, PollFd};

/// How long a kill waits for the folder to freeze before it lists its processes (only a process that cannot be
/// frozen, in uninterruptible sleep, makes it wait this long).
const FREEZE_LIMIT: Duration = Duration::from_secs(1);
/// How many times what the job left is moved out before the folder is given up (a process that keeps forking may
/// win).
const RELEASE_ROUNDS: usize = 100;

/// The job's folder.
pub(crate) struct Folder {
    dir: PathBuf,
    /// Where the keeper goes to kill, and where what a kept job left goes: the caller's own cgroup.
    leave_to: PathBuf,
    /// Whether the keeper still lives in the folder.
    inside: bool,
    /// The keeper's own CPU time (user, system, in µs) when it left: its part of the folder's `cpu.stat`.
    own_at_leaving: Option<(u64, u64)>,
}

/// What the job used, as its folder says.
pub(crate) struct Used {
    /// User and system time (µs), the keeper's own taken out.
    pub(crate) cpu: Option<(u64, u64)>,
    pub(crate) memory: Option<u64>,
    pub(crate) processes: Option<u64>,
}

impl Folder {
    pub(crate) fn new(dir: PathBuf, leave_to: PathBuf) -> Folder {
        Folder {
            dir,
            leave_to,
            inside: true,
            own_at_leaving: None,
        }
    }

    /// The processes in the folder and its sub-folders now (a zombie is in none).
    fn pids(&self) -> io::Result<Vec<u32>> {
        let mut pids = Vec::new();
        for dir in tree(&self.dir) {
            match fs::read_to_string(dir.join("cgroup.procs")) {
                Ok(text) => pids.extend(text.lines().filter_map(|l| l.parse::<u32>().ok())),
                Err(e) if gone(&e) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(pids)
    }

    /// Whether a process other than those of `ours` (the keeper, the exited command) is in the folder (`true` where it
    /// cannot be told).
    pub(crate) fn holds_others(&self, ours: &[u32]) -> bool {
        if !self.inside {
            return !self.empty();
        }
        self.pids()
            .map_or(true, |pids| pids.iter().any(|p| !ours.contains(p)))
    }

    /// Whether `cgroup.events` says `populated 0`, or the folder is gone.
    fn empty(&self) -> bool {
        match fs::read(self.dir.join("cgroup.events")) {
            Ok(text) => text.windows(11).any(|w| w == b"populated 0"),
            Err(e) => gone(&e),
        }
    }

    /// Moves the keeper to its caller's cgroup, so that the folder's freeze and kill do not reach it: a migration,
    /// which waits for an RCU grace period. Its CPU time so far is its part of the folder's.
    pub(crate) fn leave(&mut self) -> io::Result<()> {
        if !self.inside {
            return Ok(());
        }
        let own = sys::usage(false);
        write(&self.leave_to.join("cgroup.procs"), b"0")?;
        self.inside = false;
        self.own_at_leaving = Some((own.0, own.1));
        Ok(())
    }

    /// Kills the whole job (see the module docs): frozen (a process can then neither fork nor exit between the list
    /// and the kill, so the list, with names, is what the kill reached), listed, `cgroup.kill`, thawed, and waited
    /// for up to `limit` to be empty. What it reached besides the command goes to `reached`.
    ///
    /// # Errors
    ///
    /// The keeper could not leave the folder (it then kills the folder with itself in it: its caller ends the job as
    /// for a killed keeper), the kill failed, or the folder still held processes after `limit`.
    pub(crate) fn kill(
        &mut self,
        command: u32,
        limit: Duration,
        reached: &mut Vec<(u32, String)>,
    ) -> io::Result<()> {
        if let Err(e) = self.leave() {
            let _ = write(&self.dir.join("cgroup.kill"), b"1");
            return Err(e);
        }
        if !self.empty() {
            let freezer = self.freeze();
            // The names before the kill: a killed orphan may be reaped at once by whoever adopted it.
            let before: Vec<(u32, Stat)> = self
                .pids()
                .unwrap_or_default()
                .into_iter()
                .filter(|&pid| pid != command)
                .filter_map(|pid| Some((pid, Stat::read(pid)?)))
                .collect();
            let killed = write(&self.dir.join("cgroup.kill"), b"1");
            if let Some(mut freezer) = freezer {
                let _ = freezer.write_all(b"0");
            }
            for (pid, stat) in before {
                if Stat::read(pid).as_ref().unwrap_or(&stat).reached_by_kill() {
                    record(reached, pid, stat.name);
                }
            }
            killed?;
        }
        if self.wait_empty(Instant::now() + limit) {
            return Ok(());
        }
        Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!(
                "the job's cgroup {} still held processes {:?} after {limit:?}",
                self.dir.display(),
                self.pids().unwrap_or_default()
            ),
        ))
    }

    /// Freezes the folder (`cgroup.freeze`) and waits up to [`FREEZE_LIMIT`] for `frozen 1` (or `populated 0`):
    /// `cgroup.freeze`, open to thaw it with, or `None` where it could not be written. It reads `cgroup.events` again
    /// after 0.1 ms, then after twice as long each time up to 1 ms, or sooner at a change (`POLLPRI`).
    fn freeze(&self) -> Option<File> {
        let mut freezer = OpenOptions::new()
            .write(true)
            .open(self.dir.join("cgroup.freeze"))
            .ok()?;
        freezer.write_all(b"1").ok()?;
        let deadline = Instant::now() + FREEZE_LIMIT;
        let Ok(events) = File::open(self.dir.join("cgroup.events")) else {
            return Some(freezer);
        };
        let mut buf = [0u8; 128];
        let mut pause = Duration::from_micros(100);
        while let Ok(n) = events.read_at(&mut buf, 0) {
            let said = |what: &[u8]| {
                buf.get(..n)
                    .unwrap_or_default()
                    .windows(what.len())
                    .any(|w| w == what)
            };
            let left = deadline.saturating_duration_since(Instant::now());
            if said(b"frozen 1") || said(b"populated 0") || left.is_zero() {
                break;
            }
            let mut fds = [PollFd {
                fd: events.as_raw_fd(),
                events: sys::POLLPRI,
                revents: 0,
            }];
            let _ = sys::poll_for(&mut fds, Some(left.min(pause)));
            pause = (pause * 2).min(Duration::from_millis(1));
        }
        Some(freezer)
    }

    /// Waits until the folder is empty (`populated 0`), reading `cgroup.events` again at each change (`POLLPRI`)
    /// and at least every 10 ms, until `deadline`: whether it is.
    fn wait_empty(&self, deadline: Instant) -> bool {
        let events = File::open(self.dir.join("cgroup.events")).ok();
        loop {
            if self.empty() {
                return true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            let mut fds: Vec<PollFd> = events
                .iter()
                .map(|events| PollFd {
                    fd: events.as_raw_fd(),
                    events: sys::POLLPRI,
                    revents: 0,
                })
                .collect();
            let _ = sys::poll_for(&mut fds, Some(left.min(Duration::from_millis(10))));
        }
    }

    /// What the job used: `cpu.stat`'s user and system time (every cgroup v2 folder has it) less the keeper's own
    /// (`own`: its CPU time now, unless it left the folder before), and `memory.peak` and `pids.peak` (less the
    /// keeper) where those controllers are on.
    pub(crate) fn usage(&self, own: (u64, u64, u64)) -> Used {
        let (own_user, own_system) = self.own_at_leaving.unwrap_or((own.0, own.1));
        let number = |file: &str| -> Option<u64> {
            fs::read_to_string(self.dir.join(file))
                .ok()?
                .trim()
                .parse()
                .ok()
        };
        let cpu = fs::read_to_string(self.dir.join("cpu.stat"))
            .ok()
            .and_then(|text| {
                let field = |key: &str| -> Option<u64> {
                    text.lines()
                        .find_map(|l| l.strip_prefix(key))?
                        .trim()
                        .parse()
                        .ok()
                };
                let (user, system) = (field("user_usec ")?, field("system_usec ")?);
                Some((
                    user.saturating_sub(own_user),
                    system.saturating_sub(own_system),
                ))
            });
        Used {
            cpu,
            memory: number("memory.peak"),
            processes: number("pids.peak").map(|n| n.saturating_sub(1)),
        }
    }

    /// A kept job (`set_kill_leftovers(false)`): moves every process of the folder, the keeper last, to the caller's
    /// cgroup (not the folder's parent, which may have controllers on for its children and then holds no process),
    /// so that the folder can go.
    pub(crate) fn release(&mut self) -> io::Result<()> {
        let me = std::process::id();
        let to = self.leave_to.join("cgroup.procs");
        for _ in 0..RELEASE_ROUNDS {
            let pids: Vec<u32> = self.pids()?.into_iter().filter(|&p| p != me).collect();
            if pids.is_empty() {
                break;
            }
            for pid in pids {
                match write(&to, pid.to_string().as_bytes()) {
                    Err(e) if e.raw_os_error() != Some(3) => return Err(e),
                    _ => {}
                }
            }
        }
        self.leave()
    }

    /// Removes the folder with the sub-folders the job made in it (deepest first, once they are empty, for about a
    /// second): whether the folder itself is gone. The keeper, while it lives in it, removes the sub-folders only.
    pub(crate) fn remove(&self) -> io::Result<bool> {
        let deadline = Instant::now() + Duration::from_secs(1);
        loop {
            let mut folders = tree(&self.dir);
            if self.inside {
                folders.remove(0);
            }
            let mut busy = None;
            for folder in folders.iter().rev() {
                match fs::remove_dir(folder) {
                    Err(e) if gone(&e) => {}
                    Err(e) if e.raw_os_error() == Some(16) => busy = Some(e),
                    Err(e) => return Err(e),
                    Ok(()) => {}
                }
            }
            match busy {
                None => return Ok(!self.inside),
                Some(e) if Instant::now() >= deadline => return Err(e),
                Some(_) => {
                    let _ = sys::poll_for(&mut [], Some(Duration::from_millis(10)));
                }
            }
        }
    }
}


/// Writes `value` to the control file `path` in one `write` (a cgroup file takes it whole or not at all).
fn write(path: &Path, value: &[u8]) -> io::Result<()> {
    OpenOptions::new().write(true).open(path)?.write_all(value)
}

/// A folder removed before the open (`ENOENT`) or during the read (`ENODEV`).
fn gone(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotFound || e.raw_os_error() == Some(19)
}
