//! Opt-in, process-wide facilities for a program whose whole job is supervising one command, such as the
//! `grouptimeout` tool.
//!
//! Nothing else in this crate touches process-wide state. Everything here does, and only when called by name:
//! signal handlers and dispositions, the signal mask, the child-subreaper flag, reaping children, resource limits,
//! the terminal's foreground process group, stopping and exiting.
//! A library that merely runs commands should not call any of it.
//!
//! - [`Signals`]: receive signals synchronously (blocked, and taken with `sigtimedwait`), without a descriptor;
//!   [`signal_is_ignored`] to leave alone what the parent chose to ignore, and [`stop_ignoring`] for the one
//!   signal that must work (the timeout's).
//! - [`sigpipe_was_ignored_at_start`] and [`keep_sigpipe_ignored`]: pass an ignored `SIGPIPE` on to the command, as
//!   a program that does not reset it would.
//! - [`Subreaper`]: catch descendants that left the command's process group, reap the orphans adopted meanwhile,
//!   and leave alone the children this process had before. Linux only (Android included): it exists on every Unix
//!   so that a program builds everywhere, but elsewhere it fails.
//! - [`signal_child`]: signal one unreaped child of a [`std::process::Child`] by pid.
//! - [`exit_as_signaled`]: end this process the way a command that died of a signal ended.
//! - [`die_with_parent_forked`]: [`GroupChild::die_with_parent`] with a forked guard, cheaper in a small process.
//! - [`Terminal`], [`take_stop`], [`stop_self`] and [`stop_own_group`]: job control at a terminal, as shells do
//!   it: hand the terminal to the command's group and take it back, notice that the command was stopped (Ctrl-Z),
//!   and stop along with it.

use std::io::{self, Read, Seek, SeekFrom};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use crate::guard::Start;
use crate::sys;
pub use crate::terminal::{stop_own_group, stop_self, take_stop, Terminal};
use crate::{GroupChild, Leftover};

/// Signals received synchronously: blocked, and taken one at a time by [`wait`](Signals::wait).
///
/// [`install`](Signals::install) sets, for each signal given, a handler that only notes that the signal arrived,
/// and blocks those signals in the calling thread. A blocked signal stays pending until [`wait`](Signals::wait)
/// takes it (`sigtimedwait(2)`); the handler runs only while the signals are unblocked, inside
/// [`unblocked`](Signals::unblocked), and what it notes is reported by the next `wait`. Dropping the value unblocks
/// the signals (a signal still pending then goes to the handler and is dropped) and restores the previous
/// dispositions and mask. Uses no file descriptor.
///
/// # What is guaranteed
///
/// - A signal that arrives after `install` returned is reported by a later `wait` (several deliveries of the same
///   signal may be reported once: the kernel merges pending standard signals).
/// - While the value lives, none of these signals can end the process or interrupt it: a program that keeps it
///   until it exits (calling [`std::process::exit`] or [`exit_as_signaled`] without dropping it) cannot be killed
///   by one of them while it computes its exit status.
/// - Handlers revert to the default disposition across `exec`, so a command spawned while the value lives starts
///   with default dispositions for these signals, including any that this process had ignored (an inherited
///   `SIG_IGN`, such as `SIGCHLD` ignored by a careless parent, is replaced).
/// - `SIGCHLD` may be in the set: it is never installed with `SA_NOCLDWAIT`, so children stay waitable (this is
///   what lets [`CommandExt::spawn_group`](crate::CommandExt::spawn_group) run in a process started with
///   `SIGCHLD` ignored). It is reported when a child stops or continues too, not only when one exits (see
///   [`take_stop`]).
///
/// # What is not guaranteed
///
/// - A spawned command inherits the signal mask of the moment (std does not reset it): spawn it inside
///   [`unblocked`](Signals::unblocked), or it starts with these signals blocked. Other signals this process had
///   blocked stay blocked for the command either way.
/// - Process-wide: one `Signals` at a time per process (a second `install` fails), and other code installing
///   handlers for the same signals replaces ours. The mask is the calling thread's: in a multi-threaded program,
///   other threads must block these signals too, or the kernel may deliver them there (then they are noted and
///   reported, but do not wake a `wait` in progress).
/// - Signal numbers up to 64 only.
#[derive(Debug)]
#[must_use = "dropping a Signals restores the previous signal handlers and mask at once"]
pub struct Signals {
    set: Vec<i32>,
    /// The child whose exit the last `SIGCHLD` taken by `wait` reported.
    exited: Option<u32>,
    saved: Vec<(i32, sys::SavedAction)>,
    mask: Option<sys::SavedMask>,
}

impl std::fmt::Debug for sys::SavedAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SavedAction")
    }
}

impl std::fmt::Debug for sys::SavedMask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SavedMask")
    }
}

/// Whether a `Signals` is installed in this process.
static INSTALLED: AtomicBool = AtomicBool::new(false);

impl Signals {
    /// Installs the recording handler for each of `signals`, then blocks them in the calling thread.
    ///
    /// Install it *before* spawning the command you supervise (and spawn it inside
    /// [`unblocked`](Signals::unblocked)): from then on no handled signal can end this process and leave the command
    /// running unsupervised.
    ///
    /// # Errors
    ///
    /// Another `Signals` is installed (`AlreadyExists`); a signal cannot be caught (`SIGKILL`, `SIGSTOP`) or is not
    /// a valid number below 65 (`InvalidInput`). On error every disposition changed so far is restored.
    pub fn install(signals: &[i32]) -> io::Result<Signals> {
        if INSTALLED.swap(true, Ordering::SeqCst) {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                "a grouptimeout::host::Signals is already installed in this process",
            ));
        }
        let mut installed = Signals {
            set: signals.to_vec(),
            exited: None,
            saved: Vec::with_capacity(signals.len()),
            mask: None,
        };
        sys::clear_recorded(signals);
        for &signal in signals {
            let saved = sys::install_recording_handler(signal, true).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("cannot install a handler for signal {signal}: {e}"),
                )
            })?;
            installed.saved.push((signal, saved));
        }
        installed.mask = Some(sys::block(signals)?);
        Ok(installed)
    }

    /// Waits until a handled signal arrives, at most `timeout` (`None`: no limit), and returns its number, or
    /// `None` when the time is up. `Some(Duration::ZERO)` only checks.
    ///
    /// One signal per call; signals noted by the handler (inside [`unblocked`](Signals::unblocked)) come first,
    /// lowest number first. It never returns `None` before `timeout` has passed. On Linux, FreeBSD and NetBSD the
    /// wait is one `sigtimedwait(2)`; elsewhere (macOS) it checks the pending signals every 10 ms.
    ///
    /// # Errors
    ///
    /// The wait failed, which does not happen in practice.
    pub fn wait(&mut self, timeout: Option<Duration>) -> io::Result<Option<i32>> {
        let deadline = timeout.map(|t| Instant::now().checked_add(t));
        self.exited = None;
        loop {
            if let Some(signal) = sys::take_recorded(&self.set) {
                return Ok(Some(signal));
            }
            let left = match deadline {
                // No limit: wait a day at a time.
                None | Some(None) => Duration::from_secs(86_400),
                Some(Some(deadline)) => deadline.saturating_duration_since(Instant::now()),
            };
            if let Some((signal, exited)) = sys::wait_blocked(&self.set, left)? {
                self.exited = exited;
                return Ok(Some(signal));
            }
            if left.is_zero() {
                return Ok(None);
            }
        }
    }

    /// When the last [`wait`](Signals::wait) returned a `SIGCHLD` that reports a child's exit: that child's pid, if
    /// the kernel said (Linux and Android; `None` elsewhere, for a stop or a continue, and for a `SIGCHLD` that
    /// arrived inside [`unblocked`](Signals::unblocked)). Pending `SIGCHLD`s merge, so other children may have
    /// exited too: this is a hint for [`Subreaper::reap_exited`], not a list.
    pub fn exited_child(&self) -> Option<u32> {
        self.exited
    }

    /// Runs `f` with the handled signals unblocked (as they were before [`install`](Signals::install) blocked them,
    /// whatever else the mask holds), then blocks them again. Signals that arrive meanwhile are noted by the handler
    /// and reported by the next [`wait`](Signals::wait).
    ///
    /// Spawn the supervised command in here, so that it does not inherit the handled signals blocked.
    ///
    /// # Errors
    ///
    /// Changing the signal mask failed (invalid arguments only; `f` did not run).
    pub fn unblocked<T>(&mut self, f: impl FnOnce() -> T) -> io::Result<T> {
        let _previous = sys::unblock(&self.set)?;
        let result = f();
        sys::block(&self.set)?;
        Ok(result)
    }
}

impl Drop for Signals {
    fn drop(&mut self) {
        // Unblock first: a pending signal goes to the recording handler rather than to a restored default action.
        if let Some(mask) = &self.mask {
            let _ = sys::unblock(&self.set);
            let _ = sys::set_mask(mask);
        }
        for (signal, saved) in self.saved.iter().rev() {
            let _ = sys::restore_action(*signal, saved);
        }
        sys::clear_recorded(&self.set);
        INSTALLED.store(false, Ordering::SeqCst);
    }
}

/// Whether `signal` is set to be ignored (`SIG_IGN`) in this process, for instance because the parent started it
/// under `nohup` (`SIGHUP`) or as a background job of a non-interactive shell (`SIGINT`, `SIGQUIT`).
///
/// An ignored signal stays ignored across `exec`, so a command spawned now inherits it; a handler installed by
/// [`Signals::install`] would replace that with the default disposition in the command. A supervisor that
/// wants to leave such choices of its parent intact checks this first and does not handle those signals.
///
/// # Errors
///
/// `signal` is not a valid signal number.
pub fn signal_is_ignored(signal: i32) -> io::Result<bool> {
    sys::is_ignored(signal)
}

/// Whether `SIGPIPE` was ignored (`SIG_IGN`) when this process started, that is, inherited ignored from its parent
/// (a shell's `trap '' PIPE`).
///
/// Every Rust program sets `SIGPIPE` to ignored before `main`, so [`signal_is_ignored`] cannot tell. This crate
/// records the disposition before that, from a function the loader runs before `main` (an ELF `.init_array` entry,
/// or Mach-O `__mod_init_func`); that function only reads the disposition, in every program linking this crate.
///
/// # What is not guaranteed
///
/// On a platform other than Linux, Android, the BSDs, illumos, Solaris and Apple's, this is always `false`. Code
/// that changes `SIGPIPE` in its own pre-`main` initializer, ahead of this crate's, is not seen.
pub fn sigpipe_was_ignored_at_start() -> bool {
    sys::sigpipe_ignored_at_start()
}

/// Makes `command` start with `SIGPIPE` ignored, as it would start if exec'ed by a process that inherited it
/// ignored (see [`sigpipe_was_ignored_at_start`]); returns `command` for chaining.
///
/// std resets `SIGPIPE` to its default in every child it spawns (it ignores `SIGPIPE` itself, and an ignored signal
/// survives `exec`). This adds a [`pre_exec`](std::os::unix::process::CommandExt::pre_exec) step that sets it
/// back to ignored after that reset, just before the `exec`. Works with
/// [`spawn_group`](crate::CommandExt::spawn_group) and with plain [`Command::spawn`].
///
/// # Cost
///
/// Any `pre_exec` step makes std give up `posix_spawn` for `fork` + `exec`: about a quarter slower for a small
/// program, and tens of milliseconds for one with a large memory footprint. Call it only when needed, for instance
/// when [`sigpipe_was_ignored_at_start`] says so.
///
/// If setting the disposition fails in the child (it does not in practice), the spawn fails with that error.
pub fn keep_sigpipe_ignored(command: &mut Command) -> &mut Command {
    sys::ignore_sigpipe_in_child(command);
    command
}

/// Resets `signal` to its default disposition if this process ignores it (`SIG_IGN`), and says whether it did.
///
/// For the signal a supervisor sends at its timeout: started as a background job of a script (`SIGINT` ignored) or
/// under `trap '' TERM`, a command spawned now would inherit that signal ignored and the timeout would do nothing.
/// A signal that is handled or already at its default disposition is left as it is.
///
/// # Errors
///
/// `signal` is not a valid signal number, or its disposition cannot be changed (`SIGKILL` and `SIGSTOP` are never
/// ignored, so they are left alone without error).
pub fn stop_ignoring(signal: i32) -> io::Result<bool> {
    sys::stop_ignoring(signal)
}

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
/// - A guard of [`GroupChild::die_with_parent`] (or [`die_with_parent_forked`]) is a child of this process too: pass
///   [`GroupChild::guard_id`] in `owned`, with the leader's id, and it is neither signalled nor reaped. A sweep that
///   is not told kills it, and the group no longer dies with this process. (On Linux a guard reaped here anyway is
///   never signalled nor waited for by its `GroupChild` again, through its pidfd, even after its pid was reused.)
///
/// # What is not guaranteed
///
/// - Process-wide, and irreversible for processes already adopted. Adopted processes are children of this
///   process: when they exit they stay zombies until reaped.
/// - Only the children of the thread that called `new` are listed (adopted orphans go to that thread as long as it
///   lives): use it from a single-threaded supervisor, or spawn from that thread.
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
    /// always fails with `Unsupported`.
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
                .map_err(|e| io::Error::new(e.kind(), format!("cannot open {path}: {e}")))?;
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
    pub fn preexisting(&self) -> &[u32] {
        &self.before
    }

    /// Reaps the children that have exited, except the pids in `owned` and the [preexisting](Subreaper::preexisting)
    /// ones, without signalling anything; returns how many were reaped. Call it on each `SIGCHLD`, with the child
    /// the signal named ([`Signals::exited_child`]) as `exited`, and when [`reap_due`](Subreaper::reap_due) says.
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
    /// `matches` tells the command's processes from the others, for instance [`GroupChild::in_job`], so that the
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
                    sweep.killed.push(Leftover { pid, name });
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
                io::Error::new(
                    e.kind(),
                    format!("cannot read this process's children list in /proc: {e}"),
                )
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
        io::Error::new(
            e.kind(),
            format!(
                "/proc is missing or unusable (cannot read /proc/self/status: {e}), so child processes cannot be \
                 listed"
            ),
        )
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

/// Sends `signal` to the one process `child` (by pid, not its group), unless it was already reaped.
///
/// For a command spawned with plain [`std::process::Command::spawn`] (no process group of its own), where
/// [`Child::kill`] can send only `SIGKILL`. It asks `child` first ([`Child::try_wait`]): once it was reaped (by
/// [`Child::wait`] or [`Child::try_wait`], or by someone else: `ECHILD`), its pid may name another process, even
/// another child of this process, so nothing is sent and `Ok(())` is returned; a child that has exited is reaped by
/// that call (its status stays with `child`, for the next wait) and is sent nothing either. Taking `&mut Child` keeps
/// other code from reaping it between that check and the signal.
///
/// # Errors
///
/// The signal number is invalid, or the process may not be signalled (`PermissionDenied`).
pub fn signal_child(child: &mut Child, signal: i32) -> io::Result<()> {
    // Ask `child` itself, not the kernel about its pid: once `child` was reaped, the pid may name another child of
    // ours. A child that has exited is reaped here (its status stays with `child`) and needs no signal.
    match child.try_wait() {
        Err(e) if e.raw_os_error() == Some(libc::ECHILD) => return Ok(()),
        Err(e) => return Err(e),
        Ok(Some(_)) => return Ok(()),
        Ok(None) => {}
    }
    sys::signal_process(child.id(), signal).map(drop)
}

/// Ends this process the way a command that died of `signal` ended, so that its parent sees the same wait status
/// (a shell shows `128 + signal`).
///
/// Turns core dumps off (`RLIMIT_CORE` 0, so that re-raising `SIGSEGV` or `SIGQUIT` leaves no core file of this
/// process), sets `signal` to its default disposition, unblocks it and raises it. If this process is still alive
/// after that (the signal's default action is to ignore it, or it could not be raised), it exits with status
/// `128 + signal`. Destructors of the current stack do not run; flush what must be flushed before.
pub fn exit_as_signaled(signal: i32) -> ! {
    let _ = sys::disable_core_dumps();
    let _ = sys::raise_default(signal);
    std::process::exit(128 + signal.clamp(0, 127))
}

/// [`GroupChild::die_with_parent`] with a guard forked from this process (`fork(2)` without `exec`) instead of a
/// `/bin/sh` spawned through `posix_spawn`; what it guarantees, and how it ends, is the same.
///
/// In a small process, such as a command-line supervisor, a fork costs a fraction of a shell's start; from the
/// bench's 26.5 MiB process the two cost about the same (`BENCHMARKS.md`, row 8). `fork` copies this process's page
/// tables, so it costs more the more memory this process maps (milliseconds at hundreds of MiB), which is why the
/// library's default is the shell. The forked child calls only async-signal-safe functions, so this is sound in a
/// multi-threaded process: it ignores every catchable signal, only then joins the command's group, closes every
/// descriptor but its pipe (on Linux with `close_range`; elsewhere those below the `RLIMIT_NOFILE` soft limit, at
/// most 65,536), and waits. For a job in a cgroup of its own ([`spawn_contained`](crate::CommandExt::spawn_contained))
/// it also keeps the job's `cgroup.kill` open, and ends the cgroup as the shell guard does: `cgroup.kill`, then the
/// folder's removal once it is empty (tried for about a second), then the group. Since a signal cannot disarm it before it joins the group, this returns right after the
/// fork, without waiting for the guard to run; if the group has no process left to join by then, the guard exits
/// quietly (there is nothing to guard).
///
/// # Its name
///
/// On Linux (and Android) the guard renames itself `group-guard` (`prctl(PR_SET_NAME)`, the first thing it does), so
/// that killing this program by its name (`pkill -x NAME`, `killall NAME`) does not kill the guard too, which then
/// kills the group as it should. Its command line (`/proc/PID/cmdline`) and executable stay this program's, so
/// `pkill -f` and `killall /path/to/program` still match it; so does any kill by name in the microseconds between the
/// fork and the rename. Elsewhere no async-signal-safe call renames a process: the guard keeps this program's name,
/// and a kill by name reaches it too (the shell guard of [`GroupChild::die_with_parent`] is named `sh`).
///
/// # Memory
///
/// The guard shares this process's memory copy-on-write for as long as the command runs: every page this process
/// writes after the fork is copied, and the guard keeps the old copy. Measured here: a process that filled a 512 MiB
/// heap, forked the guard and then rewrote the heap left the guard holding 512 MiB of private memory
/// (`Private_Dirty: 524328 kB` in `/proc/PID/smaps_rollup`), where the shell guard of the same process held 0.1 MiB;
/// the fork itself took 7.5-8.4 ms there, the shell guard 2.4-2.6 ms. Prefer the shell guard in a process of more
/// than a few tens of MiB, or one that keeps rewriting its memory; the fork pays off in a small one (such as the
/// `grouptimeout` tool, a few MiB).
///
/// # Errors
///
/// As for [`GroupChild::die_with_parent`]; `fork` can also fail for lack of memory or processes.
pub fn die_with_parent_forked(child: &mut GroupChild) -> io::Result<()> {
    child.arrange_guard(Start::Fork)
}
