//! A [`GroupChild`]'s start and end outside the waits: the spawn into a new process group (refused where the kernel
//! would reap the leader at once), its `Debug` view, and the drop that kills and reaps a group nobody waited for. The
//! waits themselves, from the first check of the leader to its reap, are in `child.rs`.

use std::fmt;
use std::io;
use std::os::unix::process::CommandExt as _;
use std::process::{ChildStderr, ChildStdin, ChildStdout, Command};
use std::sync::OnceLock;
use std::time::Instant;

use crate::boundary::Job;
use crate::sys;
use crate::wait::{ExitWatch, DROP_REAP_LIMIT};
use crate::GroupChild;

impl fmt::Debug for GroupChild {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GroupChild")
            .field("id", &self.id())
            .field("stdin", &self.stdin)
            .field("stdout", &self.stdout)
            .field("stderr", &self.stderr)
            .field("outcome", &self.outcome)
            .field("job", &self.job)
            .finish_non_exhaustive()
    }
}

impl GroupChild {
    /// [`GroupCommandExt::spawn_group`](crate::GroupCommandExt::spawn_group), for a job with the boundary `job`.
    pub(crate) fn spawn(command: &mut Command, job: Job) -> io::Result<GroupChild> {
        if sys::children_are_auto_reaped()? {
            return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!(
                "not spawning {:?}: this process ignores SIGCHLD (SIG_IGN or SA_NOCLDWAIT), so the kernel \
                 reaps children at once and a process group id could be reused before it is signalled; \
                 restore SIGCHLD's default disposition first",
                command.get_program()
            ),
        ));
        }
        // std's error as it is: `raw_os_error()` is the errno (see "Errors" in the crate docs).
        let mut child = command.process_group(0).spawn()?;
        let stdio = (child.stdin.take(), child.stdout.take(), child.stderr.take());
        let watch = ExitWatch::new(Some(child.id()), None);
        Ok(GroupChild::new(child.id(), stdio, watch, job))
    }

    /// A child of leader `pid` (our unreaped child), its standard streams, the watch of its waits, its job.
    pub(crate) fn new(
        pid: u32,
        (stdin, stdout, stderr): (Option<ChildStdin>, Option<ChildStdout>, Option<ChildStderr>),
        watch: ExitWatch,
        job: Job,
    ) -> GroupChild {
        GroupChild {
            stdin,
            stdout,
            stderr,
            pid,
            watch,
            phase: super::Phase::Running,
            grace: None,
            kill_leftovers: true,
            wait_for_job: None,
            draining: None,
            #[cfg(feature = "capture")]
            capture: super::output::Settings::default(),
            outcome: None,
            usage: None,
            reaped: OnceLock::new(),
            job,
        }
    }
}

/// Kills the group and reaps the leader, unless a wait already did.
///
/// Waits at most about a second for the killed leader to become reapable. A leader stuck in uninterruptible sleep
/// (a hung NFS read, say), or traced by a stopped tracer, may take longer: it then stays a zombie of this process after it dies, as with a
/// dropped [`std::process::Child`]. Nothing is signalled if the leader was reaped by someone else.
impl Drop for GroupChild {
    fn drop(&mut self) {
        // Our own check, not the boundary's: nothing is signalled after someone else reaped the leader.
        if self.outcome.is_some() || crate::group::leader_exited(self.id()).is_err() {
            self.mark_reaped();
            let _ = self.job.end(false);
            return;
        }
        let _ = self.signal_group(crate::signal::SIGKILL);
        let pid = self.id();
        // A keeper ends its job after the kill: the reap waits for its exit.
        self.watch.watch_leader(pid, self.job.watched(pid));
        let limit = Instant::now().checked_add(DROP_REAP_LIMIT);
        let reapable = self
            .watch
            .wait_exit(limit, || crate::group::leader_exited(pid));
        if matches!(reapable, Ok(true)) {
            let _ = self.reap(true);
        } else {
            self.mark_reaped();
        }
        // A guard's end last, as in a wait's end (the boundary's `end`).
        let _ = self.job.end(false);
    }
}
