//! What the caller sees of the keeper: the page it shares with it (the command's pid, its stop and exit, the
//! keeper's failure, the verdict, the death plan), the hook on the `Command`, and a signal to a kept job's group.

use std::io;
use std::sync::atomic::Ordering;

use crate::sys::page::{Armed, SharedPage};
use crate::sys::signal_safe::DeathPlan;

/// Added to the errno of a keeper that could not start the command: std passes the hook's OS error code to the
/// parent as the spawn's error, and no `exec` error is this large, so the parent tells the two apart.
pub(crate) const KEEPER_FAILED: i32 = 1 << 20;

/// The verdict this process gives once the command exited (0 until then): kill the job, keep it.
pub(super) const VERDICT_KILL: u32 = 1;
pub(super) const VERDICT_KEEP: u32 = 2;

/// Which figures of what the job used the keeper wrote to the page (`Shared::used`): the cgroup's CPU time
/// (`cpu.stat`), its `memory.peak`, its `pids.peak`; and what the keeper's reaped children used (`RUSAGE_CHILDREN`),
/// written as the CPU time where the cgroup's is not, and as the memory (the largest child's) where `memory.peak` is
/// not.
pub(super) const USED_CGROUP_CPU: u32 = 1;
pub(super) const USED_MEMORY_PEAK: u32 = 2;
pub(super) const USED_PIDS_PEAK: u32 = 4;
pub(super) const USED_CHILDREN: u32 = 8;

/// Why a keeper failed the spawn, beyond its errno (see [`KeeperFailure`]).
pub(super) const WHY_USER: u32 = 1;
pub(super) const WHY_PID_NAMESPACE: u32 = 2;

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

/// The supervisor's side of the shared page (`sys::page::Shared`: which side writes what is said there and here).
impl SharedPage {
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

    /// Reaper mode: while `on`, the keeper leaves the job's exited orphans unreaped (so that a kill can still see,
    /// and record, the members its group signal killed); when turned off, keeper `keeper` (our unreaped child) is
    /// woken to reap them.
    pub(crate) fn hold_orphans(&self, keeper: u32, on: bool) {
        self.shared().hold.store(u32::from(on), Ordering::Release);
        if !on {
            crate::sys::wake_child(keeper);
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

    /// Whether the keeper exited on its own (it sets the flag just before, after the verdict, when this process
    /// died, or when the command failed its `exec`): a keeper that exited without it was killed (`kill -9 $PPID` from
    /// the job); `false` also while it runs.
    pub(crate) fn keeper_left(&self) -> bool {
        self.shared().leaving.load(Ordering::Acquire) != 0
    }

    /// What the keeper does when this process dies: `signal` to the command's group first (with `SIGCONT` after it
    /// unless it is a stop signal), then up to `grace` for the job to end, then `SIGKILL` to the whole job. A signal of
    /// 0 or `SIGKILL`, or no grace, means `SIGKILL` at once (the default). The keeper reads it only once this process
    /// died, so it may be set (or changed) at any time while the job runs.
    pub(crate) fn set_death_plan(&self, signal: i32, grace: std::time::Duration) {
        let shared = self.shared();
        let (signal, grace_ms) = DeathPlan::new(signal, grace).parts();
        shared.death_grace_ms.store(grace_ms, Ordering::Release);
        shared.death_signal.store(signal, Ordering::Release);
    }

    /// Refines `usage` (the keeper's own, from its reap) with what the keeper wrote of the job's use before it
    /// exited: the cgroup's figures where it read them, else what the processes it reaped used (`reaper`: the whole
    /// job, since it reaped every process of it; else the command and what the command waited for). Nothing from a
    /// keeper that was killed before it wrote them.
    pub(crate) fn usage(&self, usage: &mut grouptimeout::Usage, reaper: bool) {
        use grouptimeout::Measured;
        let shared = self.shared();
        let used = shared.used.load(Ordering::Acquire);
        let micros = |at: &std::sync::atomic::AtomicU64| {
            std::time::Duration::from_micros(at.load(Ordering::Acquire))
        };
        if used & (USED_CGROUP_CPU | USED_CHILDREN) != 0 {
            usage.user = micros(&shared.user_us);
            usage.system = micros(&shared.system_us);
            usage.measured = match () {
                () if used & USED_CGROUP_CPU != 0 => Measured::Cgroup,
                () if reaper => Measured::Keeper,
                () => Measured::Leader,
            };
        }
        if used & (USED_MEMORY_PEAK | USED_CHILDREN) != 0 {
            usage.memory = Some(shared.memory.load(Ordering::Acquire));
            usage.memory_whole_job = used & USED_MEMORY_PEAK != 0;
        }
        if used & USED_PIDS_PEAK != 0 {
            usage.processes = Some(shared.processes.load(Ordering::Acquire));
        }
    }

    /// The spawn returned: from now on the keeper waits for the verdict once the command exited (until then, a
    /// command that exits may have failed its `exec`, and std waits for the keeper).
    pub(crate) fn spawned(&self) {
        self.shared().spawned.store(1, Ordering::Release);
    }

    /// Tells keeper `keeper` (our unreaped child) what to do once the command exited: end the job (`kill`) or leave
    /// it; it acts, reaps the command and exits as the command did.
    pub(crate) fn give_verdict(&self, keeper: u32, kill: bool) {
        let verdict = if kill { VERDICT_KILL } else { VERDICT_KEEP };
        self.shared().verdict.store(verdict, Ordering::Release);
        crate::sys::wake_child(keeper);
    }
}

/// The keeper hook on a `Command`; dropping it disarms the hook (a later spawn of the same `Command` then runs as
/// without it).
#[derive(Debug)]
pub(crate) struct KeeperHook {
    /// Armed while this lives (see `sys::page::Armed`).
    pub(super) _armed: Armed,
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
