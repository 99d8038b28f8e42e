//! [`Usage`]: what a job used (CPU time, peak memory), and how that was measured.

use std::time::Duration;

/// What a job used, known once its leader was reaped ([`GroupChild::usage`](crate::GroupChild::usage), the `usage`
/// of a capture's result): its CPU time, its peak memory, and how they were measured.
///
/// For a plain group ([`spawn_group`](crate::GroupCommandExt::spawn_group)) it is the leader's own resource usage as
/// `wait4(2)` reports it at the reap ([`Measured::Leader`]): the leader and the descendants it waited for (and those
/// waited for in turn), what GNU `time` shows. That is partial: a process that left the group (`setsid`, a daemon),
/// or that its parent never waited for (killed with the group, orphaned), is not in it, however much it used.
/// `grouptimeout-job`'s contained jobs measure the whole job where their boundary allows ([`Measured`] says which).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Usage {
    /// CPU time spent in user mode.
    pub user: Duration,
    /// CPU time spent in the kernel for the job.
    pub system: Duration,
    /// The peak memory in bytes: of the whole job at once where [`memory_whole_job`](Usage::memory_whole_job) (a
    /// cgroup's `memory.peak`), else of the largest process measured (its `ru_maxrss`, the most memory it had
    /// resident at once); `None` where not known.
    ///
    /// A process's `ru_maxrss` holds the memory of the process it was forked from, as it was at its `exec` (Linux
    /// keeps the larger of the two, and a spawn forks this process, or shares its memory until the `exec`): a
    /// caller with a large heap (say 300 MiB) sees at least that here, whatever the command used. Only
    /// `memory.peak` is free of it.
    pub memory: Option<u64>,
    /// Whether [`memory`](Usage::memory) is the whole job's peak (`true`), or the largest process's (`false`).
    pub memory_whole_job: bool,
    /// The most processes of the job that ran at one time (a cgroup's `pids.peak`), where the boundary counts them;
    /// `None` elsewhere.
    pub processes: Option<u64>,
    /// How the CPU time was measured, and so what it covers.
    pub measured: Measured,
}

/// How a [`Usage`]'s CPU time was measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Measured {
    /// The leader's resource usage (`wait4(2)`): the leader and the descendants it waited for. Partial: a process
    /// of the job that nobody of it waited for (a daemon, an escapee, a killed leftover) is missing.
    Leader,
    /// The job's keeper, its reaper (`grouptimeout-job`'s reaper mode): every process of the job, which it reaps
    /// (the command, the orphans adopted, and what each of them waited for); the keeper's own use is not in it.
    Keeper,
    /// The job's cgroup (`cpu.stat`, read before its folder was removed): every process that ran in it.
    Cgroup,
}

impl Usage {
    /// The leader's usage from its reap (`wait4`): user and system CPU time, and `ru_maxrss` in bytes.
    pub(crate) fn of_leader(user: Duration, system: Duration, max_rss: u64) -> Usage {
        Usage {
            user,
            system,
            memory: Some(max_rss),
            memory_whole_job: false,
            processes: None,
            measured: Measured::Leader,
        }
    }

    /// The CPU time in all: user and system.
    #[must_use]
    pub fn cpu(&self) -> Duration {
        self.user.saturating_add(self.system)
    }
}
