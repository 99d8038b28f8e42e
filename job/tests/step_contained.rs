//! A contained job (cgroup and reaper modes, with a keeper) driven by `GroupChild::step` from a loop of the
//! caller's own: the steps neither spin nor lag behind the blocking wait.
#![cfg(all(target_os = "linux", not(grouptimeout_portable)))]

mod common;

use std::io;
use std::process::Command;
use std::time::{Duration, Instant};

use grouptimeout::{GroupChild, Interest, Step};
use grouptimeout_job::{Contain, Containment, JobChildExt as _};

/// Sleeps as a driver does: `poll(2)` on the interest's descriptors until its instant, yielding when it is past.
fn sleep_on(interest: &Interest) {
    let mut fds: Vec<libc::pollfd> = interest
        .readable()
        .map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let ms = interest.until().map_or(-1, |until| {
        let left = until.saturating_duration_since(Instant::now());
        i32::try_from(left.as_micros().div_ceil(1000)).unwrap_or(i32::MAX)
    });
    if ms == 0 {
        std::thread::yield_now();
    }
    let nfds = libc::nfds_t::try_from(fds.len()).unwrap();
    // SAFETY: `fds` holds `nfds` initialised entries and lives across the call.
    unsafe { libc::poll(fds.as_mut_ptr(), nfds, ms) };
}

/// Steps `child` to its end; returns the outcome, the steps, the CPU time of the loop and the time after `from`.
fn drive(
    child: &mut GroupChild,
    deadline: Option<Instant>,
) -> (io::Result<grouptimeout::Outcome>, usize, Duration) {
    let cpu = common::thread_cpu();
    let end = Instant::now() + Duration::from_secs(60);
    let mut steps = 0;
    let result = loop {
        steps += 1;
        match child.step(deadline) {
            Ok(Step::Pending(interest)) => {
                assert!(Instant::now() < end, "the stepped wait did not end");
                sleep_on(&interest);
            }
            Ok(Step::Done(outcome)) => break Ok(outcome),
            Err(e) => break Err(e),
        }
    };
    (
        result,
        steps,
        common::thread_cpu().checked_sub(cpu).unwrap(),
    )
}

fn modes() -> Vec<(Containment, Contain)> {
    let mut out = Vec::new();
    let mut reaper = Contain::new();
    reaper.cgroup(false).require(Containment::Reaper);
    out.push((Containment::Reaper, reaper));
    let mut cgroup = Contain::new();
    cgroup.require(Containment::Cgroup);
    out.push((Containment::Cgroup, cgroup));
    out
}

/// Twenty `setsid` daemons, then the command's own end: the keeper has a job to end after the command.
const DAEMONS_THEN_EXIT: &str = "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do setsid sleep MARK & done; sleep 0.5";
const DAEMONS_THEN_SLEEP: &str = "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do setsid sleep MARK & done; sleep 30";

#[test]
fn a_stepped_contained_job_neither_spins_nor_lags() {
    for (m, (mode, how)) in modes().into_iter().enumerate() {
        for (script, deadline) in [
            ("sleep 0.5", None),
            ("sleep MARK", Some(Duration::from_millis(500))),
            (DAEMONS_THEN_EXIT, None),
            (DAEMONS_THEN_SLEEP, Some(Duration::from_millis(500))),
        ] {
            // This process's and this mode's (another copy of the suite runs the same scripts). Every marker of the
            // suite is `30.` and the pid in 7 digits and one more: none is found inside another's longer number.
            let marker = format!("30.{:07}{m}", std::process::id());
            let script = script.replace("MARK", &marker);
            let script = script.as_str();
            let mut child = match how.spawn(Command::new("sh").args(["-c", script])) {
                Ok(child) => child,
                Err(e) => {
                    eprintln!("{mode:?} skipped: {e}");
                    continue;
                }
            };
            assert_eq!(child.containment(), mode);
            let started = Instant::now();
            let (outcome, steps, cpu) = drive(&mut child, deadline.map(|d| started + d));
            let took = started.elapsed();
            let outcome = outcome.unwrap();
            eprintln!("{mode:?} {script}: {outcome:?} in {took:?}, {steps} steps, {cpu:?} CPU");
            assert_eq!(outcome.timed_out(), deadline.is_some(), "{outcome:?}");
            // The keeper's end (a cgroup's `cgroup.kill` and its `populated 0`, the reaper's sweep) is waited for on
            // the poll schedule: a millisecond of checks and yields, then pauses; never a busy loop.
            assert!(
                cpu < Duration::from_millis(50),
                "{mode:?} {script}: {cpu:?} of CPU in {steps} steps"
            );
            assert!(took < Duration::from_secs(5), "{mode:?} {script}: {took:?}");
            let left = common::with_cmdline(&marker);
            assert!(
                common::survivors_after(Duration::from_secs(5), &left).is_empty(),
                "{left:?}"
            );
        }
    }
}
