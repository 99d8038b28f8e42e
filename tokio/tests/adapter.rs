//! The adapter under tokio's current-thread and multi-thread runtimes: many concurrent jobs with deadlines and
//! capture, a future dropped mid-wait, `tokio::time::timeout` around a wait, a detached future, a future moved from
//! one runtime to another, a capture ended early with its grace period, the output as lines as it comes, the usage in
//! every result; nothing left.

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::{is_dead, read_pid, survivors, with_pids, Scratch};
use grouptimeout::{GroupChild, GroupCommandExt, Outcome, Stream};
use grouptimeout_tokio::Output;
use tokio::time::{sleep, Instant};

fn sh(line: &str) -> Command {
    let mut command = Command::new("sh");
    command.args(["-c", line]);
    command
}

/// The leader's and the background child's pids, once the job wrote them.
async fn pids(dir: &Scratch) -> [u32; 2] {
    [
        read_pid(&dir.path("leader")).await,
        read_pid(&dir.path("bg")).await,
    ]
}

// 100 jobs at once, each with a background child of its group: every other one exits in time (status 3), the others
// run into their deadline; half of them are captured. The deadlines of those that run into them spread over 0.2–2 s,
// each counted from when its job has written its output and its pids (a loaded machine may start a shell later than
// a deadline of 0.2 s from its spawn: its output was then missing); those that exit in time get 20 s, a margin for a
// loaded machine to start a shell. Every outcome and every output right, no wait returned before its deadline, and
// every leader and background child dead at the end.
async fn hundred_jobs() {
    const JOBS: u32 = 100;
    let dir = Scratch::new("hundred");
    let mut tasks = tokio::task::JoinSet::new();
    let started = Instant::now();
    for i in 0..JOBS {
        let exits = i % 2 == 0;
        let captured = i % 4 < 2;
        let ms = if exits {
            20_000
        } else {
            200 + 1800 * u64::from(i) / u64::from(JOBS)
        };
        let then = if exits { "exit 3" } else { "sleep 30" };
        let line = format!(
            "echo out-{i}; echo err-{i} >&2; echo $$ > {0}/{i}.leader; sleep 30 & echo $! > {0}/{i}.bg; {then}",
            dir.0.display()
        );
        let mut command = sh(&line);
        if captured {
            command.stdout(Stdio::piped()).stderr(Stdio::piped());
        } else {
            command.stdout(Stdio::null()).stderr(Stdio::null());
        }
        let child = command.spawn_group().unwrap();
        if !exits {
            read_pid(&dir.path(&format!("{i}.bg"))).await;
        }
        let deadline = Instant::now() + Duration::from_millis(ms);
        tasks.spawn(async move {
            let outcome = if captured {
                let out = grouptimeout_tokio::wait_with_output(child, Some(deadline))
                    .await
                    .unwrap();
                assert_eq!(out.stdout, format!("out-{i}\n").into_bytes(), "job {i}");
                assert_eq!(out.stderr, format!("err-{i}\n").into_bytes(), "job {i}");
                assert!(out.pipes_closed, "job {i}");
                out.outcome
            } else {
                grouptimeout_tokio::wait(child, Some(deadline))
                    .await
                    .unwrap()
                    .outcome
            };
            if exits {
                assert!(
                    matches!(outcome, Outcome::Exited(s) if s.code() == Some(3)),
                    "job {i}: {outcome}"
                );
            } else {
                assert!(outcome.timed_out(), "job {i}: {outcome}");
                assert!(
                    Instant::now() >= deadline,
                    "job {i} returned before its deadline"
                );
            }
            i
        });
    }
    let mut done = 0;
    while let Some(joined) = tasks.join_next().await {
        joined.unwrap();
        done += 1;
    }
    assert_eq!(done, JOBS);
    // Well past the last deadline (2 s), bounded for a loaded machine.
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    let mut all = Vec::new();
    for i in 0..JOBS {
        all.push(read_pid(&dir.path(&format!("{i}.leader"))).await);
        all.push(read_pid(&dir.path(&format!("{i}.bg"))).await);
    }
    assert_eq!(survivors(&all).await, Vec::<u32>::new());
}

#[tokio::test(flavor = "current_thread")]
async fn hundred_jobs_current_thread() {
    hundred_jobs().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hundred_jobs_multi_thread() {
    hundred_jobs().await;
}

/// A job that runs for 30 s and has written both pids, and those pids, alive.
async fn running_job(dir: &Scratch, captured: bool) -> (GroupChild, [u32; 2]) {
    let mut command = sh(&with_pids(dir, "echo started; sleep 30"));
    if captured {
        command.stdout(Stdio::piped()).stderr(Stdio::piped());
    } else {
        command.stdout(Stdio::null());
    }
    let child = command.spawn_group().unwrap();
    let pids = pids(dir).await;
    assert!(pids.iter().all(|&pid| !is_dead(pid)), "{pids:?}");
    (child, pids)
}

// The losing branch of `select!` is dropped mid-wait: its job ends, leader and background child.
async fn dropped_mid_wait(captured: bool) {
    let dir = Scratch::new("dropped");
    let (child, pids) = running_job(&dir, captured).await;
    let deadline = Some(Instant::now() + Duration::from_secs(30));
    if captured {
        tokio::select! {
            out = grouptimeout_tokio::wait_with_output(child, deadline) => panic!("returned: {out:?}"),
            () = sleep(Duration::from_millis(300)) => {}
        }
    } else {
        tokio::select! {
            outcome = grouptimeout_tokio::wait(child, deadline) => panic!("returned: {outcome:?}"),
            () = sleep(Duration::from_millis(300)) => {}
        }
    }
    assert_eq!(survivors(&pids).await, Vec::<u32>::new());
}

#[tokio::test(flavor = "current_thread")]
async fn dropped_mid_wait_current_thread() {
    dropped_mid_wait(false).await;
    dropped_mid_wait(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_mid_wait_multi_thread() {
    dropped_mid_wait(false).await;
    dropped_mid_wait(true).await;
}

// A wait inside `tokio::time::timeout` that runs out (no deadline of its own): the job ends; and a spawned task
// that waits, aborted: the same.
async fn cancelled() {
    let dir = Scratch::new("timeout");
    let (child, pids) = running_job(&dir, false).await;
    let late = tokio::time::timeout(
        Duration::from_millis(300),
        grouptimeout_tokio::wait(child, None),
    )
    .await;
    assert!(late.is_err(), "{late:?}");
    assert_eq!(survivors(&pids).await, Vec::<u32>::new());

    let dir = Scratch::new("abort");
    let (child, pids) = running_job(&dir, true).await;
    let task = tokio::spawn(grouptimeout_tokio::wait_with_output(child, None));
    sleep(Duration::from_millis(300)).await;
    task.abort();
    assert!(task.await.unwrap_err().is_cancelled());
    assert_eq!(survivors(&pids).await, Vec::<u32>::new());
}

#[tokio::test(flavor = "current_thread")]
async fn cancelled_current_thread() {
    cancelled().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_multi_thread() {
    cancelled().await;
}

// A detached future keeps its job running; the child (or the capture) then ends it when waited again.
async fn detached() {
    let dir = Scratch::new("detach");
    let (child, pids) = running_job(&dir, false).await;
    let mut waiting = grouptimeout_tokio::wait(child, None);
    tokio::select! {
        outcome = &mut waiting => panic!("returned: {outcome:?}"),
        () = sleep(Duration::from_millis(200)) => {}
    }
    let child = waiting.detach();
    sleep(Duration::from_millis(300)).await;
    assert!(pids.iter().all(|&pid| !is_dead(pid)), "{pids:?}");
    let outcome = grouptimeout_tokio::wait(child, Some(Instant::now()))
        .await
        .unwrap()
        .outcome;
    assert!(outcome.timed_out(), "{outcome}");
    assert_eq!(survivors(&pids).await, Vec::<u32>::new());

    let dir = Scratch::new("detach-capture");
    let (child, pids) = running_job(&dir, true).await;
    let deadline = Instant::now() + Duration::from_millis(1500);
    let mut capturing = grouptimeout_tokio::wait_with_output(child, Some(deadline));
    tokio::select! {
        out = &mut capturing => panic!("returned: {out:?}"),
        () = sleep(Duration::from_millis(200)) => {}
    }
    let capture = capturing.detach().unwrap();
    sleep(Duration::from_millis(300)).await;
    assert!(pids.iter().all(|&pid| !is_dead(pid)), "{pids:?}");
    let out = grouptimeout_tokio::Capturing::new(capture).await.unwrap();
    assert!(out.outcome.timed_out(), "{}", out.outcome);
    assert_eq!(out.stdout, b"started\n");
    assert_eq!(survivors(&pids).await, Vec::<u32>::new());
}

#[tokio::test(flavor = "current_thread")]
async fn detached_current_thread() {
    detached().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn detached_multi_thread() {
    detached().await;
}

// `set_deadline(now)` ends a waited job without dropping (so without blocking in a drop), grace period included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deadline_moved_to_now() {
    let dir = Scratch::new("moved");
    let (mut child, pids) = running_job(&dir, false).await;
    child.set_grace(grouptimeout::signal::SIGTERM, Duration::from_secs(5));
    let mut waiting = grouptimeout_tokio::wait(child, None);
    tokio::select! {
        outcome = &mut waiting => panic!("returned: {outcome:?}"),
        () = sleep(Duration::from_millis(200)) => {}
    }
    waiting.set_deadline(Some(Instant::now()));
    let outcome = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("the job ended on its grace signal")
        .unwrap()
        .outcome;
    assert!(outcome.timed_out(), "{outcome}");
    assert_eq!(survivors(&pids).await, Vec::<u32>::new());
}

// A contained job (grouptimeout-job) whose daemon left the group with `setsid`: dropping its future mid-wait ends
// the daemon too (the boundary's end is the child's drop).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_contained_job() {
    use grouptimeout_job::JobCommandExt as _;
    let dir = Scratch::new("contained");
    let line = format!(
        "echo $$ > {0}/leader; setsid sleep 30 & echo $! > {0}/bg; sleep 30",
        dir.0.display()
    );
    let child = sh(&line).spawn_contained().unwrap();
    let pids = pids(&dir).await;
    assert!(pids.iter().all(|&pid| !is_dead(pid)), "{pids:?}");
    tokio::select! {
        outcome = grouptimeout_tokio::wait(child, None) => panic!("returned: {outcome:?}"),
        () = sleep(Duration::from_millis(300)) => {}
    }
    assert_eq!(survivors(&pids).await, Vec::<u32>::new());
}

/// CPU time (user + system, in clock ticks, 10 ms here) of the calling thread.
fn thread_cpu_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 1..]
        .split_whitespace()
        .collect();
    // After the name: state is field 3 of stat(5), utime 14 and stime 15.
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

// Waits do not spin: a job that writes a line every 100 ms for about a second (captured), and one that sleeps for a
// second, waited together on the current-thread runtime (this test's thread), cost this thread a few ticks of CPU
// time, where a driver that did not clear the readiness it saw, or woke on a timer that had fired, would step
// for the whole second.
#[tokio::test(flavor = "current_thread")]
async fn waits_do_not_spin() {
    let chatty = sh("for i in 1 2 3 4 5 6 7 8 9 10; do echo $i; sleep 0.1; done")
        .stdout(Stdio::piped())
        .spawn_group()
        .unwrap();
    let quiet = sh("sleep 1").spawn_group().unwrap();
    let deadline = Some(Instant::now() + Duration::from_secs(20));
    let before = thread_cpu_ticks();
    let (chatty, quiet) = tokio::join!(
        grouptimeout_tokio::wait_with_output(chatty, deadline),
        grouptimeout_tokio::wait(quiet, deadline),
    );
    let spent = thread_cpu_ticks() - before;
    let chatty = chatty.unwrap();
    assert!(!chatty.outcome.timed_out(), "{}", chatty.outcome);
    assert_eq!(chatty.stdout, b"1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n");
    assert!(!quiet.unwrap().outcome.timed_out());
    assert!(spent < 25, "the waits took {spent} ticks of CPU time");
}

// The capture's other descriptors: input written to standard input as `cat` reads it (the writable registration,
// dropped when the core closes the pipe after the last byte, so that `cat` sees end of file), and a chatty command
// bounded by the output limit (20 MB read through, head and tail kept); under both runtimes.
async fn input_and_chatty_output() {
    let input: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    let mut cat = sh("cat")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn_group()
        .unwrap();
    cat.set_input(input.clone()).unwrap();
    let deadline = Some(Instant::now() + Duration::from_secs(20));
    let mut chatty = sh("head -c 20000000 /dev/zero; echo done >&2")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn_group()
        .unwrap();
    chatty.set_output_limit(64 << 10);
    let (cat, chatty) = tokio::join!(
        grouptimeout_tokio::wait_with_output(cat, deadline),
        grouptimeout_tokio::wait_with_output(chatty, deadline),
    );
    let cat = cat.unwrap();
    assert!(!cat.outcome.timed_out(), "cat: {}", cat.outcome);
    assert_eq!(cat.input_written, input.len());
    assert!(
        cat.stdout == input,
        "cat gave back {} bytes",
        cat.stdout.len()
    );
    let chatty = chatty.unwrap();
    assert!(!chatty.outcome.timed_out(), "chatty: {}", chatty.outcome);
    assert_eq!(
        chatty.stdout.len() as u64 + chatty.stdout_omitted,
        20_000_000
    );
    assert!(chatty.stdout.len() <= 64 << 10 && chatty.stdout_omitted > 0);
    assert_eq!(chatty.stderr, b"done\n");
    assert!(chatty.pipes_closed);
}

#[tokio::test(flavor = "current_thread")]
async fn input_and_chatty_output_current_thread() {
    input_and_chatty_output().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_and_chatty_output_multi_thread() {
    input_and_chatty_output().await;
}

// A capture fed with input larger than a pipe, whose command reads it to the end, then sleeps a second: the core
// closes the input after its last byte in a step (and lists the pidfd, never under the number the input had), the
// adapter drops its copy of the input at once (else `cat` would never see end of file, and the job would run to its
// deadline of 30 s), and the exit is seen through the pidfd at once, without stepping meanwhile (a few ticks of this
// thread's CPU time, as in `waits_do_not_spin`).
#[tokio::test(flavor = "current_thread")]
async fn a_capture_with_input_ends_at_its_exit() {
    let mut child = sh("cat >/dev/null; sleep 1; echo done")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn_group()
        .unwrap();
    let leader = child.id();
    child.set_input(vec![b'x'; 1 << 20]).unwrap();
    let started = Instant::now();
    let before = thread_cpu_ticks();
    let captured =
        grouptimeout_tokio::wait_with_output(child, Some(started + Duration::from_secs(30)))
            .await
            .unwrap();
    let (took, spent) = (started.elapsed(), thread_cpu_ticks() - before);
    assert!(!captured.outcome.timed_out(), "{}", captured.outcome);
    assert_eq!(captured.input_written, 1 << 20);
    assert_eq!(captured.stdout, b"done\n");
    assert!(took < Duration::from_secs(6), "{took:?}");
    assert!(spent < 25, "the wait took {spent} ticks of CPU time");
    assert!(is_dead(leader));
}

// A runtime shut down (dropped) with waits in its tasks: every job ends, whole.
#[test]
fn runtime_shut_down() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dirs = [Scratch::new("shutdown"), Scratch::new("shutdown-capture")];
    let pids = runtime.block_on(async {
        let (plain, first) = running_job(&dirs[0], false).await;
        let (captured, second) = running_job(&dirs[1], true).await;
        let mut all = first.to_vec();
        all.extend(second);
        tokio::spawn(grouptimeout_tokio::wait(plain, None));
        tokio::spawn(grouptimeout_tokio::wait_with_output(captured, None));
        sleep(Duration::from_millis(300)).await;
        all
    });
    drop(runtime);
    let check = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    assert_eq!(check.block_on(survivors(&pids)), Vec::<u32>::new());
}

// A `Waiting` awaited again after it returned gives the same outcome (as the child's waits do), at once.
#[tokio::test(flavor = "current_thread")]
async fn awaited_again_after_the_end() {
    let child = sh("exit 7").spawn_group().unwrap();
    let mut waiting =
        grouptimeout_tokio::wait(child, Some(Instant::now() + Duration::from_secs(20)));
    let first = (&mut waiting).await.unwrap();
    let again = tokio::time::timeout(Duration::from_secs(5), &mut waiting)
        .await
        .expect("the second await returned at once")
        .unwrap();
    assert_eq!(first.outcome.status().code(), Some(7));
    assert_eq!(again, first);
    assert_eq!(
        waiting.detach().try_wait().unwrap(),
        Some(first.outcome.status())
    );
}

// Issue 39: a captured job that goes quiet is ended about its idle time after its last output (the timer sleeps until
// the idle end the step asks for), leader and background child; the sink saw the output in the step that read it.
async fn idle_job() {
    let dir = Scratch::new("idle");
    let (mut child, pids) = running_job(&dir, true).await;
    let idle = Duration::from_millis(500);
    child.set_idle_timeout(idle);
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = std::sync::Arc::clone(&seen);
    child.set_output_sink(move |_, bytes| sink.lock().unwrap().extend_from_slice(bytes));
    let started = Instant::now();
    let deadline = Some(started + Duration::from_secs(30));
    let captured = grouptimeout_tokio::wait_with_output(child, deadline)
        .await
        .unwrap();
    let took = started.elapsed();
    assert_eq!(captured.outcome, Outcome::Idle(captured.outcome.status()));
    assert!(took >= idle && took < Duration::from_secs(10), "{took:?}");
    assert_eq!(captured.stdout, b"started\n");
    assert_eq!(*seen.lock().unwrap(), b"started\n");
    assert_eq!(survivors(&pids).await, Vec::<u32>::new());
}

#[tokio::test(flavor = "current_thread")]
async fn idle_job_current_thread() {
    idle_job().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_job_multi_thread() {
    idle_job().await;
}

// A contained job that waits for its whole job (`set_wait_for_job`): its leader exits at once, leaving a `setsid`
// daemon that writes a file after a second. The future returns once the file is written, the daemon gone, and the
// wait cost this thread a few ticks of CPU time (the descriptor that tells the job's end, registered with the
// runtime, is read until it sleeps again).
#[tokio::test(flavor = "current_thread")]
async fn a_wait_for_the_whole_job() {
    use grouptimeout_job::JobCommandExt as _;
    let dir = Scratch::new("whole");
    let line = format!(
        "echo $$ > {0}/leader; setsid sh -c 'echo $$ > {0}/bg; sleep 1; echo done > {0}/done' &",
        dir.0.display()
    );
    let mut child = sh(&line).spawn_contained().unwrap();
    child.set_wait_for_job(true);
    let pids = pids(&dir).await;
    let before = thread_cpu_ticks();
    let outcome = grouptimeout_tokio::wait(child, Some(Instant::now() + Duration::from_secs(20)))
        .await
        .unwrap()
        .outcome;
    let spent = thread_cpu_ticks() - before;
    assert!(!outcome.timed_out(), "{outcome}");
    assert!(
        dir.path("done").exists(),
        "the wait returned before the daemon had done its work"
    );
    assert!(is_dead(pids[1]));
    assert!(spent < 10, "the wait took {spent} ticks of CPU time");
}

/// What the job used (issues 39.1 and 44.1): every future's result says it (a plain group's leader, a contained
/// job's boundary), where before one read it through `child()` after awaiting by reference; a job that burns CPU
/// shows it.
async fn results_carry_usage() {
    use grouptimeout_job::JobCommandExt as _;
    let busy = "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done; exit 3";
    let mut waiting = grouptimeout_tokio::wait(sh(busy).spawn_group().unwrap(), None);
    let waited = (&mut waiting).await.unwrap();
    assert_eq!(waited.outcome.status().code(), Some(3));
    assert_eq!(waited.usage.measured, grouptimeout::Measured::Leader);
    assert!(waited.usage.cpu() > Duration::ZERO, "{:?}", waited.usage);
    assert_eq!(waiting.child().usage(), Some(waited.usage));

    let contained = sh(busy).spawn_contained().unwrap();
    let waited = grouptimeout_tokio::wait(contained, None).await.unwrap();
    assert_eq!(waited.outcome.status().code(), Some(3));
    assert!(waited.usage.cpu() > Duration::ZERO, "{:?}", waited.usage);

    let child = sh(&format!("{busy}; echo never"))
        .stdout(Stdio::piped())
        .spawn_group()
        .unwrap();
    let captured = grouptimeout_tokio::wait_with_output(child, None)
        .await
        .unwrap();
    assert_eq!(captured.outcome.status().code(), Some(3));
    assert!(
        captured.usage.cpu() > Duration::ZERO,
        "{:?}",
        captured.usage
    );
}

#[tokio::test(flavor = "current_thread")]
async fn results_carry_usage_current_thread() {
    results_carry_usage().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_carry_usage_multi_thread() {
    results_carry_usage().await;
}

/// Issue 42.7: a future polled in one runtime (current-thread) until it registered its descriptors and its timer,
/// then awaited in another, the first dropped or alive but idle; the wait, captured or not, ends at its deadline
/// (not before it, and within a bound) and leaves nothing, leader and background child. Before, it never woke: what
/// it had registered was the first runtime's. The four cases run side by side, each in threads of its own.
fn moved_between_runtimes(second_multi_thread: bool) {
    let cases = [(false, false), (false, true), (true, false), (true, true)];
    let threads = cases.map(|(keep_first, captured)| {
        std::thread::spawn(move || moved_to(second_multi_thread, keep_first, captured))
    });
    let failed: Vec<String> = threads
        .into_iter()
        .filter_map(|thread| thread.join().err())
        .map(|panic| match panic.downcast::<String>() {
            Ok(message) => *message,
            Err(panic) => format!("{:?}", panic.downcast_ref::<&str>()),
        })
        .collect();
    assert!(failed.is_empty(), "{failed:#?}");
}

/// A wait moved between runtimes, captured or not.
type Moved = std::pin::Pin<Box<dyn std::future::Future<Output = std::io::Result<Outcome>> + Send>>;

fn moved_to(second_multi_thread: bool, keep_first: bool, captured: bool) {
    let case = format!("first kept: {keep_first}, captured: {captured}");
    let build = |multi: bool| {
        let mut builder = if multi {
            tokio::runtime::Builder::new_multi_thread()
        } else {
            tokio::runtime::Builder::new_current_thread()
        };
        builder.worker_threads(2).enable_all().build().unwrap()
    };
    let first = build(false);
    let dir = Scratch::new("moved-runtime");
    let (future, pids, deadline) = first.block_on(async {
        let (child, pids) = running_job(&dir, captured).await;
        let deadline = Instant::now() + Duration::from_millis(800);
        let mut future: Moved = if captured {
            let capturing = grouptimeout_tokio::wait_with_output(child, Some(deadline));
            Box::pin(async move { capturing.await.map(|captured| captured.outcome) })
        } else {
            let waiting = grouptimeout_tokio::wait(child, Some(deadline));
            Box::pin(async move { waiting.await.map(|waited| waited.outcome) })
        };
        tokio::select! {
            outcome = &mut future => panic!("{case}: returned {outcome:?}"),
            () = sleep(Duration::from_millis(200)) => {}
        }
        (future, pids, deadline)
    });
    let first = keep_first.then_some(first);
    let second = build(second_multi_thread);
    second.block_on(async {
        let outcome = tokio::time::timeout(Duration::from_secs(10), future)
            .await
            .unwrap_or_else(|_| panic!("{case}: no end 10 s after the deadline"))
            .unwrap_or_else(|err| panic!("{case}: {err}"));
        assert!(outcome.timed_out(), "{case}: {outcome}");
        assert!(Instant::now() >= deadline, "{case}: before the deadline");
        assert_eq!(survivors(&pids).await, Vec::<u32>::new(), "{case}");
    });
    drop(first);
}

#[test]
fn moved_between_runtimes_to_a_current_thread_one() {
    moved_between_runtimes(false);
}

#[test]
fn moved_between_runtimes_to_a_multi_thread_one() {
    moved_between_runtimes(true);
}

/// Issue 44.1: a capturing future ended before its deadline (the client went away) with `set_deadline(now)`, then
/// awaited: the grace signal ends the command, whose last words are kept, and the result holds its output and usage;
/// nothing is left, leader and background child. Before, `Capturing` had no `set_deadline`: the one way to end it
/// was its drop, which blocks while it kills (no grace) and loses the output and the usage.
async fn capture_ended_with_its_grace() {
    let dir = Scratch::new("grace");
    let line = with_pids(
        &dir,
        "trap 'echo stopping; exit 3' TERM; echo started; while :; do sleep 0.1; done",
    );
    let mut child = sh(&line).stdout(Stdio::piped()).spawn_group().unwrap();
    child.set_grace(grouptimeout::signal::SIGTERM, Duration::from_secs(20));
    let pids = pids(&dir).await;
    let mut capturing = grouptimeout_tokio::wait_with_output(child, None);
    tokio::select! {
        out = &mut capturing => panic!("returned: {out:?}"),
        () = sleep(Duration::from_millis(200)) => {}
    }
    let ended = Instant::now();
    capturing.set_deadline(Some(ended));
    let captured = tokio::time::timeout(Duration::from_secs(10), capturing)
        .await
        .expect("the command ended on its grace signal, long before the grace period's end")
        .unwrap();
    // Its last words, and its usage (the leader's, with its peak memory).
    assert_eq!(captured.stdout, b"started\nstopping\n");
    assert!(captured.pipes_closed);
    assert!(captured.usage.memory.is_some(), "{:?}", captured.usage);
    // Timed out, and the command exited on the grace signal (its trap's status), before any SIGKILL.
    let outcome = captured.outcome;
    assert!(
        matches!(outcome, Outcome::TimedOut(s) if s.code() == Some(3)),
        "{outcome}"
    );
    assert_eq!(survivors(&pids).await, Vec::<u32>::new());
}

#[tokio::test(flavor = "current_thread")]
async fn capture_ended_with_its_grace_current_thread() {
    capture_ended_with_its_grace().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capture_ended_with_its_grace_multi_thread() {
    capture_ended_with_its_grace().await;
}

/// Every `Output` of `lines` until `None`, bounded.
async fn all_lines(lines: &mut grouptimeout_tokio::OutputLines) -> Vec<Output> {
    let mut all = Vec::new();
    let end = Instant::now() + Duration::from_secs(20);
    while let Some(output) = tokio::time::timeout_at(end, lines.recv())
        .await
        .expect("the lines ended")
    {
        all.push(output);
    }
    all
}

/// The lines of `stream` in `all`, its end included.
fn of(all: &[Output], stream: Stream) -> Vec<Output> {
    all.iter()
        .filter(|output| match output {
            Output::Line(s, _) | Output::End { stream: s, .. } => *s == stream,
            _ => unreachable!(),
        })
        .cloned()
        .collect()
}

/// Issue 44.1: the output as it comes, to async code: the first line arrives while the command still runs; each
/// stream's lines in order, a line longer than 64 KiB in pieces, a last line without a newline delivered, then the
/// stream's end (closed); `None` after both. And a stream still held by a kept leftover when the capture ends: what
/// it held back, then its end, not closed. Before, the core's sink had no end of stream, and a last line without a
/// newline never reached the log (this did not compile: no `output_lines`).
async fn output_lines_as_they_come() {
    let dir = Scratch::new("lines");
    let script = "printf 'one\\n'; sleep 1; printf 'two\\nlast'; \
                  head -c 100000 /dev/zero | tr '\\0' x >&2; echo >&2";
    let mut child = sh(&with_pids(&dir, script))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn_group()
        .unwrap();
    let mut lines = grouptimeout_tokio::output_lines(&mut child);
    let deadline = Instant::now() + Duration::from_secs(20);
    let capturing = tokio::spawn(grouptimeout_tokio::wait_with_output(child, Some(deadline)));
    let first = tokio::time::timeout_at(deadline, lines.recv())
        .await
        .unwrap();
    assert_eq!(first, Some(Output::Line(Stream::Stdout, b"one\n".to_vec())));
    assert!(!capturing.is_finished(), "the first line came at the end");
    let rest = all_lines(&mut lines).await;
    let captured = capturing.await.unwrap().unwrap();
    assert!(captured.outcome.status().success(), "{}", captured.outcome);
    assert_eq!(captured.stdout, b"one\ntwo\nlast");
    assert_eq!(
        of(&rest, Stream::Stdout),
        [
            Output::Line(Stream::Stdout, b"two\n".to_vec()),
            Output::Line(Stream::Stdout, b"last".to_vec()),
            Output::End {
                stream: Stream::Stdout,
                closed: true
            },
        ]
    );
    let mut long = vec![b'x'; 100_000 - (64 << 10)];
    long.push(b'\n');
    assert_eq!(
        of(&rest, Stream::Stderr),
        [
            Output::Line(Stream::Stderr, vec![b'x'; 64 << 10]),
            Output::Line(Stream::Stderr, long),
            Output::End {
                stream: Stream::Stderr,
                closed: true
            },
        ]
    );
    assert_eq!(survivors(&pids(&dir).await).await, Vec::<u32>::new());

    // A leftover kept alive holds standard output after the leader's exit: the capture drains for about 100 ms, ends,
    // and the lines end that stream unclosed, with what it held back.
    let dir = Scratch::new("lines-kept");
    let script = "sleep 30 & echo $! > {0}/bg; printf 'partial'";
    let mut child = sh(&script.replace("{0}", &dir.0.display().to_string()))
        .stdout(Stdio::piped())
        .spawn_group()
        .unwrap();
    child.set_kill_leftovers(false);
    let mut lines = grouptimeout_tokio::output_lines(&mut child);
    let captured = grouptimeout_tokio::wait_with_output(child, Some(deadline))
        .await
        .unwrap();
    let leftover = read_pid(&dir.path("bg")).await;
    let _ = Command::new("kill").arg(leftover.to_string()).status();
    assert!(!captured.pipes_closed);
    assert_eq!(
        all_lines(&mut lines).await,
        [
            Output::Line(Stream::Stdout, b"partial".to_vec()),
            Output::End {
                stream: Stream::Stdout,
                closed: false
            },
        ]
    );
    assert_eq!(survivors(&[leftover]).await, Vec::<u32>::new());
}

#[tokio::test(flavor = "current_thread")]
async fn output_lines_as_they_come_current_thread() {
    output_lines_as_they_come().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_lines_as_they_come_multi_thread() {
    output_lines_as_they_come().await;
}
