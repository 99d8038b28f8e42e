//! A test runner on a `JobSet`: many tests, 8 at a time, each contained (`grouptimeout-job`'s `spawn_contained`), its
//! output captured, a deadline and a grace period per test, a leak grace of 100 ms, and a leak report per test, as
//! nextest's leak detection gives one (`cargo run -p grouptimeout-set --example test_runner -- 500` for 500 tests;
//! 100 by default).
//!
//! Most tests pass at once; among them, one fails, one runs into its deadline, and three leave something behind:
//!
//! - `leaks a setsid daemon` starts `setsid sleep 30` (a new session: a process group's kill never reaches it);
//! - `leaks a redirected child` starts `sleep 30 >/dev/null 2>&1` (its output redirected, so it holds no pipe of the
//!   runner's, which is how nextest notices a leak);
//! - `leak exits in the grace` starts a child that ends 20 ms after the test: not a leak.
//!
//! The runner adds 8 tests, then one more each time a test ends (the set acts only inside its calls: a runner that
//! spawned all of its tests before the first `next()` would see their deadlines acted on late). It prints a line per
//! test and a summary, checks that each test was reported as planned (the two leaks as leaked, each with one process,
//! dead by now; the timeout's kills not as leaks; the others with no leaks), and exits non-zero if not.
//!
//! Where `spawn_contained` can make neither a cgroup nor the job's reaper (another Unix, a container without them), the
//! jobs are searched by a mark in their environment (lineage) or are plain process groups, whose reports say what
//! they could not see (a plain group's: that nothing is known, and its `setsid` sleep runs out its 30 s).

use std::io;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use grouptimeout::{signal, Outcome};
use grouptimeout_job::{JobCommandExt as _, JobOutputExt as _, Seen};
use grouptimeout_set::{Finished, JobSet};

/// How many tests run at once.
const JOBS: usize = 8;
/// How long what a test left behind gets to exit on its own after the test exited.
const LEAK_GRACE: Duration = Duration::from_millis(100);

/// What a test is, and what the runner must report for it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    Pass,
    Fail,
    TimedOut,
    Leaks,
}

/// The `n`th test: its name, its script, its deadline, and what it must be reported as.
fn test(n: usize) -> (String, &'static str, Duration, Expect) {
    let (name, script, expect) = match n {
        3 => ("fails", "echo 'assertion failed' >&2; exit 1", Expect::Fail),
        5 => ("times out", "echo started; sleep 30", Expect::TimedOut),
        7 => (
            "leaks a setsid daemon",
            "setsid sleep 30 >/dev/null 2>&1 &",
            Expect::Leaks,
        ),
        11 => (
            "leaks a redirected child",
            "sleep 30 >/dev/null 2>&1 &",
            Expect::Leaks,
        ),
        13 => ("leak exits in the grace", "(sleep 0.02) &", Expect::Pass),
        _ => ("passes", "echo ok", Expect::Pass),
    };
    let deadline = Duration::from_millis(if expect == Expect::TimedOut {
        500
    } else {
        10_000
    });
    (format!("{n:3} {name}"), script, deadline, expect)
}

/// Spawns test `n` into the set: contained, captured, with its deadline, its grace period and the leak grace.
fn add(set: &mut JobSet<(usize, Instant)>, n: usize) -> io::Result<()> {
    let (_, script, deadline, _) = test(n);
    let mut child = Command::new("sh")
        .args(["-c", script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn_contained()?;
    child.set_grace(signal::SIGTERM, Duration::from_millis(200));
    child.set_leak_grace(LEAK_GRACE);
    let start = Instant::now();
    set.add_captured((n, start), child, Some(start + deadline))
}

/// Whether `pid` is gone, or a zombie (Linux; elsewhere taken as gone).
fn dead(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
        stat.rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with(['Z', 'X']))
    })
}

fn main() -> io::Result<ExitCode> {
    let tests: usize = std::env::args()
        .nth(1)
        .map_or(100, |n| n.parse().expect("the number of tests"));
    let start = Instant::now();
    let mut set = JobSet::new()?;
    // Add N, then one per finished test: the set acts only inside `next()` and `add()`.
    let mut added = 0;
    while added < tests.min(JOBS) {
        add(&mut set, added)?;
        added += 1;
    }
    let (mut wrong, mut counts, mut warned) = (0, [0usize; 4], false);
    while let Some(((n, started), result)) = set.next() {
        if added < tests {
            add(&mut set, added)?;
            added += 1;
        }
        let (name, _, _, expect) = test(n);
        let finished = result?;
        let report = finished.leak_report();
        let outcome = finished.outcome();
        let verdict = match outcome {
            Outcome::TimedOut(_) => Expect::TimedOut,
            _ if report.leaks().is_some_and(|leaks| !leaks.is_empty()) => Expect::Leaks,
            _ if outcome.status().success() => Expect::Pass,
            _ => Expect::Fail,
        };
        counts[verdict as usize] += 1;
        let took = started.elapsed().as_secs_f64();
        let stderr = match &finished {
            Finished::Captured(out) => String::from_utf8_lossy(&out.stderr).trim().to_owned(),
            Finished::Waited(..) => String::new(),
        };
        // A runner's line: the verdict, then what the job left behind (always for a leak or a timeout, and where the
        // boundary could not see everything).
        let label = ["PASS", "FAIL", "TIMEOUT", "LEAK"][verdict as usize];
        if !name.ends_with("passes") {
            println!("{label:>7} [{took:6.3} s] {name}: {outcome}; {report}; stderr {stderr:?}");
        } else if n % 100 == 0 {
            println!("{label:>7} [{took:6.3} s] {name}");
        }
        if report.seen != Seen::WholeJob && !warned {
            println!(
                "  NOTE: this boundary does not see the whole job ({:?}): {report}",
                report.seen
            );
            warned = true;
        }
        // The example checks itself; a plain group's report is not checked (it cannot tell).
        let seen_all = report.seen != Seen::Nothing;
        let right = match expect {
            Expect::Leaks if seen_all => report.leaks().is_some_and(|l| {
                l.len() == 1 && l.iter().all(|left| dead(left.pid) && left.name == "sleep")
            }),
            Expect::TimedOut => outcome.timed_out() && report.leaks().is_none_or(<[_]>::is_empty),
            Expect::Leaks => true,
            _ => verdict == expect,
        };
        if !right {
            println!("  WRONG: {name} was to be reported as {expect:?}");
            wrong += 1;
        }
    }
    let [pass, fail, timed_out, leaked] = counts;
    println!(
        "{tests} tests in {:.2} s, {JOBS} at a time: {pass} passed, {fail} failed, {timed_out} timed out, {leaked} \
         leaked; {}",
        start.elapsed().as_secs_f64(),
        if wrong == 0 { "as expected" } else { "WRONG" }
    );
    Ok(if wrong == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
