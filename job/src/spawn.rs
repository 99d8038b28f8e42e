//! [`JobCommandExt::spawn_contained`] and [`Contain`], the builder behind it, which draws a job's boundary (from
//! `contain/`) and spawns its leader as a [`GroupChild`] with that boundary attached (`child.rs`).

use std::io;
use std::path::PathBuf;
use std::process::Command;

use grouptimeout::GroupChild;

#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
use crate::child::attached;
use crate::child::Attached;
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
use crate::contain::{cgroup, keeper::Keeper, lineage, Bound};
use crate::contain::{Containment, Job};
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
use crate::keeper::KeeperFailure;

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
    /// The cost: in cgroup and reaper mode the job's keeper (see [`Contain`]) is a fork of this process (a
    /// `pre_exec` hook: std forks instead of using `posix_spawn`, which costs more the larger this process is) and
    /// starts the command inside the job's cgroup, which it makes and removes; in lineage mode each kill scans
    /// `/proc`. `BENCHMARKS.md` has the numbers.
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
/// [`require`](Contain::require) turns a fallback below a mode into an error. A cgroup in which the job's keeper could
/// not start the command (its `mkdir` of the folder or its `clone3` into it failed, or, where `clone3` is refused, the
/// command's move into it, say because the parent folder is a thread root, whose domain children are "domain invalid",
/// or the kernel is older than 5.14) counts as none: its folder is removed and the command is spawned again in the next
/// mode (none of it ran: that happens before `exec`; the caller's `pre_exec` hooks, though, run again, see "The keeper"
/// below). So does a keeper that dies before it made the command's process (killed by a seccomp filter at a call that
/// only a keeper makes, such as `prctl(PR_SET_CHILD_SUBREAPER)` or `clone3`, or by someone's `SIGKILL`): the spawn does
/// not return such a job, whose command never ran; the reason names the keeper's signal, and its folder, if it made
/// one, is removed. (A keeper killed from outside in the instant between the `exec` of the command's process and its
/// own next instruction is the exception: that process, which dies with its keeper, `PR_SET_PDEATHSIG`, ran for that
/// instant.) Lineage is used only where the reaper cannot be had (or is turned off with
/// [`reaper(false)`](Contain::reaper)): the reaper catches everything lineage does, and more, at a cost that does not
/// grow with the host's process count; lineage's mark stays on a reaper job's command as the backup for a job that
/// killed its keeper.
///
/// Descriptors count too. A cgroup or reaper spawn forks with a pipe of std's (2 descriptors) instead of using
/// `posix_spawn` (none with glibc; musl's needs 2): 2 free descriptors; the reaper also needs lineage's room (its
/// mark is the backup). Lineage's kill
/// points hold 2 at once beside the wait's pidfd: 3 free at the spawn. A mode without that room is skipped, and a
/// spawn that fails for want of a descriptor (`EMFILE`, `ENFILE`) in the cgroup or with the mark counts as none
/// too: the next mode is tried, down to the plain group, which needs no more than
/// [`spawn_group`](grouptimeout::GroupCommandExt::spawn_group). The room is checked at the spawn only: a kill point of lineage
/// that finds none later fails, saying so (the group itself is still signalled), and a cgroup whose `cgroup.kill` or
/// `cgroup.events` (opened after the spawn) cannot be opened fails at its kill, or leaves its folder behind.
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
/// - [`Cgroup`](Containment::Cgroup): `cgroup.events` says `populated 0`, or the folder is gone, or the keeper has
///   exited (it removes the folder of a job it finds empty, then exits); the wait sleeps on one epoll descriptor that
///   is readable at a change of that file (`POLLPRI`) or at the keeper's exit (its pidfd): two more descriptors while
///   it waits. (The file's notice alone may never come: the kernel tells a change at most once every 10 ms, a later
///   one after that time, and drops it if the folder is removed meanwhile.) Every process of the job counts, however
///   it daemonised.
/// - [`Reaper`](Containment::Reaper): the keeper, which reaps every orphan of the job as it exits, ends the job itself
///   and exits once the command (exited) is its only child; the wait sleeps on the keeper's pidfd.
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
/// The command is born inside the job's cgroup, through the job's keeper (below): it never migrates into it (a
/// migration waits for an RCU grace period unless the cgroup2 hierarchy is mounted with `favordynmods`: 5-19 ms
/// measured on Linux 6.18 for a single spawn), and runs no instruction outside it. The job is ended with `cgroup.kill` (which reaches the sub-cgroups a job may
/// make in its folder too); when its leader was reaped, the folder is removed, with those sub-cgroups (deepest
/// first), once `cgroup.events` says `populated 0`, waiting at most about a second (a process stuck in
/// uninterruptible sleep can keep it longer: the folder is then left behind). With
/// [`set_kill_leftovers(false)`](GroupChild::set_kill_leftovers) the leftovers (those in sub-cgroups too) are moved to
/// the cgroup the caller runs in before the folder is removed: not to the parent folder, which, when named with
/// [`cgroup_parent`](Contain::cgroup_parent), may have controllers enabled for its children and then may hold no
/// process of its own (the kernel's "no internal processes" rule: `EBUSY`).
///
/// # The keeper (cgroup and reaper modes)
///
/// The process the spawn makes ([`GroupChild::id`]) is the job's keeper; the command is its child
/// ([`JobChildExt::command_id`](crate::JobChildExt::command_id) is its pid). The
/// keeper is a fork of this process (a `pre_exec` hook, which makes std fork and exec instead of using
/// `posix_spawn`; `BENCHMARKS.md` gives the cost) that never execs: it blocks every signal, makes the job's folder,
/// starts the command with `clone3(CLONE_INTO_CGROUP)` (Linux 5.7; the command returns from the hook and std applies
/// the rest of the `Command`: stdio, environment, working folder, user and groups were applied before the hooks
/// and are inherited, and the caller's signal mask is restored), closes every descriptor it holds but the folder's,
/// and then only waits. Where `clone3` is refused (`ENOSYS`, as the default seccomp profiles of Docker and Podman
/// answer, or `EPERM`, as older runtimes did), the keeper starts the command with the legacy `clone` instead, and the
/// command, born outside the folder, moves itself into it (`cgroup.procs`) before it returns from the hook: it runs no
/// instruction of the command outside the job, and the job keeps its cgroup. If that move fails, the command never
/// runs: the mode counts as none, as for a failed `clone3`. That move is a migration, which waits for an RCU grace
/// period: measured on Linux 6.18, spawn and wait of `/bin/true` took 13.4 ms instead of 2.9 ms with spawns 250 ms
/// apart, 2.30 ms instead of 2.18 ms back to back (medians; 9 ms at the 90th percentile). Reaper mode needs no move
/// (the same times with and without the filter). It is named `group-keeper` (so that killing this program by its name
/// spares it); nothing depends on the command's name. Once the
/// command has run for 10 ms, a keeper that holds 8 MiB or more of this process's memory unmaps most of what its fork
/// copied (every private anonymous mapping of 256 KiB and more, but the pages around its own stack and its thread's
/// data, and a program's or library's `.bss`), so it holds no copy of the pages this process writes while the job runs.
/// What a fork costs still applies: the spawn takes longer the more memory this process has mapped, and this process's
/// first write to each of its pages after the spawn takes a page fault (`BENCHMARKS.md` has both).
///
/// In reaper mode (no cgroup) the keeper makes no folder: it makes itself a child subreaper
/// (`PR_SET_CHILD_SUBREAPER`, which needs no privilege) and starts the command with a plain `clone3` (or `clone`, where
/// `clone3` is refused). Every orphan of
/// the job is then re-parented to it, however it daemonised, and it reaps those that exit while the command runs
/// (never the command before the verdict). This process finds the job's processes below the keeper
/// (`/proc/PID/task/TID/children`, from the keeper down: only the job's processes are read), opens a pidfd for each
/// and checks again that its parent is the one it was listed under before it signals it, so a reused pid is never
/// signalled; with `SIGKILL` the walk repeats while it finds new ones (for about a second at most), recording them
/// for [`JobChildExt::leftovers`](crate::JobChildExt::leftovers). To end the job the keeper kills the command's group, then its children, reaps
/// them, and repeats with the orphans that brings until only the command is left (about a second at most; 30 s when
/// this process died): no environment is read and nothing outside the job is scanned. Linux only: FreeBSD's
/// `procctl(PROC_REAP_ACQUIRE)` would do the same, but is not used (there a contained job has its group only).
///
/// - The command starts in the group whose id is the keeper's pid ([`GroupChild::id`]), which the keeper then
///   leaves for a group of its own: every group signal of the crate, and a terminal's, reaches the command's group
///   and not the keeper. The command's parent (`getppid`) is the keeper.
/// - From before the command's first instruction, the keeper is the job's guard: when this process dies (any way;
///   the keeper gets a parent-death signal, and its parent changes), it kills the group and the cgroup, removes the
///   folder, and exits (in reaper mode: it kills the group, the command and its other descendants, as at the job's
///   end, waiting for the command's death, which hands it the command's children). With a grace set
///   ([`GroupChild::set_grace`]) and passed on by `die_with_parent` (which writes it to a page the keeper shares
///   with this process; the keeper reads it only once this process died) it first sends the grace's signal to the command's group (then `SIGCONT`, unless the
///   signal stops) and waits up to the grace for the job to end (the command exited, nothing else left). A nested
///   supervisor in the job gets that signal as any member of the group does, and decides for its own job; the kill
///   at the end reaches everything. `die_with_parent` starts no other guard for such a job (it only passes the grace
///   on), and `guard_id` stays `None`.
/// - When the command exits and nothing else of the job runs (the cgroup is empty; in reaper mode the keeper has no
///   other child), the keeper removes the folder (if there is one), reaps the command and exits as it did: the same
///   exit code, or the same signal (without a core dump), so [`Outcome`](grouptimeout::Outcome) is what `spawn_group`
///   gives. When something of the job still runs, the keeper tells this process (`SIGCHLD`, as the command's own
///   exit would) and keeps the command unreaped until a wait reaps the job: the wait then tells the keeper to end the
///   job (or, with `set_kill_leftovers(false)`, to leave it), and the keeper does so, reaps the command and exits as
///   it did. A wait for the whole job (`set_wait_for_job`) holds the verdict back: the keeper, woken by each exit of
///   its children, ends the job itself once nothing else of it runs (in reaper mode; in cgroup mode the wait sees the
///   cgroup empty and gives the verdict then).
///   A command that stops is reported by its keeper instead (`host::take_stop` says so, and the keeper sends this
///   process `SIGCHLD`, as the command's own stop would); the keeper itself never stops.
/// - A command that fails its `exec` fails the spawn with std's error (`NotFound` for a missing program), and the
///   keeper exits at once. The keeper cannot see a failed `exec` (std waits for it then) apart from a command that ran
///   and exited before the spawn returned but by what the command left: one that left nothing is ended at once; one
///   that left something running waits for the spawn's return, and then for the wait's verdict like any other, but
///   the keeper ends the job if the spawn has not returned within a second (this process held up that long):
///   only then does [`set_kill_leftovers(false)`](GroupChild::set_kill_leftovers) lose what such a command left.
/// - A signal sent to the keeper's pid is passed on to the command, as it reached the leader without a keeper; but
///   `SIGCONT` (which only wakes the keeper, or continues it), and `SIGKILL` and `SIGSTOP` (which nothing can pass
///   on: they stop or kill the keeper itself). A `SIGSTOP` (`kill -STOP` of [`GroupChild::id`]) stops the keeper
///   alone: the command runs on, and the keeper, stopped, could not report its exit. The next check of a wait (or
///   of [`try_wait`](GroupChild::try_wait)) that finds the keeper stopped continues it (`SIGCONT`): a wait sleeps
///   until the command exits and checks then at the latest, so a stopped keeper never keeps a wait past the
///   command's exit (the tool hears of the stop through `SIGCHLD`, and continues its keeper at once). The check is a
///   `waitid(WSTOPPED | WNOWAIT)` on the keeper: a caller that consumes the keeper's stop report itself (`waitpid`
///   of `id()` with `WUNTRACED`) hides the stop from it. Stop the job
///   with [`signal`](GroupChild::signal) instead (`SIGSTOP` to the command's group, `SIGCONT` to continue it).
/// - The keeper is a process of this user: a job that kills it (`kill -9 $PPID`) ends its own guard; the wait then
///   sees the keeper killed (`SIGKILL`, the outcome), kills the cgroup, and removes the folder, as for any leader.
///   In reaper mode the orphans then go to the next subreaper above (or init): the wait kills the command's group
///   (its id is the keeper's pid, pinned while the keeper is unreaped) and the processes that carry the job's
///   lineage mark; an escapee that also cleared its environment (`env -i`) or rewrote its title survives.
/// - `pre_exec` hooks the caller added before the spawn run in the keeper, before the command's process exists: what a
///   fork inherits (resource limits, the working folder, descriptors) reaches the command; a parent-death signal does
///   not. They run once in each mode tried, not once per spawn: a mode that fails in the keeper (a cgroup it could not
///   start the command in, a keeper that died, a process limit: see above and "Falling back"; the keeper's hook runs
///   after the caller's, in the process std forked for them) is followed by a new spawn in the next mode, whose process
///   runs them again. A hook with an effect outside its own process (a file made with `O_EXCL`, a pidfile, a message
///   sent) sees one run per mode tried: make it idempotent, or ask for one mode, so
///   that a failure fails the spawn instead of trying another (`require(Containment::Cgroup)`; `cgroup(false)` with
///   `require(Containment::Reaper)`; or lineage alone, `cgroup(false)` and `reaper(false)`, which has no keeper: its
///   hooks run in the command's process). Hooks added later, and on a later spawn of the same `Command` (the keeper's
///   hook stays on it, disarmed), run as usual; on x86-64 the later ones run in a process that shares the keeper's
///   memory until its `exec` (as the child of `posix_spawn` does), so what they change in memory the keeper sees too
///   (it only waits meanwhile, and uses none of it). A hook that unshared the PID namespace (`unshare(CLONE_NEWPID)`,
///   which puts the keeper's children in a new namespace, its first one PID 1) is undone in the keeper (`setns` to its
///   own) and done again by the command's process, so the command's first child is PID 1 of the new namespace, as
///   without a keeper, and the job stays contained (a namespace dies with its PID 1, and its processes are the job's).
///   Where the keeper cannot go back (`setns` needs `CAP_SYS_ADMIN` over its own namespace: a hook that also made a
///   user namespace), the keeper modes fail, saying so, and lineage runs the command as without a keeper. A hook that
///   joined an existing PID namespace (`setns`) is left alone: the command is born in it, which a cgroup holds; the
///   reaper does not (that namespace's orphans go to its own init), so reaper mode fails then, saying so. A time
///   namespace (`CLONE_NEWTIME`) is not treated so: the keeper and the command's process are born in it.
/// - A command run as another user (`Command::uid`): std switches users before the hooks, so the keeper runs as that
///   user too. As root, a cgroup spawn sets this thread's `PR_SET_KEEPCAPS` where it is off, and clears it again
///   before it returns (the kernel reads it only when a user id changes; a thread that has it on keeps it on, and no
///   other spawn touches it), so the keeper keeps its permitted capabilities across std's switch; in cgroup
///   mode it keeps `CAP_DAC_OVERRIDE` alone (to make the folder in this process's cgroup and start the command in
///   it: the folder is then that user's, as a cgroup delegated to it), in reaper mode none, and the command's process
///   drops them all before it runs anything of the caller's. Where the keeper cannot keep that capability (the thread
///   has `SECBIT_KEEP_CAPS_LOCKED`, or this process lacks `CAP_DAC_OVERRIDE`), the cgroup counts as none, and the
///   error, or [`JobChildExt::fallback_reason`](crate::JobChildExt::fallback_reason), says so and what to do.
///
/// # Falling back, and saying why
///
/// [`JobChildExt::fallback_reason`](crate::JobChildExt::fallback_reason) lists each mode that was tried and could not be had, with its reason; the tool's
/// `-v` prints it. Besides the cases above: a process limit (`RLIMIT_NPROC`, a pids controller's `pids.max`) that
/// leaves room for the command but not for a kept job's two more processes (its keeper and a short-lived helper)
/// makes the keeper modes fail with `EAGAIN`, and the reason names the limit.
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
/// `SIGSTOP` just before it is killed. The other modes send no `SIGSTOP`.
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
    /// this system), or the kind of the first failure, such as a cgroup the keeper could not start the command in
    /// (the folder named, and the OS error of its `mkdir` or `clone3`, whose kind the error keeps; the folder is
    /// removed), a keeper that died before it made the command's process (`Other`, its signal named), or too few free
    /// descriptors for a mode (the kind of `EMFILE`, `ENFILE`). Nothing runs then. Without
    /// `require`, a spawn fails for want of descriptors only where `spawn_group` would.
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
            if self.cgroup {
                let spawned = cgroup::Cgroup::make(self.parent.as_deref())
                    .map(|cgroup| spawn_kept(Bound::Cgroup(cgroup), command));
                child = match spawned {
                    Ok(spawned) => tried(&mut why, "cgroup", spawned)?,
                    Err(e) => tried(&mut why, "cgroup", Ok(Err(e)))?,
                };
            }
            if child.is_none() && self.reaper && self.require.rank() <= Containment::Reaper.rank() {
                child = match reaper_mark() {
                    Ok(mark) => {
                        tried(&mut why, "reaper", spawn_kept(Bound::Reaper(mark), command))?
                    }
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

/// Spawns `command` through a keeper (see `contain/keeper.rs`): for a cgroup `bound`, the command is born inside the
/// cgroup; for a reaper `bound`, the keeper is the job's child subreaper, and the command carries the backup mark
/// (taken off `command` again after the spawn).
/// The inner `Err` says that the mode could not be had for it, and why (the kind kept): the keeper could not make
/// the folder or start the command in it (its `mkdir` or `clone3` failed, with the folder and the OS error named),
/// or the spawn ran out of descriptors (std's pipe of a forked spawn, beyond a plain spawn's). Nothing of the command
/// ran then, and the folder is removed, so the caller may spawn it again another way.
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
fn spawn_kept(bound: Bound, command: &mut Command) -> io::Result<io::Result<GroupChild>> {
    let (folder, mark) = match bound {
        Bound::Cgroup(ref cgroup) => (Some(cgroup.folder().to_path_buf()), None),
        Bound::Reaper(ref mark) | Bound::Lineage(ref mark) => (None, Some(mark.name().to_owned())),
    };
    let place = folder.as_ref().map_or_else(
        || "under the job's reaper".to_owned(),
        |folder| format!("in the job's cgroup {}", folder.display()),
    );
    let too_few = |e: io::Error| {
        io::Error::new(
            e.kind(),
            format!(
                "too few descriptors to spawn {place} (such a spawn forks with a pipe of std's instead of using \
                 posix_spawn): {e}"
            ),
        )
    };
    let keeper = Keeper::new()?;
    let hook = match room_for_a_fork()
        .and_then(|()| crate::keeper::arm_keeper(command, folder.as_deref(), keeper.page()))
    {
        Ok(hook) => hook,
        Err(e) => return Ok(Err(too_few(e))),
    };
    if let Some(name) = &mark {
        command.env(name, "1");
    }
    let job = Job::new(bound, Some(keeper));
    // As root, for a `Command::uid`: the keeper keeps the right to make the job's cgroup across std's user switch.
    let spawned = crate::keeper::with_kept_caps(folder.is_some(), || {
        grouptimeout::__private::spawn(command, Attached::new(job.clone(), None))
    });
    if let Some(name) = &mark {
        command.env_remove(name);
    }
    let not_started = spawned.as_ref().err().and_then(|e| hook.keeper_error(e));
    match spawned {
        Ok(child) => {
            job.started(child.id());
            // The keeper records the command's pid before it closes its copy of std's error pipe: a spawn that
            // returned without it means that the keeper died before it made the command.
            if job.watched(child.id()) == child.id() {
                return Ok(Err(keeper_died(child, &place)));
            }
            Ok(Ok(child))
        }
        Err(e) => {
            let _ = job.end(false);
            if let Some(start) = not_started {
                let how = match job.keeper_failure() {
                    Some(KeeperFailure::User) => {
                        "the command runs as another user (`Command::uid`), and its keeper, switched with it by \
                         std, kept no CAP_DAC_OVERRIDE to make the job's cgroup and start the command in it: \
                         spawn as root with that capability, or start the command as that user in a cgroup \
                         delegated to it (`Contain::cgroup_parent`)"
                    }
                    Some(KeeperFailure::PidNamespace) => {
                        "a `pre_exec` hook put the keeper's children in another PID namespace: a new one that \
                         the keeper cannot leave again (setns needs CAP_SYS_ADMIN over its own: a hook that also \
                         made a user namespace), or, for the reaper, an existing one, whose orphans go to its own \
                         init; lineage mode runs such a hook's command as without a keeper"
                    }
                    None if start.raw_os_error() == Some(libc::EAGAIN) => {
                        "no process could be made: RLIMIT_NPROC, or the pids controller's pids.max, leaves too \
                         few (a kept job needs two more than the command: its keeper and a short-lived helper)"
                    }
                    None if folder.is_some() => "the keeper could not make it or start the command in it",
                    None => "the keeper could not become a child subreaper or make it",
                };
                return Ok(Err(io::Error::new(
                    start.kind(),
                    format!("the command's first process could not start {place} ({how}): {start}"),
                )));
            }
            if !out_of_descriptors(&e) {
                // std's error, as it is (see "Errors" in the crate docs).
                return Err(e);
            }
            Ok(Err(too_few(e)))
        }
    }
}

/// Why the mode of `child`, a kept job whose keeper died before it made the command's process (its spawn returned
/// with no command recorded: std reads end of file on its error pipe once the keeper is gone, as after an `exec`),
/// could not be had: the keeper's death, as its reap gives it (a wait, which ends the job: no folder is left).
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
fn keeper_died(mut child: GroupChild, place: &str) -> io::Error {
    use std::os::unix::process::ExitStatusExt as _;
    let how = match child.wait_timeout(std::time::Duration::from_secs(5)) {
        Ok(outcome) => match outcome.status().signal() {
            Some(libc::SIGSYS) => format!(
                "killed by signal {} (SIGSYS: a seccomp filter forbids a system call it makes)",
                libc::SIGSYS
            ),
            Some(signal) => format!("killed by signal {signal}"),
            None => format!("{}", outcome.status()),
        },
        Err(e) => format!("it could not be waited for: {e}"),
    };
    io::Error::other(format!(
        "the command's first process could not start {place}: its keeper died before it made it, {how}; the \
         command did not run"
    ))
}

/// Whether two more descriptors can be opened now (std's pipe of a forked spawn): a spawn that failed for want of
/// them would have run nothing, but is better not tried.
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
fn room_for_a_fork() -> io::Result<()> {
    let probe = std::fs::File::open("/dev/null")?;
    let _second = probe.try_clone()?;
    Ok(())
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
