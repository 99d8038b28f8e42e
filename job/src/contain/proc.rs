//! What the Linux modes share: reading a process's `/proc/PID/stat`, signalling a job's process through a pidfd
//! opened before its membership is checked again, recording what a kill reached, and the random part of a job's name.

#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
use std::io;
use std::sync::{Mutex, MutexGuard};

/// A process besides the leader that a kill of the job reached; see [`JobChildExt::leftovers`](crate::JobChildExt::leftovers).
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leftover {
    /// Its process id at the time of the kill (it may name another process by now).
    pub pid: u32,
    /// Its command name at the time of the kill, as in `/proc/PID/comm` (at most 15 bytes); empty when it could not
    /// be read.
    pub name: String,
}

pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A process's line in `/proc/PID/stat`: the fields the job boundary needs.
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
#[derive(Debug)]
pub(super) struct Stat {
    pub(super) name: String,
    pub(super) state: char,
    pub(super) ppid: u32,
    pub(super) pgid: u32,
    /// Clock ticks after boot.
    pub(super) start: u64,
    /// The kernel's `PF_*` flags.
    pub(super) flags: u32,
    /// Whether it has exited, killed by `SIGKILL` (its exit status says so: Linux 3.5 or later).
    pub(super) killed: bool,
    /// Where its environment block starts and ends in its memory; `(0, 0)` where that cannot be read (another user's
    /// process, a kernel thread, Linux before 3.5), and an end of 0 in the middle of `execve` (the new image has no
    /// block yet). Equal and not 0: it has no environment at all (`env -i`).
    pub(super) env: (u64, u64),
    /// Whether its image is loaded whole: the end of its code is known (`end_code`, field 27, which `execve` sets
    /// after it has filled in the new environment block; 0 before, and where it cannot be read).
    pub(super) loaded: bool,
}

#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
impl Stat {
    /// `None` when the process is gone (or `/proc` unreadable).
    pub(super) fn read(pid: u32) -> Option<Stat> {
        let mut buf = [0u8; STAT_BUF];
        let (name, stat) = Stat::parse(read_proc(pid, "stat", &mut buf)?)?;
        Some(Stat {
            name: String::from_utf8_lossy(name).into_owned(),
            ..stat
        })
    }

    /// Parses a `/proc/PID/stat` line: the command name (raw) and the rest, with an empty `name`.
    pub(super) fn parse(text: &[u8]) -> Option<(&[u8], Stat)> {
        let open = text.iter().position(|&b| b == b'(')?;
        let close = text.iter().rposition(|&b| b == b')')?;
        // After the name: state (3), ppid (4), pgrp (5), session, tty, tpgid, flags (9), ... starttime (22), ...
        // env_start (50), env_end (51), exit_code (52, the status as `waitpid` gives it); the last four since Linux
        // 3.5, and the addresses only where we may read the process's memory (else 0).
        let mut fields = text.get(close + 2..)?.split(|&b| b == b' ');
        let number = |field: Option<&[u8]>| {
            std::str::from_utf8(field?.trim_ascii_end())
                .ok()?
                .parse::<u64>()
                .ok()
        };
        let state = char::from(*fields.next()?.first()?);
        let parent = number(fields.next())?;
        let pgid = number(fields.next())?;
        let flags = number(fields.nth(3))?;
        let start = number(fields.nth(12))?;
        let end_code = number(fields.nth(4)).unwrap_or(0);
        let env_start = number(fields.nth(22)).unwrap_or(0);
        let env_end = number(fields.next()).unwrap_or(0);
        let exit_code = number(fields.next());
        let dead = matches!(state, 'Z' | 'X' | 'x');
        let parsed = Stat {
            name: String::new(),
            state,
            ppid: u32::try_from(parent).ok()?,
            pgid: u32::try_from(pgid).ok()?,
            start,
            flags: u32::try_from(flags).ok()?,
            killed: dead
                && exit_code.is_some_and(|c| c & 0x7f == u64::from(libc::SIGKILL.unsigned_abs())),
            env: (env_start, env_end),
            loaded: end_code != 0,
        };
        Some((text.get(open + 1..close)?, parsed))
    }

    /// Gone for every purpose here: a zombie or dead.
    pub(super) fn dead(&self) -> bool {
        matches!(self.state, 'Z' | 'X' | 'x')
    }
}

/// Room for a `/proc/PID/stat` line: 52 numbers and a name of at most 64 bytes fit with room to spare.
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
pub(super) const STAT_BUF: usize = 1024;

/// Reads `/proc/PID/FILE` with one `read` into `buf` (procfs gives a small file whole), without the `fstat` and the
/// allocations of `fs::read`: the bytes read, `None` when it cannot be opened (gone, not ours) or read.
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
pub(super) fn read_proc<'a>(pid: u32, file: &str, buf: &'a mut [u8]) -> Option<&'a [u8]> {
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
pub(super) fn record(reached: &Mutex<Vec<Leftover>>, pid: u32, name: String) {
    let mut reached = lock(reached);
    if !reached.iter().any(|l| l.pid == pid) {
        reached.push(Leftover { pid, name });
    }
}

/// What [`signal_checked`] did.
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
#[derive(Debug)]
pub(super) enum Sent {
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
pub(super) fn signal_checked(
    pid: u32,
    signal: i32,
    belongs: impl FnOnce(u32) -> bool,
) -> io::Result<Sent> {
    use std::os::fd::AsFd as _;
    let pidfd = match crate::sys::pidfd_open(pid) {
        Ok(fd) => fd,
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => return Ok(Sent::No),
        Err(e) => {
            return Err(crate::sys::os_error_or(e, |e| {
                format!("cannot open a pidfd for process {pid} of the job: {e}")
            }))
        }
    };
    if !belongs(pid) {
        return Ok(Sent::No);
    }
    match crate::sys::pidfd_send_signal(pidfd.as_fd(), signal) {
        Ok(true) => Ok(Sent::Yes(pidfd)),
        Ok(false) => Ok(Sent::No),
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => Ok(Sent::Denied),
        Err(e) => Err(crate::sys::os_error_or(e, |e| {
            format!("cannot send signal {signal} to process {pid} of the job: {e}")
        })),
    }
}

/// Fails (`EMFILE`, `ENFILE`) unless `count` more descriptors can be open at once now. A kill point of lineage needs
/// two (`/proc`'s listing and a process's file; a pidfd and a process's file): an open that failed for want of one
/// would look like a process that is gone.
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
pub(crate) fn room_for(count: usize) -> io::Result<()> {
    let first = std::fs::File::open("/")?;
    // Held until all are open.
    let _more: Vec<std::fs::File> = (1..count)
        .map(|_| first.try_clone())
        .collect::<io::Result<_>>()?;
    Ok(())
}

/// 16 random bytes from `/dev/urandom`, as 32 hex digits.
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
pub(super) fn random_hex() -> io::Result<String> {
    use std::fmt::Write as _;
    use std::io::Read as _;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|e| crate::sys::os_error_or(e, |e| format!("cannot read /dev/urandom: {e}")))?;
    Ok(bytes.iter().fold(String::with_capacity(32), |mut hex, b| {
        let _ = write!(hex, "{b:02x}");
        hex
    }))
}
