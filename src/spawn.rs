//! The implementation of [`GroupCommandExt`] for [`std::process::Command`] (the trait is defined at the crate root), and
//! the supertrait that seals it.

use std::io;
use std::process::Command;

use crate::boundary::Job;
use crate::child::GroupChild;
use crate::GroupCommandExt;

/// The supertrait that seals [`GroupCommandExt`]: public in a private module, so no other crate can name it.
pub trait Sealed {}

impl Sealed for Command {}

impl GroupCommandExt for Command {
    fn spawn_group(&mut self) -> io::Result<GroupChild> {
        GroupChild::spawn(self, Job::default())
    }

    #[cfg(feature = "capture")]
    fn output_timeout(&mut self, timeout: std::time::Duration) -> io::Result<crate::Captured> {
        crate::capture::output(self, timeout)
    }
}
