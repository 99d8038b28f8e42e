//! What the capturing waits (`capture/`) are told before they run, kept with the [`GroupChild`](crate::GroupChild)
//! whose setters fill it in (`set_output_limit`, `set_omission_marker`, `set_input`).
//!
//! Needs the `capture` feature (on by default).

/// The settings of the capturing waits.
#[derive(Debug, Default)]
pub(crate) struct Settings {
    /// The most bytes kept of each output stream; `None`: the default.
    pub(crate) limit: Option<usize>,
    /// Whether a cut stream's kept bytes have the marker line between head and tail.
    pub(crate) marker: bool,
    /// Bytes written to the command's standard input while capturing.
    pub(crate) input: Option<Vec<u8>>,
}
