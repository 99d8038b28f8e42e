//! The forked guard process (see `crate::guard`): a copy of this process that joins a group and kills it when the
//! pipe from its supervisor reaches end of file.

use std::ffi::CStr;
use std::fs::File;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, OwnedFd};

use super::signal_safe::{self as calls, DeathPlan};
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
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
const GUARD_NAME: &CStr = c"group-guard";

/// How many times the forked guard tries to remove the job's cgroup folder, 10 ms apart, about 10 s in all (it is
/// removable once the killed processes have exited: a few hundred ms for a job that frees much memory on a loaded
/// machine). Nobody waits for it: its supervisor is dead.
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
const RMDIR_TRIES: usize = 1000;

/// The caller's word that this process may be forked without `exec` here (the forked guard of
/// `host::die_with_parent_forked`): `fork` runs the `pthread_atfork` handlers that the libraries of this process
/// registered, the child ones in the child, which a possibly multi-threaded process copied in whatever state its
/// other threads left. Only [`ForkIsSound::promise`], an `unsafe fn`, makes one, so the one safe function that forks
/// a guard (`__private::die_with_parent_forked`) cannot be called without the promise:
///
/// ```compile_fail,E0133
/// let sound = grouptimeout_job::__private::ForkIsSound::promise();
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ForkIsSound(());

impl ForkIsSound {
    /// The promise.
    ///
    /// # Safety
    ///
    /// For as long as the promise is used (the calls it is passed to), either no other thread of this process runs,
    /// or every `pthread_atfork` child handler registered in this process (by any library it links, the C library's
    /// own aside) is async-signal-safe: a `fork` of this process is then as sound as one of a single-threaded
    /// process, and the forked child itself calls only async-signal-safe functions (see `fork_guard`).
    #[must_use]
    pub const unsafe fn promise() -> ForkIsSound {
        ForkIsSound(())
    }
}

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
    // check: `ForkIsSound::promise`'s caller vouches for it (`host::die_with_parent_forked`'s, an `unsafe fn`). All
    // signals are blocked meanwhile, so no handler of ours runs.
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
    #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
    calls::set_name(GUARD_NAME);
    for signal in 1..=LAST_SIGNAL {
        if signal != libc::SIGKILL && signal != libc::SIGSTOP {
            // SAFETY: `ignore` is a valid sigaction; an invalid signal number only fails with EINVAL.
            unsafe { libc::sigaction(signal, ignore, std::ptr::null_mut()) };
        }
    }
    // Pending signals, all ignored now, are discarded.
    calls::set_mask(libc::SIG_SETMASK, &calls::empty_set(), None);
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
        calls::exit(127);
    }
    calls::close_from(if cgroup.is_some() { 2 } else { 1 });
    let mut plan = PlanLines::default();
    let mut buf = [0u8; 64];
    loop {
        match calls::read(0, &mut buf) {
            Ok(0) => break,
            Ok(n) => plan.take(buf.get(..n).unwrap_or_default()),
            Err(libc::EINTR) => {}
            Err(_) => break,
        }
    }
    // End of file: the supervisor died. Its plan first, for a guard in the job's group: this process's own group (the
    // job's: setpgid above; it ignores the signal itself), and the leader by its pid if it left the group (as the
    // supervisor's own signals reach it); the leader's pid (> 1, checked) is the id of the group this process is in,
    // so it names no other process meanwhile. As the library's own grace, the leader's exit ends it.
    if cgroup.is_none() {
        plan.plan().give([0, pgid], || leader_gone(pgid));
    }
    // The job's cgroup first (the group kill below ends this process too).
    if let Some((_, folder)) = cgroup {
        end_cgroup(folder);
    }
    // We are a member of the group, which keeps its id from being reused (with a cgroup: our own group): pid 0 is this
    // process's own group, which setpgid made the command's (or our own).
    let _ = calls::kill(0, libc::SIGKILL);
    calls::exit(1)
}

/// Kills every process of the job's cgroup (`1` to its `cgroup.kill`, open as descriptor 1), then removes its folder
/// `folder` with the sub-cgroups the job made in it, deepest first (however deep, as the keeper does), once they
/// are empty: tried at most [`RMDIR_TRIES`] times, 10 ms apart.
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
fn end_cgroup(folder: &CStr) {
    let _ = calls::write_control(1, b"1");
    for _ in 0..RMDIR_TRIES {
        if calls::remove_tree(folder) {
            break;
        }
        calls::nap_for(10);
    }
}

/// No cgroup but on Linux.
#[cfg(not(all(target_os = "linux", not(grouptimeout_portable))))]
fn end_cgroup(_: &CStr) {}

/// The death plan as the supervisor last wrote it on the guard's pipe: lines of three numbers, `SIGNAL CONT GRACE_MS`
/// (see `crate::guard::Guard::set_plan`; `CONT` is the signal's, and [`DeathPlan`] tells it again). Without one,
/// `SIGKILL` at once.
#[derive(Default)]
struct PlanLines {
    /// The last whole line's numbers.
    plan: [u64; 3],
    /// The line being read, and which of its numbers is being read.
    line: [u64; 3],
    at: usize,
}

impl PlanLines {
    /// Takes the bytes read from the pipe.
    fn take(&mut self, bytes: &[u8]) {
        for &b in bytes {
            match b {
                b'0'..=b'9' => {
                    if let Some(field) = self.line.get_mut(self.at) {
                        *field = field.saturating_mul(10).saturating_add(u64::from(b - b'0'));
                    }
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

    /// The last whole line's plan (normalised).
    fn plan(&self) -> DeathPlan {
        let [signal, _cont, grace_ms] = self.plan;
        DeathPlan::from_parts(signal, grace_ms)
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
        let stat = CStr::from_bytes_until_nul(&path)
            .ok()
            .and_then(|path| calls::read_start(libc::AT_FDCWD, path, &mut buf));
        if let Some(stat) = stat {
            // The state follows the last ')' (the name may hold any byte) and a space.
            let state = stat
                .iter()
                .rposition(|&b| b == b')')
                .and_then(|at| stat.get(at + 2));
            return matches!(state, Some(b'Z' | b'X') | None);
        }
    }
    // Signal 0 sends nothing; `leader` is > 1 (checked when the guard was forked).
    calls::kill(leader, 0) == Err(libc::ESRCH)
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
            // One process (a pid or a pidfd) is waited for, never a group or any child.
            let report = calls::waitid(idtype, id, flags | libc::WEXITED | libc::WNOHANG)
                .map_err(io::Error::from_raw_os_error)?;
            // With WNOHANG and no exited child there is no report (pid 0).
            Ok((report.pid != 0).then_some(if report.code == CLD_EXITED {
                End::Exited(report.status)
            } else {
                End::Killed(report.status)
            }))
        })
    }
}
