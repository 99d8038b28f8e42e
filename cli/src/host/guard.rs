//! [`die_with_parent_forked`]: the guard of [`JobChildExt::die_with_parent`](grouptimeout_job::JobChildExt::die_with_parent), under its old name.

use std::io;

use grouptimeout::GroupChild;

/// [`JobChildExt::die_with_parent`](grouptimeout_job::JobChildExt::die_with_parent), under the name it had when its
/// guard was a `fork` of this process: the guard is the same now, so the two calls are one.
///
/// On Linux the guard is `grouptimeout-job`'s keeper program in its guard mode, started the way a contained spawn
/// starts its keeper (a child that shares this process's memory until it execs the program: no copy of this process,
/// and no `pthread_atfork` handler runs), named `group-guard`; elsewhere it is `/bin/sh`. Either way it costs the same
/// at any size of this process, and holds nothing of it. Before, it was a `fork` without `exec`, which ran the
/// `pthread_atfork` handlers of this process's libraries in the child.
///
/// # Errors
///
/// As for [`JobChildExt::die_with_parent`](grouptimeout_job::JobChildExt::die_with_parent).
pub fn die_with_parent_forked(child: &mut GroupChild) -> io::Result<()> {
    grouptimeout_job::JobChildExt::die_with_parent(child)
}
