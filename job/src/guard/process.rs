//! The guard behind [`JobChildExt::die_with_parent`](crate::JobChildExt::die_with_parent): a small process placed in
//! the command's group that kills the group when this process dies.
//!
//! The guard's standard input is the read end of a close-on-exec pipe whose write end only this process holds. When
//! this process dies, for any reason, the kernel closes the write end, the guard reads end of file and sends
//! `SIGKILL` to its own group (`kill(0, SIGKILL)`), after the death plan that this process wrote on the pipe, if
//! any (`Guard::set_plan`: a signal to the group, then up to a grace for the leader to exit). That is safe: a live
//! member keeps the group id from being reused.
//!
//! On Linux the guard is the keeper program in its guard mode (`job/keeper/guard.rs`), started the way a kept spawn
//! starts its keeper (`crate::keeper::spawn_guard`: a child that shares this process's memory until it execs the
//! program), which joins the group with every signal blocked before it execs: no signal to the group can end it but
//! `SIGKILL`, from before this call returns. Elsewhere (and where the program cannot run here) it is `/bin/sh`,
//! spawned into the group through `posix_spawn`, which sets its traps (every catchable signal ignored) before it says
//! it is armed. The program guard holds nothing but its pipe (and `/dev/null` as its standard error); the shell guard
//! keeps, besides its pipe, only what every child of this process inherits (descriptors that are not
//! close-on-exec), as the command does.
//!
//! The guard is our child, held by a pidfd on Linux (by its pid elsewhere). [`Guard`]'s drop ends it: `SIGKILL`
//! while it is still ours and unreaped, a reap (bounded), then the write end is closed — so its end of file reaches a
//! dead process and signals nothing.

use std::fs::File;
use std::io::{self, Read as _};
use std::os::fd::{AsFd as _, OwnedFd};
use std::os::unix::process::CommandExt as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::sys;
use grouptimeout::__private::DROP_REAP_LIMIT;

/// The shell guard's body, after the traps that make it ignore every catchable signal: say so on standard output and
/// close it, then read standard input until end of file (or a read error): each line there is the supervisor's death
/// plan (`SIGNAL CONT GRACE_MS`, see [`Guard::set_plan`]), the last one holds. At end of file, a plan with a signal
/// (not 0) first sends it to the group and to its leader by pid, should it have left the group
/// (`kill -SIGNAL 0 $JOB_GROUP`: the guard ignores it), then `SIGCONT` likewise if CONT is not 0, and waits (in steps
/// of 0.1 s: an external `sleep`; one that takes whole seconds counts for 10 steps) up to the grace for the leader
/// (pid `JOB_GROUP`, pinned by the guard's membership) to be gone or a zombie (its `/proc/PID/stat`, else
/// `kill -0`). Then it sends `SIGKILL` to its group.
macro_rules! guard_script {
    ($traps:literal) => {
        concat!(
            $traps,
            "; echo; exec >&-; s=0 c=0 g=0; while read a b d; do s=$a c=$b g=$d; done; \
             alive() { if read -r st </proc/$JOB_GROUP/stat; then case \"${st##*) }\" in Z*|X*) return 1;; esac; \
             return 0; fi 2>/dev/null; kill -0 $JOB_GROUP 2>/dev/null; }; \
             if [ \"$s\" != 0 ] && [ \"$g\" != 0 ]; then kill -$s 0 $JOB_GROUP; \
             [ \"$c\" = 0 ] || kill -CONT 0 $JOB_GROUP; i=0; g=$(( (g + 99) / 100 )); while [ $i -lt $g ] && alive; do \
             if sleep .1; then i=$((i+1)); else sleep 1; i=$((i+10)); fi; done; fi; kill -KILL 0"
        )
    };
}

/// The shell guard (see [`guard_script`]). Signals by name where the numbers differ; EMT
/// and INFO (BSD and macOS) come last, since dash stops at the first name it does not know (Linux has neither:
/// `--cfg grouptimeout_portable`).
#[cfg(all(
    any(target_os = "linux", target_os = "android"),
    not(grouptimeout_portable)
))]
const SCRIPT: &str = guard_script!(
    "trap '' 1 2 3 4 5 6 7 8 10 11 12 13 14 15 16 17 18 20 21 22 23 24 25 26 27 28 29 30 31 34 35 \
     36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64"
);
#[cfg(not(all(
    any(target_os = "linux", target_os = "android"),
    not(grouptimeout_portable)
)))]
const SCRIPT: &str = guard_script!(
    "trap '' HUP INT QUIT ILL TRAP ABRT FPE BUS SEGV SYS PIPE ALRM TERM URG TSTP CONT CHLD \
     TTIN TTOU IO XCPU XFSZ VTALRM PROF WINCH USR1 USR2 EMT INFO 2>/dev/null"
);

/// How often a guard that died before it was armed (a member signalled the group meanwhile) is started again.
const ATTEMPTS: usize = 3;

/// How long the start of a guard may take before it is given up (it may have been stopped by a `SIGSTOP`).
const READY_LIMIT: Duration = Duration::from_secs(5);

/// A running guard process in some group; dropping it ends the guard quietly.
#[derive(Debug)]
pub(crate) struct Guard {
    pid: u32,
    /// The guard, held by a pidfd where one can be had; `None` once [`end`](Guard::end) took it.
    process: Option<sys::Held>,
    /// The write end of the guard's standard input (non-blocking), where its death plan is written; closed after the
    /// guard was ended.
    pipe: File,
}

impl Guard {
    /// Starts a guard in group `pgid`, and returns once a signal sent to the group can no longer disarm it: the
    /// program guard blocks every signal before it joins the group; the shell has set its traps.
    ///
    /// The caller holds the group's leader unreaped.
    pub(crate) fn start(pgid: u32) -> io::Result<Guard> {
        for _ in 0..ATTEMPTS {
            if let Some(guard) = Guard::start_once(pgid)? {
                return Ok(guard);
            }
        }
        Err(io::Error::other(format!(
            "cannot make process group {pgid} die with this process: the guard process was killed {ATTEMPTS} times \
             before it could ignore signals (does a member keep signalling its group?)"
        )))
    }

    /// One attempt: `None` when the guard was killed before it was armed.
    fn start_once(pgid: u32) -> io::Result<Option<Guard>> {
        let (read, write) = sys::cloexec_pipe().map_err(|e| {
            context(
                pgid,
                crate::sys::os_error_or(e, |e| format!("cannot create a pipe: {e}")),
            )
        })?;
        #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
        if let Ok(program) = crate::keeper::program() {
            let guard =
                crate::keeper::spawn_guard(program, pgid, &read).map_err(|e| context(pgid, e))?;
            return Guard::hold(guard, write).map(Some);
        }
        let mut shell = Command::new("/bin/sh");
        shell.env_clear().env("JOB_GROUP", pgid.to_string());
        let mut child = shell
            .args(["-c", SCRIPT])
            .stdin(read)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(sys::checked_pid(pgid)?)
            .spawn()
            .map_err(|e| {
                context(
                    pgid,
                    crate::sys::os_error_or(e, |e| format!("cannot start /bin/sh: {e}")),
                )
            })?;
        let ready = child.stdout.take().map(OwnedFd::from);
        // From here on the guard is ended through `guard` (std's `Child` is never waited for).
        let mut guard = Guard::hold(child.id(), write)?;
        match wait_ready(ready.expect("stdout was piped")) {
            Ok(true) => Ok(Some(guard)),
            // Closed without a word: killed before it set its traps (try again), or not a shell at all.
            Ok(false) => match guard.end() {
                Some(sys::End::Exited(code)) => Err(context(
                    pgid,
                    io::Error::other(format!(
                        "/bin/sh exited (status {code}) without arming the guard (is /bin/sh a POSIX shell, with a few descriptors free?)"
                    )),
                )),
                _ => Ok(None),
            },
            Err(e) => Err(context(pgid, e)),
        }
    }

    /// Holds our unreaped child `pid` (by a pidfd where one can be had) as the guard whose pipe's write end is `pipe`.
    fn hold(pid: u32, pipe: OwnedFd) -> io::Result<Guard> {
        let guard = Guard {
            pid,
            process: Some(sys::Held::new(pid)?),
            pipe: File::from(pipe),
        };
        sys::set_nonblocking(guard.pipe.as_fd())?;
        Ok(guard)
    }

    /// Sets what the guard does when this process dies: `signal` to the group first (then `SIGCONT`, unless `signal`
    /// stops), then up to `grace` for the leader to exit, then `SIGKILL` to the group. A `signal` of 0 or `SIGKILL`, or
    /// no grace, is `SIGKILL` at once (as before any plan). The guard reads the plan from its pipe (one short line,
    /// written whole or not at all): if the pipe is full (a guard stopped by `SIGSTOP` that was sent thousands of
    /// plans), the guard keeps the last plan it read.
    pub(crate) fn set_plan(&self, signal: i32, grace: Duration) {
        let grace_ms = u32::try_from(grace.as_nanos().div_ceil(1_000_000)).unwrap_or(u32::MAX);
        let (signal, grace_ms) = if signal <= 0 || signal == libc::SIGKILL || grace_ms == 0 {
            (0, 0)
        } else {
            (signal, grace_ms)
        };
        let cont = signal > 0 && !grouptimeout::__private::is_stop_signal(signal);
        let _ = sys::write_to_guard(
            &self.pipe,
            format!("{signal} {} {grace_ms}\n", u8::from(cont)).as_bytes(),
        );
    }

    /// The guard's pid.
    pub(crate) fn id(&self) -> u32 {
        self.pid
    }

    /// Ends the guard: `SIGKILL`, then a reap, both only while it is our unreaped child (never once someone else
    /// reaped it: with a pidfd, the signal and the reap cannot reach a process that reused its pid). The wait for the
    /// killed guard is bounded as the drop of a `GroupChild` is (`DROP_REAP_LIMIT`): a guard that does not die in
    /// time (stuck in uninterruptible sleep, or traced by a stopped tracer) is left unreaped, a zombie of ours once
    /// it dies. How it ended, when it was reaped here.
    fn end(&mut self) -> Option<sys::End> {
        let process = self.process.take()?;
        // ECHILD: not our unreaped child any more.
        process.has_exited().ok()?;
        // SIGKILL by pid (or pidfd) leaves the rest of the group alone.
        let _ = process.kill();
        let deadline = Instant::now() + DROP_REAP_LIMIT;
        // Sleeps on the pidfd until the exit (a pidfd readable while the guard cannot be waited for yet, a traced
        // guard, and no pidfd at all: pauses of 1 ms), never past the deadline.
        let mut ready = false;
        while !process.has_exited().ok()? {
            let left = deadline.saturating_duration_since(Instant::now());
            match process.pidfd().filter(|_| !ready) {
                _ if left.is_zero() => return None,
                Some(fd) => {
                    let mut fds = [libc::pollfd {
                        fd: std::os::fd::AsRawFd::as_raw_fd(&fd),
                        events: libc::POLLIN,
                        revents: 0,
                    }];
                    ready = sys::poll(&mut fds, left).ok()? > 0;
                }
                None => std::thread::sleep(left.min(Duration::from_millis(1))),
            }
        }
        process.reap_if_exited().ok().flatten()
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        // The write end closes after this, so the guard's end of file reaches a dead process and signals nothing.
        self.end();
    }
}

/// Waits (bounded) until the guard closes `ready`: `true` when it wrote its byte before (it is armed, and no longer
/// holds `ready`), `false` when it died before.
fn wait_ready(ready: OwnedFd) -> io::Result<bool> {
    let mut fds = [libc::pollfd {
        fd: std::os::fd::AsRawFd::as_raw_fd(&ready.as_fd()),
        events: libc::POLLIN,
        revents: 0,
    }];
    let mut ready = File::from(ready);
    let end = Instant::now() + READY_LIMIT;
    let mut armed = false;
    loop {
        let left = end.saturating_duration_since(Instant::now());
        if sys::poll(&mut fds, left)? == 0 {
            if left.is_zero() {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the guard process did not start within 5 s (stopped?)",
                ));
            }
            continue;
        }
        let mut byte = [0u8; 1];
        match ready.read(&mut byte)? {
            0 => return Ok(armed),
            _ => armed = true,
        }
    }
}

/// `e` as it is where it holds an OS error number; else its message, saying which group it was about.
fn context(pgid: u32, e: io::Error) -> io::Error {
    crate::sys::os_error_or(e, |e| {
        format!("cannot make process group {pgid} die with this process: {e}")
    })
}
