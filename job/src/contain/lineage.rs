//! Lineage mode: a per-job random mark in the command's environment, which every descendant inherits; the job's
//! processes are found in `/proc`, checked again through a pidfd, and signalled through it.

use std::fs;
use std::io;
use std::os::fd::{AsRawFd as _, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::proc::{
    random_hex, read_proc, record, room_for, signal_checked, Leftover, Sent, Stat, STAT_BUF,
};

/// How long a kill of the job may go on finding new marked processes (a fork storm) before it gives up: a pass that
/// starts after it and still finds some fails the kill.
const KILL_LIMIT: Duration = Duration::from_secs(1);
/// How long an empty environment that is not empty for good (the process is in the middle of `execve`) is read again
/// (see [`Patience`]): until the process has run this long on a CPU since the first read (an `execve` needs far less),
/// and, where its CPU time cannot be read, this long.
const EXEC_LIMIT: Duration = Duration::from_millis(20);
/// ... but at most this long, on a loaded machine where the process waits for a CPU, or while it sleeps in `execve`
/// (its program read from a slow disk).
const EXEC_WAIT: Duration = Duration::from_secs(1);
/// The pause between two reads of an empty environment: the unit of [`pause`].
const EXEC_STEP: Duration = Duration::from_millis(1);
/// How many times an empty environment is read at least, however long that takes: on a loaded machine this process
/// may wait for a CPU past `EXEC_LIMIT` of the other's time between two reads, and then only this count is left to
/// tell a process that execs in a loop (each read a fresh draw, see [`pause`]: 10-15 % of them empty) from one whose
/// environment stays empty. With 5, 2 of about 2,000 runs of `lineage_a_process_in_execve_is_in_the_job` beside busy
/// loops still failed; with 20, none of 600.
const EXEC_LOOKS: u32 = 20;
/// The most of an environment that is read: `execve` takes at most 6 MiB of arguments and environment (Linux's
/// `bprm_stack_limits`); a larger one can only be faked (`prctl(PR_SET_MM_MAP)`), and must not make the job allocate
/// and keep any size it names.
const ENV_MAX: usize = 8 * 1024 * 1024;
/// `/proc/PID/stat`'s flag of a kernel thread (include/linux/sched.h).
const PF_KTHREAD: u32 = 0x0020_0000;

/// A job's mark: the name of the environment variable its processes carry.
pub(crate) struct Mark {
    /// `GROUPTIMEOUT_JOB_<32 hex digits>`.
    name: String,
    /// The leader's start time (clock ticks after boot): a process that carries the mark started no earlier.
    since: AtomicU64,
    /// The buffer an environment is read into: 16 KiB at its first use, doubled (up to [`ENV_MAX`]) each time an
    /// environment filled it, and kept for the job (see [`environ_has_mark`](Self::environ_has_mark)).
    env: Mutex<Vec<u8>>,
}

impl std::fmt::Debug for Mark {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Mark({})", self.name)
    }
}

impl Mark {
    /// The name of the environment variable that carries the mark.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The same mark for a job that has ended (see `Job::record`): its name and start, without the buffer it read
    /// environments into.
    pub(super) fn record(&self) -> Mark {
        Mark {
            name: self.name.clone(),
            since: AtomicU64::new(self.since.load(Ordering::Relaxed)),
            env: Mutex::new(Vec::new()),
        }
    }

    /// The leader `pid` was spawned: a process that carries the mark started no earlier.
    pub(super) fn started(&self, pid: u32) {
        if let Some(stat) = Stat::read(pid) {
            self.since.store(stat.start, Ordering::Relaxed);
        }
    }

    /// A new random mark, where lineage mode can work: `/proc` is this PID namespace's, and pidfds can be opened.
    pub(crate) fn new() -> io::Result<Mark> {
        let unusable = |why: String| io::Error::new(io::ErrorKind::Unsupported, why);
        let status = fs::read_to_string("/proc/self/status").map_err(|e| {
            crate::sys::os_error_or(e, |e| {
                format!("lineage needs /proc (cannot read /proc/self/status: {e})")
            })
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
        // A kill point needs 2 descriptors at once, and the wait for the leader holds a pidfd: without room for them
        // now, it could not find the job's processes outside the group, and the group alone is the honest boundary.
        room_for(3).map_err(|e| {
            crate::sys::os_error_or(e, |e| {
                format!("too few descriptors for lineage's kill points (3 free at once): {e}")
            })
        })?;
        Ok(Mark {
            name: format!("GROUPTIMEOUT_JOB_{}", random_hex()?),
            since: AtomicU64::new(0),
            env: Mutex::new(Vec::new()),
        })
    }

    /// Whether `pid`'s environment (as it started) carries the mark. A process in the middle of `execve` shows an
    /// empty environment for a moment (measured: 1 read in 40 of a process that execs in a loop), so an empty one that
    /// is not empty for good is read again, as long as [`Patience`] allows (see [`carries`](Self::carries)).
    pub(super) fn carried_by(&self, pid: u32) -> bool {
        let mut patience = Patience::new(pid);
        loop {
            match self.carries(pid) {
                Some(found) => return found,
                None if patience.over(pid) => return false,
                None => std::thread::sleep(pause()),
            }
        }
    }

    /// Whether `pid`'s environment carries the mark, or `None` when that cannot be told yet: the environment reads
    /// empty, and it is not empty for good (see [`empty_for_good`]).
    fn carries(&self, pid: u32) -> Option<bool> {
        match self.environ_has_mark(pid) {
            None => empty_for_good(pid).then_some(false),
            found => found,
        }
    }

    /// Whether `pid`'s environment carries the mark: `None` when it reads empty, `Some(false)` when it is unreadable.
    ///
    /// The answer comes from one `read` (from the start, into a buffer larger than the environment): the file reads the
    /// memory of the program that ran when it was opened, and nothing once that program was replaced (`execve`), so an
    /// environment read in several calls could end early, cut short by an `execve` between two of them, without the
    /// mark (measured: `in_job` missed a process that execs in a loop with 256 KiB of environment in 10 to 1,999 of
    /// 2,000 calls, in 7 of 8 runs). A buffer that the environment fills is doubled, up to [`ENV_MAX`], and the read
    /// made again; the buffer is kept for the job, so that the next read of that process is one call (a fresh 16 KiB
    /// buffer each time, doubled as needed, made most of those 2,000 calls read it empty: an `execve` came between two
    /// reads). Only the first `ENV_MAX` bytes of a larger environment are searched. A thread that finds the job's
    /// buffer in use reads into one of its own, so that a read that blocks (the process's memory locked or swapped
    /// out) holds up no other thread.
    fn environ_has_mark(&self, pid: u32) -> Option<bool> {
        use std::os::unix::fs::FileExt as _;
        let mut kept = self.env.try_lock().ok();
        let mut own = Vec::new();
        let env = kept.as_deref_mut().unwrap_or(&mut own);
        if env.is_empty() {
            env.resize(16 * 1024, 0);
        }
        let Ok(file) = fs::File::open(format!("/proc/{pid}/environ")) else {
            return Some(false);
        };
        let len = loop {
            match file.read_at(env, 0) {
                Ok(n) if n == env.len() && n < ENV_MAX => env.resize(n * 2, 0),
                Ok(n) => break n,
                Err(_) => return Some(false),
            }
        };
        if len == 0 {
            return None;
        }
        let entry = self.name.as_bytes();
        let found = env[..len].split(|&b| b == 0).any(|var| {
            var.len() > entry.len() && var.starts_with(entry) && var[entry.len()] == b'='
        });
        // Another process's environment (another user's, as root) is not kept until the job ends.
        env[..len].fill(0);
        Some(found)
    }

    /// Sends `signal` to the job's processes besides the leader (stop first, then sweep: see `Job::signal`): with
    /// `SIGKILL` to every marked process and group member, again and again until a pass finds none that was not killed
    /// already (bounded), recording those reached (the members the group's `SIGKILL` has killed already too), and then
    /// waits (within the same bound) until those killed have exited; otherwise, once, to the marked processes outside
    /// the group (the group signal reached the rest). `group` is called once, after the first pass: with `SIGKILL` it
    /// sends the group's `SIGKILL` (the caller stopped the group before with `SIGSTOP`, and the first pass has killed
    /// and recorded each member it found), so that a member is recorded before init, its new parent, can reap it;
    /// with another signal the caller signalled the group already.
    ///
    /// A later pass skips a process that this kill reached and that has not exited yet (its pidfd, held, says so
    /// after the pass read `/proc`, so the pid is still its own): it cannot fork any more, since `SIGKILL` is
    /// pending. At most [`HELD_LIMIT`] pidfds are held; the others are signalled again in each pass, as before.
    pub(super) fn signal(
        &self,
        leader: u32,
        signal: i32,
        reached: &Mutex<Vec<Leftover>>,
        group: impl FnOnce(),
    ) -> io::Result<()> {
        let kill = signal == libc::SIGKILL;
        let mut group = Some(group);
        let deadline = Instant::now() + KILL_LIMIT;
        let mut denied = Vec::new();
        let mut dying: Vec<(u32, OwnedFd)> = Vec::new();
        loop {
            // A pass that took long (a loaded machine) is no fork storm: only one that starts late and finds more.
            let late = Instant::now() >= deadline;
            let mut sent = 0;
            if room_for(2).is_err() {
                // The pidfds held for the wait below are given back first.
                dying.clear();
                room_for(2).map_err(|e| {
                    crate::sys::os_error_or(e, |e| format!("too few descriptors to find the job's processes outside its group: {e}"))
                })?;
            }
            let found = self.scan(leader)?;
            forget_exited(&mut dying, Duration::ZERO)?;
            // Processes whose environment read empty: checked again, all together, after the pass (each on its own
            // would let many processes started with no environment stretch a pass by their patience apiece).
            let mut unsure = Vec::new();
            for (pid, stat) in found {
                let in_group = stat.pgid == leader;
                if stat.dead() {
                    // A member that the group's `SIGKILL` (sent first) has killed already.
                    if kill {
                        record(reached, pid, stat.name);
                    }
                    continue;
                }
                if (in_group && !kill) || dying.iter().any(|(p, _)| *p == pid) {
                    continue;
                }
                // A member may have left the group since the scan (`setsid`): it still belongs if it has the mark.
                let mut empty = false;
                let belongs = |pid| {
                    (in_group && crate::sys::group_of(pid).is_ok_and(|pgid| pgid == leader))
                        || self.carries(pid).unwrap_or_else(|| {
                            empty = true;
                            false
                        })
                };
                let result = signal_checked(pid, signal, belongs)?;
                if empty && matches!(result, Sent::No) {
                    unsure.push((pid, stat.name, Patience::new(pid)));
                } else {
                    sent += Self::count(
                        result,
                        pid,
                        stat.name,
                        kill,
                        reached,
                        &mut dying,
                        &mut denied,
                    );
                }
            }
            // The group's `SIGKILL`, once its members found stopped have been killed and recorded one by one.
            if let Some(group) = group.take() {
                group();
            }
            while !unsure.is_empty() {
                std::thread::sleep(pause());
                for (pid, name, mut patience) in std::mem::take(&mut unsure) {
                    let mut empty = false;
                    let result = signal_checked(pid, signal, |pid| {
                        self.carries(pid).unwrap_or_else(|| {
                            empty = true;
                            false
                        })
                    })?;
                    if empty && matches!(result, Sent::No) {
                        if !patience.over(pid) {
                            unsure.push((pid, name, patience));
                        }
                    } else {
                        sent +=
                            Self::count(result, pid, name, kill, reached, &mut dying, &mut denied);
                    }
                }
            }
            if !kill || sent == 0 {
                break;
            }
            if late {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("the job's processes kept appearing for {KILL_LIMIT:?} of kills (a fork storm?)"),
                ));
            }
        }
        while !dying.is_empty() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break; // killed: they die once the CPU lets them; only the wait is given up
            }
            forget_exited(&mut dying, left)?;
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

    /// Records what [`signal_checked`] did with `pid` in a kill pass; 1 when it was signalled.
    fn count(
        result: Sent,
        pid: u32,
        name: String,
        kill: bool,
        reached: &Mutex<Vec<Leftover>>,
        dying: &mut Vec<(u32, OwnedFd)>,
        denied: &mut Vec<u32>,
    ) -> usize {
        match result {
            Sent::Yes(pidfd) => {
                if kill {
                    record(reached, pid, name);
                    // Held only while 2 more can still be opened, for the next process's check.
                    if dying.len() < HELD_LIMIT && room_for(2).is_ok() {
                        dying.push((pid, pidfd));
                    }
                }
                1
            }
            Sent::Denied if !denied.contains(&pid) => {
                denied.push(pid);
                0
            }
            _ => 0,
        }
    }

    /// Whether a process of the job other than the leader and `guard` (the guard of `die_with_parent`, a member of
    /// the group) still runs: a live member of the group, or a live process that carries the mark (the scan of a
    /// kill, which signals nothing here).
    ///
    /// # Errors
    ///
    /// `/proc` cannot be listed.
    pub(super) fn any_alive(&self, leader: u32, guard: Option<u32>) -> io::Result<bool> {
        Ok(self.scan(leader)?.into_iter().any(|(pid, stat)| {
            Some(pid) != guard && !stat.dead() && (stat.pgid == leader || self.carried_by(pid))
        }))
    }

    /// The live processes that may be the job's, besides the leader and this process: the group's members, and
    /// those started no earlier than the leader (their mark is checked later, after a pidfd was opened); and the
    /// members that `SIGKILL` has killed (zombies, for the record of what the kill reached). Each
    /// process's `stat` is read with one `read` into one buffer, and only a candidate's name is kept.
    fn scan(&self, leader: u32) -> io::Result<Vec<(u32, Stat)>> {
        let since = self.since.load(Ordering::Relaxed);
        let own = std::process::id();
        let entries = fs::read_dir("/proc").map_err(|e| {
            crate::sys::os_error_or(e, |e| {
                format!("cannot list /proc to find the job's processes outside its group: {e}")
            })
        })?;
        let mut buf = [0u8; STAT_BUF];
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
            let Some((name, stat)) = read_proc(pid, "stat", &mut buf).and_then(Stat::parse) else {
                continue;
            };
            let member = stat.pgid == leader;
            if (!stat.dead() && (member || stat.start >= since)) || (member && stat.killed) {
                let name = String::from_utf8_lossy(name).into_owned();
                found.push((pid, Stat { name, ..stat }));
            }
        }
        Ok(found)
    }
}

/// Whether process `pid`, whose environment read empty, has none for good: it is gone, a zombie or a kernel thread,
/// or `/proc/PID/stat` shows an empty environment block (a process started with no environment, `env -i`) in an
/// image that is loaded whole, or in a process that is not running (asleep or stopped). In the middle of `execve`
/// the new image has no block yet (its end reads 0), and then, while `execve` copies the environment in (running, or
/// waiting for a page: state `R` or `D`), an empty one for a moment; the new image's `end_code` is set only after
/// that copy (Linux's `load_elf_binary`), and is 0 until then. `false` in those cases, so that the caller reads the
/// environment again.
fn empty_for_good(pid: u32) -> bool {
    let Some(stat) = Stat::read(pid) else {
        return true;
    };
    let (env_start, env_end) = stat.env;
    stat.dead()
        || stat.flags & PF_KTHREAD != 0
        || (env_end != 0
            && env_start == env_end
            && (stat.loaded || !matches!(stat.state, 'R' | 'D')))
}

/// How long a process whose environment reads empty, not for good, is read again: at least [`EXEC_LOOKS`] times, and
/// until it has run for [`EXEC_LIMIT`] on a CPU since the first read (its time on a CPU from `/proc/PID/schedstat`;
/// where that cannot be read, until `EXEC_LIMIT` has passed), or [`EXEC_WAIT`] has passed. A time of the caller's
/// alone would give up on a process in the middle of `execve` that waits for a CPU meanwhile (on a loaded machine:
/// `in_job` said no to 1 of 90,000 reads of a process that execs in a loop, with a bound of 20 ms).
struct Patience {
    since: Instant,
    cpu: Option<u64>,
    looks: u32,
}

impl Patience {
    /// At the first read of `pid`'s environment.
    fn new(pid: u32) -> Patience {
        Patience {
            since: Instant::now(),
            cpu: cpu_time(pid),
            looks: 0,
        }
    }

    /// After a read of `pid`'s environment that could not tell (counted): whether to give up.
    fn over(&mut self, pid: u32) -> bool {
        self.looks += 1;
        let waited = self.since.elapsed();
        let ran = match (self.cpu, cpu_time(pid)) {
            (Some(then), Some(now)) => Duration::from_nanos(now.saturating_sub(then)),
            _ => waited,
        };
        self.looks >= EXEC_LOOKS && (ran >= EXEC_LIMIT || waited >= EXEC_WAIT)
    }
}

/// The pause before an empty environment is read again: from half [`EXEC_STEP`] to two and a half, another each time.
/// An open of `/proc/PID/environ` while the process is in `execve` waits for the lock that `execve` holds while it
/// replaces the image, and then reads the new image before its environment is in place. With the same pause each
/// time, the next read of a process that execs in a loop about once per pause came at the same point of its next
/// `execve`, waited again, and read empty again: measured, 38-41 % of the reads after an empty one were empty (10-15 %
/// of all reads), up to 14 in a row over 20 ms of the process's time on a CPU, and `in_job` said no (7 of 1,400 runs of
/// `lineage_a_process_in_execve_is_in_the_job` beside busy loops). With a pause that varies by two steps: 15-17 %, and
/// 2 of about 2,000 runs (see [`EXEC_LOOKS`]).
fn pause() -> Duration {
    // The clock's nanoseconds as the random part: cheap, and unrelated to the process's cycle.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    EXEC_STEP / 2 + EXEC_STEP * 2 * (nanos % 1024) / 1024
}

/// How long process `pid` has run on a CPU (nanoseconds, the first field of `/proc/PID/schedstat`); `None` when that
/// cannot be read (gone, or a kernel without `CONFIG_SCHED_INFO`).
fn cpu_time(pid: u32) -> Option<u64> {
    let mut buf = [0u8; 64];
    let text = read_proc(pid, "schedstat", &mut buf)?;
    std::str::from_utf8(text.split(|&b| b == b' ').next()?)
        .ok()?
        .parse()
        .ok()
}

/// How many pidfds of killed processes one kill holds (a process may have 1,024 descriptors).
const HELD_LIMIT: usize = 256;

/// Waits up to `timeout` for one of the `dying` processes to exit, then drops those that did (their pidfd is
/// readable once the process has exited).
fn forget_exited(dying: &mut Vec<(u32, OwnedFd)>, timeout: Duration) -> io::Result<()> {
    if dying.is_empty() {
        return Ok(());
    }
    let mut fds: Vec<libc::pollfd> = dying
        .iter()
        .map(|(_, fd)| libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    crate::sys::poll(&mut fds, timeout)?;
    let mut exited = fds.iter().map(|p| p.revents != 0);
    dying.retain(|_| !exited.next().unwrap_or(true));
    Ok(())
}
