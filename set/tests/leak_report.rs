//! What a finished job of a `JobSet` left behind (issue 44.2), whichever way it was added: `grouptimeout-job`'s
//! `JobOutputExt` on the `Finished` gives its containment, its leftovers and its leak report, for a job added with
//! `add` as for one added with `add_captured`. Contained jobs (a cgroup as root, the job's own reaper as nobody) with a
//! leak grace: one leaks a `setsid` daemon (added, and captured), one leaks nothing that outlives the grace, one runs
//! into its deadline (its child killed with it, not leaked); a plain group's report says that it lists nothing.
#![cfg(all(target_os = "linux", not(grouptimeout_portable)))]

mod common;
#[path = "common/job.rs"]
mod job_common;

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{eventually, KillOnDrop, TempDir};
use grouptimeout::{GroupChild, GroupCommandExt as _};
use grouptimeout_job::{Contain, Containment, JobChildExt as _, JobOutputExt as _, Seen};
use grouptimeout_set::{Finished, JobSet};

const LONG: Duration = Duration::from_secs(20);

/// The boundary for this user: as root a cgroup (where one can be made), else the job's own reaper.
fn boundary(test: &str) -> (Contain, Containment) {
    if common::is_root() {
        if let Some(how) = job_common::cgroup_or_skip(test) {
            return (how, Containment::Cgroup);
        }
    }
    let mut how = Contain::new();
    how.cgroup(false).require(Containment::Reaper);
    (how, Containment::Reaper)
}

fn spawn(how: Option<&Contain>, script: &str, dir: &Path, piped: bool) -> GroupChild {
    let mut command = Command::new("sh");
    command
        .args(["-c", script])
        .current_dir(dir)
        .stdin(Stdio::null());
    if piped {
        command.stdout(Stdio::piped()).stderr(Stdio::piped());
    } else {
        command.stdout(Stdio::null());
    }
    let mut child = match how {
        Some(how) => how.spawn(&mut command).unwrap(),
        None => command.spawn_group().unwrap(),
    };
    child.set_leak_grace(Duration::from_secs(2));
    child
}

/// The processes whose pids a job wrote to `file` (one), once written.
fn written(file: &Path) -> KillOnDrop {
    assert!(eventually(LONG, || fs::read_to_string(file)
        .is_ok_and(|s| s.ends_with('\n'))));
    KillOnDrop::from_file(file)
}

fn reports_whichever_way_added(test: &str) {
    let dir = TempDir::new(test);
    let (how, mode) = boundary(test);
    let mut set = JobSet::new().unwrap();
    let daemon = |key: &str| format!("setsid sleep 60 >/dev/null 2>&1 & echo $! > {key}; echo out");
    let far = Some(Instant::now() + LONG);
    let mut pids = Vec::new();
    // (A capture needs the feature `capture`, on by default.)
    for key in ["added", "captured"]
        .into_iter()
        .take(if cfg!(feature = "capture") { 2 } else { 1 })
    {
        let child = spawn(Some(&how), &daemon(key), &dir.0, key == "captured");
        assert_eq!(child.containment(), mode);
        #[cfg(feature = "capture")]
        if key == "captured" {
            set.add_captured(key, child, far).unwrap();
            pids.push((key, written(&dir.0.join(key))));
            continue;
        }
        set.add(key, child, far).unwrap();
        pids.push((key, written(&dir.0.join(key))));
    }
    let in_time = "(sleep 0.1) & exit 0";
    set.add("in time", spawn(Some(&how), in_time, &dir.0, false), far)
        .unwrap();
    let late = "sleep 60 >/dev/null 2>&1 & echo $! > late; sleep 60";
    let child = spawn(Some(&how), late, &dir.0, false);
    set.add(
        "late",
        child,
        Some(Instant::now() + Duration::from_millis(300)),
    )
    .unwrap();
    pids.push(("late", written(&dir.0.join("late"))));
    let plain = "setsid sleep 60 >/dev/null 2>&1 & echo $! > plain";
    set.add("plain", spawn(None, plain, &dir.0, false), far)
        .unwrap();
    // Not reached by a plain group: ended by the drop of this list.
    let escaped = written(&dir.0.join("plain"));

    while let Some((key, finished)) = set.next_timeout(LONG) {
        let finished = finished.unwrap();
        let report = finished.leak_report();
        eprintln!("{key}: {}; {report}", finished.outcome());
        let pid = pids.iter().find(|(k, _)| *k == key).map(|(_, p)| p.0[0]);
        if key == "plain" {
            assert!(matches!(finished, Finished::Waited(..)));
            assert_eq!(finished.containment(), Containment::Group);
            assert_eq!((report.seen, report.leaks()), (Seen::Nothing, None));
            continue;
        }
        assert_eq!(finished.containment(), mode, "{key}");
        assert_eq!(report.seen, Seen::WholeJob, "{key}");
        assert_eq!(finished.outcome().timed_out(), key == "late", "{key}");
        let killed: Vec<u32> = finished.leftovers().iter().map(|l| l.pid).collect();
        match (key, pid) {
            ("in time", _) => assert_eq!((report.leaks(), &killed[..]), (Some(&[][..]), &[][..])),
            ("late", Some(pid)) => {
                assert!(killed.contains(&pid), "{key}: {report:?}");
                assert_eq!(report.leaks(), Some(&[][..]), "{key}: {report:?}");
            }
            (_, Some(pid)) => {
                assert_eq!(killed, [pid], "{key}: {report:?}");
                assert_eq!(report.leaks().map(<[_]>::len), Some(1), "{key}");
            }
            _ => unreachable!(),
        }
        #[cfg(feature = "capture")]
        if let Finished::Captured(captured) = &finished {
            assert_eq!(captured.stdout, b"out\n");
            assert_eq!(captured.leak_report(), report);
        }
    }
    assert!(set.is_empty());
    for (key, pids) in pids {
        assert_eq!(pids.survivors_after(LONG), Vec::<u32>::new(), "{key}");
    }
    assert_eq!(
        escaped.alive(),
        escaped.0,
        "a plain group reached a setsid child"
    );
}

#[test]
fn a_job_reports_its_leftovers_whichever_way_it_was_added() {
    reports_whichever_way_added("a_job_reports_its_leftovers_whichever_way_it_was_added");
}

#[test]
fn a_job_reports_its_leftovers_whichever_way_it_was_added_as_nobody() {
    let test = "a_job_reports_its_leftovers_whichever_way_it_was_added_as_nobody";
    if !common::rerun_as_nobody(test, test) {
        reports_whichever_way_added(test);
    }
}
