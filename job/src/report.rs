//! [`LeakReport`]: what a finished job left behind, told as a test runner tells leaks, and how much of the job its
//! boundary could see ([`Seen`]).

use std::fmt;

use crate::contain::{Containment, Leftover};

/// What a job's kills reached besides its leader, whether that was leaked, and what the list can have seen; from
/// [`JobChildExt::leak_report`](crate::JobChildExt::leak_report) (a child, once a wait has returned) or
/// [`JobOutputExt::leak_report`](crate::JobOutputExt::leak_report) (a finished job's result: a capturing wait's, a
/// `grouptimeout-set` job's).
///
/// A leak is what the command left running when it exited on its own: with
/// [`set_leak_grace`](grouptimeout::GroupChild::set_leak_grace), what is still there at the grace's end, else what is
/// there at its exit. What a deadline, [`kill`](grouptimeout::GroupChild::kill) or a signal ended while the command
/// ran was killed with the job, and is not a leak. Its [`Display`](fmt::Display) is one line for a runner's report
/// (`leaked 2 processes: 4242 sleep, 4250 sh`; `no leaks`; for a plain group, that nothing is known).
///
/// # Examples
///
/// ```
/// use std::process::Command;
/// use std::time::Duration;
/// use grouptimeout_job::{JobChildExt, JobCommandExt, Seen};
///
/// # fn main() -> std::io::Result<()> {
/// // The command exits at once and leaves a `setsid` sleep behind; it gets 100 ms to exit on its own.
/// let mut child = Command::new("sh").args(["-c", "setsid sleep 30 & exit 0"]).spawn_contained()?;
/// child.set_leak_grace(Duration::from_millis(100));
/// assert!(child.wait_timeout(Duration::from_secs(30))?.status().success());
/// let report = child.leak_report();
/// println!("{report}");
/// match report.seen {
///     // A cgroup, or the job's own reaper: the sleep was seen, killed, and is a leak.
///     Seen::WholeJob => assert_eq!(report.leaks().map(<[_]>::len), Some(1)),
///     // Where neither can be had, lineage sees the sleep by its mark.
///     Seen::Marked => assert!(report.leaks().is_some_and(|leaks| !leaks.is_empty())),
///     _ => assert_eq!(report.leaks(), None),
/// }
/// # Ok(())
/// # }
/// ```
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeakReport {
    /// What the job's `SIGKILL`s reached besides the leader, once each, in the order found: what
    /// [`leftovers`](crate::JobChildExt::leftovers) lists. Empty for a plain group, whatever was killed (see [`Seen`]).
    pub killed: Vec<Leftover>,
    /// Whether `killed` was leaked: the first signal this process sent to the job came after the command had exited
    /// on its own (the kill of its leftovers, at once or at the leak grace's end). `false` when a deadline,
    /// [`kill`](grouptimeout::GroupChild::kill), [`signal`](grouptimeout::GroupChild::signal) or a
    /// [`GroupHandle`](grouptimeout::GroupHandle) signalled the job while its command ran (what was killed then was
    /// killed with the job, not leaked), and when nothing was signalled at all (`set_kill_leftovers(false)`: what the
    /// command left runs on, unlisted; [`leaks`](LeakReport::leaks) is then `None`). With `set_wait_for_job(true)`,
    /// what is still running at the deadline was left by a command that exited on its own: leaked too. It says how
    /// the kills came, not whether anything was left: [`leaks`](LeakReport::leaks) says that (`Some` of an empty
    /// list: no leaks).
    pub leaked: bool,
    /// What `killed` can have listed: the whole job, the marked processes, or nothing.
    pub seen: Seen,
    /// Whether the job was signalled at all (else nothing was killed, and nothing can be told of leaks).
    signalled: bool,
}

/// What a job's boundary can list of what its kills reached; see [`LeakReport::seen`] and
/// [`Containment`](crate::Containment).
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Seen {
    /// Every process of the job, however it daemonised ([`Containment::Cgroup`], [`Containment::Reaper`]): an empty
    /// list means that nothing was left. (A reaper job whose keeper was killed is searched by its mark, as lineage.
    /// A cgroup that cannot be frozen while it is listed may end unlisted a process forked between the list and the
    /// kill.)
    WholeJob,
    /// The processes that carry the job's mark, and the members of its process group ([`Containment::Lineage`]): a
    /// process started with a cleared environment (`env -i`), or one whose environment cannot be read (another user's,
    /// or non-dumpable without `CAP_SYS_PTRACE`), is neither listed nor killed.
    Marked,
    /// Nothing ([`Containment::Group`], a plain process group): its kill is one signal to the group, which lists no
    /// process, and a process that left the group (`setsid`, `setpgid`, a double-forking daemon) is not reached at
    /// all. An empty list says nothing of leaks; `spawn_contained` sees the whole job.
    Nothing,
}

impl LeakReport {
    /// The report of a job with `containment` whose kills reached `killed`; `leaked`: what the job's first signal
    /// found (`Some(true)`: the command had exited on its own), `None` when it was never signalled.
    pub(crate) fn new(
        containment: Containment,
        killed: Vec<Leftover>,
        leaked: Option<bool>,
    ) -> LeakReport {
        let seen = match containment {
            Containment::Cgroup | Containment::Reaper => Seen::WholeJob,
            Containment::Lineage => Seen::Marked,
            Containment::Group => Seen::Nothing,
        };
        LeakReport {
            killed,
            leaked: leaked == Some(true),
            seen,
            signalled: leaked.is_some(),
        }
    }

    /// The leaked processes: `killed` if it was leaked, else none (for [`Seen::Marked`], of the processes that
    /// carried the mark). `None` where nothing can be told, which is not "no leaks": the boundary lists nothing (a
    /// plain group, [`Seen::Nothing`]), or the job was never signalled (no wait has ended it yet, or
    /// `set_kill_leftovers(false)` kept what its command left, running and unlisted).
    #[must_use]
    pub fn leaks(&self) -> Option<&[Leftover]> {
        match self.seen {
            Seen::Nothing => None,
            _ if !self.signalled => None,
            _ if self.leaked => Some(&self.killed),
            _ => Some(&[]),
        }
    }
}

impl fmt::Display for LeakReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |f: &mut fmt::Formatter<'_>| {
            for (i, left) in self.killed.iter().enumerate() {
                let sep = if i == 0 { ": " } else { ", " };
                write!(f, "{sep}{} {}", left.pid, left.name)?;
            }
            Ok(())
        };
        match self.leaks() {
            None if self.seen == Seen::Nothing => {
                return f.write_str(
                    "leaks not known: a plain process group's kill lists no process, and does not reach one that \
                     left the group",
                )
            }
            None => {
                return f.write_str(
                    "leaks not known: the job was not killed (no wait has ended it yet, or its leftovers were kept)",
                )
            }
            Some([]) if self.killed.is_empty() => f.write_str("no leaks")?,
            Some([]) => {
                f.write_str("no leaks; killed with the job while its command ran")?;
                list(f)?;
            }
            Some(leaks) => {
                let s = if leaks.len() == 1 { "" } else { "es" };
                write!(f, "leaked {} process{s}", leaks.len())?;
                list(f)?;
            }
        }
        if self.seen == Seen::Marked {
            f.write_str(" (of the processes that carry the job's mark)")?;
        }
        Ok(())
    }
}
