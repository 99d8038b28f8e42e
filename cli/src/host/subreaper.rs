//! [`Subreaper`]: the Linux child-subreaper role, with the bookkeeping that keeps its kills and reaps to the
//! command's orphans.

use std::io::{self, Read, Seek, SeekFrom};
use std::thread;
use std::time::{Duration, Instant};

use crate::sys;
use grouptimeout_job::Leftover;

/// The Linux *child subreaper* role (`prctl(PR_SET_CHILD_SUBREAPER)`), with the bookkeeping that makes it safe:
/// descendants whose parent dies are re-parented to this process instead of to init, and
/// [`reap_exited`](Subreaper::reap_exited) and [`sweep`](Subreaper::sweep) reap and kill them. Linux only (Android
/// included): elsewhere [`new`](Subreaper::new) fails.
///
/// # What is guaranteed
///
/// - Children this process already had when [`new`](Subreaper::new) ran (a shell's `sleep 9 & exec supervisor …`,
///   or the `gzip` of `exec > >(gzip)`) are never signalled nor reaped: they are not the supervised command's.
/// - A pid is signalled only while it is listed as an unreaped child of this process, in a `/proc` shown to be
///   this process's own (the `NSpid:` line of `/proc/self/status` names our pid and no other), so it cannot name a
///   stranger. Children are reaped by pid,
///   never with `waitpid(-1)`, and the pids given as `owned` are never reaped.
/// - Uses one descriptor (the open `/proc/self/task/PID/children`), taken in `new`: it works with every other
///   descriptor in use.
/// - A guard of [`JobChildExt::die_with_parent`](grouptimeout_job::JobChildExt::die_with_parent) (or [`die_with_parent_forked`](super::die_with_parent_forked)) is a child of this process too: pass
///   [`GroupChild::guard_id`](grouptimeout_job::JobChildExt::guard_id) in `owned`, with the leader's id, and it is neither signalled nor reaped. A sweep that
///   is not told kills it, and the group no longer dies with this process. (On Linux a guard reaped here anyway is
///   never signalled nor waited for by its `GroupChild` again, through its pidfd, even after its pid was reused.)
///
/// # What is not guaranteed
///
/// - Process-wide, and irreversible for processes already adopted. Adopted processes are children of this
///   process: when they exit they stay zombies until reaped.
/// - Only the children of this process's main thread are listed (`/proc/PID/task/PID/children`, whichever thread
///   calls `new`): adopted orphans go to the main thread while it lives, but a child spawned from another thread is
///   that thread's and is missed. Use it from a supervisor that spawns from its main thread.
/// - An orphan of one of the children this process already had is adopted too, and treated like the command's.
#[derive(Debug)]
pub struct Subreaper {
    /// `/proc/self/task/PID/children`, kept open.
    children: std::fs::File,
    /// The children this process had before it became a subreaper.
    before: Vec<u32>,
    /// Whether a `SIGCHLD` came since the last scan for exited children.
    scan_owed: bool,
    /// When the next scan may run (`None`: at once).
    next_scan: Option<Instant>,
}

/// The shortest time between two scans for exited children in [`Subreaper::reap_exited`].
const SCAN_INTERVAL: Duration = Duration::from_millis(250);

/// How many exited children a scan reaps as the kernel names them before it reads the whole children list.
#[cfg(all(
    any(target_os = "linux", target_os = "android"),
    not(grouptimeout_portable)
))]
const SCAN_PEEKS: usize = 4;

impl Subreaper {
    /// Checks that `/proc` is this process's, records the children this process already has, keeps a descriptor
    /// on its children list, and makes this process a child subreaper, in that order.
    ///
    /// # Errors
    ///
    /// Each names what is missing, and nothing was changed: `/proc` is missing (`NotFound`) or is not shown to belong
    /// to this process's PID namespace (`Unsupported`: the `NSpid:` line of `/proc/self/status` must hold exactly
    /// one pid, ours; `/proc/self` alone is fooled when our pid is the same number in an outer namespace); the children list cannot be opened or read
    /// (a kernel without `CONFIG_PROC_CHILDREN`, or no descriptor left); `SIGCHLD` is ignored (`Unsupported`: the
    /// kernel would reap children at once and their pids could be reused before they are signalled); the `prctl`
    /// call failed. On systems other than Linux and Android (and in a build with `--cfg grouptimeout_portable`) this
    /// always fails with `Unsupported`. A failed system call (reading `/proc`, the `prctl`) gives its OS error itself
    /// (`raw_os_error()`); the `Unsupported` errors carry none, and say why in their message.
    pub fn new() -> io::Result<Subreaper> {
        #[cfg(all(
            any(target_os = "linux", target_os = "android"),
            not(grouptimeout_portable)
        ))]
        {
            auto_reaped_is_unsupported()?;
            let pid = std::process::id();
            proc_is_ours(pid)?;
            let path = format!("/proc/{pid}/task/{pid}/children");
            let children = std::fs::File::open(&path)
                .map_err(|e| crate::sys::os_error_or(e, |e| format!("cannot open {path}: {e}")))?;
            let mut subreaper = Subreaper {
                children,
                before: Vec::new(),
                scan_owed: false,
                next_scan: None,
            };
            subreaper.before = subreaper.list()?;
            sys::set_child_subreaper()?;
            Ok(subreaper)
        }
        #[cfg(not(all(
            any(target_os = "linux", target_os = "android"),
            not(grouptimeout_portable)
        )))]
        {
            Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "child subreapers exist only on Linux",
            ))
        }
    }

    /// The children this process had before [`new`](Subreaper::new): never signalled nor reaped.
    #[must_use]
    pub fn preexisting(&self) -> &[u32] {
        &self.before
    }

    /// Reaps the children that have exited, except the pids in `owned` and the [preexisting](Subreaper::preexisting)
    /// ones, without signalling anything; returns how many were reaped. Call it on each `SIGCHLD`, with the child
    /// the signal named ([`Signals::exited_child`](super::Signals::exited_child)) as `exited`, and when [`reap_due`](Subreaper::reap_due) says.
    ///
    /// Adopted orphans that exit stay zombies until reaped; a command that keeps starting short-lived daemons
    /// would pile them up. The cost follows what exited, not how many children there are: `exited` is reaped by
    /// pid at once. Pending `SIGCHLD`s merge, so others may have exited unnoticed: for them it scans at most once
    /// per 250 ms (`waitid` peeks that name exited children one at a time, each costing a walk over all children
    /// in the kernel, about 60 ns per child; past 4 of them, one read of the children list and a non-blocking
    /// `waitpid` per listed child); a scan that is due later is reported by [`reap_due`](Subreaper::reap_due). Such
    /// a child stays a zombie until then.
    ///
    /// # Errors
    ///
    /// `SIGCHLD` is ignored in this process (`Unsupported`); the children list cannot be read; reaping failed.
    pub fn reap_exited(&mut self, owned: &[u32], exited: Option<u32>) -> io::Result<usize> {
        auto_reaped_is_unsupported()?;
        let mut reaped = 0;
        // A child that exited, named by the kernel: reaping it by pid cannot touch anything but our own children.
        if let Some(pid) = exited.filter(|&pid| !self.keeps(owned, pid)) {
            if sys::reap_if_exited(pid)? {
                reaped += 1;
            }
        }
        self.scan_owed = true;
        if self.next_scan.is_none_or(|next| Instant::now() >= next) {
            reaped += self.scan(owned)?;
        }
        Ok(reaped)
    }

    /// When [`reap_exited`](Subreaper::reap_exited) should be called again (without a child to name) to reap
    /// children whose exit no `SIGCHLD` named; `None` when nothing is owed.
    #[must_use]
    pub fn reap_due(&self) -> Option<Instant> {
        self.scan_owed
            .then(|| self.next_scan.unwrap_or_else(Instant::now))
    }

    /// Reaps the children that exited, except the kept ones: the first few one by one as the kernel names them
    /// (each `waitid` peek costs about as much as the kernel's walk over all children), then, if more are left or the
    /// kernel names a kept one, through one read of the children list.
    fn scan(&mut self, owned: &[u32]) -> io::Result<usize> {
        self.scan_owed = false;
        self.next_scan = Instant::now().checked_add(SCAN_INTERVAL);
        let mut reaped = 0;
        #[cfg(all(
            any(target_os = "linux", target_os = "android"),
            not(grouptimeout_portable)
        ))]
        {
            let mut last = None;
            for _ in 0..SCAN_PEEKS {
                match sys::peek_exited_child()? {
                    None => return Ok(reaped),
                    // The same child again would mean it cannot be reaped by pid: never loop on it.
                    Some(pid) if !self.keeps(owned, pid) && last != Some(pid) => {
                        last = Some(pid);
                        if sys::reap_if_exited(pid)? {
                            reaped += 1;
                        }
                    }
                    Some(_) => break,
                }
            }
        }
        for pid in self.list()? {
            if !self.keeps(owned, pid) && sys::reap_if_exited(pid)? {
                reaped += 1;
            }
        }
        Ok(reaped)
    }

    /// Sends `SIGKILL` to every child of this process except the pids in `owned` and the
    /// [preexisting](Subreaper::preexisting) ones, reaps them, and repeats with the children this adopts meanwhile,
    /// until none is left or `limit` has passed: [`sweep_matching`](Subreaper::sweep_matching) with every child
    /// matching.
    ///
    /// # Errors
    ///
    /// As for [`sweep_matching`](Subreaper::sweep_matching).
    pub fn sweep(&mut self, owned: &[u32], limit: Duration) -> io::Result<Sweep> {
        self.sweep_matching(owned, limit, |_| true)
    }

    /// Sends `SIGKILL` to every child of this process for which `matches` says `true`, except the pids in `owned`
    /// and the [preexisting](Subreaper::preexisting) ones, reaps them, and repeats with the children this adopts
    /// meanwhile, until no matching child is left alive or `limit` has passed. Children that do not match are never
    /// signalled; those of them that have exited are reaped (so that adopted zombies do not pile up), the others are
    /// left running.
    ///
    /// `matches` tells the command's processes from the others, for instance [`GroupChild::in_job`](grouptimeout_job::JobChildExt::in_job), so that the
    /// orphans of a child this process already had (a daemon of a sidecar) are left alone. It is asked about a pid
    /// only while that pid is an unreaped child of this process (so the pid names the process asked about), possibly
    /// several times; it should answer `false` for a process that has exited.
    ///
    /// Pass in `owned` the pid of every child that other code still owns and will wait for (a
    /// [`std::process::Child`] not yet waited for): it is neither signalled nor reaped. Each matching child is
    /// signalled by its pid (never a group, never -1) while it is an unreaped child of this process, and reaped by
    /// its pid (never `waitpid(-1)`). The name of each signalled child is read (`/proc/PID/comm`) just before its
    /// first signal, for [`Sweep::killed`] (a child that had already exited is not listed there).
    ///
    /// Every round kills what it lists and reaps what has died; a killed child's own children are adopted and listed
    /// in the next round. Between rounds without progress it sleeps briefly (50 µs, doubling to 10 ms). A child that
    /// does not die (stuck in uninterruptible sleep, or owned by another user) cannot hang the sweep: it ends after
    /// `limit` and reports what is left.
    ///
    /// # Errors
    ///
    /// `SIGCHLD` is ignored in this process (`Unsupported`); the children list cannot be read; reaping failed.
    pub fn sweep_matching(
        &mut self,
        owned: &[u32],
        limit: Duration,
        mut matches: impl FnMut(u32) -> bool,
    ) -> io::Result<Sweep> {
        auto_reaped_is_unsupported()?;
        let deadline = Instant::now().checked_add(limit);
        let mut sweep = Sweep::default();
        let mut pause = Duration::from_micros(50);
        loop {
            let pids: Vec<u32> = self
                .list()?
                .into_iter()
                .filter(|&pid| !self.keeps(owned, pid))
                .collect();
            let targets: Vec<u32> = pids.iter().copied().filter(|&pid| matches(pid)).collect();
            for &pid in &targets {
                let alive = sys::has_exited(pid).is_ok_and(|exited| !exited);
                if alive && !sweep.killed.iter().any(|k| k.pid == pid) {
                    let name = std::fs::read_to_string(format!("/proc/{pid}/comm"))
                        .map(|n| n.trim_end_matches('\n').to_owned())
                        .unwrap_or_default();
                    sweep
                        .killed
                        .push(grouptimeout_job::__private::leftover(pid, name));
                }
                // EPERM (another user's process) is reported through `left` when the time runs out.
                let _ = sys::signal_process(pid, libc::SIGKILL);
            }
            let before = sweep.reaped;
            for &pid in &pids {
                if sys::reap_if_exited(pid)? {
                    sweep.reaped += 1;
                }
            }
            if targets.is_empty() {
                return Ok(sweep);
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                sweep.left = targets;
                return Ok(sweep);
            }
            if sweep.reaped == before {
                thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(10));
            } else {
                pause = Duration::from_micros(50);
            }
        }
    }

    /// Whether `pid` is one this must neither signal nor reap.
    fn keeps(&self, owned: &[u32], pid: u32) -> bool {
        owned.contains(&pid) || self.before.contains(&pid)
    }

    /// The pids in the children list, read again from its start.
    fn list(&mut self) -> io::Result<Vec<u32>> {
        let mut text = String::new();
        self.children
            .seek(SeekFrom::Start(0))
            .and_then(|_| self.children.read_to_string(&mut text))
            .map_err(|e| {
                crate::sys::os_error_or(e, |e| {
                    format!("cannot read this process's children list in /proc: {e}")
                })
            })?;
        Ok(text
            .split_ascii_whitespace()
            .filter_map(|s| s.parse().ok())
            .collect())
    }
}

/// Fails unless `/proc` shows this process's own PID namespace: the `NSpid:` line of `/proc/self/status` lists our
/// pid in each namespace from `/proc`'s down to ours, so it must hold exactly one number, `pid`. (`/proc/self` alone
/// is fooled when our pid happens to be the same number in an outer namespace whose `/proc` this is.)
#[cfg(all(
    any(target_os = "linux", target_os = "android"),
    not(grouptimeout_portable)
))]
fn proc_is_ours(pid: u32) -> io::Result<()> {
    let status = std::fs::read_to_string("/proc/self/status").map_err(|e| {
        crate::sys::os_error_or(e, |e| format!(
                "/proc is missing or unusable (cannot read /proc/self/status: {e}), so child processes cannot be \
                 listed"
            ))
    })?;
    let line = status.lines().find_map(|l| l.strip_prefix("NSpid:"));
    let pids: Vec<&str> = line.map_or_else(Vec::new, |l| l.split_whitespace().collect());
    if pids != [pid.to_string()] {
        let why = match line {
            None => "it shows no NSpid line, so its PID namespace cannot be checked".to_string(),
            Some(_) => format!(
                "/proc/self/status says NSpid: {}, not just {pid}: a /proc of another PID namespace",
                pids.join(" ")
            ),
        };
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!(
                "/proc is not this process's ({why}), so the processes it lists cannot be told apart from strangers"
            ),
        ));
    }
    Ok(())
}

/// Fails when `SIGCHLD` is ignored in this process: the kernel then reaps children itself.
fn auto_reaped_is_unsupported() -> io::Result<()> {
    if sys::children_are_auto_reaped()? {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "SIGCHLD is ignored, so the kernel reaps children at once and their pids could be reused before they are \
             signalled",
        ));
    }
    Ok(())
}

/// What [`Subreaper::sweep`] did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Sweep {
    /// How many child processes were reaped (killed ones and ones that had already exited).
    pub reaped: usize,
    /// Children still listed when the time limit ran out: stuck in uninterruptible sleep, or not ours to signal
    /// (`EPERM`). Empty when the sweep finished.
    pub left: Vec<u32>,
    /// The children that were alive when sent `SIGKILL` (by [`sweep_matching`](Subreaper::sweep_matching)), once
    /// each, in the order found, with their names at that time.
    pub killed: Vec<Leftover>,
}
