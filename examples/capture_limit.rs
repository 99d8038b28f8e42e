//! Capturing what noisy commands write, with bounded memory: the head and the tail of each stream are kept, with a
//! marker saying how much was left out between them.
//!
//! The first command writes about 860 KB and exits with an error; the second writes until its deadline.
//!
//! ```sh
//! cargo run --example capture_limit
//! ```

use std::io;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use grouptimeout::{Captured, GroupCommandExt};

/// A build log of 20,000 lines, then an error on standard error.
const BUILD: &str = r#"
i=1
while [ $i -le 20000 ]; do echo "step $i of 20000: compiling module_$i"; i=$((i + 1)); done
echo "error: step 20000 left module_20000 broken" >&2
exit 1
"#;

/// Numbered lines, for ever.
const ENDLESS: &str = r#"i=1; while :; do echo "line $i"; i=$((i + 1)); done"#;

fn main() -> io::Result<()> {
    // Keep 256 bytes of each stream: the first 128 and the last 128.
    let limit = 256;

    let captured = run(
        "a build log of 20,000 lines and an error",
        BUILD,
        limit,
        Duration::from_secs(30),
    )?;
    assert!(
        !captured.outcome.timed_out() && captured.stdout_truncated && !captured.stderr_truncated
    );

    let captured = run(
        "numbered lines, for ever",
        ENDLESS,
        limit,
        Duration::from_millis(500),
    )?;
    assert!(captured.outcome.timed_out() && captured.stdout_truncated);
    Ok(())
}

fn run(what: &str, script: &str, limit: usize, timeout: Duration) -> io::Result<Captured> {
    println!("== {what}: {timeout:?} to finish, at most {limit} bytes kept per stream");
    let mut child = Command::new("sh")
        .args(["-c", script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn_group()?;
    child.set_output_limit(limit);
    let started = Instant::now();
    let captured = child.wait_with_output_timeout(timeout)?;

    let how = if captured.outcome.timed_out() {
        "timed out, the group was killed"
    } else {
        "exited"
    };
    println!(
        "{how} after {:.2?}: {}",
        started.elapsed(),
        captured.outcome.status()
    );
    show("stdout", &captured.stdout, captured.stdout_truncated);
    show("stderr", &captured.stderr, captured.stderr_truncated);
    println!();
    Ok(captured)
}

fn show(name: &str, bytes: &[u8], truncated: bool) {
    let cut = if truncated {
        ": the head and the tail, and a marker between them"
    } else {
        ", all of it"
    };
    println!("{name}, {} bytes{cut}:", bytes.len());
    // The cut counts bytes, so it may split a line (or a UTF-8 sequence): display it lossily.
    for line in String::from_utf8_lossy(bytes).lines() {
        println!("  | {line}");
    }
}
