//! Cgroup mode: a cgroup v2 of the job's own, made as a child of the caller's cgroup (or of a folder it names),
//! where the job's keeper starts the command (`clone3` with `CLONE_INTO_CGROUP`, see `keeper.rs`), ended with `cgroup.kill`, removed once `cgroup.events` says `populated 0`.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write as _};
use std::os::fd::{AsFd as _, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::proc::{random_hex, record, Leftover, Stat};
use crate::sys;

/// How long the end of a job waits for its cgroup to empty before it leaves the folder behind.
const EMPTY_LIMIT: Duration = Duration::from_secs(1);

/// How long a kill waits for the job's cgroup to be frozen before it lists its processes (see `Cgroup::kill_job`):
/// a job of a few processes freezes in well under a millisecond; one of a thousand forking ones took 2-8 ms here, and
/// up to 80 ms on two cores under a load of 23. Only a process that cannot be frozen (in uninterruptible sleep) makes
/// a kill wait this long.
const FREEZE_LIMIT: Duration = Duration::from_secs(1);

/// How many times the processes kept by `set_kill_leftovers(false)` are moved out before the folder is given up.
const RELEASE_ROUNDS: usize = 100;

/// A job's cgroup folder. Its control files are opened only when needed: `cgroup.procs` for the spawn (the hook
/// owns it), `cgroup.kill` and `cgroup.events` after it (see [`Cgroup::open_controls`]), so that a contained spawn holds
/// one descriptor more than a plain one.
#[derive(Debug)]
pub(crate) struct Cgroup {
    dir: PathBuf,
    /// Where it was made (its parent folder), where kept leftovers go.
    parent: PathBuf,
    /// The folder's name, unique (it holds 128 random bits).
    name: String,
    kill: OnceLock<File>,
    events: OnceLock<File>,
    /// What a wait for the whole job sleeps on (see [`Cgroup::rest_exited`]), made by its first call: a descriptor
    /// readable at a change of `cgroup.events` or the keeper's exit.
    watch: OnceLock<Option<OwnedFd>>,
    ended: AtomicBool,
}

impl Cgroup {
    /// Opens `cgroup.kill` and `cgroup.events` after the spawn, while the descriptors the spawn used are free again.
    /// One that cannot be opened now is opened at its first use, whose error then says why.
    pub(super) fn open_controls(&self) {
        let _ = self.kill();
        let _ = self.events();
    }

    fn kill(&self) -> io::Result<&File> {
        control(&self.kill, &self.dir, "cgroup.kill", true)
    }

    fn events(&self) -> io::Result<&File> {
        control(&self.events, &self.dir, "cgroup.events", false)
    }

    /// Names a new cgroup for a job in `parent`, or in this process's own cgroup (where systemd delegated it, if it
    /// manages the tree), where this process may write; the job's keeper makes it (and checks that it has
    /// `cgroup.kill`, Linux 5.14).
    pub(crate) fn make(parent: Option<&Path>) -> io::Result<Cgroup> {
        let parent = match parent {
            Some(parent) => parent.to_owned(),
            None => own_cgroup()?,
        };
        let name = format!("grouptimeout-{}-{}", std::process::id(), random_hex()?);
        let dir = parent.join(&name);
        // The job's keeper makes the folder (see `keeper.rs`): here, only whether it could.
        crate::sys::writable(&parent).map_err(|e| {
            crate::sys::os_error_or(e, |e| {
                format!("cannot make a cgroup in {}: {e}", parent.display())
            })
        })?;
        Ok(Cgroup {
            dir,
            parent,
            name,
            kill: OnceLock::new(),
            events: OnceLock::new(),
            watch: OnceLock::new(),
            ended: AtomicBool::new(false),
        })
    }

    /// The same folder for a job that has ended (see `Job::record`): its name, for [`contains`](Self::contains),
    /// without its control files (nothing signals a job that has ended); it is never ended again.
    pub(super) fn record(&self) -> Cgroup {
        Cgroup {
            dir: self.dir.clone(),
            parent: self.parent.clone(),
            name: self.name.clone(),
            kill: OnceLock::new(),
            events: OnceLock::new(),
            watch: OnceLock::new(),
            ended: AtomicBool::new(true),
        }
    }

    pub(crate) fn folder(&self) -> &Path {
        &self.dir
    }

    /// The processes in the cgroup now, those in the sub-cgroups the job made included; none once the folder is gone
    /// (a cgroup that holds a process cannot be removed: its keeper removed it once the job had ended).
    fn pids(&self) -> io::Result<Vec<u32>> {
        let mut pids = Vec::new();
        for dir in tree(&self.dir) {
            let path = dir.join("cgroup.procs");
            match fs::read_to_string(&path) {
                Ok(text) => pids.extend(text.lines().filter_map(|l| l.parse::<u32>().ok())),
                // Removed before the open (ENOENT) or during the read (ENODEV): the folder, or a sub-cgroup.
                Err(e)
                    if e.kind() == io::ErrorKind::NotFound
                        || e.raw_os_error() == Some(libc::ENODEV) => {}
                Err(e) => {
                    return Err(crate::sys::os_error_or(e, |e| {
                        format!("cannot read {}: {e}", path.display())
                    }))
                }
            }
        }
        Ok(pids)
    }

    /// Kills the job: every process of the cgroup at once (`cgroup.kill`), then `group` (the leader's group; see
    /// `Job::signal`), recording what the kill reached besides the command (pid `command`, the keeper's child).
    /// `group`'s error comes first. (Other signals reach the command's group only: see `Job::signal`.)
    ///
    /// The cgroup is frozen first (`cgroup.freeze`), and its processes are listed once it is (`frozen 1`): none of
    /// them can fork, exit or `exec` (take another name) between the list and the kill, so the list is every process
    /// the kill reaches, named as it was. A freeze that cannot be had (`cgroup.freeze` not writable, no descriptor
    /// left) or that does not complete within [`FREEZE_LIMIT`] (a second: a process in uninterruptible sleep, such
    /// as a hung NFS read, freezes only once it wakes) leaves the list read as the processes run: then a process forked between
    /// the list and the kill is killed unlisted, and one that exits by itself in that moment and is reaped at once
    /// (by a parent of the job, or by init) is listed. The kill thaws the cgroup: its processes die of it.
    ///
    /// What the freeze costs: each process runs once more before it dies, to stop where it can be frozen (a process
    /// just forked once it first runs, one in the middle of an `exec` once that is done). Measured with the tool on two
    /// cores under a load of 7, the freeze's cost was within the noise (a leftover killed right after its fork, a
    /// sleeping one, a job of the command alone).
    pub(super) fn kill_job(
        &self,
        command: u32,
        group: impl FnOnce() -> io::Result<()>,
        reached: &Mutex<Vec<Leftover>>,
    ) -> io::Result<()> {
        if self.empty() {
            // No live process in the cgroup or below it (a command that left nothing, the common end): nothing to
            // list or kill there. A process enters only as the child of a live member, or moved in from outside
            // (the job's end kills the cgroup again).
            return group();
        }
        let freezer = self.freeze();
        // One read of the list before the kill (a process leaves it as it dies); the kill goes on if it cannot be
        // read (no descriptor left). The names are read before the kill, for `leftovers()`: a killed orphan may be
        // reaped at once by whoever adopted it (PID 1), and then its name is gone.
        let before: Vec<(u32, Stat)> = self
            .pids()
            .unwrap_or_default()
            .into_iter()
            .filter(|&pid| pid != command)
            .filter_map(|pid| Some((pid, Stat::read(pid)?))) // (not one gone before the kill)
            .collect();
        let killed = self.kill_all();
        let sent = group();
        if let Some(mut freezer) = freezer {
            // Killed: a thawed process dies at once. Where the kill failed, the job runs on as before it.
            let _ = freezer.write_all(b"0");
        }
        for (pid, stat) in before {
            // Still there: reached unless it had exited before the kill; reaped at once: as it was before.
            if Stat::read(pid).as_ref().unwrap_or(&stat).reached_by_kill() {
                record(reached, pid, stat.name);
            }
        }
        sent.and(killed)
    }

    /// Freezes the cgroup (`cgroup.freeze`, Linux 5.2; the sub-cgroups with it) and waits up to [`FREEZE_LIMIT`] for
    /// `cgroup.events` to say `frozen 1` (or `populated 0`): `cgroup.freeze`, open to thaw it with, or `None` where it
    /// could not be written. It reads the file again after 0.1 ms, then after twice as long each time up to 1 ms, or
    /// sooner at a change (`POLLPRI`): the kernel tells a change of the file at most once every 10 ms, which a freeze
    /// that takes microseconds would otherwise wait for.
    fn freeze(&self) -> Option<File> {
        let mut freezer = open_control(&self.dir, "cgroup.freeze", true).ok()?;
        freezer.write_all(b"1").ok()?;
        let deadline = Instant::now() + FREEZE_LIMIT;
        let Ok(events) = self.events() else {
            return Some(freezer);
        };
        let mut buf = [0u8; 128];
        let mut pause = Duration::from_micros(100);
        // Read before the poll: the poll then wakes at any change after it.
        while let Ok(n) = events.read_at(&mut buf, 0) {
            let said = |what: &[u8]| buf[..n].windows(what.len()).any(|w| w == what);
            if said(b"frozen 1") || said(b"populated 0") {
                break;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            let mut fds = [libc::pollfd {
                fd: events.as_raw_fd(),
                events: libc::POLLPRI,
                revents: 0,
            }];
            if left.is_zero() || sys::poll(&mut fds, left.min(pause)).is_err() {
                break;
            }
            pause = (pause * 2).min(Duration::from_millis(1));
        }
        Some(freezer)
    }

    /// Whether `cgroup.events` says `populated 0`: no live process in the cgroup or in a sub-cgroup (one that has
    /// exited does not count), or the folder is gone (its keeper ended the job and removed it: `ENODEV` from the file
    /// opened before, `ENOENT` from its open). `false` when it cannot be read.
    fn empty(&self) -> bool {
        let mut buf = [0u8; 128];
        match self.events().and_then(|events| events.read_at(&mut buf, 0)) {
            Ok(n) => buf[..n].windows(11).any(|w| w == b"populated 0"),
            Err(e) => e.raw_os_error() == Some(libc::ENODEV) || e.kind() == io::ErrorKind::NotFound,
        }
    }

    /// Whether no process of the job is left (`cgroup.events` says `populated 0`, or the folder is gone: see
    /// [`empty`](Self::empty)), and a descriptor that turns readable when that may have changed: an epoll descriptor
    /// (`sys::readable_when_any`) of `cgroup.events` (`POLLPRI` at a change of what it says since it was last read:
    /// it is read after the descriptor is made, and at every call, so that no change after a read is missed) and of
    /// `keeper`, the keeper's pidfd (readable once it exited). The file alone is not enough: the kernel tells a change
    /// of it at most once every 10 ms, a later one when that time is up, and a change told late is never told if the
    /// folder is removed meanwhile, which the keeper does when it finds the job empty, right before it exits. `None`
    /// without the keeper's pidfd, or where the descriptor cannot be had (none left, the folder gone): the wait then
    /// reads the file on its schedule.
    pub(super) fn rest_exited(&self, keeper: Option<BorrowedFd<'_>>) -> (bool, Option<RawFd>) {
        let watch = self.watch.get_or_init(|| {
            let events = self.events().ok()?;
            let fds = [(events.as_fd(), libc::EPOLLPRI), (keeper?, libc::EPOLLIN)];
            sys::readable_when_any(&fds).ok()
        });
        (self.empty(), watch.as_ref().map(AsRawFd::as_raw_fd))
    }

    fn kill_all(&self) -> io::Result<()> {
        self.kill()
            .and_then(|mut kill| kill.write_all(b"1"))
            // A folder its keeper removed: nothing is left to kill.
            .or_else(|e| if self.dir.exists() { Err(e) } else { Ok(()) })
            .map_err(|e| {
                crate::sys::os_error_or(e, |e| {
                    format!("cannot kill the job's cgroup {}: {e}", self.dir.display())
                })
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

    /// Ends the job (see `Job::end`): once only. An empty cgroup (a failed spawn, a job that left nothing behind) is
    /// removed at once, with no descriptor needed.
    pub(super) fn end(&self, keep: bool) -> io::Result<()> {
        // A keeper removes the folder itself when it ends the job.
        if self.ended.swap(true, Ordering::SeqCst)
            || fs::remove_dir(&self.dir).is_ok()
            || !self.dir.exists()
        {
            return Ok(());
        }
        if keep {
            self.release()?;
        } else {
            self.kill_all()?;
        }
        if !self.remove_when_empty(Instant::now() + EMPTY_LIMIT)? {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "the job's cgroup {} still held processes {:?} after {EMPTY_LIMIT:?}, so it was left in place",
                    self.dir.display(),
                    self.pids().unwrap_or_default()
                ),
            ));
        }
        Ok(())
    }

    /// Moves every process of the cgroup (and of its sub-cgroups) to the cgroup this process runs in (bounded: a
    /// process that keeps forking may win). Not to the parent folder: one named with `cgroup_parent` may have
    /// controllers enabled for its children, and then the kernel refuses it processes of its own (`EBUSY`, the
    /// "no internal processes" rule); the cgroup this process runs in already holds one, so it may hold more.
    fn release(&self) -> io::Result<()> {
        let path = own_folder()
            .unwrap_or_else(|_| self.parent.clone())
            .join("cgroup.procs");
        let mut to = OpenOptions::new().write(true).open(&path).map_err(|e| {
            crate::sys::os_error_or(e, |e| format!("cannot open {}: {e}", path.display()))
        })?;
        for _ in 0..RELEASE_ROUNDS {
            let pids = self.pids()?;
            if pids.is_empty() {
                break;
            }
            for pid in pids {
                match to.write_all(pid.to_string().as_bytes()) {
                    Err(e) if e.raw_os_error() != Some(libc::ESRCH) => {
                        return Err(crate::sys::os_error_or(e, |e| {
                            format!(
                                "cannot move process {pid} out of the job's cgroup to {}: {e}",
                                path.display()
                            )
                        }))
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// Removes the folder, with the sub-cgroups the job made in it (deepest first), once the cgroup is empty
    /// (`true`; `rmdir` fails with `EBUSY` while a cgroup is populated or has children), or gives up at `deadline`
    /// (`false`). It tries again when `cgroup.events` changes (`POLLPRI`), at least every 10
    /// ms (without that file, which needs a descriptor, every 10 ms).
    fn remove_when_empty(&self, deadline: Instant) -> io::Result<bool> {
        loop {
            let events = self.events().ok();
            if let Some(events) = events {
                // Read before the `rmdir`: the poll then wakes at any change after it.
                let _ = events.read_at(&mut [0u8; 128], 0);
            }
            match remove_tree(&self.dir) {
                Ok(()) => return Ok(true),
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {}
                Err(e) => {
                    return Err(crate::sys::os_error_or(e, |e| {
                        format!("cannot remove the job's cgroup {}: {e}", self.dir.display())
                    }))
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(false);
            }
            let mut fds: Vec<libc::pollfd> = events
                .map(|events| libc::pollfd {
                    fd: events.as_raw_fd(),
                    events: libc::POLLPRI,
                    revents: 0,
                })
                .into_iter()
                .collect();
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

/// Control file `file` of the cgroup folder `dir`, open (for writing or reading), kept in `slot` once opened.
fn control<'a>(
    slot: &'a OnceLock<File>,
    dir: &Path,
    file: &str,
    write: bool,
) -> io::Result<&'a File> {
    if let Some(file) = slot.get() {
        return Ok(file);
    }
    let opened = open_control(dir, file, write)?;
    Ok(slot.get_or_init(|| opened))
}

fn open_control(dir: &Path, file: &str, write: bool) -> io::Result<File> {
    let path = dir.join(file);
    OpenOptions::new()
        .read(!write)
        .write(write)
        .open(&path)
        .map_err(|e| crate::sys::os_error_or(e, |e| format!("cannot open {}: {e}", path.display())))
}

/// The folders of the cgroup tree at `dir`: `dir` first, then each sub-cgroup before the sub-cgroups below it
/// (none of the names are followed if `dir` cannot be read).
fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut folders = vec![dir.to_path_buf()];
    let mut next = 0;
    while let Some(dir) = folders.get(next).cloned() {
        next += 1;
        if let Ok(entries) = fs::read_dir(&dir) {
            folders.extend(
                entries
                    .flatten()
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .map(|e| e.path()),
            );
        }
    }
    folders
}

/// Removes the cgroup folder `dir` and every sub-cgroup in it, deepest first. Fails with the first error other than
/// `ENOENT` (a folder removed meanwhile), `EBUSY` while one of them still holds a process.
fn remove_tree(dir: &Path) -> io::Result<()> {
    for folder in tree(dir).iter().rev() {
        match fs::remove_dir(folder) {
            Err(e) if e.kind() != io::ErrorKind::NotFound || folder == dir => return Err(e),
            _ => {}
        }
    }
    Ok(())
}

/// This process's own cgroup v2 folder, where it may make a child cgroup.
fn own_cgroup() -> io::Result<PathBuf> {
    let dir = own_folder()?;
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

/// The folder of the cgroup v2 this process runs in.
fn own_folder() -> io::Result<PathBuf> {
    let unusable = |why: String| io::Error::new(io::ErrorKind::Unsupported, why);
    let cgroups = read_whole("/proc/self/cgroup").map_err(|e| {
        crate::sys::os_error_or(e, |e| format!("cannot read /proc/self/cgroup: {e}"))
    })?;
    let path = cgroups
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .ok_or_else(|| {
            unusable("this process is in no cgroup v2 (no 0:: line in /proc/self/cgroup)".into())
        })?;
    if let Some(dir) = at_usual_mount(path) {
        return Ok(dir);
    }
    from_mountinfo(path)
}

/// Where systemd and most container runtimes mount cgroup v2: the whole tree at `/sys/fs/cgroup`, or beside the v1
/// hierarchies at `/sys/fs/cgroup/unified`. Tried before `/proc/self/mountinfo`, whose text the kernel makes anew for
/// each read (about 50 µs here, for 20 mounts): a cgroup2 file system there (`statfs`) that holds the folder `path`
/// (this process's cgroup, as `/proc/self/cgroup` names it). A mount of a subtree (a root other than this process's
/// cgroup root, which only mountinfo tells) would not hold a folder of that full path, and mountinfo is read then.
fn at_usual_mount(path: &str) -> Option<PathBuf> {
    if !path.starts_with('/') || path.split('/').any(|part| part == "..") {
        return None; // a cgroup outside this namespace's root: mountinfo says what is mounted
    }
    let point = ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
        .into_iter()
        .find(|point| sys::is_cgroup2(Path::new(point)))?;
    Some(PathBuf::from(format!("{point}{path}"))).filter(|dir| dir.is_dir())
}

/// The folder of this process's cgroup `path` under the cgroup2 file system that `/proc/self/mountinfo` lists.
fn from_mountinfo(path: &str) -> io::Result<PathBuf> {
    let unusable = |why: String| io::Error::new(io::ErrorKind::Unsupported, why);
    let mounts = read_whole("/proc/self/mountinfo").map_err(|e| {
        crate::sys::os_error_or(e, |e| format!("cannot read /proc/self/mountinfo: {e}"))
    })?;
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
    Ok(dir)
}

/// The text of a `/proc` file, read with a buffer that usually holds it whole: two `read`s, where
/// `fs::read_to_string` (which sees a size of 0) starts at 32 bytes and doubles.
fn read_whole(path: &str) -> io::Result<String> {
    use std::io::Read as _;
    let mut text = String::with_capacity(8192);
    File::open(path)?.read_to_string(&mut text)?;
    Ok(text)
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

#[cfg(test)]
mod tests {
    /// Both ways of finding this process's cgroup folder agree (where cgroup v2 is mounted at a usual place).
    #[test]
    fn the_usual_mount_is_where_mountinfo_says() {
        let text = super::read_whole("/proc/self/cgroup").unwrap();
        let Some(path) = text.lines().find_map(|l| l.strip_prefix("0::")) else {
            return; // no cgroup v2 here
        };
        if let Some(dir) = super::at_usual_mount(path) {
            assert_eq!(dir, super::from_mountinfo(path).unwrap());
        }
    }
}
