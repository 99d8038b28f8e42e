//! The driver: steps the core's machine, and between steps waits as its `Interest` says, through the runtime's
//! reactor (`AsyncFd` on descriptors of our own) and timer.

use std::future::Future as _;
use std::io;
use std::os::fd::{OwnedFd, RawFd};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use grouptimeout::{Interest as Wanted, Step};
use tokio::io::unix::{AsyncFd, AsyncFdReadyGuard};
use tokio::io::Interest;
use tokio::time::Sleep;

/// While a descriptor that a step listed could not be watched (no descriptor left for the `dup`, the reactor refused
/// it), the driver steps at least this often instead: the wait is slower to notice, never stuck.
const FALLBACK: Duration = Duration::from_millis(10);

/// Steps in one `poll` before the driver yields to the runtime's other tasks (and is polled again at once): a
/// descriptor that stays ready step after step (a chatty pipe) must not hold a worker.
const ROUNDS: usize = 16;

/// A descriptor the latest step listed, as the child numbers it, and the driver's own copy, registered.
struct Watched {
    raw: RawFd,
    fd: AsyncFd<OwnedFd>,
}

impl Watched {
    fn new(raw: RawFd, interest: Interest) -> io::Result<Watched> {
        Ok(Watched {
            raw,
            fd: crate::sys::watch(raw, interest)?,
        })
    }
}

/// What a wait future holds beside the child: its registrations and its timer. It owns no descriptor of the child's.
pub(crate) struct Driver {
    readable: Vec<Watched>,
    writable: Option<Watched>,
    /// The timer, created at the first `until` in the future; armed while `armed_at` is set.
    timer: Option<Pin<Box<Sleep>>>,
    armed_at: Option<Instant>,
    /// Step at the next `poll` without waiting for anything (the first step, a changed deadline, an `until` now).
    due: bool,
    /// The runtime whose reactor and timer hold the registrations and the timer (`None`: none yet, or polled outside
    /// a runtime).
    runtime: Option<tokio::runtime::Id>,
}

impl Driver {
    /// A driver whose first `poll` steps at once.
    pub(crate) fn new() -> Driver {
        Driver {
            readable: Vec::new(),
            writable: None,
            timer: None,
            armed_at: None,
            due: true,
            runtime: None,
        }
    }

    /// Makes the next `poll` step, whatever is ready (the step's input changed).
    pub(crate) fn step_soon(&mut self) {
        self.due = true;
    }

    /// Steps while something the latest step waits for is ready, until the machine is done (`Ready`) or waits for
    /// something not ready yet (`Pending`: the reactor or the timer wakes the task).
    pub(crate) fn poll<T>(
        &mut self,
        cx: &mut Context<'_>,
        mut step: impl FnMut() -> io::Result<Step<T>>,
    ) -> Poll<io::Result<T>> {
        // Polled in another runtime than the last poll (a future moved from one runtime to another): what is
        // registered is the other runtime's, whose reactor and timer may never run again (it was dropped, or nothing
        // drives it any more), so nothing of it would wake this task. Drop it all, and register anew with this
        // runtime at once (the step below lists the descriptors and the instant again).
        let runtime = tokio::runtime::Handle::try_current()
            .ok()
            .map(|handle| handle.id());
        if runtime != self.runtime {
            self.forget();
            self.runtime = runtime;
        }
        for _ in 0..ROUNDS {
            let mut woken = std::mem::take(&mut self.due);
            // Every registration is polled, ready or not, so that each one that is not holds this task's waker.
            let mut guards: Vec<AsyncFdReadyGuard<'_, OwnedFd>> = Vec::new();
            for watched in &self.readable {
                if let Poll::Ready(ready) = watched.fd.poll_read_ready(cx) {
                    guards.push(ready?);
                }
            }
            if let Some(watched) = &self.writable {
                if let Poll::Ready(ready) = watched.fd.poll_write_ready(cx) {
                    guards.push(ready?);
                }
            }
            if self.armed_at.is_some() {
                if let Some(timer) = &mut self.timer {
                    if timer.as_mut().poll(cx).is_ready() {
                        self.armed_at = None;
                        woken = true;
                    }
                }
            }
            if guards.is_empty() && !woken {
                return Poll::Pending;
            }
            let stepped = step();
            // The step read, wrote or checked what was ready: forget that readiness, so that the next `poll` waits
            // for news instead of stepping again on the same event. A readiness the reactor reported after the guard
            // was taken survives this (tokio clears only the event the guard saw). The core writes until the pipe is
            // full and reads until it is empty, or 1 MiB per step: only a pipe resized past 1 MiB could keep unread
            // bytes with no news to come, and they are read at the next event (a write, the exit, an instant).
            for mut guard in guards {
                guard.clear_ready();
            }
            match stepped {
                Ok(Step::Pending(wanted)) => {
                    if self.follow(&wanted) {
                        // "Step again at once": after the runtime's other tasks (the core's first wait asks for a
                        // yield of the CPU here, so that a short command can end first).
                        self.due = true;
                        cx.waker().wake_by_ref();
                        return Poll::Pending;
                    }
                }
                // Nothing more to wait for; a future polled again (after an error, which the core goes on from) steps
                // at once.
                Ok(Step::Done(value)) => {
                    self.forget();
                    return Poll::Ready(Ok(value));
                }
                Err(err) => {
                    self.forget();
                    return Poll::Ready(Err(err));
                }
            }
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }

    /// Registers what the step lists and drops what it no longer lists (our copies only: the child's own
    /// descriptors stay the child's), and sets the timer to its `until`; returns whether that instant is now. Keyed
    /// by number and direction: the core keeps a listed number naming the same file until a step stops listing it
    /// (a step never opens a descriptor after it closed one), so a copy kept for a number still listed is a copy of
    /// the file listed now; and a copy of a number no longer listed is dropped here, right after that step.
    fn follow(&mut self, wanted: &Wanted) -> bool {
        let mut unwatched = false;
        let listed: Vec<RawFd> = wanted.readable().collect();
        self.readable
            .retain(|watched| listed.contains(&watched.raw));
        for raw in listed {
            if !self.readable.iter().any(|watched| watched.raw == raw) {
                match Watched::new(raw, Interest::READABLE) {
                    Ok(watched) => self.readable.push(watched),
                    Err(_) => unwatched = true,
                }
            }
        }
        match wanted.writable() {
            Some(raw)
                if self
                    .writable
                    .as_ref()
                    .is_some_and(|watched| watched.raw == raw) => {}
            Some(raw) => {
                self.writable = None;
                match Watched::new(raw, Interest::WRITABLE) {
                    Ok(watched) => self.writable = Some(watched),
                    Err(_) => unwatched = true,
                }
            }
            None => self.writable = None,
        }
        let now = Instant::now();
        let mut until = wanted.until();
        if unwatched {
            let fallback = now + FALLBACK;
            until = Some(until.map_or(fallback, |at| at.min(fallback)));
        }
        match until {
            Some(at) if at <= now => {
                self.armed_at = None;
                return true;
            }
            Some(at) => {
                if self.armed_at != Some(at) {
                    let at_tokio = tokio::time::Instant::from_std(at);
                    match &mut self.timer {
                        Some(timer) => timer.as_mut().reset(at_tokio),
                        None => self.timer = Some(Box::pin(tokio::time::sleep_until(at_tokio))),
                    }
                    self.armed_at = Some(at);
                }
            }
            None => self.armed_at = None,
        }
        false
    }

    /// Drops every registration (the copies, deregistered and closed) and disarms the timer; the next `poll` steps
    /// at once.
    fn forget(&mut self) {
        self.readable.clear();
        self.writable = None;
        self.armed_at = None;
        self.timer = None;
        self.due = true;
    }
}
