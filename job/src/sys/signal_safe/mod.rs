//! The async-signal-safe system calls that the keeper (`crate::keeper`, in the child std forked for the spawn) and
//! the forked guard (`guard.rs`) make, each behind a safe wrapper, and what both do with them (`folder.rs`: a cgroup
//! folder's control files and its removal; `death.rs`: the death plan; here: closing every descriptor).
//!
//! Every wrapper here is async-signal-safe, so it may run in the forked child of a process that had other threads:
//! each is one system call (through libc's thin wrapper or `syscall(2)`), or a libc function that POSIX lists as
//! async-signal-safe (`sigfillset`, `sigemptyset`, `sigaddset`, `signal`), or reads this thread's own state
//! (`pthread_self`, `__errno_location`); none allocates or takes a lock. Each takes only references or integers, so
//! that no call of it can hand the kernel memory that is not the caller's to write: this is the whole of its `SAFETY`
//! argument. A failure is the call's errno (`Err`), read at once after it. Which process a `kill` reaches, or which
//! descriptor a `close` closes, is each caller's argument (numbers: no memory of this process's is at stake).
#![allow(
    dead_code,
    reason = "TEMPORARY: the keeper's calls, to be deleted with the forked guard"
)]

use std::ffi::CStr;
use std::mem::MaybeUninit;
use std::os::fd::RawFd;
use std::time::Duration;

mod death;
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
mod folder;
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
mod linux;

pub(crate) use death::DeathPlan;
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
pub(crate) use folder::*;
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
pub(crate) use linux::*;

/// This thread's errno (`EIO` if it holds none).
pub(crate) fn errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// A call's result: `Ok` unless it is negative (-1 and errno, the C convention), then the errno.
pub(crate) fn check<T: Copy + Default + PartialOrd>(ret: T) -> Result<T, i32> {
    if ret < T::default() {
        Err(errno())
    } else {
        Ok(ret)
    }
}

pub(crate) fn getpid() -> libc::pid_t {
    // SAFETY: getpid has no preconditions.
    unsafe { libc::getpid() }
}

pub(crate) fn getppid() -> libc::pid_t {
    // SAFETY: getppid has no preconditions.
    unsafe { libc::getppid() }
}

pub(crate) fn getuid() -> libc::uid_t {
    // SAFETY: getuid has no preconditions.
    unsafe { libc::getuid() }
}

/// This system's page size (`sysconf(_SC_PAGESIZE)`; not needed after the fork).
pub(crate) fn page_size() -> Option<usize> {
    // SAFETY: sysconf with an integer argument.
    usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).ok()
}

/// The set of every signal.
pub(crate) fn full_set() -> libc::sigset_t {
    let mut set = MaybeUninit::<libc::sigset_t>::zeroed();
    // SAFETY: sigfillset initialises the set it is given, which lives across the call; then zeroed and filled.
    unsafe {
        libc::sigfillset(set.as_mut_ptr());
        set.assume_init()
    }
}

/// The empty set.
pub(crate) fn empty_set() -> libc::sigset_t {
    let mut set = MaybeUninit::<libc::sigset_t>::zeroed();
    // SAFETY: sigemptyset initialises the set it is given, which lives across the call; zeroed, then emptied.
    unsafe {
        libc::sigemptyset(set.as_mut_ptr());
        set.assume_init()
    }
}

/// The set of `signal` alone.
pub(crate) fn only(signal: libc::c_int) -> libc::sigset_t {
    let mut set = MaybeUninit::<libc::sigset_t>::zeroed();
    // SAFETY: sigemptyset and sigaddset write the set they are given, which lives across the calls (sigaddset
    // checks the signal's number); zeroed, then emptied.
    unsafe {
        libc::sigemptyset(set.as_mut_ptr());
        libc::sigaddset(set.as_mut_ptr(), signal);
        set.assume_init()
    }
}

/// `sigprocmask(how, set, old)`.
pub(crate) fn set_mask(how: libc::c_int, set: &libc::sigset_t, old: Option<&mut libc::sigset_t>) {
    let old = old.map_or(std::ptr::null_mut(), std::ptr::from_mut);
    // SAFETY: both pointers are valid (or null for `old`) for the call; sigprocmask is async-signal-safe.
    unsafe { libc::sigprocmask(how, set, old) };
}

/// What `waitid` reports of a child: its pid (0: no child had a report, with `WNOHANG`), `si_code` (`CLD_*`) and
/// `si_status` (an exit code, or a signal).
#[derive(Clone, Copy)]
pub(crate) struct Report {
    pub(crate) pid: libc::pid_t,
    pub(crate) code: libc::c_int,
    pub(crate) status: libc::c_int,
}

/// `waitid(idtype, id, flags)`: the report (pid 0 if there is none).
pub(crate) fn waitid(
    idtype: libc::idtype_t,
    id: libc::id_t,
    flags: libc::c_int,
) -> Result<Report, i32> {
    let mut info = MaybeUninit::<libc::siginfo_t>::zeroed();
    // SAFETY: `info` lives across the call; zeroed, possibly filled in: every bit pattern is a valid siginfo_t,
    // and `si_pid` and `si_status` read integers inside it (0 without a report).
    unsafe {
        if libc::waitid(idtype, id, info.as_mut_ptr(), flags) != 0 {
            return Err(errno());
        }
        let info = info.assume_init();
        Ok(Report {
            pid: info.si_pid(),
            code: info.si_code,
            status: info.si_status(),
        })
    }
}

/// `waitpid(pid, NULL, flags)`: the pid reaped (0: none, with `WNOHANG`).
pub(crate) fn waitpid(pid: libc::pid_t, flags: libc::c_int) -> Result<libc::pid_t, i32> {
    // SAFETY: waitpid with integer arguments and a null status pointer.
    check(unsafe { libc::waitpid(pid, std::ptr::null_mut(), flags) })
}

/// What this process's children that it reaped used (`getrusage(RUSAGE_CHILDREN)`): user and system CPU time in
/// microseconds, and the largest `ru_maxrss` in KiB; zeros if the call fails.
pub(crate) fn children_usage() -> (u64, u64, u64) {
    let mut usage = MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes one rusage into `usage`, which lives across the call; zero-initialised and possibly
    // filled in by the kernel: every bit pattern is a valid rusage.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_CHILDREN, usage.as_mut_ptr());
        usage.assume_init()
    };
    let micros = |t: libc::timeval| {
        let (s, us) = (u64::try_from(t.tv_sec), u64::try_from(t.tv_usec));
        s.unwrap_or(0)
            .saturating_mul(1_000_000)
            .saturating_add(us.unwrap_or(0))
    };
    let max_rss = u64::try_from(usage.ru_maxrss).unwrap_or(0);
    (micros(usage.ru_utime), micros(usage.ru_stime), max_rss)
}

pub(crate) fn kill(pid: libc::pid_t, signal: libc::c_int) -> Result<(), i32> {
    // SAFETY: kill with integer arguments (no memory); which process it reaches is each caller's argument.
    check(unsafe { libc::kill(pid, signal) }).map(drop)
}

pub(crate) fn setpgid(pid: libc::pid_t, group: libc::pid_t) -> Result<(), i32> {
    // SAFETY: setpgid with integer arguments.
    check(unsafe { libc::setpgid(pid, group) }).map(drop)
}

/// The device and inode of `path` (`stat`).
pub(crate) fn stat(path: &CStr) -> Result<(libc::dev_t, libc::ino_t), i32> {
    let mut st = MaybeUninit::<libc::stat>::zeroed();
    // SAFETY: stat of a NUL-terminated path into a struct that lives across the call; zeroed, possibly filled in
    // (integers: every bit pattern is valid).
    let (rc, st) = unsafe { (libc::stat(path.as_ptr(), st.as_mut_ptr()), st.assume_init()) };
    check(rc).map(|_| (st.st_dev, st.st_ino))
}

/// Whether `lstat` of `path` succeeds (the link itself exists).
pub(crate) fn lstat_ok(path: &CStr) -> bool {
    let mut st = MaybeUninit::<libc::stat>::zeroed();
    // SAFETY: lstat of a NUL-terminated path into a struct that lives across the call.
    unsafe { libc::lstat(path.as_ptr(), st.as_mut_ptr()) == 0 }
}

pub(crate) fn open(path: &CStr, flags: libc::c_int) -> Result<RawFd, i32> {
    // SAFETY: open of a NUL-terminated path (no mode: the callers never create).
    check(unsafe { libc::open(path.as_ptr(), flags) })
}

/// `openat(dir, name, flags)` (`dir` may be `AT_FDCWD`).
pub(crate) fn openat(dir: RawFd, name: &CStr, flags: libc::c_int) -> Result<RawFd, i32> {
    // SAFETY: openat with a NUL-terminated name (no mode: the callers never create).
    check(unsafe { libc::openat(dir, name.as_ptr(), flags) })
}

/// Closes `fd` (a number: closing one the caller does not own harms no memory of this process's).
pub(crate) fn close(fd: RawFd) {
    // SAFETY: close on a descriptor number.
    unsafe { libc::close(fd) };
}

pub(crate) fn read(fd: RawFd, buf: &mut [u8]) -> Result<usize, i32> {
    // SAFETY: read into `buf`, at most its length.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    usize::try_from(n).map_err(|_| errno())
}

pub(crate) fn write(fd: RawFd, buf: &[u8]) -> Result<usize, i32> {
    // SAFETY: write from `buf`, at most its length.
    let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
    usize::try_from(n).map_err(|_| errno())
}

pub(crate) fn lseek(fd: RawFd, offset: libc::off_t, whence: libc::c_int) {
    // SAFETY: lseek with integer arguments.
    unsafe { libc::lseek(fd, offset, whence) };
}

pub(crate) fn mkdir(path: &CStr, mode: libc::mode_t) -> Result<(), i32> {
    // SAFETY: mkdir of a NUL-terminated path.
    check(unsafe { libc::mkdir(path.as_ptr(), mode) }).map(drop)
}

pub(crate) fn rmdir(path: &CStr) -> Result<(), i32> {
    // SAFETY: rmdir of a NUL-terminated path.
    check(unsafe { libc::rmdir(path.as_ptr()) }).map(drop)
}

pub(crate) fn faccessat(dir: RawFd, name: &CStr, mode: libc::c_int) -> Result<(), i32> {
    // SAFETY: faccessat with a NUL-terminated name.
    check(unsafe { libc::faccessat(dir, name.as_ptr(), mode, 0) }).map(drop)
}

pub(crate) fn unlinkat(dir: RawFd, name: &CStr, flags: libc::c_int) -> Result<(), i32> {
    // SAFETY: unlinkat with a NUL-terminated name.
    check(unsafe { libc::unlinkat(dir, name.as_ptr(), flags) }).map(drop)
}

/// This process's `RLIMIT_NOFILE` (soft), 0 if it cannot be read.
pub(crate) fn open_files_limit() -> libc::rlim_t {
    let mut limit = MaybeUninit::<libc::rlimit>::zeroed();
    // SAFETY: getrlimit fills the struct it is given, which lives across the call; zeroed, possibly filled in.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, limit.as_mut_ptr());
        limit.assume_init().rlim_cur
    }
}

/// No core dump from here on (`RLIMIT_CORE` 0).
pub(crate) fn no_core() {
    let limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: setrlimit reads the struct it is given, which lives across the call.
    unsafe { libc::setrlimit(libc::RLIMIT_CORE, &raw const limit) };
}

/// `signal`'s default action.
pub(crate) fn default_action(signal: libc::c_int) {
    // SAFETY: SIG_DFL installs no handler of ours.
    unsafe { libc::signal(signal, libc::SIG_DFL) };
}

/// `CLOCK_MONOTONIC` now.
pub(crate) fn monotonic() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given, which lives across the call.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &raw mut now) };
    // Below a second's nanoseconds, so that `Duration::new` has no carry (that cannot overflow).
    Duration::new(
        now.tv_sec.unsigned_abs(),
        u32::try_from(now.tv_nsec).unwrap_or(0).min(999_999_999),
    )
}

pub(crate) fn nanosleep(pause: &libc::timespec) {
    // SAFETY: nanosleep reads `pause`; a null remainder is allowed.
    unsafe { libc::nanosleep(pause, std::ptr::null_mut()) };
}

/// Ends this process at once with `status` (no destructor, no `atexit` handler, no flush).
pub(crate) fn exit(status: libc::c_int) -> ! {
    // SAFETY: _exit has no preconditions.
    unsafe { libc::_exit(status) }
}

/// The start of file `name` (relative to `dir`, or absolute, `dir` then `AT_FDCWD`), as much as fits in `buf`;
/// `None` if it cannot be read.
pub(crate) fn read_start<'a>(dir: RawFd, name: &CStr, buf: &'a mut [u8]) -> Option<&'a [u8]> {
    let fd = openat(dir, name, libc::O_RDONLY | libc::O_CLOEXEC).ok()?;
    let got = read(fd, buf);
    close(fd);
    buf.get(..got.ok()?)
}

/// Sleeps `millis` milliseconds (less than a second: the callers pass 1 and 10, so the product cannot overflow even a
/// 32-bit `c_long`).
pub(crate) fn nap_for(millis: u16) {
    let pause = libc::timespec {
        tv_sec: 0,
        tv_nsec: libc::c_long::from(millis.min(999)) * 1_000_000,
    };
    nanosleep(&pause);
}

/// Closes every descriptor from `first` to `last` (inclusive): `close_range` on Linux 5.9 and later, else one by one
/// up to this process's `RLIMIT_NOFILE` (at most 65,536).
fn close_between(first: libc::c_uint, last: libc::c_uint) {
    #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
    if linux::close_range(first, last).is_ok() {
        return;
    }
    let max = libc::c_uint::try_from(open_files_limit().min(65_536)).unwrap_or(65_536);
    for fd in first..max.min(last.saturating_add(1)) {
        // Below 65,536: a `RawFd`.
        close(RawFd::try_from(fd).unwrap_or(-1));
    }
}

/// Closes every descriptor but `keep`, if it is one (negative: none is kept).
pub(crate) fn close_all_but(keep: RawFd) {
    // `keep` is at least 1 in the last arm (0 is the one before), and at most `i32::MAX` (a `RawFd`): neither
    // `keep - 1` nor `keep + 1` can overflow.
    match libc::c_uint::try_from(keep) {
        Err(_) => close_between(0, libc::c_uint::MAX),
        Ok(0) => close_between(1, libc::c_uint::MAX),
        Ok(keep) => {
            close_between(0, keep - 1);
            close_between(keep + 1, libc::c_uint::MAX);
        }
    }
}

/// Closes every descriptor from `first` on.
pub(crate) fn close_from(first: RawFd) {
    close_between(first.unsigned_abs(), libc::c_uint::MAX);
}
