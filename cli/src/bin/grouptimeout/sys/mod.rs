//! The tool's one `unsafe` call: the forked guard (`host::die_with_parent_forked`, an `unsafe fn`), whose condition
//! the tool meets because it runs one thread.
#![allow(unsafe_code)]

use std::io;

use grouptimeout::GroupChild;
use grouptimeout_cli::host;

/// [`host::die_with_parent_forked`] for the tool's command.
pub fn die_with_parent_forked(child: &mut GroupChild) -> io::Result<()> {
    // SAFETY: the tool runs one thread: it starts none (it waits in `sigtimedwait` and `try_wait` on this one, and no
    // crate it links starts one), so no other thread runs during the call, which is `host::die_with_parent_forked`'s
    // condition. (It links no library that registers a `pthread_atfork` handler either: std, `libc` and the
    // workspace's crates register none.)
    unsafe { host::die_with_parent_forked(child) }
}
