//! `set_wait_for_job` for a contained job (issue 39.4): after the command exits, a wait waits for the rest of the
//! job, a `setsid` daemon included, to exit on its own, up to the deadline, then ends it as at any deadline; in every
//! mode that reaches a daemon (the cgroup as root, the reaper as nobody, lineage), and for a plain group with the
//! guard of `die_with_parent` (a member of the group that is not waited for). Without a busy loop: the waiting
//! thread's CPU time is bounded. Death is read from `/proc/PID/stat`.
#![cfg(unix)]

mod common;
#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
#[path = "common/job.rs"]
mod job_common;

#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
mod linux {
    use super::common::*;
    use super::job_common::{as_nobody, cgroup_or_skip};

    use std::fs;
    use std::path::Path;
    use std::process::Command;
    use std::time::{Duration, Instant};

    use grouptimeout::{GroupChild, GroupCommandExt as _, Outcome};
    use grouptimeout_job::{Contain, Containment, JobChildExt as _};

    const LONG: Duration = Duration::from_secs(30);

    /// The command of the issue (`spawn`) exits at once, leaving a `setsid` daemon that writes `F` once its child has
    /// run (`P` gets the daemon's pid and its child's). What that child runs: a second; or, for a test that must end
    /// it first, until `go` exists (which the test makes only after the wait), so that a loaded machine slow to reach
    /// the wait does not see the daemon finish before its deadline.
    const A_SECOND: &str = "sleep 1";
    const UNTIL_GO: &str = "until [ -e go ]; do sleep 0.05; done";

    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Mode {
        Cgroup,
        Reaper,
        Lineage,
        /// A plain group, guarded by `die_with_parent`; its rest is a background child in the group (a `setsid` one
        /// would leave the group, which the plain group cannot wait for).
        Group,
        /// A plain group without a guard.
        Plain,
    }

    fn spawn(mode: Mode, dir: &Path, first: &str) -> GroupChild {
        // Its child, then `F`; out of the group (`setsid`) but for the plain group's test.
        let setsid = if mode == Mode::Group { "" } else { "setsid " };
        let script = format!(
            "{setsid}sh -c 'echo $$ >> P; ({first}) & echo $! >> P; wait; echo done > F' &"
        );
        let mut command = Command::new("sh");
        command.args(["-c", &script]).current_dir(dir);
        spawn_in(mode, &mut command)
    }

    /// Spawns `command` in `mode`, checks the containment it got, and makes its waits wait for the whole job.
    fn spawn_in(mode: Mode, command: &mut Command) -> GroupChild {
        let (child, containment) = match mode {
            Mode::Cgroup => (
                Contain::new().require(Containment::Cgroup).spawn(command),
                Containment::Cgroup,
            ),
            Mode::Reaper => (
                Contain::new()
                    .cgroup(false)
                    .require(Containment::Reaper)
                    .spawn(command),
                Containment::Reaper,
            ),
            Mode::Lineage => (
                Contain::new()
                    .cgroup(false)
                    .reaper(false)
                    .require(Containment::Lineage)
                    .spawn(command),
                Containment::Lineage,
            ),
            Mode::Group | Mode::Plain => (command.spawn_group(), Containment::Group),
        };
        let mut child = child.unwrap();
        assert_eq!(child.containment(), containment);
        if mode == Mode::Group {
            child.die_with_parent().unwrap();
        }
        child.set_wait_for_job(true);
        child
    }

    /// The job's rest as the command left it: the two processes it wrote to `P`, once it wrote them.
    fn rest(dir: &Path) -> KillOnDrop {
        let file = dir.join("P");
        assert!(eventually(LONG, || fs::read_to_string(&file)
            .is_ok_and(|s| s.lines().count() == 2)));
        KillOnDrop::from_file(&file)
    }

    /// The wait returns once the daemon has written its file and exited, the job's outcome the command's exit;
    /// nothing of it is left, and the waiting thread spent little CPU in a wait of about a second.
    fn finishes(mode: Mode) {
        let dir = TempDir::new(&format!("whole-{mode:?}"));
        let mut child = spawn(mode, &dir.0, A_SECOND);
        let rest = rest(&dir.0);
        let (start, cpu) = (Instant::now(), thread_cpu());
        let outcome = child.wait_timeout(LONG).unwrap();
        let (took, cpu) = (start.elapsed(), thread_cpu().saturating_sub(cpu));
        assert!(
            matches!(outcome, Outcome::Exited(s) if s.success()),
            "{mode:?}: {outcome:?}"
        );
        assert_eq!(
            fs::read_to_string(dir.0.join("F")).ok().as_deref(),
            Some("done\n"),
            "{mode:?}: the wait returned after {took:?}, before the daemon had done its work"
        );
        assert_eq!(rest.alive(), Vec::<u32>::new(), "{mode:?}");
        eprintln!("{mode:?}: {cpu:?} of CPU in a wait of {took:?}");
        assert!(
            cpu < Duration::from_millis(100),
            "{mode:?}: {cpu:?} of CPU in a wait of {took:?}"
        );
        assert_eq!(child.guard_id(), None);
    }

    /// At a deadline of half a second the daemon is ended: `TimedOut`, and the file is never written.
    fn ends_at_the_deadline(mode: Mode) {
        let dir = TempDir::new(&format!("whole-deadline-{mode:?}"));
        let mut child = spawn(mode, &dir.0, UNTIL_GO);
        let rest = rest(&dir.0);
        let outcome = child.wait_timeout(Duration::from_millis(500)).unwrap();
        assert!(
            matches!(outcome, Outcome::TimedOut(s) if s.success()),
            "{mode:?}: {outcome:?}"
        );
        assert_eq!(rest.survivors_after(LONG), Vec::<u32>::new(), "{mode:?}");
        fs::write(dir.0.join("go"), "").unwrap();
        std::thread::sleep(Duration::from_millis(1500));
        assert!(
            !dir.0.join("F").exists(),
            "{mode:?}: the daemon ran on after the deadline"
        );
    }

    #[test]
    fn cgroup_waits_for_the_whole_job() {
        if cgroup_or_skip("cgroup_waits_for_the_whole_job").is_some() {
            finishes(Mode::Cgroup);
        }
    }

    #[test]
    fn cgroup_ends_the_whole_job_at_the_deadline() {
        if cgroup_or_skip("cgroup_ends_the_whole_job_at_the_deadline").is_some() {
            ends_at_the_deadline(Mode::Cgroup);
        }
    }

    #[test]
    fn reaper_waits_for_the_whole_job_as_nobody() {
        if !as_nobody("reaper_waits_for_the_whole_job_as_nobody") {
            finishes(Mode::Reaper);
        }
    }

    #[test]
    fn reaper_ends_the_whole_job_at_the_deadline_as_nobody() {
        if !as_nobody("reaper_ends_the_whole_job_at_the_deadline_as_nobody") {
            ends_at_the_deadline(Mode::Reaper);
        }
    }

    #[test]
    fn lineage_waits_for_the_whole_job() {
        finishes(Mode::Lineage);
    }

    #[test]
    fn lineage_ends_the_whole_job_at_the_deadline() {
        ends_at_the_deadline(Mode::Lineage);
    }

    /// Runs `f` (a wait) in a thread of its own and waits at most `limit` for it: its result and how long it took, or
    /// `None` when it did not return in time. The thread (and what it holds) is then left behind, stuck in its wait:
    /// a wait that never returns fails the test instead of hanging it, and the test process's exit ends the thread.
    fn bounded<T: Send + 'static>(
        limit: Duration,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Option<(T, Duration)> {
        let (done, finished) = std::sync::mpsc::channel();
        let started = Instant::now();
        std::thread::spawn(move || {
            let _ = done.send(f());
        });
        let result = finished.recv_timeout(limit).ok()?;
        Some((result, started.elapsed()))
    }

    /// A command that exits 5 at once, leaving a rest (a subshell of its group) that ends about 10 ms later.
    const SHORT_REST: &str = "(sleep 0.01) & exit 5";

    /// How many jobs with a short rest the test of each mode waits for, one after the other (issue 42.2; about 20 ms
    /// each). On the code before the fix, about one cgroup job's wait in 30 never returned (the keeper removed the
    /// folder before the kernel told `populated 0`, which it then never told, and the keeper's exit was not watched):
    /// the test failed 10 times in 10 with 150 jobs. The other modes did not fail; they are tested for what issue 42.3
    /// asks of every mode, with fewer jobs (the reaper's test runs again as nobody; lineage and the plain groups scan
    /// `/proc` on a schedule, about 0.1 s a job here).
    fn short_rests(mode: Mode) -> usize {
        match mode {
            Mode::Cgroup => 150,
            Mode::Reaper => 30,
            Mode::Lineage | Mode::Group | Mode::Plain => 4,
        }
    }

    /// Whole-job waits with no deadline of `SHORT_REST` in `mode`, each in a thread bounded (issue 42.2 and 42.3):
    /// each one returns the command's exit status. A kept job's wait is woken by the keeper's exit: bounded to a
    /// second, as the issue asks (a dropped wake-up would show as the core's re-check, a second late). Lineage and the
    /// plain groups find the rest by scanning `/proc` on the poll schedule, whose scan of a loaded machine (CI runs
    /// passes of this suite side by side) can itself take a second: bounded to ten, which still fails a wait that
    /// never returns.
    fn short_rests_end(mode: Mode) {
        let limit = match mode {
            Mode::Cgroup | Mode::Reaper => Duration::from_secs(1),
            Mode::Lineage | Mode::Group | Mode::Plain => Duration::from_secs(10),
        };
        for run in 0..short_rests(mode) {
            let mut command = Command::new("sh");
            command.args(["-c", SHORT_REST]);
            let mut child = spawn_in(mode, &mut command);
            let id = child.id();
            let waited = bounded(limit, move || child.wait());
            let Some((outcome, took)) = waited else {
                panic!(
                    "{mode:?}: run {run}: the wait for job {id} did not return within {limit:?}"
                );
            };
            let status = outcome.unwrap();
            assert_eq!(
                status.code(),
                Some(5),
                "{mode:?}: run {run}: {status:?} after {took:?}"
            );
        }
    }

    #[test]
    fn cgroup_whole_job_waits_of_short_rests_return() {
        if cgroup_or_skip("cgroup_whole_job_waits_of_short_rests_return").is_some() {
            short_rests_end(Mode::Cgroup);
        }
    }

    #[test]
    fn reaper_whole_job_waits_of_short_rests_return_as_nobody() {
        if !as_nobody("reaper_whole_job_waits_of_short_rests_return_as_nobody") {
            short_rests_end(Mode::Reaper);
        }
    }

    #[test]
    fn lineage_whole_job_waits_of_short_rests_return() {
        short_rests_end(Mode::Lineage);
    }

    #[test]
    fn guarded_group_whole_job_waits_of_short_rests_return() {
        short_rests_end(Mode::Group);
    }

    #[test]
    fn plain_group_whole_job_waits_of_short_rests_return() {
        short_rests_end(Mode::Plain);
    }

    /// A reaper job's keeper stopped (`kill -STOP` of the job's id) while a whole-job wait with no deadline sleeps on
    /// its exit (issue 42.3): the keeper cannot end the job once its rest has exited, and its exit, which the wait
    /// sleeps on, never comes until it is continued. The wait checks again within a second all the same, which
    /// continues it (`SIGCONT`): it returns the command's status within a few seconds. On the code before the fix
    /// it never returned (the test continues the keeper itself to end it).
    #[test]
    fn a_whole_job_wait_continues_a_keeper_stopped_while_it_sleeps() {
        let mut command = Command::new("sh");
        command.args(["-c", "(sleep 0.5) & exit 3"]);
        let mut child = spawn_in(Mode::Reaper, &mut command);
        // Opened while the keeper is our unreaped child: the signals below reach it and no later owner of its pid.
        let (keeper, command) = (pidfd_of(child.id()).unwrap(), child.command_id());
        let (done, finished) = std::sync::mpsc::channel();
        let waiting = std::thread::spawn(move || {
            let _ = done.send(child.wait());
        });
        // The command exits at once (a zombie its keeper holds); a moment later the wait sleeps on the keeper's exit.
        assert!(eventually(LONG, || state_and_group(command)
            .is_some_and(|(s, _)| s == 'Z')));
        std::thread::sleep(Duration::from_millis(100));
        assert!(signal_through(&keeper, libc::SIGSTOP));
        let waited = finished.recv_timeout(Duration::from_secs(5));
        let stuck = waited.is_err();
        if stuck {
            signal_through(&keeper, libc::SIGCONT);
        }
        let waited = waited.or_else(|_| finished.recv_timeout(LONG));
        waiting.join().unwrap();
        let status = waited.expect("the wait never returned").unwrap();
        assert!(
            !stuck,
            "the wait returned only once the test continued the keeper"
        );
        assert_eq!(status.code(), Some(3));
    }

    /// How many rounds of the three commands that leave nothing a cgroup job runs (issue 42.1: 120 waits, about 7 ms
    /// each): on the code before the fix, 22 of 23 runs of the test failed (1 to 18 of the 120 waits ran into their
    /// deadline: the keeper had removed the folder, and `cgroup.events` could not be opened).
    const LEFT_NOTHING: usize = 40;

    /// Whole-job waits with a deadline of a second, of cgroup jobs that leave nothing (issue 42.1): none reaches the
    /// deadline, each returns the command's own exit.
    #[test]
    fn cgroup_whole_job_waits_of_jobs_that_leave_nothing_end_at_the_exit() {
        if cgroup_or_skip("cgroup_whole_job_waits_of_jobs_that_leave_nothing_end_at_the_exit")
            .is_none()
        {
            return;
        }
        for run in 0..LEFT_NOTHING {
            for (script, code) in [("true", 0), ("exit 1", 1), ("echo hi", 0)] {
                let mut command = Command::new("sh");
                command
                    .args(["-c", script])
                    .stdout(std::process::Stdio::null());
                let mut child = spawn_in(Mode::Cgroup, &mut command);
                let outcome = child.wait_timeout(Duration::from_secs(1)).unwrap();
                assert!(
                    !outcome.timed_out(),
                    "run {run}, {script:?}: a job that left nothing ran into its deadline: {outcome:?}"
                );
                assert_eq!(
                    outcome.status().code(),
                    Some(code),
                    "run {run}, {script:?}: {outcome:?}"
                );
            }
        }
    }

    /// The guard of `die_with_parent` is a member of the group that lives until the job has ended: the wait does not
    /// wait for it.
    #[test]
    fn a_guarded_group_waits_for_its_members_but_not_its_guard() {
        finishes(Mode::Group);
    }

    #[test]
    fn a_guarded_group_ends_at_the_deadline() {
        ends_at_the_deadline(Mode::Group);
    }
}
