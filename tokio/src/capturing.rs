//! [`Capturing`]: `GroupChild::wait_with_output_deadline` as a future.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use grouptimeout::{Capture, Captured, GroupChild};

use crate::driver::Driver;

/// Waits for the job while reading its output, without blocking a thread: the future that [`wait_with_output`]
/// returns. It owns the child (inside a [`grouptimeout::Capture`]).
///
/// Its output is what [`GroupChild::wait_with_output_deadline`] returns: the same reads, the same input written,
/// the same bounds per stream ([`GroupChild::set_output_limit`]), the same end-of-job sequence (an idle end too, with
/// [`GroupChild::set_idle_timeout`]) and the same drain of about 100 ms after the reap, taken by the same code (the
/// core's [`Capture::step`]). Its result holds what the job used ([`Captured::usage`]). A sink
/// ([`GroupChild::set_output_sink`], or the lines of [`output_lines`](crate::output_lines)) is called in the poll of
/// this future that read the chunk, on the runtime's thread that polls it: keep it short, as any code run in a task.
///
/// # Ended before its deadline
///
/// To end the job now (a client that went away, a cancelled task) and still get its output and usage,
/// [`set_deadline`](Capturing::set_deadline) to now and await the future: the job is ended as at a deadline (the
/// [grace](GroupChild::set_grace) signal, the grace period while the pipes are read, `SIGKILL`, the reap, the drain),
/// and no thread blocks meanwhile.
///
/// # Dropped before it is done
///
/// As a [`Waiting`](crate::Waiting): dropping it drops the child, which ends the job (group, and a contained job's
/// boundary, killed, leader reaped; bounded, blocking the dropping thread meanwhile, without a grace period), and the
/// output read so far and the usage are lost. To stop waiting and keep the job, [`detach`](Capturing::detach) the
/// [`Capture`], which holds the child and what was read so far, and drive it later with [`Capturing::new`] (or step it
/// in a loop of your own).
#[must_use = "a future does nothing unless awaited; dropped, it ends the job"]
pub struct Capturing {
    driver: Driver,
    capture: Result<Capture, Option<io::Error>>,
}

/// Waits for `child` until its leader exits or `deadline` passes (`None`: no deadline), reading its piped standard
/// output and standard error meanwhile, as [`GroupChild::wait_with_output_deadline`] does, in a future that owns the
/// child.
///
/// Needs the `capture` feature (on by default). The child's settings apply (output limits, input, sink or
/// [`output_lines`](crate::output_lines), idle timeout, grace, leftovers): set them before. The capture starts here
/// ([`GroupChild::capture_steps`]: standard input closed or fed, pipes made non-blocking); the deadline can be moved
/// with [`Capturing::set_deadline`]. Do not use it with a paused clock (see [`wait`](crate::wait)).
///
/// # Errors
///
/// As [`GroupChild::wait_with_output_deadline`]'s (an error starting the capture is returned at the first poll: the
/// child was dropped then, which ended the job); and the runtime's reactor failed (it shut down). Polled again after
/// it returned the output, the future returns [`Capture::step`]'s error for a step after the end
/// ([`InvalidInput`](io::ErrorKind::InvalidInput)).
///
/// # Panics
///
/// When polled outside a tokio runtime with IO and time enabled ([`tokio::runtime::Builder::enable_all`]).
///
/// # Examples
///
/// ```
/// use std::process::{Command, Stdio};
/// use std::time::Duration;
/// use grouptimeout::GroupCommandExt;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> std::io::Result<()> {
/// let child = Command::new("sh")
///     .args(["-c", "echo started; sleep 30"])
///     .stdout(Stdio::piped())
///     .spawn_group()?;
/// let deadline = tokio::time::Instant::now() + Duration::from_millis(500);
/// let captured = grouptimeout_tokio::wait_with_output(child, Some(deadline)).await?;
/// assert!(captured.outcome.timed_out());
/// assert_eq!(captured.stdout, b"started\n");
/// # Ok(())
/// # }
/// ```
pub fn wait_with_output(child: GroupChild, deadline: Option<tokio::time::Instant>) -> Capturing {
    let capture = child
        .capture_steps(deadline.map(tokio::time::Instant::into_std))
        .map_err(Some);
    Capturing {
        driver: Driver::new(),
        capture,
    }
}

impl Capturing {
    /// Drives a capture started with [`GroupChild::capture_steps`] (or [`detach`](Capturing::detach)ed from another
    /// `Capturing`) to its end.
    pub fn new(capture: Capture) -> Capturing {
        Capturing {
            driver: Driver::new(),
            capture: Ok(capture),
        }
    }

    /// The child, for [`GroupChild::id`] and [`GroupChild::handle`]; `None` when the capture could not start (the
    /// future returns that error).
    #[must_use]
    pub fn child(&self) -> Option<&GroupChild> {
        self.capture.as_ref().ok().map(Capture::child)
    }

    /// Moves the deadline (`None`: no deadline) for the next steps, as [`Waiting::set_deadline`](crate::Waiting::set_deadline)
    /// does ([`Capture::set_deadline`]): it counts until the deadline (or the idle end) passed; from then on the
    /// end-of-job sequence that started goes on whatever the deadline.
    ///
    /// `set_deadline(Some(tokio::time::Instant::now()))` then `.await` ends the job without blocking a thread (a grace
    /// period set with [`GroupChild::set_grace`] is awaited, the pipes read meanwhile), and the future still returns
    /// the output and the usage, where a drop blocks while it kills and loses both.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::process::{Command, Stdio};
    /// use std::time::Duration;
    /// use grouptimeout_tokio::{signal, GroupCommandExt};
    /// use tokio::time::Instant;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// let mut child = Command::new("sh")
    ///     .args(["-c", "trap 'echo bye; exit 1' TERM; echo hi; while :; do sleep 0.1; done"])
    ///     .stdout(Stdio::piped())
    ///     .spawn_group()?;
    /// child.set_grace(signal::SIGTERM, Duration::from_secs(5));
    /// let mut capturing = grouptimeout_tokio::wait_with_output(child, None);
    /// // The client went away.
    /// let gone = tokio::time::sleep(Duration::from_millis(300));
    /// let captured = tokio::select! {
    ///     captured = &mut capturing => captured?,
    ///     () = gone => {
    ///         capturing.set_deadline(Some(Instant::now()));
    ///         capturing.await?
    ///     }
    /// };
    /// assert!(captured.outcome.timed_out());
    /// assert_eq!(captured.stdout, b"hi\nbye\n");
    /// println!("CPU time: {:?}", captured.usage.cpu());
    /// # Ok(())
    /// # }
    /// ```
    pub fn set_deadline(&mut self, deadline: Option<tokio::time::Instant>) {
        if let Ok(capture) = &mut self.capture {
            capture.set_deadline(deadline.map(tokio::time::Instant::into_std));
        }
        self.driver.step_soon();
    }

    /// Stops waiting and gives back the capture, with the child and what was read so far: the job goes on, and is
    /// the caller's again (drive it with [`Capturing::new`], or drop it to end the job). `None` when the capture could
    /// not start.
    ///
    /// While the capture is not driven nobody reads the pipes: a command that fills one blocks on its next write (as
    /// any command whose reader pauses), until the capture is driven again or dropped. If the deadline had passed, the
    /// end-of-job sequence has started, and driving the capture again finishes it.
    #[must_use = "the capture is dropped at once otherwise, which ends the job"]
    pub fn detach(self) -> Option<Capture> {
        self.capture.ok()
    }
}

impl Future for Capturing {
    type Output = io::Result<Captured>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        match &mut this.capture {
            Ok(capture) => this.driver.poll(cx, || capture.step()),
            Err(err) => Poll::Ready(Err(err.take().unwrap_or_else(|| {
                io::Error::other("grouptimeout_tokio::Capturing polled after it returned its error")
            }))),
        }
    }
}

impl std::fmt::Debug for Capturing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Capturing")
            .field("child", &self.child().map(GroupChild::id))
            .finish_non_exhaustive()
    }
}
