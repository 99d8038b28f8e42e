//! Four jobs waited from one thread with a `JobSet`, reported in the order they end:
//!
//! - `quick` exits with status 3 after 0.2 s;
//! - `leaves a child` starts `sleep 60` in the background and exits after 0.5 s: the set kills the `sleep` before it
//!   reports the job;
//! - `too slow` runs past its deadline of 1 s: it gets `SIGTERM`, ignores it, and is killed 0.3 s later;
//! - `captured` writes a line on each stream (added with `add_captured`, so its output comes with it), and is added
//!   after the first job ended.
//!
//! The example checks the outcomes and the order, and that the background `sleep` is gone (in `/proc`, where there
//! is one), and exits non-zero if something is wrong.
//!
//! ```sh
//! cargo run -p grouptimeout-set --example job_set
//! ```

use std::io::{self, BufRead, BufReader};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use grouptimeout::{signal, GroupCommandExt};
use grouptimeout_set::{Finished, JobSet};

fn main() -> io::Result<ExitCode> {
    let start = Instant::now();
    let mut set = JobSet::new()?;
    let in_a_while = |ms| Some(start + Duration::from_millis(ms));

    set.add(
        "quick",
        Command::new("sh")
            .args(["-c", "sleep 0.2; exit 3"])
            .spawn_group()?,
        in_a_while(10_000),
    )?;

    let mut leaves = Command::new("sh")
        .args(["-c", "sleep 60 >/dev/null & echo $!; sleep 0.5"])
        .stdout(Stdio::piped())
        .spawn_group()?;
    let mut line = String::new();
    BufReader::new(leaves.stdout.take().expect("piped")).read_line(&mut line)?;
    let background: u32 = line
        .trim()
        .parse()
        .expect("the shell printed the pid of its sleep");
    set.add("leaves a child", leaves, in_a_while(10_000))?;

    let mut slow = Command::new("sh")
        .args(["-c", "trap '' TERM; sleep 60"])
        .spawn_group()?;
    slow.set_grace(signal::SIGTERM, Duration::from_millis(300));
    set.add("too slow", slow, in_a_while(1_000))?;

    let mut order = Vec::new();
    let mut ok = true;
    while let Some((name, result)) = set.next() {
        let at = start.elapsed();
        let finished = result?;
        println!(
            "{:>6.3} s  {name}: {}",
            at.as_secs_f64(),
            finished.outcome()
        );
        if name == "quick" {
            // Added between calls.
            let child = Command::new("sh")
                .args(["-c", "echo out; echo err >&2"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn_group()?;
            set.add_captured("captured", child, in_a_while(10_000))?;
        }
        let outcome = finished.outcome();
        ok &= match name {
            "quick" => outcome.status().code() == Some(3),
            "leaves a child" => outcome.status().success(),
            "too slow" => {
                use std::os::unix::process::ExitStatusExt as _;
                outcome.timed_out() && outcome.status().signal() == Some(signal::SIGKILL)
            }
            _ => match &finished {
                Finished::Captured(out) => out.stdout == b"out\n" && out.stderr == b"err\n",
                Finished::Waited(..) => false,
            },
        };
        order.push(name);
    }
    ok &= order == ["quick", "captured", "leaves a child", "too slow"];
    // Gone, or a zombie of init's by now (`/proc` on Linux; elsewhere not checked).
    let proc_stat = std::fs::read_to_string(format!("/proc/{background}/stat")).unwrap_or_default();
    let running = proc_stat
        .rsplit(')')
        .next()
        .is_some_and(|rest| !rest.trim_start().starts_with(['Z', 'X']));
    if running && !proc_stat.is_empty() {
        println!("the background sleep {background} is still running");
        ok = false;
    }
    println!(
        "order {order:?}: {}",
        if ok { "as expected" } else { "WRONG" }
    );
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
