//! The keeper's life (`job/doc/keeper.md`, "Watch", "Verdict", "End"): its start (descriptors, signals), its loop
//! (the signals sent to it, its caller's orders and death, the command's stops and exit, the job's orphans), and its
//! end: the job ended or left, the command reaped, the report written, the exit as the command's.

use std::fs::File;
use std::io::{self, Read as _};
use std::os::fd::{AsRawFd as _, IntoRawFd as _, RawFd};
use std::time::{Duration, Instant};

use crate::cgroup::Folder;
use crate::protocol::{Failure, Keep, Measured, Note, Order, Report};
use crate::reaper;
use crate::sys::{self, PollFd};

/// The keeper's end of the channel, once moved there.
const CHANNEL: RawFd = 3;
/// How long the job's end waits for it to die while the caller lives (the caller ends what is left), and once the
/// caller died (no one else will). A killed process dies as soon as it runs; on a machine as loaded as 1,000 jobs
/// ending at once on 2 CPUs, some waited longer than a second for that (the wait then failed with `TimedOut`).
const END_LIMIT: Duration = Duration::from_secs(5);
const END_LIMIT_ALONE: Duration = Duration::from_secs(30);
/// How long the keeper waits for the command's group to stop before it names its members all the same (a member in
/// uninterruptible sleep stops when it wakes); the caller waits a little longer for its note.
const LIST_LIMIT: Duration = Duration::from_millis(50);
/// While the command has exited and the job still runs in cgroup mode: how often the keeper looks at the folder
/// besides at each exit of its descendants (a process moved into the folder from outside is none of them).
const FOLDER_BACKSTOP: Duration = Duration::from_secs(1);

/// `--probe`: what the keeper needs at its start works here.
pub(crate) fn probe() -> ! {
    sys::block_all();
    std::process::exit(if sys::signal_fd().is_ok() { 0 } else { 3 })
}

/// `--keep`: keeps the job. Never returns.
pub(crate) fn keep(job: &Keep) -> ! {
    sys::block_all();
    sys::set_name(c"group-keeper");
    sys::raise_open_files();
    let moved = set_descriptors(job.channel);
    sys::default_action(sys::SIGCHLD);
    let signals = sys::signal_fd();
    let mut keeper = Keeper {
        command: job.command,
        supervisor: job.supervisor,
        me: std::process::id(),
        signals: None,
        folder: job
            .cgroup
            .as_ref()
            .map(|(folder, leave_to)| Folder::new(folder.clone(), leave_to.clone())),
        exit: None,
        exited: false,
        verdict: None,
        kill: Kill::No,
        plan: (0, 0),
        stop: None,
        told: false,
        alone: false,
        report: Report::default(),
    };
    if let Err(e) = moved {
        keeper.fail(&e, "cannot set up its descriptors");
    }
    match signals {
        Ok(fd) => keeper.signals = Some(File::from(fd)),
        Err(e) => keeper.fail(&e, "cannot make its signal descriptor"),
    }
    keeper.run()
}

/// The channel moved to [`CHANNEL`], `/dev/null` on 0-2, every other descriptor closed: the keeper holds none of its
/// caller's (a pipe held open would keep its reader waiting for an end of file).
fn set_descriptors(channel: RawFd) -> io::Result<()> {
    if channel != CHANNEL {
        sys::copy_fd(channel, CHANNEL)?;
    }
    let null = File::options().read(true).write(true).open("/dev/null")?;
    for fd in 0..3 {
        if null.as_raw_fd() != fd {
            sys::copy_fd(null.as_raw_fd(), fd)?;
        }
    }
    // Below 3 it is one of the three (kept); else closed with the rest.
    let _ = null.into_raw_fd();
    sys::close_from(CHANNEL + 1);
    Ok(())
}

/// A kill of the whole job: not asked for, asked for (the caller's order, or a `waitid` that failed), asked for and the
/// command's group named (see `Keeper::list_group`), done.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kill {
    No,
    Asked,
    Listed,
    Done,
}

struct Keeper {
    command: u32,
    supervisor: u32,
    me: u32,
    /// The signal descriptor (`None`: it could not be made; the keeper then looks every 10 ms).
    signals: Option<File>,
    folder: Option<Folder>,
    /// The command's exit, seen and not reaped (its pid stays pinned until the keeper's end), or taken for a
    /// `SIGKILL` where it cannot be watched.
    exit: Option<sys::Report>,
    /// Whether the command's exit was seen (not taken: see `lost`).
    exited: bool,
    /// The caller's verdict: end the rest of the job (`true`) or leave it.
    verdict: Option<bool>,
    /// Whether the job is to be killed (ordered, or the end of the death plan), and whether that was done.
    kill: Kill,
    /// The death plan: a signal and a grace in milliseconds.
    plan: (u32, u32),
    /// A stop of the command not told yet (the caller has not read the last one).
    stop: Option<u32>,
    /// Whether the caller was sent `SIGCHLD` for the command's exit.
    told: bool,
    /// Whether the caller died (or closed its end: the kernel closes a dying process's descriptors before it
    /// re-parents its children, so the keeper's parent may still be the caller then).
    alone: bool,
    report: Report,
}

impl Keeper {
    fn run(&mut self) -> ! {
        loop {
            self.take_signals();
            // The orders first: a death plan sent just before the caller died holds.
            let open = self.take_orders();
            if !open || sys::parent() != self.supervisor {
                self.orphaned();
            }
            if self.kill == Kill::Asked {
                self.list_group();
            }
            reaper::reap_orphans(self.command, &mut self.report.killed);
            self.watch_command();
            if matches!(self.kill, Kill::Asked | Kill::Listed) {
                // A kill asked of a job whose command exited and that nothing else is left of (the caller's kill of
                // the leftovers after a clean exit) has nothing to do: in cgroup mode it would cost the keeper its
                // move out of the folder (5-19 ms).
                if self.exited && self.job_empty() {
                    self.kill = Kill::Done;
                } else {
                    self.kill_job(END_LIMIT);
                }
            }
            if self.exit.is_some() {
                match self.verdict {
                    Some(kill) => self.finish(kill || self.kill == Kill::Done),
                    None if self.kill == Kill::Done || self.job_empty() => self.finish(true),
                    None if !self.told => {
                        // The caller hears of the exit as it would of its own child's.
                        self.told = true;
                        let _ = sys::send_signal(pid(self.supervisor), sys::SIGCHLD);
                    }
                    None => {}
                }
            }
            let timeout = if self.signals.is_none() || self.stop.is_some() {
                Some(Duration::from_millis(10))
            } else if self.exit.is_some() && self.folder.is_some() {
                Some(FOLDER_BACKSTOP)
            } else {
                None
            };
            self.sleep(timeout);
        }
    }

    /// Sleeps until a signal, an order (or the caller's end of the channel closing), or `timeout`.
    fn sleep(&self, timeout: Option<Duration>) {
        let mut fds = vec![PollFd {
            fd: CHANNEL,
            events: sys::POLLIN,
            revents: 0,
        }];
        if let Some(signals) = &self.signals {
            fds.push(PollFd {
                fd: signals.as_raw_fd(),
                events: sys::POLLIN,
                revents: 0,
            });
        }
        let _ = sys::poll_for(&mut fds, timeout);
    }

    /// Takes the signals sent to the keeper: each one sent to its pid is the command's (the job's id names the
    /// command), passed on but for the keeper's own wake-ups (`SIGCHLD`, `SIGCONT`), one the kernel sent (a
    /// terminal's) and one the keeper sent itself.
    fn take_signals(&mut self) {
        let Some(mut signals) = self.signals.as_ref() else {
            return;
        };
        let mut buf = [0u8; 128 * 16];
        loop {
            let n = match signals.read(&mut buf) {
                Ok(n) if n > 0 => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                _ => return,
            };
            for record in buf.get(..n).unwrap_or_default().chunks_exact(128) {
                let word = |at: usize| {
                    record
                        .get(at..at + 4)
                        .and_then(|b| b.try_into().ok())
                        .map_or(0, u32::from_ne_bytes)
                };
                let (signal, code, from) = (pid(word(0)), word(8), word(12));
                let mine = [sys::SIGCHLD, sys::SIGCONT].contains(&signal);
                if !mine && code != sys::SI_KERNEL.unsigned_abs() && from != self.me {
                    // The command is our unreaped child: its pid is pinned.
                    let _ = sys::send_signal(pid(self.command), signal);
                }
            }
        }
    }

    /// Takes the caller's orders; `false` once the caller's end is closed (it died, or dropped the job).
    fn take_orders(&mut self) -> bool {
        let mut buf = [0u8; 64];
        loop {
            match sys::receive_datagram(CHANNEL, &mut buf) {
                Ok(0) => return false,
                Ok(n) => match buf.get(..n).and_then(Order::decode) {
                    Some(Order::Kill) => self.kill = self.kill.max(Kill::Asked),
                    Some(Order::Verdict { kill }) => self.verdict = Some(kill),
                    Some(Order::DeathPlan { signal, grace_ms }) => self.plan = (signal, grace_ms),
                    None => {}
                },
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return e.kind() == io::ErrorKind::WouldBlock,
            }
        }
    }

    /// Looks at the command: a stop (told to the caller: a note, once it read the last one, and `SIGCHLD`), its exit
    /// (kept unreaped). A `waitid` that fails is reported and taken as the command's end: the job is ended, never
    /// watched blind.
    fn watch_command(&mut self) {
        if self.exit.is_none() {
            // One look that consumes nothing (a stop of a process that exited meanwhile, looked for alone, would fail
            // with ECHILD), then the stop taken.
            match sys::wait_child(self.command, sys::WEXITED | sys::WSTOPPED | sys::WNOWAIT) {
                Ok(Some(stop)) if stop.code == sys::CLD_STOPPED => {
                    let _ = sys::wait_child(self.command, sys::WSTOPPED);
                    // Once told to kill the job, a stop is the caller's own, before its SIGKILL: not the command's.
                    if self.kill == Kill::No {
                        self.stop = Some(stop.status.unsigned_abs());
                    }
                }
                Ok(exit) => {
                    self.exited = exit.is_some();
                    self.exit = exit;
                }
                Err(e) => self.lost(&e),
            }
        }
        if let Some(signal) = self.stop {
            // One stop note unread at most, so that the report always has room; then the caller hears of it as it
            // would of its own child's stop (`SIGCHLD`), and finds the note.
            if sys::unread(CHANNEL).is_ok_and(|n| n == 0)
                && sys::send_datagram(CHANNEL, &Note::Stopped(signal).encode()).is_ok()
            {
                self.stop = None;
                let _ = sys::send_signal(pid(self.supervisor), sys::SIGCHLD);
            }
        }
    }

    /// The command cannot be watched: reported, and the job ended.
    fn lost(&mut self, e: &io::Error) {
        self.fail(e, "cannot watch the command (waitid)");
        self.kill = self.kill.max(Kill::Asked);
        self.exit = Some(sys::Report {
            pid: pid(self.command),
            code: 2,
            status: sys::SIGKILL,
        });
    }

    /// Whether nothing of the job but the command (exited) runs: in cgroup mode no other process is in the folder
    /// (the keeper lives there; and the exited command may be listed for a moment after its exit is told: a task
    /// leaves its cgroup's list only at its last switch, after its parent was signalled), in reaper mode the keeper
    /// has no other child (it reaped those that exited).
    fn job_empty(&self) -> bool {
        match &self.folder {
            Some(folder) => {
                let exited = if self.exited { self.command } else { self.me };
                !folder.holds_others(&[self.me, exited])
            }
            None => reaper::children(self.me)
                .is_some_and(|children| children.iter().all(|&c| c == self.command)),
        }
    }

    /// Told to kill the job, before anything dies: stops the command's group (`SIGSTOP`, as the caller did) and names
    /// its members (`reached`) once each is stopped or dead (for up to [`LIST_LIMIT`]), then tells the caller, whose
    /// own `SIGKILL` of the group waits for that note. A member that the group's kill ends while its parent, a member
    /// too, is still in `wait` may be reaped by that parent and never come to the keeper: named first, it is not
    /// lost. A stopped member reaps nothing.
    fn list_group(&mut self) {
        self.kill = Kill::Listed;
        let _ = sys::send_signal(-pid(self.me), sys::SIGSTOP);
        let deadline = Instant::now() + LIST_LIMIT;
        while !reaper::name_group(self.me, self.command, &mut self.report.reached)
            && Instant::now() < deadline
        {
            let _ = sys::poll_for(&mut [], Some(Duration::from_micros(200)));
        }
        let _ = sys::send_datagram(CHANNEL, &Note::Listed.encode());
    }

    /// Kills the whole job: the command's group (the keeper is not in it), the command, then the cgroup (frozen,
    /// listed, killed, waited for) or the keeper's descendants (walked, killed), within `limit`.
    fn kill_job(&mut self, limit: Duration) {
        self.kill = Kill::Done;
        let _ = sys::send_signal(-pid(self.me), sys::SIGKILL);
        let _ = sys::send_signal(pid(self.command), sys::SIGKILL);
        let ended = match &mut self.folder {
            Some(folder) => folder.kill(self.command, limit, &mut self.report.reached),
            None => reaper::kill(
                self.command,
                limit,
                &mut self.report.reached,
                &mut self.report.killed,
            ),
        };
        if let Err(e) = ended {
            // As the caller's own kill said it, before the keeper was a program of its own.
            self.fail(&e, "");
        }
    }

    /// The caller died (its pid is no longer the keeper's parent; the parent-death signal woke the keeper) or closed
    /// its end: the death plan (its signal to the command's group and the command, `SIGCONT` unless it stops, up to
    /// its grace for the job to end), then the whole job killed, and the keeper's end.
    fn orphaned(&mut self) -> ! {
        self.alone = true;
        let (signal, grace_ms) = self.plan;
        if let (Ok(signal), true) = (
            i32::try_from(signal),
            grace_ms > 0 && self.kill != Kill::Done,
        ) {
            for target in [-pid(self.me), pid(self.command)] {
                let _ = sys::send_signal(target, signal);
                if ![sys::SIGSTOP, sys::SIGTSTP, sys::SIGTTIN, sys::SIGTTOU].contains(&signal) {
                    let _ = sys::send_signal(target, sys::SIGCONT);
                }
            }
            let end = Instant::now() + Duration::from_millis(grace_ms.into());
            loop {
                reaper::reap_orphans(self.command, &mut self.report.killed);
                self.watch_command();
                let left = end.saturating_duration_since(Instant::now());
                if (self.exit.is_some() && self.job_empty()) || left.is_zero() {
                    break;
                }
                self.take_signals();
                self.sleep(Some(left.min(Duration::from_millis(100))));
            }
        }
        if !(self.kill == Kill::Done || self.exit.is_some() && self.job_empty()) {
            self.kill_job(END_LIMIT_ALONE);
        }
        self.finish(true)
    }

    /// The keeper's end, once the command exited: the rest of the job ended (`kill`) or left running, what it used
    /// read, its folder removed (cgroup mode, unless the keeper still lives in it: the caller removes it then), every
    /// child reaped, the report written, and the exit as the command's.
    fn finish(&mut self, kill: bool) -> ! {
        let limit = if self.alone {
            END_LIMIT_ALONE
        } else {
            END_LIMIT
        };
        if kill && self.kill != Kill::Done && !self.job_empty() {
            self.kill_job(limit);
        }
        let own = sys::usage(false);
        // A keeper that exits inside the folder leaves its removal to the caller, after the keeper's reap: a caller
        // that dies first (killed the instant its command ended) would leave it behind. So, where the caller is
        // dead or dying, the keeper leaves and removes it as when alone (a migration: only then).
        let leave = self.folder.is_some() && (self.alone || self.caller_dying());
        if let Some(folder) = &mut self.folder {
            let used = folder.usage(own);
            if leave {
                // No caller will remove the folder: the keeper leaves it, and removes it below.
                let _ = folder.leave();
            }
            if !kill {
                if let Err(e) = folder.release() {
                    self.report.failure.get_or_insert(Failure::of(&e));
                }
            }
            match folder.remove() {
                Ok(removed) => self.report.folder_removed = removed,
                Err(e) => {
                    self.report.failure.get_or_insert(Failure::of(&e));
                }
            }
            if let Some((user, system)) = used.cpu {
                (self.report.user_us, self.report.system_us) = (user, system);
                self.report.measured = Measured::Cgroup;
            }
            self.report.memory = used.memory.map(|peak| (peak, true));
            self.report.processes = used.processes;
        }
        if kill && self.folder.is_some() {
            // The cgroup's kill left the keeper's children dead: reaped (any that lingers: killed again).
            let (reached, killed) = (&mut self.report.reached, &mut self.report.killed);
            if let Err(e) = reaper::kill(self.command, limit, reached, killed) {
                self.fail(&e, "");
            }
        }
        let exit = reaper::reap(self.command).or(self.exit);
        let (user, system, max_rss) = sys::usage(true);
        if self.report.measured != Measured::Cgroup {
            (self.report.user_us, self.report.system_us) = (user, system);
            self.report.measured = Measured::Keeper;
        }
        if self.report.memory.is_none() {
            self.report.memory = Some((max_rss.saturating_mul(1024), false));
        }
        self.send_report();
        exit_as(exit)
    }

    /// Whether the caller is dead or dying: the keeper was re-parented, the caller's end of the channel is closed, it
    /// is in its exit or a zombie (`/proc/PID/stat`), or a `SIGKILL` is pending for it (sent, not yet acted on:
    /// `/proc/PID/status`). A caller killed after this look is not seen.
    fn caller_dying(&self) -> bool {
        if sys::parent() != self.supervisor {
            return true;
        }
        let mut channel = [PollFd {
            fd: CHANNEL,
            events: sys::POLLIN,
            revents: 0,
        }];
        if sys::poll_for(&mut channel, Some(Duration::ZERO)).is_ok()
            && channel[0].revents & sys::POLLHUP != 0
        {
            return true;
        }
        if reaper::Stat::read(self.supervisor).is_none_or(|stat| stat.dying()) {
            return true;
        }
        let Ok(status) = std::fs::read_to_string(format!("/proc/{}/status", self.supervisor)) else {
            return true;
        };
        status.lines().any(|line| {
            let pending = |name: &str| {
                line.strip_prefix(name)
                    .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
                    .is_some_and(|mask| mask & (1 << (sys::SIGKILL - 1)) != 0)
            };
            pending("SigPnd:") || pending("ShdPnd:")
        })
    }

    /// Writes the report (a datagram the caller reads after the keeper's exit); one that does not fit names fewer
    /// processes (counted all the same).
    fn send_report(&mut self) {
        for _ in 0..16 {
            match sys::send_datagram(CHANNEL, &Note::Report(self.report.clone()).encode()) {
                Err(e) if e.raw_os_error() == Some(90) && !self.report.reached.is_empty() => {
                    // EMSGSIZE: half the names.
                    let keep = self.report.reached.len() / 2;
                    let dropped = self.report.reached.split_off(keep).len();
                    self.report.unnamed = self
                        .report
                        .unnamed
                        .saturating_add(u32::try_from(dropped).unwrap_or(u32::MAX));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(10));
                }
                _ => return,
            }
        }
    }

    /// Records the first failure (`what` the keeper could not do: said where the error has no errno of its own).
    fn fail(&mut self, e: &io::Error, what: &str) {
        let mut failure = Failure::of(e);
        if failure.errno == 0 && !what.is_empty() {
            failure.message = format!("the job's keeper {what}: {e}");
        }
        self.report.failure.get_or_insert(failure);
    }
}

/// Exits as the command did: its exit code, or death by its signal (no core dump); status 1 without its exit.
fn exit_as(exit: Option<sys::Report>) -> ! {
    if let Some(exit) = exit {
        if exit.code == sys::CLD_EXITED {
            std::process::exit(exit.status);
        }
        sys::no_core();
        sys::default_action(exit.status);
        sys::unblock(exit.status);
        let _ = sys::send_signal(pid(std::process::id()), exit.status);
    }
    std::process::exit(1)
}

/// A pid as `kill` takes it (the kernel's pids fit).
fn pid(id: u32) -> i32 {
    i32::try_from(id).unwrap_or(0)
}
