//! Many [`grouptimeout`] jobs waited from one thread: a [`JobSet`] holds any number of
//! [`GroupChild`]ren (plain [`spawn_group`](grouptimeout::GroupCommandExt::spawn_group) jobs, or jobs contained by
//! `grouptimeout-job`), each with its own deadline, signal and grace period, and optionally its own bounded capture,
//! and [`next`](JobSet::next) gives the next job that ended, with its key and its result, in the order the jobs ended.
//!
//! Every job gets what its blocking wait promises, because the set drives the very same end-of-job sequence, the
//! core's stepped wait ([`GroupChild::step`], `GroupChild::capture_steps`): at its deadline the job's group gets its
//! grace signal (and `SIGCONT`), then `SIGKILL` at the grace period's end, its leader is reaped, and the job is ended
//! (its leftovers killed; a contained job's boundary ended); a leader that exits first has its leftovers killed
//! before the job is reported. Only the sleeping is the set's: one sleep for every job.
//!
//! ```no_run
//! use std::process::Command;
//! use std::time::{Duration, Instant};
//! use grouptimeout::{signal, GroupCommandExt};
//! use grouptimeout_set::JobSet;
//!
//! # fn main() -> std::io::Result<()> {
//! let mut set = JobSet::new()?;
//! let start = Instant::now();
//! for (name, script, secs) in [("quick", "exit 3", 5), ("slow", "sleep 60", 1)] {
//!     let mut child = Command::new("sh").args(["-c", script]).spawn_group()?;
//!     child.set_grace(signal::SIGTERM, Duration::from_millis(200));
//!     set.add(name, child, Some(start + Duration::from_secs(secs)))?;
//! }
//! // In the order they end: `quick: exited with status 3`, then `slow: timed out; killed by signal 15`.
//! for (name, result) in &mut set {
//!     println!("{name}: {}", result?.outcome());
//! }
//! # Ok(())
//! # }
//! ```
//!
//! # A test runner
//!
//! Many tests, a few at a time, each contained (so that what a test leaves behind is found however it daemonised),
//! each with a deadline, a leak grace (nextest's `leak-timeout`: what the test left gets that long to exit on its own,
//! then is killed and reported as leaked), and a leak report per test. The pieces: `grouptimeout-job`'s
//! `spawn_contained`, the child's [`set_leak_grace`](GroupChild::set_leak_grace), and `grouptimeout-job`'s
//! `JobOutputExt` on each [`Finished`], whichever way its job was added (`leak_report()`, `leftovers()`,
//! `containment()`). `examples/test_runner.rs` is a whole runner (`cargo run -p grouptimeout-set --example
//! test_runner -- 500`: 500 tests, 8 at a time, captured, that checks its own reports).
//!
//! ```
//! use std::process::{Command, Stdio};
//! use std::time::{Duration, Instant};
//! use grouptimeout_job::{JobCommandExt, JobOutputExt};
//! use grouptimeout_set::JobSet;
//!
//! # fn main() -> std::io::Result<()> {
//! let tests = ["exit 0", "exit 1", "setsid sleep 30 >/dev/null 2>&1 &", "(sleep 0.01) &", "sleep 30"];
//! let add = |set: &mut JobSet<usize>, n: usize| {
//!     let mut child = Command::new("sh").args(["-c", tests[n]]).stdin(Stdio::null()).spawn_contained()?;
//!     child.set_leak_grace(Duration::from_millis(100));
//!     set.add(n, child, Some(Instant::now() + Duration::from_millis(500)))
//! };
//! let (mut set, at_once) = (JobSet::new()?, 2);
//! // Start `at_once` tests, then one more each time a test ends.
//! let mut added = 0;
//! while added < at_once {
//!     add(&mut set, added)?;
//!     added += 1;
//! }
//! while let Some((n, finished)) = set.next() {
//!     if added < tests.len() {
//!         add(&mut set, added)?;
//!         added += 1;
//!     }
//!     let finished = finished?;
//!     // The third: `exited with status 0; leaked 1 process: 4242 sleep` (in a cgroup, or under the job's reaper);
//!     // the fourth: `no leaks`; the last: `timed out; …; no leaks; killed with the job while its command ran: …`.
//!     println!("{}: {}; {}", tests[n], finished.outcome(), finished.leak_report());
//! }
//! # Ok(())
//! # }
//! ```
//!
//! **The set acts only inside its calls.** It has no thread: a deadline, the end of a grace period or of a leak
//! grace, a leader's exit are acted on inside [`next`](JobSet::next) and [`next_timeout`](JobSet::next_timeout) (and
//! [`add`](JobSet::add) takes the first step of the job it adds, and of no other). A runner that spawns all of its
//! jobs before its first `next()` leaves the first ones unwatched for as long as the spawns take: 1,000 contained jobs
//! with deadlines 50 ms after their spawns, added before the first `next()`, had their deadlines acted on 2.8 to 4.4 s
//! late (medians of two runs; the spawns took 2.7 and 5.5 s on a loaded 2-CPU machine; the issue that asked for this
//! saw 1 to 2 s). Interleave instead: add N jobs, then call `next()` and add one job for each job it gives back (as
//! above); or, where jobs must be spawned in a burst, call [`next_timeout(Duration::ZERO)`](JobSet::next_timeout)
//! after each `add`: it does not sleep, steps what is due and what is ready, and gives back a job that ended (the
//! same 1,000 jobs: 3 ms late, median; 20 ms at most).
//!
//! # What it promises
//!
//! - **One thread, no signal handler, no thread.** Everything happens in the calls of the thread that owns the set
//!   ([`add`](JobSet::add), [`next`](JobSet::next), [`next_timeout`](JobSet::next_timeout), the drop); between them
//!   nothing runs, and a job whose deadline passes meanwhile is signalled at the next call (a deadline is kept to
//!   within the wake-up's latency only while a call sleeps in the set; see [A test runner](#a-test-runner) for a
//!   runner that spawns many jobs).
//! - **What a job left behind.** Every [`Finished`] keeps a record of its job's boundary (none of its resources), so
//!   that `grouptimeout-job`'s `JobOutputExt` tells its containment, its leftovers and its leak report, for a job
//!   added with `add` as for one added with `add_captured` (a plain group's report says that it lists nothing).
//! - **Each job's own plan.** Its deadline is given to `add`; its grace signal and period, whether its leftovers are
//!   killed, and (captured) its output limits, omission marker, input, output sink and idle timeout are the child's
//!   settings ([`GroupChild::set_grace`], [`GroupChild::set_kill_leftovers`], `set_output_limit`, `set_input`,
//!   `set_output_sink`, `set_idle_timeout`), made before `add`.
//! - **From other threads:** a [`GroupHandle`](grouptimeout::GroupHandle) taken before `add` signals or kills the job
//!   from any thread; the set sees the leader's exit as any exit, ends the job and reports it.
//! - **Dropping the set** ends every job still in it, as dropping its [`GroupChild`] does (the group killed, the
//!   leader reaped, the job ended, bounded): all are sent `SIGKILL` first, then each is reaped, so that the drop takes
//!   about as long as the slowest job takes to die, not their sum.
//! - **A wake-up costs what happened.** On Linux one `epoll_wait` sleeps on every job's descriptors (the leader's exit
//!   descriptor, a capture's pipes) and the jobs' next instants sit in a min-heap: a wake-up steps only the jobs
//!   whose descriptor is ready or whose instant passed, so thousands of idle jobs do not make one job's exit slower
//!   to see. Elsewhere (macOS, FreeBSD, a build with `--cfg grouptimeout_portable`) each sleep is one `poll(2)` over
//!   every job's descriptors, and a job without an exit descriptor is stepped on its poll schedule (checked at least
//!   every 10 ms): correct, with a cost that grows with the number of jobs.
//! - **Forks cost it nothing.** On Linux the set registers with its epoll instance a duplicate of its own of each
//!   descriptor a job's step lists, and deregisters and closes it itself once a step no longer lists it or the job
//!   ends. A child that this process forks without exec holds copies of every descriptor, which keep their files
//!   open; had the set registered the job's own descriptors, the ones a step closes (a pidfd at the reap, a capture's
//!   input after its last byte) would stay registered, ready for ever, while the fork lives (an epoll registration
//!   lasts until its file's last reference is closed), and the set would spin.
//! - **A panic in a step** (a captured job's output sink, called in the step that read the chunk) unwinds out of the
//!   call that stepped it ([`next`](JobSet::next), [`next_timeout`](JobSet::next_timeout), [`add`](JobSet::add))
//!   and leaves the set as it was before that call: every job stays in it (the one whose step panicked too, also
//!   when that was its first step, in `add`) with its deadline and what it waits on, jobs that ended before the
//!   panic are still given back, and the next call goes on (the job whose step panicked, and any whose instant had
//!   come in that round, are stepped at once). Dropping the set instead ends every job, as ever.
//!
//! # What a job costs
//!
//! A job holds what its child holds and, on Linux, the set's duplicate of each descriptor that the job's step
//! lists (see *Forks cost it nothing* above; elsewhere none); the set adds no process per job, and about a hundred
//! bytes of bookkeeping beside the child itself, and holds one descriptor of its own (its epoll instance, Linux).
//! Measured on Linux 6 with jobs of `sleep` in a set:
//!
//! | job | descriptors | processes |
//! |---|---:|---:|
//! | plain ([`spawn_group`](grouptimeout::GroupCommandExt::spawn_group)) | 2: its leader's pidfd, the set's duplicate of it | 1 |
//! | contained, cgroup or reaper mode (`grouptimeout-job`) | 5: its keeper's channel, a pidfd of the command and one of the keeper, the epoll set its waits sleep on, the set's duplicate of that | 2: its keeper and the command |
//! | captured, each of the above | 2 more per piped stream (stdout, stderr; stdin while input is left): the pipe, and the set's duplicate of it, closed at the stream's end of file (stdin's: after its last byte) | as above |
//!
//! (plus whatever the command starts). The pidfd is opened at a job's second step, so a job holds it from the first
//! call of [`next`](JobSet::next) after its `add`; where none can be had (no descriptor left, Linux before 5.3,
//! other systems) the job's exit is found by grouptimeout's poll schedule instead, and the job still ends. With
//! `RLIMIT_NOFILE` at 1,024 (a common default) a set of plain jobs holds about 500; raise the soft limit
//! (`setrlimit`, up to the hard limit) for more, and mind the machine's `pid_max` for contained jobs (two processes
//! each). The set never drops a job for want of a descriptor: a spawn that finds none fails before the job exists,
//! [`JobSet::new`] fails with `EMFILE`, and [`add`](JobSet::add) fails with the OS error of registering (`EMFILE`
//! for the set's duplicate, `ENOMEM`, `ENOSPC` past the user's limit of epoll watches) and ends the job it was given;
//! a job whose later step lists a descriptor the set cannot duplicate or register is stepped every 10 ms instead
//! (see below).
//!
//! # Errors
//!
//! A job's own error (what its blocking wait would return: `ECHILD` when someone else reaped the leader, a group
//! kill's `EPERM`) is that job's result in [`next`](JobSet::next), with its key; the job is then ended as a dropped
//! [`GroupChild`] is. The set's own errors keep their errno: [`JobSet::new`] fails with `epoll_create1`'s,
//! [`add`](JobSet::add) with the first step's, or the duplicate's or `epoll_ctl`'s. Should watching a descriptor fail
//! later (a step that lists a new one when no descriptor is left for the set's duplicate, or past the kernel's limit
//! of watches), the job is not dropped: it is stepped every 10 ms instead, and ends as it would have, up to that much
//! later. Should the sleep itself fail (it does not, with a valid epoll
//! instance), every job is stepped every 10 ms.
//!
//! # Features
//!
//! `capture` (on by default, and `grouptimeout`'s `capture` with it): `JobSet::add_captured` and
//! `Finished::Captured`.
#![deny(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

use std::collections::VecDeque;
use std::fmt;
use std::io;
use std::time::{Duration, Instant};

use grouptimeout::{GroupChild, Step};

mod job;
mod sleep;
mod sys;
mod timers;

use job::Waiting;
pub use job::{Finished, JobRecord};
use sleep::{Sleep, Watch, Watched};
use timers::Timers;

/// How often a job whose descriptors cannot be watched is stepped (and every job, should the sleep fail).
const BLIND_TICK: Duration = Duration::from_millis(10);

/// Jobs waited from one thread; see the [crate docs](crate).
///
/// `K` is the caller's key for each job (a name, an index, a request id): [`next`](JobSet::next) gives it back with
/// the job's result. Keys need not be unique. A set is [`Send`] where `K` is: it may move to another thread with its
/// jobs, and is used from one thread at a time (`&mut self`).
pub struct JobSet<K> {
    /// The jobs, by slot; a slot is reused once its job ended.
    slots: Vec<Option<Slot<K>>>,
    /// The empty slots.
    free: Vec<usize>,
    /// How many slots hold a job.
    live: usize,
    timers: Timers,
    sleep: Sleep,
    /// Jobs that ended and are not given back yet, in the order they ended.
    done: VecDeque<(K, io::Result<Finished>)>,
    /// The slots to step in this round (a slot may be listed twice: it is stepped once).
    woken: Vec<usize>,
    /// What the last step of a job listed (kept to spare an allocation per step).
    want: Vec<Watch>,
    /// The count of rounds (a wake-up and the steps it brings).
    round: u64,
    /// The slot of the job whose step is under way, and whether a round is under way (its due jobs' instants taken):
    /// both cleared when done, so that either one still set when a call begins says that a panic unwound out of a
    /// step of the last call (see [`JobSet::recover`]).
    stepping: Option<usize>,
    in_round: bool,
}

/// One job in its slot.
struct Slot<K> {
    key: K,
    job: Waiting,
    /// What is registered with the sleep for it.
    watched: Vec<Watched>,
    /// Its next instant, and the stamp of its entry in the heap.
    timer: Option<(Instant, u64)>,
    /// The round it was last stepped in.
    round: u64,
    /// Its descriptors could not be watched: stepped every [`BLIND_TICK`] instead.
    blind: bool,
    /// Its last step asked to be stepped again at once (a yield: its instant had come when it was set).
    eager: bool,
}

impl<K> JobSet<K> {
    /// An empty set.
    ///
    /// # Errors
    ///
    /// On Linux, the OS error of `epoll_create1` (`EMFILE` when this process has no descriptor left, `ENFILE`,
    /// `ENOMEM`). Elsewhere it does not fail.
    pub fn new() -> io::Result<JobSet<K>> {
        Ok(JobSet {
            slots: Vec::new(),
            free: Vec::new(),
            live: 0,
            timers: Timers::default(),
            sleep: Sleep::new()?,
            done: VecDeque::new(),
            woken: Vec::new(),
            want: Vec::new(),
            round: 0,
            stepping: None,
            in_round: false,
        })
    }

    /// Adds a job: `child`'s wait with `deadline` (`None`: none), as [`GroupChild::wait_deadline`] would wait, under
    /// `key`. Its grace signal and period are the child's ([`GroupChild::set_grace`]; take a
    /// [`handle`](GroupChild::handle) first to signal it from another thread). The job's first step is taken here: a
    /// leader that already exited is reported by the next [`next`](JobSet::next).
    ///
    /// # Errors
    ///
    /// The first step's error (as [`GroupChild::step`]'s), or the OS error of registering the job's descriptors
    /// (`EMFILE`: no descriptor left for the set's duplicate; `ENOMEM`, `ENOSPC`: the user's limit of epoll watches). The job is then not in the set, and was ended as a
    /// dropped [`GroupChild`] is.
    pub fn add(&mut self, key: K, child: GroupChild, deadline: Option<Instant>) -> io::Result<()> {
        self.insert(key, Waiting::Plain { child, deadline })
    }

    /// Adds a capturing job: `child`'s `wait_with_output_deadline(deadline)` (`None`: no deadline), in steps, under
    /// `key`; its result is a [`Finished::Captured`]. The capture is the child's as it was set up: stdout and stderr
    /// piped (the others are not captured), at most `set_output_limit` bytes kept per stream, stdin fed from
    /// `set_input` (else closed), each chunk handed to `set_output_sink`'s sink in the call of the set that read it
    /// (on its thread), and the job ended as `Outcome::Idle` after `set_idle_timeout`'s silence. Needs the `capture`
    /// feature (on by default).
    ///
    /// # Errors
    ///
    /// As for [`add`](JobSet::add), and `capture_steps`'s (setting the pipes non-blocking).
    #[cfg(feature = "capture")]
    #[cfg_attr(docsrs, doc(cfg(feature = "capture")))]
    pub fn add_captured(
        &mut self,
        key: K,
        child: GroupChild,
        deadline: Option<Instant>,
    ) -> io::Result<()> {
        let capture = child.capture_steps(deadline)?;
        self.insert(key, Waiting::Captured(Box::new(capture)))
    }

    /// How many jobs are in the set: added, and not yet given back by [`next`](JobSet::next).
    #[must_use]
    pub fn len(&self) -> usize {
        self.live + self.done.len()
    }

    /// Whether the set holds no job.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// As [`next`](JobSet::next), but waits at most `timeout`: `None` when the set is empty or no job ended in
    /// time. A timeout too large to represent as an [`Instant`] means no limit.
    ///
    /// With a zero `timeout` it does not sleep: it steps every job that is due (a deadline, the end of a grace period
    /// or of a leak grace, the poll schedule) and every job whose descriptor is ready (a leader's exit, a capture's
    /// pipe), once, and gives back a job that ended, if any; between the spawns of a burst, it keeps the jobs already
    /// added on time (see [A test runner](crate#a-test-runner)).
    pub fn next_timeout(&mut self, timeout: Duration) -> Option<(K, io::Result<Finished>)> {
        self.next_until(Instant::now().checked_add(timeout))
    }

    /// Puts `job` in a free slot and takes its first step; on error takes it out again (its drop ends it).
    fn insert(&mut self, key: K, job: Waiting) -> io::Result<()> {
        self.recover();
        let slot = self.free.pop().unwrap_or_else(|| {
            self.slots.push(None);
            self.slots.len() - 1
        });
        self.slots[slot] = Some(Slot {
            key,
            job,
            watched: Vec::new(),
            timer: None,
            round: self.round,
            blind: false,
            eager: false,
        });
        self.live += 1;
        self.step(slot, true).inspect_err(|_| {
            drop(self.remove(slot));
        })
    }

    /// Takes the job in `slot` out of the set, its registrations (the set's duplicates) deregistered and closed.
    fn remove(&mut self, slot: usize) -> Option<Slot<K>> {
        let mut taken = self.slots.get_mut(slot)?.take()?;
        self.sleep.unwatch(&mut taken.watched);
        self.free.push(slot);
        self.live -= 1;
        Some(taken)
    }

    /// Steps the job in `slot`: a job that ended is moved to `done`; a pending one is watched as its step says. With
    /// `strict` (the first step, in `add`), an error is returned and the job left in place for the caller to remove;
    /// else a step's error ends the job (its result) and a failure to watch makes it blind.
    fn step(&mut self, slot: usize, strict: bool) -> io::Result<()> {
        let Some(s) = self.slots.get_mut(slot).and_then(Option::as_mut) else {
            return Ok(());
        };
        s.round = self.round;
        self.stepping = Some(slot);
        let step = s.job.step();
        self.stepping = None;
        let interest = match step {
            Ok(Step::Pending(interest)) => interest,
            Ok(Step::Done(finished)) => {
                self.finish(slot, Ok(finished));
                return Ok(());
            }
            Err(e) if strict => return Err(e),
            Err(e) => {
                self.finish(slot, Err(e));
                return Ok(());
            }
        };
        job::watches(&interest, &mut self.want);
        if !s.blind {
            if let Err(e) = self.sleep.watch(slot, &mut s.watched, &self.want) {
                if strict {
                    return Err(e);
                }
                self.sleep.unwatch(&mut s.watched);
                s.blind = true;
            }
        }
        let mut until = interest.until();
        let now = Instant::now();
        s.eager = until.is_some_and(|at| at <= now);
        // Blind, or (against the contract) nothing to wake it: never left unstepped for ever.
        if s.blind || (until.is_none() && s.watched.is_empty()) {
            until = until.into_iter().chain(now.checked_add(BLIND_TICK)).min();
        }
        if until != s.timer.map(|(at, _)| at) {
            s.timer = until.map(|at| (at, self.timers.push(at, slot)));
        }
        Ok(())
    }

    /// Records the end of the job in `slot`, and ends it (a drop, after its registrations were taken out).
    fn finish(&mut self, slot: usize, result: io::Result<Finished>) {
        if let Some(s) = self.remove(slot) {
            self.done.push_back((s.key, result));
            drop(s.job);
        }
    }

    /// Makes the set again what it was before a call out of which a panic unwound (a captured job's output sink
    /// panicked in its step): the job whose step did not return has its registrations dropped (what that step closed
    /// is not known; its next step lists its descriptors again), and every job left without an instant (that one, and
    /// those whose instants the round had taken and not yet stepped) is stepped at the next round. Each job's
    /// deadline is in its own wait, so it keeps it. Nothing to do (one check) when no panic came.
    fn recover(&mut self) {
        if self.stepping.is_none() && !self.in_round {
            return;
        }
        if let Some(Some(s)) = self
            .stepping
            .take()
            .and_then(|slot| self.slots.get_mut(slot))
        {
            self.sleep.unwatch(&mut s.watched);
        }
        self.in_round = false;
        let now = Instant::now();
        for (slot, s) in self.slots.iter_mut().enumerate() {
            if let Some(s) = s.as_mut().filter(|s| s.timer.is_none()) {
                s.timer = Some((now, self.timers.push(now, slot)));
            }
        }
    }

    /// [`next`](JobSet::next), up to `limit` (`None`: no limit).
    fn next_until(&mut self, limit: Option<Instant>) -> Option<(K, io::Result<Finished>)> {
        self.recover();
        loop {
            if let Some(done) = self.done.pop_front() {
                return Some(done);
            }
            if self.live == 0 {
                return None;
            }
            self.round += 1;
            self.in_round = true;
            let now = Instant::now();
            let mut woken = std::mem::take(&mut self.woken);
            woken.clear();
            let slots = &mut self.slots;
            let mut eager = false;
            while let Some(slot) = self
                .timers
                .pop_due(now, |slot, stamp| has_stamp(slots, slot, stamp))
            {
                if let Some(Some(s)) = slots.get_mut(slot) {
                    s.timer = None;
                    eager |= s.eager;
                }
                woken.push(slot);
            }
            if eager {
                // A step asked to be stepped again at once (a wait's first step; without a pidfd, the first
                // millisecond after a spawn or a signal): let the CPU go once first, so that a command that shares
                // it can run (and end), rather than spin.
                std::thread::yield_now();
            }
            // (A limit that has passed makes the sleep a look: the ready descriptors' jobs are stepped too.)
            let timeout = if woken.is_empty() {
                let earliest = self
                    .timers
                    .earliest(|slot, stamp| has_stamp(&self.slots, slot, stamp));
                let wake = earliest.into_iter().chain(limit).min();
                wake.map(|w| w.saturating_duration_since(now))
            } else {
                // Due jobs, and with them the jobs whose descriptors are ready now (a look, not a sleep): rounds of
                // due jobs alone, back to back, never keep a ready descriptor waiting.
                Some(Duration::ZERO)
            };
            let jobs = self
                .slots
                .iter()
                .enumerate()
                .filter_map(|(slot, s)| Some((slot, s.as_ref()?.watched.as_slice())));
            if self.sleep.sleep(timeout, jobs, &mut woken).is_err() {
                // Never spin on a sleep that fails: pause, then step every job.
                std::thread::sleep(timeout.map_or(BLIND_TICK, |t| t.min(BLIND_TICK)));
                woken.clear();
                woken.extend((0..self.slots.len()).filter(|&slot| self.slots[slot].is_some()));
            }
            for &slot in &woken {
                let stepped = self
                    .slots
                    .get(slot)
                    .and_then(Option::as_ref)
                    .is_some_and(|s| s.round == self.round);
                if !stepped {
                    // (A step's own error is the job's result; nothing else fails when not strict.)
                    let _ = self.step(slot, false);
                }
            }
            self.woken = woken;
            self.in_round = false;
            let slots = &self.slots;
            self.timers
                .sweep(self.live, |slot, stamp| has_stamp(slots, slot, stamp));
            if self.done.is_empty() && limit.is_some_and(|l| Instant::now() >= l) {
                return None;
            }
        }
    }
}

/// Whether the job in `slot` is there and its heap entry's stamp is `stamp`.
fn has_stamp<K>(slots: &[Option<Slot<K>>], slot: usize, stamp: u64) -> bool {
    slots
        .get(slot)
        .and_then(Option::as_ref)
        .is_some_and(|s| s.timer.is_some_and(|(_, own)| own == stamp))
}

/// The jobs in the order they end: [`next`](Iterator::next) blocks until the next job ended and gives its key and its
/// result (`Ok`: how its wait ended; `Err`: the wait's error, the job then ended as a dropped
/// [`GroupChild`]); `None` once the set is empty. Jobs that end in the same wake-up are given in the order they were
/// stepped (those whose instant passed first, earliest first, then those whose descriptors were ready). Jobs may be
/// added between calls: `for (key, result) in &mut set` borrows the set for the loop, so a loop that adds jobs is
/// written `while let Some((key, result)) = set.next()`.
impl<K> Iterator for JobSet<K> {
    type Item = (K, io::Result<Finished>);

    fn next(&mut self) -> Option<Self::Item> {
        self.next_until(None)
    }
}

impl<K> fmt::Debug for JobSet<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobSet")
            .field("running", &self.live)
            .field("ended", &self.done.len())
            .finish_non_exhaustive()
    }
}

/// Ends every job still in the set, as dropping its [`GroupChild`] does: every job's group is sent `SIGKILL` first
/// (through its handle), then each job is dropped (its leader reaped, at most about a second each for a leader that
/// does not die, its boundary ended), the set's registrations of its descriptors taken out before. Results not yet given back are dropped.
impl<K> Drop for JobSet<K> {
    fn drop(&mut self) {
        for s in self.slots.iter().flatten() {
            let _ = s.job.child().handle().kill();
        }
        for slot in 0..self.slots.len() {
            drop(self.remove(slot));
        }
    }
}

/// The README's Rust examples, compiled (and run, unless marked `no_run`) by `cargo test` so that they cannot drift
/// from the API.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
