//! What the capturing waits (`capture/`) are told before they run, kept with the [`GroupChild`](crate::GroupChild)
//! whose setters fill it in (`set_output_limit`, `set_stream_limit`, `set_omission_marker`, `set_input`,
//! `set_output_sink`, `set_idle_timeout`).
//!
//! Needs the `capture` feature (on by default).

use std::sync::Mutex;
use std::time::Duration;

/// One of the two output streams a capture reads: for
/// [`GroupChild::set_stream_limit`](crate::GroupChild::set_stream_limit) and the chunks handed to
/// [`GroupChild::set_output_sink`](crate::GroupChild::set_output_sink).
///
/// Needs the `capture` feature (on by default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stream {
    /// The command's standard output.
    Stdout,
    /// The command's standard error.
    Stderr,
}

/// What is handed each chunk of output as it is read (`GroupChild::set_output_sink`). In a `Mutex` only so that it
/// is `Sync` without asking the caller's closure to be: it is reached through `get_mut`, which takes no lock.
pub(crate) type Sink = Mutex<Box<dyn FnMut(Stream, &[u8]) + Send>>;

/// The settings of the capturing waits.
#[derive(Default)]
pub(crate) struct Settings {
    /// The most bytes kept of stdout and of stderr, and how many of them are the head; `None`: the default.
    pub(crate) limits: [Option<(usize, usize)>; 2],
    /// Whether a cut stream's kept bytes have the marker line between head and tail.
    pub(crate) marker: bool,
    /// Bytes written to the command's standard input while capturing.
    pub(crate) input: Option<Vec<u8>>,
    /// Handed each chunk of output as it is read.
    pub(crate) sink: Option<Sink>,
    /// The job is ended when no output came for this long.
    pub(crate) idle: Option<Duration>,
}
