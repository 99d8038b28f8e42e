//! Capturing a group's standard output and standard error under a deadline, in the calling thread, with bounded
//! memory (the `capture` feature): [`GroupChild::wait_with_output_timeout`], its steps [`Capture`], and
//! [`Captured`]. `kept` holds the bytes kept from each stream.
//!
//! A capture's step adds the output pipes (set non-blocking) and the input pipe to the child's own
//! [`Interest`](crate::Interest), reads and writes whatever turned ready, and steps the child only when something
//! says that its state may have changed: its pidfd turned readable, a pipe reached end of file, or the instant the
//! child asked for came. So the pipes are drained while the command runs (it never blocks on a full pipe), the
//! leader's exit ends the sleep as in [`GroupChild::wait_deadline`] (without a pidfd, the leader is checked on the
//! same schedule, restarted once every pipe reached end of file, since the leader is then most likely exiting), and
//! the deadline is handled by the very same steps, and so is an idle end (the deadline the child is given is then the
//! last output's read plus the idle time, if that comes first). After the reap, the steps drain the pipes for up to
//! about 100 ms.

use std::fmt;
use std::fs::File;
use std::io::{self, Read, Write as _};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

mod kept;

use crate::boundary::Job;
use crate::child::output::Sink;
pub use crate::child::output::Stream;
use crate::child::GroupChild;
use crate::outcome::Outcome;
use crate::sys;
use crate::wait::{drive, poll_set, poll_step, pollfd, Interest, Step, Woke};
use kept::{Kept, READ_SIZE};

/// The default for [`GroupChild::set_output_limit`]: 16 MiB per stream.
const DEFAULT_OUTPUT_LIMIT: usize = 16 << 20;

/// How long the pipes are drained after the leader was reaped, waiting for every writer to close them.
///
/// Once the group was killed, its members write nothing more and what they wrote is already in the pipe, so this
/// only waits for the end of file that tells the output is complete (see [`Captured::pipes_closed`]). A process that
/// escaped the group, or a leftover kept by `set_kill_leftovers(false)`, may hold the pipe for ever: this bounds the
/// cost of that.
const DRAIN_LIMIT: Duration = Duration::from_millis(100);

/// Reads from one pipe per readiness until about this many bytes were read, so that a writer that keeps a pipe full
/// cannot starve the other pipe or the leader checks: about a millisecond of copying.
///
/// Bytes, not reads, because a reader that keeps up with its writer gets one small read per `write(2)` (4 KiB from
/// `head -c`, say): a bound on the count of reads would send it back to `poll` every few dozen KiB.
const BYTES_PER_ROUND: usize = 1 << 20;

/// ... and at most this many reads, for a writer that trickles a few bytes per `write(2)`: about as long.
const READS_PER_ROUND: usize = 256;

/// What [`GroupChild::wait_with_output_timeout`] returns: how the wait ended, what the command wrote, and what
/// became of its job.
///
/// Needs the `capture` feature (on by default).
///
/// # Which bytes are kept
///
/// At most the [output limit](GroupChild::set_output_limit) `L` of each stream is kept. A stream of at most `L`
/// bytes is returned whole, and its `*_omitted` count is 0. A longer one is returned as its first `H` bytes (the head:
/// `L / 2`, rounded down, unless [`set_stream_limit`](GroupChild::set_stream_limit) said otherwise), then its last
/// `L - H` bytes, exactly `L` bytes in all; `stdout_omitted` / `stderr_omitted`
/// says how many bytes were left out between the two, beside the data, so binary or structured output (JSON) stays
/// as the command wrote it on either side of the cut. With
/// [`set_omission_marker(true)`](GroupChild::set_omission_marker) the line `"\n[grouptimeout: N bytes omitted]\n"`
/// (`N` the count) is written between head and tail as well, for a log that a person reads.
///
/// The head says what the command was doing (its banner, its arguments, often the first error), the tail how it
/// ended (the last error, a panic, a summary); the middle of a runaway log is what a reader of a failed job needs
/// least. The cut counts bytes: it may split a UTF-8 sequence or a line (use [`String::from_utf8_lossy`] to display).
///
/// # Streams that were not piped
///
/// A capturing wait of a [`GroupChild`] reads the streams that were piped at the spawn
/// ([`std::process::Stdio::piped`]), as [`std::process::Child::wait_with_output`] does: a stream that was not (it
/// went to the terminal, a file, `/dev/null`), or that the caller took out of the [`GroupChild`] before the wait,
/// cannot be piped any more once the command runs, and is returned empty, with nothing omitted. To have both
/// streams piped for you, as [`std::process::Command::output`] does, use
/// [`GroupCommandExt::output_timeout`](crate::GroupCommandExt::output_timeout).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Captured {
    /// How the wait ended, with the leader's exit status.
    pub outcome: Outcome,
    /// What the command wrote to its standard output (see [which bytes are kept](Captured#which-bytes-are-kept)).
    pub stdout: Vec<u8>,
    /// What the command wrote to its standard error (see [which bytes are kept](Captured#which-bytes-are-kept)).
    pub stderr: Vec<u8>,
    /// How many bytes of standard output were left out between the head and the tail kept in `stdout` (0: none,
    /// `stdout` is all the command wrote).
    pub stdout_omitted: u64,
    /// How many bytes of standard error were left out between the head and the tail kept in `stderr` (0: none).
    pub stderr_omitted: u64,
    /// How many bytes of the [input](GroupChild::set_input) were written to the command's standard input (all of
    /// them, unless the command closed it or ended first, or the deadline came first); 0 without input.
    pub input_written: usize,
    /// Whether every captured pipe reached end of file, that is, no process held it open any more.
    ///
    /// `true` means nothing is missing from `stdout` and `stderr` (beyond what truncation cut). `false` means a
    /// writer still held a pipe about 100 ms after the leader was reaped: a process that left the group (`setsid`,
    /// a daemon), a leftover kept by [`set_kill_leftovers(false)`](GroupChild::set_kill_leftovers), or, rarely, a
    /// killed member slow to die (it writes nothing more). Whatever such a process writes later is not captured.
    pub pipes_closed: bool,
    /// What the job used (see [`Usage`](crate::Usage) and [`GroupChild::usage`]).
    pub usage: crate::Usage,
    /// The record of the job's boundary, for `grouptimeout-job` to tell what became of the job (its `containment`
    /// and `leftovers`); nothing for a plain group. A record, not the boundary: it holds none of the job's resources.
    pub(crate) job: Option<std::sync::Arc<dyn std::any::Any + Send + Sync>>,
}

#[cfg_attr(docsrs, doc(cfg(feature = "capture")))]
impl GroupChild {
    /// Waits at most `timeout` for the command, reading its standard output and standard error meanwhile; see
    /// [`wait_with_output_deadline`](GroupChild::wait_with_output_deadline).
    ///
    /// Needs the `capture` feature (on by default).
    ///
    /// A timeout too large to represent as an [`Instant`] (such as [`Duration::MAX`]) means no deadline.
    ///
    /// # Errors
    ///
    /// As for [`wait_with_output_deadline`](GroupChild::wait_with_output_deadline).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::process::{Command, Stdio};
    /// use std::time::Duration;
    /// use grouptimeout::GroupCommandExt;
    ///
    /// # fn main() -> std::io::Result<()> {
    /// let child = Command::new("sh")
    ///     .args(["-c", "echo started; sleep 30"])
    ///     .stdout(Stdio::piped())
    ///     .spawn_group()?;
    /// let captured = child.wait_with_output_timeout(Duration::from_secs(1))?;
    /// // What the command wrote before its deadline is kept.
    /// assert!(captured.outcome.timed_out());
    /// assert_eq!(captured.stdout, b"started\n");
    /// # Ok(())
    /// # }
    /// ```
    pub fn wait_with_output_timeout(self, timeout: Duration) -> io::Result<Captured> {
        let deadline = Instant::now().checked_add(timeout);
        self.capture(deadline)
    }

    /// Waits until the command's leader exits or `deadline` passes, exactly as
    /// [`wait_deadline`](GroupChild::wait_deadline) does, while reading its piped standard output and standard
    /// error; returns how the wait ended and what the command wrote.
    ///
    /// Needs the `capture` feature (on by default).
    ///
    /// - Standard input, if piped, is closed first (as [`std::process::Child::wait_with_output`] does), so a
    ///   command reading it sees end of file; or, with [`set_input`](GroupChild::set_input), the input is written
    ///   to it while the output is read (in the same `poll`, under the same deadline), and it is closed after the
    ///   last byte.
    /// - Both pipes are read together in the calling thread with `poll(2)`, whose timeout is the wait's pause
    ///   between checks of the leader, and the command never blocks on a full pipe. On Linux the same `poll` watches
    ///   the leader's pidfd, so the exit ends it at once and nothing wakes up in between (see the crate's "How it
    ///   waits"). Without a pidfd the pauses follow the poll schedule: no busy loop past the leader's first
    ///   millisecond (which checks and yields, as every wait does), and once every pipe reached end of file, which
    ///   usually means the leader is exiting, the checks start over from that moment (checking and yielding for a
    ///   millisecond, then pauses of 1/20 of the time since), so the exit is seen at once.
    /// - At the deadline the group is killed and the leader reaped, as by [`wait_deadline`](GroupChild::wait_deadline)
    ///   (with [`set_grace`](GroupChild::set_grace)'s signal first, if set; the pipes are read during the grace
    ///   period too). When the leader exits first, the leftovers of its group are killed (see
    ///   [`set_kill_leftovers`](GroupChild::set_kill_leftovers)).
    /// - Then what is left in the pipes is read, waiting up to about 100 ms for every writer to close them;
    ///   [`Captured::pipes_closed`] tells whether they all did. A process that escaped the group and holds a pipe
    ///   (`setsid sleep 30 &`) therefore delays the return by about 100 ms, not by its lifetime.
    ///
    /// So the call returns within about 100 ms after the leader was reaped, which is at the deadline (plus the grace
    /// period, if any) at the latest. Each stream keeps at most the [output limit](GroupChild::set_output_limit); see
    /// [which bytes are kept](Captured#which-bytes-are-kept).
    ///
    /// # Errors
    ///
    /// As for [`wait_deadline`](GroupChild::wait_deadline); or a pipe could not be set non-blocking, polled, read or
    /// written (a command that closed its standard input, or ended, before it read all the input is no error:
    /// [`Captured::input_written`] says how much it got).
    /// The handle is consumed, so on any error it is dropped before this returns: the group is killed and the leader
    /// reaped (see [`GroupChild`]'s `Drop`) unless the wait already did, and the output read so far is lost.
    pub fn wait_with_output_deadline(self, deadline: Instant) -> io::Result<Captured> {
        self.capture(Some(deadline))
    }

    /// Sets the most bytes of each output stream kept by
    /// [`wait_with_output_timeout`](GroupChild::wait_with_output_timeout); the default is 16 MiB.
    ///
    /// Needs the `capture` feature (on by default).
    ///
    /// Output past the limit is still read (the command never blocks on a full pipe) and discarded, except for the
    /// tail; see [which bytes are kept](crate::Captured#which-bytes-are-kept). Memory stays below about 1.5 times the
    /// limit per stream, plus a 64 KiB read buffer. `usize::MAX` keeps everything, as
    /// [`std::process::Child::wait_with_output`] does. Sets both streams, half of each limit the head; a later
    /// [`set_stream_limit`](GroupChild::set_stream_limit) sets one of them apart.
    pub fn set_output_limit(&mut self, bytes: usize) {
        self.capture.limits = [Some((bytes, bytes / 2)); 2];
    }

    /// Sets the most bytes kept of one output stream, `bytes`, and how many of them are its head, `head` (the first
    /// bytes the command wrote; the rest of the limit keeps the last ones): see
    /// [which bytes are kept](crate::Captured#which-bytes-are-kept). A `head` larger than `bytes` counts as `bytes`
    /// (the first bytes only); 0 keeps the last bytes only.
    ///
    /// Needs the `capture` feature (on by default).
    ///
    /// As [`set_output_limit`](GroupChild::set_output_limit), for `stream` alone (the last call wins for each stream);
    /// memory stays below about twice the limit (1.5 times with half of it the head), plus the read buffer.
    pub fn set_stream_limit(&mut self, stream: Stream, bytes: usize, head: usize) {
        self.capture.limits[stream as usize] = Some((bytes, head));
    }

    /// Hands each chunk of standard output and standard error, as it is read, to `sink` with the [`Stream`] it came
    /// from (for a live log, a progress line), while the capture keeps its bounded head and tail as ever.
    ///
    /// Needs the `capture` feature (on by default).
    ///
    /// `sink` is called by the step that read the chunk ([`Capture::step`], which the blocking capturing waits,
    /// `grouptimeout-set` and `grouptimeout-tokio` drive), on the thread that steps, before the step returns: so
    /// within a step of the command's write, as a step follows a pipe's readiness. A chunk is what one `read(2)`
    /// returned (at most 64 KiB; a line may be split between chunks, and a chunk hold many lines). The chunks of one
    /// stream come in order, and every byte read is handed over once, those past the output limit included, also
    /// during the drain after the reap. Nothing is buffered for it: while it runs no pipe is read and the deadline is
    /// not checked, so a slow sink slows a command whose pipe is full (64 KiB) and delays its wait's end. It returns
    /// nothing: what to do with a writer's error is its own. A panic in it unwinds out of the step (a capturing wait
    /// then drops its child: the job is killed and the leader reaped). A later call replaces it.
    ///
    /// The end: a stream's end of file (every process that held it closed it) is handed over as an empty chunk, once,
    /// after its last bytes; a stream still held open when the drain's time is up gets none. The sink is dropped when
    /// the capture is done, in the step that returns the [`Captured`] (or with the capture, or the child, dropped
    /// before): a sink that holds back bytes (the start of a line) hands them on in its `Drop`.
    pub fn set_output_sink(&mut self, sink: impl FnMut(Stream, &[u8]) + Send + 'static) {
        self.capture.sink = Some(Mutex::new(Box::new(sink)));
    }

    /// Ends the job when it goes quiet: once no byte was read from its captured standard output or standard error
    /// for `idle` (counted from the start of the capturing wait, then from the last byte read), the job is ended by
    /// the same sequence as at the deadline ([`set_grace`](GroupChild::set_grace)'s signal, the grace period,
    /// `SIGKILL`, the whole job, the reap), and the outcome is [`Outcome::Idle`], not [`Outcome::TimedOut`]. The
    /// deadline still holds: the first of the two ends the job. An `idle` too large to represent as an [`Instant`]
    /// means no idle end.
    ///
    /// Needs the `capture` feature (on by default).
    ///
    /// Only the capturing waits and their steps ([`Capture`], so also `grouptimeout-set`'s `add_captured` and
    /// `grouptimeout-tokio`'s `wait_with_output`) watch it: the pipes are how output is seen. A stream that was not
    /// piped is not seen (with neither piped, the job is ended `idle` after the wait started), and a stream that
    /// reached end of file stays silent. The steps' [`Interest`](crate::Interest) asks to wake at the idle end
    /// (never past the deadline), so a driver sleeps until then; the end comes about `idle` after the read of the
    /// last byte, which follows its write within a step.
    pub fn set_idle_timeout(&mut self, idle: Duration) {
        self.capture.idle = Some(idle);
    }

    /// Whether a stream cut at the [output limit](GroupChild::set_output_limit) gets the line
    /// `"\n[grouptimeout: N bytes omitted]\n"` between its head and its tail (default `false`: the kept bytes are
    /// the command's own, and [`Captured::stdout_omitted`] / [`stderr_omitted`](Captured::stderr_omitted) say how
    /// many were left out).
    ///
    /// Needs the `capture` feature (on by default).
    pub fn set_omission_marker(&mut self, on: bool) {
        self.capture.marker = on;
    }

    /// Bytes that the capturing waits write to the command's standard input while they read its output, as
    /// `communicate` does in Python's `subprocess`; the pipe is closed after the last byte.
    ///
    /// Needs the `capture` feature (on by default).
    ///
    /// The input is written as the command reads it, in the same `poll(2)` as the output pipes (non-blocking), so
    /// neither side waits for the other: a command that fills its output before it reads, or one that never reads
    /// (the input then waits in the pipe until the wait ends), cannot deadlock the wait, which ends at its deadline
    /// as ever. What the command did not read by the end of the wait is dropped: [`Captured::input_written`] says
    /// how much was written. A write to a pipe whose reader is gone raises `SIGPIPE` in this process, which every
    /// Rust program ignores (std sets it so before `main`); a program that restored its default would be killed by
    /// it, so such a program should not use this.
    ///
    /// # Errors
    ///
    /// The command's standard input was not piped ([`Stdio::piped`](std::process::Stdio::piped)) or was taken out of
    /// [`stdin`](GroupChild::stdin): `InvalidInput`, and nothing is set.
    pub fn set_input(&mut self, input: impl Into<Vec<u8>>) -> io::Result<()> {
        if self.stdin.is_none() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the command's standard input is not piped, so no input can be written to it",
            ));
        }
        self.capture.input = Some(input.into());
        Ok(())
    }

    /// Starts a capturing wait in steps, for a loop of the caller's own: the same wait as
    /// [`wait_with_output_deadline`](GroupChild::wait_with_output_deadline) (`None`: no deadline), whose blocking
    /// form is these steps and a sleep in `ppoll` on their [`Interest`](crate::Interest). See [`Capture`].
    ///
    /// Needs the `capture` feature (on by default).
    ///
    /// Standard input is closed now (or, with [`set_input`](GroupChild::set_input), its first bytes written), and
    /// the output pipes set non-blocking.
    ///
    /// # Errors
    ///
    /// A pipe could not be set non-blocking or written; the child is dropped then (its group killed, the leader
    /// reaped), as by a failed [`wait_with_output_deadline`](GroupChild::wait_with_output_deadline).
    pub fn capture_steps(mut self, deadline: Option<Instant>) -> io::Result<Capture> {
        let settings = std::mem::take(&mut self.capture);
        let input = match (self.stdin.take(), settings.input) {
            (Some(stdin), Some(data)) => Some((OwnedFd::from(stdin), data)),
            _ => None,
        };
        let out = [
            self.stdout.take().map(OwnedFd::from),
            self.stderr.take().map(OwnedFd::from),
        ];
        let limits = settings
            .limits
            .map(|l| l.unwrap_or((DEFAULT_OUTPUT_LIMIT, DEFAULT_OUTPUT_LIMIT / 2)));
        let pipes = Pipes::new(out, limits, input, settings.sink)?;
        Ok(Capture {
            child: self,
            deadline,
            idle: settings.idle,
            output_at: Instant::now(),
            idle_end: false,
            pipes,
            marker: settings.marker,
            waiting: None,
            listed: Interest::until_at(None),
            reaped: None,
            done: false,
        })
    }

    fn capture(self, deadline: Option<Instant>) -> io::Result<Captured> {
        let mut capture = self.capture_steps(deadline)?;
        drive(|woke| capture.step_woke(woke))
    }
}

/// A capturing wait in steps, made by [`GroupChild::capture_steps`]: for a loop of the caller's own (`poll(2)`,
/// `epoll`, an async runtime) that waits for many jobs and reads their output in one thread.
///
/// Needs the `capture` feature (on by default).
///
/// Each [`step`](Capture::step) reads what is ready, checks the leader when something tells it may have exited (its
/// pidfd, a pipe at end of file) or the interest's instant came, and moves the wait on as [`GroupChild::step`] does,
/// then writes the input if its pipe is ready (closing it after the last byte: after the child's step, which may
/// open the pidfd, so that the pidfd never takes the input's number in the same step); after the reap it drains the pipes for up to about 100 ms, then returns the
/// [`Captured`]. Its [`Interest`](crate::Interest) lists the leader's pidfd and the open output pipes (readable),
/// and the standard input while input is left (writable); its instant is at the latest the deadline, or the idle end
/// ([`set_idle_timeout`](GroupChild::set_idle_timeout)) if that comes first. Each chunk read is handed to the
/// [sink](GroupChild::set_output_sink), if any, in the step that read it.
///
/// Dropping a `Capture` drops its child: the group is killed and the leader reaped (bounded), unless the wait was
/// over; the output read so far is lost.
pub struct Capture {
    child: GroupChild,
    deadline: Option<Instant>,
    /// The idle timeout, when the last output was read (or the capture started), and whether the instant the child
    /// was last given to start the sequence at was the idle end (the outcome is then `Idle`).
    idle: Option<Duration>,
    output_at: Instant,
    idle_end: bool,
    pipes: Pipes,
    marker: bool,
    /// The child's last `Pending`; `None`: check the child at the next step.
    waiting: Option<Interest>,
    /// What the last step listed, which a step without news from its driver polls (without waiting).
    listed: Interest,
    /// The outcome, once the leader was reaped, and the end of the drain.
    reaped: Option<(Outcome, Option<Instant>)>,
    /// `Done` was returned, with the output.
    done: bool,
}

impl fmt::Debug for Capture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Capture").field(&self.child).finish()
    }
}

impl Capture {
    /// The child, for its [`id`](GroupChild::id) and its [`handle`](GroupChild::handle) (to signal or cancel the job
    /// from elsewhere). Its waits are not to be called through this (it is not lent out mutably).
    pub fn child(&self) -> &GroupChild {
        &self.child
    }

    /// Moves the deadline (`None`: none) for the next steps, as [`GroupChild::step`] allows: it counts until the
    /// sequence started at a deadline (or at the idle end); from then on the grace period's end rules. The next step
    /// checks the leader against it, whatever the last [`Interest`](crate::Interest) said.
    ///
    /// `set_deadline(Some(Instant::now()))` and the steps that follow end the job as at a deadline (the
    /// [grace](GroupChild::set_grace) signal, the grace period while the pipes are read, `SIGKILL`, the reap, the
    /// drain), and the last step still hands over the [`Captured`] output and usage, where a drop loses them.
    pub fn set_deadline(&mut self, deadline: Option<Instant>) {
        self.deadline = deadline;
        self.waiting = None;
    }

    /// One non-blocking step: writes the input and reads the output that are ready, checks the leader, and moves the
    /// wait on by one state (see [`GroupChild::step`] for the sequence and the rules of the [`Interest`]s); `Done`
    /// with what [`wait_with_output_deadline`](GroupChild::wait_with_output_deadline) returns once the leader was
    /// reaped and the pipes drained (every writer closed them, or about 100 ms passed).
    ///
    /// # Errors
    ///
    /// As for [`wait_with_output_deadline`](GroupChild::wait_with_output_deadline), at the step that met them (the
    /// `Capture` stays usable: a step after an error goes on); and [`InvalidInput`](io::ErrorKind::InvalidInput) for
    /// a step after `Done`, whose output was handed over.
    pub fn step(&mut self) -> io::Result<Step<Captured>> {
        self.step_woke(Woke::default())
    }

    fn step_woke(&mut self, woke: Woke<'_>) -> io::Result<Step<Captured>> {
        if self.done {
            let done = "the capture is done: its output was handed over";
            return Err(io::Error::new(io::ErrorKind::InvalidInput, done));
        }
        // A driver of the caller's own does not say what is ready: poll what the last step listed, without waiting.
        let mut own = [pollfd(-1, 0); 4];
        let mut n = 0;
        if woke.0.is_none() {
            n = poll_set(&self.listed, &mut own);
            if n > 0 {
                sys::poll(&mut own[..n], Duration::ZERO)?;
            }
        }
        let woke = Woke(Some(woke.0.unwrap_or(&own[..n])), woke.1);
        let open = self.pipes.open_count();
        let read = self.pipes.read(woke)?;
        let now = Instant::now();
        if read {
            self.output_at = now;
        }
        let idle_at = (self.idle)
            .and_then(|idle| self.output_at.checked_add(idle))
            .filter(|&at| self.deadline.is_none_or(|deadline| at < deadline));
        // Fixed once the sequence started: by the idle end if that was the instant the child was given.
        if self.child.running() {
            self.idle_end = idle_at.is_some();
        }
        let waiting = match self.waiting {
            _ if self.reaped.is_some() => None,
            // The child is stepped again when its pidfd turned readable, a pipe closed, or the instant asked for
            // came (the child's, or the schedule's after the pipes closed).
            Some(i)
                if self.listed.until().is_none_or(|until| until > now)
                    && self.pipes.open_count() == open
                    && !i.readable().any(|fd| woke.ready(fd)) =>
            {
                Some(i)
            }
            _ => match self.child.step_in(idle_at.or(self.deadline), woke)? {
                Step::Done(outcome) => {
                    self.reaped = Some((outcome, Instant::now().checked_add(DRAIN_LIMIT)));
                    None
                }
                Step::Pending(i) => Some(i),
            },
        };
        self.waiting = waiting;
        // Written after the child's step, which may open the pidfd: the input closed after its last byte never
        // gives its number to a descriptor opened in the same step (see `Interest::readable`).
        self.pipes.write(woke)?;
        let interest = match (waiting, self.reaped) {
            (Some(child), _) => self.pipes.interest(child, now),
            // Drained until every pipe is closed, or the drain's time is up.
            (None, Some((_, end)))
                if self.pipes.open_count() > 0 && end.is_none_or(|end| end > Instant::now()) =>
            {
                self.pipes.interest(Interest::until_at(end), now)
            }
            (None, reaped) => {
                let (outcome, _) = reaped.expect("a capture without a child's step is reaped");
                self.done = true;
                return Ok(Step::Done(self.finish(outcome)));
            }
        };
        self.listed = interest;
        Ok(Step::Pending(interest))
    }

    fn finish(&mut self, outcome: Outcome) -> Captured {
        self.pipes.sink = None;
        let outcome = match outcome {
            Outcome::TimedOut(status) if self.idle_end => Outcome::Idle(status),
            outcome => outcome,
        };
        let pipes_closed = self.pipes.open_count() == 0;
        let input_written = self.pipes.input.as_ref().map_or(0, |input| input.written);
        let [(stdout, stdout_omitted), (stderr, stderr_omitted)] =
            std::mem::take(&mut self.pipes.streams)
                .map(|s| s.map_or((Vec::new(), 0), |s| s.kept.finish(self.marker)));
        Captured {
            outcome,
            stdout,
            stderr,
            stdout_omitted,
            stderr_omitted,
            input_written,
            pipes_closed,
            usage: self
                .child
                .usage()
                .expect("a capture is finished once its leader was reaped"),
            job: self.child.job.record(),
        }
    }
}

/// [`GroupCommandExt::output_timeout`](crate::GroupCommandExt::output_timeout): both output streams piped, a plain
/// group's spawn, then the capturing wait.
pub(crate) fn output(command: &mut Command, timeout: Duration) -> io::Result<Captured> {
    command.stdout(Stdio::piped()).stderr(Stdio::piped());
    GroupChild::spawn(command, Job::default())?.wait_with_output_timeout(timeout)
}

/// The input being written to the command's standard input.
struct Input {
    /// `None` once every byte was written, or the command's end of the pipe was closed: the pipe is closed then.
    pipe: Option<File>,
    data: Vec<u8>,
    written: usize,
}

impl Input {
    /// Writes what the pipe takes now (non-blocking); closes it after the last byte, or when the reader is gone.
    fn write_ready(&mut self) -> io::Result<()> {
        while let Some(pipe) = self.pipe.as_mut() {
            if self.written == self.data.len() {
                self.pipe = None;
                break;
            }
            match pipe.write(&self.data[self.written..]) {
                Ok(n) => self.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => self.pipe = None,
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// The output pipes being read, and the bytes kept from each; and the input being written.
struct Pipes {
    streams: [Option<Piped>; 2],
    input: Option<Input>,
    /// The read buffer for streams past their limit, reused for every read.
    scratch: Vec<u8>,
    sink: Option<Sink>,
    /// When a step first found every pipe at end of file.
    closed: Option<Instant>,
}

struct Piped {
    which: Stream,
    pipe: File,
    kept: Kept,
    eof: bool,
}

impl Pipes {
    fn new(
        fds: [Option<OwnedFd>; 2],
        limits: [(usize, usize); 2],
        input: Option<(OwnedFd, Vec<u8>)>,
        sink: Option<Sink>,
    ) -> io::Result<Pipes> {
        let mut streams = [None, None];
        for ((slot, fd), (which, (limit, head))) in streams
            .iter_mut()
            .zip(fds)
            .zip([Stream::Stdout, Stream::Stderr].into_iter().zip(limits))
        {
            if let Some(fd) = fd {
                sys::set_nonblocking(fd.as_fd())?;
                *slot = Some(Piped {
                    which,
                    pipe: File::from(fd),
                    kept: Kept::new(limit, head),
                    eof: false,
                });
            }
        }
        let input = match input {
            Some((fd, data)) => {
                sys::set_nonblocking(fd.as_fd())?;
                let mut input = Input {
                    pipe: Some(File::from(fd)),
                    data,
                    written: 0,
                };
                // Empty input closes the pipe at once; a small one usually fits the pipe now.
                input.write_ready()?;
                Some(input)
            }
            None => None,
        };
        Ok(Pipes {
            streams,
            input,
            scratch: Vec::new(),
            sink,
            closed: None,
        })
    }

    fn open(&self) -> impl Iterator<Item = &Piped> {
        self.streams.iter().flatten().filter(|s| !s.eof)
    }

    fn open_count(&self) -> usize {
        self.open().count()
    }

    /// Writes the input if `woke` saw its pipe ready (closing it after the last byte).
    fn write(&mut self, woke: Woke<'_>) -> io::Result<()> {
        let input = self
            .input
            .as_mut()
            .filter(|i| i.pipe.as_ref().is_some_and(|p| woke.ready(p.as_raw_fd())));
        input.map_or(Ok(()), Input::write_ready)
    }

    /// Reads each pipe that `woke` saw ready (a pipe at end of file stays open, unlisted, until the capture ends);
    /// whether any byte was read.
    fn read(&mut self, woke: Woke<'_>) -> io::Result<bool> {
        let mut read = false;
        for stream in self.streams.iter_mut().flatten() {
            if !stream.eof && woke.ready(stream.pipe.as_raw_fd()) {
                read |= stream.read_ready(&mut self.scratch, &mut self.sink)? > 0;
            }
        }
        Ok(read)
    }

    /// The child's `interest` with the open pipes and the input added. Without a pidfd, once every pipe reached end
    /// of file (usually because the leader is exiting: `exit` closes its files a moment before the leader can be
    /// waited for), the leader is checked as if it had started when the pipes closed, so that its exit is seen at
    /// once instead of after a whole step of the schedule (up to 10 ms).
    fn interest(&mut self, child: Interest, now: Instant) -> Interest {
        let mut interest = child;
        for stream in self.open() {
            interest = interest.and_read(stream.pipe.as_raw_fd());
        }
        let input = self.input.as_ref().and_then(|i| i.pipe.as_ref());
        interest = interest.and_write(input.map(AsRawFd::as_raw_fd));
        let closed =
            self.open_count() == 0 && input.is_none() && self.streams.iter().any(Option::is_some);
        if closed && child.readable().next().is_none() {
            let since = *self.closed.get_or_insert(now);
            interest = interest
                .no_later_than(now.checked_add(poll_step(now.saturating_duration_since(since))));
        }
        interest
    }
}

impl Piped {
    /// Reads a ready pipe until it is empty (`EAGAIN`), at end of file, or [`BYTES_PER_ROUND`] bytes or
    /// [`READS_PER_ROUND`] reads were taken, handing each chunk to the sink; how many bytes were read.
    fn read_ready(&mut self, scratch: &mut Vec<u8>, sink: &mut Option<Sink>) -> io::Result<usize> {
        // The read of 0 bytes at end of file hands over the empty chunk that marks it.
        let mut hand = |bytes: &[u8]| {
            if let Some(Ok(sink)) = sink.as_mut().map(Mutex::get_mut) {
                sink(self.which, bytes);
            }
        };
        let mut bytes = 0;
        for _ in 0..READS_PER_ROUND {
            let read = if self.kept.is_cut() {
                // Past the limit: read into the shared buffer, keep only the tail.
                scratch.resize(READ_SIZE, 0);
                let read = self.pipe.read(scratch);
                if let Ok(n) = read {
                    hand(&scratch[..n]);
                    self.kept.push_tail(&scratch[..n]);
                }
                read
            } else {
                // Below the limit: read straight into the kept bytes.
                let (asked, start) = (self.kept.reserve(), self.kept.data.len());
                let read = sys::read_append(self.pipe.as_fd(), &mut self.kept.data, asked);
                if let Ok(n) = read {
                    hand(&self.kept.data[start..]);
                    self.kept.appended(n);
                }
                read
            };
            match read {
                Ok(0) => {
                    self.eof = true;
                    return Ok(bytes);
                }
                // Read again even after a short read: the writer may have refilled the pipe meanwhile, and going
                // back to `poll` on an empty pipe puts this thread to sleep and costs a wake-up per write.
                Ok(n) => {
                    bytes += n;
                    if bytes >= BYTES_PER_ROUND {
                        return Ok(bytes);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(bytes),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(bytes)
    }
}
