//! The death plan, normalised once: what the job gets when its supervisor dies, for the keeper (which reads it from
//! the page it shares with the supervisor) and the forked guard (which reads it from its pipe) alike.

use std::time::Duration;

use super::{kill, monotonic, nap_for};

/// What the job gets when its supervisor dies: `signal` first (with `SIGCONT` after it unless it stops), then up to
/// `grace` for the job to end, then `SIGKILL`. A signal of 0 or `SIGKILL`, or no grace, is `SIGKILL` at once (the
/// default): [`DeathPlan::new`] makes every such plan the same one, so that no reader checks it again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct DeathPlan {
    /// 0: none (`SIGKILL` at once).
    signal: i32,
    /// Whole milliseconds (a grace, however short, is not "none": rounded up); 0 with no signal.
    grace_ms: u32,
}

impl DeathPlan {
    /// The plan for `signal` and `grace`, normalised (see [`DeathPlan`]).
    pub(crate) fn new(signal: i32, grace: Duration) -> DeathPlan {
        let millis = u32::try_from(grace.as_nanos().div_ceil(1_000_000)).unwrap_or(u32::MAX);
        DeathPlan::from_parts(u64::try_from(signal).unwrap_or(0), millis.into())
    }

    /// The plan from its two numbers, as a page or a pipe carries them (a signal, and a grace in milliseconds),
    /// normalised (see [`DeathPlan`]).
    pub(crate) fn from_parts(signal: u64, grace_ms: u64) -> DeathPlan {
        let signal = i32::try_from(signal).unwrap_or(0);
        let grace_ms = u32::try_from(grace_ms).unwrap_or(u32::MAX);
        if signal <= 0 || signal == libc::SIGKILL || grace_ms == 0 {
            return DeathPlan::default();
        }
        DeathPlan { signal, grace_ms }
    }

    /// The signal (0: none) and the grace in milliseconds, as a page or a pipe carries them.
    pub(crate) fn parts(self) -> (u32, u32) {
        (self.signal.unsigned_abs(), self.grace_ms)
    }

    /// Whether the signal is followed by `SIGCONT` (it is not a stop signal; `false` without a signal).
    pub(crate) fn cont(self) -> bool {
        self.signal > 0 && !grouptimeout::__private::is_stop_signal(self.signal)
    }

    /// Gives the plan, if it has a signal: sends it (then `SIGCONT`, see [`DeathPlan::cont`]) to each of `targets`
    /// (`kill`'s ids: 0 is the caller's own group; 1 and -1 are never signalled), then waits up to the grace, every
    /// 10 ms asking `ended` whether the job has ended. The caller then ends what is left with `SIGKILL`. Each id must
    /// be pinned by the caller (an unreaped child, or a group it is in or leads).
    pub(crate) fn give(self, targets: [libc::pid_t; 2], mut ended: impl FnMut() -> bool) {
        if self.signal <= 0 {
            return;
        }
        for target in targets.into_iter().filter(|&t| t != 1 && t != -1) {
            let _ = kill(target, self.signal);
            if self.cont() {
                let _ = kill(target, libc::SIGCONT);
            }
        }
        let end = monotonic().saturating_add(Duration::from_millis(self.grace_ms.into()));
        while monotonic() < end {
            if ended() {
                return;
            }
            nap_for(10);
        }
    }
}
