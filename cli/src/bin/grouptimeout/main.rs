//! `grouptimeout`: GNU `timeout`'s command line, with no survivors.
//!
//! The command runs as the leader of its own process group (through the library); the tool itself stays out of
//! that group. The signals the tool handles are blocked ([`host::Signals`]; unblocked only while the command is
//! spawned, so that it does not inherit them blocked), and the tool sleeps in `sigtimedwait(2)` until one arrives,
//! the command exits (`SIGCHLD`) or the next deadline passes. They stay blocked until the tool exits, so that no
//! signal can kill it while it computes its exit status. The command runs contained
//! ([`GroupCommandExt::spawn_contained`]): in a cgroup of its own where one can be made (Linux), else under the job's
//! own reaper (Linux, any user), which the library ends whole; otherwise the tool is a child subreaper ([`host::Subreaper`], Linux) and, once the command is done, kills
//! and reaps the processes it adopted that belong to the job (they carry its lineage mark, or are in its group), and
//! only reaps the others. At a terminal the command's group gets the terminal while it runs, and its stops are
//! passed on to the shell (`terminal.rs`).
#![deny(unsafe_code)]

mod args;
mod duration;
mod messages;
mod signals;
mod spawn;
mod terminal;

use std::ffi::OsString;
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use args::{Options, Parsed, UsageError};
use grouptimeout::GroupChild;
use grouptimeout_cli::host::{self, Signals, Subreaper};
use grouptimeout_job::{Containment, JobChildExt, JobCommandExt, Leftover};
use terminal::JobControl;

/// Writes `NAME: message` to stderr, `NAME` being the name the tool was run as ([`messages::program`]), ignoring
/// failure (`eprintln!` would panic on a closed pipe).
macro_rules! say {
    ($($arg:tt)*) => {
        messages::say(format!($($arg)*).as_bytes())
    };
}

const EXIT_TIMEDOUT: i32 = 124;
const EXIT_CANCELED: i32 = 125;
const EXIT_CANNOT_INVOKE: i32 = 126;
const EXIT_ENOENT: i32 = 127;
const EXIT_KILLED: i32 = 128 + libc::SIGKILL;

/// Signals passed on to the command's group when the tool receives them.
const FORWARDED: [i32; 6] = [
    libc::SIGTERM,
    libc::SIGINT,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
];

/// Signals raised by a fault in the tool itself: never handled (a handler that returns would fault again).
const SYNCHRONOUS: [i32; 6] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGILL,
    libc::SIGFPE,
    libc::SIGTRAP,
    libc::SIGSYS,
];

/// When the tool dies (even by `SIGKILL`) without `--kill-after`, how long its job has after the timeout signal before
/// it is killed: long enough for a handler's cleanup (remove its files, flush its output) on a loaded machine, short
/// enough that nothing of a dead tool's job runs on for more than a moment. With `--kill-after`, its duration.
const DEATH_GRACE: Duration = Duration::from_secs(2);

/// How long the final sweep may take when an adopted process will not die (uninterruptible sleep, `EPERM`).
const SWEEP_LIMIT: Duration = Duration::from_secs(2);

fn main() {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let code = match args::parse_args(&args) {
        Ok(Parsed::Run(opts)) => run(&opts),
        Ok(Parsed::Help) => print_stdout(&args::help(messages::program().as_bytes())),
        Ok(Parsed::Version) => print_stdout(args::VERSION.as_bytes()),
        Err(UsageError(message)) => {
            messages::usage_error(&message);
            EXIT_CANCELED
        }
    };
    std::process::exit(code)
}

/// Prints `--help` or `--version`; a failed write is GNU's `write error` and status 125, also to a standard output
/// that was closed at the start (std's runtime put `/dev/null` there, where C's write fails with `EBADF`).
fn print_stdout(text: &[u8]) -> i32 {
    if host::was_closed_at_start(libc::STDOUT_FILENO) {
        say!("write error: {}", io::Error::from_raw_os_error(libc::EBADF));
        return EXIT_CANCELED;
    }
    let mut out = io::stdout().lock();
    match out.write_all(text).and_then(|()| out.flush()) {
        Ok(()) => 0,
        Err(e) => {
            say!("write error: {e}");
            EXIT_CANCELED
        }
    }
}

/// The command: in its own group (the default), or in ours (`--foreground`).
enum Leader {
    Group(Box<GroupChild>),
    Foreground(Child),
}

impl Leader {
    fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        match self {
            Leader::Group(child) => child.try_wait(),
            Leader::Foreground(child) => child.try_wait(),
        }
    }

    /// Sends `signal` to the group (or, in the foreground, to the command alone), and `SIGCONT` after it in a group
    /// (a stopped member acts on nothing else), as GNU does; but not after a stop signal, which it would undo (GNU,
    /// in the command's group, stops itself before it can send the `SIGCONT`).
    fn signal(&mut self, signal: i32) -> io::Result<()> {
        match self {
            Leader::Group(child) => {
                child.signal(signal)?;
                if signal != libc::SIGKILL
                    && signal != libc::SIGCONT
                    && !signals::is_stop_signal(signal)
                {
                    child.signal(libc::SIGCONT)?;
                }
                Ok(())
            }
            Leader::Foreground(child) => host::signal_child(child, signal),
        }
    }

    /// After an error: kills the command (its job, if it has one) and, in the foreground, reaps it if it is still
    /// ours. A contained command is reaped when `self` is dropped (waiting at most about a second).
    fn abandon(&mut self) {
        match self {
            Leader::Group(child) => {
                let _ = child.kill();
            }
            Leader::Foreground(child) => {
                // Not `Child::kill`: it would signal the pid even if someone else had reaped it. The reap is bounded
                // as the library's drop is: a command stuck in uninterruptible sleep must not hang the tool.
                if host::signal_child(child, libc::SIGKILL).is_ok() {
                    let end = Instant::now() + Duration::from_secs(1);
                    while matches!(child.try_wait(), Ok(None)) && Instant::now() < end {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
            }
        }
    }

    fn id(&self) -> u32 {
        match self {
            Leader::Group(child) => child.id(),
            Leader::Foreground(child) => child.id(),
        }
    }

    /// The command's group, unless it runs in ours (`--foreground`).
    fn group(&mut self) -> Option<&mut GroupChild> {
        match self {
            Leader::Group(child) => Some(child),
            Leader::Foreground(_) => None,
        }
    }

    fn set_kill_leftovers(&mut self, kill: bool) {
        if let Leader::Group(child) = self {
            child.set_kill_leftovers(kill);
        }
    }

    /// Whether the sweep may kill the adopted orphan `pid` (an unreaped child of ours): one of the job's, where the
    /// tool can tell (a lineage mark); any, where it cannot (the group alone, or `--foreground`).
    fn owns_orphan(&self, pid: u32) -> bool {
        match self {
            Leader::Group(child) if child.containment() != Containment::Group => child.in_job(pid),
            _ => true,
        }
    }

    /// What the job's kills reached besides the leader (see [`JobChildExt::leftovers`]).
    fn leftovers(&self) -> Vec<Leftover> {
        match self {
            Leader::Group(child) => child.leftovers(),
            Leader::Foreground(_) => Vec::new(),
        }
    }
}

/// What happened while the command ran.
#[allow(
    clippy::struct_excessive_bools,
    reason = "independent facts of one run, each set at its own point"
)]
struct State {
    /// The signal the next timeout sends: `-s`, then `KILL` once a `--kill-after` countdown started.
    term: i32,
    /// `--kill-after`, until the first signal starts its countdown.
    kill_after: Option<Duration>,
    /// When the next timeout fires: the DURATION deadline, then the `--kill-after` one.
    alarm: Option<Instant>,
    timed_out: bool,
    sent_kill: bool,
    /// Whether any signal was sent (from then on leftovers are killed even with `--leave-running`).
    signalled: bool,
    /// Whether `KILL` could not be sent to the command (`EPERM`: it runs as a user the tool may not signal): it will
    /// not end because of us, so the tool leaves it running and exits, as GNU does.
    unkillable: bool,
    /// With `-v`: the processes of the command's group that a signal other than `KILL` the tool sent there may have
    /// been ending by itself when the final kill came (see [`may_end`]); `None` once they could not be listed.
    ending: Option<Vec<u32>>,
}

/// Runs the command and exits with the tool's status, never returning: the handled signals stay blocked until the
/// process ends, so that a signal arriving now cannot change the status (issue 8.7).
fn run(opts: &Options) -> ! {
    // The timeout's signal must reach the command with its default action, even if we were started with it ignored
    // (a background job of a script ignores INT; `trap '' TERM`). KILL and STOP cannot be ignored.
    if opts.signal != 0 {
        if let Err(e) = host::stop_ignoring(opts.signal) {
            say!(
                "warning: cannot stop ignoring signal {}: {e}",
                signals::signal_name(opts.signal)
            );
        }
    }
    // SIGCHLD also reports the command's stops, and SIGCONT the tool's own `fg`/`bg` (see `JobControl`). TTIN and
    // TTOU, blocked, never stop the tool (GNU ignores them): with `stty tostop`, a background tool's message would
    // stop it before its deadline's signal; the kernel lets a write through when SIGTTOU is blocked. Blocked and
    // handled, not ignored: the command, spawned with them unblocked, gets their default actions.
    let mut handled = vec![
        libc::SIGALRM,
        libc::SIGCHLD,
        libc::SIGCONT,
        libc::SIGTTIN,
        libc::SIGTTOU,
    ];
    // GNU also passes on the signal chosen with -s when the tool receives it.
    let chosen = (opts.signal != 0
        && ![libc::SIGKILL, libc::SIGSTOP].contains(&opts.signal)
        && !SYNCHRONOUS.contains(&opts.signal))
    .then_some(opts.signal);
    for signal in FORWARDED.into_iter().chain(chosen) {
        // A signal the parent made us ignore (nohup, a background job of a script) stays ignored, so that the
        // command inherits it ignored, as it would without grouptimeout. GNU handles it anyway.
        if !handled.contains(&signal) && !host::signal_is_ignored(signal).unwrap_or(false) {
            handled.push(signal);
        }
    }
    // Before the spawn: from here on no handled signal can end the tool and leave the command unsupervised.
    let mut signals = match Signals::install(&handled) {
        Ok(signals) => signals,
        Err(e) => {
            say!("cannot install signal handlers: {e}");
            std::process::exit(EXIT_CANCELED);
        }
    };
    let code = supervise_command(opts, &mut signals);
    // Exit with `signals` still installed (not dropped): see above.
    std::process::exit(code)
}

/// Makes the tool a child subreaper (`None`: not Linux, there is nothing to sweep with). Only after the signal
/// handlers are installed (`SIGCHLD` must not be ignored).
fn become_subreaper() -> Option<io::Result<Subreaper>> {
    cfg!(all(
        any(target_os = "linux", target_os = "android"),
        not(grouptimeout_portable)
    ))
    .then(|| {
        // The library's error is the OS error itself where a system call failed (its text the system's): say where.
        Subreaper::new().map_err(|e| match e.raw_os_error() {
            Some(_) => io::Error::new(
                e.kind(),
                format!("cannot use /proc (this process's status and children list) or become a subreaper: {e}"),
            ),
            None => e,
        })
    })
}

#[allow(
    clippy::too_many_lines,
    reason = "the supervise loop, read top to bottom"
)]
fn supervise_command(opts: &Options, signals: &mut Signals) -> i32 {
    // In the foreground the command has no job boundary: the tool becomes a subreaper before the spawn, so that it
    // adopts every orphan the command leaves (children it already has are not the command's).
    let mut subreaper = opts.foreground.then(become_subreaper).flatten();
    // At a terminal, the command's group gets it (and the tool takes it back below, before anything else).
    let mut job = (!opts.foreground).then(JobControl::new);
    // Quoted when a message first shows it: most runs show none, and the first quote loads the locale.
    let name = messages::Quoted::new(opts.command[0].as_encoded_bytes());
    // GNU's command inherits an ignored SIGPIPE; std would reset it (at the cost of fork + exec, so only then).
    let keep_sigpipe = host::sigpipe_was_ignored_at_start();
    let path = std::env::var_os("PATH");
    // Spawned with the handled signals unblocked: the command must not inherit them blocked.
    let spawned = signals.unblocked(|| {
        spawn::like_execvp(&opts.command, path.as_deref(), |program, args| {
            let mut command = Command::new(program);
            command.args(args);
            if keep_sigpipe {
                host::keep_sigpipe_ignored(&mut command);
            }
            if opts.foreground {
                command.spawn().map(Leader::Foreground)
            } else {
                command
                    .spawn_contained()
                    .map(|child| Leader::Group(Box::new(child)))
            }
        })
    });
    let mut leader = match spawned {
        Ok(Ok(leader)) => leader,
        Ok(Err(e)) => {
            let (message, code) = messages::spawn_failure(&opts.command[0], &e);
            say!("{message}");
            return code;
        }
        Err(e) => {
            say!("cannot unblock signals for the command: {e}");
            return EXIT_CANCELED;
        }
    };
    leader.set_kill_leftovers(!opts.leave_running);
    if let (Some(job), Some(child)) = (&mut job, leader.group()) {
        job.start(child);
    }
    // `kill -9` on the tool (or its crash) must not leave the command's group running: a guard kills the group when
    // the tool dies. Not fatal if it cannot be arranged. On Linux the keeper program in its guard mode, named
    // `group-guard` (a `killall grouptimeout` spares it); elsewhere a shell.
    if let Leader::Group(child) = &mut leader {
        // A weaker boundary than the first one tried is never silent with -v: which one the job got, and why.
        if let (true, Some(why)) = (opts.verbose, child.fallback_reason()) {
            say!(
                "command {name} runs with a job boundary of {}: {why}",
                mode_name(child.containment())
            );
        }
        // The tool's death gives the job its timeout signal first, as GNU's `PR_SET_PDEATHSIG` does, then `SIGKILL`
        // after `--kill-after` (else `DEATH_GRACE`). `die_with_parent` below passes the plan on: to a contained job's
        // keeper (armed at the spawn; it acts on the plan only once the tool died), else to the guard. The tool never
        // waits through the library with a deadline, so the grace changes nothing else.
        child.set_grace(opts.signal, opts.kill_after.unwrap_or(DEATH_GRACE));
        if let Err(e) = child.die_with_parent() {
            // The library's error is the OS error itself where there is one (its text the system's): say what failed.
            if e.raw_os_error().is_some() {
                say!(
                    "warning: cannot make process group {} die with this process: {e}",
                    child.id()
                );
            } else {
                say!("warning: {e}");
            }
        }
        // A cgroup holds every process the command starts, and the job's own reaper adopts every orphan of the job:
        // the library ends either whole, so no subreaper here (a process-wide, irreversible role). Otherwise the tool
        // adopts the orphans, to kill the job's among them and reap the rest. After the spawn and the guard: both are
        // children the sweep must leave alone (an orphan that left the job before this point is still found by its
        // lineage mark).
        if !matches!(
            child.containment(),
            Containment::Cgroup | Containment::Reaper
        ) {
            subreaper = become_subreaper();
        }
    }

    let mut state = State {
        term: opts.signal,
        kill_after: opts.kill_after,
        alarm: opts.duration.and_then(|d| Instant::now().checked_add(d)),
        timed_out: false,
        sent_kill: false,
        signalled: false,
        unkillable: false,
        ending: Some(Vec::new()),
    };
    let reaper = subreaper.as_mut().and_then(|s| s.as_mut().ok());
    let waited = supervise(
        opts,
        reaper,
        &name,
        &mut leader,
        signals,
        &mut state,
        job.as_mut(),
    );
    if let Some(job) = &job {
        job.finish();
    }
    // A command left running (it could not be killed) is still a child std owns: the sweep must not touch it.
    let mut owned = vec![];
    match waited {
        // Kill the job, and in the foreground reap the leader (if still ours), before the sweep, which must not reap a
        // child std owns (a contained leader is one of the children the subreaper had before: never touched).
        Err(_) => leader.abandon(),
        Ok(None) => {
            owned.push(leader.id());
            // Its guard too: a child of ours, never to be swept.
            owned.extend(leader.group().and_then(|child| child.guard_id()));
        }
        Ok(Some(_)) => {}
    }
    let mut killed = leader.leftovers();
    let leave = opts.leave_running && !state.signalled;
    if !leave {
        match &mut subreaper {
            None => {}
            Some(Ok(subreaper)) => {
                // The orphans the sweep spares; those still running after it (children of ours, not reaped: the pid
                // is theirs) whose environment, with the job's mark, cannot be read are named.
                let mut spared = vec![];
                let sweep = subreaper.sweep_matching(&owned, SWEEP_LIMIT, |pid| {
                    let owns = leader.owns_orphan(pid);
                    if !owns && !spared.contains(&pid) {
                        spared.push(pid);
                    }
                    owns
                });
                let unknown: Vec<(u32, String)> = spared
                    .into_iter()
                    .filter(|&pid| running_name(pid).is_some() && environment_unreadable(pid))
                    .filter_map(|pid| Some((pid, running_name(pid)?)))
                    .collect();
                if !unknown.is_empty() {
                    let named: Vec<(u32, &str)> = unknown
                        .iter()
                        .map(|(pid, name)| (*pid, name.as_str()))
                        .collect();
                    say!("{}", messages::unknown_leftovers(&named));
                }
                match sweep {
                    Ok(done) => {
                        if !done.left.is_empty() {
                            say!("could not kill processes {:?}", done.left);
                        }
                        for left in done.killed {
                            if !killed.iter().any(|k| k.pid == left.pid) {
                                killed.push(left);
                            }
                        }
                    }
                    Err(e) => say!("cannot kill the processes left behind: {e}"),
                }
            }
            Some(Err(e)) => {
                say!("cannot kill processes that left the command's group, if any: {e}");
            }
        }
    }
    // Every process the kills reached is named (when the command exited by itself, what was left then is what GNU
    // leaves running), but, after a signal other than KILL, one of the command's group that the signal may have been
    // ending by itself (see `may_end`): whether it was still dying of it when the final kill came is chance. Where
    // the group could not be listed, none is named after such a signal.
    let named: Vec<(u32, &str)> = killed
        .iter()
        .filter(|k| {
            !state.signalled
                || state.sent_kill
                || state.ending.as_ref().is_some_and(|e| !e.contains(&k.pid))
        })
        .map(|k| (k.pid, k.name.as_str()))
        .collect();
    if opts.verbose && !named.is_empty() {
        say!("{}", messages::killed_leftovers(&named));
    }
    // What the job used, once it has ended (a command left running has none yet; nor has `--foreground`'s).
    if let (true, Some(usage)) = (opts.stats, leader.group().and_then(|c| c.usage())) {
        say!("{}", messages::stats(&usage));
    }
    if matches!(waited, Ok(None)) {
        // Not dropped: the drop would try to kill it again and wait a second for it.
        std::mem::forget(leader);
    }
    let status = match waited {
        Ok(Some(status)) => status,
        Ok(None) => return killed_status(opts, &state),
        Err(e) => {
            say!("error waiting for command {name}: {e}");
            return EXIT_CANCELED;
        }
    };
    exit_code(opts, &state, status)
}

/// Whether process `pid`'s environment cannot be read for lack of permission (a setuid or non-dumpable program): the
/// tool cannot see the job's mark there.
fn environment_unreadable(pid: u32) -> bool {
    std::fs::File::open(format!("/proc/{pid}/environ"))
        .is_err_and(|e| e.kind() == io::ErrorKind::PermissionDenied)
}

/// Process `pid`'s line in `/proc/PID/stat`, split: its name, and the fields after it (state, ppid, pgrp, …). One
/// `read` (procfs gives the line whole; it fits in 1 KiB), not `read_to_string`'s probes: [`may_end`] reads it for
/// every process of the system.
fn proc_stat(pid: u32) -> Option<(String, Vec<String>)> {
    use std::io::Read as _;
    let mut buf = [0u8; 1024];
    let n = std::fs::File::open(format!("/proc/{pid}/stat"))
        .ok()?
        .read(&mut buf)
        .ok()?;
    let stat = String::from_utf8_lossy(buf.get(..n)?);
    let (name, rest) = stat.split_once(" (")?.1.rsplit_once(") ")?;
    Some((
        name.to_owned(),
        rest.split(' ').map(str::to_owned).collect(),
    ))
}

/// The processes in process group `group` now (zombies included) that `signal`, just sent to the group, may end by
/// itself: those that catch it (whatever their handler does), and those that leave it to its default action where
/// that ends a process (`TERM`, not `URG`), unless they ignore it; a member whose dispositions cannot be read
/// counts too. From `/proc` (Linux); `None` where it cannot be read (or elsewhere). A process that leaves `/proc`
/// meanwhile is left out: it has been reaped.
fn may_end(group: u32, signal: i32) -> Option<Vec<u32>> {
    if !cfg!(all(
        any(target_os = "linux", target_os = "android"),
        not(grouptimeout_portable)
    )) {
        return None;
    }
    let group = group.to_string();
    let bit = u32::try_from(signal - 1)
        .ok()
        .and_then(|n| 1_u64.checked_shl(n))?;
    let members = std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let (_, fields) = proc_stat(pid)?;
            // After the name: state (3), ppid (4), pgrp (5).
            if *fields.get(2)? != group {
                return None;
            }
            // The signal masks in `status` (hexadecimal, bit N-1 for signal N): ignored, caught.
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
            let mask = |key: &str| {
                status
                    .lines()
                    .find_map(|line| line.strip_prefix(key))
                    .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
            };
            let spared = match (mask("SigIgn:"), mask("SigCgt:")) {
                (Some(ignored), Some(caught)) => {
                    ignored & bit != 0
                        || (caught & bit == 0 && !signals::terminates_by_default(signal))
                }
                _ => false,
            };
            (!spared).then_some(pid)
        })
        .collect();
    Some(members)
}

/// The name of process `pid` if it still runs (not a zombie, not exiting: an exiting process's `/proc` files are
/// root's) as a child of the tool (an adopted orphan: then the pid is still its own), from `/proc/PID/stat`.
fn running_name(pid: u32) -> Option<String> {
    /// The kernel's flag of a process that is exiting (include/linux/sched.h).
    const PF_EXITING: u64 = 0x4;
    let (name, fields) = proc_stat(pid)?;
    // After the name: state (3), ppid (4), ..., flags (9).
    let running = !matches!(fields.first()?.as_str(), "Z" | "X" | "x");
    let ours = *fields.get(1)? == std::process::id().to_string();
    let exiting = fields.get(6)?.parse::<u64>().ok()? & PF_EXITING != 0;
    (running && ours && !exiting).then_some(name)
}

/// Waits for the command, passing on signals and firing the timeouts, until it is reaped; `None` when it could not be
/// killed and is left running (see [`State::unkillable`]).
fn supervise(
    opts: &Options,
    mut subreaper: Option<&mut Subreaper>,
    name: &messages::Quoted,
    leader: &mut Leader,
    signals: &mut Signals,
    state: &mut State,
    mut job: Option<&mut JobControl>,
) -> io::Result<Option<ExitStatus>> {
    loop {
        // Read the clock before checking the command: an exit seen now counts as before the deadline.
        let now = Instant::now();
        let exited = match leader.try_wait() {
            Ok(exited) => exited,
            // A failed group kill (EPERM: a member that changed user) is reported after the leader was reaped;
            // the next call returns its status.
            Err(e) => match leader.try_wait() {
                Ok(Some(status)) => {
                    say!("cannot kill every process the command left behind: {e}");
                    Some(status)
                }
                _ => return Err(e),
            },
        };
        if let Some(status) = exited {
            return Ok(Some(status));
        }
        if state.unkillable {
            say!("leaving command {name} (pid {}) running", leader.id());
            return Ok(None);
        }
        if state.alarm.is_some_and(|alarm| now >= alarm) {
            state.alarm = None;
            cleanup(opts, name, leader, state, job.as_deref_mut(), libc::SIGALRM);
            continue;
        }
        // Wake for the next timeout, for a scan for exited orphans that no SIGCHLD named, or to see whether a command
        // waiting for the terminal can have it (`JobControl::recheck_in`).
        let reap_due = subreaper.as_deref().and_then(Subreaper::reap_due);
        let recheck = job
            .as_deref()
            .and_then(JobControl::recheck_in)
            .and_then(|after| now.checked_add(after));
        let wake = [state.alarm, reap_due, recheck].into_iter().flatten().min();
        let received = signals.wait(wake.map(|wake| wake.saturating_duration_since(now)))?;
        if let (None | Some(libc::SIGCHLD | libc::SIGCONT), Some(job), Some(child)) =
            (received, job.as_deref_mut(), leader.group())
        {
            job.on_event(child, received);
        }
        // The one place that handles SIGCHLD (sent for stops and continues too). Adopted orphans that exited: reap
        // them now rather than let zombies pile up in a long run.
        let sigchld = received == Some(libc::SIGCHLD);
        if sigchld || reap_due.is_some_and(|due| Instant::now() >= due) {
            if let Some(subreaper) = subreaper.as_deref_mut() {
                let exited = if sigchld {
                    signals.exited_child()
                } else {
                    None
                };
                // The guard is ours as the leader is: never reaped here, so its pid is never given to another.
                let guard = leader.group().and_then(|child| child.guard_id());
                let owned: Vec<u32> = [Some(leader.id()), guard].into_iter().flatten().collect();
                let _ = subreaper.reap_exited(&owned, exited);
            }
        }
        #[allow(
            clippy::match_same_arms,
            reason = "each arm says why the signal needs nothing"
        )]
        match received {
            None | Some(libc::SIGCHLD) => {}
            // The tool was continued (`fg`, `bg`); with `-s CONT` it is also passed on, as GNU does.
            Some(libc::SIGCONT) if opts.signal != libc::SIGCONT => {}
            // Ignored, as GNU ignores them (even with `-s TTIN`).
            Some(libc::SIGTTIN | libc::SIGTTOU) => {}
            Some(signal) => cleanup(opts, name, leader, state, job.as_deref_mut(), signal),
        }
    }
}

/// GNU's `cleanup`: a timeout (`SIGALRM`, from the timer or from outside) sends the `-s` signal and counts as timed
/// out; any other signal is passed on. The first of them starts the `--kill-after` countdown, after which the
/// timeout signal is `KILL`. A signal that cannot be sent is reported at once (GNU says nothing).
fn cleanup(
    opts: &Options,
    name: &messages::Quoted,
    leader: &mut Leader,
    state: &mut State,
    job: Option<&mut JobControl>,
    mut signal: i32,
) {
    if signal == libc::SIGALRM {
        state.timed_out = true;
        signal = state.term;
    }
    if let Some(kill_after) = state.kill_after.take() {
        state.term = libc::SIGKILL;
        state.alarm = Instant::now().checked_add(kill_after);
    }
    if opts.verbose {
        say!(
            "sending signal {} to command {name}",
            signals::signal_name(signal)
        );
    }
    state.signalled = true;
    state.sent_kill |= signal == libc::SIGKILL;
    leader.set_kill_leftovers(true);
    if let Some(job) = job {
        job.sent(signal);
    }
    let sent = leader.signal(signal);
    // What the signal may end, for `-v`'s list of the processes killed (see `State::ending`): in the command's group
    // (its id is `id()`, the command's or its keeper's). In the foreground it reached the command alone.
    if let (true, Leader::Group(child)) = (
        opts.verbose && signal != 0 && signal != libc::SIGKILL,
        &*leader,
    ) {
        match (&mut state.ending, may_end(child.id(), signal)) {
            (Some(ending), Some(members)) => ending.extend(members),
            _ => state.ending = None,
        }
    }
    if let Err(e) = sent {
        let pid = leader.id();
        if signal == libc::SIGKILL && e.kind() == io::ErrorKind::PermissionDenied {
            say!("cannot kill command {name} (pid {pid}): {e}");
            state.unkillable = true;
        } else {
            say!(
                "cannot send signal {} to command {name} (pid {pid}): {e}",
                signals::signal_name(signal)
            );
        }
    }
}

/// A job boundary's name as `-v` says it.
fn mode_name(mode: Containment) -> &'static str {
    match mode {
        Containment::Cgroup => "cgroup",
        Containment::Reaper => "reaper",
        Containment::Lineage => "lineage",
        _ => "group",
    }
}

/// The status once the tool sent `KILL` (`-s KILL`, or `--kill-after` expired), or the command died of `KILL` after
/// the timeout: GNU's `KILL` goes to its own process group, which GNU shares with the command (not with
/// `--foreground`), so it dies of it, and its caller sees a death by signal 9 (a shell shows 137). The tool is not in
/// the command's group and dies of the same signal once it has swept, named and reaped what it must. With
/// `--foreground` (GNU's `KILL` reaches the command only) or when the timeout's `KILL` came from elsewhere, 137.
fn killed_status(opts: &Options, state: &State) -> i32 {
    if state.sent_kill && !opts.foreground {
        host::exit_as_signaled(libc::SIGKILL);
    }
    EXIT_KILLED
}

/// The tool's exit status, as GNU computes it (or does not return: re-raises the command's fatal signal).
fn exit_code(opts: &Options, state: &State, status: ExitStatus) -> i32 {
    if let Some(signal) = status.signal() {
        if status.core_dumped() {
            say!("the monitored command dumped core");
        }
        if state.sent_kill || (state.timed_out && signal == libc::SIGKILL) {
            return killed_status(opts, state);
        }
        if !state.timed_out {
            host::exit_as_signaled(signal);
        }
        return if opts.preserve_status {
            128 + signal
        } else {
            EXIT_TIMEDOUT
        };
    }
    if state.sent_kill {
        return killed_status(opts, state);
    }
    let code = status.code().unwrap_or(EXIT_CANCELED);
    if state.timed_out && !opts.preserve_status {
        EXIT_TIMEDOUT
    } else {
        code
    }
}
