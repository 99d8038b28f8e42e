//! The stepped waits driven by hand, as a caller's own event loop would drive them: `step`, then `poll(2)` on the
//! `Interest`'s descriptors until its instant, then `step` again. Every step must return at once (it never
//! blocks), and the outcomes, signals and leftovers must be those of the blocking waits.

mod common;

use std::fs;
use std::io;
use std::os::unix::process::ExitStatusExt as _;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use common::{is_dead, read_pid, survivors_after, temp_path, thread_cpu, KillOnDrop};
use grouptimeout::{signal, GroupChild, GroupCommandExt, Interest, Outcome, Step};

const LONG: Duration = Duration::from_secs(60);

/// Whether this build sleeps on a pidfd (Linux, not turned off by the cfg).
const PIDFD: bool = cfg!(all(
    target_os = "linux",
    not(grouptimeout_no_pidfd),
    not(grouptimeout_portable)
));

/// Sleeps as a driver does: `poll(2)` on the interest's descriptors until its instant (rounded up to whole
/// milliseconds, as `poll` counts them).
fn sleep_on(interest: &Interest) {
    let mut fds: Vec<libc::pollfd> = interest
        .readable()
        .map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    assert!(fds.len() <= 3, "at most 3 readable descriptors");
    if let Some(fd) = interest.writable() {
        fds.push(libc::pollfd {
            fd,
            events: libc::POLLOUT,
            revents: 0,
        });
    }
    let ms = interest.until().map_or(-1, |until| {
        let left = until.saturating_duration_since(Instant::now());
        i32::try_from(left.as_micros().div_ceil(1000)).unwrap_or(i32::MAX)
    });
    assert!(ms >= 0 || !fds.is_empty(), "an interest in nothing at all");
    let nfds = libc::nfds_t::try_from(fds.len()).unwrap();
    // SAFETY: `fds` holds `nfds` initialised entries and lives across the call.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), nfds, ms) };
    assert!(
        n >= 0 || io::Error::last_os_error().kind() == io::ErrorKind::Interrupted,
        "poll: {}",
        io::Error::last_os_error()
    );
}

/// What a driven wait saw: its result, how many steps it took, every interest it was given, and when the step that
/// gave each one started.
struct Driven<T> {
    result: io::Result<T>,
    steps: usize,
    interests: Vec<Interest>,
    #[cfg_attr(
        not(feature = "capture"),
        expect(dead_code, reason = "read by a capture's test")
    )]
    started: Vec<Instant>,
}

/// Steps `step` to its end, sleeping on each `Pending` as [`sleep_on`] does. Panics if the wait takes more than
/// [`LONG`], or if one step takes more than a second (a step must never block).
fn drive<T>(mut step: impl FnMut() -> io::Result<Step<T>>) -> Driven<T> {
    let end = Instant::now() + LONG;
    let (mut interests, mut starts) = (Vec::new(), Vec::new());
    loop {
        let started = Instant::now();
        let stepped = step();
        let took = started.elapsed();
        assert!(took < Duration::from_secs(1), "a step blocked for {took:?}");
        match stepped {
            Ok(Step::Pending(interest)) => {
                assert!(Instant::now() < end, "the stepped wait did not end");
                interests.push(interest);
                starts.push(started);
                sleep_on(&interest);
            }
            done => {
                return Driven {
                    result: done.map(|step| match step {
                        Step::Done(done) => done,
                        Step::Pending(_) => unreachable!(),
                    }),
                    steps: interests.len() + 1,
                    interests,
                    started: starts,
                }
            }
        }
    }
}

fn sh(script: &str) -> Command {
    let mut cmd = Command::new("sh");
    cmd.args(["-c", script]);
    cmd
}

fn spawn_sh(script: &str) -> GroupChild {
    sh(script).stdout(Stdio::piped()).spawn_group().unwrap()
}

#[test]
fn a_job_that_exits_in_time_has_its_leftovers_killed() {
    // The leader exits once its standard input ends, which the test closes after the second step (the one that
    // sleeps on the pidfd): not after a sleep that a slow test could outlast before its second step.
    let mut child = sh("sleep 30 & echo $!; read x; exit 3")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn_group()
        .unwrap();
    let background = read_pid(child.stdout.take().unwrap());
    let _cleanup = KillOnDrop::new(vec![background]);
    let deadline = Instant::now() + LONG;
    let (mut stdin, mut steps) = (child.stdin.take(), 0);
    let driven = drive(|| {
        let step = child.step(Some(deadline));
        steps += 1;
        if steps == 2 {
            drop(stdin.take());
        }
        step
    });
    assert_eq!(
        driven.result.unwrap(),
        Outcome::Exited(std::process::ExitStatus::from_raw(3 << 8))
    );
    // The sleep left in the group was killed before the last step returned.
    assert!(
        is_dead(background) || survivors_after(Duration::from_secs(2), &[background]).is_empty()
    );
    // The first step that waits asks for a yield; then, with a pidfd, the wait sleeps on it until the exit: a
    // handful of steps, not one per poll-schedule tick.
    let first = driven.interests[0];
    assert!(first.until().is_some_and(|until| until <= Instant::now()));
    assert_eq!(first.readable().count(), 0);
    if PIDFD {
        assert!(driven.steps <= 5, "{} steps for one exit", driven.steps);
        let slept = driven.interests[1];
        assert_eq!(slept.readable().count(), 1, "{slept:?}");
        assert_eq!(slept.until(), Some(deadline));
    } else {
        // The poll schedule: never an interest without an instant, never a descriptor.
        assert!(driven
            .interests
            .iter()
            .all(|i| i.until().is_some() && i.readable().count() == 0));
    }
}

/// A member of the group that was stopped before the deadline acts on the grace signal only if `SIGCONT` follows
/// it; a leader that ignores the grace signal is killed with `SIGKILL` at the end of the grace period.
#[test]
fn at_the_deadline_the_grace_signal_and_sigcont_then_sigkill() {
    let file = temp_path("step-grace");
    // The member writes the file when it gets SIGTERM (it prints its pid once its trap is set); the leader ignores
    // SIGTERM.
    let script = format!(
        "sh -c 'trap \"echo term > {f}; exit 0\" TERM; echo $$; while :; do sleep 0.05; done' & \
         trap '' TERM; while :; do sleep 0.05; done",
        f = file.display()
    );
    let mut child = spawn_sh(&script);
    let member = read_pid(child.stdout.take().unwrap());
    let _cleanup = KillOnDrop::new(vec![member]);
    // Stopped: it runs its trap only once continued.
    let member_pid = i32::try_from(member).unwrap();
    // SAFETY: `member` is a live process of the group this test just started (a pid > 1).
    let stopped = unsafe { libc::kill(member_pid, libc::SIGSTOP) };
    assert_eq!(stopped, 0);
    assert!(common::eventually(LONG, || matches!(
        common::state_and_group(member),
        Some(('T', _))
    )));
    let grace = Duration::from_millis(700);
    child.set_grace(signal::SIGTERM, grace);
    let deadline = Instant::now() + Duration::from_millis(300);
    let cpu = thread_cpu();
    let driven = drive(|| child.step(Some(deadline)));
    let cpu = thread_cpu().checked_sub(cpu).unwrap();
    let outcome = driven.result.unwrap();
    let returned = Instant::now();
    assert!(outcome.timed_out(), "{outcome:?}");
    assert_eq!(
        outcome.status().signal(),
        Some(signal::SIGKILL),
        "{outcome:?}"
    );
    // Not before the end of the grace period, which the leader did not shorten.
    assert!(returned >= deadline + grace);
    let written = fs::read_to_string(&file);
    let _ = fs::remove_file(&file);
    assert_eq!(
        written.ok().as_deref(),
        Some("term\n"),
        "the stopped member did not act on the grace signal: no SIGCONT?"
    );
    assert!(survivors_after(Duration::from_secs(5), &[member]).is_empty());
    // The grace period was slept on the pidfd, or on the poll schedule (which checks without sleeping only for a
    // millisecond after each signal), not spun through.
    assert!(cpu < grace / 2, "the steps used {cpu:?} of CPU");
    if PIDFD {
        assert!(driven.steps < 50, "{} steps", driven.steps);
    }
}

/// A leader that exits on the grace signal ends the grace period at once: its members get `SIGKILL` then.
#[test]
fn a_leader_that_exits_on_the_grace_signal_ends_the_grace_period() {
    let mut child =
        spawn_sh("sleep 30 & echo $!; trap 'exit 7' TERM; while :; do sleep 0.05; done");
    let member = read_pid(child.stdout.take().unwrap());
    let _cleanup = KillOnDrop::new(vec![member]);
    child.set_grace(signal::SIGTERM, LONG);
    let deadline = Instant::now() + Duration::from_millis(200);
    let outcome = drive(|| child.step(Some(deadline))).result.unwrap();
    assert!(Instant::now() < deadline + LONG / 2);
    assert_eq!(
        outcome,
        Outcome::TimedOut(std::process::ExitStatus::from_raw(7 << 8))
    );
    // The background `sleep` ignores nothing but is not the leader: it got SIGTERM too, or SIGKILL after.
    assert!(survivors_after(Duration::from_secs(5), &[member]).is_empty());
}

#[test]
fn a_step_after_done_returns_the_same_outcome_and_signals_nothing() {
    let mut child = sh("exit 4").spawn_group().unwrap();
    let outcome = drive(|| child.step(None)).result.unwrap();
    assert_eq!(outcome.status().code(), Some(4));
    for deadline in [None, Some(Instant::now())] {
        match child.step(deadline).unwrap() {
            Step::Done(again) => assert_eq!(again, outcome),
            Step::Pending(i) => panic!("pending after done: {i:?}"),
        }
    }
    assert_eq!(child.wait().unwrap(), outcome.status());
    assert_eq!(child.try_wait().unwrap(), Some(outcome.status()));
}

#[test]
fn a_handle_kill_from_another_thread_ends_a_stepped_wait() {
    let mut child = Command::new("sleep").arg("30").spawn_group().unwrap();
    let handle = child.handle();
    let killer = thread::spawn(move || {
        thread::sleep(Duration::from_millis(200));
        handle.kill()
    });
    let started = Instant::now();
    let outcome = drive(|| child.step(Some(started + LONG))).result.unwrap();
    killer.join().unwrap().unwrap();
    assert!(started.elapsed() < LONG / 2);
    assert!(!outcome.timed_out(), "{outcome:?}");
    assert_eq!(outcome.status().signal(), Some(signal::SIGKILL));
}

/// The deadline is the one of each call, until the sequence started.
#[test]
fn a_later_deadline_given_to_a_later_step_wins() {
    // `cat` runs until the test closes its standard input: still running at the step below, however slow the test.
    let mut child = Command::new("cat")
        .stdin(Stdio::piped())
        .spawn_group()
        .unwrap();
    let near = Instant::now() + Duration::from_millis(1);
    thread::sleep(Duration::from_millis(5));
    // One step with a deadline past: it checks once, then the sequence starts (SIGKILL at once, no grace) ...
    let mut early = Command::new("sleep").arg("30").spawn_group().unwrap();
    let outcome = drive(|| early.step(Some(near))).result.unwrap();
    assert!(outcome.timed_out());
    // ... while a wait that is given a later deadline at its next step lets the command finish.
    assert!(matches!(
        child.step(Some(near + LONG)).unwrap(),
        Step::Pending(_)
    ));
    drop(child.stdin.take());
    let outcome = drive(|| child.step(Some(near + LONG))).result.unwrap();
    assert!(
        !outcome.timed_out() && outcome.status().success(),
        "{outcome:?}"
    );
}

#[cfg(feature = "capture")]
#[test]
fn a_capture_in_steps_bounds_a_chatty_writer() {
    let mut child = sh("echo err >&2; exec yes chatty")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn_group()
        .unwrap();
    child.set_output_limit(1000);
    let id = child.id();
    // Both streams hold what the assertions below read before the deadline starts (a loaded machine may start `sh`
    // late): `yes` goes on writing until the pipe is full.
    assert!(common::pipe_holds(child.stdout.as_ref().unwrap(), 1000));
    assert!(common::pipe_holds(child.stderr.as_ref().unwrap(), 4));
    let mut capture = child
        .capture_steps(Some(Instant::now() + Duration::from_millis(300)))
        .unwrap();
    assert_eq!(capture.child().id(), id);
    let driven = drive(|| capture.step());
    let captured = driven.result.unwrap();
    assert!(captured.outcome.timed_out(), "{:?}", captured.outcome);
    assert_eq!(captured.stdout.len(), 1000);
    assert!(captured.stdout.starts_with(b"chatty\nchatty\n"));
    assert!(captured.stdout_omitted > 0);
    assert_eq!(captured.stderr, b"err\n");
    assert!(captured.pipes_closed);
    // While it ran, a step listed both pipes (and, with a pidfd, the leader's exit descriptor).
    assert!(driven
        .interests
        .iter()
        .any(|i| i.readable().count() == if PIDFD { 3 } else { 2 }));
    // The output was handed over: a later step says so.
    let again = capture.step().unwrap_err();
    assert_eq!(again.kind(), io::ErrorKind::InvalidInput);
    assert!(is_dead(id));
}

#[cfg(feature = "capture")]
#[test]
fn a_capture_in_steps_writes_its_input() {
    // More than a pipe holds, so that the input is written over several steps while `cat` reads it.
    let input: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let mut child = Command::new("cat")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn_group()
        .unwrap();
    child.set_input(input.clone()).unwrap();
    let mut capture = child.capture_steps(Some(Instant::now() + LONG)).unwrap();
    let driven = drive(|| capture.step());
    let captured = driven.result.unwrap();
    assert!(!captured.outcome.timed_out() && captured.outcome.status().success());
    assert_eq!(captured.input_written, input.len());
    assert!(
        captured.stdout == input,
        "the output differs from the input"
    );
    assert!(driven.interests.iter().any(|i| i.writable().is_some()));
}

#[cfg(feature = "capture")]
#[test]
fn dropping_a_capture_mid_wait_kills_the_group() {
    let mut child = spawn_sh("sleep 30 & echo $!; sleep 30");
    let member = read_pid(child.stdout.take().unwrap());
    let _cleanup = KillOnDrop::new(vec![member]);
    let leader = child.id();
    let mut capture = child.capture_steps(None).unwrap();
    assert!(matches!(capture.step().unwrap(), Step::Pending(_)));
    drop(capture);
    assert!(is_dead(leader));
    assert!(survivors_after(Duration::from_secs(5), &[member]).is_empty());
}

/// A killed leader that cannot be reaped yet (its tracer does not run, so its exit waits for the tracer) must not
/// block a step: the steps go on (`Pending`) without spinning until the tracer lets go.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[test]
fn a_killed_leader_that_is_not_reapable_yet_does_not_block_a_step() {
    let test = "a_killed_leader_that_is_not_reapable_yet_does_not_block_a_step";
    let mut leader = Command::new("sleep").arg("30").spawn_group().unwrap();
    let Some((mut tracer, _cleanup)) = common::seize(test, leader.id()) else {
        return;
    };
    let started = Instant::now();
    let cpu = thread_cpu();
    // `drive` fails if one step takes a second: the tracer holds the exit for about 2 s.
    let outcome = drive(|| leader.step(Some(started + Duration::from_millis(100))))
        .result
        .unwrap();
    let cpu = thread_cpu().checked_sub(cpu).unwrap();
    assert!(outcome.timed_out(), "{outcome:?}");
    assert_eq!(outcome.status().signal(), Some(signal::SIGKILL));
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "reaped while traced?"
    );
    assert!(
        cpu < Duration::from_millis(300),
        "the steps used {cpu:?} of CPU"
    );
    assert!(tracer.wait().unwrap().success());
}

/// A set or an async runtime moves waits between threads: the stepped types are `Send` and `Sync`, as `GroupChild`
/// is.
#[test]
fn the_stepped_types_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<Interest>();
    check::<Step<Outcome>>();
    #[cfg(feature = "capture")]
    check::<grouptimeout::Capture>();
    #[cfg(feature = "capture")]
    check::<Step<grouptimeout::Captured>>();
}

/// `try_wait` between steps keeps its promise of never blocking: after a step killed a leader that cannot be reaped
/// yet (traced by a tracer that does not let go for 2 s), it returns `None` at once, and the steps go on.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[test]
fn try_wait_between_steps_does_not_block_on_a_killed_leader() {
    let test = "try_wait_between_steps_does_not_block_on_a_killed_leader";
    let mut leader = Command::new("sleep").arg("30").spawn_group().unwrap();
    let Some((mut tracer, _cleanup)) = common::seize(test, leader.id()) else {
        return;
    };
    // A deadline already past: the steps kill the group, then wait for the reap.
    let deadline = Instant::now();
    let mut pending = 0;
    while pending < 5 {
        match leader.step(Some(deadline)).unwrap() {
            Step::Pending(interest) => sleep_on(&interest),
            Step::Done(outcome) => panic!("reaped while traced: {outcome:?}"),
        }
        pending += 1;
    }
    let started = Instant::now();
    let status = leader.try_wait();
    let took = started.elapsed();
    assert!(
        took < Duration::from_millis(500),
        "try_wait blocked for {took:?}"
    );
    assert!(matches!(status, Ok(None)), "{status:?}");
    let outcome = drive(|| leader.step(Some(deadline))).result.unwrap();
    assert!(outcome.timed_out(), "{outcome:?}");
    assert_eq!(outcome.status().signal(), Some(signal::SIGKILL));
    assert!(tracer.wait().unwrap().success());
}

/// An invalid grace signal: the step that meets it still kills the group and reaps the leader, then reports the
/// error; the next step returns the outcome (timed out, killed), and nothing is left.
#[test]
fn an_invalid_grace_signal_in_steps_kills_reaps_then_reports() {
    let mut child = spawn_sh("sleep 30 & echo $!; sleep 30");
    let member = read_pid(child.stdout.take().unwrap());
    let _cleanup = KillOnDrop::new(vec![member]);
    let leader = child.id();
    child.set_grace(12_345, LONG);
    let deadline = Instant::now() + Duration::from_millis(100);
    let err = drive(|| child.step(Some(deadline))).result.unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err}");
    assert!(is_dead(leader), "the error came before the reap");
    assert!(survivors_after(Duration::from_secs(5), &[member]).is_empty());
    for _ in 0..2 {
        match child.step(Some(deadline)).unwrap() {
            Step::Done(outcome) => {
                assert!(outcome.timed_out(), "{outcome:?}");
                assert_eq!(outcome.status().signal(), Some(signal::SIGKILL));
            }
            Step::Pending(i) => panic!("pending after the reap: {i:?}"),
        }
    }
}

/// A stop signal as the grace signal is not followed by `SIGCONT`: the leader stays stopped through the grace
/// period of a stepped wait, then `SIGKILL` ends it.
#[test]
fn a_stop_signal_as_grace_signal_stays_a_stop_in_steps() {
    let mut child = Command::new("sleep").arg("30").spawn_group().unwrap();
    let leader = child.id();
    let grace = Duration::from_secs(1);
    child.set_grace(signal::SIGSTOP, grace);
    let deadline = Instant::now() + Duration::from_millis(100);
    let (mut stopped, mut continued) = (0, 0);
    let end = Instant::now() + LONG;
    // Steps at least every 20 ms (stepping early is allowed), looking at the leader in the grace period: from the
    // first time it is seen stopped (the stop takes effect a moment after the signal) to the end of the grace period
    // (the `SIGKILL` comes from a step of this loop, after the look).
    let outcome = loop {
        let now = Instant::now();
        if now > deadline && now < deadline + grace {
            match common::state_and_group(leader) {
                Some(('T', _)) => stopped += 1,
                Some(('S' | 'R', _)) if stopped > 0 => continued += 1,
                _ => {}
            }
        }
        match child.step(Some(deadline)).unwrap() {
            Step::Done(outcome) => break outcome,
            Step::Pending(_) => {
                assert!(Instant::now() < end, "the stepped wait did not end");
                thread::sleep(Duration::from_millis(20));
            }
        }
    };
    assert!(outcome.timed_out(), "{outcome:?}");
    assert_eq!(outcome.status().signal(), Some(signal::SIGKILL));
    assert_eq!(continued, 0, "the stopped leader was continued");
    assert!(stopped > 0, "the leader was never seen stopped");
}

/// A driver that steps a wait for a leader that runs 1 s sleeps, whatever tells it the exit (a pidfd, or the poll
/// schedule): a few milliseconds of CPU, not a busy loop.
#[test]
fn a_stepped_wait_of_a_second_does_not_spin() {
    for deadline in [None, Some(Instant::now() + LONG)] {
        let mut child = Command::new("sleep").arg("1").spawn_group().unwrap();
        let cpu = thread_cpu();
        let driven = drive(|| child.step(deadline));
        let cpu = thread_cpu().checked_sub(cpu).unwrap();
        assert!(driven.result.unwrap().status().success());
        eprintln!("{} steps, {cpu:?} of CPU", driven.steps);
        assert!(
            cpu < Duration::from_millis(60),
            "{cpu:?} of CPU in {} steps",
            driven.steps
        );
    }
}

/// `try_wait` during a stepped grace period: the leader that exits on the grace signal is reaped by it, and the
/// step after it returns the same, timed-out, outcome.
#[test]
fn try_wait_in_the_grace_period_agrees_with_the_next_step() {
    // The trap waits for a line on standard input, so that the leader cannot exit before the test has seen the
    // step that sent the grace signal return `Pending` (it once exited within that step, under load).
    let mut child = sh("trap 'read go; exit 7' TERM; echo ready; while :; do sleep 0.05; done")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn_group()
        .unwrap();
    let _ = read_line(child.stdout.take().unwrap());
    child.set_grace(signal::SIGTERM, LONG);
    let deadline = Instant::now();
    // The step at the deadline sends the grace signal.
    assert!(matches!(
        child.step(Some(deadline)).unwrap(),
        Step::Pending(_)
    ));
    io::Write::write_all(&mut child.stdin.take().unwrap(), b"go\n").unwrap();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        thread::sleep(Duration::from_millis(5));
    };
    assert_eq!(status.code(), Some(7));
    match child.step(Some(deadline)).unwrap() {
        Step::Done(outcome) => {
            assert_eq!(outcome, Outcome::TimedOut(status));
        }
        Step::Pending(i) => panic!("pending after try_wait reaped: {i:?}"),
    }
}

fn read_line(out: impl io::Read) -> String {
    let mut line = String::new();
    io::BufRead::read_line(&mut io::BufReader::new(out), &mut line).unwrap();
    line
}

/// A capture whose standard output is held by a `setsid` daemon: the steps drain for about 100 ms after the reap,
/// sleeping, then return with `pipes_closed` false.
#[cfg(feature = "capture")]
#[test]
fn a_capture_in_steps_held_by_a_daemon_ends_after_its_drain() {
    let mut child = spawn_sh("setsid sleep 30 & echo $!; sleep 0.3; echo done");
    child.set_grace(signal::SIGTERM, LONG);
    let mut capture = child.capture_steps(Some(Instant::now() + LONG)).unwrap();
    let cpu = thread_cpu();
    let started = Instant::now();
    let driven = drive(|| capture.step());
    let (took, cpu) = (started.elapsed(), thread_cpu().checked_sub(cpu).unwrap());
    let captured = driven.result.unwrap();
    let daemon: u32 = String::from_utf8_lossy(&captured.stdout)
        .lines()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let _cleanup = KillOnDrop::new(vec![daemon]);
    assert!(!captured.outcome.timed_out() && captured.outcome.status().success());
    assert!(!captured.pipes_closed);
    assert!(
        took >= Duration::from_millis(90) && took < Duration::from_secs(5),
        "{took:?}"
    );
    assert!(
        cpu < Duration::from_millis(50),
        "{cpu:?} in {} steps",
        driven.steps
    );
}

/// The contract of [`Interest::readable`]: a descriptor listed by a step names the same file until a step no longer
/// lists it. A capture whose input ends in the step that opens the leader's pidfd closes its standard input in that
/// step: the pidfd must not get its number (the input listed as writable by one step, the pidfd listed as readable
/// by the next, with no step in between where a driver could deregister the old one; an `epoll` driver keyed by
/// number would never add the pidfd). The core writes the input after the child's step, so that cannot happen.
#[cfg(feature = "capture")]
#[test]
fn a_number_listed_by_a_step_names_the_same_file_until_a_step_drops_it() {
    for size in [100_000usize, 130_000] {
        let mut child = Command::new("cat")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn_group()
            .unwrap();
        child.set_input(vec![b'x'; size]).unwrap();
        // Fills the lowest free descriptor number, so that the next free one is the input's once it is closed.
        let _hole = fs::File::open("/dev/null").unwrap();
        let mut capture = child.capture_steps(Some(Instant::now() + LONG)).unwrap();
        let mut last: Option<Interest> = None;
        let end = Instant::now() + LONG;
        loop {
            match capture.step().unwrap() {
                Step::Done(captured) => {
                    assert_eq!(captured.stdout.len(), size);
                    break;
                }
                Step::Pending(interest) => {
                    if let Some(input) = last.and_then(|l| l.writable()) {
                        assert!(
                            interest.writable() == Some(input)
                                || interest.readable().all(|fd| fd != input),
                            "descriptor {input}, listed for the input, is listed for something else next: \
                             {last:?} then {interest:?}"
                        );
                    }
                    // A driver busy elsewhere (the command meanwhile reads what the pipe holds).
                    if last.is_none() {
                        thread::sleep(Duration::from_millis(30));
                    }
                    last = Some(interest);
                    assert!(Instant::now() < end);
                    sleep_on(&interest);
                }
            }
        }
    }
}

/// What each descriptor listed by `interest` names now (`/proc/self/fd`: `pipe:[N]`, `anon_inode:[pidfd]`, ...).
#[cfg(all(feature = "capture", target_os = "linux"))]
fn listed_files(interest: &Interest) -> Vec<(i32, String)> {
    let fds = interest.readable().chain(interest.writable());
    fds.map(|fd| {
        let link = fs::read_link(format!("/proc/self/fd/{fd}")).unwrap();
        (fd, link.to_string_lossy().into_owned())
    })
    .collect()
}

/// The contract of [`Interest::readable`] for a capture whose output pipes reach end of file in the step that opens
/// the pidfd (the command closes them at once, then sleeps; the driver steps late), input or not: every number that
/// two consecutive steps list names the same file in both (as `/proc/self/fd` tells, whichever the direction).
#[cfg(all(feature = "capture", target_os = "linux"))]
#[test]
fn a_pipe_at_end_of_file_keeps_its_number_from_the_pidfd() {
    for input in [None, Some(vec![b'x'; 200_000])] {
        let stdin = if input.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        };
        let mut child = sh("cat >/dev/null; exec >&- 2>&-; sleep 0.3")
            .stdin(stdin)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn_group()
            .unwrap();
        if let Some(input) = input.clone() {
            child.set_input(input).unwrap();
        }
        let _hole = fs::File::open("/dev/null").unwrap();
        let mut capture = child.capture_steps(Some(Instant::now() + LONG)).unwrap();
        let mut last: Vec<(i32, String)> = Vec::new();
        let end = Instant::now() + LONG;
        let mut steps = 0;
        let captured = loop {
            match capture.step().unwrap() {
                Step::Done(captured) => break captured,
                Step::Pending(interest) => {
                    let now = listed_files(&interest);
                    for (fd, file) in &now {
                        if let Some((_, was)) = last.iter().find(|(old, _)| old == fd) {
                            assert_eq!(was, file, "descriptor {fd}: {last:?} then {now:?}");
                        }
                    }
                    last = now;
                    steps += 1;
                    // A driver busy elsewhere at first (the command meanwhile closes its output).
                    if steps <= 2 {
                        thread::sleep(Duration::from_millis(100));
                    }
                    assert!(Instant::now() < end);
                    sleep_on(&interest);
                }
            }
        };
        assert!(!captured.outcome.timed_out() && captured.pipes_closed);
        assert_eq!(captured.input_written, input.map_or(0, |i| i.len()));
    }
}

/// Issue 39.3: an idle capture's steps ask to wake at its idle end (the last output's read, here the capture's start,
/// plus the idle time): a driver sleeps until then, not past it and not in a busy loop, and the step at that instant
/// ends the job as idle. A deadline before the idle end still rules.
#[cfg(feature = "capture")]
#[test]
fn an_idle_capture_in_steps_wakes_at_its_idle_end() {
    let idle = Duration::from_millis(300);
    // A round tells whether the steps ask for the idle end only if the step that could ask for it started before
    // the idle end: a test thread kept off the CPU for the whole idle time (a loaded CI host) steps only after it,
    // when the job is rightly ended at once. Such a round is run again.
    let mut told = false;
    for _ in 0..5 {
        let mut child = spawn_sh("sleep 30");
        child.set_idle_timeout(idle);
        let leader = child.id();
        let before = Instant::now();
        let mut capture = child.capture_steps(Some(before + LONG)).unwrap();
        let after = Instant::now();
        let cpu = thread_cpu();
        let driven = drive(|| capture.step());
        let cpu = thread_cpu().checked_sub(cpu).unwrap();
        let outcome = driven.result.unwrap().outcome;
        assert!(outcome.idle(), "{outcome}");
        assert!(is_dead(leader));
        eprintln!("{} steps, {cpu:?} of CPU", driven.steps);
        assert!(
            cpu < Duration::from_millis(60),
            "{cpu:?} of CPU in {} steps",
            driven.steps
        );
        // The first instant asked for at or after the idle end is the idle end itself (which lies between
        // `before + idle` and `after + idle`), if the step that asked for it started before the idle end.
        let asked: Vec<(Instant, Instant)> = (driven.interests.iter())
            .zip(&driven.started)
            .filter_map(|(interest, &started)| Some((interest.until()?, started)))
            .collect();
        let first = asked.iter().find(|&&(until, _)| until >= before + idle);
        if first.is_none_or(|&(_, started)| started < before + idle) {
            assert!(
                first.is_some_and(|&(until, _)| until <= after + idle),
                "{asked:?}"
            );
            told = true;
            break;
        }
    }
    assert!(told, "in 5 rounds no step started before the idle end");

    // An idle end after the deadline: the deadline ends the job, and no step asks for the idle end.
    let mut child = spawn_sh("sleep 30");
    let idle = Duration::from_secs(5);
    child.set_idle_timeout(idle);
    let started = Instant::now();
    let mut capture = child
        .capture_steps(Some(started + Duration::from_millis(100)))
        .unwrap();
    let driven = drive(|| capture.step());
    assert!(driven.result.unwrap().outcome.timed_out());
    let untils = driven.interests.iter().filter_map(Interest::until);
    assert!(
        untils.clone().all(|until| until < started + idle),
        "{:?}",
        untils.collect::<Vec<_>>()
    );
}

/// The sink's chunks, in order, shared with the test; and whether the sink was dropped.
#[cfg(feature = "capture")]
type Seen = std::sync::Arc<std::sync::Mutex<(Vec<(grouptimeout::Stream, Vec<u8>)>, bool)>>;

/// A sink that records every chunk into `seen`, and its own drop.
#[cfg(feature = "capture")]
fn recording_sink(child: &mut GroupChild) -> Seen {
    struct Dropped(Seen);
    impl Drop for Dropped {
        fn drop(&mut self) {
            self.0.lock().unwrap().1 = true;
        }
    }
    let seen = Seen::default();
    let dropped = Dropped(std::sync::Arc::clone(&seen));
    child.set_output_sink(move |stream, bytes| {
        dropped.0.lock().unwrap().0.push((stream, bytes.to_vec()));
    });
    seen
}

/// Issue 44.1: a capture ended by moving its deadline to now (`Capture::set_deadline`), no deadline before: the next
/// step acts on it whatever the last interest said (here the pidfd and the pipes alone, no instant), the grace
/// signal ends the command, and the last step hands over its output and its usage.
#[cfg(feature = "capture")]
#[test]
fn a_capture_in_steps_ended_by_a_deadline_moved_to_now_keeps_its_output() {
    let mut child =
        sh("trap 'echo stopping; exit 3' TERM; echo started; while :; do sleep 0.1; done")
            .stdout(Stdio::piped())
            .spawn_group()
            .unwrap();
    child.set_grace(signal::SIGTERM, LONG);
    let leader = child.id();
    let seen = recording_sink(&mut child);
    let mut capture = child.capture_steps(None).unwrap();
    let end = Instant::now() + LONG;
    loop {
        assert!(Instant::now() < end, "no output");
        let Step::Pending(interest) = capture.step().unwrap() else {
            panic!("done before its deadline");
        };
        if !seen.lock().unwrap().0.is_empty() {
            break;
        }
        sleep_on(&interest);
    }
    capture.set_deadline(Some(Instant::now()));
    // Stepped every 10 ms (waking early is allowed), so that a step that did not act on the moved deadline fails the
    // test after 10 s instead of sleeping for ever on an interest without an instant.
    let end = Instant::now() + Duration::from_secs(10);
    let captured = loop {
        match capture.step().unwrap() {
            Step::Done(captured) => break captured,
            Step::Pending(_) => {
                assert!(Instant::now() < end, "the moved deadline was not acted on");
            }
        }
        thread::sleep(Duration::from_millis(10));
    };
    // Timed out, and the command exited on the grace signal (its trap's status), before any SIGKILL.
    let outcome = captured.outcome;
    assert!(
        matches!(outcome, Outcome::TimedOut(s) if s.code() == Some(3)),
        "{outcome}"
    );
    assert_eq!(captured.stdout, b"started\nstopping\n");
    assert_eq!(captured.usage.measured, grouptimeout::Measured::Leader);
    assert!(is_dead(leader));
}

/// Issue 44.1: each stream's end of file reaches the sink as an empty chunk, once, after its last bytes (a last line
/// without a newline included); and the sink is dropped by the step that returns the output, so a sink that holds
/// back the start of a line can hand it on, while the capture itself lives on.
#[cfg(feature = "capture")]
#[test]
fn the_sink_is_told_each_streams_end_and_dropped_when_the_capture_is_done() {
    let mut child = sh("printf 'one\\nlast'; printf err >&2")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn_group()
        .unwrap();
    let seen = recording_sink(&mut child);
    let mut capture = child.capture_steps(Some(Instant::now() + LONG)).unwrap();
    let captured = drive(|| capture.step()).result.unwrap();
    assert!(captured.outcome.status().success(), "{}", captured.outcome);
    let (chunks, dropped) = seen.lock().unwrap().clone();
    assert!(dropped, "the sink outlived the capture's end");
    for (stream, want) in [
        (grouptimeout::Stream::Stdout, &b"one\nlast"[..]),
        (grouptimeout::Stream::Stderr, b"err"),
    ] {
        let of: Vec<&[u8]> = chunks
            .iter()
            .filter(|(s, _)| *s == stream)
            .map(|(_, bytes)| &bytes[..])
            .collect();
        assert_eq!(of.last(), Some(&&b""[..]), "{stream:?}: {of:?}");
        assert_eq!(of.iter().filter(|bytes| bytes.is_empty()).count(), 1);
        assert_eq!(of.concat(), want);
    }
    drop(capture);
}
