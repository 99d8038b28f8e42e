//! `leak_report` (issue 44.2): what a job left behind, told as a test runner tells leaks. With a leak grace
//! (`set_leak_grace`), a command that exits at once leaving a `setsid` daemon, a plain child with its output
//! redirected, and a subshell that exits within the grace: the first two are reported as leaked and are dead, the
//! third is not reported, in every mode that sees the whole job (a cgroup as root, the reaper as nobody) and in
//! lineage (by its mark). What a deadline or `kill()` ended while the command ran is reported apart: killed with the
//! job, not leaked. A plain group's report says that it lists nothing and does not see a `setsid` child. Death is
//! read from `/proc/PID/stat`; the processes are found by the pid files the commands write.
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
    use grouptimeout_job::{Contain, Containment, JobChildExt as _, LeakReport, Seen};

    const LONG: Duration = Duration::from_secs(30);

    /// The leak grace of these tests: long enough for the subshell's 0.1 s on a loaded machine.
    const GRACE: Duration = Duration::from_secs(2);

    /// The command of the check: it leaks a `setsid` daemon and a plain child with its output redirected
    /// (their pids to `P`, one a line), and starts a subshell that ends 0.1 s later (its pid to `Q`), then exits.
    const LEAKS: &str =
        "setsid sleep 60 >/dev/null 2>&1 & echo $! >> P; sleep 60 >/dev/null 2>&1 & echo $! >> P; \
                         (sleep 0.1) & echo $! > Q; exit 0";

    fn spawn(containment: Containment, script: &str, dir: &Path) -> GroupChild {
        let mut command = Command::new("sh");
        command.args(["-c", script]).current_dir(dir);
        let mut how = Contain::new();
        let child = match containment {
            Containment::Cgroup => how.require(Containment::Cgroup).spawn(&mut command),
            Containment::Reaper => how
                .cgroup(false)
                .require(Containment::Reaper)
                .spawn(&mut command),
            Containment::Lineage => how
                .cgroup(false)
                .reaper(false)
                .require(Containment::Lineage)
                .spawn(&mut command),
            _ => command.spawn_group(),
        };
        let child = child.unwrap();
        assert_eq!(child.containment(), containment);
        child
    }

    /// The processes whose pids the command wrote to `file`, once it wrote `n` of them.
    fn written(file: &Path, n: usize) -> KillOnDrop {
        assert!(eventually(LONG, || fs::read_to_string(file)
            .is_ok_and(|s| s.lines().count() == n)));
        KillOnDrop::from_file(file)
    }

    fn pids(report: &LeakReport) -> Vec<u32> {
        let mut pids: Vec<u32> = report.killed.iter().map(|l| l.pid).collect();
        pids.sort_unstable();
        pids
    }

    /// The check in one job: the daemon and the plain child are leaked (listed, killed), the subshell that
    /// ended within the grace is not listed; the outcome is the command's exit.
    fn leaks_are_reported(containment: Containment) {
        let dir = TempDir::new(&format!("leak-report-{containment:?}"));
        let mut child = spawn(containment, LEAKS, &dir.0);
        child.set_leak_grace(GRACE);
        let leaked = written(&dir.0.join("P"), 2);
        let exits = written(&dir.0.join("Q"), 1);
        let outcome = child.wait_timeout(LONG).unwrap();
        assert!(
            matches!(outcome, Outcome::Exited(s) if s.success()),
            "{containment:?}: {outcome:?}"
        );
        let report = child.leak_report();
        let seen = if containment == Containment::Lineage {
            Seen::Marked
        } else {
            Seen::WholeJob
        };
        assert_eq!(report.seen, seen, "{report:?}");
        assert!(report.leaked, "{report:?}");
        let mut want = leaked.0.clone();
        want.sort_unstable();
        assert_eq!(pids(&report), want, "{containment:?}: {report}");
        assert_eq!(report.leaks(), Some(&report.killed[..]));
        assert!(!pids(&report).contains(&exits.0[0]), "{report}");
        assert_eq!(
            report.killed.iter().map(|l| &*l.name).collect::<Vec<_>>(),
            ["sleep", "sleep"],
            "{report}"
        );
        assert!(
            report.to_string().starts_with("leaked 2 processes: "),
            "{report}"
        );
        assert_eq!(leaked.survivors_after(LONG), Vec::<u32>::new());
        eprintln!("{containment:?}: {report}");
    }

    /// A job whose only leftover ends within the grace: no leaks, and the wait returns once it is gone.
    fn a_leak_that_exits_in_time_is_not_reported(containment: Containment) {
        let dir = TempDir::new(&format!("leak-report-in-time-{containment:?}"));
        let mut child = spawn(containment, "(sleep 0.1) & echo $! > Q; exit 0", &dir.0);
        child.set_leak_grace(LONG);
        let exits = written(&dir.0.join("Q"), 1);
        let start = Instant::now();
        let outcome = child.wait_timeout(LONG).unwrap();
        assert!(!outcome.timed_out());
        assert!(
            start.elapsed() < LONG / 2,
            "the wait ran to the grace's end"
        );
        let report = child.leak_report();
        assert_eq!(report.leaks(), Some(&[][..]), "{report:?}");
        assert_eq!(report.killed, []);
        assert_eq!(report.to_string(), "no leaks");
        assert!(exits.alive().is_empty());
    }

    /// What a deadline, or `kill()` while the command runs, ends is killed with the job, not leaked: listed in
    /// `killed`, and `leaks()` is empty.
    fn a_timeout_is_not_a_leak(containment: Containment, by_kill: bool) {
        let dir = TempDir::new(&format!("leak-report-timeout-{containment:?}-{by_kill}"));
        let script = "sleep 60 >/dev/null 2>&1 & echo $! >> P; sleep 60";
        let mut child = spawn(containment, script, &dir.0);
        child.set_leak_grace(GRACE);
        let rest = written(&dir.0.join("P"), 1);
        let outcome = if by_kill {
            child.kill().unwrap();
            child.wait_timeout(LONG).unwrap()
        } else {
            child.wait_timeout(Duration::from_millis(200)).unwrap()
        };
        assert_eq!(outcome.timed_out(), !by_kill, "{outcome:?}");
        let report = child.leak_report();
        assert!(!report.leaked, "{report:?}");
        assert_eq!(report.leaks(), Some(&[][..]), "{report:?}");
        assert!(pids(&report).contains(&rest.0[0]), "{report:?}");
        assert!(
            report
                .to_string()
                .starts_with("no leaks; killed with the job while its command ran: "),
            "{report}"
        );
        assert_eq!(rest.survivors_after(LONG), Vec::<u32>::new());
    }

    /// A job whose leftovers were kept (`set_kill_leftovers(false)`) was never signalled: nothing is known of leaks,
    /// which is not "no leaks". The kept child is ended here by its pid file.
    fn kept_leftovers_are_not_known(containment: Containment) {
        let dir = TempDir::new(&format!("leak-report-kept-{containment:?}"));
        let script = "sleep 60 >/dev/null 2>&1 & echo $! >> P";
        let mut child = spawn(containment, script, &dir.0);
        child.set_kill_leftovers(false);
        let kept = written(&dir.0.join("P"), 1);
        assert!(child.wait_timeout(LONG).unwrap().status().success());
        let report = child.leak_report();
        assert_eq!((report.leaks(), report.leaked), (None, false), "{report:?}");
        assert!(
            report
                .to_string()
                .starts_with("leaks not known: the job was not killed"),
            "{report}"
        );
        assert_eq!(kept.alive(), kept.0, "the kept child was killed");
    }

    #[test]
    fn cgroup_reports_leaks() {
        if cgroup_or_skip("cgroup_reports_leaks").is_some() {
            leaks_are_reported(Containment::Cgroup);
            a_leak_that_exits_in_time_is_not_reported(Containment::Cgroup);
            kept_leftovers_are_not_known(Containment::Cgroup);
        }
    }

    #[test]
    fn cgroup_tells_a_timeout_from_a_leak() {
        if cgroup_or_skip("cgroup_tells_a_timeout_from_a_leak").is_some() {
            a_timeout_is_not_a_leak(Containment::Cgroup, false);
            a_timeout_is_not_a_leak(Containment::Cgroup, true);
        }
    }

    #[test]
    fn reaper_reports_leaks_as_nobody() {
        if !as_nobody("reaper_reports_leaks_as_nobody") {
            leaks_are_reported(Containment::Reaper);
            a_leak_that_exits_in_time_is_not_reported(Containment::Reaper);
            a_timeout_is_not_a_leak(Containment::Reaper, false);
        }
    }

    #[test]
    fn lineage_reports_leaks_by_its_mark() {
        leaks_are_reported(Containment::Lineage);
        a_timeout_is_not_a_leak(Containment::Lineage, true);
    }

    /// A plain group leaks a `setsid` child: its report says that nothing is known (it lists nothing, and does not see
    /// what left the group), not "no leaks". The daemon, which nothing reached, is ended here by its pid file.
    #[test]
    fn a_plain_group_says_it_cannot_see_a_setsid_child() {
        let dir = TempDir::new("leak-report-plain");
        let script = "setsid sleep 60 >/dev/null 2>&1 & echo $! >> P; exit 0";
        let mut child = spawn(Containment::Group, script, &dir.0);
        child.set_leak_grace(Duration::from_millis(100));
        let daemon = written(&dir.0.join("P"), 1);
        assert!(child.wait_timeout(LONG).unwrap().status().success());
        let report = child.leak_report();
        assert_eq!(report.seen, Seen::Nothing, "{report:?}");
        assert_eq!(report.leaks(), None, "{report:?}");
        assert_eq!(
            report.to_string(),
            "leaks not known: a plain process group's kill lists no process, and does not reach one that left the \
             group"
        );
        // Not reached: it runs on, until the drop of `daemon` kills it.
        assert_eq!(daemon.alive(), daemon.0);
    }
}
