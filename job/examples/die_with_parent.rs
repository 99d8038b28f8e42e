//! A supervisor that dies without running any destructor (here it is sent `SIGKILL`, as the OOM killer does; an
//! abort with `panic = "abort"` is the same): without `die_with_parent` its job keeps running, with it the job dies
//! too.
//!
//! The example runs itself twice as the supervisor, which starts a job (a shell with a background `sleep`), prints
//! the job's pids and is killed; then it checks with `ps` which of them are still alive two seconds later.
//!
//! ```sh
//! cargo run --example die_with_parent
//! ```

use std::io::{self, BufRead, BufReader, Write};
use std::process::{Command, ExitCode, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use grouptimeout::GroupCommandExt;
use grouptimeout_job::JobChildExt as _;

fn main() -> io::Result<ExitCode> {
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() == Some("supervise") {
        return supervise(args.next().as_deref() == Some("guarded"));
    }
    let mut ok = true;
    for guarded in [false, true] {
        println!(
            "supervisor {} die_with_parent:",
            if guarded { "with" } else { "without" }
        );
        let pids = run_supervisor(guarded)?;
        let alive = alive_after(&pids, Duration::from_secs(2));
        println!("  two seconds after its death, alive: {alive:?}");
        ok &= if guarded {
            alive.is_empty()
        } else {
            alive.len() == pids.len()
        };
        // Clean up what the unguarded run left behind (by pid: those processes are not ours).
        if !alive.is_empty() {
            let _ = Command::new("kill")
                .arg("-KILL")
                .args(alive.iter().map(u32::to_string))
                .status();
        }
    }
    if ok {
        println!("ok: the guarded job died with its supervisor, the unguarded one outlived it");
        Ok(ExitCode::SUCCESS)
    } else {
        println!("unexpected");
        Ok(ExitCode::FAILURE)
    }
}

/// Runs this program as a supervisor, reads the job's pids it prints, and waits for it to be killed.
fn run_supervisor(guarded: bool) -> io::Result<Vec<u32>> {
    let mut supervisor = Command::new(std::env::current_exe()?)
        .args(["supervise", if guarded { "guarded" } else { "unguarded" }])
        .stdout(Stdio::piped())
        .spawn()?;
    let out = supervisor.stdout.take().expect("stdout is piped");
    let line = BufReader::new(out)
        .lines()
        .next()
        .expect("a line of pids")?;
    let pids = line
        .split_whitespace()
        .map(|p| p.parse().expect("a pid"))
        .collect();
    println!("  job pids {pids:?}; the supervisor is killed");
    let status = supervisor.wait()?;
    println!("  supervisor ended: {status}");
    Ok(pids)
}

/// The supervisor: starts the job, prints its pids, and has itself killed with the job running.
fn supervise(guarded: bool) -> io::Result<ExitCode> {
    let mut job = Command::new("sh")
        .args(["-c", "sleep 60 & echo $! $$; wait"])
        .stdout(Stdio::piped())
        .spawn_group()?;
    if guarded {
        job.die_with_parent()?;
    }
    let mut line = String::new();
    BufReader::new(job.stdout.take().expect("stdout is piped")).read_line(&mut line)?;
    print!("{line}");
    io::stdout().flush()?;
    Command::new("kill")
        .args(["-KILL", &std::process::id().to_string()])
        .status()?;
    unreachable!("SIGKILL ends this process");
}

/// The pids in `pids` still alive (not gone, not a zombie) once `limit` has passed or all are dead.
fn alive_after(pids: &[u32], limit: Duration) -> Vec<u32> {
    let end = Instant::now() + limit;
    loop {
        let alive: Vec<u32> = pids.iter().copied().filter(|&p| is_alive(p)).collect();
        if alive.is_empty() || Instant::now() >= end {
            return alive;
        }
        thread::sleep(Duration::from_millis(50));
    }
}

/// Whether `pid` runs, according to `ps` (a zombie, `Z`, runs no more code).
fn is_alive(pid: u32) -> bool {
    Command::new("ps")
        .args(["-o", "stat=", "-p", &pid.to_string()])
        .output()
        .is_ok_and(|out| {
            let stat = String::from_utf8_lossy(&out.stdout);
            !stat.trim().is_empty() && !stat.trim().starts_with('Z')
        })
}
