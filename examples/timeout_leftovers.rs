//! A job that starts background children and then runs past its deadline: the whole group is stopped, not just
//! the shell that `std::process::Child::kill` would end.
//!
//! The shell reports the pid of each member of its group; at the deadline the group gets `SIGTERM`, with half a
//! second of grace before `SIGKILL`; then the example shows what became of each member (with `ps`).
//!
//! ```sh
//! cargo run --example timeout_leftovers
//! ```

use std::io::{self, BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitCode, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use grouptimeout::{signal, GroupCommandExt, Outcome};

/// Two background jobs, one of which ignores `SIGTERM`; each line says "PID what". Then the shell waits for them.
const SCRIPT: &str = r#"
sleep 60 & echo "$! sleep 60, in the background"
(trap '' TERM; sleep 60) & echo "$! sleep 60, in the background, ignoring SIGTERM"
echo "$$ sh, the leader, waiting for both"
wait
"#;

fn main() -> io::Result<ExitCode> {
    let mut child = Command::new("sh")
        .args(["-c", SCRIPT])
        .stdout(Stdio::piped())
        .spawn_group()?;
    child.set_grace(signal::SIGTERM, Duration::from_millis(500));
    let started = Instant::now();

    // The three lines, read before the wait: by then every member has been started.
    let mut members = Vec::new();
    for line in BufReader::new(child.stdout.take().expect("stdout is piped")).lines() {
        let line = line?;
        let (pid, what) = line.split_once(' ').expect("a line is \"PID what\"");
        members.push((pid.parse::<u32>().expect("a pid"), what.to_string()));
        if members.len() == 3 {
            break;
        }
    }
    println!("process group {} runs:", child.id());
    for (pid, what) in &members {
        println!("  {pid:>7}  {what}");
    }

    let timeout = Duration::from_secs(1);
    println!(
        "\nwaiting at most {timeout:?}, then SIGTERM, then SIGKILL after {:?} of grace",
        Duration::from_millis(500)
    );
    match child.wait_timeout(timeout)? {
        Outcome::Exited(status) => {
            println!("the leader exited by itself ({}): unexpected", describe(status));
            return Ok(ExitCode::FAILURE);
        }
        Outcome::TimedOut(status) => println!(
            "timed out: the group was sent SIGTERM, the leader {}, which ended the grace period, and the group was \
             sent SIGKILL; the wait returned after {:.2?}",
            describe(status),
            started.elapsed(),
        ),
        Outcome::Idle(_) => unreachable!("only a capture with an idle timeout ends idle"),
    }

    // A killed process is gone for every purpose at once, but the kernel may need a moment to tear it down.
    // The background jobs were orphaned when the leader died: whoever adopted them (init) reaps them, maybe late.
    println!("\nafterwards:");
    if Command::new("ps")
        .arg("-p1")
        .stdout(Stdio::null())
        .status()
        .is_err()
    {
        println!("  (cannot show the states: ps(1) is not installed)");
        return Ok(ExitCode::SUCCESS);
    }
    let mut running = 0;
    for (pid, what) in &members {
        let state = settled_state(*pid);
        let verdict = match state.as_deref() {
            None => "gone",
            Some(s) if s.starts_with('Z') => {
                "dead (a zombie until the process that adopted it reaps it)"
            }
            Some(_) => {
                running += 1;
                "STILL RUNNING"
            }
        };
        println!("  {pid:>7}  {verdict:<58}  ({what})");
    }
    if running == 0 {
        println!("\nno process of the group is left running");
        Ok(ExitCode::SUCCESS)
    } else {
        Ok(ExitCode::FAILURE)
    }
}

/// "was killed by SIGTERM", "exited with status 0", ...
fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(signal::SIGTERM)) => "was killed by SIGTERM".to_string(),
        (None, Some(signal::SIGKILL)) => "was killed by SIGKILL".to_string(),
        (None, Some(signal)) => format!("was killed by signal {signal}"),
        (None, None) => format!("ended with {status}"),
    }
}

/// The `ps` state of `pid` (`None` once it is gone), given up to a second to stop running.
fn settled_state(pid: u32) -> Option<String> {
    let deadline = Instant::now() + Duration::from_secs(1);
    loop {
        let state = ps_state(pid);
        let dead = state.as_deref().is_none_or(|s| s.starts_with('Z'));
        if dead || Instant::now() >= deadline {
            return state;
        }
        thread::sleep(Duration::from_millis(10));
    }
}

/// The state column of `ps` for `pid` (`R`, `S`, `Z`, ...), or `None` when there is no such process.
fn ps_state(pid: u32) -> Option<String> {
    let out = Command::new("ps")
        .args(["-o", "stat=", "-p", &pid.to_string()])
        .stderr(Stdio::null())
        .output()
        .expect("ps(1) ran a moment ago");
    let state = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (!state.is_empty()).then_some(state)
}
