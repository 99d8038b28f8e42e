//! Capturing what noisy commands write, with bounded memory: the head and the tail of each stream are kept, with a
//! marker saying how much was left out between them (asked for with `set_omission_marker`; without it the count is
//! only in `Captured::stdout_omitted` / `stderr_omitted`).
//!
//! The first command writes about 860 KB and exits with an error, well before its generous deadline (30 s; it needs a
//! fraction of a second); the second writes until its deadline (500 ms).
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
    // Keep 256 bytes of each stream's output: the first 128 and the last 128 (plus the marker between them).
    let limit = 256;

    let captured = run(
        "a build log of 20,000 lines and an error",
        BUILD,
        limit,
        Duration::from_secs(30),
    )?;
    assert!(
        !captured.outcome.timed_out()
            && captured.stdout_omitted > 0
            && captured.stderr_omitted == 0
    );

    let captured = run(
        "numbered lines, for ever",
        ENDLESS,
        limit,
        Duration::from_millis(500),
    )?;
    assert!(captured.outcome.timed_out() && captured.stdout_omitted > 0);
    Ok(())
}

fn run(what: &str, script: &str, limit: usize, timeout: Duration) -> io::Result<Captured> {
    println!(
        "== {what}: a deadline of {timeout:?}; of each stream, at most {limit} bytes of output are kept, plus a marker"
    );
    let mut child = Command::new("sh")
        .args(["-c", script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn_group()?;
    child.set_output_limit(limit);
    child.set_omission_marker(true);
    let started = Instant::now();
    let captured = child.wait_with_output_timeout(timeout)?;

    // "exited with status 1", or "timed out; killed by signal 9" (the whole group was killed).
    println!("after {:.2?}: {}", started.elapsed(), captured.outcome);
    show("stdout", &captured.stdout, captured.stdout_omitted, limit);
    show("stderr", &captured.stderr, captured.stderr_omitted, limit);
    println!();
    Ok(captured)
}

fn show(name: &str, bytes: &[u8], omitted: u64, limit: usize) {
    if omitted > 0 {
        // Past the limit, exactly `limit` bytes of output are kept; the marker line comes on top.
        let marker = bytes.len() - limit;
        println!(
            "{name}, {} bytes: {limit} of output (the head and the tail), {omitted} left out, and a marker of \
             {marker} bytes between them:",
            bytes.len()
        );
    } else {
        println!("{name}, {} bytes, all of it:", bytes.len());
    }
    // The cut counts bytes, so it may split a line (or a UTF-8 sequence): display it lossily.
    for line in String::from_utf8_lossy(bytes).lines() {
        println!("  | {line}");
    }
}
