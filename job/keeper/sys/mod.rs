//! The keeper program's calls into the C library that std does not make for it (signals, waits, `prctl`, `poll`,
//! usage, the channel's socket calls), declared by hand for 64-bit Linux (x86-64, `AArch64`, RISC-V: the
//! generic numbers), each behind a safe wrapper. A build script cannot hand the program the `libc` crate, so the
//! few declarations it needs are here; everything else it does is std's (files, `/proc`, cgroup folders, time).
//!
//! Each wrapper passes the C library only integers and pointers to memory it owns for the call, sized as the call
//! writes it: that is its whole `SAFETY` argument. Which process a signal reaches is each caller's argument (the
//! numbers it passes are pinned: its own children, unreaped, and the group whose id is its own pid).

use std::ffi::{c_int, c_long, c_uint, c_ulong, c_void, CStr};
use std::io;
use std::os::fd::{FromRawFd as _, OwnedFd, RawFd};
use std::time::Duration;

pub(crate) const SIGKILL: c_int = 9;
pub(crate) const SIGCHLD: c_int = 17;
pub(crate) const SIGCONT: c_int = 18;
pub(crate) const SIGSTOP: c_int = 19;
pub(crate) const SIGTSTP: c_int = 20;
pub(crate) const SIGTTIN: c_int = 21;
pub(crate) const SIGTTOU: c_int = 22;
/// `si_code` of a signal the kernel sent (a terminal's).
pub(crate) const SI_KERNEL: i32 = 0x80;
/// `si_code` of a child that exited (not killed).
pub(crate) const CLD_EXITED: i32 = 1;
pub(crate) const CLD_STOPPED: i32 = 5;
pub(crate) const POLLIN: i16 = 1;
pub(crate) const POLLPRI: i16 = 2;
pub(crate) const POLLHUP: i16 = 0x10;

const SIG_UNBLOCK: c_int = 1;
const SIG_SETMASK: c_int = 2;
const SIG_DFL: usize = 0;
const SFD_NONBLOCK: c_int = 0o4000;
const SFD_CLOEXEC: c_int = 0o2_000_000;
const P_ALL: c_int = 0;
const P_PID: c_int = 1;
pub(crate) const WNOHANG: c_int = 1;
pub(crate) const WSTOPPED: c_int = 2;
pub(crate) const WEXITED: c_int = 4;
pub(crate) const WNOWAIT: c_int = 0x0100_0000;
const PR_SET_DUMPABLE: c_int = 4;
const PR_SET_NAME: c_int = 15;
const RLIMIT_CORE: c_int = 4;
const RLIMIT_NOFILE: c_int = 7;
const RUSAGE_SELF: c_int = 0;
const RUSAGE_CHILDREN: c_int = -1;
const MSG_DONTWAIT: c_int = 0x40;
const MSG_NOSIGNAL: c_int = 0x4000;
const SIOCOUTQ: c_ulong = 0x5411;
const SYS_CLOSE_RANGE: c_long = 436;

/// A `sigset_t` (1,024 bits in glibc and musl).
#[repr(C)]
struct SigSet([u64; 16]);

#[repr(C)]
pub(crate) struct PollFd {
    pub(crate) fd: c_int,
    pub(crate) events: i16,
    pub(crate) revents: i16,
}

#[repr(C)]
struct TimeVal {
    sec: i64,
    usec: i64,
}

#[repr(C)]
struct RUsage {
    user: TimeVal,
    system: TimeVal,
    max_rss: c_long,
    rest: [c_long; 13],
}

#[repr(C)]
struct RLimit {
    current: u64,
    max: u64,
}

extern "C" {
    fn sigprocmask(how: c_int, set: *const SigSet, old: *mut SigSet) -> c_int;
    fn signalfd(fd: c_int, mask: *const SigSet, flags: c_int) -> c_int;
    fn signal(signal: c_int, handler: usize) -> usize;
    fn poll(fds: *mut PollFd, count: c_ulong, timeout: c_int) -> c_int;
    fn waitid(idtype: c_int, id: c_uint, info: *mut [u64; 16], options: c_int) -> c_int;
    fn kill(pid: c_int, signal: c_int) -> c_int;
    fn prctl(option: c_int, ...) -> c_int;
    fn getrusage(who: c_int, usage: *mut RUsage) -> c_int;
    fn getrlimit(resource: c_int, limit: *mut RLimit) -> c_int;
    fn setrlimit(resource: c_int, limit: *const RLimit) -> c_int;
    fn getppid() -> c_int;
    fn syscall(number: c_long, ...) -> c_long;
    fn send(fd: c_int, buf: *const c_void, len: usize, flags: c_int) -> isize;
    fn recv(fd: c_int, buf: *mut c_void, len: usize, flags: c_int) -> isize;
    fn ioctl(fd: c_int, request: c_ulong, ...) -> c_int;
    fn dup2(old: c_int, new: c_int) -> c_int;
    fn close(fd: c_int) -> c_int;
}

/// The C convention: -1 and errno, else the result.
fn check<T: Copy + PartialOrd + Default>(ret: T) -> io::Result<T> {
    if ret < T::default() {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// The set of `signals`, or of every signal (`None`).
fn set_of(signals: Option<&[c_int]>) -> SigSet {
    let mut set = SigSet([0; 16]);
    match signals {
        None => set.0[0] = u64::MAX,
        Some(signals) => {
            for &s in signals.iter().filter(|&&s| (1..=64).contains(&s)) {
                set.0[0] |= 1 << (s - 1);
            }
        }
    }
    set
}

/// Blocks every signal (the C library leaves out the few it keeps for itself).
pub(crate) fn block_all() {
    let all = set_of(None);
    // SAFETY: a live set read by the call; no old set asked for.
    unsafe { sigprocmask(SIG_SETMASK, &raw const all, std::ptr::null_mut()) };
}

/// A descriptor (non-blocking, close-on-exec) that reads the signals sent to this process, all blocked.
pub(crate) fn signal_fd() -> io::Result<OwnedFd> {
    let all = set_of(None);
    // SAFETY: a live set read by the call; a descriptor returned is ours alone, owned at once.
    unsafe {
        let fd = check(signalfd(-1, &raw const all, SFD_NONBLOCK | SFD_CLOEXEC))?;
        Ok(OwnedFd::from_raw_fd(fd))
    }
}

/// `signal`'s default disposition (`SIGCHLD` ignored would reap the children at once).
pub(crate) fn default_action(signal_number: c_int) {
    // SAFETY: SIG_DFL installs no handler.
    unsafe { signal(signal_number, SIG_DFL) };
}

/// Unblocks `signal_number`.
pub(crate) fn unblock(signal_number: c_int) {
    let one = set_of(Some(&[signal_number]));
    // SAFETY: a live set read by the call.
    unsafe { sigprocmask(SIG_UNBLOCK, &raw const one, std::ptr::null_mut()) };
}

/// `poll`s `fds` for at most `timeout` (`None`: no limit): how many are ready (`EINTR`: none).
pub(crate) fn poll_for(fds: &mut [PollFd], timeout: Option<Duration>) -> io::Result<usize> {
    let millis = timeout.map_or(-1, |t| {
        c_int::try_from(t.as_micros().div_ceil(1000)).unwrap_or(c_int::MAX)
    });
    let count = c_ulong::try_from(fds.len()).unwrap_or(0);
    // SAFETY: `fds` is a live array of `count` entries, which the call writes `revents` of.
    match check(unsafe { poll(fds.as_mut_ptr(), count, millis) }) {
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(0),
        n => Ok(usize::try_from(n?).unwrap_or(0)),
    }
}

/// What `waitid` reports of a child: its pid, `si_code` (`CLD_*`), `si_status` (an exit code or a signal).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Report {
    pub(crate) pid: i32,
    pub(crate) code: i32,
    pub(crate) status: i32,
}

/// `waitid` on child `pid` (0: any child) with `options` (`WNOHANG` added): its report, `None` without one. `EINTR`
/// is retried.
pub(crate) fn wait_child(pid: u32, options: c_int) -> io::Result<Option<Report>> {
    let (idtype, id) = if pid == 0 { (P_ALL, 0) } else { (P_PID, pid) };
    loop {
        let mut info = [0u64; 16];
        // SAFETY: `info` is a live, zeroed 128-byte siginfo_t, which the call may fill in.
        match check(unsafe { waitid(idtype, id, &raw mut info, options | WNOHANG) }) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
            Ok(_) => {}
        }
        let bytes: Vec<u8> = info.iter().flat_map(|w| w.to_ne_bytes()).collect();
        let field = |at: usize| {
            bytes
                .get(at..at + 4)
                .and_then(|b| b.try_into().ok())
                .map_or(0, i32::from_ne_bytes)
        };
        // si_code at 8, then (after padding to 16) si_pid at 16 and si_status at 24; no report: si_pid 0.
        let report = Report {
            pid: field(16),
            code: field(8),
            status: field(24),
        };
        return Ok((report.pid > 0).then_some(report));
    }
}

/// Sends `signal_number` to `pid` (a process, or a group if negative); never to 0, 1 or -1, never to this process's
/// group: `ESRCH` (gone) is `Ok(false)`.
pub(crate) fn send_signal(pid: i32, signal_number: c_int) -> io::Result<bool> {
    if (-1..=1).contains(&pid) {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    // SAFETY: kill with integers; the id is checked above, and pinned by the caller.
    match check(unsafe { kill(pid, signal_number) }) {
        Ok(_) => Ok(true),
        Err(e) if e.raw_os_error() == Some(3) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Sends `signal_number` to this process's own group (the guard's, the job's).
pub(crate) fn signal_own_group(signal_number: c_int) {
    // SAFETY: kill with integers; 0 is this process's own group.
    unsafe { kill(0, signal_number) };
}

/// Names this process (`comm`: the kernel keeps 15 bytes).
pub(crate) fn set_name(name: &CStr) {
    // SAFETY: PR_SET_NAME reads a NUL-terminated string, which `name` is, for the call's length.
    unsafe { prctl(PR_SET_NAME, name.as_ptr()) };
}

/// No core dump from here on, and a dump of this process refused (its exit by a signal is the command's).
pub(crate) fn no_core() {
    let none = RLimit { current: 0, max: 0 };
    // SAFETY: setrlimit reads a live struct; prctl with integers.
    unsafe {
        setrlimit(RLIMIT_CORE, &raw const none);
        prctl(PR_SET_DUMPABLE, c_ulong::from(0u8));
    }
}

/// Raises this process's soft limit of open descriptors to its hard limit: a caller low on descriptors must not
/// leave its keeper unable to open the pidfds and `/proc` files its kill needs.
pub(crate) fn raise_open_files() {
    let mut limit = RLimit { current: 0, max: 0 };
    // SAFETY: getrlimit fills the struct given, which lives across the call; setrlimit reads it.
    unsafe {
        if getrlimit(RLIMIT_NOFILE, &raw mut limit) == 0 {
            limit.current = limit.max;
            setrlimit(RLIMIT_NOFILE, &raw const limit);
        }
    }
}

/// What this process (`children`: its children that it reaped) used: user and system CPU time in microseconds,
/// and the largest resident size in KiB.
pub(crate) fn usage(children: bool) -> (u64, u64, u64) {
    let mut used = RUsage {
        user: TimeVal { sec: 0, usec: 0 },
        system: TimeVal { sec: 0, usec: 0 },
        max_rss: 0,
        rest: [0; 13],
    };
    let who = if children {
        RUSAGE_CHILDREN
    } else {
        RUSAGE_SELF
    };
    // SAFETY: getrusage writes one struct rusage (144 bytes on 64-bit Linux, as declared) into `used`.
    unsafe { getrusage(who, &raw mut used) };
    let micros = |t: &TimeVal| {
        u64::try_from(t.sec)
            .unwrap_or(0)
            .saturating_mul(1_000_000)
            .saturating_add(u64::try_from(t.usec).unwrap_or(0))
    };
    let max_rss = u64::try_from(used.max_rss).unwrap_or(0);
    (micros(&used.user), micros(&used.system), max_rss)
}

/// This process's parent now (0 if it is in another PID namespace).
pub(crate) fn parent() -> u32 {
    // SAFETY: getppid has no preconditions.
    u32::try_from(unsafe { getppid() }).unwrap_or(0)
}

/// Closes every descriptor from `first` on (`close_range`, Linux 5.9; else one by one, as `/proc/self/fd` lists
/// them).
pub(crate) fn close_from(first: RawFd) {
    // SAFETY: close_range with integers; it closes only descriptors.
    let closed = unsafe { syscall(SYS_CLOSE_RANGE, first, c_uint::MAX, 0 as c_uint) };
    if closed == 0 {
        return;
    }
    let open: Vec<RawFd> = std::fs::read_dir("/proc/self/fd")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .filter(|&fd| fd >= first)
        .collect();
    for fd in open {
        // SAFETY: close of a number: no memory of this process's is at stake (the listing's own descriptor, closed
        // already, is at most closed twice).
        unsafe { close(fd) };
    }
}

/// Closes descriptor `fd` (a number: no memory of this process's is at stake).
pub(crate) fn close_fd(fd: RawFd) {
    // SAFETY: close of a number.
    unsafe { close(fd) };
}

/// Descriptor 0 as a `File`, for a process that holds it as its own (the guard's pipe, put there at its start).
pub(crate) fn file_on_zero() -> std::fs::File {
    // SAFETY: descriptor 0 is open (the caller put it there), and nothing else in this process uses it.
    unsafe { std::fs::File::from_raw_fd(0) }
}

/// Makes `to` a copy of `from` (`dup2`).
pub(crate) fn copy_fd(from: RawFd, to: RawFd) -> io::Result<()> {
    // SAFETY: dup2 with integers.
    check(unsafe { dup2(from, to) }).map(drop)
}

/// Sends `bytes` as one datagram on the socket `fd`, without blocking and without `SIGPIPE`.
pub(crate) fn send_datagram(fd: RawFd, bytes: &[u8]) -> io::Result<()> {
    // SAFETY: send reads at most `bytes.len()` bytes of `bytes`.
    check(unsafe {
        send(
            fd,
            bytes.as_ptr().cast(),
            bytes.len(),
            MSG_DONTWAIT | MSG_NOSIGNAL,
        )
    })
    .map(drop)
}

/// Receives one datagram from the socket `fd` into `buf`, without blocking: its length (0: the peer closed its end).
pub(crate) fn receive_datagram(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: recv writes at most `buf.len()` bytes into `buf`.
    check(unsafe { recv(fd, buf.as_mut_ptr().cast(), buf.len(), MSG_DONTWAIT) })
        .map(|n| usize::try_from(n).unwrap_or(0))
}

/// How many bytes this end of socket `fd` sent that its peer has not read yet (`SIOCOUTQ`).
pub(crate) fn unread(fd: RawFd) -> io::Result<usize> {
    let mut bytes: c_int = 0;
    // SAFETY: SIOCOUTQ writes one int to the address given, which lives across the call. (musl declares the
    // request an `int`: the value fits, and both ABIs pass it in a full register.)
    check(unsafe { ioctl(fd, SIOCOUTQ, &raw mut bytes) })?;
    Ok(usize::try_from(bytes).unwrap_or(0))
}
