//! The stepped waits driven by hand, as a caller's own event loop would: `step`, then `poll(2)` on the
//! `Interest`'s descriptors until its instant, then `step` again.

mod common;

use std::io;
use std::os::unix::process::ExitStatusExt as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{is_dead, read_pid, survivors_after};
use grouptimeout::{GroupChild, GroupCommandExt, Interest, Outcome, Step};

/// Sleeps as a driver does: `poll(2)` on the interest's descriptors until its instant (rounded up to whole
/// milliseconds, as `poll` counts them); returns whether a descriptor was ready.
fn sleep_on(interest: &Interest) -> bool {
    let mut fds: Vec<libc::pollfd> = interest
        .readable()
        .map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    if let Some(fd) = interest.writable() {
        fds.push(libc::pollfd {
            fd,
            events: libc::POLLOUT,
            revents: 0,
        });
    }
    assert!(fds.len() <= 4, "at most 3 readable and 1 writable");
    let ms = interest.until().map_or(-1, |until| {
        let left = until.saturating_duration_since(Instant::now());
        i32::try_from(left.as_micros().div_ceil(1000)).unwrap_or(i32::MAX)
    });
    assert!(ms >= 0 || !fds.is_empty(), "an interest in nothing at all");
    let nfds = libc::nfds_t::try_from(fds.len()).unwrap();
    // SAFETY: `fds` holds `nfds` initialised entries and lives across the call.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), nfds, ms) };
    n > 0
}

/// Steps `step` to its end, sleeping on each `Pending` as [`sleep_on`] does; returns the result and how many
/// steps it took. Panics if it takes more than `limit` (the test would hang otherwise).
fn drive<T>(
    limit: Duration,
    mut step: impl FnMut() -> io::Result<Step<T>>,
) -> (io::Result<T>, usize) {
    let end = Instant::now() + limit;
    let mut steps = 0;
    loop {
        steps += 1;
        match step() {
            Ok(Step::Done(done)) => return (Ok(done), steps),
            Err(e) => return (Err(e), steps),
            Ok(Step::Pending(interest)) => {
                assert!(
                    Instant::now() < end,
                    "the stepped wait did not end within {limit:?}"
                );
                sleep_on(&interest);
            }
        }
    }
}

fn spawn_sh(script: &str) -> GroupChild {
    Command::new("sh")
        .args(["-c", script])
        .stdout(Stdio::piped())
        .spawn_group()
        .unwrap()
}

#[test]
fn a_job_that_exits_in_time_has_its_leftovers_killed() {
    let mut child = spawn_sh("sleep 30 & echo $!; sleep 0.2; exit 3");
    let background = read_pid(child.stdout.take().unwrap());
    let deadline = Instant::now() + Duration::from_secs(30);
    let started = Instant::now();
    let (outcome, steps) = drive(Duration::from_secs(20), || child.step(Some(deadline)));
    let outcome = outcome.unwrap();
    assert_eq!(
        outcome,
        Outcome::Exited(std::process::ExitStatus::from_raw(3 << 8))
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    // The sleep left in the group was killed before the last step returned.
    assert!(survivors_after(Duration::from_secs(2), &[background]).is_empty());
    assert!(is_dead(background));
    // On Linux with a pidfd, the wait slept on it: a handful of steps, not one per millisecond.
    if cfg!(all(target_os = "linux", not(grouptimeout_no_pidfd))) {
        assert!(steps <= 5, "{steps} steps for one exit");
    }
}
