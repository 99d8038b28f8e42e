//! The jobs' next instants (a deadline, the end of a grace period, a capture's drain, the poll schedule's next
//! check) in one min-heap, so that a wake-up finds the jobs due in proportion to their number, not to the set's.
//!
//! Entries are never removed from the middle: each job keeps the stamp of its one valid entry, and an entry whose
//! stamp is no longer its job's (the job's instant changed, or the job ended) is dropped when it reaches the top
//! (lazy invalidation). Stamps come from one counter that never repeats, so that an entry of an ended job never
//! matches the job that takes its slot. Stale entries are swept when they outnumber the live ones.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Instant;

/// One job's instant in the heap: when, which slot, which stamp.
type Entry = Reverse<(Instant, usize, u64)>;

/// The heap of instants, and the counter of stamps.
#[derive(Debug, Default)]
pub(crate) struct Timers {
    heap: BinaryHeap<Entry>,
    stamps: u64,
}

impl Timers {
    /// Adds `at` for the job in `slot`; returns the entry's stamp, which the job keeps as its valid one.
    pub(crate) fn push(&mut self, at: Instant, slot: usize) -> u64 {
        self.stamps += 1;
        self.heap.push(Reverse((at, slot, self.stamps)));
        self.stamps
    }

    /// The earliest valid instant (`valid(slot, stamp)` says whether an entry is still its job's), stale entries
    /// above it dropped.
    pub(crate) fn earliest(&mut self, valid: impl Fn(usize, u64) -> bool) -> Option<Instant> {
        while let Some(&Reverse((at, slot, stamp))) = self.heap.peek() {
            if valid(slot, stamp) {
                return Some(at);
            }
            self.heap.pop();
        }
        None
    }

    /// Takes the slot of a valid entry whose instant is at or before `now`, if there is one.
    pub(crate) fn pop_due(
        &mut self,
        now: Instant,
        valid: impl Fn(usize, u64) -> bool,
    ) -> Option<usize> {
        let at = self.earliest(&valid)?;
        if at > now {
            return None;
        }
        self.heap.pop().map(|Reverse((_, slot, _))| slot)
    }

    /// Drops the stale entries once they outnumber `live` (the jobs that may have a valid one) by far: the heap stays
    /// within a small multiple of the set's size however often the jobs' instants change.
    pub(crate) fn sweep(&mut self, live: usize, valid: impl Fn(usize, u64) -> bool) {
        if self.heap.len() > 2 * live + 64 {
            self.heap
                .retain(|&Reverse((_, slot, stamp))| valid(slot, stamp));
        }
    }

    /// How many entries the heap holds, stale ones included.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.heap.len()
    }
}

#[cfg(test)]
mod tests {
    use super::Timers;
    use std::collections::HashMap;
    use std::time::{Duration, Instant};

    /// Due entries come out earliest first; a replaced entry (another stamp) never comes out; the sweep keeps the
    /// heap small.
    #[test]
    fn due_entries_earliest_first_stale_ones_never() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let mut timers = Timers::default();
        let mut valid: HashMap<usize, u64> = HashMap::new();
        valid.insert(1, timers.push(ms(30), 1));
        valid.insert(2, timers.push(ms(10), 2));
        valid.insert(3, timers.push(ms(20), 3));
        // Job 2's instant moves later: its first entry is stale.
        valid.insert(2, timers.push(ms(40), 2));
        let is = |v: &HashMap<usize, u64>| {
            let v = v.clone();
            move |slot, stamp| v.get(&slot) == Some(&stamp)
        };
        assert_eq!(timers.earliest(is(&valid)), Some(ms(20)));
        assert_eq!(timers.pop_due(ms(25), is(&valid)), Some(3));
        assert_eq!(timers.pop_due(ms(25), is(&valid)), None);
        // Job 1 ends: its entry never comes out.
        valid.remove(&1);
        assert_eq!(timers.pop_due(ms(50), is(&valid)), Some(2));
        assert_eq!(timers.pop_due(ms(50), is(&valid)), None);
        for n in 0..1000 {
            valid.insert(7, timers.push(ms(n), 7));
            timers.sweep(1, is(&valid));
        }
        assert!(timers.len() <= 2 + 64 + 1, "{}", timers.len());
        assert_eq!(timers.pop_due(ms(2000), is(&valid)), Some(7));
    }
}
