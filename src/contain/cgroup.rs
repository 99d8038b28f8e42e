//! Cgroup mode: a cgroup v2 of the job's own, made as a child of the caller's cgroup (or of a folder it names),
//! entered by the leader before `exec`, ended with `cgroup.kill`, removed once `cgroup.events` says `populated 0`.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write as _};
use std::os::fd::{AsFd as _, AsRawFd as _};
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::proc::{random_hex, record, signal_checked, Leftover, Stat};
use crate::sys;

/// How long the end of a job waits for its cgroup to empty before it leaves the folder behind.
const EMPTY_LIMIT: Duration = Duration::from_secs(1);

/// How many times the processes kept by `set_kill_leftovers(false)` are moved out before the folder is given up.
const RELEASE_ROUNDS: usize = 100;

/// A job's cgroup folder, with its control files open.
#[derive(Debug)]
pub(super) struct Cgroup {
    dir: PathBuf,
    /// Where it was made (its parent folder), where kept leftovers go.
    parent: PathBuf,
    /// The folder's name, unique (it holds 128 random bits).
    name: String,
    kill: File,
    /// Written by the leader before `exec` (see `sys::enter_at_exec`).
    procs: File,
    events: File,
    ended: AtomicBool,
}

impl Cgroup {
    /// Makes the leader of the next spawn of `command` enter this cgroup before `exec` (disarmed when dropped).
    pub(super) fn enter_at_exec(&self, command: &mut Command) -> io::Result<sys::EnterHook> {
        sys::enter_at_exec(command, self.procs.as_fd())
    }

    /// Makes a new cgroup for a job in `parent`, or in this process's own cgroup (where systemd delegated it, if it
    /// manages the tree), and opens its control files.
    pub(super) fn make(parent: Option<&Path>) -> io::Result<Cgroup> {
        let parent = match parent {
            Some(parent) => parent.to_owned(),
            None => own_cgroup()?,
        };
        let name = format!("grouptimeout-{}-{}", std::process::id(), random_hex()?);
        let dir = parent.join(&name);
        fs::create_dir(&dir).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot make a cgroup in {}: {e}", parent.display()),
            )
        })?;
        let open = |file: &str, write: bool| {
            let path = dir.join(file);
            OpenOptions::new()
                .read(!write)
                .write(write)
                .open(&path)
                .map_err(|e| {
                    let why = if e.kind() == io::ErrorKind::NotFound && file == "cgroup.kill" {
                        " (Linux 5.14 or later has it)".to_string()
                    } else {
                        String::new()
                    };
                    io::Error::new(
                        e.kind(),
                        format!("cannot open {}{why}: {e}", path.display()),
                    )
                })
        };
        let files = (|| {
            Ok((
                open("cgroup.kill", true)?,
                open("cgroup.procs", true)?,
                open("cgroup.events", false)?,
            ))
        })();
        match files {
            Ok((kill, procs, events)) => Ok(Cgroup {
                dir,
                parent,
                name,
                kill,
                procs,
                events,
                ended: AtomicBool::new(false),
            }),
            Err(e) => {
                let _ = fs::remove_dir(&dir);
                Err(e)
            }
        }
    }

    pub(super) fn folder(&self) -> &Path {
        &self.dir
    }

    /// The processes in the cgroup now.
    fn pids(&self) -> io::Result<Vec<u32>> {
        let path = self.dir.join("cgroup.procs");
        let text = fs::read_to_string(&path).map_err(|e| {
            io::Error::new(e.kind(), format!("cannot read {}: {e}", path.display()))
        })?;
        Ok(text.lines().filter_map(|l| l.parse().ok()).collect())
    }

    /// `SIGKILL` (through `cgroup.kill`, recording what it reached besides the leader), or another signal to each
    /// process in the cgroup that is not in the leader's group, through a checked pidfd.
    pub(super) fn signal(
        &self,
        leader: u32,
        signal: i32,
        reached: &Mutex<Vec<Leftover>>,
    ) -> io::Result<()> {
        if signal == libc::SIGKILL {
            for pid in self.pids()?.into_iter().filter(|&pid| pid != leader) {
                if let Some(stat) = Stat::read(pid).filter(|s| !s.dead()) {
                    record(reached, pid, stat.name);
                }
            }
            return self.kill_all();
        }
        for pid in self.pids()? {
            if pid == leader || sys::group_of(pid).is_ok_and(|pgid| pgid == leader) {
                continue; // the group signal reaches it
            }
            signal_checked(pid, signal, |pid| self.contains(pid))?;
        }
        Ok(())
    }

    fn kill_all(&self) -> io::Result<()> {
        (&self.kill).write_all(b"1").map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot kill the job's cgroup {}: {e}", self.dir.display()),
            )
        })
    }

    /// Whether process `pid` is in this cgroup (or one below it), as `/proc/PID/cgroup` says now.
    pub(super) fn contains(&self, pid: u32) -> bool {
        let Ok(text) = fs::read_to_string(format!("/proc/{pid}/cgroup")) else {
            return false;
        };
        let inside = format!("/{}/", self.name);
        text.lines()
            .filter_map(|l| l.strip_prefix("0::"))
            .any(|path| path.ends_with(&inside[..inside.len() - 1]) || path.contains(&inside))
    }

    /// Ends the job (see `Job::end`): once only.
    pub(super) fn end(&self, keep: bool) -> io::Result<()> {
        if self.ended.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        if keep {
            self.release()?;
        } else {
            self.kill_all()?;
        }
        if !self.wait_empty(Instant::now() + EMPTY_LIMIT)? {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "the job's cgroup {} still held processes {:?} after {EMPTY_LIMIT:?}, so it was left in place",
                    self.dir.display(),
                    self.pids().unwrap_or_default()
                ),
            ));
        }
        fs::remove_dir(&self.dir).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot remove the job's cgroup {}: {e}", self.dir.display()),
            )
        })
    }

    /// Moves every process of the cgroup to the parent folder (bounded: a process that keeps forking may win).
    fn release(&self) -> io::Result<()> {
        let path = self.parent.join("cgroup.procs");
        let mut to = OpenOptions::new().write(true).open(&path).map_err(|e| {
            io::Error::new(e.kind(), format!("cannot open {}: {e}", path.display()))
        })?;
        for _ in 0..RELEASE_ROUNDS {
            let pids = self.pids()?;
            if pids.is_empty() {
                break;
            }
            for pid in pids {
                match to.write_all(pid.to_string().as_bytes()) {
                    Err(e) if e.raw_os_error() != Some(libc::ESRCH) => {
                        return Err(io::Error::new(
                            e.kind(),
                            format!(
                                "cannot move process {pid} out of the job's cgroup to {}: {e}",
                                path.display()
                            ),
                        ))
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// Waits until `cgroup.events` says `populated 0` (`true`), or `deadline` passes (`false`).
    fn wait_empty(&self, deadline: Instant) -> io::Result<bool> {
        loop {
            let mut buf = [0u8; 128];
            let n = self.events.read_at(&mut buf, 0)?;
            if buf[..n].split(|&b| b == b'\n').any(|l| l == b"populated 0") {
                return Ok(true);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(false);
            }
            // The file signals a change with POLLPRI; the short cap rereads it anyway.
            let mut fds = [libc::pollfd {
                fd: self.events.as_raw_fd(),
                events: libc::POLLPRI,
                revents: 0,
            }];
            sys::poll(&mut fds, left.min(Duration::from_millis(10)))?;
        }
    }
}

impl Drop for Cgroup {
    /// A job that was never ended (a failed spawn) still leaves no folder.
    fn drop(&mut self) {
        let _ = self.end(false);
    }
}

/// This process's own cgroup v2 folder, where it may make a child cgroup.
fn own_cgroup() -> io::Result<PathBuf> {
    let unusable = |why: String| io::Error::new(io::ErrorKind::Unsupported, why);
    let cgroups = fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| io::Error::new(e.kind(), format!("cannot read /proc/self/cgroup: {e}")))?;
    let path = cgroups
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .ok_or_else(|| {
            unusable("this process is in no cgroup v2 (no 0:: line in /proc/self/cgroup)".into())
        })?;
    let mounts = fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| io::Error::new(e.kind(), format!("cannot read /proc/self/mountinfo: {e}")))?;
    let dir = mounts
        .lines()
        .find_map(|line| {
            let (before, after) = line.split_once(" - ")?;
            if after.split(' ').next()? != "cgroup2" {
                return None;
            }
            let mut fields = before.split(' ').skip(3);
            let (root, point) = (unescape(fields.next()?), unescape(fields.next()?));
            let rel = if root == "/" {
                path
            } else {
                path.strip_prefix(root.as_str())?
            };
            if !(rel.is_empty() || rel.starts_with('/')) {
                return None;
            }
            Some(PathBuf::from(format!("{point}{rel}")))
        })
        .ok_or_else(|| {
            unusable(format!(
                "no cgroup2 file system holding this process's cgroup {path} is mounted"
            ))
        })?;
    if Path::new("/run/systemd/system").exists() && !delegated(&dir) {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "systemd manages the cgroup tree and did not delegate {} (no trusted.delegate or user.delegate \
                 attribute on it or above it: give the service Delegate=yes, or name a delegated folder)",
                dir.display()
            ),
        ));
    }
    Ok(dir)
}

/// Whether `dir` or a folder above it (up to the file system's root) is marked delegated by systemd.
fn delegated(dir: &Path) -> bool {
    dir.ancestors()
        .take_while(|d| d.join("cgroup.procs").exists())
        .any(|d| {
            ["trusted.delegate", "user.delegate"].iter().any(|attr| {
                sys::getxattr(d, attr).is_ok_and(|v| v.is_some_and(|v| v.first() == Some(&b'1')))
            })
        })
}

/// Undoes mountinfo's octal escapes (`\040` for a space, ...).
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let code = bytes
            .get(i + 1..i + 4)
            .and_then(|d| u8::from_str_radix(std::str::from_utf8(d).ok()?, 8).ok());
        match (bytes[i], code) {
            (b'\\', Some(c)) => {
                out.push(c);
                i += 4;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
