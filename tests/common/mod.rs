//! Helpers shared by the behaviour tests: process state read from `/proc`, never `kill -0`.
#![allow(dead_code)]

use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

/// The fields of `/proc/PID/stat` after the command name (the state first); `None` once the process is gone.
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: the fields we want follow the last ')'.
    let fields = stat[stat.rfind(')')? + 1..].split_whitespace();
    Some(fields.map(str::to_owned).collect())
}

/// State letter and process group of `pid`, from `/proc/PID/stat`; `None` once the process is gone.
pub fn state_and_group(pid: u32) -> Option<(char, u32)> {
    let fields = stat_fields(pid)?;
    let state = fields.first()?.chars().next()?;
    let pgrp = fields.get(2)?.parse().ok()?;
    Some((state, pgrp))
}

/// Parent pid of `pid`, if it still exists.
pub fn parent_of(pid: u32) -> Option<u32> {
    stat_fields(pid)?.get(1)?.parse().ok()
}

/// Dead means gone, a zombie (`Z`) or dying (`X`): it runs no more code.
pub fn is_dead(pid: u32) -> bool {
    !matches!(state_and_group(pid), Some((state, _)) if state != 'Z' && state != 'X')
}

/// The processes (not dead ones) whose command line holds `needle`.
pub fn with_cmdline(needle: &str) -> Vec<u32> {
    KillOnDrop::with_cmdline(needle).into_pids()
}

/// Waits until `pred` holds, checking every 10 ms for at most `limit`; returns whether it held.
pub fn eventually(limit: Duration, mut pred: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    loop {
        if pred() {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        thread::sleep(Duration::from_millis(10));
    }
}

/// Waits (bounded: 20 s) until the pipe `fd` holds at least `n` bytes not read yet (`FIONREAD`), and says whether it
/// did: for output that a command must have written before a short deadline the test sets next, so that a slow start
/// of the command cannot come after that deadline.
pub fn pipe_holds(fd: &impl std::os::fd::AsRawFd, n: usize) -> bool {
    eventually(Duration::from_secs(20), || {
        let mut held: libc::c_int = 0;
        // SAFETY: FIONREAD writes one int, to `held`, which lives across the call; `fd` is kept open by its owner.
        let ret = unsafe { libc::ioctl(fd.as_raw_fd(), libc::FIONREAD as _, &raw mut held) };
        ret == 0 && usize::try_from(held).is_ok_and(|held| held >= n)
    })
}

/// Waits (bounded) until every pid in `pids` is dead; returns the ones still alive. Each is the process it is at this
/// call (see [`KillOnDrop`]): one that ends during the wait counts as dead even once another process has its pid.
/// Pids learned earlier are better checked with [`KillOnDrop::survivors_after`] of a list made where they were learned.
pub fn survivors_after(limit: Duration, pids: &[u32]) -> Vec<u32> {
    let listed = KillOnDrop::new(pids.to_vec());
    let alive = listed.survivors_after(limit);
    listed.into_pids();
    alive
}

/// Live (not zombie) processes whose process group is `pgid`.
pub fn live_members(pgid: u32) -> Vec<u32> {
    let mut pids = Vec::new();
    for entry in fs::read_dir("/proc").expect("/proc is readable").flatten() {
        let Some(member) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
            continue;
        };
        if matches!(state_and_group(member), Some((s, g)) if g == pgid && s != 'Z' && s != 'X') {
            pids.push(member);
        }
    }
    pids
}

/// Waits (bounded) until group `pgid` has at least `n` live members, and returns them.
pub fn wait_for_members(pgid: u32, n: usize) -> Vec<u32> {
    let mut members = Vec::new();
    let grew = eventually(Duration::from_secs(20), || {
        members = live_members(pgid);
        members.len() >= n
    });
    assert!(
        grew,
        "group {pgid} reached only {} of {n} members",
        members.len()
    );
    members
}

/// Sends SIGKILL to each pid that is still the process it was when this is called (see [`KillOnDrop`]): only for
/// pids that the test learned this very moment. A pid learned earlier (from a pid file, a child's output, a scan) may
/// name another test's process by now: hold it in a [`KillOnDrop`] made where the pid is learned, and use its
/// [`KillOnDrop::kill`].
pub fn kill_pids(pids: &[u32]) {
    KillOnDrop::new(pids.to_vec()).kill();
}

/// Processes a test started, each known by its pid and its start time (field 22 of `/proc/PID/stat`) read when the
/// test learned the pid; killed (`SIGKILL`, one by one, never a group) when dropped, so that a failing test leaves
/// nothing running. Only those that are still the processes they were when listed are signalled: a pid that died
/// meanwhile may belong to another test's process by then, or to another copy of the suite's (the suite's fork storms
/// wrap the pids within seconds). The signal goes through a pidfd opened before the start time is checked again, so a
/// pid reused between the check and the signal is not signalled either (a kernel without `pidfd_open`: `kill(2)`
/// right after the check).
///
/// A listed pid whose process is not the listed one any more counts as dead ([`KillOnDrop::alive`]). What it cannot
/// tell apart: a process that took the pid in the clock tick (10 ms) in which the listed one started; outside a PID
/// namespace that steers its pids (`spawn_with_pid`), a pid comes back only after the pids wrapped around
/// (`kernel.pid_max` forks), which takes far longer.
pub struct KillOnDrop(pub Vec<u32>, Vec<Option<u64>>);

impl KillOnDrop {
    /// The processes `pids` are now.
    pub fn new(pids: Vec<u32>) -> KillOnDrop {
        KillOnDrop::checked(pids, |_| true)
    }

    /// The processes `pids` are now, but only those for which `ours` holds (a marker of the test's, such as a working
    /// folder or an argument of its own): each one's start time is read before `ours` looks at it, so a pid reused in
    /// between is not taken for the test's. The others are listed as gone.
    pub fn checked(pids: Vec<u32>, mut ours: impl FnMut(u32) -> bool) -> KillOnDrop {
        let started = pids
            .iter()
            .map(|&pid| start_time(pid).filter(|_| ours(pid)))
            .collect();
        KillOnDrop(pids, started)
    }

    /// Every process (not a dead one) for which `ours` holds, as [`KillOnDrop::checked`] lists them.
    pub fn scan(mut ours: impl FnMut(u32) -> bool) -> KillOnDrop {
        let pids = fs::read_dir("/proc")
            .expect("/proc is readable")
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse().ok())
            .collect();
        let mut found = KillOnDrop::checked(pids, |pid| ours(pid) && !is_dead(pid));
        let (pids, started) = (std::mem::take(&mut found.0), std::mem::take(&mut found.1));
        let (pids, started) = pids
            .into_iter()
            .zip(started)
            .filter(|(_, started)| started.is_some())
            .unzip();
        KillOnDrop(pids, started)
    }

    /// The processes (not dead ones) whose command line holds `needle` (see [`with_cmdline`]).
    pub fn with_cmdline(needle: &str) -> KillOnDrop {
        KillOnDrop::scan(|pid| {
            let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            String::from_utf8_lossy(&cmdline).contains(needle)
        })
    }

    /// The processes whose pids a command wrote to `file` (words; what is no pid is left out; none if there is no
    /// such file): those that started after the file was last written are not the ones written (their pids were
    /// reused), and are listed as gone. For a pid file read after its processes may have ended. Within 50 ms: start
    /// times count in clock ticks (10 ms) and file times follow the kernel's coarse clock, a few ms behind; outside a
    /// PID namespace that steers its pids, a pid is not freed and taken again in such a time (the pids would have to
    /// wrap around).
    pub fn from_file(file: impl AsRef<std::path::Path>) -> KillOnDrop {
        // The time first: a file written again after it was read is not taken for older than its pids.
        let written = fs::metadata(&file)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
        let pids = fs::read_to_string(&file)
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|word| word.parse().ok())
            .collect();
        // Boot, on the clock of the file times: the start times count from boot (on CLOCK_BOOTTIME).
        // (Linux: /proc's start times exist only there; elsewhere the monotonic clock keeps this compiling.)
        #[cfg(target_os = "linux")]
        let since_boot = libc::CLOCK_BOOTTIME;
        #[cfg(not(target_os = "linux"))]
        let since_boot = libc::CLOCK_MONOTONIC;
        let booted = clock(libc::CLOCK_REALTIME).checked_sub(clock(since_boot));
        // SAFETY: sysconf has no preconditions.
        let ticks = u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) }).unwrap_or(100);
        KillOnDrop::checked(pids, |pid| {
            let (Some(written), Some(booted), Some(started)) = (written, booted, start_time(pid))
            else {
                return false;
            };
            booted + Duration::from_millis(started * 1000 / ticks.max(1))
                <= written + Duration::from_millis(50)
        })
    }

    /// The processes that had the pids and start times ([`start_time`]) of `started`, as another process read them.
    pub fn started(started: &[(u32, u64)]) -> KillOnDrop {
        let (pids, started) = started.iter().map(|&(p, s)| (p, Some(s))).unzip();
        KillOnDrop(pids, started)
    }

    /// The listed pids, the processes left running (nothing is killed).
    pub fn into_pids(mut self) -> Vec<u32> {
        self.1.clear();
        std::mem::take(&mut self.0)
    }

    /// The listed processes that are still the listed ones and not dead.
    pub fn alive(&self) -> Vec<u32> {
        (self.0.iter().zip(&self.1))
            .filter(|&(&pid, &started)| started.is_some() && start_time(pid) == started)
            .map(|(&pid, _)| pid)
            .filter(|&pid| !is_dead(pid))
            .collect()
    }

    /// Waits (bounded) until every listed process is dead (see [`KillOnDrop::alive`]); returns the ones still alive.
    pub fn survivors_after(&self, limit: Duration) -> Vec<u32> {
        eventually(limit, || self.alive().is_empty());
        self.alive()
    }

    /// Sends `SIGKILL` to each listed process that is still the listed one (see the type); again when dropped.
    pub fn kill(&self) {
        for (&pid, &started) in self.0.iter().zip(&self.1) {
            if let Some(started) = started {
                kill_if_same(pid, started);
            }
        }
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Sends `SIGKILL` to `pid` if it is still the process that started at `started` (see [`KillOnDrop`]).
fn kill_if_same(pid: u32, started: u64) {
    match pidfd_of(pid) {
        // The pidfd names the process that had the pid when it was opened: the listed one if it has its start time
        // still.
        Ok(fd) => {
            if start_time(pid) == Some(started) {
                signal_through(&fd, libc::SIGKILL);
            }
        }
        // A kernel before 5.3: then a kill(2) right after the check.
        Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => {
            if let (Some(raw), true) = (
                libc::pid_t::try_from(pid).ok(),
                start_time(pid) == Some(started),
            ) {
                // SAFETY: kill with a pid above 1 (pidfd_of checked it) and a signal number; no memory is passed.
                unsafe { libc::kill(raw, libc::SIGKILL) };
            }
        }
        Err(_) => {} // gone
    }
}

/// A pidfd of the process that has pid `pid` now (`pidfd_open`): a signal sent through it ([`signal_through`])
/// reaches that process only, never a later owner of its pid. `ESRCH` when there is none; `EINVAL` for ids up to 1.
pub fn pidfd_of(pid: u32) -> std::io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd as _;
    let raw = libc::pid_t::try_from(pid)
        .ok()
        .filter(|&raw| raw > 1)
        .ok_or(std::io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: pidfd_open takes a pid and flags; no memory is passed.
    #[cfg(target_os = "linux")]
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, raw, 0) };
    // Pidfds are Linux's: elsewhere `kill_if_same` falls back to kill(2) right after its check.
    #[cfg(not(target_os = "linux"))]
    let fd: libc::c_long = {
        let _ = raw;
        -1
    };
    if fd < 0 {
        return Err(if cfg!(target_os = "linux") {
            std::io::Error::last_os_error()
        } else {
            std::io::Error::from_raw_os_error(libc::ENOSYS)
        });
    }
    let fd = i32::try_from(fd).expect("a descriptor fits an int");
    // SAFETY: `fd` was just opened, and nothing else owns it.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}

/// Sends `signal` to the process of the pidfd `fd` ([`pidfd_of`]); whether it was sent (not when the process has
/// ended).
pub fn signal_through(fd: &std::os::fd::OwnedFd, signal: i32) -> bool {
    use std::os::fd::AsRawFd as _;
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (fd.as_raw_fd(), signal);
        false // no pidfd exists elsewhere (`pidfd_of` fails)
    }
    // SAFETY: pidfd_send_signal on a descriptor that `fd` keeps open, with no siginfo; no other memory is passed.
    #[cfg(target_os = "linux")]
    unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            fd.as_raw_fd(),
            signal,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        ) == 0
    }
}

/// The time on `clock`.
fn clock(clock: libc::clockid_t) -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes to `t`, which lives across the call.
    unsafe { libc::clock_gettime(clock, &raw mut t) };
    Duration::new(
        u64::try_from(t.tv_sec).unwrap_or(0),
        u32::try_from(t.tv_nsec).unwrap_or(0),
    )
}

/// The start time of `pid` (field 22 of `/proc/PID/stat`, in clock ticks since boot), if it exists.
pub fn start_time(pid: u32) -> Option<u64> {
    stat_fields(pid)?.get(19)?.parse().ok()
}

/// Reads one line from a child's stdout and parses it as a pid.
pub fn read_pid(out: impl Read) -> u32 {
    let mut line = String::new();
    BufReader::new(out)
        .read_line(&mut line)
        .expect("read the pid line");
    line.trim()
        .parse()
        .unwrap_or_else(|_| panic!("not a pid: {line:?}"))
}

/// A path in the temporary directory that no other test uses; the file does not exist yet. Named after this process:
/// its pid, and in a PID namespace of a test's own ([`in_own_pid_namespace`]), where every such run has the same small
/// pids, also the pid of the process that made the namespace (another copy of the suite may run the same test at once).
pub fn temp_path(name: &str) -> PathBuf {
    let outer = std::env::var(OUTER_PID)
        .ok()
        .filter(|_| in_private_pid_namespace())
        .map_or_else(String::new, |pid| format!("{pid}."));
    let path = std::env::temp_dir().join(format!(
        "grouptimeout-test-{outer}{}-{name}",
        std::process::id()
    ));
    let _ = fs::remove_file(&path);
    path
}

/// A folder in the temporary directory that no other test uses, made empty (a folder of an earlier run whose pid this
/// process reuses, left behind by a run that was killed, is removed first: named with the user's id too, so that it is
/// that user's); removed with what it holds when dropped.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        let uid = std::os::unix::fs::MetadataExt::uid(&fs::metadata("/proc/self").unwrap());
        let path = temp_path(&format!("{name}-uid{uid}"));
        let _ = fs::remove_dir_all(&path);
        fs::create_dir(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        TempDir(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// A copy of the executable `path` that every user may run, for a test that runs it as another user (nobody): the
/// checkout, and so `target/`, may sit in a folder that only its owner may enter (`/root`, a `mktemp -d`).
///
/// The copy is made once per test process, in a folder of the temporary directory that every user may enter and that
/// this process alone uses (see [`copies_folder`]): the folders of processes that have ended are removed by the next
/// test process that makes one, so copies no longer pile up, and a copy never vanishes while its process may run it.
pub fn runnable_by_anyone(path: &std::path::Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let dir = copies_folder();
    let name = path.file_name().unwrap().to_str().unwrap();
    let copy = dir.join(name);
    if !copy.exists() {
        // Copied under a name of this call's, then renamed: threads of this process never run a half copy.
        let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let part = dir.join(format!(".{name}.{call}"));
        // Copied by `cp`, not in this process: a process forked by another thread meanwhile would inherit the copy's
        // descriptor open for writing until its exec, and an exec of the copy then fails with ETXTBSY.
        assert!(Command::new("cp")
            .arg(path)
            .arg(&part)
            .status()
            .unwrap()
            .success());
        fs::set_permissions(&part, fs::Permissions::from_mode(0o755)).unwrap();
        fs::rename(&part, &copy).unwrap();
    }
    copy
}

/// This process's folder for [`runnable_by_anyone`]'s copies, `grouptimeout-test-copies-PID-N` in the temporary
/// directory, made at the first call; the folders of ended processes are removed first ([`remove_ended_copies`]).
///
/// Why so: a test has no hook at its process's end that could remove the copies, and copies shared by the processes
/// of one build (as before) cannot tell when the last user has ended. Here each folder holds a `lock` file that its
/// process keeps locked (`flock`, exclusive) for as long as it lives (the lock goes with its last descriptor, at the
/// process's end, however it ends): a folder whose lock can be taken is no test process's any more and is removed.
/// So two runs at once (two worktrees, each with its own build) never remove each other's copies, and what a run
/// leaves is only the folders of its processes, until the next test process of any run starts. A copy costs one
/// `cp` per test process that needs it (tens of milliseconds). Folders of the old naming
/// (`grouptimeout-test-bin-*`) are left alone: a run of an older checkout may still be using them.
fn copies_folder() -> &'static std::path::Path {
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    static FOLDER: std::sync::OnceLock<(PathBuf, fs::File)> = std::sync::OnceLock::new();
    &FOLDER
        .get_or_init(|| {
            remove_ended_copies();
            for n in 0..100 {
                let dir = std::env::temp_dir().join(format!("{COPIES}{}-{n}", std::process::id()));
                match fs::create_dir(&dir) {
                    // A folder of an earlier process with this id, still in use (or locked by a remover).
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                    made => made.unwrap_or_else(|e| panic!("{}: {e}", dir.display())),
                }
                fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
                let Ok(file) = fs::File::create(dir.join("lock")) else {
                    continue; // removed meanwhile by another process that found it unlocked
                };
                assert!(flock(&file, libc::LOCK_EX));
                // Another process may have taken the lock first (it was not ours yet) and removed the folder: then
                // the lock file is no longer there.
                let ours = fs::metadata(dir.join("lock")).is_ok_and(|m| {
                    file.metadata()
                        .is_ok_and(|f| f.ino() == m.ino() && f.dev() == m.dev())
                });
                if ours {
                    return (dir, file);
                }
            }
            panic!(
                "no folder for copies could be made in {}",
                std::env::temp_dir().display()
            )
        })
        .0
}

/// The start of the name of a folder of [`runnable_by_anyone`]'s copies.
pub const COPIES: &str = "grouptimeout-test-copies-";

/// Removes the folders of [`runnable_by_anyone`]'s copies whose `lock` is not locked: their processes have ended.
pub fn remove_ended_copies() {
    for entry in fs::read_dir(std::env::temp_dir()).unwrap().flatten() {
        if entry.file_name().to_string_lossy().starts_with(COPIES) {
            // Not locked: its process has ended (or never locked it: it made another folder since).
            if let Ok(file) = fs::File::open(entry.path().join("lock")) {
                if flock(&file, libc::LOCK_EX | libc::LOCK_NB) {
                    let _ = fs::remove_dir_all(entry.path());
                }
            }
        }
    }
}

/// `flock(2)` on `file` with `how`: whether it succeeded.
pub fn flock(file: &fs::File, how: i32) -> bool {
    use std::os::unix::io::AsRawFd as _;
    // SAFETY: flock on a descriptor that `file` keeps open; no memory is passed.
    unsafe { libc::flock(file.as_raw_fd(), how) == 0 }
}

/// The cgroup v2 folder of process `pid` (a job's, in cgroup mode), from its `/proc/PID/cgroup` and the cgroup2
/// mount; `None` when it is gone or the machine has no cgroup v2.
pub fn job_folder(pid: u32) -> Option<PathBuf> {
    let rel = fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    let rel = rel.lines().find_map(|l| l.strip_prefix("0::"))?.to_string();
    cgroup_folder(&rel)
}

/// The command of a spawned job whose id is `id`: the keeper's child in the group whose id is `id`, where `id` is a contained job's keeper
/// (see `spawn_contained`), else `id` itself.
pub fn command_of(id: u32) -> u32 {
    let children = fs::read_to_string(format!("/proc/{id}/task/{id}/children")).unwrap_or_default();
    let children: Vec<u32> = children
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect();
    // (its helper that made the keeper's own group may still be listed: in another group)
    children
        .into_iter()
        .find(|&child| state_and_group(child).is_some_and(|(_, group)| group == id))
        .unwrap_or(id)
}

/// The folder of the cgroup v2 path `rel` (as `/proc/PID/cgroup` names it), under the cgroup2 mount; `None` when
/// the machine has no cgroup v2.
pub fn cgroup_folder(rel: &str) -> Option<PathBuf> {
    let mounts = fs::read_to_string("/proc/self/mountinfo").ok()?;
    let point = mounts.lines().find_map(|l| {
        let (before, after) = l.split_once(" - ")?;
        after
            .starts_with("cgroup2 ")
            .then(|| before.split(' ').nth(4).unwrap().to_string())
    })?;
    Some(PathBuf::from(format!("{point}{rel}")))
}

/// The job cgroups that process `maker` made (`grouptimeout-MAKER-…`) beside this test process's own cgroup, as
/// `spawn_contained` names them, that are still there.
pub fn job_folders_made_by(maker: u32) -> Vec<PathBuf> {
    let prefix = format!("grouptimeout-{maker}-");
    let Some(Ok(entries)) = job_folder(std::process::id()).map(fs::read_dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect()
}

/// Whether this test runs as root (the tests that need it skip otherwise).
pub fn is_root() -> bool {
    std::os::unix::fs::MetadataExt::uid(&fs::metadata("/proc/self").unwrap()) == 0
}

/// The process group of this test process.
pub fn own_group() -> u32 {
    state_and_group(std::process::id())
        .expect("/proc/self/stat")
        .1
}

/// Runs `f` in a thread of its own and waits at most `limit` for it to return: how long it took, or `None` when it
/// did not return in time. Then `unstick` runs, which must make `f` return, so that the thread can be joined and the
/// test fails rather than hangs.
pub fn returns_within(
    limit: Duration,
    f: impl FnOnce() + Send + 'static,
    unstick: impl FnOnce(),
) -> Option<Duration> {
    let (done, finished) = std::sync::mpsc::channel();
    let started = Instant::now();
    let thread = thread::spawn(move || {
        f();
        let _ = done.send(());
    });
    let returned = finished.recv_timeout(limit).is_ok();
    let took = started.elapsed();
    if !returned {
        unstick();
    }
    thread.join().expect("the bounded call panicked");
    returned.then_some(took)
}

/// Reads the pids that a helper process writes to `file` (whitespace-separated), waiting (bounded) until there are
/// `n`; returns what was read, the file removed.
pub fn pids_from_file(file: &std::path::Path, n: usize) -> Vec<u32> {
    let mut pids: Vec<u32> = Vec::new();
    eventually(Duration::from_secs(20), || {
        pids = fs::read_to_string(file)
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|s| s.parse().ok())
            .collect();
        pids.len() == n
    });
    let _ = fs::remove_file(file);
    pids
}

/// The environment variable that tells a test binary run by [`in_own_pid_namespace`] that it runs inside the PID
/// namespace made for it.
const OWN_PID_NAMESPACE: &str = "GROUPTIMEOUT_TEST_OWN_PID_NAMESPACE";

/// The pid of the test process that made the PID namespace ([`in_own_pid_namespace`]), as the run inside gets it.
const OUTER_PID: &str = "GROUPTIMEOUT_TEST_OUTER_PID";

/// Whether this process is the test binary that [`in_own_pid_namespace`] runs inside a PID namespace of its own.
pub fn in_private_pid_namespace() -> bool {
    std::env::var_os(OWN_PID_NAMESPACE).is_some_and(|v| v == "1")
}

/// Runs this test binary's test `test` again, alone, as PID 1 of a PID namespace (and mount namespace, with its own
/// `/proc`) of its own: `unshare -p -f --mount-proc --kill-child`, with [`in_private_pid_namespace`] true there. For a
/// test that steers pid allocation ([`spawn_with_pid`]): the namespace's `ns_last_pid` is its own, so the machine's
/// other processes are not steered, nor take the pid first. Asserts that the inner run passed, and ran `test`. Bounded
/// (2 minutes): then the `unshare` is killed, and with it (`--kill-child`) the namespace's first process, whose death
/// ends every process of the namespace. The inner run's `SKIPPED` lines are repeated on this process's standard error.
/// Where such a namespace cannot be made, `test` is skipped (see [`skip_or_fail`]).
pub fn in_own_pid_namespace(test: &str) {
    in_pid_namespace(test, false);
}

/// [`in_own_pid_namespace`], but with `/bin/sh` as the namespace's PID 1 (the test binary its child), which reaps
/// every orphan the moment it exits, as an init such as systemd or `docker --init` does (this machine's PID 1 reaps
/// them about 1.8 s late).
pub fn in_own_pid_namespace_with_prompt_init(test: &str) {
    in_pid_namespace(test, true);
}

/// [`in_own_pid_namespace`]; with `shell_init`, under a shell as PID 1.
fn in_pid_namespace(test: &str, shell_init: bool) {
    if !runs_ok(
        "unshare",
        &["-p", "-f", "--mount-proc", "--kill-child", "true"],
    ) {
        return skip_or_fail(
            test,
            "cannot make a PID namespace (`unshare -p -f --mount-proc`: needs root and util-linux)",
        );
    }
    let out_path = temp_path(&format!("pidns-{test}-out"));
    let err_path = temp_path(&format!("pidns-{test}-err"));
    let mut inner = Command::new("unshare");
    inner.args(["-p", "-f", "--mount-proc", "--kill-child", "--"]);
    if shell_init {
        // Not the last command, so that the shell forks it and waits (reaping whatever else exits meanwhile).
        inner.args(["sh", "-c", "\"$0\" \"$@\"; exit $?"]);
    }
    let mut inner = inner
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(OWN_PID_NAMESPACE, "1")
        .env(OUTER_PID, std::process::id().to_string())
        .stdin(std::process::Stdio::null())
        .stdout(fs::File::create(&out_path).unwrap())
        .stderr(fs::File::create(&err_path).unwrap())
        .spawn()
        .expect("spawn unshare");
    let mut status = None;
    eventually(Duration::from_secs(120), || {
        status = inner.try_wait().unwrap();
        status.is_some()
    });
    if status.is_none() {
        let _ = inner.kill();
        let _ = inner.wait();
    }
    // Read and removed before any check, so that a failing run leaves no file behind.
    let out = fs::read_to_string(&out_path).unwrap_or_default();
    let err = fs::read_to_string(&err_path).unwrap_or_default();
    let _ = fs::remove_file(&out_path);
    let _ = fs::remove_file(&err_path);
    let Some(status) = status else {
        panic!("{test} did not end in 120 s in its PID namespace:\n{out}\n{err}");
    };
    for line in err.lines().filter(|l| l.starts_with("SKIPPED ")) {
        let _ = writeln!(std::io::stderr(), "{line}");
    }
    assert!(
        status.success(),
        "{test} failed in its PID namespace ({status}):\n{out}\n{err}"
    );
    assert!(
        out.contains(&format!("test {test} ... ok")) && out.contains("1 passed"),
        "{test} did not run in its PID namespace:\n{out}\n{err}"
    );
}

/// Whether `program args` runs and exits 0 (output discarded).
fn runs_ok(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Spawns `cmd` so that it gets pid `pid` (free again after a reap), by setting the pid namespace's last allocated pid
/// (`/proc/sys/kernel/ns_last_pid`) just below it. Only inside a PID namespace of the test's own (see
/// [`in_own_pid_namespace`]; it panics elsewhere), where no other process takes the pid first and no process outside
/// has its pid allocation steered. `None` when the write is refused, or the pid was taken first each time.
pub fn spawn_with_pid(cmd: &mut Command, pid: u32) -> Option<std::process::Child> {
    assert!(
        in_private_pid_namespace(),
        "spawn_with_pid sets ns_last_pid: only in a PID namespace of the test's own (see in_own_pid_namespace)"
    );
    for _ in 0..20 {
        fs::write("/proc/sys/kernel/ns_last_pid", (pid - 1).to_string()).ok()?;
        let child = cmd.spawn().expect("spawn");
        if child.id() == pid {
            return Some(child);
        }
        let mut child = child;
        let _ = child.kill();
        let _ = child.wait();
    }
    None
}

/// For a test that cannot run here because a tool it needs is missing; the test then returns without checking.
///
/// With `GROUPTIMEOUT_REQUIRE_TOOLS` set (and not to `false` or `0`) this panics instead: `.ci/run` sets it and
/// installs every tool the tests need, so there a missing one is a broken CI, not a reason to pass. A vendor's CI,
/// which sets only `CI`, skips. Otherwise it writes a `SKIPPED` line straight to the
/// process's standard error, which libtest does not capture (it captures only `print!`/`eprint!` and friends), so
/// that the skip shows in the output of `cargo test` although the test is counted as passed.
pub fn skip_or_fail(test: &str, why: &str) {
    let in_ci = std::env::var_os("GROUPTIMEOUT_REQUIRE_TOOLS")
        .is_some_and(|v| !v.is_empty() && v != "false" && v != "0");
    assert!(!in_ci, "{test}: {why}; GROUPTIMEOUT_REQUIRE_TOOLS is set, so every tool must be installed (see .ci/run)");
    skipped(test, why);
}

/// For a test of a Linux-only facility (the subreaper and its sweep, ...): in a build with
/// `--cfg grouptimeout_portable`, which takes the branches of macOS and FreeBSD (DEVELOPMENT.md, "Platforms"), the
/// facility is off, so this prints a `SKIPPED` line saying so and returns `true`, and the test returns without
/// checking. Unlike [`skip_or_fail`] it never fails: nothing is missing, the build has no such facility. `false` in
/// other builds.
pub fn linux_only(test: &str, facility: &str) -> bool {
    let off = cfg!(grouptimeout_portable);
    if off {
        skipped(
            test,
            &format!("{facility} is Linux-only, and this build takes the portable branches (--cfg grouptimeout_portable)"),
        );
    }
    off
}

/// Writes `SKIPPED test: why` straight to the process's standard error (see [`skip_or_fail`]).
pub fn skipped(test: &str, why: &str) {
    let _ = writeln!(std::io::stderr(), "SKIPPED {test}: {why}");
}

/// Whether `program` is installed and runs: `program ARG` exits 0.
pub fn runs(program: &str, arg: &str) -> bool {
    runs_ok(program, &[arg])
}

/// Whether `program` is installed and runs (see [`runs`]); otherwise `test` is skipped (see [`skip_or_fail`]).
pub fn have(test: &str, program: &str, arg: &str) -> bool {
    let runs = runs(program, arg);
    if !runs {
        skip_or_fail(test, &format!("`{program}` is not installed"));
    }
    runs
}

/// Runs this test binary's ignored test `scenario` alone under `strace -f`, tracing kill(2) and the waits, and
/// returns the trace. Where strace is missing, `test` is skipped (see [`skip_or_fail`]) and this is `None`.
pub fn strace_scenario(test: &str, scenario: &str) -> Option<String> {
    if Command::new("strace").arg("-V").output().is_err() {
        skip_or_fail(test, "strace is not installed");
        return None;
    }
    let trace = temp_path(&format!("strace-{scenario}"));
    let out = Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=kill,wait4,waitid", "-o"])
        .arg(&trace)
        .arg(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", scenario, "--test-threads=1"])
        .output()
        .unwrap();
    // Read and removed before any check, so that a failing scenario leaves no file behind.
    let lines = fs::read_to_string(&trace);
    let _ = fs::remove_file(&trace);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    Some(lines.unwrap())
}

/// One event of a trace from [`strace_scenario`].
#[derive(Debug, PartialEq)]
pub enum Traced {
    /// `wait4` returned this pid (also when strace reports the return on a `<... wait4 resumed>` line).
    Reaped(i64),
    /// kill(2) named this target: a pid, or a process group as its negation.
    Killed(i64),
}

/// The reaps and kills of a trace from [`strace_scenario`], in order.
pub fn reaps_and_kills(trace: &str) -> Vec<Traced> {
    let mut events = Vec::new();
    for line in trace.lines() {
        let result = line
            .rsplit_once(") = ")
            .and_then(|(_, r)| r.split_whitespace().next()?.parse::<i64>().ok());
        if line.contains("wait4") && result > Some(0) {
            events.push(Traced::Reaped(result.unwrap()));
        }
        if let Some(rest) = line.split("kill(").nth(1) {
            let target = rest.split(',').next().unwrap().trim().parse().unwrap();
            events.push(Traced::Killed(target));
        }
    }
    events
}

/// Waits (bounded) until the guard of the tool `tool` (its child named `group-guard`), or the keeper of its
/// contained job (`group-keeper`, the job's guard), has left the tool's
/// group: it ignores signals then, and has joined the command's group (or, for a job with a cgroup of its own, leads
/// a group of its own). Returns its pid.
pub fn wait_for_guard(tool: u32) -> u32 {
    let mut guard = None;
    let found = eventually(Duration::from_secs(20), || {
        guard = fs::read_dir("/proc")
            .expect("/proc is readable")
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
            .find(|&pid| {
                parent_of(pid) == Some(tool)
                    && fs::read_to_string(format!("/proc/{pid}/comm"))
                        .is_ok_and(|c| matches!(c.trim(), "group-guard" | "group-keeper"))
                    && state_and_group(pid).is_some_and(|(_, group)| group != tool)
            });
        guard.is_some()
    });
    assert!(found, "the tool {tool} started no guard");
    guard.unwrap()
}

/// Re-runs test `test` (its full name) of this test program alone, in a process of its own with `envs` in its
/// environment, and asserts that it passed (`what` says which run failed).
pub fn passes_alone(test: &str, envs: &[(&str, &str)], what: &str) {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .envs(envs.iter().copied())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{what}: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Re-runs test `test` (its full name) of this test program as a supervisor: with `GROUPTIMEOUT_TEST_SUPERVISOR=1`
/// and `envs` in its environment and stdout piped. Returns it and the words of the first line it printed that starts
/// with "escapee " (it fails if the supervisor ends before).
pub fn run_as_supervisor(test: &str, envs: &[(&str, &str)]) -> (std::process::Child, Vec<String>) {
    use std::io::BufRead as _;
    let mut supervisor = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture"])
        .env("GROUPTIMEOUT_TEST_SUPERVISOR", "1")
        .envs(envs.iter().copied())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(supervisor.stdout.take().unwrap());
    let mut line = String::new();
    while !line.starts_with("escapee ") {
        line.clear();
        if out.read_line(&mut line).unwrap_or(0) == 0 {
            let _ = supervisor.kill();
            let _ = supervisor.wait();
            panic!("the supervisor ended early");
        }
    }
    (
        supervisor,
        line.split_whitespace().map(str::to_string).collect(),
    )
}

/// Installs, on the calling thread, a seccomp filter that refuses `clone3` (system call 435 on every Linux
/// architecture) with `errno` and allows every other call, as container runtimes' default profiles do (Docker and
/// Podman answer `ENOSYS`, older runtimes `EPERM`). Every process the thread starts from then on inherits it. Like a
/// real profile it checks the architecture (`seccomp_data.arch`, x86-64 or aarch64: the convention whose numbers it
/// compares) and allows a call made through another one. As root it is installed without `PR_SET_NO_NEW_PRIVS` (root
/// may: `CAP_SYS_ADMIN`), so that set-user-ID and set-group-ID programs below keep their rights (`ssh-agent`);
/// otherwise `no_new_privs` is set first, as the kernel requires.
///
/// Async-signal-safe (system calls on a filter built on the stack): a `pre_exec` hook may call it, see
/// [`without_clone3`]. Note that with `EPERM` glibc's `posix_spawn` and `pthread_create` fail (glibc falls back to
/// `clone` only on `ENOSYS`): a thread under such a filter spawns only through `fork`, and libtest cannot start a
/// test's thread, so an `EPERM` filter goes on the test's own thread, not around a test binary.
#[cfg(target_os = "linux")]
pub fn refuse_clone3(errno: i32) -> std::io::Result<()> {
    const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
    const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
    const LD_W_ABS: u16 = 0x20; // BPF_LD | BPF_W | BPF_ABS
    const JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
    const RET_K: u16 = 0x06; // BPF_RET | BPF_K
    const SYS_CLONE3: u32 = 435;
    #[cfg(target_arch = "x86_64")]
    const ARCH: u32 = 0xc000_003e; // AUDIT_ARCH_X86_64
    #[cfg(target_arch = "aarch64")]
    const ARCH: u32 = 0xc000_00b7; // AUDIT_ARCH_AARCH64
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    compile_error!("refuse_clone3 knows the audit architecture of x86-64 and aarch64 only");
    let insn = |code, jt, jf, k| libc::sock_filter { code, jt, jf, k };
    // seccomp_data: `nr` at offset 0, `arch` at 4.
    let mut filter = [
        insn(LD_W_ABS, 0, 0, 4),
        insn(JEQ_K, 0, 3, ARCH),
        insn(LD_W_ABS, 0, 0, 0),
        insn(JEQ_K, 0, 1, SYS_CLONE3),
        insn(
            RET_K,
            0,
            0,
            SECCOMP_RET_ERRNO | (errno.unsigned_abs() & 0xffff),
        ),
        insn(RET_K, 0, 0, SECCOMP_RET_ALLOW),
    ];
    let program = libc::sock_fprog {
        len: u16::try_from(filter.len()).unwrap_or(0),
        filter: filter.as_mut_ptr(),
    };
    // SAFETY: prctl with integer arguments, and with a pointer to `program` (and its filter), which live across the
    // call; async-signal-safe system calls.
    unsafe {
        if libc::geteuid() != 0 && libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::prctl(
            libc::PR_SET_SECCOMP,
            libc::SECCOMP_MODE_FILTER,
            &raw const program,
        ) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Makes `command` run under [`refuse_clone3`]`(errno)`, and so everything it starts (a `pre_exec` hook: std then
/// forks, which needs no `clone3`).
#[cfg(target_os = "linux")]
pub fn without_clone3(command: &mut Command, errno: i32) -> &mut Command {
    use std::os::unix::process::CommandExt as _;
    // SAFETY: refuse_clone3 is async-signal-safe and allocates nothing.
    unsafe { command.pre_exec(move || refuse_clone3(errno)) }
}

/// The cgroup2 mount point (`/sys/fs/cgroup`, or `/sys/fs/cgroup/unified` on a hybrid tree), from
/// `/proc/self/mountinfo`.
pub fn cgroup2_mount() -> Option<String> {
    let info = fs::read_to_string("/proc/self/mountinfo").ok()?;
    info.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        right
            .starts_with("cgroup2 ")
            .then(|| left.split(' ').nth(4).map(str::to_owned))?
    })
}

/// CPU time of the calling thread so far (a wait that sleeps spends little of it; a busy loop, all of its time).
pub fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a live timespec that clock_gettime fills in.
    let ret = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &raw mut ts) };
    assert_eq!(ret, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    Duration::new(
        u64::try_from(ts.tv_sec).unwrap(),
        u32::try_from(ts.tv_nsec).unwrap(),
    )
}

/// The `ptrace` system call's number, for a tracer written in perl.
#[cfg(target_arch = "x86_64")]
pub const SYS_PTRACE: u32 = 101;
#[cfg(target_arch = "aarch64")]
pub const SYS_PTRACE: u32 = 117;

/// Starts a perl tracer that seizes `pid` and then sleeps 2 s without waiting for it: the leader's exit is held
/// until the tracer ends. `None` (skipped) without perl.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub fn seize(test: &str, pid: u32) -> Option<(std::process::Child, KillOnDrop)> {
    if !have(test, "perl", "-v") {
        return None;
    }
    let script = format!(
        "$| = 1; syscall({SYS_PTRACE}, 0x4206, {pid}, 0, 0) == 0 or die \"PTRACE_SEIZE: $!\"; print \"seized\\n\"; \
         sleep 2"
    );
    let mut tracer = std::process::Command::new("perl")
        .args(["-e", &script])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn perl");
    let cleanup = KillOnDrop::new(vec![tracer.id()]);
    let mut line = String::new();
    BufRead::read_line(
        &mut BufReader::new(tracer.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line, "seized\n", "the tracer failed");
    Some((tracer, cleanup))
}

/// Runs the test of this binary named `exact` (its path, for `--exact`) again as nobody through `setpriv`, and checks
/// that it passed, unless this runs as nobody already: `false` then, and the caller runs its scenario. Skipped (see
/// `skip_or_fail`) where that cannot be done.
pub fn rerun_as_nobody(test: &str, exact: &str) -> bool {
    if std::env::var_os("GROUPTIMEOUT_TEST_UNPRIVILEGED").is_some() {
        return false;
    }
    if !is_root() {
        skip_or_fail(test, "not root, so setpriv cannot switch to nobody");
        return true;
    }
    if !have(test, "setpriv", "--version") {
        return true;
    }
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        // A copy every user may run: the checkout may be in a folder only we may enter.
        .arg(runnable_by_anyone(&std::env::current_exe().unwrap()))
        .args(["--exact", exact, "--nocapture"])
        .env("GROUPTIMEOUT_TEST_UNPRIVILEGED", "1")
        .output()
        .unwrap();
    let output =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    // What the scenario printed, in this test's output too.
    print!("{output}");
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("1 passed"),
        "{output}"
    );
    true
}
