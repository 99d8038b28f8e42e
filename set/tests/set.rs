//! `JobSet` (issue 38.2): many jobs waited from one thread, each with its own deadline, grace and capture, reported in
//! the order they ended, nothing left behind (read from `/proc/PID/stat`, the processes found by the pid files the
//! jobs write); contained jobs in the same set (a cgroup as root, the job's own reaper as nobody); a job cancelled
//! from another thread; jobs added between calls; the set dropped halfway.
#![cfg(unix)]

mod common;
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
#[path = "common/job.rs"]
mod job_common;

use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use common::{is_dead, survivors_after, TempDir};
use grouptimeout::{signal, GroupChild, GroupCommandExt as _};
use grouptimeout_set::{Finished, JobSet};

/// How the contained jobs of a test are spawned: `spawn_contained` with a boundary that reaches a `setsid` child,
/// or `None` where there is none (another Unix, a `grouptimeout_portable` build): those jobs are then plain, with no
/// `setsid` child (a plain group does not reach one, by design).
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
type Boundary = Option<grouptimeout_job::Contain>;
#[cfg(not(all(target_os = "linux", not(grouptimeout_portable))))]
type Boundary = Option<()>;

/// The boundary for this user: as root a cgroup (where one can be made, else the test says it is skipped and uses
/// the reaper), as anyone else the job's own reaper; `None` where neither exists.
#[allow(clippy::unnecessary_wraps, reason = "`None` on other systems")]
fn boundary(test: &str) -> Boundary {
    #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
    {
        use grouptimeout_job::{Contain, Containment};
        if common::is_root() {
            if let Some(how) = job_common::cgroup_or_skip(test) {
                return Some(how);
            }
        }
        let mut how = Contain::new();
        how.cgroup(false).require(Containment::Reaper);
        Some(how)
    }
    #[cfg(not(all(target_os = "linux", not(grouptimeout_portable))))]
    {
        let _ = test;
        None
    }
}

/// Spawns `sh -c script`, contained with `how` if given (else as a plain group), stdout and stderr piped if
/// `piped` (for a capture), else to /dev/null; stdin from /dev/null.
fn spawn(how: Option<&Boundary>, script: &str, piped: bool) -> GroupChild {
    let mut command = Command::new("sh");
    command.args(["-c", script]).stdin(Stdio::null());
    if piped {
        command.stdout(Stdio::piped()).stderr(Stdio::piped());
    } else {
        command.stdout(Stdio::null()).stderr(Stdio::null());
    }
    match how {
        #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
        Some(Some(how)) => how.spawn(&mut command).expect("spawn_contained"),
        _ => command.spawn_group().expect("spawn_group"),
    }
}

/// The background children a job starts, each writing its pid to `pids`: a plain one, and with a boundary a
/// `setsid` one too (which only the boundary reaches); how many.
fn background(pids: &Path, contained: bool) -> (String, usize) {
    let pids = pids.display();
    let plain = format!("sleep 60 >/dev/null 2>&1 & echo $! >> {pids}; ");
    if contained {
        let setsid = format!("setsid sleep 60 >/dev/null 2>&1 & echo $! >> {pids}; ");
        return (plain + &setsid, 2);
    }
    (plain, 1)
}

/// The next job that ended, waiting at most 20 s: a set that never reports one fails the test rather than hang it
/// (and its drop ends the jobs). `None` once the set is empty.
fn next<K>(set: &mut JobSet<K>) -> Option<(K, std::io::Result<Finished>)> {
    if set.is_empty() {
        return None;
    }
    let next = set.next_timeout(Duration::from_secs(20));
    Some(next.expect("no job ended within 20 s"))
}

/// Waits (bounded) until every process in the pid files is dead (gone, zombie, dying), and says which are not. The
/// pids are read with their start times (`KillOnDrop::from_file`: a pid whose process started after the file was
/// written is another's), so that a pid taken again by another test's process counts as dead and is never killed.
fn left_running(files: &[(PathBuf, usize)]) -> Vec<u32> {
    let listed: Vec<common::KillOnDrop> = files
        .iter()
        .map(|(file, n)| {
            common::eventually(Duration::from_secs(20), || {
                std::fs::read_to_string(file)
                    .unwrap_or_default()
                    .split_whitespace()
                    .count()
                    == *n
            });
            let listed = common::KillOnDrop::from_file(file);
            let _ = std::fs::remove_file(file);
            listed
        })
        .collect();
    assert!(listed.iter().any(|l| !l.0.is_empty()));
    // The drop of `listed` kills those left, if they are still the listed processes.
    listed
        .iter()
        .flat_map(|l| l.survivors_after(Duration::from_secs(10)))
        .collect()
}

/// One job of the fifty, as planned.
struct Planned {
    deadline: Instant,
    /// When it ends, as planned: its exit (in time) or its deadline (plus its grace, for one that ignores the grace
    /// signal).
    ends: Instant,
    /// The status its leader exits with, when in time.
    code: Option<i32>,
    /// Its grace signal, if it has a grace period.
    grace: Option<i32>,
    /// It ignores its grace signal: killed at the grace period's end.
    ignores_grace: bool,
    captured: bool,
}

/// Adds to `set` fifty jobs with deadlines spread over 0.5–3.3 s: the even ones exit in time (at half their
/// deadline) with statuses of their own, the odd ones run into it (some with a grace period, one that ignores its
/// grace signal); every job leaves a background child (its pid in a file in `dir`), every fifth job is contained
/// (with a `setsid` child too), every third is captured. Returns the plans, and the pid files with their counts.
fn add_fifty(
    test: &str,
    set: &mut JobSet<u32>,
    dir: &Path,
) -> (Vec<Planned>, Vec<(PathBuf, usize)>) {
    const GRACE: Duration = Duration::from_millis(300);
    let how = boundary(test);
    let mut plans = Vec::new();
    let mut files = Vec::new();
    let start = Instant::now();
    for i in 0..50_u32 {
        // (At least half a second: an even job's shell, started late on a loaded machine, still exits in time.)
        let offset = Duration::from_millis(500 + u64::from(i) * 2800 / 49);
        let contained = how.is_some() && i % 5 == 0;
        let captured = cfg!(feature = "capture") && i % 3 == 0;
        let file = dir.join(format!("job-{i}"));
        let (script, n) = background(&file, contained);
        files.push((file, n));
        let in_time = i % 2 == 0;
        let ignores_grace = i == 25;
        let script = script
            + &if in_time {
                format!(
                    "echo job-{i}; sleep {:.3}; exit {}",
                    offset.as_secs_f64() / 2.0,
                    i + 1
                )
            } else if ignores_grace {
                format!("echo job-{i}; trap '' TERM; sleep 60")
            } else {
                format!("echo job-{i}; sleep 60")
            };
        let mut child = spawn(contained.then_some(&how), &script, captured);
        #[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
        if contained {
            use grouptimeout_job::{Containment, JobChildExt as _};
            let mode = child.containment();
            assert!(
                matches!(mode, Containment::Cgroup | Containment::Reaper),
                "job {i}: {mode:?}"
            );
            if i == 0 {
                println!("contained jobs: {mode:?}");
            }
        }
        let grace = (!in_time && i % 4 == 1).then_some(signal::SIGTERM);
        if let Some(sig) = grace {
            child.set_grace(sig, GRACE);
        }
        let deadline = start + offset;
        let ends = if in_time {
            Instant::now() + offset / 2
        } else if ignores_grace {
            deadline + GRACE
        } else {
            deadline
        };
        plans.push(Planned {
            deadline,
            ends,
            code: in_time.then_some(i32::try_from(i).unwrap() + 1),
            grace,
            ignores_grace,
            captured,
        });
        #[cfg(feature = "capture")]
        if captured {
            set.add_captured(i, child, Some(deadline)).unwrap();
            continue;
        }
        set.add(i, child, Some(deadline)).unwrap();
    }
    (plans, files)
}

/// Checks what the set gave for job `i` at `at` against its plan; `waiting`: when the set began to wait (a job
/// that ended before could not be reported earlier).
fn check(i: u32, plan: &Planned, finished: &Finished, at: Instant, waiting: Instant) {
    let outcome = finished.outcome();
    let status = outcome.status();
    if let Some(code) = plan.code {
        assert!(!outcome.timed_out(), "job {i}: {outcome}");
        assert_eq!(status.code(), Some(code), "job {i}: {outcome}");
    } else {
        assert!(outcome.timed_out(), "job {i}: {outcome}");
        // Not before its deadline (nor before its grace period's end when it ignores the grace signal).
        assert!(
            at >= plan.deadline && at >= plan.ends,
            "job {i} came {:?} early",
            plan.ends - at
        );
        let killed_by = if plan.ignores_grace { None } else { plan.grace };
        assert_eq!(
            status.signal(),
            Some(killed_by.unwrap_or(signal::SIGKILL)),
            "job {i}: {outcome}"
        );
    }
    // Late only by the load of the machine (generously: at a load of 15 on 2 cores, without pidfds, a contained job's
    // end took 2-3 s).
    let due = plan.ends.max(waiting);
    assert!(
        at < due + Duration::from_secs(4),
        "job {i} came {:?} late",
        at - due
    );
    match finished {
        #[cfg(feature = "capture")]
        Finished::Captured(out) => {
            assert!(plan.captured, "job {i}");
            assert_eq!(String::from_utf8_lossy(&out.stdout), format!("job-{i}\n"));
        }
        Finished::Waited(..) => assert!(!plan.captured, "job {i}"),
    }
    // What the job used, either way (issue 39.1): measured at its reap.
    assert!(
        finished.usage().memory.is_some(),
        "job {i}: {:?}",
        finished.usage()
    );
}

/// The fifty jobs of [`add_fifty`] in one set: every outcome is right, the jobs come in the order they ended (pairs
/// a second apart or more), none before its end, and nothing is left running.
fn fifty_jobs(test: &str) {
    let dir = TempDir::new(test);
    let mut set = JobSet::new().unwrap();
    let start = Instant::now();
    let (plans, files) = add_fifty(test, &mut set, &dir.0);
    assert_eq!(set.len(), 50);
    // The set takes note of ends only from here: on a loaded machine the adding takes long enough for the first
    // deadlines to pass, and the jobs that ended meanwhile come in the order of the set's first steps.
    let waiting = Instant::now();
    let mut order = Vec::new();
    while let Some((i, result)) = next(&mut set) {
        let at = Instant::now();
        let finished = result.unwrap_or_else(|e| panic!("job {i}: {e}"));
        check(i, &plans[i as usize], &finished, at, waiting);
        order.push(i as usize);
    }
    assert!(set.is_empty());
    assert_eq!(order.len(), 50, "{order:?}");
    // In the order they ended: a job that ended a second before another (and after the set began to wait, or was
    // found at its first look) came first. (Half a second was too little on a loaded machine: a contained job's end,
    // its keeper's and its cgroup's, took 0.7 s more than another's.)
    let position = |i: usize| order.iter().position(|&j| j == i).unwrap();
    for a in 0..50 {
        for b in 0..50 {
            if plans[a].ends.max(waiting) + Duration::from_secs(1) < plans[b].ends {
                assert!(
                    position(a) < position(b),
                    "job {a} ended well before job {b}, but came after it: {order:?}"
                );
            }
        }
    }
    assert_eq!(left_running(&files), [] as [u32; 0]);
    println!("fifty jobs in {:?}", start.elapsed());
}

/// The fifty jobs as this user (root: the contained ones in cgroups of their own).
#[test]
fn fifty_jobs_in_one_set_end_in_order_and_leave_nothing() {
    fifty_jobs("fifty_jobs_in_one_set_end_in_order_and_leave_nothing");
}

/// The fifty jobs as nobody (this test binary run again through `setpriv`): the contained ones get the job's own
/// reaper, which still ends their `setsid` children.
#[test]
fn fifty_jobs_as_nobody_contained_by_the_reaper() {
    let test = "fifty_jobs_as_nobody_contained_by_the_reaper";
    if !common::rerun_as_nobody(test, test) {
        fifty_jobs(test);
    }
}

/// A job cancelled from another thread through its handle, taken before `add`: the set reports it killed (not timed
/// out) at once, long before its deadline; the other jobs go on; the rest of the set ends at its drop.
#[test]
fn a_job_cancelled_from_another_thread_is_reported_at_once() {
    let test = "a_job_cancelled_from_another_thread_is_reported_at_once";
    let dir = TempDir::new(test);
    let how = boundary(test);
    let mut set = JobSet::new().unwrap();
    let deadline = Some(Instant::now() + Duration::from_secs(30));
    let mut files = Vec::new();
    let mut leaders = Vec::new();
    let mut handle = None;
    for (key, contained) in [
        ("cancelled", false),
        ("cancelled-contained", true),
        ("running", false),
    ] {
        let file = dir.0.join(key);
        let (script, n) = background(&file, contained && how.is_some());
        files.push((file, n));
        let child = spawn(contained.then_some(&how), &(script + "sleep 60"), false);
        leaders.push(child.id());
        if key != "running" {
            handle.get_or_insert_with(Vec::new).push(child.handle());
        }
        set.add(key, child, deadline).unwrap();
    }
    let handles = handle.unwrap();
    let canceller = thread::spawn(move || {
        thread::sleep(Duration::from_millis(300));
        let at = Instant::now();
        for h in &handles {
            h.kill().unwrap();
        }
        at
    });
    let mut got = Vec::new();
    for _ in 0..2 {
        let (key, result) = next(&mut set).unwrap();
        let outcome = result.unwrap().outcome();
        assert!(!outcome.timed_out(), "{key}: {outcome}");
        assert_eq!(
            outcome.status().signal(),
            Some(signal::SIGKILL),
            "{key}: {outcome}"
        );
        got.push((key, Instant::now()));
    }
    let killed_at = canceller.join().unwrap();
    for (key, at) in &got {
        assert!(*at >= killed_at, "{key}");
        assert!(
            *at < killed_at + Duration::from_secs(3),
            "{key} came {:?} after the kill",
            *at - killed_at
        );
    }
    got.sort_unstable();
    assert_eq!(
        got.iter().map(|g| g.0).collect::<Vec<_>>(),
        ["cancelled", "cancelled-contained"]
    );
    // The third job runs on: nothing more ends for now.
    assert_eq!(set.len(), 1);
    assert!(set.next_timeout(Duration::from_millis(200)).is_none());
    assert!(!is_dead(leaders[2]));
    drop(set);
    assert_eq!(
        survivors_after(Duration::from_secs(5), &leaders),
        [] as [u32; 0]
    );
    assert_eq!(left_running(&files), [] as [u32; 0]);
}

/// Jobs added between calls of `next`: each call gives the next job that ended among those added so far; an empty set
/// gives `None` at once.
#[test]
fn jobs_added_between_calls() {
    let mut set = JobSet::new().unwrap();
    assert!(set.next().is_none());
    assert!(set.next_timeout(Duration::from_secs(5)).is_none());
    let in_a_while = |ms| Some(Instant::now() + Duration::from_millis(ms));
    set.add(
        "first",
        spawn(None, "sleep 0.2; exit 4", false),
        in_a_while(20_000),
    )
    .unwrap();
    let (key, result) = next(&mut set).unwrap();
    assert_eq!(
        (key, result.unwrap().outcome().status().code()),
        ("first", Some(4))
    );
    assert!(set.is_empty());
    // `slow`'s deadline leaves `quick` and then `quicker` time to start and end first, on a loaded machine too.
    set.add("slow", spawn(None, "sleep 60", false), in_a_while(2000))
        .unwrap();
    set.add(
        "quick",
        spawn(None, "sleep 0.1; exit 5", false),
        in_a_while(20_000),
    )
    .unwrap();
    assert_eq!(set.len(), 2);
    let (key, result) = next(&mut set).unwrap();
    assert_eq!(
        (key, result.unwrap().outcome().status().code()),
        ("quick", Some(5))
    );
    // Added while `slow` runs: ends before it.
    set.add("quicker", spawn(None, "exit 6", false), in_a_while(20_000))
        .unwrap();
    let (key, result) = next(&mut set).unwrap();
    assert_eq!(
        (key, result.unwrap().outcome().status().code()),
        ("quicker", Some(6))
    );
    let (key, result) = next(&mut set).unwrap();
    assert_eq!(key, "slow");
    assert!(result.unwrap().outcome().timed_out());
    assert!(set.is_empty());
    assert!(set.next().is_none());
}

/// `next_timeout(Duration::ZERO)` between the spawns of a burst (issue 44.2): it steps what is due and what is ready
/// without sleeping, so a job whose leader exited is given back by the next such call. (Before, a zero timeout looked
/// at the jobs' instants only: a job waiting on its exit descriptor alone, with no instant, was not stepped until a
/// call that slept.)
#[test]
fn a_zero_timeout_gives_back_a_job_whose_leader_exited() {
    let mut set = JobSet::new().unwrap();
    let child = spawn(None, "sleep 0.2; exit 7", false);
    let pid = child.id();
    set.add(
        "exits",
        child,
        Some(Instant::now() + Duration::from_secs(60)),
    )
    .unwrap();
    // The steps before the leader's exit: it is then watched by its exit descriptor (or its poll schedule).
    for _ in 0..3 {
        assert!(set.next_timeout(Duration::ZERO).is_none());
    }
    assert!(common::eventually(Duration::from_secs(20), || is_dead(pid)));
    let given = common::eventually(Duration::from_secs(20), || {
        // Calls that never sleep: the exit is seen by a look, or by the poll schedule's instant where there is no
        // pidfd; a pause between them spares the CPU.
        thread::sleep(Duration::from_millis(20));
        set.len() == 1 && matches!(set.next_timeout(Duration::ZERO), Some(("exits", _)))
    });
    assert!(given, "a zero timeout never gave back the job that ended");
    assert!(set.is_empty());
}

/// Every job captured, each with what it wrote on both streams and its status; a chatty one bounded by its output
/// limit (and cut at its deadline); one fed its input.
#[cfg(feature = "capture")]
#[test]
fn every_job_captured_and_a_chatty_one_bounded() {
    let test = "every_job_captured_and_a_chatty_one_bounded";
    let how = boundary(test);
    let mut set = JobSet::new().unwrap();
    let deadline = Some(Instant::now() + Duration::from_secs(20));
    for i in 0..8 {
        let script = format!("echo out-{i}; echo err-{i} >&2; exit {i}");
        set.add_captured(
            i,
            spawn((i % 4 == 0).then_some(&how), &script, true),
            deadline,
        )
        .unwrap();
    }
    let mut chatty = spawn(None, "yes chatty", true);
    chatty.set_output_limit(1000);
    set.add_captured(
        100,
        chatty,
        Some(Instant::now() + Duration::from_millis(500)),
    )
    .unwrap();
    let mut command = Command::new("cat");
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut fed_child = command.spawn_group().unwrap();
    fed_child.set_input("hello, set").unwrap();
    set.add_captured(200, fed_child, deadline).unwrap();
    let mut seen = Vec::new();
    while let Some((i, result)) = next(&mut set) {
        let Finished::Captured(out) = result.unwrap() else {
            panic!("job {i} was added captured");
        };
        match i {
            100 => {
                assert!(out.outcome.timed_out(), "{}", out.outcome);
                assert_eq!(out.stdout.len(), 1000);
                assert!(out.stdout_omitted > 0);
                assert!(out.stdout.starts_with(b"chatty\nchatty\n"));
            }
            200 => {
                assert_eq!(out.outcome.status().code(), Some(0));
                assert_eq!(out.stdout, b"hello, set");
                assert_eq!(out.input_written, 10);
            }
            i => {
                assert_eq!(out.outcome.status().code(), Some(i), "{}", out.outcome);
                assert_eq!(String::from_utf8_lossy(&out.stdout), format!("out-{i}\n"));
                assert_eq!(String::from_utf8_lossy(&out.stderr), format!("err-{i}\n"));
                assert!(out.pipes_closed);
            }
        }
        seen.push(i);
    }
    seen.sort_unstable();
    assert_eq!(seen, [0, 1, 2, 3, 4, 5, 6, 7, 100, 200]);
}

/// The set dropped halfway: the jobs still in it all die (their background children too, `setsid` ones of
/// contained jobs included, and a job in its grace period, and a capture), and the drop is bounded.
#[test]
fn the_set_dropped_halfway_ends_the_rest() {
    let test = "the_set_dropped_halfway_ends_the_rest";
    let dir = TempDir::new(test);
    let how = boundary(test);
    let mut set = JobSet::new().unwrap();
    let start = Instant::now();
    let mut files = Vec::new();
    let mut leaders = Vec::new();
    for i in 0..12_u32 {
        let contained = how.is_some() && i % 3 == 0;
        let file = dir.0.join(format!("job-{i}"));
        let (background, n) = background(&file, contained);
        let quick = i < 6;
        // The slow ones ignore TERM before they write their pids.
        let script = if quick {
            background + "sleep 0.1"
        } else {
            format!("trap '' TERM; {background}sleep 60")
        };
        let captured = cfg!(feature = "capture") && i == 7;
        let mut child = spawn(contained.then_some(&how), &script, captured);
        leaders.push(child.id());
        // Job 11 is in its grace period (which it ignores, for 30 s) when the set is dropped: its deadline may come
        // only once its shell ignores TERM (a loaded machine may start it late), so it is added once its pids are
        // written.
        if i == 11 {
            assert!(common::eventually(Duration::from_secs(20), || {
                std::fs::read_to_string(&file)
                    .unwrap_or_default()
                    .split_whitespace()
                    .count()
                    == n
            }));
        }
        files.push((file, n));
        let deadline = if i == 11 {
            Duration::from_millis(100)
        } else {
            Duration::from_secs(30)
        };
        child.set_grace(signal::SIGTERM, Duration::from_secs(30));
        #[cfg(feature = "capture")]
        if captured {
            set.add_captured(i, child, Some(start + deadline)).unwrap();
            continue;
        }
        set.add(i, child, Some(start + deadline)).unwrap();
    }
    for _ in 0..6 {
        let (i, result) = next(&mut set).unwrap();
        assert!(i < 6, "job {i}");
        assert_eq!(result.unwrap().outcome().status().code(), Some(0));
    }
    assert_eq!(set.len(), 6);
    // Job 11's deadline has passed: it is in its grace period by now (the set stepped it while waiting).
    assert!(start.elapsed() > Duration::from_millis(100));
    assert!(set.next_timeout(Duration::from_millis(300)).is_none());
    let dropped = Instant::now();
    drop(set);
    let took = dropped.elapsed();
    assert!(took < Duration::from_secs(5), "the drop took {took:?}");
    assert_eq!(
        survivors_after(Duration::from_secs(5), &leaders),
        [] as [u32; 0]
    );
    assert_eq!(left_running(&files), [] as [u32; 0]);
    println!("dropped 6 jobs in {took:?}");
}

/// Out of descriptors, the set drops no job: this test binary runs again with 64 descriptors at most; with every
/// descriptor taken, a spawn and a new set (its epoll) fail with `EMFILE`, and jobs added then (spawned before: no pidfd can be
/// opened for them, so their exits are found on the poll schedule) are all reported with their statuses, as are the
/// jobs added before.
#[cfg(target_os = "linux")]
#[test]
fn out_of_descriptors_no_job_is_dropped() {
    let test = "out_of_descriptors_no_job_is_dropped";
    if std::env::var_os("GROUPTIMEOUT_TEST_FEW_FDS").is_some() {
        let job = || {
            Command::new("sh")
                .args(["-c", "sleep 1; exit 7"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn_group()
        };
        let mut set = JobSet::new().unwrap();
        let deadline = Some(Instant::now() + Duration::from_secs(20));
        for i in 0..5 {
            set.add(i, job().unwrap(), deadline).unwrap();
        }
        // Their second steps: their pidfds are opened (the first step yields).
        assert!(set.next_timeout(Duration::ZERO).is_none());
        let later: Vec<GroupChild> = (0..5).map(|_| job().unwrap()).collect();
        let mut held = Vec::new();
        while let Ok(file) = std::fs::File::open("/dev/null") {
            held.push(file);
        }
        let e = job().unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EMFILE), "{e}");
        // (Its epoll instance: elsewhere a set holds no descriptor of its own.)
        if cfg!(not(grouptimeout_portable)) {
            let e = JobSet::<u32>::new().unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::EMFILE), "{e}");
        }
        for (i, child) in (5..).zip(later) {
            set.add(i, child, deadline).unwrap();
        }
        let mut seen = Vec::new();
        while let Some((i, result)) = next(&mut set) {
            let outcome = result.unwrap().outcome();
            assert_eq!(outcome.status().code(), Some(7), "job {i}: {outcome}");
            assert!(!outcome.timed_out());
            seen.push(i);
        }
        drop(held);
        seen.sort_unstable();
        assert_eq!(seen, (0..10).collect::<Vec<_>>());
        return;
    }
    run_alone(
        test,
        &["prlimit", "--nofile=64"],
        "GROUPTIMEOUT_TEST_FEW_FDS",
    );
}

/// Runs test `test` of this binary again, alone in a process of its own, through the command `wrapper` (its program
/// and arguments; none: the binary itself), with the variable `marker` set (the test's own scenario looks for it),
/// and checks that it passed; skipped (see `skip_or_fail`) where the wrapper cannot run.
#[cfg(target_os = "linux")]
fn run_alone(test: &str, wrapper: &[&str], marker: &str) {
    let exe = std::env::current_exe().unwrap();
    let mut command = match wrapper {
        [program, args @ ..] => {
            let mut command = Command::new(program);
            command.args(args).arg(exe);
            command
        }
        [] => Command::new(exe),
    };
    let out = command
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(marker, "1")
        .output();
    match out {
        Err(e) => common::skip_or_fail(test, &format!("{wrapper:?} cannot run: {e}")),
        Ok(out) => {
            let output = String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr);
            // What the scenario printed, in this test's output too.
            print!("{output}");
            assert!(
                out.status.success() && String::from_utf8_lossy(&out.stdout).contains("1 passed"),
                "{output}"
            );
        }
    }
}

/// A set may move to another thread (with its jobs), where its key may.
#[test]
fn a_set_is_send() {
    fn send<T: Send>(_: &T) {}
    let set: JobSet<String> = JobSet::new().unwrap();
    send(&set);
    let moved = thread::spawn(move || set.len()).join().unwrap();
    assert_eq!(moved, 0);
}

/// The voluntary context switches of the calling thread so far (each sleep of the set that blocked is one).
#[cfg(all(
    feature = "capture",
    target_os = "linux",
    not(grouptimeout_portable),
    not(grouptimeout_no_pidfd)
))]
fn sleeps_of_this_thread() -> u64 {
    let status = std::fs::read_to_string("/proc/thread-self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with("voluntary_ctxt_switches:"))
        .unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// A captured job fed with `set_input` larger than a pipe: its standard input is listed (writable) by a step and
/// closed after its last byte by a later one, before the set takes it out of its epoll set (the set's own duplicate
/// of it, which the set deregisters and closes itself; when the set registered the job's descriptor, its
/// `EPOLL_CTL_DEL` by the closed number failed with `EBADF`, `ENOENT` had the number been given to another file, or
/// `EPERM` to one that cannot be polled, as the `/proc/PID/stat` that other tests of this binary open all the time:
/// the case CI's musl pass once hit, 198 sleeps). The job stays watched by its exit descriptor (not stepped every
/// 10 ms as a job whose descriptors cannot be watched), and its exit is reported at once, long before its deadline. The set's thread sleeps a few times while the input is written and the command ends, not once every
/// 10 ms of the second the command then sleeps.
#[cfg(all(
    feature = "capture",
    target_os = "linux",
    not(grouptimeout_portable),
    not(grouptimeout_no_pidfd)
))]
#[test]
fn a_capture_whose_input_ends_stays_watched_by_its_exit() {
    let mut set = JobSet::new().unwrap();
    let mut child = Command::new("sh")
        .args(["-c", "cat >/dev/null; sleep 1; echo done"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn_group()
        .unwrap();
    let leader = child.id();
    child.set_input(vec![b'x'; 1 << 20]).unwrap();
    let started = Instant::now();
    let before = sleeps_of_this_thread();
    set.add_captured("fed", child, Some(started + Duration::from_secs(30)))
        .unwrap();
    let (_, result) = next(&mut set).unwrap();
    let (took, sleeps) = (started.elapsed(), sleeps_of_this_thread() - before);
    let Finished::Captured(captured) = result.unwrap() else {
        panic!("not a capture")
    };
    assert!(!captured.outcome.timed_out(), "{}", captured.outcome);
    assert_eq!(captured.input_written, 1 << 20);
    assert_eq!(captured.stdout, b"done\n");
    assert!(took < Duration::from_secs(6), "{took:?}");
    // Stepped every 10 ms during the sleep of 1 s: about 100 sleeps.
    assert!(sleeps < 60, "{sleeps} sleeps in {took:?}");
    assert!(is_dead(leader));
}

/// Issue 39: a captured job's idle timeout, stream limits and output sink hold in the set: a contained job that goes
/// quiet (leaving background children) is ended idle, whole; a plain one that keeps printing past its idle time ends
/// on its own; the sink saw every line as it came, while the capture kept what its limit says.
#[cfg(feature = "capture")]
#[test]
fn captured_jobs_end_when_idle_and_hand_over_their_output() {
    let test = "captured_jobs_end_when_idle_and_hand_over_their_output";
    let how = boundary(test);
    let dir = TempDir::new(test);
    let file = dir.0.join("quiet");
    let (script, n) = background(&file, how.is_some());
    let mut quiet = spawn(Some(&how), &(script + "echo started; sleep 60"), true);
    let busy_script = "i=0; while [ $i -lt 40 ]; do i=$((i+1)); echo $i; sleep 0.05; done";
    let mut busy = spawn(None, busy_script, true);
    let (tx, rx) = std::sync::mpsc::channel();
    for (key, child) in [(0, &mut quiet), (1, &mut busy)] {
        child.set_idle_timeout(Duration::from_secs(1));
        child.set_stream_limit(grouptimeout::Stream::Stdout, 10, 4);
        let tx = tx.clone();
        child.set_output_sink(move |_, bytes| {
            let _ = tx.send((key, bytes.to_vec()));
        });
    }
    let mut set = JobSet::new().unwrap();
    let started = Instant::now();
    let deadline = Some(started + Duration::from_secs(30));
    set.add_captured(0, quiet, deadline).unwrap();
    set.add_captured(1, busy, deadline).unwrap();
    while let Some((key, result)) = next(&mut set) {
        let Finished::Captured(out) = result.unwrap() else {
            panic!("job {key} was added captured");
        };
        if key == 0 {
            assert!(out.outcome.idle(), "{}", out.outcome);
            assert_eq!(out.stdout, b"started\n");
        } else {
            assert!(out.outcome.status().success(), "{}", out.outcome);
            assert!(started.elapsed() >= Duration::from_secs(2));
            assert_eq!(out.stdout, b"1\n2\n39\n40\n");
        }
    }
    assert!(started.elapsed() < Duration::from_secs(20));
    let mut seen = [Vec::new(), Vec::new()];
    for (key, bytes) in rx.try_iter() {
        seen[key].extend_from_slice(&bytes);
    }
    let want = (1..=40)
        .map(|i| format!("{i}\n"))
        .collect::<Vec<_>>()
        .concat();
    assert_eq!(seen, [b"started\n".to_vec(), want.into_bytes()]);
    assert_eq!(left_running(&[(file, n)]), Vec::<u32>::new());
}

/// Jobs that wait for their whole job (`set_wait_for_job`, issue 39.4) in a set: a leader that exits at once leaves a
/// child in its group (plain, and captured) or a `setsid` daemon (contained) that writes a file after a second. With
/// a far deadline each is reported only once its file is written; with a deadline of half a second, timed out, and
/// the file is never written. Nothing is left.
#[test]
fn jobs_that_wait_for_the_whole_job() {
    let test = "jobs_that_wait_for_the_whole_job";
    let dir = TempDir::new(test);
    let how = boundary(test);
    let mut set = JobSet::new().unwrap();
    let mut files = Vec::new();
    for key in [
        "plain",
        "captured",
        "contained",
        "plain-late",
        "contained-late",
    ] {
        let (done, pids) = (dir.0.join(key), dir.0.join(format!("{key}.pids")));
        let contained = key.starts_with("contained") && how.is_some();
        let writer = format!("sleep 1; echo done > {}", done.display());
        let script = if contained {
            format!(
                "setsid sh -c 'echo $$ >> {}; {writer}' >/dev/null 2>&1 &",
                pids.display()
            )
        } else {
            format!(
                "echo hi; ({writer}) >/dev/null 2>&1 & echo $! >> {}",
                pids.display()
            )
        };
        files.push((pids, 1));
        let mut child = spawn(contained.then_some(&how), &script, key == "captured");
        child.set_wait_for_job(true);
        let far = !key.ends_with("late");
        let deadline = Instant::now() + Duration::from_millis(if far { 20_000 } else { 500 });
        #[cfg(feature = "capture")]
        if key == "captured" {
            set.add_captured(key, child, Some(deadline)).unwrap();
            continue;
        }
        set.add(key, child, Some(deadline)).unwrap();
    }
    while let Some((key, finished)) = next(&mut set) {
        let finished = finished.unwrap();
        let written = dir.0.join(key).exists();
        assert_eq!(
            finished.outcome().timed_out(),
            key.ends_with("late"),
            "{key}: {finished:?}"
        );
        assert_eq!(written, !key.ends_with("late"), "{key}: {finished:?}");
        #[cfg(feature = "capture")]
        if let Finished::Captured(captured) = finished {
            assert_eq!(captured.stdout, b"hi\n");
        }
    }
    assert_eq!(left_running(&files), [] as [u32; 0]);
    thread::sleep(Duration::from_millis(1500));
    assert!(!dir.0.join("plain-late").exists() && !dir.0.join("contained-late").exists());
}

/// Issue 42.5: a child forked without exec while jobs run holds copies of every descriptor of this process: the
/// jobs' pidfds and pipes, and the set's own. An epoll registration lives until its file's last reference is closed,
/// so a job's descriptor that its step closed (a pidfd at the reap, a capture's input after its last byte) stays
/// registered while the fork holds a copy, and, ready for ever, made the set spin (2.7 s of CPU in 3.7 s) until the
/// fork exited. Here the fork sleeps 3 s while three plain jobs and a captured one fed with input end and another job
/// runs on for 3.5 s: the set's thread uses under 50 ms of CPU for all of it (a few milliseconds are expected; without
/// a pidfd, under 500 ms: see below). Run again alone (the fork would also hold the pipes other tests of this binary
/// are making meanwhile).
#[cfg(target_os = "linux")]
#[test]
fn a_fork_holding_the_jobs_descriptors_does_not_make_the_set_spin() {
    let test = "a_fork_holding_the_jobs_descriptors_does_not_make_the_set_spin";
    if std::env::var_os("GROUPTIMEOUT_TEST_FORK").is_none() {
        run_alone(test, &[], "GROUPTIMEOUT_TEST_FORK");
        return;
    }
    let mut set = JobSet::new().unwrap();
    let deadline = Some(Instant::now() + Duration::from_secs(20));
    let mut leaders = Vec::new();
    for key in 0..3 {
        let child = spawn(None, "sleep 0.3", false);
        leaders.push(child.id());
        set.add(key, child, deadline).unwrap();
    }
    let long = spawn(None, "sleep 3.5", false);
    leaders.push(long.id());
    set.add(9, long, deadline).unwrap();
    // Their second steps: their pidfds are opened and watched.
    assert!(set.next_timeout(Duration::from_millis(100)).is_none());
    // A capture whose input is written while the fork holds its standard input (closed after the last byte).
    #[cfg(feature = "capture")]
    {
        let mut fed = Command::new("sh")
            .args(["-c", "sleep 0.2; cat >/dev/null; sleep 0.2; echo done"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn_group()
            .unwrap();
        leaders.push(fed.id());
        fed.set_input(vec![b'x'; 1 << 20]).unwrap();
        set.add_captured(3, fed, deadline).unwrap();
    }
    let cpu = common::thread_cpu();
    // SAFETY: the child calls only async-signal-safe functions (`sleep`, `_exit`), as a child forked from a process
    // with other threads must; it touches no memory of the parent's.
    let fork = unsafe { libc::fork() };
    if fork == 0 {
        // SAFETY: as above; `_exit` ends the child without running the parent's exit handlers or destructors.
        unsafe {
            libc::sleep(3);
            libc::_exit(0);
        }
    }
    assert!(fork > 0, "fork: {}", std::io::Error::last_os_error());
    let mut ended = 0;
    while let Some((key, result)) = next(&mut set) {
        let outcome = result.unwrap().outcome();
        assert!(outcome.status().success(), "job {key}: {outcome}");
        ended += 1;
    }
    let used = common::thread_cpu().saturating_sub(cpu);
    let mut status = 0;
    // SAFETY: `status` is a live int that waitpid fills in; the pid is our own child, forked above.
    let reaped = unsafe { libc::waitpid(fork, &raw mut status, 0) };
    assert_eq!(reaped, fork);
    assert_eq!(ended, leaders.len());
    println!("the set's thread used {used:?} of CPU while the fork held its jobs' descriptors");
    // Without a pidfd the jobs' exits are found by the poll schedule (a check every 10 ms), which costs tens of
    // milliseconds of its own in these 3.5 s; a spin costs seconds.
    let limit = if cfg!(any(grouptimeout_no_pidfd, grouptimeout_portable)) {
        500
    } else {
        50
    };
    assert!(used < Duration::from_millis(limit), "{used:?} of CPU");
    assert_eq!(
        survivors_after(Duration::from_secs(5), &leaders),
        [] as [u32; 0]
    );
}

/// Issue 42.6: a panic caught around `next` (a captured job's output sink that panics once) leaves the set as it was
/// before: each job keeps its deadline and its registration. Both jobs write a line before the set's first round,
/// which steps both (their first steps asked for one yield: their instants are due), and the first one's sink
/// panics; caught, the set goes on and ends each job at its deadline (before, the instants of both had been taken for
/// that round, and neither job was ever ended), nothing left.
#[cfg(feature = "capture")]
#[test]
fn a_panic_caught_around_next_leaves_every_deadline_armed() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let panicked = Arc::new(AtomicBool::new(false));
    let mut set = JobSet::new().unwrap();
    let start = Instant::now();
    let deadlines = [1500, 2000].map(|ms| start + Duration::from_millis(ms));
    let mut leaders = Vec::new();
    for (key, deadline) in deadlines.into_iter().enumerate() {
        // Written after `add` has taken the first step (which would hand it to the sink), before `next`.
        let mut child = spawn(None, "sleep 0.1; echo hi; exec sleep 60", true);
        leaders.push(child.id());
        let once = Arc::clone(&panicked);
        child.set_output_sink(move |_, _| {
            assert!(once.swap(true, Ordering::SeqCst), "the sink's one panic");
        });
        set.add_captured(key, child, Some(deadline)).unwrap();
    }
    thread::sleep(Duration::from_millis(500));
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        set.next_timeout(Duration::from_secs(10))
    }));
    assert!(caught.is_err(), "the sink did not panic: {caught:?}");
    let mut ended = Vec::new();
    while let Some((key, result)) = next(&mut set) {
        let at = Instant::now();
        let Finished::Captured(out) = result.unwrap() else {
            panic!("job {key} was added captured");
        };
        assert!(out.outcome.timed_out(), "job {key}: {}", out.outcome);
        assert!(at >= deadlines[key], "job {key} ended before its deadline");
        ended.push(key);
    }
    assert_eq!(ended, [0, 1]);
    assert_eq!(
        survivors_after(Duration::from_secs(5), &leaders),
        [] as [u32; 0]
    );
}
