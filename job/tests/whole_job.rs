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

    /// The command of the issue: it exits at once, leaving a `setsid` daemon that writes `F` after a second (`P`
    /// gets the daemon's pid and its `sleep`'s).
    const DAEMON: &str =
        "setsid sh -c 'echo $$ >> P; sleep 1 & echo $! >> P; wait; echo done > F' &";

    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Mode {
        Cgroup,
        Reaper,
        Lineage,
        /// A plain group, guarded by `die_with_parent`; its rest is a background child in the group (a `setsid` one
        /// would leave the group, which the plain group cannot wait for).
        Group,
    }

    fn spawn(mode: Mode, dir: &Path) -> GroupChild {
        let script = if mode == Mode::Group {
            "sh -c 'echo $$ >> P; sleep 1 & echo $! >> P; wait; echo done > F' &"
        } else {
            DAEMON
        };
        let mut command = Command::new("sh");
        command.args(["-c", script]).current_dir(dir);
        let (child, containment) = match mode {
            Mode::Cgroup => (
                Contain::new()
                    .require(Containment::Cgroup)
                    .spawn(&mut command),
                Containment::Cgroup,
            ),
            Mode::Reaper => (
                Contain::new()
                    .cgroup(false)
                    .require(Containment::Reaper)
                    .spawn(&mut command),
                Containment::Reaper,
            ),
            Mode::Lineage => (
                Contain::new()
                    .cgroup(false)
                    .reaper(false)
                    .require(Containment::Lineage)
                    .spawn(&mut command),
                Containment::Lineage,
            ),
            Mode::Group => (command.spawn_group(), Containment::Group),
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
        let mut child = spawn(mode, &dir.0);
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
        let mut child = spawn(mode, &dir.0);
        let rest = rest(&dir.0);
        let outcome = child.wait_timeout(Duration::from_millis(500)).unwrap();
        assert!(
            matches!(outcome, Outcome::TimedOut(s) if s.success()),
            "{mode:?}: {outcome:?}"
        );
        assert_eq!(rest.survivors_after(LONG), Vec::<u32>::new(), "{mode:?}");
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
