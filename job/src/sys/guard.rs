//! The forked guard process (see `crate::guard`): a copy of this process that joins a group and kills it when the
//! pipe from its supervisor reaches end of file.

use std::ffi::CStr;
use std::fs::File;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, OwnedFd};

use super::{checked_pid, cvt, kernel_pid, wait_id};

/// The highest signal number the forked guard sets to be ignored: Linux's `SIGRTMAX`; elsewhere FreeBSD's
/// (`sigaction` refuses the numbers a system lacks).
#[cfg(all(
    any(target_os = "linux", target_os = "android"),
    not(grouptimeout_portable)
))]
const LAST_SIGNAL: libc::c_int = 64;
#[cfg(not(all(
    any(target_os = "linux", target_os = "android"),
    not(grouptimeout_portable)
)))]
const LAST_SIGNAL: libc::c_int = 128;

/// The forked guard's name (`comm`, what `ps -e`, `pkill -x` and `killall` match; Linux only), so that killing the
/// supervisor by its name does not kill its guard too. It does not contain "grouptimeout", which plain
/// `pkill grouptimeout` (a pattern) would find in it. The command line stays the supervisor's (`pkill -f` matches it).
#[cfg(all(
    any(target_os = "linux", target_os = "android"),
    not(grouptimeout_portable)
))]
const GUARD_NAME: &[u8; 12] = b"group-guard\0";

/// How many times the forked guard tries to remove the job's cgroup folder, 10 ms apart, about 10 s in all (it is
/// removable once the killed processes have exited: a few hundred ms for a job that frees much memory on a loaded
/// machine). Nobody waits for it: its supervisor is dead.
const RMDIR_TRIES: usize = 1000;

/// How deep below the job's cgroup folder the forked guard looks for sub-cgroups to remove (nested tools make one
/// per level).
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
const SUB_CGROUP_DEPTH: usize = 16;

/// The job's cgroup, for the forked guard to end: its `cgroup.kill`, open for writing, and its folder's path.
pub(crate) struct GuardCgroup<'a> {
    pub(crate) kill: &'a File,
    pub(crate) folder: &'a CStr,
}

/// Writes `bytes` to the guard's pipe `pipe` (non-blocking) in one `write`, whole or not at all as a pipe does for a
/// short write, without a `SIGPIPE` where the guard is gone (this thread blocks it for the call, and takes the one the
/// write raised, if it was not pending before): a host that has not ignored `SIGPIPE` must not die of a dead guard.
pub(crate) fn write_to_guard(pipe: &File, bytes: &[u8]) -> io::Result<()> {
    let mut only = MaybeUninit::<libc::sigset_t>::zeroed();
    let mut old = MaybeUninit::<libc::sigset_t>::zeroed();
    let mut pending = MaybeUninit::<libc::sigset_t>::zeroed();
    // SAFETY: the sets live across the calls; pthread_sigmask, sigpending and write take valid pointers and lengths.
    unsafe {
        libc::sigemptyset(only.as_mut_ptr());
        libc::sigaddset(only.as_mut_ptr(), libc::SIGPIPE);
        libc::sigpending(pending.as_mut_ptr());
        let was_pending = libc::sigismember(pending.as_ptr(), libc::SIGPIPE) == 1;
        libc::pthread_sigmask(libc::SIG_BLOCK, only.as_ptr(), old.as_mut_ptr());
        let wrote = libc::write(pipe.as_raw_fd(), bytes.as_ptr().cast(), bytes.len());
        let e = io::Error::last_os_error();
        libc::sigpending(pending.as_mut_ptr());
        if !was_pending && libc::sigismember(pending.as_ptr(), libc::SIGPIPE) == 1 {
            // Pending now, so sigwait returns at once.
            let mut taken = 0;
            libc::sigwait(only.as_ptr(), &raw mut taken);
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, old.as_ptr(), std::ptr::null_mut());
        if wrote < 0 {
            return Err(e);
        }
    }
    Ok(())
}

/// Forks a guard that ignores every catchable signal, joins group `pgid`, keeps only `read` (as its standard input)
/// open, and then reads it: lines there set its death plan; end of file or an error makes it send `SIGKILL` to its
/// own group, after the supervisor's death plan (see `DeathPlan`). Returns its pid at once, without waiting for the
/// guard to join the group.
///
/// With `cgroup`, the guard leads a process group of its own instead (so that no signal to the job's group, the
/// supervisor's `SIGKILL` at a deadline included, ends it before the job's folder is gone), keeps the job's
/// `cgroup.kill` open (as its standard output), and at end of file writes `1` to it (every process of the job's
/// cgroup is killed, those of its sub-cgroups too), then removes the folder, with the sub-cgroups the job made in it
/// (deepest first), once they are empty (tried at most [`RMDIR_TRIES`] times 10 ms apart), and then exits (the kill of
/// its own group reaches itself only).
///
/// On Linux the child first renames itself [`GUARD_NAME`] (`prctl(PR_SET_NAME)`, a system call). Elsewhere it keeps
/// this process's name: no async-signal-safe call renames a process there.
///
/// The forked child calls only async-signal-safe functions (`prctl`, `sigaction`, `sigprocmask`, `fcntl`, `setpgid`,
/// `dup2`, `close`, `read`, `write`, `open`, `openat`, `getdents64`, `unlinkat`, `rmdir`, `nanosleep`, `kill`, `_exit`,
/// and `close_range` or `getrlimit`), and allocates nothing, so this is sound in a multi-threaded process. It joins the group only after it ignores
/// every signal, so a signal sent to the group never finds it unprotected, and this process need not wait for it:
/// if this process dies meanwhile, the guard still joins, then reads end of file. If it cannot join (the group has no
/// process left), it exits at once without signalling anything, since it is still in this process's group then.
pub(crate) fn fork_guard(
    pgid: u32,
    read: &OwnedFd,
    cgroup: Option<GuardCgroup<'_>>,
) -> io::Result<u32> {
    let pgid = checked_pid(pgid)?;
    let read = read.as_raw_fd();
    let cgroup = cgroup.map(|c| (c.kill.as_raw_fd(), c.folder));
    let mut ignore = MaybeUninit::<libc::sigaction>::zeroed();
    // SAFETY: `ignore` is a zeroed sigaction we own; we set its handler to SIG_IGN and empty its mask.
    let ignore = unsafe {
        let p = ignore.as_mut_ptr();
        (*p).sa_sigaction = libc::SIG_IGN;
        libc::sigemptyset(&raw mut (*p).sa_mask);
        ignore.assume_init()
    };
    // Every signal blocked across the fork, so that none reaches the child before it ignores it (a handler of ours,
    // such as the host's signal pipe, would otherwise run in the child too).
    let mut all = MaybeUninit::<libc::sigset_t>::zeroed();
    let mut old = MaybeUninit::<libc::sigset_t>::zeroed();
    // SAFETY: both are live sigset_t values; sigfillset initialises `all`, pthread_sigmask fills in `old`.
    let rc = unsafe {
        libc::sigfillset(all.as_mut_ptr());
        libc::pthread_sigmask(libc::SIG_SETMASK, all.as_ptr(), old.as_mut_ptr())
    };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    // SAFETY: the child runs `guard_main`, which calls only async-signal-safe functions and never returns. libc's
    // `fork` also runs the handlers registered with `pthread_atfork` (prepare and parent handlers here, child handlers
    // in the child before `fork` returns there): the C library's own keep its state (malloc's locks) usable in the
    // child, and `guard_main` allocates nothing anyway; a handler another library of this process registered runs
    // too, in a child of a possibly multi-threaded process, and must be safe there itself, which this crate cannot
    // check (`host::die_with_parent_forked` says so). All signals are blocked meanwhile, so no handler of ours runs.
    let child = unsafe { libc::fork() };
    if child == 0 {
        guard_main(pgid, read, cgroup, &ignore);
    }
    let forked = cvt(child).and_then(kernel_pid);
    // SAFETY: `old` was filled in by the successful pthread_sigmask above.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, old.as_ptr(), std::ptr::null_mut()) };
    forked
}

/// The body of the forked guard; see [`fork_guard`]. Never returns, never allocates. `cgroup`: the job's open
/// `cgroup.kill` and its folder.
fn guard_main(
    pgid: libc::pid_t,
    read: libc::c_int,
    cgroup: Option<(libc::c_int, &CStr)>,
    ignore: &libc::sigaction,
) -> ! {
    #[cfg(all(
        any(target_os = "linux", target_os = "android"),
        not(grouptimeout_portable)
    ))]
    // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes, which GUARD_NAME is.
    unsafe {
        libc::prctl(libc::PR_SET_NAME, GUARD_NAME.as_ptr());
    }
    for signal in 1..=LAST_SIGNAL {
        if signal != libc::SIGKILL && signal != libc::SIGSTOP {
            // SAFETY: `ignore` is a valid sigaction; an invalid signal number only fails with EINVAL.
            unsafe { libc::sigaction(signal, ignore, std::ptr::null_mut()) };
        }
    }
    let mut none = MaybeUninit::<libc::sigset_t>::zeroed();
    // SAFETY: a live sigset_t, emptied, then set as the mask: pending signals, all ignored now, are discarded.
    unsafe {
        libc::sigemptyset(none.as_mut_ptr());
        libc::sigprocmask(libc::SIG_SETMASK, none.as_ptr(), std::ptr::null_mut());
    }
    // `cgroup.kill` is moved above the standard descriptors first (it may be one of them), then kept as descriptor 1.
    // SAFETY: fcntl, setpgid and dup2 take integer arguments only.
    let armed = unsafe {
        let kill = cgroup.map_or(0, |(kill, _)| libc::fcntl(kill, libc::F_DUPFD, 3));
        kill != -1
            && libc::setpgid(0, if cgroup.is_some() { 0 } else { pgid }) == 0
            && libc::dup2(read, 0) == 0
            && (cgroup.is_none() || libc::dup2(kill, 1) == 1)
    };
    if !armed {
        // Maybe still in our supervisor's group: never signal anything from here.
        // SAFETY: _exit ends this process at once.
        unsafe { libc::_exit(127) };
    }
    close_from(if cgroup.is_some() { 2 } else { 1 });
    let mut plan = DeathPlan::default();
    let mut buf = [0u8; 64];
    loop {
        // SAFETY: reads at most `buf.len()` bytes into a live local.
        let n = unsafe { libc::read(0, buf.as_mut_ptr().cast(), buf.len()) };
        if let Some(read) = usize::try_from(n).ok().filter(|&n| n > 0) {
            plan.take(&buf[..read]);
            continue;
        }
        if n == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            break;
        }
    }
    // End of file: the supervisor died. Its plan first, for a guard in the job's group (see `DeathPlan`).
    if cgroup.is_none() {
        plan.give_grace(pgid);
    }
    // The job's cgroup first (the group kill below ends this process too).
    if let Some((_, folder)) = cgroup {
        // SAFETY: writes one byte from a static to descriptor 1, `cgroup.kill`.
        unsafe { libc::write(1, b"1".as_ptr().cast(), 1) };
        let pause = libc::timespec {
            tv_sec: 0,
            tv_nsec: 10_000_000,
        };
        for _ in 0..RMDIR_TRIES {
            if remove_tree(folder) {
                break;
            }
            // SAFETY: nanosleep reads a live timespec; the remainder is not wanted.
            unsafe { libc::nanosleep(&raw const pause, std::ptr::null_mut()) };
        }
    }
    // We are a member of the group, which keeps its id from being reused (with a cgroup: our own group).
    // SAFETY: kill with pid 0 signals this process's own group, which setpgid made the command's (or our own).
    unsafe {
        libc::kill(0, libc::SIGKILL);
        libc::_exit(1)
    }
}

/// What the forked guard does when its supervisor dies, as the supervisor last wrote it on the pipe: lines of three
/// numbers, `SIGNAL CONT GRACE_MS` (see `crate::guard::Guard::set_plan`). Without one (or with signal 0 or `SIGKILL`,
/// or no grace), `SIGKILL` at once.
#[derive(Default)]
struct DeathPlan {
    /// The last whole line's numbers.
    plan: [u64; 3],
    /// The line being read, and which of its numbers is being read.
    line: [u64; 3],
    at: usize,
}

impl DeathPlan {
    /// Takes the bytes read from the pipe.
    fn take(&mut self, bytes: &[u8]) {
        for &b in bytes {
            match b {
                b'0'..=b'9' => {
                    let field = &mut self.line[self.at];
                    *field = field.saturating_mul(10).saturating_add(u64::from(b - b'0'));
                }
                b' ' => self.at = (self.at + 1).min(2),
                b'\n' => {
                    self.plan = self.line;
                    self.line = [0; 3];
                    self.at = 0;
                }
                _ => {}
            }
        }
    }

    /// Sends the plan's signal to this process's group (the job's, which this process has joined and whose id it
    /// pins; it ignores the signal itself), then `SIGCONT` if the plan says so, and waits up to the grace for the
    /// group's leader `leader` to be gone or dead: as the library's own grace, the leader's exit ends it. The
    /// caller then sends `SIGKILL` to the group.
    fn give_grace(&self, leader: libc::pid_t) {
        let [signal, cont, grace_ms] = self.plan;
        let signal = libc::c_int::try_from(signal).unwrap_or(0);
        if signal <= 0 || signal == libc::SIGKILL || grace_ms == 0 {
            return;
        }
        // This process's own group (the job's: setpgid above), and the leader by its pid if it left the group (as the
        // supervisor's own signals reach it).
        // SAFETY: kill with pid 0 signals this process's own group; the leader's pid (> 1, checked) is the id of the
        // group this process is in, so it names no other process meanwhile.
        unsafe {
            for target in [0, leader].into_iter().filter(|&t| t == 0 || t > 1) {
                libc::kill(target, signal);
                if cont != 0 {
                    libc::kill(target, libc::SIGCONT);
                }
            }
        }
        let pause = libc::timespec {
            tv_sec: 0,
            tv_nsec: 10_000_000,
        };
        for _ in 0..grace_ms.div_ceil(10) {
            if leader_gone(leader) {
                return;
            }
            // SAFETY: nanosleep reads a live timespec; the remainder is not wanted.
            unsafe { libc::nanosleep(&raw const pause, std::ptr::null_mut()) };
        }
    }
}

/// Whether the group's leader `leader` is gone or dead (a zombie): its state in `/proc/PID/stat` on Linux, else (or
/// without `/proc`) whether `kill(leader, 0)` finds it. Its pid cannot name another process meanwhile: it is the id
/// of the group this process is in. Allocates nothing.
fn leader_gone(leader: libc::pid_t) -> bool {
    #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
    {
        // "/proc/" + at most 10 digits + "/stat" + NUL, zero-filled past its end.
        let mut path = *b"/proc/\0\0\0\0\0\0\0\0\0\0/stat\0\0\0\0\0\0";
        let digits = leader.unsigned_abs().checked_ilog10().unwrap_or(0) as usize + 1;
        let mut n = leader.unsigned_abs();
        for at in (6..6 + digits).rev() {
            path[at] = b'0' + (n % 10) as u8;
            n /= 10;
        }
        path.copy_within(16..21, 6 + digits);
        path[11 + digits..].fill(0);
        let mut buf = [0u8; 512];
        // SAFETY: open of a NUL-terminated path (zero-filled past its end), read into `buf` (its length passed), close
        // of the result: async-signal-safe system calls.
        let n = unsafe {
            let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
            if fd >= 0 {
                let n = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
                libc::close(fd);
                n
            } else {
                -1
            }
        };
        if let Some(stat) = usize::try_from(n).ok().and_then(|n| buf.get(..n)) {
            // The state follows the last ')' (the name may hold any byte) and a space.
            let state = stat
                .iter()
                .rposition(|&b| b == b')')
                .and_then(|at| stat.get(at + 2));
            return matches!(state, Some(b'Z' | b'X') | None);
        }
    }
    // SAFETY: kill with signal 0 sends nothing; `leader` is > 1 (checked when the guard was forked).
    unsafe {
        libc::kill(leader, 0) != 0 && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
    }
}

/// Removes the job's cgroup folder `folder` with the sub-cgroups below it, deepest first: whether it is gone (removed,
/// or not there). A folder that still holds a process (`EBUSY`) stays for the next try. Allocates nothing (it runs in
/// the forked guard).
fn remove_tree(folder: &CStr) -> bool {
    #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
    {
        // SAFETY: open reads the NUL-terminated path made before the fork; the descriptor is closed below.
        let dir = unsafe {
            libc::open(
                folder.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        if dir >= 0 {
            remove_below(dir, SUB_CGROUP_DEPTH);
            // SAFETY: closes the descriptor opened above.
            unsafe { libc::close(dir) };
        }
    }
    // SAFETY: `folder` is a NUL-terminated string made before the fork; rmdir only reads it.
    let removed = unsafe { libc::rmdir(folder.as_ptr()) } == 0;
    removed || io::Error::last_os_error().raw_os_error() == Some(libc::ENOENT)
}

/// Removes the sub-cgroups (folders) of the cgroup folder open as `dir`, each after the ones below it, at most `depth`
/// levels down; those that cannot be removed yet are left. Reads the folder with `getdents64` into a buffer on the
/// stack (no allocation, no `opendir`).
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
fn remove_below(dir: libc::c_int, depth: usize) {
    if depth == 0 {
        return;
    }
    let mut buf = [0u8; 2048];
    loop {
        // SAFETY: getdents64 writes at most `buf.len()` bytes of directory records into `buf`, which we own.
        let n = unsafe { libc::syscall(libc::SYS_getdents64, dir, buf.as_mut_ptr(), buf.len()) };
        let Ok(n) = usize::try_from(n) else { return };
        if n == 0 {
            return;
        }
        let mut at = 0;
        // A record: d_ino (8 bytes), d_off (8), d_reclen (2), d_type (1), then the NUL-terminated name.
        while let (Some(&[r0, r1]), Some(&kind), Some(name)) = (
            buf.get(at + 16..at + 18),
            buf.get(at + 18),
            buf.get(at + 19..n),
        ) {
            let len = usize::from(u16::from_ne_bytes([r0, r1]));
            if len == 0 {
                return;
            }
            at += len;
            if kind != libc::DT_DIR || name.starts_with(b".\0") || name.starts_with(b"..\0") {
                continue;
            }
            // SAFETY: `name` points into `buf`, at a name the kernel ended with a NUL inside the record; openat and
            // unlinkat only read it, and the descriptor opened is closed before the next record.
            unsafe {
                let sub = libc::openat(
                    dir,
                    name.as_ptr().cast(),
                    libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
                );
                if sub >= 0 {
                    remove_below(sub, depth - 1);
                    libc::close(sub);
                }
                libc::unlinkat(dir, name.as_ptr().cast(), libc::AT_REMOVEDIR);
            }
        }
    }
}

/// Closes every descriptor from `first` on (`close_range` on Linux, a bounded loop where that is missing).
fn close_from(first: libc::c_int) {
    #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
    {
        // SAFETY: close_range takes integer arguments only; closing our own descriptors in this forked child.
        if unsafe {
            libc::syscall(
                libc::SYS_close_range,
                // `first` is 1 or 2: its absolute value is itself (and no panic in the forked child).
                first.unsigned_abs(),
                libc::c_uint::MAX,
                0,
            )
        } == 0
        {
            return;
        }
    }
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into a live rlimit struct.
    let max = match unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &raw mut limit) } {
        0 => libc::c_int::try_from(limit.rlim_cur.min(65_536)).unwrap_or(65_536),
        _ => 65_536,
    };
    for fd in first..max {
        // SAFETY: closing a descriptor number; EBADF for one that is not open is harmless.
        unsafe { libc::close(fd) };
    }
}

/// How a child process ended, as `waitid` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// It exited with this status.
    Exited(i32),
    /// This signal ended it.
    Killed(i32),
}

/// `CLD_EXITED`, the `si_code` of a child that exited: 1 on Linux, macOS and the BSDs (libc 0.2.139 defines it for
/// Linux only).
const CLD_EXITED: libc::c_int = 1;

/// One child process of ours (a guard), held by a pidfd where one can be had, else by its pid.
///
/// The pidfd (Linux 5.4 and later: `pidfd_open`, and `waitid(P_PIDFD)`) is opened by [`Held::new`] while the process
/// is our unreaped child, so it names that process for good: once someone else reaped it (a subreaper's sweep, a
/// `waitpid(-1)` elsewhere in the program), a signal through it fails with `ESRCH` and a wait with `ECHILD`, even
/// when its pid was given to a new process. Held by its pid (other systems, older kernels, no descriptor left, the
/// `grouptimeout_no_pidfd` and `grouptimeout_portable` cfgs), a pid reaped by someone else and given to another child of ours cannot be told
/// apart from it.
#[derive(Debug)]
pub(crate) struct Held {
    pid: libc::pid_t,
    pidfd: Option<OwnedFd>,
}

impl Held {
    /// Holds our unreaped child `pid`; the caller makes sure nothing reaped it yet.
    pub(crate) fn new(pid: u32) -> io::Result<Held> {
        // Any failure (ENOSYS before Linux 5.3, EPERM under seccomp, EMFILE) leaves the pid.
        #[cfg(all(
            target_os = "linux",
            not(grouptimeout_no_pidfd),
            not(grouptimeout_portable)
        ))]
        let pidfd = super::pidfd_open(pid).ok();
        #[cfg(not(all(
            target_os = "linux",
            not(grouptimeout_no_pidfd),
            not(grouptimeout_portable)
        )))]
        let pidfd = None;
        let held = Held {
            pid: checked_pid(pid)?,
            pidfd,
        };
        // Linux 5.3 has pidfds but not `waitid(P_PIDFD)` (EINVAL): one peek, which succeeds for our unreaped child,
        // tells.
        if held.pidfd.is_some() && held.wait(libc::WNOWAIT).is_err() {
            return Ok(Held {
                pidfd: None,
                ..held
            });
        }
        Ok(held)
    }

    /// The pidfd, if the process is held by one.
    pub(crate) fn pidfd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        use std::os::fd::AsFd as _;
        self.pidfd.as_ref().map(|fd| fd.as_fd())
    }

    /// Whether it has exited, without reaping it; fails with `ECHILD` once it is not our unreaped child any more.
    pub(crate) fn has_exited(&self) -> io::Result<bool> {
        self.wait(libc::WNOWAIT).map(|end| end.is_some())
    }

    /// Sends it `SIGKILL` (through the pidfd if there is one); `ESRCH` (reaped already) counts as success.
    pub(crate) fn kill(&self) -> io::Result<()> {
        let sent = match &self.pidfd {
            #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
            // SAFETY: pidfd_send_signal takes a descriptor, a signal number, a null siginfo and flags 0.
            Some(fd) => cvt(unsafe {
                libc::syscall(
                    libc::SYS_pidfd_send_signal,
                    fd.as_raw_fd(),
                    libc::SIGKILL,
                    std::ptr::null::<libc::siginfo_t>(),
                    0 as libc::c_uint,
                )
            })
            .map(drop),
            // SAFETY: kill has no memory-safety preconditions; checked_pid ruled out 0, 1 and negative ids.
            _ => cvt(unsafe { libc::kill(self.pid, libc::SIGKILL) }).map(drop),
        };
        match sent {
            Err(e) if e.raw_os_error() != Some(libc::ESRCH) => Err(e),
            _ => Ok(()),
        }
    }

    /// Reaps it if it has exited, without blocking: how it ended, or `None` while it runs. Fails with `ECHILD` once
    /// it is not our unreaped child any more.
    pub(crate) fn reap_if_exited(&self) -> io::Result<Option<End>> {
        self.wait(0)
    }

    /// `waitid` for exit, without blocking, with `flags` added.
    fn wait(&self, flags: libc::c_int) -> io::Result<Option<End>> {
        let (idtype, id) = match &self.pidfd {
            #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
            Some(fd) => (libc::P_PIDFD, wait_id(fd.as_raw_fd())),
            _ => (libc::P_PID, wait_id(self.pid)),
        };
        super::retry_eintr(|| {
            let mut info = MaybeUninit::<libc::siginfo_t>::zeroed();
            // SAFETY: `info` points to a zeroed `siginfo_t` that lives across the call; one process (a pid or a
            // pidfd) is waited for, never a group or any child.
            cvt(unsafe {
                libc::waitid(
                    idtype,
                    id,
                    info.as_mut_ptr(),
                    flags | libc::WEXITED | libc::WNOHANG,
                )
            })?;
            // SAFETY: zero-initialised and possibly filled in by the kernel: every bit pattern is a valid siginfo_t;
            // si_status reads the field waitid sets for a child's exit.
            let (signo, code, status) = unsafe {
                let info = info.assume_init();
                (info.si_signo, info.si_code, info.si_status())
            };
            // With WNOHANG and no exited child the kernel leaves si_signo 0 (we zeroed it).
            Ok((signo != 0).then_some(if code == CLD_EXITED {
                End::Exited(status)
            } else {
                End::Killed(status)
            }))
        })
    }
}
