//! How a wait sleeps: on Linux until the leader's exit (a pidfd), elsewhere, or with `--cfg grouptimeout_no_pidfd`,
//! on the poll schedule. The checks that only hold on the pidfd path are gated on `PIDFD`; the rest hold on both.

mod common;

use std::fs;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use grouptimeout::{GroupChild, GroupCommandExt, Outcome};

const LONG: Duration = Duration::from_secs(60);

/// Whether this build sleeps on a pidfd (Linux, not turned off by the cfg).
const PIDFD: bool = cfg!(all(
    target_os = "linux",
    not(grouptimeout_no_pidfd),
    not(grouptimeout_portable)
));

fn sh(script: &str) -> Command {
    let mut cmd = Command::new("sh");
    cmd.args(["-c", script]);
    cmd
}

/// Voluntary context switches of the calling thread so far: one per sleep that ended.
fn voluntary_switches() -> u64 {
    let status = fs::read_to_string("/proc/thread-self/status").expect("/proc/thread-self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("voluntary_ctxt_switches in /proc/thread-self/status")
}

/// Runs `wait` and returns its result with the count of this thread's wake-ups during it.
fn wakeups_of<T>(wait: impl FnOnce() -> T) -> (T, u64) {
    let before = voluntary_switches();
    let result = wait();
    (result, voluntary_switches() - before)
}

/// The most wake-ups a wait of about a second may take on the pidfd path: it sleeps once, plus the few of the
/// signals and the reap. The poll schedule takes about 100 for the same wait.
const FEW: u64 = 20;

#[test]
fn a_wait_sleeps_until_the_exit() {
    let mut child = Command::new("sleep").arg("1").spawn_group().unwrap();
    let (outcome, wakeups) = wakeups_of(|| child.wait_timeout(LONG).unwrap());
    assert!(!outcome.timed_out() && outcome.status().success());
    if PIDFD {
        assert!(wakeups <= FEW, "{wakeups} wake-ups in a wait on `sleep 1`");
    }
    // The same without a deadline.
    let mut child = Command::new("sleep").arg("1").spawn_group().unwrap();
    let (status, wakeups) = wakeups_of(|| child.wait().unwrap());
    assert!(status.success());
    if PIDFD {
        assert!(wakeups <= FEW, "{wakeups} wake-ups in wait() on `sleep 1`");
    }
}

#[test]
fn a_grace_period_sleeps_until_the_exit() {
    // The group ignores SIGTERM (inherited `trap ''`), so the grace period lasts until `sleep 1` ends.
    let mut child = sh("trap '' TERM; sleep 1").spawn_group().unwrap();
    child.set_grace(libc::SIGTERM, LONG);
    let (outcome, wakeups) = wakeups_of(|| child.wait_timeout(Duration::from_millis(50)).unwrap());
    assert!(outcome.timed_out());
    assert!(outcome.status().success(), "{outcome:?}");
    if PIDFD {
        assert!(
            wakeups <= FEW,
            "{wakeups} wake-ups in a grace period of about 1 s"
        );
    }
}

#[test]
#[cfg(feature = "capture")]
fn a_capturing_wait_sleeps_until_the_exit_or_output() {
    // Output at the start, then a second of silence with the pipes open.
    let child = sh("echo start; sleep 1; echo end >&2")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn_group()
        .unwrap();
    let (captured, wakeups) = wakeups_of(|| child.wait_with_output_timeout(LONG).unwrap());
    assert!(!captured.outcome.timed_out() && captured.pipes_closed);
    assert_eq!(
        (&captured.stdout[..], &captured.stderr[..]),
        (&b"start\n"[..], &b"end\n"[..])
    );
    if PIDFD {
        assert!(wakeups <= FEW, "{wakeups} wake-ups capturing a 1 s command");
    }
    // Pipes closed early (redirected by the command), leader still running: the sleep is on the pidfd alone.
    let child = sh("exec >/dev/null 2>&1; sleep 1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn_group()
        .unwrap();
    let (captured, wakeups) = wakeups_of(|| child.wait_with_output_timeout(LONG).unwrap());
    assert!(!captured.outcome.timed_out() && captured.outcome.status().success());
    if PIDFD {
        assert!(wakeups <= FEW, "{wakeups} wake-ups after the pipes closed");
    }
}

/// Descriptors of this process that are pidfds.
fn own_pidfds() -> usize {
    fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd")
        .flatten()
        .filter(|e| fs::read_link(e.path()).is_ok_and(|l| l.to_string_lossy().contains("pidfd")))
        .count()
}

#[test]
fn finished_waits_hold_no_descriptor() {
    // Counting this process's descriptors needs a process with no other test running: run it alone.
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "pidfds_of_finished_waits",
            "--test-threads=1",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Run alone by `finished_waits_hold_no_descriptor`.
#[test]
#[ignore = "run by finished_waits_hold_no_descriptor"]
fn pidfds_of_finished_waits() {
    let before = own_pidfds();
    // A wait that sleeps holds one pidfd while it sleeps; the leader exits once another thread saw it.
    let mut reader = Command::new("cat")
        .stdin(Stdio::piped())
        .spawn_group()
        .unwrap();
    let _cleanup = KillOnDrop::new(vec![reader.id()]);
    assert_eq!(own_pidfds(), before, "a pidfd before any wait");
    let stdin = reader.stdin.take().unwrap();
    let observer = std::thread::spawn(move || {
        // Without a pidfd there is nothing to see: give up soon.
        let limit = Duration::from_millis(if PIDFD { 10_000 } else { 200 });
        let seen = eventually(limit, || own_pidfds() > before);
        drop(stdin);
        seen
    });
    let outcome = reader.wait_timeout(LONG).unwrap();
    assert!(outcome.status().success(), "{outcome:?}");
    assert_eq!(observer.join().unwrap(), PIDFD, "no pidfd during the wait");
    assert_eq!(own_pidfds(), before, "the reap kept a pidfd");
    let mut running = Command::new("sleep").arg("30").spawn_group().unwrap();
    let cleanup = KillOnDrop::new(vec![running.id()]);
    assert!(running
        .wait_timeout(Duration::from_millis(1))
        .unwrap()
        .timed_out());
    drop(running);
    drop(cleanup);
    let running = Command::new("sleep").arg("30").spawn_group().unwrap();
    let cleanup = KillOnDrop::new(vec![running.id()]);
    drop(running);
    drop(cleanup);
    assert_eq!(own_pidfds(), before, "the drop kept a pidfd");
    // Finished handles kept alive: every way of finishing closes the pidfd at the reap.
    let mut finished: Vec<GroupChild> = Vec::new();
    for i in 0..30 {
        let mut child = Command::new("true").spawn_group().unwrap();
        match i % 3 {
            0 => assert!(child.wait().unwrap().success()),
            1 => {
                while child.try_wait().unwrap().is_none() {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            _ => assert!(matches!(
                child.wait_timeout(LONG).unwrap(),
                Outcome::Exited(_)
            )),
        }
        finished.push(child);
    }
    let mut timed_out = Command::new("sleep").arg("30").spawn_group().unwrap();
    assert!(timed_out
        .wait_timeout(Duration::from_millis(10))
        .unwrap()
        .timed_out());
    finished.push(timed_out);
    assert_eq!(own_pidfds(), before, "finished waits hold pidfds");
    // An exit fd: one pidfd, the same on each call, also for the waits, closed at the reap or the drop.
    if PIDFD {
        use std::os::fd::AsRawFd as _;
        let mut child = Command::new("sleep").arg("0.2").spawn_group().unwrap();
        let fd = child.exit_fd().unwrap().as_raw_fd();
        assert_eq!(child.exit_fd().unwrap().as_raw_fd(), fd, "a second pidfd");
        assert_eq!(own_pidfds(), before + 1);
        while child.try_wait().unwrap().is_none() {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(own_pidfds(), before, "try_wait's reap kept the exit fd");
        let mut child = Command::new("sleep").arg("0.2").spawn_group().unwrap();
        child.exit_fd().unwrap();
        assert!(child.wait().unwrap().success());
        assert_eq!(own_pidfds(), before, "wait's reap kept the exit fd");
        let mut child = Command::new("sleep").arg("30").spawn_group().unwrap();
        let _cleanup = KillOnDrop::new(vec![child.id()]);
        child.exit_fd().unwrap();
        assert_eq!(own_pidfds(), before + 1);
        drop(child);
        assert_eq!(own_pidfds(), before, "the drop kept the exit fd");
    }
}

#[test]
#[cfg(feature = "capture")]
fn commands_inherit_no_pidfd() {
    let running = Command::new("sleep").arg("30").spawn_group().unwrap();
    let _cleanup = KillOnDrop::new(vec![running.id()]);
    let lister = sh("ls -l /proc/$$/fd")
        .stdout(Stdio::piped())
        .spawn_group()
        .unwrap();
    let captured = lister.wait_with_output_timeout(LONG).unwrap();
    assert!(captured.outcome.status().success());
    let listing = String::from_utf8_lossy(&captured.stdout);
    assert!(listing.contains(" -> "), "{listing}");
    assert!(
        !listing.contains("pidfd"),
        "a command inherited a pidfd:\n{listing}"
    );
}

fn tracer_pid(pid: u32) -> Option<u32> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("TracerPid:"))?
        .trim()
        .parse()
        .ok()
}

#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
#[test]
fn a_leader_traced_by_another_process_is_waited_for_without_spinning() {
    // A traced leader's exit is seen by its tracer first: its pidfd is readable while `waitid` in its parent
    // still says "running", until the tracer lets go of it. The wait must not spin meanwhile. The leader, `cat`,
    // exits when its standard input is closed, once the tracer holds it.
    let mut leader = Command::new("cat")
        .stdin(Stdio::piped())
        .spawn_group()
        .unwrap();
    let leader_stdin = leader.stdin.take().unwrap();
    let test = "a_leader_traced_by_another_process_is_waited_for_without_spinning";
    let Some((mut tracer, _cleanup)) = common::seize(test, leader.id()) else {
        return;
    };
    assert_eq!(tracer_pid(leader.id()), Some(tracer.id()));
    drop(leader_stdin);
    if PIDFD {
        // An event loop sees the exit fd readable while the tracer holds the exit (exit_fd's docs); the wait below
        // then sleeps on that same pidfd, and must not spin either.
        assert!(readable_within(leader.exit_fd().unwrap(), LONG));
    }
    let cpu = thread_cpu();
    let outcome = leader.wait_timeout(LONG).unwrap();
    let cpu = thread_cpu().checked_sub(cpu).unwrap();
    assert!(
        !outcome.timed_out() && outcome.status().success(),
        "{outcome:?}"
    );
    // The tracer holds the exit for about 2 s; a spinning wait burns most of that.
    assert!(
        cpu < Duration::from_millis(300),
        "the wait used {cpu:?} of CPU while the tracer held the exit"
    );
    assert!(tracer.wait().unwrap().success());
}

/// Whether `fd` turns readable within `limit` (one `poll(2)`).
fn readable_within(fd: std::os::fd::BorrowedFd<'_>, limit: Duration) -> bool {
    use std::os::fd::AsRawFd as _;
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = libc::c_int::try_from(limit.as_millis()).unwrap();
    // SAFETY: one live pollfd, its count 1.
    let n = unsafe { libc::poll(&raw mut pfd, 1, ms) };
    assert!(n >= 0, "poll: {}", std::io::Error::last_os_error());
    n == 1 && pfd.revents & libc::POLLIN != 0
}

#[test]
fn the_exit_fd_turns_readable_at_the_exit_and_try_wait_kills_the_leftovers() {
    // The leader leaves a `sleep` in its group and exits 5 once its standard input is closed.
    let mut child = sh("sleep 30 & echo $!; read x; exit 5")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn_group()
        .unwrap();
    let leftover = read_pid(child.stdout.take().unwrap());
    let _cleanup = KillOnDrop::new(vec![leftover, child.id()]);
    let fd = child.exit_fd();
    assert_eq!(fd.is_ok(), PIDFD, "{fd:?}");
    match fd {
        Ok(fd) => {
            assert!(
                !readable_within(fd, Duration::ZERO),
                "readable while the leader runs"
            );
        }
        Err(e) => {
            assert_eq!(e.kind(), std::io::ErrorKind::Unsupported, "{e}");
            let why = if cfg!(grouptimeout_portable) {
                "grouptimeout_portable"
            } else {
                "grouptimeout_no_pidfd"
            };
            assert!(e.to_string().contains(why), "{e}");
            return;
        }
    }
    drop(child.stdin.take());
    let fd = child.exit_fd().unwrap();
    assert!(
        readable_within(fd, LONG),
        "not readable after the leader's exit"
    );
    let status = child
        .try_wait()
        .unwrap()
        .expect("readable, yet try_wait says running");
    assert_eq!(status.code(), Some(5));
    assert_eq!(
        survivors_after(Duration::from_secs(5), &[leftover]),
        [leftover; 0],
        "try_wait left the group's sleep running"
    );
    let err = child.exit_fd().unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput, "{err}");
}

#[test]
#[cfg(feature = "capture")]
fn the_exit_fd_is_close_on_exec() {
    use std::os::fd::AsRawFd as _;
    let mut child = Command::new("sleep").arg("30").spawn_group().unwrap();
    let _cleanup = KillOnDrop::new(vec![child.id()]);
    let fd = child.exit_fd();
    assert_eq!(fd.is_ok(), PIDFD, "{fd:?}");
    let Ok(fd) = fd else {
        return;
    };
    // SAFETY: F_GETFD on a descriptor that stays open during the call.
    let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFD) };
    assert!(flags >= 0 && flags & libc::FD_CLOEXEC != 0, "flags {flags}");
    // And a command spawned while it is open does not get it.
    let lister = sh("ls -l /proc/$$/fd")
        .stdout(Stdio::piped())
        .spawn_group()
        .unwrap();
    let listing = lister.wait_with_output_timeout(LONG).unwrap().stdout;
    assert!(!String::from_utf8_lossy(&listing).contains("pidfd"));
}

#[test]
fn a_deadline_in_the_sleep_is_kept() {
    // The sleep on the pidfd ends at the deadline, never before.
    let mut child = Command::new("sleep").arg("30").spawn_group().unwrap();
    let deadline = Instant::now() + Duration::from_millis(200);
    let outcome = child.wait_deadline(deadline).unwrap();
    assert!(Instant::now() >= deadline && outcome.timed_out());
}
