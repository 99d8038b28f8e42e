//! One job of a set: its child (or its capture), stepped through the core's stepped wait, and what a job that
//! ended gives back ([`Finished`]).

use std::any::Any;
use std::io;
use std::sync::Arc;
use std::time::Instant;

use grouptimeout::__private::{boundary, Recorded};
#[cfg(feature = "capture")]
use grouptimeout::{Capture, Captured};
use grouptimeout::{GroupChild, Interest, Outcome, Step, Usage};

use crate::sleep::Watch;

/// What [`JobSet::next`](crate::JobSet) gives for a job that ended: the outcome of its wait, or (a job added with
/// `add_captured`) what its capturing wait captured; either way, what became of the job.
///
/// What the job left behind and its containment are `grouptimeout-job`'s to tell: import its `JobOutputExt` and call
/// `leak_report()`, `leftovers()` or `containment()` on the `Finished` itself, whichever way the job was added (a
/// plain group's report says that it lists nothing). It holds none of the job's resources (no descriptor, no keeper's
/// page: a record of the job's boundary), so finished jobs can be kept.
#[derive(Debug)]
pub enum Finished {
    /// A job added with [`JobSet::add`](crate::JobSet::add): how its wait ended, as
    /// [`GroupChild::wait_deadline`] says it (its group dealt with, its leader reaped, the job ended), what the
    /// job used ([`GroupChild::usage`]), and the record of its job for `grouptimeout-job` (see above).
    Waited(Outcome, Usage, JobRecord),
    /// A job added with [`JobSet::add_captured`](crate::JobSet::add_captured): what
    /// `GroupChild::wait_with_output_deadline` would have returned. Needs the `capture` feature (on by default).
    #[cfg(feature = "capture")]
    #[cfg_attr(docsrs, doc(cfg(feature = "capture")))]
    Captured(Captured),
}

impl Finished {
    /// How the job's wait ended, either way.
    #[must_use]
    pub fn outcome(&self) -> Outcome {
        match self {
            Finished::Waited(outcome, ..) => *outcome,
            #[cfg(feature = "capture")]
            Finished::Captured(captured) => captured.outcome,
        }
    }

    /// What the job used, either way (see [`Usage`]).
    #[must_use]
    pub fn usage(&self) -> Usage {
        match self {
            Finished::Waited(_, usage, _) => *usage,
            #[cfg(feature = "capture")]
            Finished::Captured(captured) => captured.usage,
        }
    }
}

/// What `grouptimeout-job`'s `JobOutputExt` reads, whichever way the job was added.
impl Recorded for Finished {
    fn boundary_record(&self) -> Option<&(dyn Any + Send + Sync)> {
        match self {
            Finished::Waited(_, _, record) => record.0.as_deref(),
            #[cfg(feature = "capture")]
            Finished::Captured(captured) => captured.boundary_record(),
        }
    }
}

/// The record of a job's boundary that a [`Finished::Waited`] keeps, taken from its child once the wait was done:
/// what `grouptimeout-job`'s `JobOutputExt` reads (call it on the [`Finished`]), nothing for a plain group. It holds
/// none of the job's resources.
#[derive(Debug, Clone, Default)]
pub struct JobRecord(Option<Arc<dyn Any + Send + Sync>>);

/// A job's wait in steps.
#[derive(Debug)]
#[allow(
    clippy::large_enum_variant,
    reason = "the plain wait is the common one: boxed, it would cost an allocation per job"
)]
pub(crate) enum Waiting {
    /// A plain wait, with its deadline (the same at every step).
    Plain {
        child: GroupChild,
        deadline: Option<Instant>,
    },
    /// A capturing wait, which holds its deadline and its child (boxed: a capture's buffers and pipes are several
    /// times a plain child's size).
    #[cfg(feature = "capture")]
    Captured(Box<Capture>),
}

impl Waiting {
    /// One step of the job's wait: [`GroupChild::step`] or `Capture::step`.
    pub(crate) fn step(&mut self) -> io::Result<Step<Finished>> {
        Ok(match self {
            Waiting::Plain { child, deadline } => match child.step(*deadline)? {
                Step::Done(outcome) => {
                    let usage = child
                        .usage()
                        .expect("a wait that is done reaped its leader");
                    let record = JobRecord(boundary(child).and_then(|b| b.record()));
                    Step::Done(Finished::Waited(outcome, usage, record))
                }
                Step::Pending(interest) => Step::Pending(interest),
            },
            #[cfg(feature = "capture")]
            Waiting::Captured(capture) => match capture.step()? {
                Step::Done(captured) => Step::Done(Finished::Captured(captured)),
                Step::Pending(interest) => Step::Pending(interest),
            },
        })
    }

    /// The job's child (its id, its handle).
    pub(crate) fn child(&self) -> &GroupChild {
        match self {
            Waiting::Plain { child, .. } => child,
            #[cfg(feature = "capture")]
            Waiting::Captured(capture) => capture.child(),
        }
    }
}

/// Fills `want` with the descriptors `interest` lists (for reading, then the one for writing).
pub(crate) fn watches(interest: &Interest, want: &mut Vec<Watch>) {
    want.clear();
    want.extend(interest.readable().map(|fd| Watch { fd, write: false }));
    want.extend(interest.writable().map(|fd| Watch { fd, write: true }));
}
