//! Three jobs waited for in one thread, without a thread per job: an event loop `poll(2)`s the jobs' exit
//! descriptors ([`GroupChild::exit_fd`], Linux) and reaps each job through `try_wait` when its descriptor turns
//! readable. The deadlines are the loop's business: a job past its deadline is killed, then reaped with `wait`.
//!
//! - `quick` exits with status 3 after 0.2 s;
//! - `leaves a child` starts `sleep 60` in the background and exits after 0.5 s: `try_wait` kills the `sleep`;
//! - `too slow` runs past its deadline of 1 s and is killed.
//!
//! At the end the example checks the statuses and that no process of the three groups is left running (in
//! `/proc`), and exits non-zero if something is wrong. Where a job has no exit descriptor (other systems, a build
//! with `--cfg grouptimeout_no_pidfd`) or its descriptor is readable while `try_wait` still says "running" (a tracer
//! was told of the exit first), the loop calls `try_wait` every 10 ms for that job instead.
//!
//! ```sh
//! cargo run --example event_loop
//! ```

use std::io::{self, BufRead, BufReader};
use std::os::fd::AsRawFd as _;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitCode, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use grouptimeout::{signal, GroupChild, GroupCommandExt};

/// How often the loop calls `try_wait` for a job it cannot poll.
const TICK: Duration = Duration::from_millis(10);

struct Job {
    name: &'static str,
    child: GroupChild,
    deadline: Instant,
    /// No descriptor to poll for this job: `try_wait` on every tick.
    on_timer: bool,
    /// The status, whether the deadline passed, and when the loop learnt it.
    end: Option<(ExitStatus, bool, Duration)>,
}

#[allow(clippy::too_many_lines, reason = "an example, read top to bottom")]
fn main() -> io::Result<ExitCode> {
    let start = Instant::now();
    let job = |name, script: &str, deadline: u64| -> io::Result<Job> {
        let child = Command::new("sh")
            .args(["-c", script])
            .stdout(Stdio::piped())
            .spawn_group()?;
        Ok(Job {
            name,
            child,
            deadline: start + Duration::from_millis(deadline),
            on_timer: false,
            end: None,
        })
    };
    let mut jobs = [
        job("quick", "sleep 0.2; exit 3", 10_000)?,
        job("leaves a child", "sleep 60 & echo $!; sleep 0.5", 10_000)?,
        job("too slow", "sleep 60", 1_000)?,
    ];
    let mut line = String::new();
    BufReader::new(jobs[1].child.stdout.take().expect("piped")).read_line(&mut line)?;
    let background: u32 = line
        .trim()
        .parse()
        .expect("the shell printed the pid of its sleep");
    let groups: Vec<u32> = jobs.iter().map(|j| j.child.id()).collect();
    println!("process groups {groups:?}; `leaves a child` started sleep 60 as pid {background}");

    loop {
        let now = Instant::now();
        for job in jobs
            .iter_mut()
            .filter(|j| j.end.is_none() && now >= j.deadline)
        {
            // Past the deadline: kill the group, then reap the leader (at once: it was sent SIGKILL).
            job.child.kill()?;
            job.end = Some((job.child.wait()?, true, start.elapsed()));
        }
        let mut fds = Vec::new();
        let mut polled = Vec::new();
        for (i, job) in jobs.iter_mut().enumerate() {
            if job.end.is_some() || job.on_timer {
                continue;
            }
            match job.child.exit_fd() {
                Ok(fd) => {
                    fds.push(libc::pollfd {
                        fd: fd.as_raw_fd(),
                        events: libc::POLLIN,
                        revents: 0,
                    });
                    polled.push(i);
                }
                Err(e) => {
                    println!(
                        "{}: no exit descriptor ({e}); try_wait every {TICK:?}",
                        job.name
                    );
                    job.on_timer = true;
                }
            }
        }
        let waiting = jobs.iter().filter(|j| j.end.is_none());
        let Some(next_deadline) = waiting.clone().map(|j| j.deadline).min() else {
            break;
        };
        let mut timeout = next_deadline.saturating_duration_since(now);
        if waiting.clone().any(|j| j.on_timer) {
            timeout = timeout.min(TICK);
        }
        // Rounded up, so that the loop does not wake just before a deadline and spin until it.
        let ms =
            libc::c_int::try_from(timeout.as_micros().div_ceil(1000)).unwrap_or(libc::c_int::MAX);
        let nfds = libc::nfds_t::try_from(fds.len()).expect("three descriptors at most");
        // SAFETY: `fds` holds `nfds` initialised pollfd entries and lives across the call; the descriptors are the
        // jobs' exit descriptors, open until their job is reaped.
        if unsafe { libc::poll(fds.as_mut_ptr(), nfds, ms) } < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
            continue;
        }
        for (fd, &i) in fds.iter().zip(&polled) {
            let job = &mut jobs[i];
            if fd.revents == 0 {
                continue;
            }
            // Readable: the leader exited. try_wait kills what it left in its group, reaps it, and gives the status.
            if let Some(status) = job.child.try_wait()? {
                job.end = Some((status, false, start.elapsed()));
            } else {
                // Its tracer was told first; the descriptor stays readable until the reap.
                println!(
                    "{}: exit seen before it can be reaped (traced?); try_wait every {TICK:?}",
                    job.name
                );
                job.on_timer = true;
            }
        }
        for job in jobs.iter_mut().filter(|j| j.end.is_none() && j.on_timer) {
            if let Some(status) = job.child.try_wait()? {
                job.end = Some((status, false, start.elapsed()));
            }
        }
    }

    let mut ok = true;
    for job in &jobs {
        let (status, timed_out, at) = job.end.expect("every job ended");
        let expected = match job.name {
            "quick" => !timed_out && status.code() == Some(3),
            "leaves a child" => !timed_out && status.code() == Some(0),
            _ => timed_out && status.signal() == Some(signal::SIGKILL),
        };
        ok &= expected;
        let how = if timed_out {
            "past its deadline, killed"
        } else {
            "exited"
        };
        let verdict = if expected { "as expected" } else { "WRONG" };
        println!(
            "{:>15}: {how}, {status}, after {at:.2?}: {verdict}",
            job.name
        );
    }
    match running_in(&groups) {
        Ok(running) if running.is_empty() => {
            println!("no process of the three groups is left running (pid {background} included)");
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
        thread::sleep(TICK);
    }
}
