//! Cancelling a running job from another thread: the thread that waits holds the `GroupChild`, a `GroupHandle`
//! lets any other thread stop the whole group meanwhile (a "stop" button, a closed pull request).
//!
//! ```sh
//! cargo run --example cancel_from_thread
//! ```

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, ExitCode};
use std::thread;
use std::time::{Duration, Instant};

use grouptimeout::{signal, GroupCommandExt, Outcome};

fn main() -> io::Result<ExitCode> {
    // A job that would run for a minute, with a background child of its own.
    let mut child = Command::new("sh")
        .args(["-c", "sleep 60 & sleep 60"])
        .spawn_group()?;
    let handle = child.handle();
    println!("job: process group {}", handle.id());

    let canceller = {
        let handle = handle.clone();
        thread::spawn(move || {
            thread::sleep(Duration::from_millis(300));
            println!(
                "canceller: the user pressed stop; killing group {}",
                handle.id()
            );
            handle.kill()
        })
    };

    let started = Instant::now();
    let outcome = child.wait_timeout(Duration::from_secs(60))?;
    canceller.join().expect("the canceller does not panic")?;
    println!(
        "waiter: the wait returned after {:?}: {outcome:?}",
        started.elapsed()
    );
    // After the reap the handle sends nothing: the group id may belong to someone else by now.
    handle.kill()?;
    println!("a kill through the handle after the reap does nothing and returns Ok");

    let killed =
        matches!(outcome, Outcome::Exited(status) if status.signal() == Some(signal::SIGKILL));
    if killed && started.elapsed() < Duration::from_secs(10) {
        println!("ok: the job was cancelled at once, and its whole group with it");
        Ok(ExitCode::SUCCESS)
    } else {
        println!("unexpected: {outcome:?} after {:?}", started.elapsed());
        Ok(ExitCode::FAILURE)
    }
}
