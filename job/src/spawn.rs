//! [`JobCommandExt::spawn_contained`] and [`Contain`], the builder behind it, which draws a job's boundary (from
//! `contain/`) and spawns its leader as a [`GroupChild`] with that boundary attached (`child.rs`).

use std::io;
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::Command;

use grouptimeout::GroupChild;

#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
use crate::child::attached;
use crate::child::Attached;
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
use crate::contain::{cgroup, lineage, Bound};
use crate::contain::{Containment, Job};

/// Extends [`std::process::Command`] with [`spawn_contained`](JobCommandExt::spawn_contained). Sealed: implemented
/// for [`Command`] only.
pub trait JobCommandExt: sealed::Sealed {
    /// [`spawn_group`](grouptimeout::GroupCommandExt::spawn_group) plus a job boundary: every promise of `spawn_group`
    /// holds, and wherever the group is killed (the deadline, the end of a grace period, the leftovers after the
    /// leader's exit, [`kill`](GroupChild::kill), a [`GroupHandle`](grouptimeout::GroupHandle)'s, the drop), the job's
    /// processes that left the group (`setsid`, double-forking daemons) are killed too, before the call returns. Any
    /// other signal (a grace signal, [`signal`](GroupChild::signal)) reaches the command's group (and the command)
    /// only, so that a supervisor inside the job keeps its own signal plan (see [`Contain`]).
    ///
    /// The boundary is a cgroup v2 of the job's own where one can be made (Linux), else the job's own reaper (Linux),
    /// else the job's lineage (a mark in the environment, Linux), else the group alone;
    /// [`JobChildExt::containment`](crate::JobChildExt::containment) says which,
    /// [`fallback_reason`](crate::JobChildExt::fallback_reason) why it is not the first, and
    /// [`leftovers`](crate::JobChildExt::leftovers) lists what the kills reached. [`Contain`] chooses otherwise (a
    /// cgroup folder delegated to a service, no fallback), and says what each mode reaches and what it cannot catch.
    ///
    /// The cost: in cgroup and reaper mode the spawn starts the job's keeper (see [`Contain`]), a program of its own,
    /// through a child that shares this process's memory (a plain spawn, one `exec` more, at any size of this process;
    /// the first such spawn of a process writes the program into a memory file and probes it); the keeper ends the
    /// job, off this process's thread. In lineage mode each kill scans `/proc`. `BENCHMARKS.md` has the numbers.
    ///
    /// # Errors
    ///
    /// As for [`Contain::spawn`]: as for `spawn_group` (std's error of the command's `exec` included).
    fn spawn_contained(&mut self) -> io::Result<GroupChild>;
}

mod sealed {
    pub trait Sealed {}

    impl Sealed for std::process::Command {}
}

impl JobCommandExt for Command {
    fn spawn_contained(&mut self) -> io::Result<GroupChild> {
        Contain::new().spawn(self)
    }
}

/// How [`spawn_contained`](JobCommandExt::spawn_contained) draws a job's boundary; [`Contain::spawn`] spawns
/// with it.
///
///
/// | Mode | Where | What `SIGKILL` reaches | What a catchable signal reaches | What it cannot catch |
/// |------|-------|-----------------|-----------------|----------------------|
/// | [`Cgroup`](Containment::Cgroup) | Linux 5.14+, cgroup v2, where this process may make a cgroup | every process started by the command, at once (`cgroup.kill`), setuid and non-dumpable ones included | the command's group, and the command if it left it | a process moved to another cgroup by someone allowed to, the job itself included when it has this process's rights (as root, its pid written to a parent's `cgroup.procs`): that process and what it starts survive |
/// | [`Reaper`](Containment::Reaper) | Linux, `/proc` of our PID namespace (with `/proc/PID/task/TID/children`), pidfds (5.3+); any user, root in a container | every process started by the command, however it daemonised (`setsid`, double fork, `env -i`, a new title, setuid and non-dumpable programs: `ssh-agent`, `gpg-agent`), since each stays a descendant of the job's keeper, a child subreaper | the command's group, and the command if it left it | a process it may not signal (one that became another user through a setuid program: named in the error); a job that kills its keeper (`kill -9 $PPID`): its processes are then found by its group and its lineage mark only (an `env -i` escapee survives); a process that runs after the keeper ended the job and whose parent it could not kill |
/// | [`Lineage`](Containment::Lineage) | Linux, `/proc` of our PID namespace, pidfds (5.3+) | the group and every process that still carries the job's mark | the command's group, and the command if it left it | a process whose environment does not show the mark: cleared or replaced (`env -i`, `execve` with a new one), or overwritten by a new process title (perl's `$0`, `setproctitle`); a non-dumpable process (`ssh-agent`, `gpg-agent`, setuid programs: reading its environment needs root with `CAP_SYS_PTRACE`); a process of a user we may not signal (named in the error) |
/// | [`Group`](Containment::Group) | everywhere | the process group (as `spawn_group`) | the same | a process that left the group (`setsid`, `setpgid`) |
///
/// The README's "The whole job" lists what survived each mode in a measured run.
///
/// # Signals: only `SIGKILL` reaches the whole job
///
/// Every mode signals a job as systemd's `KillMode=mixed` does: `SIGKILL` (the deadline's kill, the kill after a
/// grace period, [`kill`](GroupChild::kill), the leftovers' kill, the drop) reaches every process of the job, but
/// any other signal (the grace signal of [`set_grace`](GroupChild::set_grace), [`signal`](GroupChild::signal), a
/// [`GroupHandle`](grouptimeout::GroupHandle)'s, the `SIGCONT` after a grace signal) reaches the command's process group,
/// and the command by its pid if it left that group, as GNU `timeout` sends it. So a supervisor inside the job keeps
/// its own signal plan for its own job: `grouptimeout -s ALRM 30 grouptimeout -s USR1 25 cmd` (or a library job
/// whose command is the tool), sent `ALRM`, gives `cmd` the inner tool's `USR1`, never the outer `ALRM`, and
/// processes the command started outside its group (a `setsid` daemon, a nested job) get no catchable signal from
/// this job; the `SIGKILL` that follows (at the end of a grace period, or when the command exits) ends them all. A
/// `SIGSTOP` sent with [`signal`](GroupChild::signal) stops the command's group only, the rest of the job runs on.
///
/// By default the cgroup is tried first, then the reaper, then lineage, then the group: each fallback is silent, and
/// [`JobChildExt::containment`](crate::JobChildExt::containment) says which mode the job got;
/// [`require`](Contain::require) turns a fallback below a mode into an error. A cgroup in which the command could not
/// be started (its folder could not be made, or, where `clone3` is refused, the spawning child's move into it failed,
/// say because the parent folder is a thread root, whose domain children are "domain invalid", or the kernel is older
/// than 5.14) counts as none: its folder is removed and the command is spawned in the next mode (none of it ran:
/// that is decided before its process exists, and the caller's `pre_exec` hooks run in the command's process only,
/// once). So do both keeper modes where the keeper program cannot run (see "The keeper"). Lineage is used only where
/// the reaper cannot be had (or is turned off with [`reaper(false)`](Contain::reaper)): the reaper catches everything
/// lineage does, and more, at a cost that does not grow with the host's process count; lineage's mark stays on a
/// reaper job's command as the backup for a job that killed its keeper.
///
/// Descriptors count too. A kept spawn needs 4 free descriptors (the keeper program's memory file, kept for the
/// process once made, the job's channel, and the cgroup's folder for the spawn); a kept job holds 4 while it runs (the
/// channel, a pidfd of the command and one of the keeper, and the epoll set its waits sleep on); the reaper also needs
/// lineage's room (its mark is the backup). Lineage's kill points hold 2 at once beside the wait's pidfd: 3 free at the
/// spawn. A mode without that room is skipped, and a spawn that fails for want of a descriptor (`EMFILE`, `ENFILE`) in
/// the cgroup or with the mark counts as none too: the next mode is tried, down to the plain group, which needs no
/// more than [`spawn_group`](grouptimeout::GroupCommandExt::spawn_group). The room is checked at the spawn only: a kill
/// point of lineage that finds none later fails, saying so (the group itself is still signalled). The keeper raises
/// its own limit of open descriptors to the hard limit, so that a caller short of them does not leave it unable to end
/// the job.
///
/// # Waiting for the whole job
///
/// With [`set_wait_for_job(true)`](GroupChild::set_wait_for_job), a wait that sees the command exit waits for the
/// rest of the job to exit on its own, up to the deadline (then the job is ended as at any deadline: the grace signal
/// to the command's group, the grace period, which ends once the whole job is gone, `SIGKILL` to the whole job;
/// [`Outcome::TimedOut`](grouptimeout::Outcome::TimedOut)). The keeper (or the plain group's leader) stays unreaped
/// meanwhile, so the group's id stays the job's. How each mode sees the rest exit, without a busy loop (where the wait
/// sleeps on a descriptor, it also checks again every second, in case the descriptor's notice never comes: a keeper
/// stopped with `kill -STOP` is continued then):
///
/// - [`Cgroup`](Containment::Cgroup) and [`Reaper`](Containment::Reaper): the keeper, a child subreaper that reaps
///   every orphan of the job as it exits, is told of the job's last exit (`SIGCHLD`: the last process of a job has the
///   keeper or a live member of it for its parent), ends the job itself once nothing of it but the command is left (in
///   cgroup mode: no other process in the folder, which it also looks at every second while it waits, for a process
///   moved into it from outside), and exits; the wait sleeps on the keeper's pidfd. Every process of the job counts,
///   however it daemonised.
/// - [`Lineage`](Containment::Lineage): a scan of `/proc` for a live member of the group or a live process that
///   carries the mark (what the mode's kill finds), on the core's poll schedule, spaced to about 50 times the scan's
///   own time (about 2 % of a CPU whatever `/proc` holds): seen some tens of milliseconds late.
/// - [`Group`](Containment::Group): the same scan for a live member of the group, the guard of
///   [`die_with_parent`](crate::JobChildExt::die_with_parent) left out. A process that left the group (`setsid`) is
///   not waited for.
///
/// Measured here, a wait of about a second for a `setsid` daemon cost the waiting thread 0.2 ms of CPU in cgroup and
/// reaper modes, 14-24 ms in lineage and group modes (`job/tests/whole_job.rs` bounds it at 100 ms).
///
/// # The cgroup
///
/// The job's cgroup is made as a child of this process's own cgroup v2 (found through `/proc/self/cgroup`, at the
/// usual mount, `/sys/fs/cgroup` or `/sys/fs/cgroup/unified`, where a cgroup2 file system there holds that folder,
/// else through `/proc/self/mountinfo`), or of the folder named with [`cgroup_parent`](Contain::cgroup_parent); this process is
/// never moved, and no cgroup the crate did not make is changed. Where systemd manages the tree (the folder
/// `/run/systemd/system` exists, systemd's own test), the own cgroup is used only if systemd delegated it: it or a
/// cgroup above it has the extended attribute `trusted.delegate` or `user.delegate` set to `1`, which systemd sets
/// for units with `Delegate=yes`. A service gets such a cgroup with `Delegate=yes` in its unit (or
/// `systemd-run -p Delegate=yes …`); since a cgroup that holds processes may not enable controllers for its
/// children, such a service usually moves itself into a child folder at start (say `…/service.scope/main`) and
/// names its unit's folder with [`cgroup_parent`](Contain::cgroup_parent), which skips the systemd test.
///
/// The command is born inside the job's cgroup with its keeper (below): on x86-64 the spawning child makes the folder
/// and its successor in it with `clone3(CLONE_INTO_CGROUP)`, which never migrates (a migration waits for an RCU grace
/// period unless the cgroup2 hierarchy is mounted with `favordynmods`: 5-19 ms measured on Linux 6.18 for a single
/// spawn); where `clone3` is refused, and on other architectures, the spawning child moves itself in before the
/// command exists (that migration, then, while this thread waits for it). The command runs no instruction outside it. The keeper ends the job: it leaves the folder (a migration, on
/// its time), freezes it, lists it, kills it with `cgroup.kill` (which reaches the sub-cgroups a job may make in its
/// folder too), waits for `populated 0` (at most 5 s while this process lives, off its threads: a process stuck in
/// uninterruptible sleep can keep it longer, and the wait then fails with `TimedOut` and leaves the folder behind)
/// and removes the folder with those sub-cgroups (deepest first). A job that ended on its own needs none of it: its
/// keeper exits inside the folder, and the wait removes it after the keeper's reap (one `rmdir`); where this process
/// is dying then (a `SIGKILL` pending, in its exit, its end of the job's channel closed), the keeper leaves the folder
/// and removes it itself. Not covered: this process killed in the instant between that look and its `rmdir`, which
/// leaves the folder behind, empty. With [`set_kill_leftovers(false)`](GroupChild::set_kill_leftovers) the leftovers (those in sub-cgroups too) are moved to
/// the cgroup the caller runs in before the folder is removed: not to the parent folder, which, when named with
/// [`cgroup_parent`](Contain::cgroup_parent), may have controllers enabled for its children and then may hold no
/// process of its own (the kernel's "no internal processes" rule: `EBUSY`).
///
/// # The keeper (cgroup and reaper modes)
///
/// The process the spawn makes ([`GroupChild::id`]) is the job's keeper; the command is its child
/// ([`JobChildExt::command_id`](crate::JobChildExt::command_id) is its pid). The keeper is a program of its own,
/// `group-keeper`, which this crate's build script compiles from its source and embeds, and which the first kept spawn
/// of a process writes into a sealed memory file (kept open for the process's life: the crate's one piece of
/// process-wide state) and probes. The spawn makes a child that shares this process's memory and sleeps this thread
/// until it execs (no copy of this process is made, whatever its size, and this process's later writes to its memory
/// cost nothing): that child spawns the command with std's own `Command::spawn` (so every setting of the `Command`, the
/// `pre_exec` hooks included, applies to the command's process alone, once), sends its standard streams back, and
/// execs the program. The crate's docs ("The keeper, step by step") say what each step does, what each failure leads
/// to, and what was rejected; what the spawn costs is in `grouptimeout`'s `BENCHMARKS.md`.
///
/// Where the keeper program cannot run, the keeper modes are not had, and
/// [`fallback_reason`](crate::JobChildExt::fallback_reason) (or the error of [`require`](Contain::require)) says why: a
/// build that could not compile it (its build script warned), or a system that refuses to execute a memory file
/// (`vm.memfd_noexec` = 2, a seccomp rule on `memfd_create` or `execveat`).
///
/// - The command starts in the group whose id is the keeper's pid ([`GroupChild::id`]), which the keeper is never in:
///   every group signal of the crate, and a terminal's, reaches the command's group and not the keeper. The command's
///   parent (`getppid`) is the keeper.
/// - The keeper is a child subreaper in both modes: every orphan of the job becomes its child, and it reaps them as
///   they exit (never the command before the job's end).
/// - From before the command's first instruction, the keeper is the job's guard: when this process dies (any way;
///   the keeper gets a parent-death signal, or reads the end of its channel), it ends the job and removes its folder.
///   With a grace set ([`GroupChild::set_grace`]) and passed on by `die_with_parent`, it first sends the grace's
///   signal to the command's group (then `SIGCONT`, unless the signal stops) and waits up to the grace for the job to
///   end (the command exited, nothing else left). A nested supervisor in the job gets that signal as any member of the
///   group does, and decides for its own job; the kill at the end reaches everything. `die_with_parent` starts no
///   other guard for such a job (it only passes the grace on), and `guard_id` stays `None`.
/// - When the command exits and nothing else of the job runs, the keeper ends at once: it reaps the command and exits
///   as it did (the same exit code, or the same signal, without a core dump), so
///   [`Outcome`](grouptimeout::Outcome) is what `spawn_group` gives. When something of the job still runs, it tells
///   this process (`SIGCHLD`, as the command's own exit would) and keeps the command unreaped until a wait gives its
///   verdict: end the rest of the job, or leave it (`set_kill_leftovers(false)`). A wait for the whole job gives none
///   (see above). A command that stops is reported by its keeper instead (`host::take_stop` says so, and the keeper
///   sends this process `SIGCHLD`, as the command's own stop would); the keeper itself never stops.
/// - A job's `SIGKILL` (the deadline's, [`kill`](GroupChild::kill), the leftovers', the drop's) tells the keeper to
///   kill the whole job, stops the command's group (`SIGSTOP`), waits for the keeper's note that it has named the
///   group's members once they are stopped (100 ms at most: a member still in `wait` could otherwise reap a child the
///   kill ends before anything named it), and sends the group `SIGKILL`: no step of this process freezes, lists or
///   kills a cgroup, or walks `/proc`; it sleeps on the keeper's exit, and the keeper's report (what its kills
///   reached, the job's usage, what failed) is read at the reap.
/// - A command that fails its `exec` fails the spawn with std's error (`NotFound` for a missing program); no keeper is
///   started.
/// - A signal sent to the keeper's pid is passed on to the command, as it reached the leader without a keeper; but
///   `SIGCHLD` and `SIGCONT` (which only wake the keeper, or continue it), one the kernel sent (a terminal's), and
///   `SIGKILL` and `SIGSTOP` (which nothing can pass on: they kill or stop the keeper itself). A `SIGSTOP`
///   (`kill -STOP` of [`GroupChild::id`]) stops the keeper alone: the next check of a wait (or of
///   [`try_wait`](GroupChild::try_wait)) that finds it stopped continues it (`SIGCONT`). The check is a
///   `waitid(WSTOPPED | WNOWAIT)` on the keeper: a caller that consumes the keeper's stop report itself (`waitpid` of
///   `id()` with `WUNTRACED`) hides the stop from it. Stop the job with [`signal`](GroupChild::signal) instead
///   (`SIGSTOP` to the command's group, `SIGCONT` to continue it).
/// - The keeper is a process of this user: a job that kills it (`kill -9 $PPID`) ends its own guard; the wait, which
///   sleeps on the keeper's exit too, then sees the keeper killed (`SIGKILL`, the outcome), kills the cgroup, and
///   removes the folder, as for any leader. In reaper mode the orphans then go to the next subreaper above (or init):
///   the wait kills the command's group (its id is the keeper's pid, pinned while the keeper is unreaped) and the
///   processes that carry the job's lineage mark; an escapee that also cleared its environment (`env -i`) or rewrote
///   its title survives.
/// - `pre_exec` hooks run in the command's process alone, once, as without a keeper: a hook's seccomp filter binds the
///   command and what it starts, never the keeper; a hook that unshares the PID namespace makes the command's first
///   child PID 1 of a new namespace, which dies with the job. In reaper mode a hook that joined an existing PID
///   namespace (`setns`) would give that namespace's init the job's orphans: the command is killed and the spawn fails,
///   saying so (a cgroup holds such a job). A preloaded library (`LD_PRELOAD`, a sanitizer's runtime) reaches the
///   command, not the keeper (the program runs with an empty environment).
/// - A command run as another user (`Command::uid`): std switches users in the command's process only; the keeper runs
///   as this process does, so a root caller's job keeps its cgroup.
///
/// # Falling back, and saying why
///
/// [`JobChildExt::fallback_reason`](crate::JobChildExt::fallback_reason) lists each mode that was tried and could not be had, with its reason; the tool's
/// `-v` prints it. Besides the cases above: a process limit (`RLIMIT_NPROC`, a pids controller's `pids.max`) that
/// leaves room for the command but not for a kept job's three more processes at the spawn (its keeper, and two helpers
/// of a few microseconds) makes the keeper modes fail with `EAGAIN`, and the reason names the limit.
///
/// # The lineage mark
///
/// The command gets one more environment variable, `GROUPTIMEOUT_JOB_<32 random hex digits>=1` (from
/// `/dev/urandom`), which every descendant inherits; it is removed from the `Command` again after the spawn. At each
/// kill point the job's processes are found in `/proc` (the group's members, and processes started after the
/// leader whose environment carries the mark), after the group itself was signalled (the leader and its group first,
/// so that no leader runs on while its job dies around it; a `SIGKILL` stops the group with `SIGSTOP` first, and
/// sends the group's `SIGKILL` once the first pass has killed and recorded the members it found, so that
/// [`leftovers`](crate::JobChildExt::leftovers) lists them even where init reaps orphans at once), each is opened as a pidfd, checked again through `/proc` after the
/// open, and signalled through the pidfd, so a pid reused meanwhile is never signalled; with `SIGKILL` this repeats
/// until a pass finds none that this kill has not reached already, and then waits for the killed ones to exit (all
/// of it at most about a second, so a fork storm ends). A nested job keeps the marks of the jobs around it. A scan
/// reads every process's `/proc/PID/stat` (one `read` each), and the environment of the young ones.
///
/// The `SIGSTOP` of a lineage `SIGKILL` is a real stop of the leader, this process's child, for the milliseconds of
/// the first pass: the kernel may send this process a `SIGCHLD` for it (`CLD_STOPPED`), and another thread that
/// waits for the leader with `WSTOPPED` or `WUNTRACED` (or calls `host::take_stop`) may see it stopped by
/// `SIGSTOP` just before it is killed. The kept modes stop the command's group too before their `SIGKILL`, for an
/// instant; their keeper, the command's parent, reports no stop then.
#[derive(Debug, Clone)]
pub struct Contain {
    parent: Option<PathBuf>,
    cgroup: bool,
    reaper: bool,
    lineage: bool,
    require: Containment,
}

impl Default for Contain {
    fn default() -> Contain {
        Contain::new()
    }
}

impl Contain {
    /// A cgroup if one can be made in this process's own cgroup, else the job's own reaper, else lineage, else the
    /// group.
    #[must_use]
    pub fn new() -> Contain {
        Contain {
            parent: None,
            cgroup: true,
            reaper: true,
            lineage: true,
            require: Containment::Group,
        }
    }

    /// Makes the job's cgroups in `folder` (a folder of a cgroup v2 file system, such as the `Delegate=yes` unit's
    /// own folder of a service that moved itself into a child of it) instead of this process's own cgroup. The
    /// systemd delegation test is skipped: naming the folder says it is the caller's to use.
    pub fn cgroup_parent(&mut self, folder: impl Into<PathBuf>) -> &mut Contain {
        self.parent = Some(folder.into());
        self
    }

    /// Whether a cgroup is tried at all (default `true`).
    pub fn cgroup(&mut self, try_it: bool) -> &mut Contain {
        self.cgroup = try_it;
        self
    }

    /// Whether the job's own reaper ([`Containment::Reaper`], Linux) is tried when no cgroup is had (default `true`).
    pub fn reaper(&mut self, try_it: bool) -> &mut Contain {
        self.reaper = try_it;
        self
    }

    /// Whether lineage is tried when neither a cgroup nor the reaper is had (default `true`).
    pub fn lineage(&mut self, try_it: bool) -> &mut Contain {
        self.lineage = try_it;
        self
    }

    /// Fails the spawn instead of falling back below `mode` (default [`Containment::Group`]: never fails for want
    /// of a boundary).
    pub fn require(&mut self, mode: Containment) -> &mut Contain {
        self.require = mode;
        self
    }

    /// Spawns `command` as [`spawn_group`](grouptimeout::GroupCommandExt::spawn_group) does, inside the boundary this asks for.
    ///
    /// # Errors
    ///
    /// As for [`spawn_group`](grouptimeout::GroupCommandExt::spawn_group); or [`require`](Contain::require) asked for more than
    /// could be had. Where the first mode tried failed on a system call (the job's folder could not be made:
    /// `EACCES` for a user who may not make a cgroup there, `ENOENT` for a parent folder that does not exist;
    /// `/proc` could not be read), the error is that OS error itself (`raw_os_error()`, std's kind for it; its
    /// message is the system's). Otherwise it carries no OS error number: a message with every reason, of kind
    /// `Unsupported` (no cgroup v2 here, systemd did not delegate the folder: `PermissionDenied`, only the group on
    /// this system, or a keeper program that cannot run here), or the kind of the first failure, such as a cgroup the
    /// command could not be started in (the folder named, and the OS error, whose kind the error keeps; the folder is
    /// removed), or too few free descriptors for a mode (the kind of `EMFILE`, `ENFILE`). Nothing runs then. Without
    /// `require`, a spawn fails for want of descriptors only where `spawn_group` would.
    ///
    /// A kept spawn also fails, in any mode, where the command was started and its keeper could not be (the keeper
    /// program's `exec` failed after its probe passed, or a `pre_exec` hook joined another PID namespace in reaper
    /// mode): the command is killed first, and no other mode is tried (it must not run twice).
    pub fn spawn(&self, command: &mut Command) -> io::Result<GroupChild> {
        // Each mode that was tried and could not be had, and why.
        #[cfg_attr(
            not(all(target_os = "linux", not(grouptimeout_portable))),
            allow(unused_mut)
        )]
        let mut why: Vec<(&str, io::Error)> = Vec::new();
        #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
        {
            let tried = |why: &mut Vec<(&str, io::Error)>,
                         name,
                         spawned: io::Result<io::Result<GroupChild>>|
             -> io::Result<Option<GroupChild>> {
                match spawned? {
                    Ok(child) => Ok(Some(child)),
                    Err(not_had) => {
                        why.push((name, not_had));
                        Ok(None)
                    }
                }
            };
            let mut child = None;
            // The keeper program first (the first kept spawn of this process probes it): a folder is made only
            // once a keeper can be had for it.
            let kept = (self.cgroup || self.reaper).then(crate::keeper::program);
            let program = || match &kept {
                Some(Ok(program)) => Ok(*program),
                Some(Err(why)) => Err(io::Error::new(io::ErrorKind::Unsupported, why.clone())),
                None => Err(io::Error::from(io::ErrorKind::Unsupported)),
            };
            if self.cgroup {
                let spawned = program().and_then(|program| {
                    let cgroup = cgroup::Cgroup::make(self.parent.as_deref())?;
                    Ok(spawn_kept(Bound::Cgroup(cgroup), command, program))
                });
                child = match spawned {
                    Ok(spawned) => tried(&mut why, "cgroup", spawned)?,
                    Err(e) => tried(&mut why, "cgroup", Ok(Err(e)))?,
                };
            }
            if child.is_none() && self.reaper && self.require.rank() <= Containment::Reaper.rank() {
                let spawned = program().and_then(|program| {
                    let mark = reaper_mark()?;
                    Ok(spawn_kept(Bound::Reaper(mark), command, program))
                });
                child = match spawned {
                    Ok(spawned) => tried(&mut why, "reaper", spawned)?,
                    Err(e) => tried(&mut why, "reaper", Ok(Err(e)))?,
                };
            }
            if child.is_none() && self.lineage && self.require.rank() <= Containment::Lineage.rank()
            {
                child = match lineage::Mark::new() {
                    Ok(mark) => tried(&mut why, "lineage", spawn_with_mark(mark, command))?,
                    Err(e) => tried(&mut why, "lineage", Ok(Err(e)))?,
                };
            }
            if let Some(child) = child {
                if let (Some(a), Some(why)) = (attached(&child), fallback(&why)) {
                    a.set_fallback(why);
                }
                return Ok(child);
            }
        }
        if self.require.rank() > Containment::Group.rank() {
            // The first failure's OS error as it is, where it has one (see "Errors").
            if why.first().is_some_and(|(_, e)| e.raw_os_error().is_some()) {
                return Err(why.swap_remove(0).1);
            }
            let kind = why
                .first()
                .map_or(io::ErrorKind::Unsupported, |(_, e)| e.kind());
            let reasons = fallback(&why)
                .unwrap_or_else(|| "only the process group is available on this system".into());
            return Err(io::Error::new(
                kind,
                format!(
                    "cannot run {:?} in a {:?} boundary: {reasons}",
                    command.get_program(),
                    self.require,
                ),
            ));
        }
        grouptimeout::__private::spawn(command, Attached::new(Job::default(), fallback(&why)))
    }
}

/// The modes that could not be had, each with its reason (`cgroup: …; reaper: …`); `None` if none failed. An OS
/// error as it is (where the mode failed on a system call of this process's) says which mode's setup it failed.
fn fallback(why: &[(&str, io::Error)]) -> Option<std::sync::Arc<str>> {
    let reasons: Vec<String> = why
        .iter()
        .map(|(mode, e)| match e.raw_os_error() {
            Some(_) => format!("{mode}: cannot set it up here: {e}"),
            None => format!("{mode}: {e}"),
        })
        .collect();
    (!reasons.is_empty()).then(|| reasons.join("; ").into())
}

/// What reaper mode needs: lineage's (the `/proc` of this PID namespace, pidfds, room for a kill point's descriptors:
/// its mark is the backup for a job that killed its keeper), and `/proc/PID/task/TID/children` (`CONFIG_PROC_CHILDREN`),
/// through which the job's processes are found.
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
fn reaper_mark() -> io::Result<lineage::Mark> {
    let mark = lineage::Mark::new()?;
    std::fs::metadata("/proc/thread-self/children").map_err(|e| {
        io::Error::new(
            io::ErrorKind::Unsupported,
            format!(
                "the job's reaper needs /proc/PID/task/TID/children (CONFIG_PROC_CHILDREN): {e}"
            ),
        )
    })?;
    Ok(mark)
}

/// Spawns `command` kept (see `crate::keeper`): for a cgroup `bound`, born inside the cgroup; for a reaper `bound`,
/// under the keeper as the job's child subreaper, with the backup mark (taken off `command` again after the spawn).
/// The inner `Err` says that the mode could not be had for it, and why (the kind kept): the keeper program cannot run
/// here, the spawning child could not enter the folder or make the command's group, or the spawn ran out of
/// descriptors. Nothing of the command ran then (the folder is removed), so the caller may spawn it again another
/// way. The outer `Err` is the spawn's: std's error of the command, or a command that was started and then killed
/// because its keeper could not be (never spawned again).
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
fn spawn_kept(
    bound: Bound,
    command: &mut Command,
    program: std::os::fd::BorrowedFd<'_>,
) -> io::Result<io::Result<GroupChild>> {
    use crate::keeper::{self, Spawned};
    if grouptimeout::__private::sys::children_are_auto_reaped()? {
        // As `spawn_group` refuses it: the plain spawn says why.
        return grouptimeout::GroupCommandExt::spawn_group(command).map(Ok);
    }
    let mark = match bound {
        Bound::Reaper(ref mark) | Bound::Lineage(ref mark) => Some(mark.name().to_owned()),
        Bound::Cgroup(_) => None,
    };
    if let Some(name) = &mark {
        command.env(name, "1");
    }
    let spawned = match bound {
        Bound::Cgroup(ref cgroup) => {
            keeper::spawn(command, program, Some((cgroup.folder(), cgroup.own())))
        }
        _ => keeper::spawn(command, program, None),
    };
    command.process_group(0);
    if let Some(name) = &mark {
        command.env_remove(name);
    }
    let place = match bound {
        Bound::Cgroup(ref cgroup) => format!("in the job's cgroup {}", cgroup.folder().display()),
        _ => "under the job's reaper".to_owned(),
    };
    match spawned {
        Spawned::Kept {
            keeper,
            stdio,
            watch,
            handle,
        } => {
            let job = Job::new(bound, Some(handle));
            job.started(keeper);
            let attached = Attached::new(job, None);
            Ok(Ok(grouptimeout::__private::spawned(
                keeper, stdio, watch, attached,
            )))
        }
        Spawned::NotHad(e) => {
            let how = if e.raw_os_error() == Some(libc::EAGAIN) {
                " (no process could be made: RLIMIT_NPROC, or the pids controller's pids.max, leaves too few; a kept \
                 job needs, for a moment, three more than the command: its keeper and two short-lived helpers)"
            } else {
                ""
            };
            Ok(Err(io::Error::new(
                e.kind(),
                format!("the command's first process could not start {place}{how}: {e}"),
            )))
        }
        Spawned::Failed(e) if out_of_descriptors(&e) => Ok(Err(io::Error::new(
            e.kind(),
            format!("too few descriptors to spawn {place}: {e}"),
        ))),
        // std's error, as it is (see "Errors" in the crate docs).
        Spawned::Failed(e) => Err(e),
    }
}

/// Whether a spawn failed for want of a descriptor (`EMFILE`, `ENFILE`): a contained spawn then falls back to a
/// mode that needs fewer.
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
fn out_of_descriptors(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
}

/// Spawns `command` with the mark in its environment, then takes the mark off `command` again. The inner `Err`: the
/// spawn ran out of descriptors (the kind kept), so the caller may spawn it again as a plain group.
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
fn spawn_with_mark(
    mark: lineage::Mark,
    command: &mut Command,
) -> io::Result<io::Result<GroupChild>> {
    let name = mark.name().to_owned();
    command.env(&name, "1");
    let job = Job::new(Bound::Lineage(mark), None);
    let spawned = grouptimeout::__private::spawn(command, Attached::new(job.clone(), None));
    command.env_remove(&name);
    match spawned {
        Ok(child) => {
            job.started(child.id());
            Ok(Ok(child))
        }
        Err(e) if out_of_descriptors(&e) => Ok(Err(io::Error::new(
            e.kind(),
            format!("too few descriptors to spawn with a lineage mark: {e}"),
        ))),
        Err(e) => Err(e),
    }
}
