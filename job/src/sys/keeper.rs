//! The keeper of a contained job (Linux): the process std forks for the spawn (`M`, std's `Child`) stays between
//! this process and the command, and the command is its child (`L`), made inside the `pre_exec` hook.
//!
//! - `M` blocks every signal, asks for `SIGCONT` when this process (the thread that forked it) dies
//!   (`PR_SET_PDEATHSIG`), and makes `L` with `clone3`: with `CLONE_INTO_CGROUP` the command is born inside the job's
//!   cgroup, so it never migrates (a migration waits for an RCU grace period: 5-19 ms measured). `L` asks for `SIGKILL`
//!   when `M` dies (a wait sleeps until `L` exits) and returns from the hook with the caller's signal mask, and std
//!   applies the rest of the `Command` and execs it. On x86-64 `L` shares `M`'s memory until it execs, while `M` sleeps
//!   (`CLONE_VM | CLONE_VFORK`, as `posix_spawn` does: no copy of the address space is made, and none is torn down at
//!   the exec); `M` then goes on on a stack of its own, since `L` returned on `M`'s. Elsewhere `L` is a copy, as after
//!   a fork.
//! - Where `clone3` is refused (`ENOSYS`, as container runtimes' default seccomp profiles answer, or `EPERM`, as older
//!   ones did), `M` makes `L` with the legacy `clone` instead (the same sharing on x86-64; a fork-like copy
//!   elsewhere): one failed system call more per spawn, no state kept. Reaper mode needs nothing else. In cgroup mode
//!   `L` is then born outside the folder (no `CLONE_INTO_CGROUP`), so it moves itself in (`0` written to the folder's
//!   `cgroup.procs`, through the folder's descriptor, which is closed at its `exec`) before it returns from the hook:
//!   it runs no instruction of the command outside the job. That move is a migration: measured on Linux 6.18, a spawn
//!   and wait of `/bin/true` took 13.4 ms instead of 2.9 ms (medians, spawns 250 ms apart), 2.30 instead of 2.18 ms back
//!   to back (a move soon after another waits for no grace period; still 9 ms at the 90th percentile). If the move
//!   fails, `L` fails the spawn as a refused `clone3` does (the command never runs), and `M` removes the folder.
//! - `L` starts in `M`'s process group `G` (whose id is `M`'s pid, the `GroupChild`'s id); `M` then leaves `G` for a
//!   group of its own (made by a helper child before `L`, so that nothing can fail once `L` exists), so that the
//!   crate's group signals (and a terminal's) reach the command and not `M`.
//! - `M` closes every descriptor but the cgroup folder's (std's error pipe and the command's stdio included, so
//!   that the spawn returns when `L` execs), then waits for signals: `L` stopped (reported to this process, so
//!   that a supervisor sees the stop), `L` exited (if nothing else of the job runs, it ends the job at once; else
//!   it waits for this process's verdict: kill the job, or keep it), or this process died (`getppid()` changed: it
//!   follows the death plan this process left in the shared page, if any: a signal to the command's group, then up
//!   to a grace for the job to end; then it ends the job and removes the folder). Then it reaps `L` and exits as `L`
//!   did: the same exit code, or the same signal (core dumps off). Before the spawn returned (the `spawned` flag of
//!   the shared page), `L` may have failed its `exec`, and std then waits for `M`: `M` tells the two apart by what `L`
//!   left, never by `L`'s name or anything else `L` controls. An `L` that left nothing running is ended at once (a
//!   failed `exec` leaves nothing); one that left something ran its program, so `M` waits for the spawn's return (at
//!   most a second) and then for the verdict, and ends the job if the spawn has not returned by then. A stop of `L` is
//!   reported through the shared page and a `SIGCHLD` (the keeper never stops itself).
//! - Reaper mode (no cgroup folder): `M` makes itself a child subreaper (`PR_SET_CHILD_SUBREAPER`) before it makes
//!   `L` (without `CLONE_INTO_CGROUP`), so every orphan of the job is re-parented to it. While `L` runs it reaps the
//!   adopted orphans that exit (never `L` before the verdict); to end the job it kills `G`, then `L` and its other
//!   children (pinned until it reaps them: no pid names another process), reaps them and repeats with the orphans
//!   that brings until only `L` is left (bounded). It reads `/proc/thread-self/children` on a fixed buffer.
//! - Once `L` has run for 10 ms, `M` unmaps most of the memory its fork copied from this process, if that is 8 MiB
//!   or more (see `shed_memory` for what it keeps): it needs none of it, and while it holds it, every page this
//!   process writes is copied.
//!
//! Everything `M` and `L` run before `exec` is async-signal-safe: raw system calls on memory copied by the fork (or
//! shared with this process through one anonymous page; `M`'s and `L`'s own, shared between them on x86-64, which
//! `M` only reads and writes once `L` is gone from it), no allocation, no lock. This process talks to `M` only
//! through that page and `SIGCONT`.
//!
//! Where the `unsafe` is: every system call `M` and `L` make goes through a safe wrapper of `calls` (one `SAFETY`
//! argument each); the logic (`start`, `kept`, `keep`, `end_job`, `give_grace`, `reap_adopted`, `end_adopted`,
//! `remove_below`, `shed_memory`'s reading) has no `unsafe` of its own. The rest is special and argued where it
//! stands: the `pre_exec` hook itself (`arm_keeper`: it never returns in `M`), the clone of `L` and its return path
//! (`make_command`, `clone_here`), the group helper that shares `M`'s memory and errno (`make_group`), the shared
//! page (`SharedPage`, `shared`), and the unmapping (`shed_memory`: its risk is bounded, since `M` is a process of
//! its own: a mistake kills `M`, and through `PR_SET_PDEATHSIG` the command, never this process's memory; the one
//! page shared with this process is never unmapped). Before the fork: `static_tls_span`.
//!
//! No panic after the fork: a panic in `M` or `L` would unwind out of the hook into std's code and then the
//! caller's, running on in a copy of this process, instead of the job's orderly end; so none is reachable there. The code after the fork indexes no slice (`get`, `split`,
//! `strip_suffix` and iterators instead; the one `copy_within` is guarded by the check before it), unwraps nothing
//! (`unwrap_or`, `ok()?`), and its arithmetic cannot overflow: sums of a buffer's offsets and lengths (at most a
//! few KiB), counts of children, a page size that is never 0 (`Plan::page_size`) with saturating products, times
//! in `Duration` with saturating sums, and `calls::monotonic`, whose nanoseconds are clamped below a second so
//! that `Duration::new` has no carry; the rest says why where it stands (`close_all_but`, `nap_for`, `failed`).

use std::ffi::CStr;
use std::io;
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;

use self::calls::errno;

/// The system calls of the keeper, each behind a safe wrapper: the only `unsafe` that the keeper's logic (`start`,
/// `kept`, `keep`, `end_job`, `give_grace`, `reap_adopted`, `end_adopted`, `remove_below`, `shed_memory`, ...) reaches,
/// but for the few blocks that are special and say so where they stand (the clone of the command's process and its
/// return path, the group helper that shares the keeper's memory, the shared page, the unmapping).
///
/// Every wrapper here is async-signal-safe, so it may run in the forked child (`M`, and `L` before it returns from
/// the `pre_exec` hook) of a process that had other threads: each is one system call (through libc's thin wrapper
/// or `syscall(2)`), or a libc function that POSIX lists as async-signal-safe (`sigfillset`, `sigemptyset`,
/// `sigaddset`, `signal`), or reads this thread's own state (`pthread_self`, `__errno_location`); none allocates or
/// takes a lock. Each takes only references or integers, so that no call of it can hand the kernel memory that is not
/// the caller's to write: this is the whole of its `SAFETY` argument. A failure is the call's errno (`Err`), read at
/// once after it.
mod calls {
    use std::ffi::CStr;
    use std::mem::MaybeUninit;
    use std::os::fd::RawFd;
    use std::time::Duration;

    #[cfg(not(target_arch = "x86_64"))]
    use super::CloneArgs;
    use super::{CapData, CapHeader};

    /// This thread's errno (`EIO` if it holds none).
    pub(super) fn errno() -> i32 {
        std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO)
    }

    /// A call's result: `Ok` unless it is negative (-1 and errno, the C convention), then the errno.
    fn check<T: Copy + Default + PartialOrd>(ret: T) -> Result<T, i32> {
        if ret < T::default() {
            Err(errno())
        } else {
            Ok(ret)
        }
    }

    pub(super) fn getpid() -> libc::pid_t {
        // SAFETY: getpid has no preconditions.
        unsafe { libc::getpid() }
    }

    pub(super) fn getppid() -> libc::pid_t {
        // SAFETY: getppid has no preconditions.
        unsafe { libc::getppid() }
    }

    pub(super) fn getuid() -> libc::uid_t {
        // SAFETY: getuid has no preconditions.
        unsafe { libc::getuid() }
    }

    /// This system's page size (`sysconf(_SC_PAGESIZE)`; not needed after the fork).
    pub(super) fn page_size() -> Option<usize> {
        // SAFETY: sysconf with an integer argument.
        usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).ok()
    }

    /// `prctl(option, arg, 0, 0, 0)`, for the options that take integers only: the call's result.
    pub(super) fn prctl(option: libc::c_int, arg: libc::c_ulong) -> Result<libc::c_int, i32> {
        // SAFETY: prctl with integer arguments (the callers' options read no memory through them).
        check(unsafe { libc::prctl(option, arg, 0, 0, 0) })
    }

    /// This process's name (`PR_SET_NAME`: the kernel reads at most 16 bytes, and stops at the NUL).
    pub(super) fn set_name(name: &CStr) {
        // SAFETY: PR_SET_NAME reads a NUL-terminated string, which `name` is, for the call's length.
        unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr()) };
    }

    /// Whether this thread has a shadow stack enabled (`false` where the kernel knows none).
    pub(super) fn shadow_stack() -> bool {
        let mut features: u64 = 0;
        #[cfg(target_arch = "x86_64")]
        // SAFETY: arch_prctl(ARCH_SHSTK_STATUS) writes a u64 of features to the address given, which lives across the
        // call; a kernel without it fails with EINVAL and writes nothing.
        let asked = unsafe { libc::syscall(libc::SYS_arch_prctl, 0x5005, &raw mut features) };
        #[cfg(target_arch = "aarch64")]
        // SAFETY: prctl(PR_GET_SHADOW_STACK_STATUS) writes a u64 of flags to the address given, which lives across
        // the call; a kernel without it fails with EINVAL and writes nothing.
        let asked = libc::c_long::from(unsafe { libc::prctl(74, &raw mut features, 0, 0, 0) });
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        let asked: libc::c_long = -1;
        asked == 0 && features & 1 != 0
    }

    /// The set of every signal.
    pub(super) fn full_set() -> libc::sigset_t {
        let mut set = MaybeUninit::<libc::sigset_t>::zeroed();
        // SAFETY: sigfillset initialises the set it is given, which lives across the call; then zeroed and filled.
        unsafe {
            libc::sigfillset(set.as_mut_ptr());
            set.assume_init()
        }
    }

    /// The set of `signal` alone.
    pub(super) fn only(signal: libc::c_int) -> libc::sigset_t {
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
    pub(super) fn set_mask(
        how: libc::c_int,
        set: &libc::sigset_t,
        old: Option<&mut libc::sigset_t>,
    ) {
        let old = old.map_or(std::ptr::null_mut(), std::ptr::from_mut);
        // SAFETY: both pointers are valid (or null for `old`) for the call; sigprocmask is async-signal-safe.
        unsafe { libc::sigprocmask(how, set, old) };
    }

    /// Takes a pending signal of `set` (which must be blocked), or waits for one, no longer than `timeout` (if any):
    /// its number and its `si_code`.
    pub(super) fn sigtimedwait(
        set: &libc::sigset_t,
        timeout: Option<&libc::timespec>,
    ) -> Result<(libc::c_int, libc::c_int), i32> {
        let mut info = MaybeUninit::<libc::siginfo_t>::zeroed();
        let timeout = timeout.map_or(std::ptr::null(), std::ptr::from_ref);
        // SAFETY: `set`, `info` and `timeout` (or null) live across the call; `info` is zeroed, possibly filled in:
        // every bit pattern is a valid siginfo_t (integers).
        let (signal, info) = unsafe {
            (
                libc::sigtimedwait(set, info.as_mut_ptr(), timeout),
                info.assume_init(),
            )
        };
        check(signal).map(|signal| (signal, info.si_code))
    }

    /// What `waitid` reports of a child: its pid (0: no child had a report, with `WNOHANG`), `si_code` (`CLD_*`) and
    /// `si_status` (an exit code, or a signal).
    #[derive(Clone, Copy)]
    pub(super) struct Report {
        pub(super) pid: libc::pid_t,
        pub(super) code: libc::c_int,
        pub(super) status: libc::c_int,
    }

    /// `waitid(idtype, id, flags)`: the report (pid 0 if there is none).
    pub(super) fn waitid(
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
    pub(super) fn waitpid(pid: libc::pid_t, flags: libc::c_int) -> Result<libc::pid_t, i32> {
        // SAFETY: waitpid with integer arguments and a null status pointer.
        check(unsafe { libc::waitpid(pid, std::ptr::null_mut(), flags) })
    }

    pub(super) fn kill(pid: libc::pid_t, signal: libc::c_int) -> Result<(), i32> {
        // SAFETY: kill with integer arguments (no memory); which process it reaches is each caller's argument.
        check(unsafe { libc::kill(pid, signal) }).map(drop)
    }

    pub(super) fn setpgid(pid: libc::pid_t, group: libc::pid_t) -> Result<(), i32> {
        // SAFETY: setpgid with integer arguments.
        check(unsafe { libc::setpgid(pid, group) }).map(drop)
    }

    pub(super) fn unshare(flags: libc::c_int) -> Result<(), i32> {
        // SAFETY: unshare with an integer argument.
        check(unsafe { libc::unshare(flags) }).map(drop)
    }

    pub(super) fn setns(fd: RawFd, nstype: libc::c_int) -> Result<(), i32> {
        // SAFETY: setns with integer arguments.
        check(unsafe { libc::setns(fd, nstype) }).map(drop)
    }

    /// This process's capabilities (version 3: two words of each set).
    pub(super) fn capget(header: &mut CapHeader, data: &mut [CapData; 2]) -> Result<(), i32> {
        // SAFETY: capget reads the header and writes two `CapData` (version 3) into `data`; both live across the
        // call (a raw system call).
        check(unsafe {
            libc::syscall(
                libc::SYS_capget,
                std::ptr::from_mut(header),
                data.as_mut_ptr(),
            )
        })
        .map(drop)
    }

    pub(super) fn capset(header: &mut CapHeader, data: &[CapData; 2]) -> Result<(), i32> {
        // SAFETY: capset reads the header (and may write its version) and two `CapData`; both live across the call.
        check(unsafe { libc::syscall(libc::SYS_capset, std::ptr::from_mut(header), data.as_ptr()) })
            .map(drop)
    }

    /// The device and inode of `path` (`stat`).
    pub(super) fn stat(path: &CStr) -> Result<(libc::dev_t, libc::ino_t), i32> {
        let mut st = MaybeUninit::<libc::stat>::zeroed();
        // SAFETY: stat of a NUL-terminated path into a struct that lives across the call; zeroed, possibly filled in
        // (integers: every bit pattern is valid).
        let (rc, st) = unsafe { (libc::stat(path.as_ptr(), st.as_mut_ptr()), st.assume_init()) };
        check(rc).map(|_| (st.st_dev, st.st_ino))
    }

    /// Whether `lstat` of `path` succeeds (the link itself exists).
    pub(super) fn lstat_ok(path: &CStr) -> bool {
        let mut st = MaybeUninit::<libc::stat>::zeroed();
        // SAFETY: lstat of a NUL-terminated path into a struct that lives across the call.
        unsafe { libc::lstat(path.as_ptr(), st.as_mut_ptr()) == 0 }
    }

    pub(super) fn open(path: &CStr, flags: libc::c_int) -> Result<RawFd, i32> {
        // SAFETY: open of a NUL-terminated path (no mode: the callers never create).
        check(unsafe { libc::open(path.as_ptr(), flags) })
    }

    /// `openat(dir, name, flags)` (`dir` may be `AT_FDCWD`).
    pub(super) fn openat(dir: RawFd, name: &CStr, flags: libc::c_int) -> Result<RawFd, i32> {
        // SAFETY: openat with a NUL-terminated name (no mode: the callers never create).
        check(unsafe { libc::openat(dir, name.as_ptr(), flags) })
    }

    /// Closes `fd` (a number: closing one the caller does not own harms no memory of this process's).
    pub(super) fn close(fd: RawFd) {
        // SAFETY: close on a descriptor number.
        unsafe { libc::close(fd) };
    }

    /// `close_range(first, last, 0)` (Linux 5.9).
    pub(super) fn close_range(first: libc::c_uint, last: libc::c_uint) -> Result<(), i32> {
        // SAFETY: close_range with integer arguments; it closes only descriptors.
        check(unsafe { libc::syscall(super::SYS_CLOSE_RANGE, first, last, 0 as libc::c_uint) })
            .map(drop)
    }

    pub(super) fn read(fd: RawFd, buf: &mut [u8]) -> Result<usize, i32> {
        // SAFETY: read into `buf`, at most its length.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        usize::try_from(n).map_err(|_| errno())
    }

    pub(super) fn write(fd: RawFd, buf: &[u8]) -> Result<usize, i32> {
        // SAFETY: write from `buf`, at most its length.
        let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
        usize::try_from(n).map_err(|_| errno())
    }

    pub(super) fn lseek(fd: RawFd, offset: libc::off_t, whence: libc::c_int) {
        // SAFETY: lseek with integer arguments.
        unsafe { libc::lseek(fd, offset, whence) };
    }

    /// The next directory records of `dir` (`getdents64`), into `buf` (8-byte aligned, as the records are): the bytes
    /// written (empty at the end).
    pub(super) fn getdents64(dir: RawFd, buf: &mut [u64; 512]) -> Result<&[u8], i32> {
        // SAFETY: getdents64 writes at most the buffer's length into it, and says how much; those bytes (of a buffer
        // of integers, initialised) are then viewed as bytes, borrowed from `buf`.
        unsafe {
            let n = libc::syscall(
                libc::SYS_getdents64,
                dir,
                buf.as_mut_ptr(),
                std::mem::size_of_val(buf),
            );
            let len = usize::try_from(n).map_err(|_| errno())?;
            Ok(std::slice::from_raw_parts(
                buf.as_ptr().cast::<u8>(),
                len.min(std::mem::size_of_val(buf)),
            ))
        }
    }

    pub(super) fn mkdir(path: &CStr, mode: libc::mode_t) -> Result<(), i32> {
        // SAFETY: mkdir of a NUL-terminated path.
        check(unsafe { libc::mkdir(path.as_ptr(), mode) }).map(drop)
    }

    pub(super) fn rmdir(path: &CStr) -> Result<(), i32> {
        // SAFETY: rmdir of a NUL-terminated path.
        check(unsafe { libc::rmdir(path.as_ptr()) }).map(drop)
    }

    pub(super) fn faccessat(dir: RawFd, name: &CStr, mode: libc::c_int) -> Result<(), i32> {
        // SAFETY: faccessat with a NUL-terminated name.
        check(unsafe { libc::faccessat(dir, name.as_ptr(), mode, 0) }).map(drop)
    }

    pub(super) fn unlinkat(dir: RawFd, name: &CStr, flags: libc::c_int) -> Result<(), i32> {
        // SAFETY: unlinkat with a NUL-terminated name.
        check(unsafe { libc::unlinkat(dir, name.as_ptr(), flags) }).map(drop)
    }

    /// This process's `RLIMIT_NOFILE` (soft), 0 if it cannot be read.
    pub(super) fn open_files_limit() -> libc::rlim_t {
        let mut limit = MaybeUninit::<libc::rlimit>::zeroed();
        // SAFETY: getrlimit fills the struct it is given, which lives across the call; zeroed, possibly filled in.
        unsafe {
            libc::getrlimit(libc::RLIMIT_NOFILE, limit.as_mut_ptr());
            limit.assume_init().rlim_cur
        }
    }

    /// No core dump from here on (`RLIMIT_CORE` 0).
    pub(super) fn no_core() {
        let limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: setrlimit reads the struct it is given, which lives across the call.
        unsafe { libc::setrlimit(libc::RLIMIT_CORE, &raw const limit) };
    }

    /// `signal`'s default action.
    pub(super) fn default_action(signal: libc::c_int) {
        // SAFETY: SIG_DFL installs no handler of ours.
        unsafe { libc::signal(signal, libc::SIG_DFL) };
    }

    /// `CLOCK_MONOTONIC` now.
    pub(super) fn monotonic() -> Duration {
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

    pub(super) fn nanosleep(pause: &libc::timespec) {
        // SAFETY: nanosleep reads `pause`; a null remainder is allowed.
        unsafe { libc::nanosleep(pause, std::ptr::null_mut()) };
    }

    /// Ends this process at once with `status` (no destructor, no `atexit` handler, no flush).
    pub(super) fn exit(status: libc::c_int) -> ! {
        // SAFETY: _exit has no preconditions.
        unsafe { libc::_exit(status) }
    }

    /// The address of this thread's errno (in its TLS block).
    pub(super) fn errno_address() -> usize {
        // SAFETY: __errno_location has no preconditions.
        unsafe { libc::__errno_location() as usize }
    }

    /// This thread's control block (the thread pointer, or next to it), as `pthread_self` gives it: an integer in
    /// glibc, a pointer in musl.
    pub(super) fn control_block() -> usize {
        // SAFETY: pthread_self has no preconditions (it reads the thread pointer).
        let me = unsafe { libc::pthread_self() };
        #[cfg(target_env = "musl")]
        return me as usize;
        #[cfg(not(target_env = "musl"))]
        usize::try_from(me).unwrap_or(0)
    }

    /// A stack for the keeper, `len` bytes (a fresh private anonymous mapping), its lowest page (`page` bytes) made a
    /// guard: its base.
    #[cfg(target_arch = "x86_64")]
    pub(super) fn map_stack(len: usize, page: usize) -> Result<usize, i32> {
        // SAFETY: a fresh private anonymous mapping at an address of the kernel's choice (no existing memory is
        // touched), then the first page of that mapping made inaccessible (nothing refers to it yet).
        unsafe {
            let base = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            );
            if base == libc::MAP_FAILED {
                return Err(errno());
            }
            libc::mprotect(base, page, libc::PROT_NONE);
            Ok(base as usize)
        }
    }

    /// A child made as `fork` makes one (`clone3` without `CLONE_VM`, with `args`' flags and exit signal; no stack,
    /// no thread ids, no TLS): its pid here, 0 in it (a copy of this address space, returning from this call).
    #[cfg(not(target_arch = "x86_64"))]
    pub(super) fn clone3_fork(
        flags: u64,
        exit_signal: u64,
        cgroup: u64,
    ) -> Result<libc::c_long, i32> {
        let args = CloneArgs {
            flags: flags
                & !(libc::CLONE_VM as u64 | libc::CLONE_VFORK as u64 | libc::CLONE_THREAD as u64),
            exit_signal,
            cgroup,
            ..CloneArgs::default()
        };
        // SAFETY: clone3 without CLONE_VM (nor CLONE_THREAD): the child gets a copy of this address space and returns
        // 0 here, like fork; `args` is a valid clone_args of the size passed, with no stack, no thread-id pointer
        // and no TLS, and lives across the call.
        check(unsafe {
            libc::syscall(
                super::SYS_CLONE3,
                &raw const args,
                std::mem::size_of::<CloneArgs>(),
            )
        })
    }

    /// The same with the legacy `clone` (its exit signal in the flags' low byte; no new stack, no thread ids, no TLS:
    /// the other arguments, whose order differs between architectures, are all 0).
    #[cfg(not(target_arch = "x86_64"))]
    pub(super) fn clone_fork(exit_signal: libc::c_ulong) -> Result<libc::c_long, i32> {
        // SAFETY: as above: a copy of this address space, 0 returned in the child; nothing is written through the
        // null pointers.
        check(unsafe { libc::syscall(libc::SYS_clone, exit_signal & 0xff, 0, 0, 0, 0) })
    }
}

/// Added to the errno of a keeper that could not start the command: std passes the hook's OS error code to the
/// parent as the spawn's error, and no `exec` error is this large, so the parent tells the two apart.
pub(crate) const KEEPER_FAILED: i32 = 1 << 20;

/// `clone3` and `close_range`: the same numbers on every Linux architecture (the table is shared from 424 on).
const SYS_CLONE3: libc::c_long = 435;
const SYS_CLOSE_RANGE: libc::c_long = 436;
/// `clone3`'s flag: the child starts in the cgroup named by `CloneArgs::cgroup` (Linux 5.7).
const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;

/// `siginfo_t::si_code` of a signal the kernel sent (a terminal's, say): not in libc 0.2.139.
const SI_KERNEL: libc::c_int = 0x80;

/// The verdict this process gives once the command exited (0 until then): kill the job, keep it.
const VERDICT_KILL: u32 = 1;
const VERDICT_KEEP: u32 = 2;

/// The keeper's name (`comm`), so that killing the supervisor by its name (`pkill -x`, `killall`) spares the keeper,
/// which then ends the job.
const KEEPER_NAME: &CStr = c"group-keeper";

/// How long a keeper whose command exited before the spawn returned, leaving something running, waits for the spawn's
/// return (checked every millisecond) before it takes the command for one that failed its `exec` (std then waits for
/// the keeper) and ends the job. A spawn returns within microseconds of the command's `exec` unless this process is
/// held up (a loaded machine, a stop): only then does a job kept with `set_kill_leftovers(false)` lose what its
/// command left.
const SPAWN_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// How many times (about a millisecond apart) a keeper tries to remove the emptied cgroup folder: about a second
/// when the supervisor lives (its own end of the job tries again), about 30 s when it died (no one else will).
const REMOVE_TRIES: u32 = 1000;
const REMOVE_TRIES_ALONE: u32 = 30_000;

/// `struct clone_args` of Linux 5.7 (`CLONE_ARGS_SIZE_VER2`).
#[repr(C)]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
}

/// What the keeper and this process share: the command's pid (written by the keeper) and the verdict.
#[repr(C)]
struct Shared {
    command: AtomicU32,
    verdict: AtomicU32,
    /// Set by this process once the spawn returned: until then a command that exits may have failed its `exec`, and
    /// std waits for the keeper (which then ends the job at once and exits as the command did).
    spawned: AtomicU32,
    /// Set by the keeper once the command exited and left something running (it then waits for the verdict): this
    /// process needs no descriptor and no `/proc` to know it. A command that left nothing is not reported here: its
    /// keeper ends the job and exits at once, as the command did.
    exited: AtomicU32,
    /// The signal that last stopped the command, set by the keeper (which then sends this process `SIGCHLD`, as a
    /// stop of its child would), taken by this process.
    stopped: AtomicU32,
    /// Set by the keeper just before it exits on its own (after the verdict, when this process died, or when the
    /// command failed its `exec`): a keeper that exited without it was killed (`kill -9 $PPID` from the job).
    leaving: AtomicU32,
    /// Set by this process during a kill of a reaper job: the keeper leaves the job's exited orphans unreaped
    /// meanwhile, so that the kill can still see (and record) the members its group signal killed.
    hold: AtomicU32,
    /// Set by the keeper before it fails the spawn for a reason its errno alone does not tell (`WHY_*`).
    why: AtomicU32,
    /// The plan for this process's death, set by this process (`SharedPage::set_death_plan`) and read by the keeper
    /// only when this process died: the signal the command's group gets first (0: none, `SIGKILL` at once), and how
    /// long (ms) the job then has to end before it is killed.
    death_signal: AtomicU32,
    death_grace_ms: AtomicU32,
}

/// Why a keeper failed the spawn, beyond its errno (see [`KeeperFailure`]).
const WHY_USER: u32 = 1;
const WHY_PID_NAMESPACE: u32 = 2;

/// What a keeper that could not start the command says of it, beyond its errno.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeeperFailure {
    /// The command runs as another user (`Command::uid`: std switched users before the hooks), and the keeper, which
    /// switched with it, could not keep `CAP_DAC_OVERRIDE` to make the job's cgroup and start the command in it.
    User,
    /// A `pre_exec` hook that ran before the keeper's put the keeper's children in another PID namespace: a new one,
    /// and the keeper could not go back to its own (`setns` needs `CAP_SYS_ADMIN` over it: a hook that made a user
    /// namespace too); or, in reaper mode, an existing one (`setns`), whose orphans go to its own init.
    PidNamespace,
}

/// One anonymous page mapped `MAP_SHARED` before the spawn: the keeper (a fork) shares it with this process; the
/// command loses it at `exec`. Unmapped when dropped.
#[derive(Debug)]
pub(crate) struct SharedPage {
    /// The mapping's address (a `usize`, so that the value is `Send` and `Sync`: only atomics live there).
    addr: usize,
}

const PAGE: usize = 4096;

impl SharedPage {
    pub(crate) fn new() -> io::Result<SharedPage> {
        // SAFETY: a fresh anonymous mapping at an address of the kernel's choice; no existing memory is touched.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                PAGE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if addr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(SharedPage {
            addr: addr as usize,
        })
    }

    fn shared(&self) -> &Shared {
        // SAFETY: the page is mapped (zero-filled, page-aligned) for as long as `self` lives, and holds only a
        // `Shared`, whose atomics are valid for every bit pattern and may be shared with another process.
        unsafe { &*(self.addr as *const Shared) }
    }

    /// The command's pid, once the keeper made it (set before the spawn returns).
    pub(crate) fn command(&self) -> Option<u32> {
        Some(self.shared().command.load(Ordering::Acquire)).filter(|&pid| pid > 1)
    }

    /// The signal that stopped the command since the last call, if it stopped (the keeper's report, taken).
    pub(crate) fn take_stop(&self) -> Option<i32> {
        let signal = self.shared().stopped.swap(0, Ordering::AcqRel);
        i32::try_from(signal).ok().filter(|&s| s > 0)
    }

    /// Whether the keeper saw the command exit (and now waits for the verdict).
    pub(crate) fn command_exited(&self) -> bool {
        self.shared().exited.load(Ordering::Acquire) != 0
    }

    /// Reaper mode: while `on`, the keeper leaves the job's exited orphans unreaped (see `Shared::hold`); when
    /// turned off, keeper `keeper` (our unreaped child) is woken to reap them.
    pub(crate) fn hold_orphans(&self, keeper: u32, on: bool) {
        self.shared().hold.store(u32::from(on), Ordering::Release);
        if !on {
            super::wake_child(keeper);
        }
    }

    /// What the keeper said of its failure to start the command, beyond its errno.
    pub(crate) fn failure(&self) -> Option<KeeperFailure> {
        match self.shared().why.load(Ordering::Acquire) {
            WHY_USER => Some(KeeperFailure::User),
            WHY_PID_NAMESPACE => Some(KeeperFailure::PidNamespace),
            _ => None,
        }
    }

    /// Whether the keeper exited on its own (see `Shared::leaving`); `false` also while it runs.
    pub(crate) fn keeper_left(&self) -> bool {
        self.shared().leaving.load(Ordering::Acquire) != 0
    }

    /// What the keeper does when this process dies: `signal` to the command's group first (with `SIGCONT` after it
    /// unless it is a stop signal), then up to `grace` for the job to end, then `SIGKILL` to the whole job. A signal of
    /// 0 or `SIGKILL`, or no grace, means `SIGKILL` at once (the default). The keeper reads it only once this process
    /// died, so it may be set (or changed) at any time while the job runs.
    pub(crate) fn set_death_plan(&self, signal: i32, grace: std::time::Duration) {
        let shared = self.shared();
        // Rounded up to a whole millisecond: a grace, however short, is not "none".
        let millis = u32::try_from(grace.as_nanos().div_ceil(1_000_000)).unwrap_or(u32::MAX);
        shared.death_grace_ms.store(millis, Ordering::Release);
        shared
            .death_signal
            .store(u32::try_from(signal).unwrap_or(0), Ordering::Release);
    }

    /// The spawn returned: from now on the keeper waits for the verdict once the command exited.
    pub(crate) fn spawned(&self) {
        self.shared().spawned.store(1, Ordering::Release);
    }

    /// Tells keeper `keeper` (our unreaped child) what to do once the command exited: end the job (`kill`) or leave
    /// it; it acts, reaps the command and exits as the command did.
    pub(crate) fn give_verdict(&self, keeper: u32, kill: bool) {
        let verdict = if kill { VERDICT_KILL } else { VERDICT_KEEP };
        self.shared().verdict.store(verdict, Ordering::Release);
        super::wake_child(keeper);
    }
}

impl Drop for SharedPage {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, of that length; nothing refers to it once `self` is gone.
        unsafe { libc::munmap(self.addr as *mut libc::c_void, PAGE) };
    }
}

/// The keeper hook on a `Command`; dropping it disarms the hook (a later spawn of the same `Command` then runs as
/// without it).
#[derive(Debug)]
pub(crate) struct KeeperHook {
    armed: Arc<AtomicBool>,
}

impl Drop for KeeperHook {
    fn drop(&mut self) {
        self.armed.store(false, Ordering::SeqCst);
    }
}

impl KeeperHook {
    /// Disarms the hook and tells whether `spawn_error`, the error of a spawn made while it was armed, is the
    /// keeper's: it could not make the command's process (`Some`, that call's OS error), so the command did not run.
    pub(crate) fn keeper_error(self, spawn_error: &io::Error) -> Option<io::Error> {
        drop(self);
        let code = spawn_error.raw_os_error()?;
        (code > KEEPER_FAILED).then(|| io::Error::from_raw_os_error(code - KEEPER_FAILED))
    }
}

/// What the keeper needs, prepared before the fork (the hook allocates nothing). Held by value, not on the heap: the
/// keeper keeps a copy on its own stack, and sheds the rest of the caller's memory (see [`shed_memory`]).
#[derive(Clone, Copy)]
struct Plan {
    supervisor: libc::pid_t,
    /// This process's real user id: a keeper that runs as another one was switched by std (`Command::uid`).
    uid: libc::uid_t,
    /// The job's cgroup folder (NUL-terminated), which the keeper makes (so that no folder is left by a supervisor
    /// that dies before the keeper exists) and removes; `None` in reaper mode (the keeper is the job's child subreaper
    /// instead).
    folder: Option<[u8; PATH_MAX]>,
    page: usize,
    /// This system's page size.
    page_size: usize,
    /// The size of the static TLS blocks of this program and its libraries (the sum of their `PT_TLS` segments): how
    /// far from the thread pointer libc may keep a thread's data (its errno, its `rseq` area).
    tls_span: usize,
}

/// The longest path a system call takes, its NUL included.
const PATH_MAX: usize = libc::PATH_MAX as usize;

impl Plan {
    fn folder(&self) -> Option<&CStr> {
        self.folder
            .as_ref()
            .and_then(|path| CStr::from_bytes_until_nul(path).ok())
    }
}

/// A path as a `Plan` holds it; `ENAMETOOLONG` (as a system call would say) if it is too long, `EINVAL` if it holds
/// a NUL.
fn path_bytes(path: &Path) -> io::Result<[u8; PATH_MAX]> {
    let bytes = path.as_os_str().as_bytes();
    if bytes.contains(&0) {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    let mut held = [0; PATH_MAX];
    held.get_mut(..bytes.len())
        .filter(|_| bytes.len() < PATH_MAX)
        .ok_or_else(|| io::Error::from_raw_os_error(libc::ENAMETOOLONG))?
        .copy_from_slice(bytes);
    Ok(held)
}

/// The sum of the sizes of the `PT_TLS` segments of this program and the libraries it has loaded (each rounded up to
/// its alignment): at least the size of a thread's static TLS blocks.
fn static_tls_span() -> usize {
    extern "C" fn add(
        info: *mut libc::dl_phdr_info,
        _: libc::size_t,
        sum: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: dl_iterate_phdr passes a valid `info` whose `dlpi_phdr` points to `dlpi_phnum` program headers, and
        // our `sum` (a usize that lives across the call).
        unsafe {
            let info = &*info;
            let headers = std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum));
            for tls in headers.iter().filter(|h| h.p_type == libc::PT_TLS) {
                let size =
                    usize::try_from(tls.p_memsz.next_multiple_of(tls.p_align.max(1))).unwrap_or(0);
                *sum.cast::<usize>() = (*sum.cast::<usize>()).saturating_add(size);
            }
        }
        0
    }
    let mut sum = 0usize;
    // SAFETY: `add` matches the callback's signature and writes only to `sum`, which lives across the call.
    unsafe { libc::dl_iterate_phdr(Some(add), (&raw mut sum).cast()) };
    sum
}

/// Makes every spawn of `command`, while the returned hook lives, go through a keeper (see the module docs). With a
/// `folder` (cgroup mode) the keeper makes that cgroup (it must not exist), starts the command in it, ends it with
/// `cgroup.kill` and removes it. Without one (reaper mode) the keeper makes itself a child subreaper
/// (`PR_SET_CHILD_SUBREAPER`) before it starts the command: every orphan of the job is re-parented to it, and it
/// ends the job by killing its children and reaping them until only the command is left. `page` is the page the
/// keeper shares with this process; it must outlive the spawn.
///
/// This adds a `pre_exec` hook, so std forks and execs instead of using `posix_spawn`.
pub(crate) fn arm_keeper(
    command: &mut Command,
    folder: Option<&Path>,
    page: &SharedPage,
) -> io::Result<KeeperHook> {
    let plan = Plan {
        supervisor: calls::getpid(),
        uid: calls::getuid(),
        folder: folder.map(path_bytes).transpose()?,
        page: page.addr,
        // Never 0 (`kept_apart` divides by it).
        page_size: calls::page_size().filter(|&size| size > 0).unwrap_or(PAGE),
        tls_span: static_tls_span(),
    };
    let armed = Arc::new(AtomicBool::new(true));
    let hook = Arc::clone(&armed);
    // SAFETY: `pre_exec` asks that the hook be async-signal-safe: std runs it in the child it forked (with libc's
    // `fork`, so after any `pthread_atfork` child handlers of this program's libraries), a copy of this process of
    // which only the forking thread goes on, where a lock another thread held stays held. The hook (`start`, then
    // `kept` and `keep` in the keeper) makes system calls only through `calls` (each async-signal-safe, see there) and
    // the few special blocks, reads only memory the fork copied (`plan`, copied into the closure and then onto the
    // keeper's own stack) and the shared page (atomics only), and allocates nothing, frees nothing, takes no lock, uses
    // no Rust thread-local; no panic can be reached in it (see the module docs, "No panic after the fork"). While
    // armed, the page is mapped (the caller keeps it past the spawn).
    //
    // The hook returns in two cases only, as std expects: `Ok` in the command's process (`L`: std applies the rest of
    // the `Command` and execs), or an error in the forked child when the command's process could not be made (std
    // passes its OS error code to this process through its close-on-exec error pipe and reaps the child; the code is
    // `KEEPER_FAILED` plus the errno, see `KeeperHook::keeper_error`). In the keeper (`M`), once `L` exists, it never
    // returns: `M` goes on in `kept` (on a stack of its own on x86-64) and ends in `_exit`, without unwinding: std's
    // frames above the hook, and what they own (the `Command`, this closure, the error pipe's ends, which `M` closes
    // by number), are never returned to and never dropped there, as after any call that does not return. Nothing in
    // this process depends on `M` returning: std's parent side only reads the pipe (end of file once `L` has exec'd
    // and `M` closed its copy) and, on an error, waits for `M`'s exit.
    unsafe {
        command.pre_exec(move || {
            if !hook.load(Ordering::SeqCst) {
                return Ok(());
            }
            start(&plan)
        })
    };
    Ok(KeeperHook { armed })
}

fn failed(errno: i32) -> io::Error {
    // An errno is below 4096: no overflow (saturating all the same, so that nothing here can panic).
    io::Error::from_raw_os_error(KEEPER_FAILED.saturating_add(errno))
}

fn shared(plan: &Plan) -> &Shared {
    // SAFETY: the page mapped by `SharedPage::new` (`MAP_SHARED`, page-aligned, zero-filled), which the caller keeps
    // mapped past the spawn; a fork keeps the mapping, and `shed_memory` never unmaps it (it is not private); the
    // command's process loses it at its `exec`. It holds only a `Shared`, whose atomics are valid for every bit
    // pattern and may be shared with another process: each side only loads, stores and swaps them.
    unsafe { &*(plan.page as *const Shared) }
}

/// In the forked child (the keeper-to-be): returns `Ok` in the command's process, an error if the command's
/// process could not be made, and never in the keeper.
fn start(plan: &Plan) -> io::Result<()> {
    let all = calls::full_set();
    let mut old = calls::full_set();
    calls::set_mask(libc::SIG_SETMASK, &all, Some(&mut old));
    calls::prctl(libc::PR_SET_PDEATHSIG, libc::SIGCONT as libc::c_ulong).map_err(failed)?;
    // The supervisor died before the flag was set: no one waits.
    if calls::getppid() != plan.supervisor {
        return Err(failed(libc::ESRCH));
    }
    // Named before the command exists (the command's process inherits the name only until its `exec`), so that no
    // process of the command ever sees its parent under the supervisor's name, and a kill by the supervisor's name
    // never finds the keeper.
    calls::set_name(KEEPER_NAME);
    // A hook before ours unshared the PID namespace: the keeper's children would be born in it (its first, PID 1,
    // ending it at once). The keeper goes back to its own, and the command unshares it again for its own children,
    // as it would have without a keeper. A hook that joined an existing namespace (`setns`) is left as it is: the
    // command is born in it, which a cgroup holds, but whose orphans go to that namespace's init, not to a reaper.
    let renew_pid_namespace = match own_pid_namespace() {
        Ok(Namespace::Own) => false,
        Ok(Namespace::Renew) => true,
        Ok(Namespace::Joined) if plan.folder.is_some() => false,
        Ok(Namespace::Joined) => {
            shared(plan).why.store(WHY_PID_NAMESPACE, Ordering::Release);
            return Err(failed(libc::EINVAL));
        }
        Err(e) => {
            shared(plan).why.store(WHY_PID_NAMESPACE, Ordering::Release);
            return Err(failed(e));
        }
    };
    // std switched users before the hooks (`Command::uid`): the keeper keeps only what it needs of the rights this
    // process lent it across the switch (`with_kept_caps`): `CAP_DAC_OVERRIDE` to make the job's cgroup in this
    // process's and start the command in it; nothing in reaper mode.
    let switched = calls::getuid() != plan.uid;
    if switched {
        let keep = if plan.folder.is_some() {
            1 << CAP_DAC_OVERRIDE
        } else {
            0
        };
        if let Err(e) = limit_caps(keep) {
            shared(plan).why.store(WHY_USER, Ordering::Release);
            return Err(failed(e));
        }
    }
    let folder_fd = match plan.folder() {
        Some(folder) => make_folder(folder)?,
        None => become_reaper()?,
    };
    let keeper = calls::getpid();
    match make_command(plan, folder_fd) {
        Err(e) => {
            remove_folder(plan, folder_fd);
            return Err(failed(e));
        }
        // Made by the legacy `clone`: into the folder, or the command never runs (the folder is left to the keeper,
        // which removes it once this process exited).
        Ok(Made::Outside) => join_folder(folder_fd).map_err(failed)?,
        Ok(Made::Inside) => {}
    }
    // The command's process: none of the rights lent to the keeper, and its own children in a new PID namespace if
    // the caller's hook asked for one.
    if renew_pid_namespace {
        calls::unshare(libc::CLONE_NEWPID).map_err(failed)?;
    }
    if switched {
        limit_caps(0).map_err(failed)?;
        let _ = calls::prctl(libc::PR_SET_KEEPCAPS, 0);
    }
    // The command: it dies with its keeper (a job that killed its keeper, `kill -9 $PPID`, or an OOM kill), so that a
    // wait, which sleeps until the command exits, wakes and ends the job at once. Then the caller's mask back, and std
    // applies the rest of the `Command` and execs (an `exec` of a set-user-ID program clears the flag).
    // A parent in an outer PID namespace (a hook joined another one) reads as 0; one that died before the flag was set
    // has handed the command to another parent, which it sees.
    let orphaned = calls::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong).is_err()
        || ![0, keeper].contains(&calls::getppid());
    if orphaned {
        return Err(failed(libc::ESRCH));
    }
    calls::set_mask(libc::SIG_SETMASK, &old, None);
    Ok(())
}

/// The capability that lets the keeper of a command run as another user make the job's cgroup in this process's and
/// start the command in it (both need write access to root's `cgroup.procs`).
const CAP_DAC_OVERRIDE: u32 = 1;
/// `_LINUX_CAPABILITY_VERSION_3`: two 32-bit words per set.
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;
/// `PR_CAP_AMBIENT` and its `PR_CAP_AMBIENT_CLEAR_ALL` (Linux 4.3).
const PR_CAP_AMBIENT: libc::c_int = 47;
const PR_CAP_AMBIENT_CLEAR_ALL: libc::c_ulong = 4;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// Limits this process's capabilities to `keep` (bits of the first 32), permitted and effective, none inheritable
/// or ambient; the errno (`EPERM`) if it does not have all of `keep` permitted.
fn limit_caps(keep: u32) -> Result<(), i32> {
    let mut header = CapHeader {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    calls::capget(&mut header, &mut data)?;
    let [first, _] = data;
    if first.permitted & keep != keep {
        return Err(libc::EPERM);
    }
    let data = [
        CapData {
            effective: keep,
            permitted: keep,
            inheritable: 0,
        },
        CapData::default(),
    ];
    // Lowering one's own capabilities is always allowed.
    calls::capset(&mut header, &data)?;
    let _ = calls::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL);
    Ok(())
}

/// Runs `f` (a spawn through the keeper hook) with this thread's `PR_SET_KEEPCAPS` on, where this process's real user
/// is root and `on` (not for a set-user-ID program, whose keeper would otherwise keep root's rights unnoticed: it
/// compares real user ids): a keeper that std switches to another user (`Command::uid`) then keeps the permitted capabilities it
/// needs to make the job's cgroup (it keeps only those, and the command none: see `start`). The flag is this
/// thread's, read by the kernel only when a user id changes. It is left exactly as the caller had it: set here only
/// where it was off (and cleared again before this returns), left on where this thread had it on already (the
/// keeper keeps its capabilities then too), and never touched otherwise (not `on`, not root). Where it cannot be set
/// (`SECBIT_KEEP_CAPS_LOCKED`) the keeper fails as another user, saying why.
pub(crate) fn with_kept_caps<T>(on: bool, f: impl FnOnce() -> T) -> T {
    /// Clears the flag that `with_kept_caps` set; made only once it was set (a `Restore` dropped clears the flag).
    struct Restore;
    impl Drop for Restore {
        fn drop(&mut self) {
            let _ = calls::prctl(libc::PR_SET_KEEPCAPS, 0);
        }
    }
    let set = on
        && calls::getuid() == 0
        && calls::prctl(libc::PR_GET_KEEPCAPS, 0) == Ok(0)
        && calls::prctl(libc::PR_SET_KEEPCAPS, 1) == Ok(0);
    // Not `set.then_some(Restore)`: that makes a `Restore` whatever `set` is, and drops it at once when `set` is false,
    // clearing a flag the caller had on.
    let _restore = if set { Some(Restore) } else { None };
    f()
}

/// Where this process's children would be born, as a hook before the keeper's left it.
enum Namespace {
    /// In this process's own PID namespace (or `/proc` does not tell: no `/proc`, Linux before 4.12).
    Own,
    /// In a new one that has no process yet (`unshare(CLONE_NEWPID)`): this process went back to its own (`setns`),
    /// and the command's process is to unshare it again.
    Renew,
    /// In an existing one (`setns` to another namespace), left as it is.
    Joined,
}

/// Where this process's children would be born (see [`Namespace`]), going back to its own PID namespace if a hook
/// unshared it; the errno if it cannot.
fn own_pid_namespace() -> Result<Namespace, i32> {
    let Ok(own) = calls::stat(c"/proc/self/ns/pid") else {
        return Ok(Namespace::Own);
    };
    match calls::stat(c"/proc/self/ns/pid_for_children") {
        Ok(children) if children != own => return Ok(Namespace::Joined),
        // The kernel names no namespace for children before its PID 1 exists: one made by `unshare` just now (the
        // own namespace always has one), where the link itself exists (Linux 4.12+).
        Err(libc::ENOENT) => {
            if !calls::lstat_ok(c"/proc/self/ns/pid_for_children") {
                return Ok(Namespace::Own);
            }
        }
        _ => return Ok(Namespace::Own),
    }
    let fd = calls::open(c"/proc/self/ns/pid", libc::O_RDONLY | libc::O_CLOEXEC)?;
    let back = calls::setns(fd, libc::CLONE_NEWPID);
    calls::close(fd);
    back.map(|()| Namespace::Renew)
}

/// What the keeper needs once the command's process exists.
#[repr(C)]
struct Ctx {
    plan: Plan,
    folder_fd: RawFd,
    /// The helper whose group the keeper joins (see `make_group`), made before the command: once the command exists,
    /// nothing can fail.
    group: libc::pid_t,
}

/// The keeper, once the command's process `command` exists (it started in the keeper's group, `G`): leaves `G` for
/// the helper's group, closes every descriptor but the folder's, and keeps the job (which reaps the helper once it
/// exited). Never returns.
fn kept(ctx: &Ctx, command: libc::pid_t) -> ! {
    let plan = &ctx.plan;
    shared(plan)
        .command
        .store(command.unsigned_abs(), Ordering::Release);
    // First of all (std's error pipe among them): the spawn returns once the command's process, which has a copy of
    // each, has exec'd and closed its own.
    close_all_but(ctx.folder_fd);
    let mut joined = calls::setpgid(0, ctx.group);
    if joined.is_err() {
        // The helper's group was not made yet (our own `setpgid` of it failed): once the helper exited (its zombie
        // keeps the group until reaped), it has made it.
        let _ = calls::waitid(
            libc::P_PID,
            ctx.group.unsigned_abs(),
            libc::WEXITED | libc::WNOWAIT,
        );
        joined = calls::setpgid(0, ctx.group);
    }
    // Reaped once it exited (now, or in `keep`): the keeper does not wait for it.
    let helper = if reaped(ctx.group) { 0 } else { ctx.group };
    if joined.is_err() {
        // Cannot happen (the helper's group is in our session, kept by the helper or its zombie until reaped). The
        // command must not run in a group with its keeper: it ends, and the keeper exits as it did (killed).
        end_job(plan, ctx.folder_fd, calls::getpid(), REMOVE_TRIES);
        exit_as(reap(command));
    }
    keep(plan, ctx.folder_fd, command, helper)
}

/// Below this much of the caller's memory (anonymous and resident in the keeper, as the fork copied it), shedding is
/// not worth reading `/proc/self/maps` (up to about 0.1 ms per spawn, measured under load).
const SHED_FROM_RESIDENT: usize = 8 << 20;

/// Whether the keeper holds at least [`SHED_FROM_RESIDENT`] bytes of anonymous memory (`/proc/self/statm`: resident
/// minus shared pages; swapped-out pages are not counted), and has no shadow stack (x86-64 CET, arm64 GCS: an anonymous
/// writable mapping that the CPU uses at every return, which `shed_memory` cannot tell apart).
fn worth_shedding(page_size: usize) -> bool {
    if calls::shadow_stack() {
        return false;
    }
    let mut buf = [0u8; 128];
    let Some(text) = read_start(libc::AT_FDCWD, c"/proc/self/statm", &mut buf) else {
        return false;
    };
    let mut pages = text
        .split(u8::is_ascii_whitespace)
        .map(|field| std::str::from_utf8(field).ok()?.parse::<usize>().ok());
    let (_size, Some(Some(resident)), Some(Some(shared))) =
        (pages.next(), pages.next(), pages.next())
    else {
        return false;
    };
    resident.saturating_sub(shared).saturating_mul(page_size) >= SHED_FROM_RESIDENT
}

/// How long after its start the keeper sheds the caller's memory (if the command still runs): a command that ends
/// sooner costs no read of `/proc`, and leaves its caller's pages copied for at most that long.
const SHED_AFTER_MS: u16 = 10;

/// Mappings smaller than this are never shed.
const SHED_AT_LEAST: usize = 256 * 1024;
/// How much is kept on each side of an address the keeper uses, in a mapping it sheds: its stack (its deepest frame
/// is `remove_below`'s, about 4.5 KiB unoptimised, however deep the folders, below `keep`'s 8.5 KiB), and, with the
/// program's static TLS span added, its thread's control block and its errno.
const KEPT_AROUND: usize = 256 * 1024;

/// Unmaps the large private, writable, anonymous mappings that the fork copied from the supervisor (its heap, its large
/// allocations, its threads' stacks), but for the pages within a distance of each address in `keep` (`(address,
/// distance)`: this stack, this thread's control block and errno, whose distance covers the program's static TLS, where
/// libc may keep the thread's `rseq` area, which the kernel writes). One that begins where a file's data (a private,
/// writable mapping of a file) ends is kept whole: it holds that program's or library's `.bss` (adjacent anonymous
/// mappings are merged into one), such as the data of the keeper's libc, which a static build places anywhere in the
/// program's. Until then the keeper shares that memory with the supervisor copy-on-write: each page the supervisor
/// writes while the job runs is copied, and the keeper holds the old one (a supervisor that rewrote a 512 MiB heap took
/// 0.4-2 s instead of 3 ms, and its keeper held 512 MiB). The keeper uses nothing of it: its plan is on its own stack,
/// it allocates nothing, uses no Rust thread-local, and calls libc through bindings resolved at load (Rust links with
/// `-z now`). Best effort: without `/proc`, the keeper keeps the copy; a line of `/proc/self/maps` longer than the
/// buffer ends the unmapping.
fn shed_memory(keep: [(usize, usize); 3], page_size: usize) {
    let Ok(maps) = calls::open(c"/proc/self/maps", libc::O_RDONLY | libc::O_CLOEXEC) else {
        return;
    };
    // A line is at most a path (PATH_MAX) and its fields: two always fit.
    let mut buf = [0u8; 2 * PATH_MAX];
    // How much of `buf` holds what was read and not yet parsed: at most its length (a read gets no more than the
    // free part), so every range below is inside it (`get` all the same: nothing here can panic).
    let mut held = 0;
    // Where the last line's mapping ended, if it was a file's data.
    let mut data_end = None;
    while let Some(free) = buf.get_mut(held..) {
        let Ok(got @ 1..) = calls::read(maps, free) else {
            break;
        };
        held = held.saturating_add(got).min(buf.len());
        let text = buf.get(..held).unwrap_or_default();
        // The complete lines: each but the last (partial) one ends with a newline.
        let mut parsed = 0;
        for line in text.split_inclusive(|&b| b == b'\n') {
            let Some(line) = line.strip_suffix(b"\n") else {
                break;
            };
            parsed += line.len() + 1;
            match mapping(line) {
                Some(Mapping::Sheddable(from, to)) => {
                    if data_end != Some(from) {
                        for (from, to) in kept_apart(from, to, keep, page_size) {
                            // SAFETY: the keeper's own address space. `from..to` is part of a private, writable,
                            // anonymous mapping (never the page shared with the supervisor: `MAP_SHARED`; nor a
                            // program's `.bss`: one that follows a file's data is skipped above), less the pages
                            // around this stack, this thread's control block and its errno (`keep`): memory the fork
                            // copied from the supervisor (its heap, its threads' stacks, its large allocations).
                            // Nothing this process runs from here on uses it: the keeper's plan is a copy on this
                            // stack (`Ctx`); it allocates nothing and frees nothing (the allocator's memory may go);
                            // std's frames above the `pre_exec` hook, and what they own, are never returned to (the
                            // hook never returns in the keeper, which ends in `_exit`: no destructor runs); the group
                            // helper, which ran on memory shared with us, was reaped before (`keep`), and on x86-64
                            // the command's process left our memory at its `exec` (`CLONE_VFORK`). The risk, if that
                            // argument were wrong, is bounded: the keeper is a process of its own, so a fault kills
                            // the keeper alone (then the command, by its `PR_SET_PDEATHSIG`, and the supervisor's
                            // wait sees its keeper killed and ends the job); the supervisor's memory is never
                            // touched, and the one page shared with it is never unmapped.
                            unsafe { libc::munmap(from as *mut libc::c_void, to - from) };
                        }
                    }
                    data_end = None;
                }
                Some(Mapping::Data(to)) => data_end = Some(to),
                _ => data_end = None,
            }
        }
        // `parsed` <= `held` (the lines are parts of `text`): the range is inside `buf`.
        if parsed > held {
            break;
        }
        buf.copy_within(parsed..held, 0);
        held -= parsed;
        if held == buf.len() {
            break;
        }
    }
    calls::close(maps);
}

/// The parts of `from..to` that lie farther than the given distance from each address in `keep` (`(address,
/// distance)`), in whole pages: at most four ranges, each non-empty (`from < to`), in order.
fn kept_apart(
    from: usize,
    to: usize,
    mut keep: [(usize, usize); 3],
    page_size: usize,
) -> impl Iterator<Item = (usize, usize)> {
    // Never 0 (see `Plan::page_size`); saturating arithmetic: nothing here can panic, and no range wraps.
    let page = page_size.max(1);
    keep.sort_unstable();
    let mut ranges = [(0, 0); 4];
    let mut next = from;
    for ((at, around), range) in keep.into_iter().zip(ranges.iter_mut()) {
        let kept_from = at.saturating_sub(around) / page * page;
        let kept_to = at
            .saturating_add(around)
            .div_ceil(page)
            .saturating_mul(page);
        *range = (next, kept_from.min(to));
        next = next.max(kept_to);
    }
    if let Some(last) = ranges.last_mut() {
        *last = (next, to);
    }
    ranges.into_iter().filter(|&(from, to)| from < to)
}

/// A line of `/proc/self/maps`, as `shed_memory` sees it.
enum Mapping {
    /// A private, writable, anonymous mapping of at least [`SHED_AT_LEAST`] bytes: its range.
    Sheddable(usize, usize),
    /// A private, writable mapping of a file (a program's or library's data, which its `.bss` follows): where it
    /// ends.
    Data(usize),
    Other,
}

/// Reads a line of `/proc/self/maps`: `FROM-TO PERMS OFFSET DEVICE INODE [NAME]`.
fn mapping(line: &[u8]) -> Option<Mapping> {
    let hex = |digits: &[u8]| usize::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok();
    let mut fields = line.split(|&b| b == b' ').filter(|field| !field.is_empty());
    let (range, perms, _offset, _device, inode) = (
        fields.next()?,
        fields.next()?,
        fields.next()?,
        fields.next()?,
        fields.next()?,
    );
    let dash = range.iter().position(|&b| b == b'-')?;
    let (from, to) = (hex(range.get(..dash)?)?, hex(range.get(dash + 1..)?)?);
    let private_writable = perms.get(1) == Some(&b'w') && perms.get(3) == Some(&b'p');
    Some(if !private_writable {
        Mapping::Other
    } else if inode != b"0" {
        Mapping::Data(to)
    } else if to.saturating_sub(from) >= SHED_AT_LEAST {
        Mapping::Sheddable(from, to)
    } else {
        Mapping::Other
    })
}

/// How the command's process was made (in it, as [`make_command`] returns).
enum Made {
    /// By `clone3`, in the job's cgroup if there is one.
    Inside,
    /// By the legacy `clone` (`clone3` refused): outside the job's cgroup, if there is one (see [`join_folder`]).
    Outside,
}

/// Makes the command's process in the job's cgroup (`CLONE_INTO_CGROUP`) as this process's child: returns `Ok` in
/// it, the errno in this process if it could not be made; this process goes on in [`kept`] (never returns). Where
/// `clone3` is refused (see [`refused`]) the legacy `clone` makes it, outside the cgroup ([`Made::Outside`]).
///
/// On x86-64 the child shares this process's memory and this process sleeps until it execs or exits
/// (`CLONE_VM | CLONE_VFORK`, as `posix_spawn` does): no copy of the address space is made, and none is torn down at
/// the command's `exec`. The child returns on this stack, into std's code, so this process goes on on a stack of its
/// own. Elsewhere the child is a copy (as a fork).
#[cfg(target_arch = "x86_64")]
fn make_command(plan: &Plan, folder_fd: RawFd) -> Result<Made, i32> {
    /// The keeper's stack from the command's start on (it runs `keep`, and `remove_below`'s one frame of about 4.5
    /// KiB), above the group helper's stack and one guard page; mapped lazily, never unmapped (the keeper ends in
    /// `_exit`).
    const STACK: usize = 256 * 1024;
    const HELPER_STACK: usize = 4 * PAGE;
    extern "C" fn entry(pid: libc::c_long, ctx: *const Ctx) -> ! {
        // SAFETY: `ctx` points to the copy at the top of the keeper's own stack (below), written before the clone,
        // which lives as long as the keeper (never unmapped: `shed_memory` keeps the pages near this stack) and which
        // no one else writes (the command's process, while it shared our memory, ran on the old stack and had no
        // pointer to this one).
        let ctx = unsafe { &*ctx };
        kept(ctx, libc::pid_t::try_from(pid).unwrap_or(0))
    }
    // The mapping's addresses cannot overflow (it lies inside the address space).
    let base = calls::map_stack(STACK + HELPER_STACK + PAGE, PAGE)?;
    // The helper runs beside us (no CLONE_VFORK: it makes its group while the command starts), on a stack of its own.
    let group = make_group(Some(base + PAGE + HELPER_STACK))?;
    // Its group made from here at once (a parent may set a child's group until the child execs, and the helper never
    // does): the keeper joins it without waiting for the helper to run. Whichever call comes second does nothing.
    let _ = calls::setpgid(group, group);
    let end = base + STACK + HELPER_STACK + PAGE;
    // The context at the top, the stack below it (16-byte aligned, as the ABI wants at a call).
    let at = (end - std::mem::size_of::<Ctx>()) & !15;
    let copy = at as *mut Ctx;
    // SAFETY: `copy` is inside the mapping (`Ctx` is far smaller than the keeper's stack), aligned (16 bytes, more
    // than `Ctx` needs), and nothing else uses that memory (the helper runs at its bottom, below `STACK`).
    unsafe {
        copy.write(Ctx {
            plan: *plan,
            folder_fd,
            group,
        });
    }
    let top = at & !15;
    let shared_vm = (libc::CLONE_VM | libc::CLONE_VFORK) as u64;
    let args = CloneArgs {
        flags: into_cgroup(folder_fd) | shared_vm,
        exit_signal: libc::SIGCHLD as u64,
        cgroup: u64::try_from(folder_fd).unwrap_or(0),
        ..CloneArgs::default()
    };
    let keeper: extern "C" fn(libc::c_long, *const Ctx) -> ! = entry;
    // SAFETY: `args` is a valid clone_args of the size passed, which lives across the call; `top`, `copy` and `keeper`
    // are the keeper's stack, its context there and its entry, as `clone_here` wants.
    let mut ret = unsafe {
        clone_here(
            SYS_CLONE3,
            (&raw const args) as u64,
            std::mem::size_of::<CloneArgs>() as u64,
            top,
            copy,
            keeper,
        )
    };
    let legacy = refused(ret);
    if legacy {
        // `clone3` refused (a container's seccomp profile): the legacy `clone`, with the same sharing and no new
        // stack (`newsp` 0: the child goes on with this stack pointer, as after `vfork`).
        // SAFETY: clone's flags (its exit signal in the low byte) and a null stack, as `clone_here` wants; the same
        // stack, context and entry as above (the refused call made no process).
        ret = unsafe {
            clone_here(
                libc::SYS_clone,
                shared_vm | libc::SIGCHLD as u64,
                0,
                top,
                copy,
                keeper,
            )
        };
    }
    if ret < 0 {
        let _ = calls::waitpid(group, 0);
        // SAFETY: the mapping made above, of that length: unused once the helper, which ran on it, exited (reaped
        // just now), as no process was made to run on the rest.
        unsafe { libc::munmap(base as *mut libc::c_void, STACK + HELPER_STACK + PAGE) };
        return Err(i32::try_from(ret.unsigned_abs()).unwrap_or(libc::EIO));
    }
    // The command's process (the keeper went on in `entry`).
    Ok(if legacy { Made::Outside } else { Made::Inside })
}

/// Makes the command's process with system call `nr` (`clone3` or `clone`) and arguments `first` and `second` (the
/// rest 0), without a stack of its own: returns the call's result (a negative errno) in this process if it failed,
/// 0 in the child, which shares this stack; this process, once the child exists, switches to the stack below `top`
/// (where `ctx`, the keeper's context, is) and runs `keeper` with the child's pid, never to come back.
///
/// # Safety
///
/// The child must share this memory and this process must sleep until it execs or exits (`CLONE_VM | CLONE_VFORK`);
/// the call must give the child no stack of its own (`clone3` with `stack` 0, or `clone` with `newsp` 0); `top` must
/// be the 16-byte aligned top of a stack that nothing else uses, `ctx` a context that lives as long as the keeper.
#[cfg(target_arch = "x86_64")]
unsafe fn clone_here(
    nr: libc::c_long,
    first: u64,
    second: u64,
    top: usize,
    ctx: *const Ctx,
    keeper: extern "C" fn(libc::c_long, *const Ctx) -> !,
) -> libc::c_long {
    let ret: libc::c_long;
    // SAFETY: the caller's contract. The whole argument, since no other comment holds it:
    //
    // - Two paths leave the `syscall`. The child (rax 0) and a failed call (rax negative, no process made) jump to
    //   `2:` and leave the block normally, with `ret` in rax, every other register as it was but rcx and r11 (which
    //   `syscall` clobbers, declared), and rsp unchanged: to the compiler, an ordinary end of the block. Only this
    //   process, once the child exists (rax positive), takes the other path, which never leaves the block: it loads
    //   rsp with `top`, calls `keeper` (pid in rdi, `ctx` in rsi, as the C ABI wants) and never returns (`ud2` traps
    //   if it did). `top` is 16-byte aligned, so the call is made with rsp aligned as the ABI wants.
    // - The child shares this memory (CLONE_VM) and has no stack of its own: it goes on with this stack pointer,
    //   returns 0 through the end of this function, `make_command`, `start` and the hook into std, and runs std's
    //   code on this stack until its `exec`. This process sleeps meanwhile (CLONE_VFORK: the kernel wakes it only
    //   when the child has exec'd or exited, and so left this address space), so the two never run on this memory at
    //   the same time. Once awake, this process never comes back to this stack, whose frames the child overwrote: it
    //   runs on the stack at `top` and reads only `ctx` (written there before the call, out of the child's reach),
    //   the shared page and its own new frames. The child also shares this thread's TLS (no CLONE_SETTLS: its errno
    //   is ours), which this process reads only after its own calls, once the child is gone.
    // - The compiler's view: the block is not `noreturn` (the child and an error do return), and it may use the stack
    //   (no `nostack`: no red zone is live across it). The registers the child returns with are those the compiler
    //   expects after the block, since the kernel copies them all to the child.
    // - The calls' arguments: `clone3` reads two (rdi: its clone_args, rsi: their size) and ignores the rest; `clone`
    //   reads five (rdi: flags, rsi: the new stack, rdx and r10: where to write the thread ids, r8: the TLS), all 0
    //   but the flags, so it writes no id and sets no TLS; neither is given a stack for the child (the contract).
    unsafe {
        std::arch::asm!(
            "syscall",
            "test rax, rax",
            "jle 2f",
            "mov rsp, {top}",
            "mov rdi, rax",
            "mov rsi, {ctx}",
            "call {keeper}",
            "ud2",
            "2:",
            top = in(reg) top,
            ctx = in(reg) ctx,
            keeper = in(reg) keeper,
            inlateout("rax") nr => ret,
            in("rdi") first,
            in("rsi") second,
            in("rdx") 0u64,
            in("r10") 0u64,
            in("r8") 0u64,
            out("rcx") _,
            out("r11") _,
        );
    }
    ret
}

#[cfg(not(target_arch = "x86_64"))]
fn make_command(plan: &Plan, folder_fd: RawFd) -> Result<Made, i32> {
    let ctx = Ctx {
        plan: *plan,
        folder_fd,
        group: make_group(None)?,
    };
    // Without CLONE_VM: the child is a copy of this process, as after a fork.
    let mut pid = calls::clone3_fork(
        into_cgroup(folder_fd),
        libc::SIGCHLD as u64,
        u64::try_from(folder_fd).unwrap_or(0),
    );
    let legacy = matches!(pid, Err(e) if refused(-libc::c_long::from(e)));
    if legacy {
        // `clone3` refused (a container's seccomp profile): the legacy `clone`, as a fork.
        pid = calls::clone_fork(libc::SIGCHLD as libc::c_ulong);
    }
    match pid {
        Ok(0) if legacy => Ok(Made::Outside),
        Ok(0) => Ok(Made::Inside),
        Err(e) => {
            let _ = calls::waitpid(ctx.group, 0);
            Err(e)
        }
        Ok(pid) => kept(&ctx, libc::pid_t::try_from(pid).unwrap_or(0)),
    }
}

/// Whether `ret`, a raw `clone3`'s result, says that the call itself was refused (`ENOSYS`: the answer of container
/// runtimes' default seccomp profiles, and of kernels before 5.3; `EPERM`: that of older runtimes' profiles): the
/// command's process is then made with the legacy `clone`, and, in cgroup mode, moves itself into the folder.
fn refused(ret: libc::c_long) -> bool {
    ret == -libc::c_long::from(libc::ENOSYS) || ret == -libc::c_long::from(libc::EPERM)
}

/// In the command's process made by the legacy `clone` (no `CLONE_INTO_CGROUP`), before it returns from the hook: in
/// cgroup mode (a folder descriptor), it moves itself into the job's folder (`0` written to its `cgroup.procs`), so
/// that it runs no instruction of the command outside it. A migration: it waits for an RCU grace period (see the
/// module docs). The errno if that fails: the command must then never run (the spawn fails as for a refused
/// `clone3`, and the keeper, which sees it exit before the spawn returned, removes the folder).
fn join_folder(folder_fd: RawFd) -> Result<(), i32> {
    if folder_fd < 0 {
        return Ok(());
    }
    let procs = calls::openat(folder_fd, c"cgroup.procs", libc::O_WRONLY | libc::O_CLOEXEC)?;
    let moved = calls::write(procs, b"0");
    calls::close(procs);
    match moved {
        Ok(1) => Ok(()),
        // A short write sets no errno: the one left by the last call that failed, as before.
        Ok(_) => Err(errno()),
        Err(e) => Err(e),
    }
}

/// `clone3`'s flag for the command's process: `CLONE_INTO_CGROUP` with a folder (cgroup mode), none without.
fn into_cgroup(folder_fd: RawFd) -> u64 {
    if folder_fd >= 0 {
        CLONE_INTO_CGROUP
    } else {
        0
    }
}

/// Reaper mode: makes this process (the keeper) a child subreaper; -1, the folder descriptor it has not.
fn become_reaper() -> io::Result<RawFd> {
    calls::prctl(libc::PR_SET_CHILD_SUBREAPER, 1).map_err(failed)?;
    Ok(-1)
}

/// Makes the job's cgroup folder and opens it (`O_DIRECTORY`); fails (and removes it) where it has no
/// `cgroup.kill` (before Linux 5.14).
fn make_folder(folder: &CStr) -> io::Result<RawFd> {
    calls::mkdir(folder, 0o755).map_err(failed)?;
    let opened = calls::open(folder, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC)
        .and_then(
            |fd| match calls::faccessat(fd, c"cgroup.kill", libc::F_OK) {
                Ok(()) => Ok(fd),
                Err(e) => {
                    calls::close(fd);
                    Err(e)
                }
            },
        );
    if opened.is_err() {
        let _ = calls::rmdir(folder);
    }
    opened.map_err(failed)
}

/// Closes `fd` (if one) and removes the (empty) folder (if one).
fn remove_folder(plan: &Plan, fd: RawFd) {
    if fd >= 0 {
        calls::close(fd);
    }
    if let Some(folder) = plan.folder() {
        let _ = calls::rmdir(folder);
    }
}

/// The group helper's whole life: a group of its own (0), or -1 (its exit status then 255; cannot happen: a child
/// that is no session leader may always make its own group).
extern "C" fn own_group(_: *mut libc::c_void) -> libc::c_int {
    calls::setpgid(0, 0).map_or(-1, |()| 0)
}

/// A group for this process (the leader of the command's group-to-be) to move to once the command exists: a child
/// made with `CLONE_VM` (no copy of the address space) makes a new group and exits; its zombie, until reaped, keeps the
/// group (its id is the child's pid). On `stack` (the top of a stack for it that outlives it) it runs beside this
/// process; without one, on a stack here while this process waits (`CLONE_VFORK`).
fn make_group(stack: Option<usize>) -> Result<libc::pid_t, i32> {
    let mut own = [0u64; 512];
    let (top, flags) = match stack {
        Some(top) => (top as *mut libc::c_void, libc::CLONE_VM | libc::SIGCHLD),
        // One past the end of `own`, which outlives the child (CLONE_VFORK suspends us until it exits).
        None => (
            own.as_mut_ptr_range().end.cast(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
        ),
    };
    // SAFETY: the helper shares this process's memory (CLONE_VM) and, since it is given no TLS of its own (no
    // CLONE_SETTLS), its thread pointer, hence its errno; the kernel gives it no `rseq` area (cleared for a CLONE_VM
    // child). It runs `own_group` on the stack below `top` (libc's wrapper aligns it; the function reads no
    // argument), which it uses alone: on x86-64 the bottom of the keeper's new mapping, below the keeper's stack and
    // above a guard page, untouched by anyone else, and never unmapped while the helper may run (`keep` sheds memory
    // only once it reaped the helper; a failed spawn unmaps it only after reaping it); elsewhere `own`, in this frame,
    // while this process sleeps (CLONE_VFORK) until the helper exits. `own_group` makes one system call through
    // `calls` (no allocation, no lock), and writes nothing but its stack and, if its `setpgid` failed, the shared
    // errno; it cannot fail (a process that is no session leader may always make a group of its own), so no errno
    // that this process, or the command's process that shares its memory on x86-64, reads is ever the helper's. The
    // wrapper is async-signal-safe, and ends the helper with the function's return value as its exit status (an
    // `exit` system call: no `atexit`, nothing of this process's state).
    let child = unsafe { libc::clone(own_group, top, flags, std::ptr::null_mut()) };
    if child < 0 {
        return Err(errno());
    }
    Ok(child)
}

/// Closes every descriptor but `keep` if it is one (std's error pipe and the command's stdio among them).
fn close_all_but(keep: RawFd) {
    let close_range = calls::close_range;
    // `keep` is at least 1 in the last arm (0 is the one before), and at most `i32::MAX` (a `RawFd`): neither
    // `keep - 1` nor `keep + 1` can overflow.
    let closed = match libc::c_uint::try_from(keep) {
        Err(_) => close_range(0, libc::c_uint::MAX).is_ok(),
        Ok(0) => close_range(1, libc::c_uint::MAX).is_ok(),
        Ok(keep) => {
            close_range(0, keep - 1).is_ok() && close_range(keep + 1, libc::c_uint::MAX).is_ok()
        }
    };
    if closed {
        return;
    }
    // Before Linux 5.9: one by one, up to the limit (at most 65,536).
    let max = calls::open_files_limit().min(65_536) as libc::c_int;
    for fd in (0..max).filter(|&fd| fd != keep) {
        calls::close(fd);
    }
}

/// Whether our child `pid` had exited and is now reaped (without waiting), here or already (`ECHILD`: reaper mode
/// reaps the children that exited).
fn reaped(pid: libc::pid_t) -> bool {
    match calls::waitpid(pid, libc::WNOHANG) {
        Ok(got) => got == pid,
        Err(e) => e == libc::ECHILD,
    }
}

/// The keeper's life: see the module docs; `helper` is the group helper until it was reaped (0 then: the keeper then
/// sheds the caller's memory, see [`shed_memory`]). Never returns.
fn keep(plan: &Plan, folder_fd: RawFd, command: libc::pid_t, mut helper: libc::pid_t) -> ! {
    let all = calls::full_set();
    // The group the command started in has this id.
    let group = calls::getpid();
    let mut told = false;
    let mut shed = false;
    let started = calls::monotonic();
    // Since when the command, exited and not alone, waits for the spawn's return (see SPAWN_GRACE).
    let mut awaiting_spawn: Option<std::time::Duration> = None;
    loop {
        if helper > 0 && reaped(helper) {
            helper = 0;
        }
        // Not before the helper is gone (it ran on the stack below the keeper's, in the same mapping), and not for a
        // command that ends within SHED_AFTER_MS (the common short job, which then pays nothing for it).
        if helper == 0
            && !shed
            && calls::monotonic().saturating_sub(started).as_millis() >= SHED_AFTER_MS.into()
        {
            shed = true;
            if worth_shedding(plan.page_size) {
                let on_this_stack = 0u8;
                let tls = KEPT_AROUND.saturating_add(plan.tls_span);
                shed_memory(
                    [
                        ((&raw const on_this_stack) as usize, KEPT_AROUND),
                        (calls::control_block(), tls),
                        (calls::errno_address(), tls),
                    ],
                    plan.page_size,
                );
            }
        }
        if calls::getppid() != plan.supervisor {
            give_grace(plan, folder_fd, group, command);
            end_job(plan, folder_fd, group, REMOVE_TRIES_ALONE);
            end_adopted(folder_fd, command, REMOVE_TRIES_ALONE);
            leave(plan, reap(command));
        }
        if shared(plan).hold.load(Ordering::Acquire) == 0 {
            reap_adopted(folder_fd, command);
        }
        if let Some(signal) = stopped(command) {
            // The supervisor hears of the stop as it would of its child's own: a report and a SIGCHLD.
            shared(plan)
                .stopped
                .store(signal.unsigned_abs(), Ordering::Release);
            // The parent is the supervisor (checked above).
            let _ = calls::kill(plan.supervisor, libc::SIGCHLD);
            continue;
        }
        if exited(command) {
            match shared(plan).verdict.load(Ordering::Acquire) {
                VERDICT_KILL => {
                    end_job(plan, folder_fd, group, REMOVE_TRIES);
                    end_adopted(folder_fd, command, REMOVE_TRIES);
                    leave(plan, reap(command));
                }
                VERDICT_KEEP => leave(plan, reap(command)),
                // Nothing of the job runs any more (the common end, and a command that failed its `exec`, for which
                // std waits for us): ending it and keeping it are the same, so no verdict is waited for. This process
                // then sees the keeper's own exit, one wake-up instead of a round trip through the shared page.
                _ if job_empty(folder_fd, command) => {
                    end_job(plan, folder_fd, group, REMOVE_TRIES);
                    leave(plan, reap(command));
                }
                // Before the spawn returned, a command that left something running ran its program (a failed `exec`
                // leaves nothing), so it waits for the verdict like any other, once the spawn returned. In case it
                // failed its `exec` all the same (a `pre_exec` hook of the caller's, run after ours, started a
                // process), std waits for us: past SPAWN_GRACE without the spawn's return, the job is ended as for
                // VERDICT_KILL. The command's name, or anything else it does, never makes the keeper leave without
                // ending the job.
                _ if shared(plan).spawned.load(Ordering::Acquire) == 0 => {
                    let since = *awaiting_spawn.get_or_insert_with(calls::monotonic);
                    if calls::monotonic().saturating_sub(since) >= SPAWN_GRACE {
                        end_job(plan, folder_fd, group, REMOVE_TRIES);
                        end_adopted(folder_fd, command, REMOVE_TRIES);
                        leave(plan, reap(command));
                    }
                }
                _ if !told => {
                    // The supervisor hears of the exit as it would without us: a SIGCHLD (a supervisor that takes
                    // its signals, such as the tool, wakes on it).
                    told = true;
                    awaiting_spawn = None;
                    shared(plan).exited.store(1, Ordering::Release);
                    // The parent is the supervisor (checked above).
                    let _ = calls::kill(plan.supervisor, libc::SIGCHLD);
                }
                _ => {}
            }
        }
        // Until the memory is shed, at most until it is due.
        let due = libc::timespec {
            tv_sec: 0,
            tv_nsec: libc::c_long::from(SHED_AFTER_MS) * 1_000_000,
        };
        // Every millisecond while the spawn's return is awaited (this process sends no signal then).
        let soon = libc::timespec {
            tv_sec: 0,
            tv_nsec: 1_000_000,
        };
        let timeout = if awaiting_spawn.is_some() {
            Some(&soon)
        } else if shed {
            None
        } else {
            Some(&due)
        };
        // Every signal is blocked: one pending is taken, or waited for.
        let (signal, code) = calls::sigtimedwait(&all, timeout).unwrap_or((0, 0));
        // A signal sent to the keeper's pid (the job's id) is meant for the command, as it was for a leader without
        // a keeper: passed on, but for the keeper's own wake-ups, and but for one the kernel sent (`SI_KERNEL`): a
        // terminal's signal to the command's group, which the keeper is in for a moment after the command's exec
        // (on x86-64 it leaves the group only once it runs again), reached the command itself.
        let from_kernel = signal > 0 && code == SI_KERNEL;
        if signal > 0 && signal != libc::SIGCHLD && signal != libc::SIGCONT && !from_kernel {
            // The command is our unreaped child (its pid is pinned).
            let _ = calls::kill(command, signal);
        }
    }
}

/// `waitid` on our child `pid` with `flags` (plus `WNOHANG`): the report, if there is one.
fn wait_report(pid: libc::pid_t, flags: libc::c_int) -> Option<calls::Report> {
    calls::waitid(libc::P_PID, pid.unsigned_abs(), flags | libc::WNOHANG)
        .ok()
        .filter(|report| report.pid != 0)
}

/// The signal that stopped the command, if it stopped since the last report (which this consumes).
fn stopped(command: libc::pid_t) -> Option<libc::c_int> {
    wait_report(command, libc::WSTOPPED).map(|report| report.status)
}

/// Whether the command exited (not reaped).
fn exited(command: libc::pid_t) -> bool {
    wait_report(command, libc::WEXITED | libc::WNOWAIT).is_some()
}

/// Reaps the command (waiting for its exit).
fn reap(command: libc::pid_t) -> Option<calls::Report> {
    loop {
        match calls::waitid(libc::P_PID, command.unsigned_abs(), libc::WEXITED) {
            Ok(report) => return Some(report),
            Err(libc::EINTR) => {}
            Err(_) => return None,
        }
    }
}

/// Kills the job: the command's group, then the cgroup; waits (`tries` milliseconds at most) for it to empty and
/// removes the folder (a folder that holds sub-cgroups of the job's, or a process that does not die, is left to the
/// supervisor's own end of the job, or behind).
fn end_job(plan: &Plan, folder_fd: RawFd, group: libc::pid_t, tries: u32) {
    // The group's id is our own pid (> 1), pinned while we live.
    let _ = calls::kill(-group, libc::SIGKILL);
    let Some(folder) = plan.folder().filter(|_| folder_fd >= 0) else {
        return;
    };
    // It succeeds on an empty folder without sub-cgroups (a command that left nothing: the common end), which then
    // needs no kill.
    if calls::rmdir(folder).is_ok() {
        return;
    }
    if let Ok(kill) = calls::openat(folder_fd, c"cgroup.kill", libc::O_WRONLY | libc::O_CLOEXEC) {
        let _ = calls::write(kill, b"1");
        calls::close(kill);
    }
    for _ in 0..tries {
        if calls::rmdir(folder) != Err(libc::EBUSY) {
            return;
        }
        if !populated(folder_fd) {
            // Empty, but it holds sub-cgroups of the job's: those go first, deepest first.
            remove_below(folder_fd);
            if calls::rmdir(folder) != Err(libc::EBUSY) {
                return;
            }
        }
        nap();
    }
}

/// The supervisor died: its death plan (`Shared::death_signal`), if it set one, before the job is ended. Sends the
/// plan's signal to the command's group `group` (as the supervisor's own timeout would, GNU's way: the group, then
/// `SIGCONT` unless the signal stops), then waits up to the plan's grace for the job to end: the command exited and
/// nothing else of the job is left (`job_empty`; the adopted orphans that exit meanwhile are reaped). The caller then
/// ends whatever is left with `SIGKILL`.
fn give_grace(plan: &Plan, folder_fd: RawFd, group: libc::pid_t, command: libc::pid_t) {
    let shared = shared(plan);
    let signal = libc::c_int::try_from(shared.death_signal.load(Ordering::Acquire)).unwrap_or(0);
    let grace =
        std::time::Duration::from_millis(shared.death_grace_ms.load(Ordering::Acquire).into());
    if signal <= 0 || signal == libc::SIGKILL || grace.is_zero() {
        return;
    }
    // The command's group, and the command by its pid if it left the group (as the supervisor's own signals reach it).
    // The group's id is our own pid (> 1), pinned while we live, and the command (> 1, checked) is our unreaped child,
    // pinned too.
    for target in [-group, command]
        .into_iter()
        .filter(|&t| t != 0 && t != 1 && t != -1)
    {
        let _ = calls::kill(target, signal);
        if !matches!(
            signal,
            libc::SIGSTOP | libc::SIGTSTP | libc::SIGTTIN | libc::SIGTTOU
        ) {
            let _ = calls::kill(target, libc::SIGCONT);
        }
    }
    let end = calls::monotonic().saturating_add(grace);
    while calls::monotonic() < end {
        reap_adopted(folder_fd, command);
        if exited(command) && job_empty(folder_fd, command) {
            return;
        }
        nap_for(10);
    }
}

/// Sleeps a millisecond.
fn nap() {
    nap_for(1);
}

/// Sleeps `millis` milliseconds (less than a second: the callers pass 1 and 10, so the product cannot overflow even a
/// 32-bit `c_long`).
fn nap_for(millis: u16) {
    let pause = libc::timespec {
        tv_sec: 0,
        tv_nsec: libc::c_long::from(millis) * 1_000_000,
    };
    calls::nanosleep(&pause);
}

/// Reaper mode (no cgroup folder, `folder_fd` -1): reaps the orphans the keeper adopted that have exited, never the
/// command. `waitid(P_ALL, WNOWAIT)` names the first child that exited; once that is the command (a zombie until the
/// verdict), the keeper's children are listed instead and each but the command is reaped if it exited.
fn reap_adopted(folder_fd: RawFd, command: libc::pid_t) {
    if folder_fd >= 0 {
        return;
    }
    loop {
        // P_ALL with WNOWAIT reaps nothing.
        let pid = calls::waitid(
            libc::P_ALL,
            0,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        )
        .map_or(0, |report| report.pid);
        if pid <= 0 {
            return;
        }
        if pid == command {
            for_each_child(|child| {
                if child != command {
                    let _ = calls::waitpid(child, libc::WNOHANG);
                }
            });
            return;
        }
        // An adopted orphan of ours that has exited, not the command.
        let _ = calls::waitpid(pid, libc::WNOHANG);
    }
}

/// Whether no process of the job but the command (exited) is alive: the cgroup says `populated 0`; in reaper mode
/// the keeper has no other child (its orphans that exited were reaped: an unreaped one counts). `false` when it
/// cannot tell.
fn job_empty(folder_fd: RawFd, command: libc::pid_t) -> bool {
    if folder_fd >= 0 {
        return !populated(folder_fd);
    }
    let mut others = 0;
    for_each_child(|child| others += usize::from(child != command)) && others == 0
}

/// Reaper mode: ends the rest of the job after its group (`end_job`): kills the command (our unreaped child: its pid
/// is pinned) and every other child of the keeper's, reaps those, and repeats with the orphans that brings until the
/// command, dead, is the only child left, for at most about `tries` milliseconds. A child of ours is pinned until we
/// reap it, so no pid names another process.
fn end_adopted(folder_fd: RawFd, command: libc::pid_t, tries: u32) {
    if folder_fd >= 0 {
        return;
    }
    // The command is our unreaped child.
    let _ = calls::kill(command, libc::SIGKILL);
    for _ in 0..tries {
        // Asked before the children are listed: once the command is a zombie, the kernel has already handed its
        // children to us, so the list below holds them (listed first, a dying command's children could be missed).
        let command_dead = exited(command);
        let mut others = 0;
        for_each_child(|child| {
            if child != command {
                // At most one per child of ours: no overflow.
                others += 1;
                // A child of ours (pinned until reaped).
                let _ = calls::kill(child, libc::SIGKILL);
                let _ = calls::waitpid(child, libc::WNOHANG);
            }
        });
        // Done once the command has died too: until then its children are still its own, and are re-parented to us
        // only when it dies.
        if others == 0 && command_dead {
            return;
        }
        nap();
    }
}

/// Calls `f` with the pid of each child of this (single-threaded) process, alive or exited and not reaped, as
/// `/proc/thread-self/children` lists them (read on a fixed buffer, a number split between two reads put together);
/// `false` if the list could not be read to its end.
fn for_each_child(mut f: impl FnMut(libc::pid_t)) -> bool {
    let Ok(fd) = calls::open(
        c"/proc/thread-self/children",
        libc::O_RDONLY | libc::O_CLOEXEC,
    ) else {
        return false;
    };
    let mut buf = [0u8; 1024];
    let mut pid: libc::pid_t = 0;
    let read_all = loop {
        let Ok(n) = calls::read(fd, &mut buf) else {
            break false;
        };
        if n == 0 {
            break true;
        }
        // A read returns at most the buffer's length (`get` all the same); `b - b'0'` is a digit's value.
        for &b in buf.get(..n).unwrap_or_default() {
            if b.is_ascii_digit() {
                pid = pid
                    .saturating_mul(10)
                    .saturating_add(libc::pid_t::from(b - b'0'));
            } else {
                if pid > 1 {
                    f(pid);
                }
                pid = 0;
            }
        }
    };
    if pid > 1 {
        f(pid);
    }
    calls::close(fd);
    read_all
}

/// Exits as the command did (`exit_as`), after telling this process that the keeper leaves on its own.
fn leave(plan: &Plan, report: Option<calls::Report>) -> ! {
    shared(plan).leaving.store(1, Ordering::Release);
    exit_as(report)
}

/// How many steps (a step opens or removes one folder) one call of `remove_below` takes at most: a tree of about
/// 30,000 sub-cgroups; the next try of `end_job` goes on where it stopped.
const REMOVE_STEPS: u32 = 100_000;

/// Removes the (empty) sub-folders of the folder open as `top`, deepest first, however deep, in one pass and on one
/// frame (no recursion): it goes down through the first sub-folder of each level to one that has none, goes back up
/// (`..`, which in a cgroup tree is the folder it came from: a cgroup is renamed only within its parent) and removes
/// that one by the name it went down by, then reads the folder it stands in again. So each folder is opened twice or
/// so, whatever the depth. It stops at the first folder it cannot open or remove (`EBUSY`: one that holds a process),
/// and after [`REMOVE_STEPS`] steps; the caller tries again.
fn remove_below(top: RawFd) {
    // 4 KiB, 8-byte aligned, as getdents64 wants.
    let mut buf = [0u64; 512];
    // The name of the folder open as `dir`, as its parent lists it, while `named` (it went down into it last).
    let mut name = [0u8; 256];
    let mut named = false;
    let mut dir = top;
    let mut depth = 0u32;
    for _ in 0..REMOVE_STEPS {
        if first_sub_folder(dir, &mut buf, &mut name) {
            let Ok(sub) = CStr::from_bytes_until_nul(&name)
                .map_err(drop)
                .and_then(|sub| {
                    calls::openat(
                        dir,
                        sub,
                        libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
                    )
                    .map_err(drop)
                })
            else {
                break;
            };
            if dir != top {
                calls::close(dir);
            }
            (dir, depth, named) = (sub, depth + 1, true);
            continue;
        }
        if depth == 0 {
            break; // `top` has no sub-folder left
        }
        let Ok(parent) = calls::openat(
            dir,
            c"..",
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
        ) else {
            break;
        };
        calls::close(dir);
        (dir, depth) = (parent, depth - 1);
        // Went up from a folder it had gone down into: remove that one. Else (up again from a folder whose sub-folder
        // it has just removed, and whose name it no longer holds) it goes down into it again, by its name.
        if std::mem::take(&mut named) {
            let Ok(sub) = CStr::from_bytes_until_nul(&name) else {
                break;
            };
            if calls::unlinkat(dir, sub, libc::AT_REMOVEDIR).is_err() {
                break;
            }
        }
    }
    if dir != top {
        calls::close(dir);
    }
}

/// Whether the folder open as `dir` has a sub-folder (read from its start with `getdents64` into `buf`); if so, its
/// name, NUL-terminated, into `name` (a name is at most 255 bytes).
fn first_sub_folder(dir: RawFd, buf: &mut [u64; 512], name: &mut [u8; 256]) -> bool {
    calls::lseek(dir, 0, libc::SEEK_SET);
    loop {
        let bytes = match calls::getdents64(dir, buf) {
            Ok(bytes) if !bytes.is_empty() => bytes,
            _ => return false,
        };
        // Each record: d_ino (8), d_off (8), d_reclen (2), d_type (1), d_name (NUL-terminated). The kernel's records
        // fit in what it wrote; `get` all the same, so that a short one ends the list instead of a panic. `at` stays
        // below the 4 KiB written, and a record's length below 64 KiB: no sum here can overflow.
        let mut at = 0;
        while at + 19 < bytes.len() {
            let (Some(&len_lo), Some(&len_hi), Some(&kind)) =
                (bytes.get(at + 16), bytes.get(at + 17), bytes.get(at + 18))
            else {
                return false;
            };
            let reclen = usize::from(u16::from_ne_bytes([len_lo, len_hi]));
            if reclen == 0 {
                return false;
            }
            let Some(found) = bytes.get(at + 19..(at + reclen).min(bytes.len())) else {
                return false;
            };
            let dot = found.first() == Some(&b'.') && matches!(found.get(1), Some(0 | b'.'));
            if kind == libc::DT_DIR && !dot {
                if let Some(len) = found
                    .iter()
                    .position(|&b| b == 0)
                    .filter(|&len| len < name.len())
                {
                    name[..=len].copy_from_slice(&found[..=len]);
                    return true;
                }
            }
            at += reclen;
        }
    }
}

/// Whether `cgroup.events` of the folder says `populated 1` (or cannot be read).
fn populated(folder_fd: RawFd) -> bool {
    let mut buf = [0u8; 128];
    read_start(folder_fd, c"cgroup.events", &mut buf)
        .is_none_or(|text| !text.windows(11).any(|w| w == b"populated 0"))
}

/// The start of file `name` (relative to `dir`, or absolute), as much as fits in `buf`; `None` if it cannot be read.
fn read_start<'a>(dir: RawFd, name: &CStr, buf: &'a mut [u8]) -> Option<&'a [u8]> {
    let fd = calls::openat(dir, name, libc::O_RDONLY | libc::O_CLOEXEC).ok()?;
    let read = calls::read(fd, buf);
    calls::close(fd);
    buf.get(..read.ok()?)
}

/// Exits as the command did: its exit code, or death by its signal (no core dump). Without a report (cannot
/// happen: the command is our child), status 1.
fn exit_as(report: Option<calls::Report>) -> ! {
    if let Some(report) = report {
        let status = report.status;
        if report.code == libc::CLD_EXITED {
            calls::exit(status);
        }
        let _ = calls::prctl(libc::PR_SET_DUMPABLE, 0);
        calls::no_core();
        calls::default_action(status);
        calls::set_mask(libc::SIG_UNBLOCK, &calls::only(status), None);
        let _ = calls::kill(calls::getpid(), status);
    }
    calls::exit(1)
}

/// Sends `signal` to the group `pgid` of a kept job, whose keeper (pid `pgid`) is not in it: a group with no process
/// left counts as success. After `SIGKILL` or `SIGCONT` the keeper gets `SIGCONT` (it wakes, and a keeper stopped
/// with its command goes on). The caller holds the keeper unreaped.
pub(crate) fn signal_kept_group(pgid: u32, signal: libc::c_int) -> io::Result<()> {
    let pgid = super::checked_pid(pgid)?;
    // checked_pid ruled out the ids with special meanings.
    let sent = match calls::kill(-pgid, signal) {
        Err(libc::ESRCH) => Ok(()),
        other => other.map_err(io::Error::from_raw_os_error),
    };
    if signal == libc::SIGKILL || signal == libc::SIGCONT {
        super::wake_child(pgid.unsigned_abs());
    }
    sent
}
