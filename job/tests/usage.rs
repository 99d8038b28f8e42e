//! Whole-job usage (issue 39.1): a `setsid` daemon that burns a second of CPU while its leader sleeps is in the usage
//! of a cgroup job (as root) and of a reaper job (as nobody), and in no rusage the leader sees: not the plain group's
//! (labelled partial), not GNU `time`'s.
#![cfg(unix)]

mod common;
#[path = "common/job.rs"]
mod job_common;

#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
mod linux {
    use super::common::*;
    use super::job_common::*;

    use std::path::Path;
    use std::process::Command;
    use std::time::{Duration, Instant};

    use grouptimeout::{GroupChild, GroupCommandExt as _, Measured, Usage};
    use grouptimeout_job::{Contain, Containment, JobChildExt as _};

    /// A daemon (its own session) that burns a second of user CPU, then says so (`burnt`) and sleeps; its pid in
    /// `daemon.pid`.
    const DAEMON: &str =
        "setsid sh -c 'echo $$ > daemon.pid; perl -e \"while ((times)[0] < 1) {}\"; touch burnt; exec sleep 60' &";
    /// The leader waits for the burn, then sleeps on (ended at the deadline), or exits (`EXITS`).
    const WAITS: &str = "while [ ! -e burnt ]; do sleep 0.05; done";

    /// Runs the job (`spawn`) in a folder of its own, ends it at a deadline 3 s after its start, or once its daemon
    /// has burnt its second if that takes longer (a loaded machine), and returns what it used.
    fn burn(name: &str, spawn: impl FnOnce(&mut Command) -> GroupChild) -> Usage {
        let dir = TempDir::new(name);
        let start = Instant::now();
        let mut child = spawn(
            Command::new("sh")
                .args(["-c", &format!("{DAEMON} {WAITS}; exec sleep 60")])
                .current_dir(&dir.0),
        );
        assert_eq!(child.usage(), None, "no usage before the reap");
        let burnt = eventually(Duration::from_secs(120), || dir.0.join("burnt").exists());
        let outcome = child.wait_deadline((start + Duration::from_secs(3)).max(Instant::now()));
        let _daemon = KillOnDrop::from_file(dir.0.join("daemon.pid"));
        assert!(burnt, "the daemon never finished its burn");
        assert!(outcome.unwrap().timed_out());
        let usage = child.usage().expect("usage after the reap");
        println!("{name}: {usage:?}");
        usage
    }

    /// What GNU `time` (or, without it, the shell's `times`) shows of the same job, whose leader exits once the
    /// daemon burnt its second: the user CPU time in seconds.
    fn gnu_time(dir: &Path) -> f64 {
        let script = format!("{DAEMON} {WAITS}");
        let (mut command, gnu) = if Path::new("/usr/bin/time").exists() {
            let mut c = Command::new("/usr/bin/time");
            c.args(["-f", "user %U", "sh", "-c", &script]);
            (c, true)
        } else {
            let mut c = Command::new("sh");
            c.args(["-c", &format!("{script}; times >&2")]);
            (c, false)
        };
        let err_file = dir.join("time.err");
        let mut child = command
            .current_dir(dir)
            .stderr(std::fs::File::create(&err_file).unwrap())
            .spawn_group()
            .unwrap();
        let outcome = child.wait_timeout(Duration::from_secs(120)).unwrap();
        let _daemon = KillOnDrop::from_file(dir.join("daemon.pid"));
        let err = std::fs::read_to_string(&err_file).unwrap();
        println!(
            "{} of the job: {err}",
            if gnu { "GNU time" } else { "times" }
        );
        assert!(outcome.status().success(), "{err}");
        // GNU's `user 0.00`; the shell's `0m0.001s 0m0.002s` (its own, then its children's, each user and system).
        let user = if gnu {
            err.trim().strip_prefix("user ").unwrap_or("x").to_string()
        } else {
            let children = err.lines().nth(1).unwrap_or("");
            let user = children.split_whitespace().next().unwrap_or("x");
            let (m, s) = user
                .trim_end_matches('s')
                .split_once('m')
                .unwrap_or(("x", ""));
            format!(
                "{}",
                m.parse::<f64>().unwrap_or(f64::NAN) * 60.0 + s.parse::<f64>().unwrap_or(f64::NAN)
            )
        };
        user.parse().unwrap_or_else(|_| panic!("not a time: {err}"))
    }

    #[test]
    fn a_cgroup_job_counts_its_daemons_cpu() {
        let test = "a_cgroup_job_counts_its_daemons_cpu";
        if !have(test, "perl", "-v") {
            return;
        }
        let Some(how) = cgroup_or_skip(test) else {
            return;
        };
        let usage = burn("usage-cgroup", |c| {
            let child = how.spawn(c).unwrap();
            assert_eq!(child.containment(), Containment::Cgroup);
            child
        });
        assert_eq!(usage.measured, Measured::Cgroup, "{usage:?}");
        assert!(usage.cpu() >= Duration::from_millis(900), "{usage:?}");
        assert!(usage.user >= Duration::from_millis(900), "{usage:?}");
        // Without the memory controller (as here), the largest process that the keeper reaped.
        assert!(usage.memory.is_some_and(|m| m > 0), "{usage:?}");
    }

    #[test]
    fn a_reaper_job_counts_its_daemons_cpu_as_nobody() {
        let test = "a_reaper_job_counts_its_daemons_cpu_as_nobody";
        if !have(test, "perl", "-v") || as_nobody(test) {
            return;
        }
        let usage = burn("usage-reaper", |c| {
            let child = Contain::new().spawn(c).unwrap();
            assert_eq!(child.containment(), Containment::Reaper);
            child
        });
        assert_eq!(usage.measured, Measured::Keeper, "{usage:?}");
        assert!(usage.cpu() >= Duration::from_millis(900), "{usage:?}");
        assert!(usage.user >= Duration::from_millis(900), "{usage:?}");
        assert!(
            !usage.memory_whole_job && usage.memory.is_some_and(|m| m > 0),
            "{usage:?}"
        );
    }

    /// The plain group, and GNU `time`, see none of the daemon's CPU: the group's usage says it is partial.
    #[test]
    fn the_leaders_usage_and_gnu_time_miss_the_daemon_and_say_partial() {
        let test = "the_leaders_usage_and_gnu_time_miss_the_daemon_and_say_partial";
        if !have(test, "perl", "-v") {
            return;
        }
        let usage = burn("usage-group", |c| c.spawn_group().unwrap());
        assert_eq!(usage.measured, Measured::Leader, "{usage:?}");
        assert!(usage.cpu() < Duration::from_millis(500), "{usage:?}");
        let dir = TempDir::new("usage-time");
        let user = gnu_time(&dir.0);
        assert!(user < 0.5, "{user}");
    }
}
