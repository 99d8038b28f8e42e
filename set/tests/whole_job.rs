//! Whole-job waits (`set_wait_for_job`) in a `JobSet` of contained jobs whose rest ends about 10 ms after the command
//! (issue 42.2 and 42.3): each is reported within a second, with the command's exit status, though no deadline ends
//! it. As root the jobs have a cgroup of their own (where one can be made), as anyone else the job's own reaper.
#![cfg(all(target_os = "linux", not(grouptimeout_portable)))]

mod common;
#[path = "common/job.rs"]
mod job_common;

use std::process::{Command, Stdio};
use std::time::Duration;

use grouptimeout_job::{Contain, Containment, JobChildExt as _};
use grouptimeout_set::JobSet;

/// How many jobs the set waits for, one after the other (about 30 ms each). On the code before issue 42's fix, about
/// one cgroup job's wait in 30 never returned: the wait slept on a watch of `cgroup.events` alone, whose notice of
/// `populated 0` the kernel drops when the keeper removes the folder first.
const RUNS: usize = 100;

#[test]
fn whole_job_waits_of_short_rests_are_reported() {
    let test = "whole_job_waits_of_short_rests_are_reported";
    let cgroup = common::is_root()
        .then(|| job_common::cgroup_or_skip(test))
        .flatten();
    let (how, mode) = if let Some(how) = cgroup {
        (how, Containment::Cgroup)
    } else {
        let mut how = Contain::new();
        how.cgroup(false).require(Containment::Reaper);
        (how, Containment::Reaper)
    };
    let mut set = JobSet::new().unwrap();
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
        set.add(run, child, None).unwrap();
        // Bounded: a job not reported in time is ended by the set's drop when the test fails.
        let Some((key, finished)) = set.next_timeout(Duration::from_secs(1)) else {
            panic!("{mode:?}: run {run}: job {id} was not reported within a second");
        };
        assert_eq!(key, run);
        let outcome = finished.unwrap().outcome();
        assert!(!outcome.timed_out(), "{mode:?}: run {run}: {outcome:?}");
        assert_eq!(outcome.status().code(), Some(5), "{mode:?}: run {run}");
    }
}
