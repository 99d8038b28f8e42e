//! Cgroup mode, as this process sees it: a cgroup v2 of the job's own, made as a child of the caller's cgroup (or of
//! a folder it names), which the spawning child makes and in which its successor, and so the command and the keeper,
//! are born (`crate::keeper`).
//! The keeper ends the job (freeze, list, `cgroup.kill`, the folder's removal: `job/keeper/cgroup.rs`); here is what
//! is left when it could not: the kill and the removal of a job whose keeper was killed, and a job that ended on
//! its own, whose keeper exited inside the folder (one `rmdir`).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write as _};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::proc::random_hex;
use crate::protocol::cgroup_tree as tree;
use crate::sys;

/// How long the end of a job waits for its cgroup to empty before it leaves the folder behind.
const EMPTY_LIMIT: Duration = Duration::from_secs(1);

/// How many times the processes kept by `set_kill_leftovers(false)` are moved out before the folder is given up.
const RELEASE_ROUNDS: usize = 100;

/// A job's cgroup folder, made by [`Cgroup::make`]. Its `cgroup.kill` and `cgroup.events` are opened only where this
/// process must end the job itself (its keeper was killed).
#[derive(Debug)]
pub(crate) struct Cgroup {
    dir: PathBuf,
    /// Where it was made (its parent folder).
    parent: PathBuf,
    /// The cgroup this process runs in: where the keeper moves to kill the job, and where kept leftovers go.
    own: PathBuf,
    /// The folder's name, unique (it holds 128 random bits).
    name: String,
    kill: OnceLock<File>,
    events: OnceLock<File>,
    ended: AtomicBool,
}

impl Cgroup {
    fn kill(&self) -> io::Result<&File> {
        control(&self.kill, &self.dir, "cgroup.kill", true)
    }

    fn events(&self) -> io::Result<&File> {
        control(&self.events, &self.dir, "cgroup.events", false)
    }

    /// Names a new cgroup for a job in `parent`, or in this process's own cgroup (where systemd delegated it, if it
    /// manages the tree), where this process may write, and that the job's keeper can leave to kill it (this
    /// process's own `cgroup.procs` is writable). The spawning child makes it (see `crate::keeper`), and checks that
    /// it has `cgroup.kill` (Linux 5.14); a folder it made is removed when this is dropped unended.
    pub(crate) fn make(parent: Option<&Path>) -> io::Result<Cgroup> {
        let own = own_folder()?;
        let parent = match parent {
            Some(parent) => parent.to_owned(),
            None => own_cgroup(&own)?,
        };
        let name = format!("grouptimeout-{}-{}", std::process::id(), random_hex()?);
        let dir = parent.join(&name);
        for (folder, what) in [
            (&parent, "make a cgroup in"),
            (&own.join("cgroup.procs"), "leave the job's cgroup to"),
        ] {
            crate::sys::writable(folder).map_err(|e| {
                crate::sys::os_error_or(e, |e| format!("cannot {what} {}: {e}", folder.display()))
            })?;
        }
        Ok(Cgroup {
            dir,
            parent,
            own,
            name,
            kill: OnceLock::new(),
            events: OnceLock::new(),
            ended: AtomicBool::new(false),
        })
    }

    /// The cgroup this process runs in.
    pub(crate) fn own(&self) -> &Path {
        &self.own
    }

    /// The same folder for a job that has ended (see `Job::record`): its name, for [`contains`](Self::contains),
    /// without its control files (nothing signals a job that has ended); it is never ended again.
    pub(super) fn record(&self) -> Cgroup {
        Cgroup {
            dir: self.dir.clone(),
            parent: self.parent.clone(),
            own: self.own.clone(),
            name: self.name.clone(),
            kill: OnceLock::new(),
            events: OnceLock::new(),
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

    /// Kills every process of the cgroup at once (`cgroup.kill`): the end of a job whose keeper was killed.
    pub(super) fn kill_all(&self) -> io::Result<()> {
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

    /// Ends the job (see `Job::end`): once only. An empty cgroup (a failed spawn, a job that ended on its own, whose
    /// keeper exited inside) is removed at once, with no descriptor needed; what a killed keeper left is killed (or,
    /// with `keep`, moved out) first.
    pub(super) fn end(&self, keep: bool) -> io::Result<()> {
        // A keeper that killed the job removed the folder itself.
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
        let path = self.own.join("cgroup.procs");
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

/// This process's own cgroup v2 folder `dir`, where it may make a child cgroup.
fn own_cgroup(dir: &Path) -> io::Result<PathBuf> {
    if Path::new("/run/systemd/system").exists() && !delegated(dir) {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "systemd manages the cgroup tree and did not delegate {} (no trusted.delegate or user.delegate \
                 attribute on it or above it: give the service Delegate=yes, or name a delegated folder)",
                dir.display()
            ),
        ));
    }
    Ok(dir.to_owned())
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
