//! Stop first, then sweep (issue 22.1): at a kill point the leader and its group get the signal before, or at once
//! with, the search for the job's other processes, in every mode. A script killed at its deadline while it waits for
//! a `sleep` must never run its next command: with the old order (lineage killed the marked processes and the
//! group's members one by one, waited up to a second for them, and only then signalled the group), the shell saw its
//! `sleep` die and ran on, creating files, truncating them, and starting escapees after the sweep.
//!
//! Each scenario runs `ROUNDS` jobs of each script at once, beside a busy loop (the scenarios run at once too, so
//! the CPUs are busy, which gives a leader that is not stopped at once the time to run on), as this process's user
//! and, re-run through `setpriv`, as nobody (where no cgroup can be made: the reaper, lineage and the group).
#![cfg(unix)]

mod common;
#[path = "common/job.rs"]
mod job_common;

#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
mod linux {
    use super::common::*;
    use super::job_common::rerun_as_nobody;

    use std::fs;
    use std::os::unix::process::ExitStatusExt as _;
    use std::path::{Path, PathBuf};
    use std::process::{Child, Command, Stdio};
    use std::time::Duration;

    use grouptimeout::{GroupChild, GroupCommandExt};
    use grouptimeout_job::{Contain, Containment, JobChildExt as _};

    /// Jobs of each script per scenario, run at once (with the old order nearly all of them ran on, as root and as
    /// nobody: 39 or 40 of 40 jobs in 3 runs with 20 rounds and two busy loops).
    const ROUNDS: usize = 10;
    /// The deadline: the job waits in its `sleep` by then.
    const DEADLINE: Duration = Duration::from_millis(300);

    /// The script of the issue: after its `sleep` it would create `F` and start an escapee that writes its pid to `p`.
    const RUNS_ON: &str =
        "sleep 100; touch F; setsid sh -c 'echo $$ > p; exec sleep 201' & sleep 100";
    /// After its `sleep` it would replace `F` (which holds `ORIGINAL`) by writing over it: truncated, then rewritten.
    const REPLACES: &str = "sleep 100; echo REPLACED > F.tmp; cat F.tmp > F";

    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Mode {
        Cgroup,
        Reaper,
        Lineage,
        Group,
    }

    impl Mode {
        fn spawn(self, command: &mut Command) -> GroupChild {
            let child = match self {
                Mode::Cgroup => Contain::new()
                    .require(Containment::Cgroup)
                    .spawn(command)
                    .unwrap(),
                Mode::Reaper => Contain::new()
                    .cgroup(false)
                    .require(Containment::Reaper)
                    .spawn(command)
                    .unwrap(),
                Mode::Lineage => Contain::new()
                    .cgroup(false)
                    .reaper(false)
                    .require(Containment::Lineage)
                    .spawn(command)
                    .unwrap(),
                Mode::Group => command.spawn_group().unwrap(),
            };
            let expected = match self {
                Mode::Cgroup => Containment::Cgroup,
                Mode::Reaper => Containment::Reaper,
                Mode::Lineage => Containment::Lineage,
                Mode::Group => Containment::Group,
            };
            assert_eq!(child.containment(), expected);
            child
        }
    }

    /// A process that keeps a CPU busy while it lives (killed and reaped when dropped): one per scenario, and the
    /// scenarios run at once.
    struct Busy(Vec<Child>);

    impl Busy {
        fn new() -> Busy {
            Busy(
                (0..1)
                    .map(|_| {
                        Command::new("sh")
                            .args(["-c", "while :; do :; done"])
                            .spawn()
                            .unwrap()
                    })
                    .collect(),
            )
        }
    }

    impl Drop for Busy {
        fn drop(&mut self) {
            for child in &mut self.0 {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }

    /// Runs `script` in a folder of its own in `mode`, kills it at the deadline, and says what it did after the kill
    /// started (nothing, if all is well).
    fn one_job(mode: Mode, dir: &Path, script: &str) -> Vec<String> {
        fs::create_dir(dir).unwrap();
        fs::write(dir.join("F"), "ORIGINAL\n").unwrap();
        if script == RUNS_ON {
            fs::remove_file(dir.join("F")).unwrap();
        }
        let mut child = mode.spawn(
            Command::new("sh")
                .args(["-c", script])
                .current_dir(dir)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        );
        let mut wrong = Vec::new();
        match child.wait_timeout(DEADLINE) {
            Ok(o) if o.timed_out() && o.status().signal() == Some(libc::SIGKILL) => {}
            Ok(o) => wrong.push(format!("the leader's outcome is \"{o}\"")),
            // The old order: the script forked on while lineage killed it, past the kill's bound.
            Err(e) => wrong.push(format!("the wait failed: {e}")),
        }
        drop(child);
        // An escapee would have been started after `F`: its pid, if it got as far as writing it.
        let escapee: Option<u32> = fs::read_to_string(dir.join("p"))
            .ok()
            .and_then(|p| p.trim().parse().ok());
        if let Some(pid) = escapee {
            // Only while it works in the job's folder: the escapee may have died, and its pid been reused, before the
            // file was read.
            let folder = fs::canonicalize(dir).ok();
            let escapee = KillOnDrop::checked(vec![pid], |pid| {
                fs::read_link(format!("/proc/{pid}/cwd")).ok() == folder
            });
            if !escapee.survivors_after(Duration::from_secs(2)).is_empty() {
                wrong.push(format!("its escapee {pid} is alive after the wait"));
                escapee.kill();
            }
        }
        let f = fs::read_to_string(dir.join("F"));
        if script == RUNS_ON && f.is_ok() {
            wrong.push("it ran its next command (F exists)".into());
        }
        if script == REPLACES && f.as_deref().ok() != Some("ORIGINAL\n") {
            wrong.push(format!("F was lost: {f:?}"));
        }
        let _ = fs::remove_dir_all(dir);
        wrong
    }

    /// Runs [`ROUNDS`] jobs of each script at once in `mode`, beside busy loops; fails naming what went wrong.
    fn stop_first(mode: Mode) {
        let _busy = Busy::new();
        // Removed also when a job's thread panics.
        let base = TempDir::new(&format!("stop-first-{mode:?}"));
        let base = &base.0;
        let jobs: Vec<(PathBuf, &str)> = (0..ROUNDS)
            .flat_map(|i| {
                [
                    (base.join(format!("runs-on-{i}")), RUNS_ON),
                    (base.join(format!("replaces-{i}")), REPLACES),
                ]
            })
            .collect();
        let wrong: Vec<String> = std::thread::scope(|s| {
            let threads: Vec<_> = jobs
                .iter()
                .map(|(dir, script)| s.spawn(move || (dir, one_job(mode, dir, script))))
                .collect();
            threads
                .into_iter()
                .map(|t| t.join().unwrap())
                .filter(|(_, wrong)| !wrong.is_empty())
                .map(|(dir, wrong)| format!("{}: {}", dir.display(), wrong.join("; ")))
                .collect()
        });
        assert!(
            wrong.is_empty(),
            "{mode:?}: {} of {} jobs ran on after the kill started:\n{}",
            wrong.len(),
            jobs.len(),
            wrong.join("\n")
        );
    }

    #[test]
    fn cgroup_stops_the_leader_first() {
        let test = "cgroup_stops_the_leader_first";
        if let Err(e) = Contain::new()
            .require(Containment::Cgroup)
            .spawn(&mut Command::new("true"))
            .and_then(|mut c| c.wait())
        {
            skip_or_fail(test, &format!("no cgroup can be made here: {e}"));
            return;
        }
        stop_first(Mode::Cgroup);
    }

    #[test]
    fn reaper_stops_the_leader_first() {
        stop_first(Mode::Reaper);
    }

    #[test]
    fn reaper_stops_the_leader_first_as_nobody() {
        if !rerun_as_nobody("reaper_stops_the_leader_first_as_nobody") {
            stop_first(Mode::Reaper);
        }
    }

    #[test]
    fn lineage_stops_the_leader_first() {
        stop_first(Mode::Lineage);
    }

    #[test]
    fn group_stops_the_leader_first() {
        stop_first(Mode::Group);
    }

    #[test]
    fn lineage_stops_the_leader_first_as_nobody() {
        if !rerun_as_nobody("lineage_stops_the_leader_first_as_nobody") {
            stop_first(Mode::Lineage);
        }
    }

    #[test]
    fn group_stops_the_leader_first_as_nobody() {
        if !rerun_as_nobody("group_stops_the_leader_first_as_nobody") {
            stop_first(Mode::Group);
        }
    }
}
