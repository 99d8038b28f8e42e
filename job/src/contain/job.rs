//! [`Job`]: what a [`GroupChild`](grouptimeout::GroupChild) and its [`GroupHandle`](grouptimeout::GroupHandle)s hold of a job's
//! boundary beyond its process group; its calls are made from the places that signal the group (see `child.rs`), and
//! it does nothing for a plain group.

use std::fmt;
use std::io;
use std::sync::{Arc, Mutex};

#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
use super::cgroup;
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
use super::keeper::Keeper;
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
use super::lineage;
use super::proc::{lock, Leftover};
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
use super::reaper;

/// Which boundary a job got; see [`JobChildExt::containment`](crate::JobChildExt::containment) and the table in [`Contain`](crate::Contain).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Containment {
    /// A cgroup v2 of the job's own (Linux): every process the command started is in it, whatever session or
    /// group it moved to and whatever it did to its environment, and the job is ended with `cgroup.kill`.
    Cgroup,
    /// The job's own reaper (Linux, where no cgroup can be made): the job's keeper, the process between this one and
    /// the command, is a child subreaper (`PR_SET_CHILD_SUBREAPER`), so every process the command started stays its
    /// descendant however it daemonised (`setsid`, double fork, `env -i`, setuid or non-dumpable programs), and the
    /// job is ended by killing the keeper's descendants until none is left. Needs no privilege.
    Reaper,
    /// The job's processes are those that carry its mark, a random variable in the environment that every
    /// descendant inherits (Linux, where neither a cgroup nor the reaper can be had, or with
    /// [`Contain::reaper(false)`](crate::Contain::reaper)), and the members of its process group.
    Lineage,
    /// The process group only, as [`spawn_group`](grouptimeout::GroupCommandExt::spawn_group) gives.
    Group,
}

impl Containment {
    pub(crate) fn rank(self) -> u8 {
        match self {
            Containment::Group => 0,
            Containment::Lineage => 1,
            Containment::Reaper => 2,
            Containment::Cgroup => 3,
        }
    }
}

/// A kept job's `SIGKILL`, once its keeper was told to kill the job: the command's group stopped first (`SIGSTOP`:
/// the keeper is not in it, and takes no stop for the command's own once told), then, once the keeper has named the
/// group's members (its note, or [`LISTED_WAIT`] at most), `group` (the core's `SIGKILL`). A `SIGSTOP` takes effect
/// only when its target next runs: a member still in `wait` when the kill ends one of its children would reap it, and
/// nothing would name it; the keeper names them while they are stopped. A stopped member reaps nothing, so every
/// other killed process whose parent dies with it comes to the keeper (a child subreaper), which names it too.
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
fn stopped_first(
    leader: u32,
    keeper: &Keeper,
    group: impl FnOnce() -> io::Result<()>,
) -> io::Result<()> {
    // The group's id is the keeper's pid, our unreaped child (the core checked it): it names the job's group.
    let _ = i32::try_from(leader).map(|id| crate::sys::kill(-id, libc::SIGSTOP));
    keeper.wait_listed(LISTED_WAIT);
    group()
}

/// How long a kept job's `SIGKILL` waits for the keeper to name the command's group (it waits 50 ms at most for the
/// group to stop).
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
const LISTED_WAIT: std::time::Duration = std::time::Duration::from_millis(100);

/// A job's boundary beyond its process group; empty (a plain group) by default. Clones share it.
#[derive(Clone, Default)]
pub(crate) struct Job(Option<Arc<Inner>>);

impl fmt::Debug for Job {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Job({:?})", self.containment())
    }
}

#[derive(Debug)]
struct Inner {
    bound: Bound,
    /// The job's keeper, the process between this one and the command (see `keeper.rs`), if it has one.
    #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
    keeper: Option<Keeper>,
    /// What the kills reached, until a [`GroupChild`] takes it.
    reached: Mutex<Vec<Leftover>>,
    /// The command's pid, in the record of a kept job that has ended (see [`Job::record`]; its keeper is gone).
    #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
    command: Option<u32>,
}

#[derive(Debug)]
pub(crate) enum Bound {
    #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
    Cgroup(cgroup::Cgroup),
    #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
    Lineage(lineage::Mark),
    /// The job's keeper is its reaper; the mark is the backup for a job that killed its keeper.
    #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
    Reaper(lineage::Mark),
}

impl Job {
    #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
    pub(crate) fn new(bound: Bound, keeper: Option<Keeper>) -> Job {
        Job(Some(Arc::new(Inner {
            bound,
            keeper,
            reached: Mutex::new(Vec::new()),
            command: None,
        })))
    }

    /// What is left of the job once it has ended (see `Attached::end`): the same containment, command and marks,
    /// for the getters of [`JobChildExt`](crate::JobChildExt) and for [`contains`](Job::contains), and none of its
    /// resources: no keeper's channel, no pidfd, no descriptor of its cgroup.
    pub(crate) fn record(&self) -> Job {
        let Some(inner) = &self.0 else {
            return Job(None);
        };
        #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
        {
            let bound = match &inner.bound {
                Bound::Cgroup(cgroup) => Bound::Cgroup(cgroup.record()),
                Bound::Lineage(mark) => Bound::Lineage(mark.record()),
                Bound::Reaper(mark) => Bound::Reaper(mark.record()),
            };
            Job(Some(Arc::new(Inner {
                bound,
                keeper: None,
                reached: Mutex::new(Vec::new()),
                command: inner
                    .command
                    .or_else(|| Some(inner.keeper.as_ref()?.command())),
            })))
        }
        #[cfg(not(all(target_os = "linux", not(grouptimeout_portable))))]
        match inner.bound {}
    }

    #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
    fn keeper(&self) -> Option<&Keeper> {
        self.0.as_ref()?.keeper.as_ref()
    }

    #[cfg(not(all(target_os = "linux", not(grouptimeout_portable))))]
    #[allow(clippy::unused_self, reason = "no keeper outside Linux")]
    fn keeper(&self) -> Option<&std::convert::Infallible> {
        None
    }

    /// Whether the job has a keeper: the spawned process (`id`) is the keeper, outside the group whose id is its pid;
    /// the command is its child in that group.
    pub(crate) fn kept(&self) -> bool {
        self.keeper().is_some()
    }

    /// The pid a wait watches for the command's exit: the command's, for a kept job; else `id`, the leader's.
    #[cfg_attr(
        not(all(target_os = "linux", not(grouptimeout_portable))),
        allow(clippy::unused_self, reason = "no keeper outside Linux")
    )]
    pub(crate) fn watched(&self, id: u32) -> u32 {
        #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
        if let Some(inner) = &self.0 {
            if let Some(command) = inner
                .command
                .or_else(|| Some(inner.keeper.as_ref()?.command()))
            {
                return command;
            }
        }
        id
    }

    /// Whether our child `id` (the leader, or a kept job's keeper) has exited, or a kept job's command has (its
    /// keeper then ends the job, or waits for [`judge`](Job::judge)). Errors as for `has_exited`.
    ///
    /// A kept job's keeper found stopped (`kill -STOP` of `id`: `SIGSTOP` cannot be blocked, so it stops the keeper
    /// alone, and the command runs on) is continued at once (`SIGCONT`): stopped, it could neither end the job nor
    /// take the verdict.
    #[cfg_attr(
        not(all(target_os = "linux", not(grouptimeout_portable))),
        allow(clippy::unused_self, reason = "no keeper outside Linux")
    )]
    pub(crate) fn exited(&self, id: u32) -> io::Result<bool> {
        #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
        if let Some(keeper) = self.keeper() {
            return keeper.exited(id);
        }
        crate::sys::has_exited(id)
    }

    /// For a kept job, the signal that stopped its command since the last call (`None`: not stopped; a job without
    /// a keeper has its leader's own stops, see `kept`).
    #[cfg_attr(
        not(all(target_os = "linux", not(grouptimeout_portable))),
        allow(clippy::unused_self, reason = "no keeper outside Linux")
    )]
    pub(crate) fn take_stop(&self) -> Option<i32> {
        #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
        if let Some(keeper) = self.keeper() {
            return keeper.take_stop();
        }
        None
    }

    /// For a kept job, what its keeper does when this process dies: `signal` to the command's group, then up to
    /// `grace` for the job to end, then `SIGKILL` (see `Keeper::set_death_plan`: an order over the job's channel). Nothing for a job without a
    /// keeper (its guard, if any, is told by the `GroupChild`).
    #[cfg_attr(
        not(all(target_os = "linux", not(grouptimeout_portable))),
        allow(clippy::unused_self, reason = "no keeper outside Linux")
    )]
    pub(crate) fn set_death_plan(&self, signal: i32, grace: std::time::Duration) {
        let _ = (signal, grace);
        #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
        if let Some(keeper) = self.keeper() {
            keeper.set_death_plan(signal, grace);
        }
    }

    /// Just before the reap of `id`: tells a kept job's keeper to end the job (`kill`) or to keep what the command
    /// left; it then reaps the command and exits as it did (the wait sleeps on its exit).
    #[cfg_attr(
        not(all(target_os = "linux", not(grouptimeout_portable))),
        allow(clippy::unused_self, reason = "no keeper outside Linux")
    )]
    pub(crate) fn judge(&self, id: u32, kill: bool) {
        let _ = (id, kill);
        #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
        if let Some(keeper) = self.keeper() {
            keeper.judge(kill);
        }
    }

    /// The leader `pid` was spawned: for lineage (and a reaper's backup mark), the leader's start time bounds which
    /// processes may carry the mark.
    #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
    pub(crate) fn started(&self, pid: u32) {
        if let Some(Bound::Lineage(mark) | Bound::Reaper(mark)) =
            self.0.as_ref().map(|inner| &inner.bound)
        {
            mark.started(pid);
        }
    }

    pub(crate) fn containment(&self) -> Containment {
        let Some(inner) = &self.0 else {
            return Containment::Group;
        };
        match inner.bound {
            #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
            Bound::Cgroup(_) => Containment::Cgroup,
            #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
            Bound::Lineage(_) => Containment::Lineage,
            #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
            Bound::Reaper(_) => Containment::Reaper,
        }
    }

    /// Sends `signal` to a kept job's command by its pid if it left its group (`setpgid`, `setsid`), which the group
    /// signal of its keeper `keeper` (whose pid is the group's id) then missed, as `signal_group` does for a leader
    /// without a keeper. Through a pidfd, opened before the process is checked to be the keeper's child: the command
    /// is pinned (unreaped) by its keeper until the verdict, and a keeper that was killed took it along.
    ///
    /// # Errors
    ///
    /// A pidfd that cannot be opened (the OS error), or `EPERM` (a command that became another user).
    #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
    fn signal_moved_command(&self, keeper: u32, signal: i32) -> io::Result<()> {
        let Some(command) = self.keeper().map(Keeper::command) else {
            return Ok(());
        };
        let moved = |pid| {
            super::proc::Stat::read(pid)
                .is_some_and(|s| s.ppid == keeper && s.pgid != keeper && !s.dead())
        };
        if !moved(command) {
            return Ok(());
        }
        match super::proc::signal_checked(command, signal, moved)? {
            super::proc::Sent::Denied => Err(io::Error::from_raw_os_error(libc::EPERM)),
            _ => Ok(()),
        }
    }

    /// Sends `signal` to the job of `leader`, as systemd's `KillMode=mixed` does: `SIGKILL` to the whole job, any other
    /// signal to the command's group and the command only (`group`, which signals the leader's group, and the leader
    /// by pid; for a kept job, the command by pid too if it left its group), as GNU `timeout` sends it. So a
    /// supervisor inside the job (the tool run by the tool, a library job inside a tool's job) keeps its own signal
    /// plan: the catchable signal reaches its job only through it, and only `SIGKILL` reaches everything.
    ///
    /// `SIGKILL`: `group` first, or at once with what kills the whole job (`cgroup.kill`), and only then the search
    /// for the job's processes outside the group (all of them, until none is left, recording the ones reached), so
    /// that no leader runs on while the rest of its job dies around it. The caller holds the leader unreaped.
    ///
    /// # Errors
    ///
    /// `group`'s error first, else the error of the rest; both parts are tried whatever the other did.
    pub(crate) fn signal(
        &self,
        leader: u32,
        signal: i32,
        group: impl FnOnce() -> io::Result<()>,
    ) -> io::Result<()> {
        let Some(inner) = &self.0 else {
            return group();
        };
        let _ = leader;
        if signal != libc::SIGKILL {
            let sent = group();
            #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
            return sent.and(self.signal_moved_command(leader, signal));
            #[cfg(not(all(target_os = "linux", not(grouptimeout_portable))))]
            return sent;
        }
        match inner.bound {
            // The keeper kills the job (this thread only tells it); a keeper that was killed left it to this process.
            #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
            Bound::Cgroup(ref cgroup) => match self.keeper() {
                Some(keeper) if keeper.kill() => stopped_first(leader, keeper, group),
                _ => group().and(cgroup.kill_all()),
            },
            #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
            Bound::Lineage(ref mark) => {
                // The group is stopped first and killed after the search's first pass: a member that the group kill
                // killed at once was re-parented to init (its parent died with it), which may reap it before the
                // search reads it, and then a process the kill reached would not be recorded.
                let mut group = Some(group);
                let mut sent = None;
                let _ = crate::sys::signal_group(leader, libc::SIGSTOP);
                let rest = mark.signal(leader, signal, &inner.reached, || {
                    if let Some(group) = group.take() {
                        sent = Some(group());
                    }
                });
                // A search that failed before it signalled the group: the group's signal all the same.
                let sent = sent
                    .or_else(|| group.map(|group| group()))
                    .unwrap_or(Ok(()));
                sent.and(rest)
            }
            #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
            Bound::Reaper(ref mark) => match self.keeper() {
                Some(keeper) if keeper.kill() => stopped_first(leader, keeper, group),
                // A job that killed its keeper was re-parented away from it: its mark is what is left to find it by.
                _ => group().and(mark.signal(leader, signal, &inner.reached, || {})),
            },
        }
    }

    /// Moves what the kills reached into `leftovers` (once per pid), except `guard`, the guard of `die_with_parent` (a
    /// member of the group that lineage kills find): it is ours, not something the job left behind.
    pub(crate) fn take_reached(&self, leftovers: &mut Vec<Leftover>, guard: Option<u32>) {
        let Some(inner) = &self.0 else {
            return;
        };
        #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
        if let Some(keeper) = &inner.keeper {
            keeper.take_reached(&mut lock(&inner.reached));
        }
        for left in lock(&inner.reached).drain(..) {
            if Some(left.pid) != guard && !leftovers.iter().any(|l| l.pid == left.pid) {
                leftovers.push(left);
            }
        }
    }

    /// Once the command has exited, waiting for the whole job (`set_wait_for_job`), with the leader (or keeper) `id`
    /// unreaped: whether nothing of the job but it, and `guard` (the guard of `die_with_parent`, a member of the group
    /// that is ours), is left, and a descriptor that turns readable when that may have changed (see
    /// `Boundary::rest_exited`). A kept job's keeper ends the job itself and exits once nothing of it is left (its
    /// pidfd); lineage and a plain group are scanned in `/proc`.
    ///
    /// # Errors
    ///
    /// `/proc` cannot be listed (lineage, a plain group), or the keeper was reaped by someone else (`ECHILD`).
    pub(crate) fn rest_exited(
        &self,
        id: u32,
        guard: Option<u32>,
    ) -> io::Result<(bool, Option<std::os::fd::RawFd>)> {
        let Some(inner) = &self.0 else {
            return crate::sys::group_has_members(id, guard).map(|alive| (!alive, None));
        };
        let _ = guard;
        match inner.bound {
            #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
            Bound::Lineage(ref mark) => mark.any_alive(id, guard).map(|alive| (!alive, None)),
            // A keeper that was killed has exited: the job's end follows.
            #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
            Bound::Cgroup(_) | Bound::Reaper(_) => self
                .keeper()
                .map_or(Ok((true, None)), |k| k.rest_exited(id)),
        }
    }

    /// The leader was reaped (or given up on): the job ends. A cgroup is killed (or, with `keep`, its processes are
    /// moved to the cgroup the caller runs in) and removed once empty, with its sub-cgroups, bounded; a lineage job
    /// needs nothing more.
    /// Later calls do nothing.
    #[allow(
        clippy::unnecessary_wraps,
        reason = "it can fail on Linux; elsewhere no job has a boundary (the `match` has no arm)"
    )]
    pub(crate) fn end(&self, keep: bool) -> io::Result<()> {
        let Some(inner) = &self.0 else {
            return Ok(());
        };
        let _ = keep;
        #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
        let (removed, failed) = self.keeper().map_or((false, None), Keeper::ended);
        match inner.bound {
            // The folder that a keeper did not remove (it ended the job inside it, or it was killed) is removed here.
            #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
            Bound::Cgroup(ref cgroup) => {
                let ended = if removed { Ok(()) } else { cgroup.end(keep) };
                failed.map_or(ended, Err)
            }
            #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
            Bound::Reaper(_) => failed.map_or(Ok(()), Err),
            #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
            Bound::Lineage(_) => Ok(()),
        }
    }

    /// Right after the reap of the leader, before [`end`](Job::end): `usage`, the leader's, refined with what a kept
    /// job's keeper measured of the whole job (see `Keeper::usage`: the keeper's report); a lineage job and a plain group keep the
    /// leader's.
    #[cfg_attr(
        not(all(target_os = "linux", not(grouptimeout_portable))),
        allow(clippy::unused_self, reason = "no keeper outside Linux")
    )]
    pub(crate) fn usage(&self, usage: &mut grouptimeout::Usage) {
        let _ = usage;
        #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
        if let Some(keeper) = self.keeper() {
            keeper.usage(usage);
        }
    }

    /// Whether process `pid` belongs to the job whose leader is `leader`, as far as `/proc` tells now: never a
    /// process that has exited (a zombie; on Linux), and never by its group alone once the leader was reaped
    /// (`leader_unreaped` false: the group id may name someone else's group by then).
    pub(crate) fn contains(&self, leader: u32, pid: u32, leader_unreaped: bool) -> bool {
        #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
        if super::proc::Stat::read(pid).is_none_or(|s| s.dead()) {
            return false;
        }
        let in_group =
            || leader_unreaped && crate::sys::group_of(pid).is_ok_and(|pgid| pgid == leader);
        let Some(inner) = &self.0 else {
            return in_group();
        };
        match inner.bound {
            // The keeper lives in the job's folder, but is not the job's.
            #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
            Bound::Cgroup(ref cgroup) => pid != leader && cgroup.contains(pid),
            #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
            Bound::Lineage(ref mark) => in_group() || mark.carried_by(pid),
            #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
            Bound::Reaper(ref mark) => {
                if leader_unreaped && !crate::sys::has_exited(leader).unwrap_or(true) {
                    reaper::in_tree(leader, pid)
                } else {
                    in_group() || mark.carried_by(pid)
                }
            }
        }
    }
}
