//! Issue 37.1: a finished job holds nothing. Once a wait has ended a job of `spawn_contained` (its leader reaped, the
//! job ended, its folder removed), the `GroupChild` the caller keeps holds no descriptor of the job (its cgroup's
//! `cgroup.kill` and `cgroup.events`, a pidfd) and no keeper's shared page: a service that keeps a table of finished
//! handles does not run out of descriptors. What the getters tell stays.
//!
//! Its own test binary, with one test: it counts this process's descriptors and mappings, which another test running
//! beside it in the same process would change.
#![cfg(unix)]

mod common;

#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
mod linux {
    use std::fs;
    use std::process::{Command, Stdio};
    use std::time::Duration;

    use grouptimeout::GroupChild;
    use grouptimeout_job::{Contain, Containment, JobChildExt as _};

    use super::common::{is_root, skip_or_fail};

    const JOBS: usize = 100;

    /// What this process holds now: its descriptors' targets, and its shared anonymous mappings (a keeper's page is one:
    /// `rw-s` on `/dev/zero (deleted)`).
    fn held() -> (Vec<String>, usize) {
        let fds = fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|fd| fs::read_link(fd.ok()?.path()).ok())
            .map(|target| target.to_string_lossy().into_owned())
            .collect();
        let pages = fs::read_to_string("/proc/self/maps")
            .unwrap()
            .lines()
            .filter(|l| l.contains(" rw-s ") && l.contains("/dev/zero"))
            .count();
        (fds, pages)
    }

    /// Runs `JOBS` jobs of `how` (each must get `mode`), keeps their finished handles, and checks that those hold
    /// nothing of their jobs.
    fn finished_jobs_hold_nothing(how: &Contain, mode: Containment) {
        // This process's job folders are named `grouptimeout-PID-…`.
        let folders = format!("grouptimeout-{}-", std::process::id());
        let (fds_before, pages_before) = held();
        let mut kept: Vec<GroupChild> = Vec::with_capacity(JOBS);
        for _ in 0..JOBS {
            let mut child = how
                .spawn(Command::new("true").stdin(Stdio::null()))
                .unwrap();
            assert_eq!(child.containment(), mode);
            let outcome = child.wait_timeout(Duration::from_secs(60)).unwrap();
            assert_eq!(outcome.status().code(), Some(0), "{mode:?}");
            kept.push(child);
        }
        let (fds, pages) = held();
        let of_jobs: Vec<&String> = fds
            .iter()
            .filter(|t| t.contains(&folders) || t.contains("pidfd"))
            .collect();
        assert_eq!(
            of_jobs,
            [] as [&String; 0],
            "{mode:?}: descriptors held by {JOBS} finished handles"
        );
        assert!(
            fds.len() < fds_before.len() + 10,
            "{mode:?}: {} descriptors before {JOBS} jobs, {} with their finished handles kept: {fds:?}",
            fds_before.len(),
            fds.len()
        );
        assert!(
            pages < pages_before + 10,
            "{mode:?}: {pages_before} shared pages mapped before {JOBS} jobs, {pages} with their finished handles kept"
        );
        // What the getters tell stays: the boundary, the command (the keeper's child, not the keeper), no fallback, no
        // leftovers.
        for child in &kept {
            assert_eq!(child.containment(), mode);
            assert_ne!(child.command_id(), child.id(), "{mode:?}");
            assert_eq!(child.fallback_reason(), None);
            assert_eq!(child.leftovers(), [], "{mode:?}");
            assert!(!child.in_job(child.command_id()));
        }
        // A later wait of a finished handle answers as before.
        let last = kept.last_mut().unwrap();
        assert_eq!(last.wait().unwrap().code(), Some(0));
    }

    #[test]
    fn finished_handles_hold_no_descriptor_and_no_page() {
        let test = "finished_handles_hold_no_descriptor_and_no_page";
        let mut reaper = Contain::new();
        reaper.cgroup(false).require(Containment::Reaper);
        finished_jobs_hold_nothing(&reaper, Containment::Reaper);
        if !is_root() {
            skip_or_fail(
                test,
                "not root: no cgroup can be made here, the cgroup half is skipped",
            );
            return;
        }
        let mut cgroup = Contain::new();
        cgroup.require(Containment::Cgroup);
        if let Err(e) = cgroup
            .spawn(&mut Command::new("true"))
            .and_then(|mut c| c.wait())
        {
            skip_or_fail(test, &format!("no cgroup can be made here: {e}"));
            return;
        }
        finished_jobs_hold_nothing(&cgroup, Containment::Cgroup);
    }
}
