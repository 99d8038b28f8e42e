//! [`Waiting`]: `GroupChild::wait_deadline` as a future.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use grouptimeout::{GroupChild, Outcome, Usage};

use crate::driver::Driver;

/// What a [`Waiting`] returns: how the wait ended, and what the job used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Waited {
    /// How the wait ended, with the leader's exit status: what [`GroupChild::wait_deadline`] returns.
    pub outcome: Outcome,
    /// What the job used, as [`GroupChild::usage`] says it once the leader was reaped: for a plain group the leader's
    /// own resource usage (partial, see [`Usage`]); for a job contained with `grouptimeout-job`, what its boundary
    /// measured ([`Usage::measured`]).
    pub usage: Usage,
}

/// Waits for the job without blocking a thread: the future that [`wait`] returns. It owns the child.
///
/// Its output is what [`GroupChild::wait_deadline`] returns (or `wait` without a deadline), with what the job used
/// ([`Waited`]): the same end-of-job sequence, taken by the same code (the core's [`GroupChild::step`]), with the same
/// outcome and errors.
///
/// # Dropped before it is done
///
/// Dropping it before it returned drops the child, which ends the job as [`GroupChild`]'s `Drop` does: the group
/// (and a contained job's whole boundary, with `grouptimeout-job`) is killed and the leader reaped before the drop
/// returns, waiting at most about a second. That is what happens to the losing branch of `tokio::select!`, to a wait
/// in [`tokio::time::timeout`] whose time ran out, to an aborted task and to the tasks of a runtime that shuts
/// down. The drop blocks the thread that runs it meanwhile (a `SIGKILL` and a reap: usually a fraction of a
/// millisecond; longer only for a leader that the kernel is slow to tear down, and for a contained job, whose end
/// waits for its boundary to empty).
///
/// To stop waiting and keep the job, [`detach`](Waiting::detach) the child; to end the job without blocking, move
/// the deadline to now with [`set_deadline`](Waiting::set_deadline) and await the future.
#[must_use = "a future does nothing unless awaited; dropped, it ends the job"]
pub struct Waiting {
    driver: Driver,
    child: GroupChild,
    deadline: Option<std::time::Instant>,
}

/// Waits for `child` until its leader exits or `deadline` passes (`None`: no deadline), as
/// [`GroupChild::wait_deadline`] does, in a future that owns the child.
///
/// The child's settings apply ([`GroupChild::set_grace`], [`GroupChild::set_kill_leftovers`]); set them before.
/// The deadline is read on the runtime's clock and handed to the core as a [`std::time::Instant`]: do not use it
/// with a paused clock (`tokio::time::pause`), where the runtime's time is not the core's.
///
/// # Errors
///
/// As [`GroupChild::wait_deadline`]'s; and the runtime's reactor failed (it shut down). After an error the future
/// still owns the child, whose drop ends the job; awaited again, it steps again (the core goes on after an error).
/// Polled again after it returned the outcome, it returns the same outcome, as the child's waits do.
///
/// # Panics
///
/// When polled outside a tokio runtime with IO and time enabled ([`tokio::runtime::Builder::enable_all`]), as
/// tokio's own IO types panic.
///
/// # Examples
///
/// ```
/// use std::process::Command;
/// use std::time::Duration;
/// use grouptimeout::GroupCommandExt;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> std::io::Result<()> {
/// let child = Command::new("sh").args(["-c", "sleep 30 & sleep 30"]).spawn_group()?;
/// let deadline = tokio::time::Instant::now() + Duration::from_millis(100);
/// let waited = grouptimeout_tokio::wait(child, Some(deadline)).await?;
/// assert!(waited.outcome.timed_out()); // both sleeps were killed, the leader reaped
/// println!("CPU time: {:?}", waited.usage.cpu());
/// # Ok(())
/// # }
/// ```
pub fn wait(child: GroupChild, deadline: Option<tokio::time::Instant>) -> Waiting {
    Waiting {
        driver: Driver::new(),
        child,
        deadline: deadline.map(tokio::time::Instant::into_std),
    }
}

impl Waiting {
    /// The child, for [`GroupChild::id`] and [`GroupChild::handle`] (a [`grouptimeout::GroupHandle`] signals the
    /// group from any task or thread while this future waits), and for what `grouptimeout-job` tells of a contained
    /// job once the future (awaited as `&mut`) returned (its `leftovers`, its `containment`).
    pub fn child(&self) -> &GroupChild {
        &self.child
    }

    /// Moves the deadline (`None`: no deadline) for the next steps, as a later `wait_deadline` call would: it counts
    /// until the deadline passed; from then on the end-of-job sequence that started goes on whatever the deadline.
    ///
    /// `set_deadline(Some(tokio::time::Instant::now()))` then `.await` ends the job without blocking a thread (a
    /// grace period set with [`GroupChild::set_grace`] is awaited too), where a drop blocks while it kills.
    pub fn set_deadline(&mut self, deadline: Option<tokio::time::Instant>) {
        self.deadline = deadline.map(tokio::time::Instant::into_std);
        self.driver.step_soon();
    }

    /// Stops waiting and gives the child back: the job goes on, and is the caller's again (wait for it, here or
    /// with another future, or drop it to end it).
    ///
    /// If the deadline had already passed, the end-of-job sequence has started (the grace signal was sent, or the
    /// group killed): any later wait of the child finishes it, with a [`Outcome::TimedOut`]. After the future
    /// returned, the child's waits return that same outcome again.
    #[must_use = "the child is dropped at once otherwise, which ends the job"]
    pub fn detach(self) -> GroupChild {
        self.child
    }
}

impl Future for Waiting {
    type Output = io::Result<Waited>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let deadline = this.deadline;
        let child = &mut this.child;
        let outcome = std::task::ready!(this.driver.poll(cx, || child.step(deadline)))?;
        let usage = child
            .usage()
            .expect("a wait is done once its leader was reaped");
        Poll::Ready(Ok(Waited { outcome, usage }))
    }
}

impl std::fmt::Debug for Waiting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Waiting")
            .field("child", &self.child.id())
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}
