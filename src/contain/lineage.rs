//! Lineage mode: a per-job random mark in the command's environment, which every descendant inherits; the job's
//! processes are found in `/proc`, checked again through a pidfd, and signalled through it.

use std::fs;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::proc::{random_hex, record, signal_checked, Leftover, Sent, Stat};

/// How long a kill of the job may go on finding new marked processes (a fork storm) before it gives up.
const KILL_LIMIT: Duration = Duration::from_secs(1);

/// A job's mark: the name of the environment variable its processes carry.
#[derive(Debug)]
pub(super) struct Mark {
    /// `GROUPTIMEOUT_JOB_<32 hex digits>`.
    name: String,
    /// The leader's start time (clock ticks after boot): a process that carries the mark started no earlier.
    since: AtomicU64,
}

impl Mark {
    /// The name of the environment variable that carries the mark.
    pub(super) fn name(&self) -> &str {
        &self.name
    }

    /// The leader `pid` was spawned: a process that carries the mark started no earlier.
    pub(super) fn started(&self, pid: u32) {
        if let Some(stat) = Stat::read(pid) {
            self.since.store(stat.start, Ordering::Relaxed);
        }
    }

    /// A new random mark, where lineage mode can work: `/proc` is this PID namespace's, and pidfds can be opened.
    pub(super) fn new() -> io::Result<Mark> {
        let unusable = |why: String| io::Error::new(io::ErrorKind::Unsupported, why);
        let status = fs::read_to_string("/proc/self/status").map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("lineage needs /proc (cannot read /proc/self/status: {e})"),
            )
        })?;
        let ns_pid = status
            .lines()
            .find_map(|l| l.strip_prefix("NSpid:"))
            .unwrap_or("");
        let own = std::process::id().to_string();
        if ns_pid.split_whitespace().collect::<Vec<_>>() != [own.as_str()] {
            return Err(unusable(format!(
                "lineage needs the /proc of this PID namespace (NSpid:{ns_pid} is not this process's id {own})"
            )));
        }
        crate::sys::pidfd_open(std::process::id()).map_err(|e| {
            unusable(format!(
                "lineage needs pidfds (Linux 5.3): pidfd_open failed: {e}"
            ))
        })?;
        Ok(Mark {
            name: format!("GROUPTIMEOUT_JOB_{}", random_hex()?),
            since: AtomicU64::new(0),
        })
    }

    /// Whether `pid`'s environment (as it started) carries the mark.
    pub(super) fn carried_by(&self, pid: u32) -> bool {
        let Ok(env) = fs::read(format!("/proc/{pid}/environ")) else {
            return false;
        };
        let entry = self.name.as_bytes();
        env.split(|&b| b == 0).any(|var| {
            var.len() > entry.len() && var.starts_with(entry) && var[entry.len()] == b'='
        })
    }

    /// Sends `signal` to the job's processes besides the leader: with `SIGKILL` to every marked process and group
    /// member, again and again until a pass finds none (bounded), recording those reached; otherwise, once, to the
    /// marked processes outside the group (the group signal reaches the rest).
    pub(super) fn signal(
        &self,
        leader: u32,
        signal: i32,
        reached: &Mutex<Vec<Leftover>>,
    ) -> io::Result<()> {
        let kill = signal == libc::SIGKILL;
        let deadline = Instant::now() + KILL_LIMIT;
        let mut denied = Vec::new();
        loop {
            let mut sent = 0;
            for (pid, stat) in self.scan(leader)? {
                let in_group = stat.pgid == leader;
                if in_group && !kill {
                    continue;
                }
                let belongs = |pid| {
                    if in_group {
                        crate::sys::group_of(pid).is_ok_and(|pgid| pgid == leader)
                    } else {
                        self.carried_by(pid)
                    }
                };
                match signal_checked(pid, signal, belongs)? {
                    Sent::Yes => {
                        sent += 1;
                        if kill {
                            record(reached, pid, stat.name);
                        }
                    }
                    Sent::Denied if !denied.contains(&pid) => denied.push(pid),
                    _ => {}
                }
            }
            if !kill || sent == 0 {
                break;
            }
            if Instant::now() >= deadline {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("the job's processes kept appearing for {KILL_LIMIT:?} of kills (a fork storm?)"),
                ));
            }
            std::thread::yield_now();
        }
        if denied.is_empty() {
            Ok(())
        } else {
            Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("no permission to signal processes {denied:?} of the job"),
            ))
        }
    }

    /// The live processes that may be the job's, besides the leader and this process: the group's members, and
    /// those started no earlier than the leader (their mark is checked later, after a pidfd was opened).
    fn scan(&self, leader: u32) -> io::Result<Vec<(u32, Stat)>> {
        let since = self.since.load(Ordering::Relaxed);
        let own = std::process::id();
        let entries = fs::read_dir("/proc")
            .map_err(|e| io::Error::new(e.kind(), format!("cannot list /proc: {e}")))?;
        let mut found = Vec::new();
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<u32>().ok())
            else {
                continue;
            };
            if pid <= 1 || pid == leader || pid == own {
                continue;
            }
            if let Some(stat) = Stat::read(pid) {
                if !stat.dead() && (stat.pgid == leader || stat.start >= since) {
                    found.push((pid, stat));
                }
            }
        }
        Ok(found)
    }
}
