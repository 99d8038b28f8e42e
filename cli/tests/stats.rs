//! `--stats` (issue 39.1): once the job has ended, one line on standard error says what it used. A `setsid` daemon
//! that burns a second of CPU is in it, as root (the job's cgroup) and as nobody (the job's reaper), and a memory
//! figure that is not the whole job's says so; plain `-v` says what it said before, and nothing of this.
#![cfg(unix)]

mod common;

#[cfg(all(target_os = "linux", not(grouptimeout_portable)))]
mod linux {
    use super::common::*;

    use std::os::unix::process::CommandExt as _;
    use std::path::PathBuf;
    use std::process::Command;
    use std::time::Duration;

    use grouptimeout::GroupCommandExt as _;

    const BIN: &str = env!("CARGO_BIN_EXE_grouptimeout");

    /// A daemon (its own session) that burns a second of user CPU, then says so (`burnt`) and sleeps; its pid in
    /// `daemon.pid`. The command exits once the burn is over: the daemon is then killed as what it left behind.
    const SCRIPT: &str =
        "setsid sh -c 'echo $$ > daemon.pid; perl -e \"while ((times)[0] < 1) {}\"; \
                          touch burnt; exec sleep 60' & while [ ! -e burnt ]; do sleep 0.05; done";

    /// Runs the tool with `args` in a fresh folder (as nobody through `setpriv` if `nobody`, a copy of the tool every
    /// user may run), bounded; returns its exit code and standard error.
    fn tool(name: &str, nobody: bool, args: &[&str]) -> (Option<i32>, String) {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = TempDir::new(name);
        std::fs::set_permissions(&dir.0, std::fs::Permissions::from_mode(0o777)).unwrap();
        let mut command = if nobody {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(runnable_by_anyone(&PathBuf::from(BIN)));
            c
        } else {
            let mut c = Command::new(BIN);
            c.arg0("grouptimeout");
            c
        };
        command.args(args).current_dir(&dir.0).env("LC_ALL", "C");
        let child = command
            .stderr(std::process::Stdio::piped())
            .spawn_group()
            .unwrap();
        let captured = child
            .wait_with_output_timeout(Duration::from_secs(120))
            .unwrap();
        let _daemon = KillOnDrop::from_file(dir.0.join("daemon.pid"));
        let err = String::from_utf8_lossy(&captured.stderr).into_owned();
        println!("{name}: {err}");
        (captured.outcome.status().code(), err)
    }

    /// The seconds of `cpu N.NNs` in `--stats`' line of `err`.
    fn cpu(err: &str) -> f64 {
        let line = err
            .lines()
            .find(|l| l.contains(": stats: cpu "))
            .unwrap_or_else(|| panic!("{err}"));
        let after = line.split(": stats: cpu ").nth(1).unwrap_or("");
        after
            .split('s')
            .next()
            .unwrap_or("")
            .parse()
            .unwrap_or_else(|_| panic!("{line}"))
    }

    #[test]
    fn stats_count_a_daemons_cpu_as_root_and_as_nobody() {
        let test = "stats_count_a_daemons_cpu_as_root_and_as_nobody";
        if !have(test, "perl", "-v") || !have(test, "setpriv", "--version") {
            return;
        }
        if !is_root() {
            skip_or_fail(
                test,
                "not root: no cgroup can be made, and setpriv cannot switch to nobody",
            );
            return;
        }
        for (nobody, whole) in [(false, "cgroup"), (true, "reaper")] {
            let (code, err) = tool(
                &format!("stats-{whole}"),
                nobody,
                &["--stats", "60", "sh", "-c", SCRIPT],
            );
            assert_eq!(code, Some(0), "{err}");
            let stats: Vec<&str> = err.lines().filter(|l| l.contains("stats:")).collect();
            assert_eq!(stats.len(), 1, "{whole}: {err}");
            assert!(cpu(&err) >= 0.9, "{whole}: {err}");
            // The CPU time is the whole job's; so is the memory where the memory controller measured it. Issue 42.12:
            // else it is the largest process's of those the keeper reaped: every process of the job in reaper mode,
            // the command and what it waited for in cgroup mode (not the daemon), which says so in the CPU's words.
            let (cpu_part, memory) = stats[0]
                .split_once(", memory ")
                .unwrap_or_else(|| panic!("{err}"));
            assert!(!cpu_part.contains("leader"), "{whole}: not partial: {err}");
            let expected = match whole {
                "cgroup" => "(largest process; leader and its waited children)",
                _ => "(largest process)",
            };
            assert!(
                memory.ends_with(&format!(" MiB {expected}"))
                    || memory.ends_with(" MiB (whole job)"),
                "{whole}: {err}"
            );
        }
    }

    /// `-v` alone says what it said before `--stats` existed: the signal it sent, nothing about usage; with
    /// `--stats` the same line comes first, then the stats.
    #[test]
    fn verbose_alone_says_nothing_of_stats() {
        let (code, err) = tool("stats-verbose", false, &["-v", "0.2", "sleep", "30"]);
        assert_eq!(code, Some(124));
        let mut lines: Vec<&str> = err
            .lines()
            .filter(|l| !l.contains("job boundary"))
            .collect();
        assert_eq!(
            lines,
            ["grouptimeout: sending signal TERM to command 'sleep'"],
            "{err}"
        );
        let (code, both) = tool(
            "stats-verbose-and-stats",
            false,
            &["-v", "--stats", "0.2", "sleep", "30"],
        );
        assert_eq!(code, Some(124));
        lines = both
            .lines()
            .filter(|l| !l.contains("job boundary"))
            .collect();
        assert_eq!(lines.len(), 2, "{both}");
        assert_eq!(
            lines[0],
            "grouptimeout: sending signal TERM to command 'sleep'"
        );
        assert!(lines[1].starts_with("grouptimeout: stats: cpu "), "{both}");
    }
}
