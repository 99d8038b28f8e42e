//! The job boundary of [`spawn_contained`](crate::CommandExt::spawn_contained): which processes belong to a job
//! besides its process group, and how they are ended.
//!
//! - `cgroup`: a cgroup v2 of the job's own, ended with `cgroup.kill` and removed once empty (Linux).
//! - `lineage`: a per-job random mark in the environment, found in `/proc` and checked through a pidfd (Linux).
//!
//! [`Job`] is what [`GroupChild`](crate::GroupChild) and [`GroupHandle`](crate::GroupHandle) hold: its calls are
//! made from the places that signal the group (see `child.rs`), and it does nothing for a plain group.

use std::io;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::GroupChild;

#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
mod cgroup;
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
mod lineage;

/// Which boundary a job got; see [`GroupChild::containment`] and the table in [`Contain`].
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Containment {
    /// A cgroup v2 of the job's own (Linux): every process the command started is in it, whatever session or
    /// group it moved to and whatever it did to its environment, and the job is ended with `cgroup.kill`.
    Cgroup,
    /// The job's processes are those that carry its mark, a random variable in the environment that every
    /// descendant inherits (Linux, where no cgroup can be made), and the members of its process group.
    Lineage,
    /// The process group only, as [`spawn_group`](crate::CommandExt::spawn_group) gives.
    Group,
}

impl Containment {
    fn rank(self) -> u8 {
        match self {
            Containment::Group => 0,
            Containment::Lineage => 1,
            Containment::Cgroup => 2,
        }
    }
}

/// A process besides the leader that a kill of the job reached; see [`GroupChild::leftovers`].
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leftover {
    /// Its process id at the time of the kill (it may name another process by now).
    pub pid: u32,
    /// Its command name at the time of the kill, as in `/proc/PID/comm` (at most 15 bytes).
    pub name: String,
}

/// How [`spawn_contained`](crate::CommandExt::spawn_contained) draws a job's boundary; [`Contain::spawn`] spawns
/// with it.
///
/// | Mode | Where | What it reaches | What it cannot catch |
/// |------|-------|-----------------|----------------------|
/// | [`Cgroup`](Containment::Cgroup) | Linux 5.14+, cgroup v2, where this process may make a cgroup | every process started by the command, at once (`cgroup.kill`) | nothing the command starts; a process moved to another cgroup by someone allowed to |
/// | [`Lineage`](Containment::Lineage) | Linux, `/proc` of our PID namespace, pidfds (5.3+) | the group and every process that still carries the job's mark | a process that cleared or overwrote its environment (`env -i`, `execve` with a new one), or runs as a user we may not inspect or signal |
/// | [`Group`](Containment::Group) | everywhere | the process group (as `spawn_group`) | a process that left the group (`setsid`, `setpgid`) |
///
/// By default the cgroup is tried first, then lineage, then the group: each fallback is silent, and
/// [`GroupChild::containment`] says which mode the job got; [`require`](Contain::require) turns a fallback below a
/// mode into an error. A cgroup that was made but that the command's first process could not enter (its write to
/// `cgroup.procs` failed, say because the parent folder is a thread root, whose domain children are "domain
/// invalid") counts as none: its folder is removed and the command is spawned again in the next mode (none of it
/// ran: the write comes before `exec`).
///
/// # The cgroup
///
/// The job's cgroup is made as a child of this process's own cgroup v2 (found through `/proc/self/cgroup` and
/// `/proc/self/mountinfo`), or of the folder named with [`cgroup_parent`](Contain::cgroup_parent); this process is
/// never moved, and no cgroup the crate did not make is changed. Where systemd manages the tree (the folder
/// `/run/systemd/system` exists, systemd's own test), the own cgroup is used only if systemd delegated it: it or a
/// cgroup above it has the extended attribute `trusted.delegate` or `user.delegate` set to `1`, which systemd sets
/// for units with `Delegate=yes`. A service gets such a cgroup with `Delegate=yes` in its unit (or
/// `systemd-run -p Delegate=yes …`); since a cgroup that holds processes may not enable controllers for its
/// children, such a service usually moves itself into a child folder at start (say `…/service.scope/main`) and
/// names its unit's folder with [`cgroup_parent`](Contain::cgroup_parent), which skips the systemd test.
///
/// The leader enters the job's cgroup before it runs one instruction of the command: the forked child writes to
/// the cgroup's `cgroup.procs` just before `exec` (a `pre_exec` hook, which makes std fork and exec instead of using
/// `posix_spawn`; `BENCHMARKS.md` gives the cost). That move may wait for an RCU grace period (10-20 ms measured on
/// Linux 6.18 for a single spawn; a loop of spawns shares it) unless the cgroup2 hierarchy is mounted with
/// `favordynmods` (Linux 6.0+; 0.1 ms measured). `clone3` with `CLONE_INTO_CGROUP` would need no move, but std's
/// `Command` cannot use it, and this crate does not. The hook stays on the `Command`, disarmed, so later spawns of the
/// same `Command` take that path too. The job is ended with `cgroup.kill`; when its leader was reaped, the folder is
/// removed once `cgroup.events` says `populated 0`, waiting at most about a second (a process stuck in
/// uninterruptible sleep can keep it longer: the folder is then left behind). With
/// [`set_kill_leftovers(false)`](GroupChild::set_kill_leftovers) the leftovers are moved back to the parent folder,
/// where the caller runs, before the folder is removed.
///
/// # The lineage mark
///
/// The command gets one more environment variable, `GROUPTIMEOUT_JOB_<32 random hex digits>=1` (from
/// `/dev/urandom`), which every descendant inherits; it is removed from the `Command` again after the spawn. At each
/// kill point the job's processes are found in `/proc` (the group's members, and processes started after the
/// leader whose environment carries the mark), each is opened as a pidfd, checked again through `/proc` after the
/// open, and signalled through the pidfd, so a pid reused meanwhile is never signalled; with `SIGKILL` this repeats
/// until a pass finds none that this kill has not reached already, and then waits for the killed ones to exit (all
/// of it at most about a second, so a fork storm ends). A nested job keeps the marks of the jobs around it. A scan
/// reads every process's `/proc/PID/stat` (one `read` each), and the environment of the young ones.
#[derive(Debug, Clone)]
pub struct Contain {
    parent: Option<PathBuf>,
    cgroup: bool,
    lineage: bool,
    require: Containment,
}

impl Default for Contain {
    fn default() -> Contain {
        Contain::new()
    }
}

impl Contain {
    /// A cgroup if one can be made in this process's own cgroup, else lineage, else the group.
    pub fn new() -> Contain {
        Contain {
            parent: None,
            cgroup: true,
            lineage: true,
            require: Containment::Group,
        }
    }

    /// Makes the job's cgroups in `folder` (a folder of a cgroup v2 file system, such as the `Delegate=yes` unit's
    /// own folder of a service that moved itself into a child of it) instead of this process's own cgroup. The
    /// systemd delegation test is skipped: naming the folder says it is the caller's to use.
    pub fn cgroup_parent(&mut self, folder: impl Into<PathBuf>) -> &mut Contain {
        self.parent = Some(folder.into());
        self
    }

    /// Whether a cgroup is tried at all (default `true`).
    pub fn cgroup(&mut self, try_it: bool) -> &mut Contain {
        self.cgroup = try_it;
        self
    }

    /// Whether lineage is tried when no cgroup is had (default `true`).
    pub fn lineage(&mut self, try_it: bool) -> &mut Contain {
        self.lineage = try_it;
        self
    }

    /// Fails the spawn instead of falling back below `mode` (default [`Containment::Group`]: never fails for want
    /// of a boundary).
    pub fn require(&mut self, mode: Containment) -> &mut Contain {
        self.require = mode;
        self
    }

    /// Spawns `command` as [`spawn_group`](crate::CommandExt::spawn_group) does, inside the boundary this asks for.
    ///
    /// # Errors
    ///
    /// As for [`spawn_group`](crate::CommandExt::spawn_group); or [`require`](Contain::require) asked for more than
    /// could be had (`Unsupported`, or the kind of the first failure), with every reason in the message, such as a
    /// cgroup the command's first process could not enter (the folder named, and the OS error of its write to
    /// `cgroup.procs`, whose kind the error keeps; the folder is removed). Nothing runs then.
    pub fn spawn(&self, command: &mut Command) -> io::Result<GroupChild> {
        #[cfg_attr(
            not(all(target_os = "linux", not(grouptimeout_portable))),
            allow(unused_mut)
        )]
        let mut why: Vec<io::Error> = Vec::new();
        #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
        {
            if self.cgroup {
                match cgroup::Cgroup::make(self.parent.as_deref()) {
                    Ok(cgroup) => match cgroup::spawn(cgroup, command)? {
                        Ok(child) => return Ok(child),
                        Err(not_entered) => why.push(not_entered),
                    },
                    Err(e) => why.push(e),
                }
            }
            if self.lineage && self.require.rank() <= Containment::Lineage.rank() {
                match lineage::Mark::new() {
                    Ok(mark) => return lineage::spawn(mark, command),
                    Err(e) => why.push(e),
                }
            }
        }
        if self.require.rank() > Containment::Group.rank() {
            let kind = why
                .first()
                .map_or(io::ErrorKind::Unsupported, io::Error::kind);
            let mut reasons: Vec<String> = why.iter().map(ToString::to_string).collect();
            if reasons.is_empty() {
                reasons.push("only the process group is available on this system".into());
            }
            return Err(io::Error::new(
                kind,
                format!(
                    "cannot run {:?} in a {:?} boundary: {}",
                    command.get_program(),
                    self.require,
                    reasons.join("; ")
                ),
            ));
        }
        crate::child::spawn_with(command, Job::default())
    }
}

/// A job's boundary beyond its process group; empty (a plain group) by default. Clones share it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Job(Option<Arc<Inner>>);

#[derive(Debug)]
struct Inner {
    bound: Bound,
    /// What the kills reached, until a [`GroupChild`] takes it.
    reached: Mutex<Vec<Leftover>>,
}

#[derive(Debug)]
enum Bound {
    #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
    Cgroup(cgroup::Cgroup),
    #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
    Lineage(lineage::Mark),
}

impl Job {
    #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
    fn new(bound: Bound) -> Job {
        Job(Some(Arc::new(Inner {
            bound,
            reached: Mutex::new(Vec::new()),
        })))
    }

    pub(crate) fn containment(&self) -> Containment {
        let Some(inner) = &self.0 else {
            return Containment::Group;
        };
        match inner.bound {
            #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
            Bound::Cgroup(_) => Containment::Cgroup,
            #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
            Bound::Lineage(_) => Containment::Lineage,
        }
    }

    /// Sends `signal` to the job's processes outside the group of `leader` (with `SIGKILL`: to all of them, until
    /// none is left, and records the ones reached). The caller signals the group itself, and holds the leader
    /// unreaped.
    pub(crate) fn signal(&self, leader: u32, signal: i32) -> io::Result<()> {
        let Some(inner) = &self.0 else {
            return Ok(());
        };
        let _ = (leader, signal);
        match inner.bound {
            #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
            Bound::Cgroup(ref cgroup) => cgroup.signal(leader, signal, &inner.reached),
            #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
            Bound::Lineage(ref mark) => mark.signal(leader, signal, &inner.reached),
        }
    }

    /// Moves what the kills reached into `leftovers` (once per pid).
    pub(crate) fn take_reached(&self, leftovers: &mut Vec<Leftover>) {
        let Some(inner) = &self.0 else {
            return;
        };
        for left in lock(&inner.reached).drain(..) {
            if !leftovers.iter().any(|l| l.pid == left.pid) {
                leftovers.push(left);
            }
        }
    }

    /// The leader was reaped (or given up on): the job ends. A cgroup is killed (or, with `keep`, its processes are
    /// moved back to where the caller runs) and removed once empty, bounded; a lineage job needs nothing more.
    /// Later calls do nothing.
    pub(crate) fn end(&self, keep: bool) -> io::Result<()> {
        let Some(inner) = &self.0 else {
            return Ok(());
        };
        let _ = keep;
        match inner.bound {
            #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
            Bound::Cgroup(ref cgroup) => cgroup.end(keep),
            #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
            Bound::Lineage(_) => Ok(()),
        }
    }

    /// The folder of the job's cgroup, for the guard of `die_with_parent`.
    pub(crate) fn cgroup_folder(&self) -> Option<&std::path::Path> {
        match self.0.as_ref()?.bound {
            #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
            Bound::Cgroup(ref cgroup) => Some(cgroup.folder()),
            #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
            Bound::Lineage(_) => None,
        }
    }

    /// Whether process `pid` belongs to the job whose leader is `leader`, as far as `/proc` tells now.
    pub(crate) fn contains(&self, leader: u32, pid: u32) -> bool {
        let in_group = || crate::sys::group_of(pid).is_ok_and(|pgid| pgid == leader);
        let Some(inner) = &self.0 else {
            return in_group();
        };
        match inner.bound {
            #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
            Bound::Cgroup(ref cgroup) => cgroup.contains(pid),
            #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
            Bound::Lineage(ref mark) => in_group() || mark.carried_by(pid),
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A process's line in `/proc/PID/stat`: the fields the job boundary needs.
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
#[derive(Debug)]
struct Stat {
    name: String,
    state: char,
    pgid: u32,
    /// Clock ticks after boot.
    start: u64,
}

#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
impl Stat {
    /// `None` when the process is gone (or `/proc` unreadable).
    fn read(pid: u32) -> Option<Stat> {
        let mut buf = [0u8; STAT_BUF];
        let (name, stat) = Stat::parse(read_proc(pid, "stat", &mut buf)?)?;
        Some(Stat {
            name: String::from_utf8_lossy(name).into_owned(),
            ..stat
        })
    }

    /// Parses a `/proc/PID/stat` line: the command name (raw) and the rest, with an empty `name`.
    fn parse(text: &[u8]) -> Option<(&[u8], Stat)> {
        let open = text.iter().position(|&b| b == b'(')?;
        let close = text.iter().rposition(|&b| b == b')')?;
        // After the name: state (3), ppid (4), pgrp (5), ... starttime (22).
        let mut fields = text.get(close + 2..)?.split(|&b| b == b' ');
        let number = |field: Option<&[u8]>| std::str::from_utf8(field?).ok()?.parse().ok();
        let state = char::from(*fields.next()?.first()?);
        let pgid = number(fields.nth(1))?;
        let start = number(fields.nth(16))?;
        let stat = Stat {
            name: String::new(),
            state,
            pgid: u32::try_from(pgid).ok()?,
            start,
        };
        Some((text.get(open + 1..close)?, stat))
    }

    /// Gone for every purpose here: a zombie or dead.
    fn dead(&self) -> bool {
        matches!(self.state, 'Z' | 'X' | 'x')
    }
}

/// Room for a `/proc/PID/stat` line: 52 numbers and a name of at most 64 bytes fit with room to spare.
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
const STAT_BUF: usize = 1024;

/// Reads `/proc/PID/FILE` with one `read` into `buf` (procfs gives a small file whole), without the `fstat` and the
/// allocations of `fs::read`: the bytes read, `None` when it cannot be opened (gone, not ours) or read.
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
fn read_proc<'a>(pid: u32, file: &str, buf: &'a mut [u8]) -> Option<&'a [u8]> {
    use std::io::{Read as _, Write as _};
    use std::os::unix::ffi::OsStrExt as _;
    let mut path = [0u8; 64];
    let len = {
        let mut w = &mut path[..];
        write!(w, "/proc/{pid}/{file}").ok()?;
        64 - w.len()
    };
    let path = std::ffi::OsStr::from_bytes(&path[..len]);
    let n = std::fs::File::open(path).ok()?.read(buf).ok()?;
    buf.get(..n)
}

/// Records `pid` as reached by a kill of the job (once).
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
fn record(reached: &Mutex<Vec<Leftover>>, pid: u32, name: String) {
    let mut reached = lock(reached);
    if !reached.iter().any(|l| l.pid == pid) {
        reached.push(Leftover { pid, name });
    }
}

/// What [`signal_checked`] did.
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
#[derive(Debug)]
enum Sent {
    /// Signalled; the pidfd names the process.
    Yes(std::os::fd::OwnedFd),
    /// Gone, or no longer passes the check.
    No,
    /// No permission to signal it.
    Denied,
}

/// Opens a pidfd for `pid`, checks with `belongs` that the process still belongs to the job (after the open, so
/// that the pidfd names the process that was checked, or one that has exited), and signals it through the pidfd.
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
fn signal_checked(pid: u32, signal: i32, belongs: impl FnOnce(u32) -> bool) -> io::Result<Sent> {
    use std::os::fd::AsFd as _;
    let pidfd = match crate::sys::pidfd_open(pid) {
        Ok(fd) => fd,
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => return Ok(Sent::No),
        Err(e) => {
            return Err(io::Error::new(
                e.kind(),
                format!("cannot open a pidfd for process {pid} of the job: {e}"),
            ))
        }
    };
    if !belongs(pid) {
        return Ok(Sent::No);
    }
    match crate::sys::pidfd_send_signal(pidfd.as_fd(), signal) {
        Ok(true) => Ok(Sent::Yes(pidfd)),
        Ok(false) => Ok(Sent::No),
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => Ok(Sent::Denied),
        Err(e) => Err(io::Error::new(
            e.kind(),
            format!("cannot send signal {signal} to process {pid} of the job: {e}"),
        )),
    }
}

/// 16 random bytes from `/dev/urandom`, as 32 hex digits.
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
fn random_hex() -> io::Result<String> {
    use std::io::Read as _;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| io::Error::new(e.kind(), format!("cannot read /dev/urandom: {e}")))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
