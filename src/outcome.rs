//! [`Outcome`]: how a wait ended, with the leader's exit status.

use std::fmt;
use std::process::ExitStatus;

/// How a wait ended: with the leader's exit status either way.
///
/// Exhaustive on purpose, so that a `match` needs no wildcard arm: a wait ends in one of these three ways (the third,
/// [`Idle`](Outcome::Idle), only for a capture with an idle timeout). Adding a
/// variant would be a breaking change, made only in a new major version (a new minor version while the crate is
/// 0.x), as the semver rules of Cargo say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The leader exited before the deadline. Unless [`GroupChild::set_kill_leftovers`](crate::GroupChild::set_kill_leftovers) turned it off, every
    /// other member of its group was sent `SIGKILL` before the wait returned.
    Exited(ExitStatus),
    /// The deadline passed first: the group was signalled (see [`GroupChild::set_grace`](crate::GroupChild::set_grace)), sent `SIGKILL`, and the
    /// leader reaped. The status is the leader's, as the kernel reports it, and need not say "killed by signal": the
    /// leader may have exited in the moment between the wait's last check and the signal (the deadline had passed
    /// at that check), or during a grace period, on the grace signal (a handler that exits with a status of its own,
    /// such as a shell's `trap 'exit 0' TERM`) or by itself; a leader that ignores or blocks the grace signal is
    /// killed by `SIGKILL` at the grace period's end.
    TimedOut(ExitStatus),
    /// (Feature `capture`) The command wrote nothing to its captured streams for the idle timeout
    /// (`GroupChild::set_idle_timeout`) before the deadline: the job was ended by the same
    /// sequence as at a deadline (see [`TimedOut`](Outcome::TimedOut), which says the same of the status). Only a
    /// capturing wait with an idle timeout ends so.
    Idle(ExitStatus),
}

impl Outcome {
    /// The leader's exit status.
    #[must_use]
    pub fn status(&self) -> ExitStatus {
        match *self {
            Outcome::Exited(status) | Outcome::TimedOut(status) | Outcome::Idle(status) => status,
        }
    }

    /// Whether the deadline passed before the leader exited (`false` for [`Idle`](Outcome::Idle)).
    #[must_use]
    pub fn timed_out(&self) -> bool {
        matches!(self, Outcome::TimedOut(_))
    }

    /// Whether the job was ended for writing nothing for the idle timeout ([`Outcome::Idle`]).
    #[must_use]
    pub fn idle(&self) -> bool {
        matches!(self, Outcome::Idle(_))
    }
}

/// Reads as a log line: `exited with status 3`, `killed by signal 9` (a leader killed by a
/// [`GroupHandle`](crate::GroupHandle) or [`GroupChild::kill`](crate::GroupChild::kill)), `timed out; killed by signal 9`, `timed out; exited with status 0` (the
/// leader exited on its own during a grace period), `went idle; killed by signal 9`. A core dump adds ` (core dumped)`.
impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use std::os::unix::process::ExitStatusExt as _;
        match self {
            Outcome::Exited(_) => {}
            Outcome::TimedOut(_) => f.write_str("timed out; ")?,
            Outcome::Idle(_) => f.write_str("went idle; ")?,
        }
        let status = self.status();
        match (status.code(), status.signal()) {
            (Some(code), _) => write!(f, "exited with status {code}"),
            (None, Some(signal)) => {
                write!(f, "killed by signal {signal}")?;
                if status.core_dumped() {
                    f.write_str(" (core dumped)")?;
                }
                Ok(())
            }
            // Neither an exit nor a fatal signal: a reaped leader has one of the two, so this is only for
            // completeness (std's own wording).
            (None, None) => write!(f, "{status}"),
        }
    }
}
