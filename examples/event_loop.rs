//! Four jobs waited for in one thread, without a thread per job: an event loop of its own drives the crate's stepped
//! waits ([`GroupChild::step`], and [`Capture::step`] for a job whose output it captures). Each step says what to
//! wait on (an [`Interest`]: descriptors, and an instant); the loop `poll(2)`s all of them at once, and steps the
//! jobs whose descriptors turned ready or whose instant came. The end-of-job sequence (the deadline's kill, the
//! leftovers' kill, the reap) is the crate's, not the loop's.
//!
//! - `quick` exits with status 3 after 0.2 s;
//! - `leaves a child` starts `sleep 60` in the background and exits after 0.5 s: its step kills the `sleep`;
//! - `too slow` runs past its deadline of 1 s and is killed;
//! - `talks` writes a line, which the loop captures (with the `capture` feature, on by default), and exits.
//!
//! At the end the example checks the outcomes and that no process of the four groups is left running (in `/proc`),
//! and exits non-zero if something is wrong. The same loop works where no exit descriptor exists (other systems, a
//! build with `--cfg grouptimeout_no_pidfd`): the interests then hold instants of the poll schedule instead.
//!
//! ```sh
//! cargo run --example event_loop
//! ```

use std::io::{self, BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitCode, Stdio};
use std::thread;
use std::time::{Duration, Instant};

#[cfg(feature = "capture")]
use grouptimeout::Capture;
use grouptimeout::{signal, GroupChild, GroupCommandExt, Interest, Outcome, Step};

/// A job's stepped wait: a plain one, or one that captures its output.
#[allow(clippy::large_enum_variant, reason = "four of them, never moved")]
enum Wait {
    Plain(GroupChild, Instant),
    #[cfg(feature = "capture")]
    Captured(Capture),
}

struct Job {
    name: &'static str,
    wait: Wait,
    /// What its last step asked to wait on, until it is done.
    interest: Option<Interest>,
    /// The outcome, the captured standard output, and when the loop learnt it.
    end: Option<(Outcome, Vec<u8>, Duration)>,
}

impl Job {
    /// One step of the job's wait: it never blocks.
    fn step(&mut self, start: Instant) -> io::Result<()> {
        let step = match &mut self.wait {
            Wait::Plain(child, deadline) => match child.step(Some(*deadline))? {
                Step::Done(outcome) => Step::Done((outcome, Vec::new())),
                Step::Pending(interest) => Step::Pending(interest),
            },
            #[cfg(feature = "capture")]
            Wait::Captured(capture) => match capture.step()? {
                Step::Done(captured) => Step::Done((captured.outcome, captured.stdout)),
                Step::Pending(interest) => Step::Pending(interest),
            },
        };
        // Done: its descriptors are closed, or about to be; the loop must not poll them any more.
        self.interest = None;
        match step {
            Step::Done((outcome, stdout)) => self.end = Some((outcome, stdout, start.elapsed())),
            Step::Pending(interest) => self.interest = Some(interest),
        }
        Ok(())
    }
}

#[allow(clippy::too_many_lines, reason = "an example, read top to bottom")]
fn main() -> io::Result<ExitCode> {
    let start = Instant::now();
    let spawn = |script: &str| {
        Command::new("sh")
            .args(["-c", script])
            .stdout(Stdio::piped())
            .spawn_group()
    };
    let plain = |name, child, deadline_ms| Job {
        name,
        wait: Wait::Plain(child, start + Duration::from_millis(deadline_ms)),
        interest: None,
        end: None,
    };
    let mut leaves = spawn("sleep 60 & echo $!; sleep 0.5")?;
    let mut line = String::new();
    BufReader::new(leaves.stdout.take().expect("piped")).read_line(&mut line)?;
    let background: u32 = line
        .trim()
        .parse()
        .expect("the shell printed the pid of its sleep");
    let talks = spawn("echo hello; sleep 0.3")?;
    #[cfg(feature = "capture")]
    let talks = Wait::Captured(talks.capture_steps(Some(start + Duration::from_secs(10)))?);
    #[cfg(not(feature = "capture"))]
    let talks = Wait::Plain(talks, start + Duration::from_secs(10));
    let mut jobs = [
        plain("quick", spawn("sleep 0.2; exit 3")?, 10_000),
        plain("leaves a child", leaves, 10_000),
        plain("too slow", spawn("sleep 60")?, 1_000),
        Job {
            name: "talks",
            wait: talks,
            interest: None,
            end: None,
        },
    ];
    let groups: Vec<u32> = jobs
        .iter()
        .map(|j| match &j.wait {
            Wait::Plain(child, _) => child.id(),
            #[cfg(feature = "capture")]
            Wait::Captured(capture) => capture.child().id(),
        })
        .collect();
    println!("process groups {groups:?}; `leaves a child` started sleep 60 as pid {background}");

    // Every job is due for its first step.
    let mut due = [true; 4];
    loop {
        for (job, _) in jobs
            .iter_mut()
            .zip(due)
            .filter(|(j, due)| *due && j.end.is_none())
        {
            job.step(start)?;
        }
        // One `poll` over every descriptor of every waiting job, until the earliest instant any of them asked for.
        let mut fds = Vec::new();
        let mut owner = Vec::new();
        let mut until: Option<Instant> = None;
        for (i, interest) in jobs
            .iter()
            .enumerate()
            .filter_map(|(i, j)| Some((i, j.interest?)))
        {
            let read = interest.readable().map(|fd| (fd, libc::POLLIN));
            for (fd, events) in read.chain(interest.writable().map(|fd| (fd, libc::POLLOUT))) {
                fds.push(libc::pollfd {
                    fd,
                    events,
                    revents: 0,
                });
                owner.push(i);
            }
            until = match (until, interest.until()) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
        }
        if jobs.iter().all(|j| j.end.is_some()) {
            break;
        }
        // Rounded up, so that the loop does not wake just before an instant and spin until it; -1: no limit.
        let ms = until.map_or(-1, |until| {
            let left = until.saturating_duration_since(Instant::now());
            libc::c_int::try_from(left.as_micros().div_ceil(1000)).unwrap_or(libc::c_int::MAX)
        });
        let nfds = libc::nfds_t::try_from(fds.len()).expect("a few descriptors");
        // SAFETY: `fds` holds `nfds` initialised pollfd entries and lives across the call; the descriptors are the
        // jobs' own, open until a later step of their job no longer lists them (none ran since they were listed).
        if unsafe { libc::poll(fds.as_mut_ptr(), nfds, ms) } < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
        // Due: a job whose descriptor is ready, or whose instant came (stepping a job early is harmless).
        let now = Instant::now();
        for (i, job) in jobs.iter().enumerate() {
            due[i] = job
                .interest
                .is_some_and(|j| j.until().is_some_and(|until| until <= now))
                || fds
                    .iter()
                    .zip(&owner)
                    .any(|(fd, &o)| o == i && fd.revents != 0);
        }
    }

    let mut ok = true;
    for job in &jobs {
        let (outcome, stdout, at) = job.end.as_ref().expect("every job ended");
        let status = outcome.status();
        let expected = match job.name {
            "quick" => !outcome.timed_out() && status.code() == Some(3),
            "leaves a child" => !outcome.timed_out() && status.code() == Some(0),
            // Without the `capture` feature its output is not read.
            "talks" => {
                !outcome.timed_out()
                    && status.code() == Some(0)
                    && (stdout == b"hello\n" || cfg!(not(feature = "capture")))
            }
            _ => outcome.timed_out() && status.signal() == Some(signal::SIGKILL),
        };
        ok &= expected;
        let verdict = if expected { "as expected" } else { "WRONG" };
        let said = String::from_utf8_lossy(stdout);
        println!(
            "{:>15}: {outcome}, after {at:.2?}, wrote {said:?}: {verdict}",
            job.name
        );
    }
    match running_in(&groups) {
        Ok(running) if running.is_empty() => {
            println!("no process of the four groups is left running (pid {background} included)");
        }
        Ok(running) => {
            println!("STILL RUNNING in the groups: {running:?}");
            ok = false;
        }
        Err(e) => println!("cannot check what is left running: {e}"),
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The processes still running (not zombies) whose process group is one of `groups`, after giving killed ones up
/// to two seconds to be torn down. Reads `/proc` (Linux).
fn running_in(groups: &[u32]) -> io::Result<Vec<u32>> {
    let settle = Instant::now() + Duration::from_secs(2);
    loop {
        let mut running = Vec::new();
        for entry in std::fs::read_dir("/proc")?.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<u32>().ok())
            else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses, so split after the last ')'.
            let mut fields = stat
                .rsplit_once(')')
                .map_or("", |(_, rest)| rest)
                .split_whitespace();
            let state = fields.next().unwrap_or("X");
            let pgrp = fields.nth(1).and_then(|g| g.parse::<u32>().ok());
            if !matches!(state, "Z" | "X") && pgrp.is_some_and(|g| groups.contains(&g)) {
                running.push(pid);
            }
        }
        if running.is_empty() || Instant::now() >= settle {
            return Ok(running);
        }
        thread::sleep(Duration::from_millis(10));
    }
}
