//! Behaviour of `wait_with_output_timeout` on real processes.
//!
//! Every process a test starts carries a per-test marker in its environment, so that the test can find its own
//! processes through `/proc/PID/environ` (also those that left the group), check that they are dead (state Z or X
//! in `/proc/PID/stat`, or gone), and kill any leftover with `kill -9 PID` whatever the outcome of the test.
//! Bounds are generous: other test suites may load the machine at the same time.

use std::fs;
use std::io::Write;
use std::os::unix::process::ExitStatusExt as _;
use std::process::{Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use grouptimeout::{signal, Captured, GroupCommandExt, Outcome, Stream};

mod common;
use common::{eventually, KillOnDrop};

const MARK_VAR: &str = "GROUPTIMEOUT_CAPTURE_TEST";

/// A per-test marker; on drop, kills every process still carrying it (and panics if asked to check it was done).
struct Marked {
    mark: String,
}

impl Marked {
    fn new(name: &str) -> Marked {
        Marked {
            mark: format!("{}-{name}", std::process::id()),
        }
    }

    /// `sh -c script` carrying the marker.
    fn sh(&self, script: &str) -> Command {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", script]).env(MARK_VAR, &self.mark);
        cmd
    }

    /// The live (not zombie) processes carrying the marker, each known by its start time too (see `KillOnDrop`).
    fn found(&self) -> KillOnDrop {
        let needle = format!("{MARK_VAR}={}\0", self.mark).into_bytes();
        KillOnDrop::scan(|pid| {
            fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|environ| environ.windows(needle.len()).any(|w| w == needle))
        })
    }

    /// The pids of live (not zombie) processes carrying the marker.
    fn alive(&self) -> Vec<u32> {
        self.found().into_pids()
    }

    /// Waits (bounded) until no process with the marker is alive; returns those still alive after the bound.
    fn wait_all_dead(&self, bound: Duration) -> Vec<u32> {
        let mut alive = Vec::new();
        eventually(bound, || {
            alive = self.alive();
            alive.is_empty()
        });
        alive
    }

    /// Kills every live process with the marker (`kill -9 PID`) and waits, bounded, until they are dead.
    fn kill_all(&self) {
        self.found().kill();
        let left = self.wait_all_dead(Duration::from_secs(10));
        assert!(left.is_empty(), "processes survived kill -9: {left:?}");
    }
}

impl Drop for Marked {
    fn drop(&mut self) {
        if thread::panicking() {
            self.found().kill();
        } else {
            self.kill_all();
        }
    }
}

fn piped(mut cmd: Command) -> Command {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd
}

fn exited_ok(captured: &Captured) -> bool {
    matches!(captured.outcome, Outcome::Exited(s) if s.success())
}

#[test]
fn escaped_process_holding_the_pipe_does_not_hang() {
    // Whether `setsid` runs before the group kill that follows the leader's exit is a race; either way the call
    // returns promptly with the output.
    let marked = Marked::new("escaped");
    let child = piped(marked.sh("setsid sleep 30 & echo hi"))
        .spawn_group()
        .unwrap();
    let start = Instant::now();
    let captured = child
        .wait_with_output_timeout(Duration::from_secs(60))
        .unwrap();
    let took = start.elapsed();
    assert!(exited_ok(&captured), "{captured:?}");
    assert_eq!(captured.stdout, b"hi\n");
    assert_eq!(captured.stderr, b"");
    assert!(took < Duration::from_secs(10), "took {took:?}");
    marked.kill_all();
}

/// A script that starts `cmd` in a new session (out of the group) and, once it has left the group, runs `then`.
fn escape_then(marked: &Marked, cmd: &str, then: &str) -> String {
    let flag = std::env::temp_dir().join(format!("grouptimeout-capture-{}", marked.mark));
    let flag = flag.to_str().unwrap();
    format!(
        "rm -f {flag}; setsid sh -c ': > {flag}; exec {cmd}' & \
         while ! [ -e {flag} ]; do sleep 0.01; done; rm -f {flag}; {then}"
    )
}

#[test]
fn escaped_process_surely_out_of_the_group_is_reported() {
    let marked = Marked::new("escaped-sure");
    let script = escape_then(&marked, "sleep 30", "echo hi");
    let child = piped(marked.sh(&script)).spawn_group().unwrap();
    let start = Instant::now();
    let captured = child
        .wait_with_output_timeout(Duration::from_secs(60))
        .unwrap();
    let took = start.elapsed();
    assert!(exited_ok(&captured), "{captured:?}");
    assert_eq!(captured.stdout, b"hi\n");
    assert!(!captured.pipes_closed, "the escaped sleep holds the pipes");
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert!(
        !marked.alive().is_empty(),
        "expected the escaped sleep to run"
    );
    marked.kill_all();
}

#[test]
fn escaped_writer_that_never_stops_is_bounded() {
    let marked = Marked::new("yes");
    let script = escape_then(&marked, "yes", "echo hi >&2");
    let mut child = piped(marked.sh(&script)).spawn_group().unwrap();
    child.set_output_limit(1 << 20);
    let start = Instant::now();
    let captured = child
        .wait_with_output_timeout(Duration::from_secs(60))
        .unwrap();
    assert!(start.elapsed() < Duration::from_secs(10));
    assert!(exited_ok(&captured), "{captured:?}");
    assert_eq!(captured.stderr, b"hi\n");
    assert!(!captured.pipes_closed);
    assert!(captured.stdout.len() <= (1 << 20) + 64);
    marked.kill_all();
}

/// Byte `i` of `yes 0123456789abcde` output.
fn pattern(i: usize) -> u8 {
    b"0123456789abcde\n"[i % 16]
}

#[test]
fn big_output_keeps_head_marker_and_tail() {
    const TOTAL: usize = 64 << 20;
    const LIMIT: usize = 1 << 20;
    let marked = Marked::new("big");
    let script = format!(
        "printf HEAD; yes 0123456789abcde | head -c {}; printf TAIL",
        TOTAL - 8
    );
    let mut child = piped(marked.sh(&script)).spawn_group().unwrap();
    child.set_output_limit(LIMIT);
    child.set_omission_marker(true);
    let captured = child
        .wait_with_output_timeout(Duration::from_secs(120))
        .unwrap();
    assert!(exited_ok(&captured), "{:?}", captured.outcome);
    assert_eq!(
        (captured.stdout_omitted, captured.stderr_omitted),
        ((TOTAL - LIMIT) as u64, 0)
    );
    assert!(captured.pipes_closed);

    let head = LIMIT / 2;
    let tail = LIMIT - head;
    let mut want = b"HEAD".to_vec();
    want.extend((0..head - 4).map(pattern));
    want.extend_from_slice(
        format!("\n[grouptimeout: {} bytes omitted]\n", TOTAL - LIMIT).as_bytes(),
    );
    // The tail is the pattern's last `tail - 4` bytes of TOTAL - 8, then TAIL.
    want.extend((TOTAL - 8 - (tail - 4)..TOTAL - 8).map(pattern));
    want.extend_from_slice(b"TAIL");
    assert_eq!(captured.stdout.len(), want.len());
    assert!(
        captured.stdout == want,
        "kept bytes differ from head + marker + tail"
    );
}

#[test]
fn output_exactly_at_the_limit_is_not_truncated() {
    let marked = Marked::new("exact");
    let mut child = piped(marked.sh("head -c 100000 /dev/zero; head -c 100001 /dev/zero >&2"))
        .spawn_group()
        .unwrap();
    child.set_output_limit(100_000);
    child.set_omission_marker(true);
    let captured = child
        .wait_with_output_timeout(Duration::from_secs(60))
        .unwrap();
    assert!(exited_ok(&captured));
    assert_eq!(captured.stdout, vec![0; 100_000]);
    assert_eq!(captured.stdout_omitted, 0);
    assert_eq!(captured.stderr_omitted, 1);
    let omitted_line = b"\n[grouptimeout: 1 bytes omitted]\n";
    assert_eq!(captured.stderr.len(), 100_000 + omitted_line.len());
    assert_eq!(
        &captured.stderr[50_000..50_000 + omitted_line.len()],
        omitted_line
    );
}

#[test]
fn both_streams_at_once_do_not_deadlock() {
    let marked = Marked::new("both");
    let script = "yes out | head -c 5000000 & yes err | head -c 5000000 >&2; wait";
    let child = piped(marked.sh(script)).spawn_group().unwrap();
    let captured = child
        .wait_with_output_timeout(Duration::from_secs(120))
        .unwrap();
    assert!(exited_ok(&captured), "{:?}", captured.outcome);
    assert_eq!(captured.stdout.len(), 5_000_000);
    assert_eq!(captured.stderr.len(), 5_000_000);
    assert!(captured.stdout.starts_with(b"out\nout\n"));
    assert!(captured.stderr.starts_with(b"err\nerr\n"));
    assert_eq!((captured.stdout_omitted, captured.stderr_omitted), (0, 0));
    assert!(captured.pipes_closed);
}

#[test]
fn a_flooded_pipe_starves_neither_the_other_nor_the_deadline() {
    let marked = Marked::new("flood");
    let script = "(while :; do echo tick >&2; sleep 0.05; done) & exec cat /dev/zero";
    let mut child = piped(marked.sh(script)).spawn_group().unwrap();
    child.set_output_limit(1 << 20);
    let start = Instant::now();
    let captured = child
        .wait_with_output_timeout(Duration::from_secs(1))
        .unwrap();
    let took = start.elapsed();
    assert!(captured.outcome.timed_out(), "{:?}", captured.outcome);
    assert!(
        took >= Duration::from_secs(1) && took < Duration::from_secs(15),
        "took {took:?}"
    );
    assert!(captured.stdout_omitted > 0);
    let ticks = captured
        .stderr
        .split(|&b| b == b'\n')
        .filter(|l| *l == b"tick")
        .count();
    assert!(
        ticks >= 3,
        "stderr while stdout was flooded: {:?}",
        captured.stderr
    );
    let left = marked.wait_all_dead(Duration::from_secs(10));
    assert!(
        left.is_empty(),
        "group members alive after the timeout: {left:?}"
    );
}

#[test]
fn timeout_returns_what_was_written_before() {
    let marked = Marked::new("timeout");
    let child = piped(marked.sh("echo start; echo oops >&2; sleep 30 & sleep 30; echo never"))
        .spawn_group()
        .unwrap();
    let start = Instant::now();
    let captured = child
        .wait_with_output_timeout(Duration::from_secs(2))
        .unwrap();
    let took = start.elapsed();
    assert!(captured.outcome.timed_out(), "{captured:?}");
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(15),
        "took {took:?}"
    );
    assert_eq!(captured.stdout, b"start\n");
    assert_eq!(captured.stderr, b"oops\n");
    let left = marked.wait_all_dead(Duration::from_secs(10));
    assert!(
        left.is_empty(),
        "group members alive after the timeout: {left:?}"
    );
}

#[test]
fn only_stdout_piped() {
    let marked = Marked::new("stdout");
    let child = marked
        .sh("echo out; echo err >&2")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn_group()
        .unwrap();
    let captured = child
        .wait_with_output_timeout(Duration::from_secs(60))
        .unwrap();
    assert!(exited_ok(&captured));
    assert_eq!(captured.stdout, b"out\n");
    assert_eq!(captured.stderr, b"");
    assert!(captured.pipes_closed);
}

#[test]
fn only_stderr_piped() {
    let marked = Marked::new("stderr");
    let child = marked
        .sh("echo out; echo err >&2; exit 3")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn_group()
        .unwrap();
    let captured = child
        .wait_with_output_timeout(Duration::from_secs(60))
        .unwrap();
    assert_eq!(captured.outcome.status().code(), Some(3));
    assert!(!captured.outcome.timed_out());
    assert_eq!(captured.stdout, b"");
    assert_eq!(captured.stderr, b"err\n");
}

#[test]
fn nothing_piped() {
    let marked = Marked::new("none");
    let child = marked
        .sh("echo out; sleep 30 & exit 0")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn_group()
        .unwrap();
    let captured = child
        .wait_with_output_timeout(Duration::from_secs(60))
        .unwrap();
    assert!(exited_ok(&captured));
    assert!(captured.stdout.is_empty() && captured.stderr.is_empty());
    assert!(captured.pipes_closed);
    let left = marked.wait_all_dead(Duration::from_secs(10));
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn nothing_piped_times_out() {
    let marked = Marked::new("none-timeout");
    let child = marked
        .sh("sleep 30")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn_group()
        .unwrap();
    let captured = child
        .wait_with_output_timeout(Duration::from_millis(300))
        .unwrap();
    assert!(captured.outcome.timed_out());
    let left = marked.wait_all_dead(Duration::from_secs(10));
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn stdin_is_closed_before_waiting() {
    let marked = Marked::new("stdin");
    let mut cmd = marked.sh("cat; echo done >&2");
    cmd.stdin(Stdio::piped());
    let mut child = piped(cmd).spawn_group().unwrap();
    child.stdin.as_mut().unwrap().write_all(b"hello\n").unwrap();
    // `cat` ends only if the wait closes its standard input.
    let captured = child
        .wait_with_output_timeout(Duration::from_secs(60))
        .unwrap();
    assert!(exited_ok(&captured), "{captured:?}");
    assert_eq!(captured.stdout, b"hello\n");
    assert_eq!(captured.stderr, b"done\n");
}

#[test]
fn leader_exiting_with_a_full_pipe_is_drained() {
    // The leader writes more than a pipe holds and exits at once; the rest is read after it was reaped.
    let marked = Marked::new("full");
    let child = piped(marked.sh("exec head -c 3000000 /dev/zero"))
        .spawn_group()
        .unwrap();
    let captured = child
        .wait_with_output_timeout(Duration::from_secs(60))
        .unwrap();
    assert!(exited_ok(&captured));
    assert_eq!(captured.stdout.len(), 3_000_000);
    assert!(captured.pipes_closed);
}

#[test]
fn deadline_variant_and_grace_period_keep_reading() {
    let marked = Marked::new("grace");
    let script = "trap 'echo got-term; exit 7' TERM; echo ready; while :; do sleep 0.05; done";
    let mut child = piped(marked.sh(script)).spawn_group().unwrap();
    child.set_grace(15, Duration::from_secs(10)); // SIGTERM
    let captured = child
        .wait_with_output_deadline(Instant::now() + Duration::from_secs(3))
        .unwrap();
    assert!(captured.outcome.timed_out());
    assert_eq!(captured.stdout, b"ready\ngot-term\n");
    assert_eq!(captured.outcome.status().code(), Some(7));
    let left = marked.wait_all_dead(Duration::from_secs(10));
    assert!(left.is_empty(), "{left:?}");
}

/// Issue 24.3: a cut stream keeps the command's own bytes (head, then tail, no marker unless asked for), and the count
/// of bytes left out is beside the data.
#[test]
fn truncation_is_reported_beside_the_data_without_a_marker() {
    let marked = Marked::new("omitted");
    let mut child =
        piped(marked.sh("head -c 1000 /dev/zero; printf END; head -c 10 /dev/zero >&2"))
            .spawn_group()
            .unwrap();
    child.set_output_limit(100);
    let captured = child
        .wait_with_output_timeout(Duration::from_secs(60))
        .unwrap();
    assert!(exited_ok(&captured), "{captured:?}");
    let mut want = vec![0; 50 + 47];
    want.extend_from_slice(b"END");
    assert_eq!(captured.stdout, want);
    assert_eq!(captured.stdout_omitted, 1003 - 100);
    assert_eq!(captured.stderr, vec![0; 10]);
    assert_eq!(captured.stderr_omitted, 0);
}

/// Issue 24.3: `output_timeout` pipes both streams itself, as `Command::output` does (a capturing wait of a child
/// whose streams were not piped gets nothing: the bytes went to this process's own stdout and stderr).
#[test]
fn output_timeout_pipes_both_streams_itself() {
    let marked = Marked::new("output");
    let captured = marked
        .sh("echo out; echo err >&2; exit 4")
        .output_timeout(Duration::from_secs(60))
        .unwrap();
    assert_eq!(captured.outcome.status().code(), Some(4));
    assert_eq!(captured.stdout, b"out\n");
    assert_eq!(captured.stderr, b"err\n");
    assert!(captured.pipes_closed);
}

/// Issue 24.3: input written while capturing, read back by `cat`.
#[test]
fn input_is_written_while_the_output_is_read() {
    let marked = Marked::new("input");
    let mut cmd = piped(marked.sh("cat; echo done >&2"));
    cmd.stdin(Stdio::piped());
    let mut child = cmd.spawn_group().unwrap();
    child.set_input(&b"hello\n"[..]).unwrap();
    let captured = child
        .wait_with_output_timeout(Duration::from_secs(60))
        .unwrap();
    assert!(exited_ok(&captured), "{captured:?}");
    assert_eq!(captured.stdout, b"hello\n");
    assert_eq!(captured.stderr, b"done\n");
    assert_eq!(captured.input_written, 6);
}

/// Issue 24.3: a command that writes more than a pipe holds before it reads its input (3 MB out, then 3 MB in):
/// neither side waits for the other.
#[test]
fn input_to_a_command_that_fills_its_output_first() {
    const BYTES: usize = 3_000_000;
    let marked = Marked::new("input-full");
    let mut cmd = piped(marked.sh(&format!("head -c {BYTES} /dev/zero; wc -c")));
    cmd.stdin(Stdio::piped());
    let mut child = cmd.spawn_group().unwrap();
    child.set_input(vec![b'x'; BYTES]).unwrap();
    let captured = child
        .wait_with_output_timeout(Duration::from_secs(60))
        .unwrap();
    assert!(exited_ok(&captured), "{:?}", captured.outcome);
    assert_eq!(captured.input_written, BYTES);
    assert_eq!(captured.stdout.len(), BYTES + format!("{BYTES}\n").len());
    assert_eq!(
        String::from_utf8_lossy(&captured.stdout[BYTES..]).trim(),
        BYTES.to_string()
    );
}

/// Issue 24.3: a command that never reads its input: the wait ends when the command exits (the input left in the
/// pipe dropped), or at the deadline, not blocked on the write.
#[test]
fn input_to_a_command_that_never_reads_it() {
    let marked = Marked::new("input-unread");
    let mut cmd = piped(marked.sh("echo started; sleep 0.2; echo done"));
    cmd.stdin(Stdio::piped());
    let mut child = cmd.spawn_group().unwrap();
    child.set_input(vec![b'x'; 1 << 20]).unwrap();
    let captured = child
        .wait_with_output_timeout(Duration::from_secs(60))
        .unwrap();
    assert!(exited_ok(&captured), "{:?}", captured.outcome);
    assert_eq!(captured.stdout, b"started\ndone\n");
    assert!(
        captured.input_written < 1 << 20,
        "{}",
        captured.input_written
    );

    let mut cmd = piped(marked.sh("echo started; sleep 30"));
    cmd.stdin(Stdio::piped());
    let mut child = cmd.spawn_group().unwrap();
    child.set_input(vec![b'x'; 1 << 20]).unwrap();
    // Its line is written before the deadline below starts (a loaded machine may start `sh` late).
    assert!(common::pipe_holds(child.stdout.as_ref().unwrap(), 8));
    let started = Instant::now();
    let captured = child
        .wait_with_output_timeout(Duration::from_millis(300))
        .unwrap();
    assert!(captured.outcome.timed_out());
    assert_eq!(captured.stdout, b"started\n");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the wait waited for the command"
    );
    let left = marked.wait_all_dead(Duration::from_secs(10));
    assert!(left.is_empty(), "{left:?}");
}

/// Issue 24.3: input needs a piped standard input; asking for it otherwise fails at once, and nothing is killed.
#[test]
fn input_needs_a_piped_stdin() {
    let marked = Marked::new("input-unpiped");
    let mut child = piped(marked.sh("echo ok")).spawn_group().unwrap();
    let e = child.set_input(&b"x"[..]).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    let captured = child
        .wait_with_output_timeout(Duration::from_secs(60))
        .unwrap();
    assert!(exited_ok(&captured));
    assert_eq!(captured.stdout, b"ok\n");
}

/// Issue 39.2: a command printing a line every 50 ms for 2 s, its standard output bounded at 1 KiB: the sink is handed
/// each chunk as it is read, the first line soon after it was written (long before the command ends), every byte once
/// and in order, while the capture keeps the head and the tail.
#[test]
fn the_sink_sees_output_as_it_comes_while_the_capture_keeps_head_and_tail() {
    let marked = Marked::new("sink");
    // Each line: its number, the wall clock time of its write in nanoseconds, padding; about 70 bytes.
    let script = "i=0; while [ $i -lt 40 ]; do i=$((i+1)); \
                  echo \"$i $(date +%s%N) ........................................\"; sleep 0.05; done";
    let mut child = piped(marked.sh(script)).spawn_group().unwrap();
    child.set_output_limit(1024);
    let (tx, rx) = mpsc::channel();
    child.set_output_sink(move |stream, bytes| {
        let _ = tx.send((stream, SystemTime::now(), bytes.to_vec()));
    });
    let captured = child
        .wait_with_output_timeout(Duration::from_secs(60))
        .unwrap();
    let ended = SystemTime::now();
    assert!(exited_ok(&captured), "{}", captured.outcome);
    let mut chunks: Vec<_> = rx.try_iter().collect();
    // Each stream's end of file is an empty chunk, once, after its last bytes (standard error wrote nothing else).
    let ends: Vec<_> = chunks.iter().filter(|(_, _, b)| b.is_empty()).collect();
    assert_eq!(ends.len(), 2, "{ends:?}");
    assert!(chunks
        .iter()
        .all(|(stream, _, b)| *stream == Stream::Stdout || b.is_empty()));
    let last_out = chunks
        .iter()
        .rposition(|(stream, _, _)| *stream == Stream::Stdout);
    assert!(chunks[last_out.unwrap()].2.is_empty());
    chunks.retain(|(_, _, bytes)| !bytes.is_empty());
    let all: Vec<u8> = chunks
        .iter()
        .flat_map(|(_, _, bytes)| bytes.clone())
        .collect();
    let text = String::from_utf8(all.clone()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 40, "{text}");
    for (i, line) in lines.iter().enumerate() {
        assert!(line.starts_with(&format!("{} ", i + 1)), "{line:?}");
    }
    // The first chunk came about when its first line was written, long before the command ended.
    let (_, seen, first) = &chunks[0];
    let first = String::from_utf8_lossy(first);
    let written: u64 = first.split(' ').nth(1).unwrap().parse().unwrap();
    let seen_ns = seen.duration_since(UNIX_EPOCH).unwrap().as_nanos();
    let latency = Duration::from_nanos(u64::try_from(seen_ns).unwrap().saturating_sub(written));
    let before_end = ended.duration_since(*seen).unwrap();
    eprintln!(
        "first line handed over {latency:?} after its write, {before_end:?} before the wait ended"
    );
    assert!(latency < Duration::from_secs(1), "{latency:?}");
    assert!(before_end > Duration::from_secs(1), "{before_end:?}");
    // Bounded at 1 KiB: the first 512 bytes and the last 512.
    assert!(all.len() > 2048, "{}", all.len());
    assert_eq!(
        captured.stdout,
        [&all[..512], &all[all.len() - 512..]].concat()
    );
    assert_eq!(captured.stdout_omitted, all.len() as u64 - 1024);
    assert!(captured.stderr.is_empty());
}

/// Issue 39.2: the limits of standard output and standard error apart, each with its own head.
#[test]
fn each_stream_has_its_own_limit_and_head() {
    let marked = Marked::new("stream-limits");
    let mut child = piped(marked.sh("seq 1 1000; seq 1001 2000 >&2"))
        .spawn_group()
        .unwrap();
    child.set_output_limit(1 << 20);
    child.set_stream_limit(Stream::Stdout, 1024, 100);
    child.set_stream_limit(Stream::Stderr, 300, 300);
    let (tx, rx) = mpsc::channel();
    child.set_output_sink(move |stream, bytes| {
        let _ = tx.send((stream, bytes.to_vec()));
    });
    let captured = child
        .wait_with_output_timeout(Duration::from_secs(60))
        .unwrap();
    assert!(exited_ok(&captured), "{}", captured.outcome);
    let lines = |range: std::ops::RangeInclusive<u32>| -> Vec<u8> {
        range.flat_map(|i| format!("{i}\n").into_bytes()).collect()
    };
    let (out, err) = (lines(1..=1000), lines(1001..=2000));
    // Standard output: its first 100 bytes and its last 924.
    assert_eq!(
        captured.stdout,
        [&out[..100], &out[out.len() - 924..]].concat()
    );
    assert_eq!(captured.stdout_omitted, out.len() as u64 - 1024);
    // Standard error: its first 300 bytes only.
    assert_eq!(captured.stderr, &err[..300]);
    assert_eq!(captured.stderr_omitted, err.len() as u64 - 300);
    // The sink saw each stream whole, whatever was kept.
    let mut seen = [Vec::new(), Vec::new()];
    for (stream, bytes) in rx.try_iter() {
        seen[stream as usize].extend_from_slice(&bytes);
    }
    assert!(seen[0] == out && seen[1] == err);
}

/// Issue 39.3: a command that prints, then hangs, leaving a background child in its group, everything ignoring
/// `SIGTERM`: about the idle time after its last byte the job is ended as at a deadline (the grace signal, the grace
/// period, `SIGKILL`, the whole job), and the outcome says idle.
#[test]
fn a_job_that_goes_quiet_is_ended_whole_at_its_idle_time() {
    let marked = Marked::new("idle");
    let script = "trap '' TERM; sleep 60 & echo $! >&2; echo started; sleep 60";
    let mut child = piped(marked.sh(script)).spawn_group().unwrap();
    let (idle, grace) = (Duration::from_millis(500), Duration::from_millis(300));
    child.set_idle_timeout(idle);
    child.set_grace(signal::SIGTERM, grace);
    let last = Arc::new(Mutex::new(None));
    let at = Arc::clone(&last);
    child.set_output_sink(move |_, bytes| {
        if !bytes.is_empty() {
            *at.lock().unwrap() = Some(Instant::now());
        }
    });
    let captured = child
        .wait_with_output_timeout(Duration::from_secs(60))
        .unwrap();
    let quiet = last.lock().unwrap().expect("output was seen").elapsed();
    let member = common::read_pid(&captured.stderr[..]);
    eprintln!(
        "ended {quiet:?} after the last byte was read: {}",
        captured.outcome
    );
    assert!(captured.outcome.idle() && !captured.outcome.timed_out());
    assert_eq!(
        captured.outcome.to_string(),
        "went idle; killed by signal 9"
    );
    assert_eq!(captured.outcome.status().signal(), Some(signal::SIGKILL));
    assert!(
        quiet >= idle + grace && quiet < Duration::from_secs(10),
        "{quiet:?}"
    );
    assert_eq!(captured.stdout, b"started\n");
    // The whole job: the leader, and the background child (pid `member`), which carries the marker too.
    let left = marked.wait_all_dead(Duration::from_secs(10));
    assert!(
        left.is_empty(),
        "{left:?} left (the background child was {member})"
    );
}

/// Issue 39.3: a command that keeps printing (a line every 50 ms for 2 s) past its idle time (1 s) is not ended by
/// it: it ends on its own, with all its output.
#[test]
fn a_job_that_keeps_printing_is_not_ended_by_its_idle_time() {
    let marked = Marked::new("busy");
    let script = "i=0; while [ $i -lt 40 ]; do i=$((i+1)); echo $i; sleep 0.05; done";
    let mut child = piped(marked.sh(script)).spawn_group().unwrap();
    child.set_idle_timeout(Duration::from_secs(1));
    let started = Instant::now();
    let captured = child
        .wait_with_output_timeout(Duration::from_secs(60))
        .unwrap();
    assert!(exited_ok(&captured), "{}", captured.outcome);
    assert!(started.elapsed() >= Duration::from_secs(2));
    let want = (1..=40)
        .map(|i| format!("{i}\n"))
        .collect::<Vec<_>>()
        .concat();
    assert_eq!(String::from_utf8_lossy(&captured.stdout), want);
}
