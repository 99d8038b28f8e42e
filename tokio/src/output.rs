//! [`OutputLines`]: a capture's output, line by line, to async code as it is read.

use std::task::{Context, Poll};

use grouptimeout::{GroupChild, Stream};
use tokio::sync::mpsc;

/// The longest line handed over whole; a longer one comes in pieces of this many bytes.
const LONGEST_LINE: usize = 64 << 10;

/// What [`OutputLines`] hands over: a line of one of the command's streams, or that stream's end.
///
/// Needs the `capture` feature (on by default).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Output {
    /// A line the command wrote to the stream, its newline included: the bytes as they were written, cut after each
    /// newline, so that the lines of a stream put together are the stream. The last line before the stream's end
    /// has no newline if the command wrote none. A line longer than 64 KiB comes in pieces of 64 KiB (each without a
    /// newline), then its rest.
    Line(Stream, Vec<u8>),
    /// The stream ended, after its last line. `closed`: every process that held it closed it, so nothing of it is
    /// missing. Not `closed`: the capture ended while a process still held it (one that left the group and the job's
    /// boundary, or a leftover that was kept; the capture drains for about 100 ms after the reap, then stops
    /// reading), or the capture was dropped before its end; what that process writes later is not read.
    End {
        /// Which stream ended.
        stream: Stream,
        /// Whether every writer closed it.
        closed: bool,
    },
}

/// The command's output as it is read, line by line, for async code: the receiver that [`output_lines`] returns.
///
/// Needs the `capture` feature (on by default).
///
/// Each stream's lines come in order, and [`Output::End`] after the last line of each stream piped at the time of
/// [`output_lines`]; [`recv`](OutputLines::recv) returns `None` once both ended (when the capture is done, or
/// dropped), and the receiver has handed over everything.
///
/// The lines wait here until received, without bound: a receiver that falls behind holds what it has not taken in
/// memory (the capture's own result stays bounded by the output limit). Dropping it stops the lines: the capture goes
/// on, and discards them.
#[derive(Debug)]
pub struct OutputLines {
    rx: mpsc::UnboundedReceiver<Output>,
}

impl OutputLines {
    /// The next line or end of a stream, once there is one; `None` once the capture is done (or was dropped) and
    /// everything was received.
    ///
    /// Cancel safe: dropping the future (in `tokio::select!`) loses nothing.
    pub async fn recv(&mut self) -> Option<Output> {
        self.rx.recv().await
    }

    /// [`recv`](OutputLines::recv) as a poll, for a `Stream` implementation or a future of the caller's own.
    pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<Output>> {
        self.rx.poll_recv(cx)
    }
}

/// Streams `child`'s piped standard output and standard error, as a capture reads them, to async code: line by line,
/// with the end of each stream marked ([`Output`]). Call it before [`wait_with_output`](crate::wait_with_output),
/// after the child's pipes were set (a stream that is not piped when this is called gets no end).
///
/// Needs the `capture` feature (on by default).
///
/// It is the child's [output sink](GroupChild::set_output_sink) (it replaces any set before, and a later one replaces
/// it): the capture hands it each chunk in the step that read it, here in the poll of the
/// [`Capturing`](crate::Capturing) future; it cuts lines, holds back the start of a line until its newline (or until
/// the stream's end, which the core marks as it reads the end of file), and sends them to the [`OutputLines`]. When
/// the capture is done (or dropped) it sends what it held back and the end of each stream not ended yet. The
/// capture's own result ([`Captured`](grouptimeout::Captured)) still holds each stream's head and tail, as ever.
///
/// # Examples
///
/// ```
/// use std::process::{Command, Stdio};
/// use grouptimeout_tokio::{GroupCommandExt, Output, Stream};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> std::io::Result<()> {
/// let mut child = Command::new("sh")
///     .args(["-c", "echo one; sleep 0.1; printf last"])
///     .stdout(Stdio::piped())
///     .spawn_group()?;
/// let mut lines = grouptimeout_tokio::output_lines(&mut child);
/// let capturing = tokio::spawn(grouptimeout_tokio::wait_with_output(child, None));
/// assert_eq!(lines.recv().await, Some(Output::Line(Stream::Stdout, b"one\n".to_vec())));
/// assert_eq!(lines.recv().await, Some(Output::Line(Stream::Stdout, b"last".to_vec())));
/// assert_eq!(lines.recv().await, Some(Output::End { stream: Stream::Stdout, closed: true }));
/// assert_eq!(lines.recv().await, None);
/// assert!(capturing.await??.outcome.status().success());
/// # Ok(())
/// # }
/// ```
pub fn output_lines(child: &mut GroupChild) -> OutputLines {
    let (tx, rx) = mpsc::unbounded_channel();
    let mut lines = Lines {
        tx,
        held: [Vec::new(), Vec::new()],
        ended: [child.stdout.is_none(), child.stderr.is_none()],
    };
    child.set_output_sink(move |stream, bytes| lines.push(stream, bytes));
    OutputLines { rx }
}

/// The sink: cuts each stream into lines, holding back the start of the next one.
struct Lines {
    tx: mpsc::UnboundedSender<Output>,
    /// Per stream (`Stream as usize`): the start of a line, read without its newline yet.
    held: [Vec<u8>; 2],
    /// Per stream: its end was sent (or it was not piped).
    ended: [bool; 2],
}

impl Lines {
    /// A chunk read from `stream`; an empty one is its end of file.
    fn push(&mut self, stream: Stream, mut bytes: &[u8]) {
        if bytes.is_empty() {
            return self.end(stream, true);
        }
        let held = &mut self.held[stream as usize];
        while !bytes.is_empty() {
            let room = &bytes[..bytes.len().min(LONGEST_LINE - held.len())];
            let line = room
                .iter()
                .position(|&byte| byte == b'\n')
                .map_or(room, |at| &room[..=at]);
            held.extend_from_slice(line);
            bytes = &bytes[line.len()..];
            if held.ends_with(b"\n") || held.len() == LONGEST_LINE {
                // A receiver that is gone takes nothing: the line is dropped.
                let _ = self.tx.send(Output::Line(stream, std::mem::take(held)));
            }
        }
    }

    /// Sends what was held back of `stream`, then its end (once).
    fn end(&mut self, stream: Stream, closed: bool) {
        let held = std::mem::take(&mut self.held[stream as usize]);
        if !held.is_empty() {
            let _ = self.tx.send(Output::Line(stream, held));
        }
        if !std::mem::replace(&mut self.ended[stream as usize], true) {
            let _ = self.tx.send(Output::End { stream, closed });
        }
    }
}

impl Drop for Lines {
    /// The capture is done (the core drops its sink then), or it was dropped: every stream not at its end yet ends
    /// here, unclosed; then the sender goes, and the receiver's `recv` returns `None` after the last of it.
    fn drop(&mut self) {
        for stream in [Stream::Stdout, Stream::Stderr] {
            self.end(stream, false);
        }
    }
}
