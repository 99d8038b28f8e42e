//! The bench's libc calls and /proc readers.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

pub struct Usage {
    /// User + system CPU time, seconds.
    pub cpu: f64,
    pub nvcsw: i64,
    pub nivcsw: i64,
    pub maxrss_kib: i64,
}

pub fn rusage(who: libc::c_int) -> Usage {
    let mut r: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `r` is a valid, writable rusage.
    let rc = unsafe { libc::getrusage(who, &raw mut r) };
    assert_eq!(rc, 0, "getrusage: {}", io::Error::last_os_error());
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    Usage {
        cpu: tv(r.ru_utime) + tv(r.ru_stime),
        nvcsw: r.ru_nvcsw,
        nivcsw: r.ru_nivcsw,
        maxrss_kib: r.ru_maxrss,
    }
}

/// CPU time of the calling thread, seconds (`CLOCK_THREAD_CPUTIME_ID`).
pub fn thread_cpu() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &raw mut ts) };
    assert_eq!(rc, 0, "clock_gettime: {}", io::Error::last_os_error());
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// The one place the bench sends a signal to a group: refuses ids ≤ 1 and our own group.
pub fn kill_group(pgid: u32, sig: libc::c_int) -> io::Result<()> {
    let p = libc::pid_t::try_from(pgid).map_err(|_| io::Error::other("pgid out of range"))?;
    // SAFETY: getpgrp has no preconditions.
    let own = unsafe { libc::getpgrp() };
    if p <= 1 || p == own {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("refusing kill(-{p}): not a group we made"),
        ));
    }
    // SAFETY: plain syscall; the id was checked above.
    if unsafe { libc::kill(-p, sig) } == -1 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::ESRCH) {
            return Err(e);
        }
    }
    Ok(())
}

pub fn pidfd_open(pid: u32) -> io::Result<OwnedFd> {
    // SAFETY: plain syscall with integer arguments.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, libc::pid_t::try_from(pid).unwrap(), 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(i32::try_from(fd).unwrap()) })
}

/// Blocks until `fd` is readable (a pidfd: the process exited).
pub fn poll_in(fd: &OwnedFd) {
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    loop {
        // SAFETY: one valid pollfd.
        let rc = unsafe { libc::poll(&raw mut p, 1, -1) };
        if rc > 0 {
            return;
        }
        let e = io::Error::last_os_error();
        assert_eq!(e.kind(), io::ErrorKind::Interrupted, "poll: {e}");
    }
}

/// Waits until `fd` is readable or `timeout` passed (`ppoll`, nanosecond timeout: never rounds down).
pub fn ppoll_in(fd: &OwnedFd, timeout: std::time::Duration) {
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ts = libc::timespec {
        tv_sec: libc::time_t::try_from(timeout.as_secs().min(0x7fff_ffff)).unwrap(),
        tv_nsec: libc::c_long::from(timeout.subsec_nanos()),
    };
    // SAFETY: one valid pollfd and a valid timespec; no signal mask change (null sigmask).
    let rc = unsafe { libc::ppoll(&raw mut p, 1, &raw const ts, std::ptr::null()) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        assert_eq!(e.kind(), io::ErrorKind::Interrupted, "ppoll: {e}");
    }
}

/// (state, pgrp) of a process from /proc/PID/stat, or None when it is gone.
fn stat(pid: u32) -> Option<(char, u32)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 2..];
    let mut f = rest.split(' ');
    let state = f.next()?.chars().next()?;
    let _ppid = f.next()?;
    let pgrp = f.next()?.parse().ok()?;
    Some((state, pgrp))
}

/// Live (not zombie) processes whose process group is `pgid`.
pub fn group_members(pgid: u32) -> Vec<u32> {
    let mut v = vec![];
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return v;
    };
    for e in dir.flatten() {
        let Some(member) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if let Some((state, pgrp)) = stat(member) {
            if pgrp == pgid && state != 'Z' && state != 'X' {
                v.push(member);
            }
        }
    }
    v
}

/// Dead: /proc entry gone, or state zombie / dead.
pub fn is_dead(pid: u32) -> bool {
    match stat(pid) {
        None => true,
        Some((s, _)) => s == 'Z' || s == 'X',
    }
}

/// Resident memory of `pid` (`VmRSS` in `/proc/PID/status`), in MiB; 0 if it cannot be read.
pub fn resident_mib(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|kib| kib.trim().trim_end_matches(" kB").parse::<f64>().ok())
        .map_or(0.0, |kib| kib / 1024.0)
}

/// Raises this process's soft `RLIMIT_NOFILE` to its hard limit (this process and its children only; nothing
/// machine-wide). Returns the (soft, hard) limits now in force.
pub fn raise_nofile() -> (u64, u64) {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `r` is a valid, writable rlimit.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &raw mut r) };
    assert_eq!(rc, 0, "getrlimit: {}", io::Error::last_os_error());
    if r.rlim_cur < r.rlim_max {
        r.rlim_cur = r.rlim_max;
        // SAFETY: a valid rlimit whose soft limit does not exceed its hard limit.
        let rc = unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raw const r) };
        assert_eq!(rc, 0, "setrlimit: {}", io::Error::last_os_error());
    }
    (r.rlim_cur, r.rlim_max)
}

/// Whether the environment of `pid` holds the entry `entry` (`NAME=value`); false when it cannot be read (gone,
/// a zombie, not ours to read).
fn has_env(pid: u32, entry: &[u8]) -> bool {
    std::fs::read(format!("/proc/{pid}/environ"))
        .is_ok_and(|env| env.split(|&b| b == 0).any(|e| e == entry))
}

/// Live (not zombie) processes whose environment holds `entry` (`NAME=value`), this process excluded.
pub fn marked(entry: &str) -> Vec<u32> {
    let own = std::process::id();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return vec![];
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()))
        .filter(|&pid| pid != own && !is_dead(pid) && has_env(pid, entry.as_bytes()))
        .collect()
}

/// Sends `SIGKILL` to `pid` if it still carries `entry` in its environment: the pid is pinned by a pidfd first and
/// checked after, so a reused pid is never signalled. Returns whether it was signalled.
pub fn kill_marked(pid: u32, entry: &str) -> bool {
    let Ok(fd) = pidfd_open(pid) else {
        return false;
    };
    if !has_env(pid, entry.as_bytes()) {
        return false;
    }
    pidfd_kill(&fd).is_ok()
}

/// Sends `SIGKILL` to the process of a pidfd (`pidfd_send_signal`).
pub fn pidfd_kill(fd: &OwnedFd) -> io::Result<()> {
    // SAFETY: plain syscall on a valid pidfd; no siginfo (null), no flags.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            fd.as_raw_fd(),
            libc::SIGKILL,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
