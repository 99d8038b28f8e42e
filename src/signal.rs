//! Signal numbers for [`GroupChild::signal`](crate::GroupChild::signal),
//! [`GroupChild::set_grace`](crate::GroupChild::set_grace) and [`GroupHandle::signal`](crate::GroupHandle::signal),
//! so that a caller needs no `libc` dependency of its own.
//!
//! They are the platform's numbers (`libc`'s constants), plain `i32`s: any other number the platform knows (a
//! real-time signal, say) can be passed as well.
//!
//! ```
//! use std::process::Command;
//! use std::time::Duration;
//! use grouptimeout::{signal, GroupCommandExt};
//!
//! # fn main() -> std::io::Result<()> {
//! let mut child = Command::new("sleep").arg("30").spawn_group()?;
//! child.signal(signal::SIGTERM)?;
//! let outcome = child.wait_timeout(Duration::from_secs(10))?;
//! assert_eq!(
//!     std::os::unix::process::ExitStatusExt::signal(&outcome.status()),
//!     Some(signal::SIGTERM)
//! );
//! # Ok(())
//! # }
//! ```

/// Hangup: the terminal or the supervising process went away.
pub const SIGHUP: i32 = libc::SIGHUP;
/// Interrupt, as Ctrl-C sends it.
pub const SIGINT: i32 = libc::SIGINT;
/// Quit, as Ctrl-\ sends it; ends the process with a core dump by default.
pub const SIGQUIT: i32 = libc::SIGQUIT;
/// Kill: cannot be caught, blocked or ignored.
pub const SIGKILL: i32 = libc::SIGKILL;
/// User-defined signal 1.
pub const SIGUSR1: i32 = libc::SIGUSR1;
/// User-defined signal 2.
pub const SIGUSR2: i32 = libc::SIGUSR2;
/// Alarm clock.
pub const SIGALRM: i32 = libc::SIGALRM;
/// Terminate: the polite request to exit, and the usual grace signal.
pub const SIGTERM: i32 = libc::SIGTERM;
/// Continue a stopped process (the crate sends it after a grace signal, so that stopped members act on it).
pub const SIGCONT: i32 = libc::SIGCONT;
/// Stop: cannot be caught, blocked or ignored.
pub const SIGSTOP: i32 = libc::SIGSTOP;
/// Terminal stop, as Ctrl-Z sends it.
pub const SIGTSTP: i32 = libc::SIGTSTP;
