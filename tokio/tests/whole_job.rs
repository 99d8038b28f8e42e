//! Whole-job waits (`set_wait_for_job`) through the adapter, of contained jobs whose rest ends about 10 ms after the
//! command (issue 42.2 and 42.3): each future returns within a second, with the command's exit status, though no
//! deadline ends it; under both runtimes. As root the jobs have a cgroup of their own (where one can be made), as
//! anyone else the job's own reaper.
#![cfg(target_os = "linux")]

use std::process::{Command, Stdio};
use std::time::Duration;

use grouptimeout_job::{Contain, Containment, JobChildExt as _};

/// How many jobs each runtime waits for, one after the other (about 30 ms each). On the code before issue 42's fix,
/// about one cgroup job's wait in 30 never returned: the wait slept on a watch of `cgroup.events` alone, whose notice
/// of `populated 0` the kernel drops when the keeper removes the folder first.
const RUNS: usize = 60;

/// A cgroup where one can be made (as root), else the job's own reaper (saying so).
fn boundary() -> (Contain, Containment) {
    let mut how = Contain::new();
    how.require(Containment::Cgroup);
    let cgroup = how
        .spawn(&mut Command::new("true"))
        .and_then(|mut c| c.wait());
    if let Err(e) = cgroup {
        eprintln!("no cgroup can be made here ({e}): the job's own reaper instead");
        how = Contain::new();
        how.cgroup(false).require(Containment::Reaper);
        return (how, Containment::Reaper);
    }
    (how, Containment::Cgroup)
}

async fn short_rests_return() {
    let (how, mode) = boundary();
    for run in 0..RUNS {
        let mut child = how
            .spawn(
                Command::new("sh")
                    .args(["-c", "(sleep 0.01) & exit 5"])
                    .stdin(Stdio::null()),
            )
            .unwrap();
        assert_eq!(child.containment(), mode);
        child.set_wait_for_job(true);
        let id = child.id();
        // Bounded: a future that has not returned in time is dropped, which ends its job.
        let waited = tokio::time::timeout(
            Duration::from_secs(1),
            grouptimeout_tokio::wait(child, None),
        )
        .await;
        let Ok(outcome) = waited else {
            panic!("{mode:?}: run {run}: the wait for job {id} did not return within a second");
        };
        let outcome = outcome.unwrap().outcome;
        assert!(!outcome.timed_out(), "{mode:?}: run {run}: {outcome:?}");
        assert_eq!(outcome.status().code(), Some(5), "{mode:?}: run {run}");
    }
}

#[tokio::test(flavor = "current_thread")]
async fn whole_job_waits_of_short_rests_return_current_thread() {
    short_rests_return().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn whole_job_waits_of_short_rests_return_multi_thread() {
    short_rests_return().await;
}
