//! The kept spawn's calls (`crate::contain::keeper`, `job/doc/keeper.md`, "Spawn"): the keeper program in a sealed
//! memory file, the channel (a socket pair, and the descriptors passed over it), the spawning child `C` made with
//! `clone` (`CLONE_VM | CLONE_VFORK`: it shares this process's memory, on a stack of its own, while the calling
//! thread sleeps until `C` execs or exits), born in the job's cgroup where `clone3` may (x86-64), and what `C` does
//! with the system that std does not (its process group, signal dispositions and mask, the flags that survive its
//! `exec`, the `exec` of the program).
//!
//! Why `C` may run ordinary Rust: it is not a fork. It shares this process's memory, and with it the calling
//! thread's stack frames, thread-local data and allocator caches, which nothing else touches meanwhile (that thread
//! sleeps in `clone` until `C` execs or exits, and `C` runs on its own stack); this process's other threads run on,
//! so a lock one of them holds (the allocator's, std's environment lock) is released as usual, and `C` takes it as
//! any thread would. `C` never returns into the caller's frames: its entry runs the closure under `catch_unwind` and
//! its return value becomes `C`'s exit status (the C library's `clone`, and the `clone3` trampoline below, exit
//! with it). `C` has its own descriptor table and signal handlers (no `CLONE_FILES`, no `CLONE_SIGHAND`).

use std::ffi::{c_int, c_void, CString};
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd as _, BorrowedFd, FromRawFd as _, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};

use super::{cvt, kernel_pid};

const MFD_CLOEXEC: libc::c_uint = 1;
const MFD_ALLOW_SEALING: libc::c_uint = 2;
/// `MFD_EXEC` (Linux 6.3): executable even where `vm.memfd_noexec` = 1 makes memory files not executable by default.
const MFD_EXEC: libc::c_uint = 0x10;
const F_ADD_SEALS: c_int = 1033;
/// `F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE`: the file's bytes can never change again.
const ALL_SEALS: c_int = 1 | 2 | 4 | 8;
/// `CLONE_INTO_CGROUP` (Linux 5.7).
#[cfg(target_arch = "x86_64")]
const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;
/// How much stack `C` gets (touched pages only are used): std's spawn, and on its fork path the caller's `pre_exec`
/// hooks in the command's process, a copy of `C`, run on it.
const STACK: usize = 1 << 20;

/// Whether `clone3` was refused once (`ENOSYS`, `EPERM`: a container's seccomp profile): not tried again.
static CLONE3_REFUSED: AtomicBool = AtomicBool::new(false);

/// A sealed memory file (close-on-exec) holding `program`'s bytes, executable (`MFD_EXEC` where the kernel knows it).
pub(crate) fn program_file(program: &[u8]) -> io::Result<OwnedFd> {
    let create = |flags: libc::c_uint| -> io::Result<OwnedFd> {
        // SAFETY: a NUL-terminated name and integer flags; a descriptor returned is ours alone, owned at once.
        unsafe {
            let fd = cvt(libc::syscall(
                libc::SYS_memfd_create,
                c"group-keeper".as_ptr(),
                flags,
            ))?;
            Ok(OwnedFd::from_raw_fd(c_int::try_from(fd).unwrap_or(-1)))
        }
    };
    let flags = MFD_CLOEXEC | MFD_ALLOW_SEALING;
    let file = match create(flags | MFD_EXEC) {
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => create(flags)?,
        file => file?,
    };
    let mut rest = program;
    while !rest.is_empty() {
        // SAFETY: write reads at most `rest.len()` bytes of `rest`.
        let n = cvt(unsafe { libc::write(file.as_raw_fd(), rest.as_ptr().cast(), rest.len()) })?;
        rest = rest.get(n.unsigned_abs()..).unwrap_or_default();
    }
    // SAFETY: fcntl with integers.
    cvt(unsafe { libc::fcntl(file.as_raw_fd(), F_ADD_SEALS, ALL_SEALS) })?;
    Ok(file)
}

/// A connected pair of `SOCK_SEQPACKET` sockets, both close-on-exec.
pub(crate) fn socket_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [-1; 2];
    let kind = libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC;
    // SAFETY: `fds` is a live array of two ints, which the call fills; they are ours alone, owned at once.
    unsafe {
        cvt(libc::socketpair(libc::AF_UNIX, kind, 0, fds.as_mut_ptr()))?;
        Ok((OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])))
    }
}

/// A thread's signal mask.
pub(crate) struct Mask(libc::sigset_t);

/// Blocks every signal in the calling thread: the mask it had.
pub(crate) fn block_signals() -> Mask {
    let mut all = MaybeUninit::<libc::sigset_t>::zeroed();
    let mut old = MaybeUninit::<libc::sigset_t>::zeroed();
    // SAFETY: sigfillset fills the zeroed set; pthread_sigmask reads it and fills `old`; both live across the calls.
    unsafe {
        libc::sigfillset(all.as_mut_ptr());
        libc::pthread_sigmask(libc::SIG_SETMASK, all.as_ptr(), old.as_mut_ptr());
        Mask(old.assume_init())
    }
}

impl Mask {
    /// Makes this the calling thread's mask.
    pub(crate) fn set(&self) {
        // SAFETY: a live set read by the call.
        unsafe {
            libc::pthread_sigmask(libc::SIG_SETMASK, &raw const self.0, std::ptr::null_mut())
        };
    }
}

/// `C`'s entry: the closure, under `catch_unwind` (a panic is status 127); its return value is `C`'s exit status.
extern "C" fn enter(run: *mut c_void) -> c_int {
    // SAFETY: `run` is the closure that `clone_vfork` passed, alive in its frame while this runs (its thread sleeps
    // until the child execs or exits), and no one else uses it meanwhile.
    let run = unsafe { &mut *run.cast::<&mut dyn FnMut() -> c_int>() };
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)).unwrap_or(127)
}

/// Makes a child that shares this process's memory and sleeps this thread until it execs or exits (see the module
/// docs), which runs `run` on a stack of its own: with `folder` (x86-64), born in that cgroup (`clone3` with
/// `CLONE_INTO_CGROUP`) as a child of this process's parent (`CLONE_PARENT`: the spawning child `C` makes its
/// successor so, a child of the caller as `C` is); else with the C library's `clone`, as this process's child. Its pid.
///
/// # Errors
///
/// The call's: `ENOSYS` or `EPERM` where `clone3` is refused (then remembered: a folder is never tried again), and
/// `ENOSYS` for a folder elsewhere than on x86-64.
pub(crate) fn clone_vfork(
    folder: Option<BorrowedFd<'_>>,
    mut run: &mut dyn FnMut() -> c_int,
) -> io::Result<u32> {
    if folder.is_some()
        && (cfg!(not(target_arch = "x86_64")) || CLONE3_REFUSED.load(Ordering::Relaxed))
    {
        return Err(io::Error::from_raw_os_error(libc::ENOSYS));
    }
    // SAFETY: a fresh private anonymous mapping, ours alone; the lowest page made a guard (no access), so that a
    // deeper stack faults in the child instead of writing below the mapping.
    let stack = unsafe {
        let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK | libc::MAP_NORESERVE;
        let at = libc::mmap(
            std::ptr::null_mut(),
            STACK,
            libc::PROT_READ | libc::PROT_WRITE,
            flags,
            -1,
            0,
        );
        if at == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        libc::mprotect(at, 4096, libc::PROT_NONE);
        at
    };
    let arg = (&raw mut run).cast::<c_void>();
    let made = match folder {
        #[cfg(target_arch = "x86_64")]
        Some(folder) => {
            let args = CloneArgs {
                flags: (libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_PARENT) as u64
                    | CLONE_INTO_CGROUP,
                stack: stack as u64,
                stack_size: STACK as u64,
                cgroup: u64::from(folder.as_raw_fd().unsigned_abs()),
                ..CloneArgs::default()
            };
            // SAFETY: `args` describes the stack mapped above and a live descriptor; the child runs `enter` on that
            // stack and exits with its result, never returning into this frame (see `clone3`); `arg` outlives it.
            let made = unsafe { clone3(&args, enter, arg) };
            if matches!(&made, Err(e) if matches!(e.raw_os_error(), Some(libc::ENOSYS | libc::EPERM)))
            {
                CLONE3_REFUSED.store(true, Ordering::Relaxed);
            }
            made
        }
        #[cfg(not(target_arch = "x86_64"))]
        Some(_) => Err(io::Error::from_raw_os_error(libc::ENOSYS)),
        // SAFETY: the stack's top (page-aligned, so 16-byte aligned) in the mapping above; the C library's clone runs
        // `enter` there and exits with its result; `arg` outlives the child (this thread sleeps until its exec or
        // exit).
        None => cvt(unsafe {
            let top = stack.cast::<u8>().add(STACK).cast::<c_void>();
            libc::clone(
                enter,
                top,
                libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
                arg,
            )
        }),
    };
    // SAFETY: the mapping made above, which the child no longer uses (it exec'd or exited).
    unsafe { libc::munmap(stack, STACK) };
    made.and_then(kernel_pid)
}

/// `struct clone_args` (Linux 5.7, with `cgroup`). Its `exit_signal` stays 0: with `CLONE_PARENT` the kernel gives
/// the child its parent's.
#[cfg(target_arch = "x86_64")]
#[repr(C)]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
}

/// `clone3(args)`, musl's `__clone` shape: in the child (the call returned 0, on the new stack the kernel switched
/// to), `entry(arg)` is called and its result passed to `exit`; the child never comes back here. The parent gets
/// the child's pid, or the error.
///
/// # Safety
///
/// `args` names a stack that nothing else uses while the child runs, and flags the caller's argument covers;
/// `entry` must be safe to run there with `arg`.
#[cfg(target_arch = "x86_64")]
unsafe fn clone3(
    args: &CloneArgs,
    entry: extern "C" fn(*mut c_void) -> c_int,
    arg: *mut c_void,
) -> io::Result<c_int> {
    let ret: i64;
    // SAFETY: the caller's contract; `syscall` clobbers rcx and r11; in the child only the new stack is used.
    unsafe {
        std::arch::asm!(
            "syscall",
            "test rax, rax",
            "jnz 2f",
            "xor ebp, ebp",
            "mov rdi, r9",
            "call r8",
            "mov edi, eax",
            "mov eax, 60",
            "syscall",
            "ud2",
            "2:",
            inlateout("rax") 435i64 => ret,
            in("rdi") std::ptr::from_ref(args),
            in("rsi") std::mem::size_of::<CloneArgs>(),
            in("r8") entry,
            in("r9") arg,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack)
        );
    }
    if ret < 0 {
        return Err(io::Error::from_raw_os_error(
            c_int::try_from(-ret).unwrap_or(libc::EINVAL),
        ));
    }
    Ok(c_int::try_from(ret).unwrap_or(-1))
}

/// In `C`: makes the group the command will join (its id `C`'s pid) and moves `C` out of it, before the command
/// exists (so that no signal to the group, from the command or a terminal, ever finds `C` with the caller's locks):
/// `C` leads the new group, a helper `H2` born in it exits (its zombie holds the group), a helper `H` makes a group of
/// its own and exits (its zombie holds that one), and `C` joins `H`'s group and reaps `H`. Both helpers share `C`'s
/// memory and sleep it (`CLONE_VM | CLONE_VFORK`) on a small stack of `C`'s, and make raw system calls only. The pid
/// of `H2`, to reap once the command is in the group.
pub(crate) fn leave_own_group() -> io::Result<u32> {
    extern "C" fn hold(_: *mut c_void) -> c_int {
        0
    }
    extern "C" fn own_group(_: *mut c_void) -> c_int {
        // SAFETY: setpgid with integers, as a raw system call.
        unsafe { libc::syscall(libc::SYS_setpgid, 0, 0) };
        0
    }
    let mut stack = [0u128; 512];
    let helper = |entry: extern "C" fn(*mut c_void) -> c_int, stack: &mut [u128; 512]| {
        // SAFETY: the helper runs `entry` (a raw system call at most) on `stack`, which this frame keeps alive and
        // unused while it runs (`CLONE_VFORK`: `C` sleeps until the helper exits), 16-byte aligned at its top.
        cvt(unsafe {
            let top = stack.as_mut_ptr().add(stack.len()).cast::<c_void>();
            let flags = libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD;
            libc::clone(entry, top, flags, std::ptr::null_mut())
        })
    };
    // SAFETY: setpgid and waitpid with integers (and a null status).
    unsafe {
        cvt(libc::setpgid(0, 0))?;
        let holder = helper(hold, &mut stack)?;
        let group = helper(own_group, &mut stack)?;
        let joined = cvt(libc::setpgid(0, group));
        libc::waitpid(group, std::ptr::null_mut(), 0);
        joined?;
        kernel_pid(holder)
    }
}

/// Sends `signal` to `pid` (a process, or a group if negative), never to 0, 1 or -1.
pub(crate) fn kill(pid: libc::pid_t, signal: c_int) -> io::Result<()> {
    if (-1..=1).contains(&pid) {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: kill with integers, the id checked above.
    cvt(unsafe { libc::kill(pid, signal) }).map(drop)
}

/// Reaps our child `pid` (waiting for it): how it ended.
pub(crate) fn wait_status(pid: u32) -> io::Result<std::process::ExitStatus> {
    use std::os::unix::process::ExitStatusExt as _;
    let pid = super::checked_pid(pid)?;
    super::retry_eintr(|| {
        let mut status = 0;
        // SAFETY: waitpid writes the status into `status`, which lives across the call.
        cvt(unsafe { libc::waitpid(pid, &raw mut status, 0) })?;
        Ok(std::process::ExitStatus::from_raw(status))
    })
}

/// Reaps our child `pid` (waiting for it).
pub(crate) fn reap_child(pid: u32) {
    if let Ok(pid) = super::checked_pid(pid) {
        // SAFETY: waitpid with integers and a null status.
        unsafe { libc::waitpid(pid, std::ptr::null_mut(), 0) };
    }
}

/// In `C`: every signal that is not ignored gets a handler that does nothing (`C`'s own table: a signal then never
/// kills or stops `C` while it holds a lock of the caller's), but the faults (`SIGSEGV`, `SIGBUS`, `SIGILL`,
/// `SIGFPE`, `SIGTRAP`, `SIGSYS`), which get their default action; an ignored one stays ignored. The command
/// inherits what it would have from the caller: handled signals are reset at its `exec`, ignored ones stay so.
pub(crate) fn quiet_handlers() {
    extern "C" fn nothing(_: c_int) {}
    let faults = [
        libc::SIGSEGV,
        libc::SIGBUS,
        libc::SIGILL,
        libc::SIGFPE,
        libc::SIGTRAP,
        libc::SIGSYS,
    ];
    for signal in 1..=64 {
        if signal == libc::SIGKILL || signal == libc::SIGSTOP {
            continue;
        }
        let mut old = MaybeUninit::<libc::sigaction>::zeroed();
        // SAFETY: a null action reads the current one into the zeroed `old`; then a zeroed action with a handler (a
        // function of ours that does nothing, or SIG_DFL) and an emptied mask. A signal the C library keeps for
        // itself fails with EINVAL and is left alone.
        unsafe {
            if libc::sigaction(signal, std::ptr::null(), old.as_mut_ptr()) != 0
                || old.assume_init().sa_sigaction == libc::SIG_IGN
            {
                continue;
            }
            let mut new = MaybeUninit::<libc::sigaction>::zeroed().assume_init();
            new.sa_sigaction = if faults.contains(&signal) {
                libc::SIG_DFL
            } else {
                nothing as extern "C" fn(c_int) as libc::sighandler_t
            };
            new.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&raw mut new.sa_mask);
            libc::sigaction(signal, &raw const new, std::ptr::null_mut());
        }
    }
}

/// Makes std spawn `command` through `fork` from now on (a hook that does nothing): for a `C` whose `posix_spawn`
/// failed with `EPERM`, as glibc's does under a seccomp profile that refuses `clone3` with `EPERM` (it falls back to
/// `clone` on `ENOSYS` only), where a fork still works.
pub(crate) fn spawn_by_fork(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt as _;
    // SAFETY: the hook does nothing, which is async-signal-safe.
    unsafe { command.pre_exec(|| Ok(())) };
}

/// `prctl` with integer arguments (`PR_SET_CHILD_SUBREAPER`, `PR_SET_PDEATHSIG`).
pub(crate) fn prctl(option: c_int, arg: libc::c_ulong) -> io::Result<()> {
    // SAFETY: prctl with integers; these options read no memory through them.
    cvt(unsafe { libc::prctl(option, arg, 0, 0, 0) }).map(drop)
}

/// Sends `bytes` on the socket `fd` with `fds` attached (`SCM_RIGHTS`, at most 4).
pub(crate) fn send_with_fds(fd: BorrowedFd<'_>, bytes: &[u8], fds: &[RawFd]) -> io::Result<()> {
    let mut rights = Rights::new(fds);
    let mut part = libc::iovec {
        iov_base: bytes.as_ptr().cast_mut().cast(),
        iov_len: bytes.len(),
    };
    // SAFETY: a zeroed msghdr pointing at one iovec over `bytes` (read only) and at `rights` (a cmsghdr with its
    // descriptors, as long as it says), all alive across the call.
    unsafe {
        let mut message = MaybeUninit::<libc::msghdr>::zeroed().assume_init();
        message.msg_iov = &raw mut part;
        message.msg_iovlen = 1;
        if !fds.is_empty() {
            message.msg_control = (&raw mut rights).cast();
            message.msg_controllen = std::mem::size_of::<Rights>() as _;
        }
        cvt(libc::sendmsg(
            fd.as_raw_fd(),
            &raw const message,
            libc::MSG_NOSIGNAL,
        ))
        .map(drop)
    }
}

/// Receives one message from the socket `fd` without blocking: its bytes (at most `buf`'s length) and the
/// descriptors attached (received close-on-exec, owned).
pub(crate) fn receive_with_fds(
    fd: BorrowedFd<'_>,
    buf: &mut [u8],
) -> io::Result<(usize, Vec<OwnedFd>)> {
    let mut rights = Rights::new(&[]);
    let mut part = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: as for `send_with_fds`, the call writing into `buf` and `rights` at most their sizes; the descriptors
    // the kernel put in `rights` (as many as its length says) are new, ours alone, owned at once.
    unsafe {
        let mut message = MaybeUninit::<libc::msghdr>::zeroed().assume_init();
        message.msg_iov = &raw mut part;
        message.msg_iovlen = 1;
        message.msg_control = (&raw mut rights).cast();
        message.msg_controllen = std::mem::size_of::<Rights>() as _;
        let flags = libc::MSG_CMSG_CLOEXEC | libc::MSG_DONTWAIT;
        let n = cvt(libc::recvmsg(fd.as_raw_fd(), &raw mut message, flags))?;
        let mut fds = Vec::new();
        if message.msg_controllen != 0 && rights.header.cmsg_type == libc::SCM_RIGHTS {
            #[allow(
                clippy::unnecessary_cast,
                reason = "socklen_t on musl, size_t on glibc"
            )]
            let count = (rights.header.cmsg_len as usize)
                .saturating_sub(std::mem::size_of::<libc::cmsghdr>())
                / 4;
            fds.extend(
                rights
                    .fds
                    .iter()
                    .take(count)
                    .map(|&fd| OwnedFd::from_raw_fd(fd)),
            );
        }
        Ok((usize::try_from(n).unwrap_or(0), fds))
    }
}

/// A control message with up to 4 descriptors.
#[repr(C)]
struct Rights {
    header: libc::cmsghdr,
    fds: [c_int; 4],
}

impl Rights {
    fn new(fds: &[RawFd]) -> Rights {
        let mut rights = Rights {
            // SAFETY: a cmsghdr is integers (and padding): zeroed is a valid one.
            header: unsafe { MaybeUninit::zeroed().assume_init() },
            fds: [-1; 4],
        };
        let count = fds.len().min(4);
        rights.fds[..count].copy_from_slice(&fds[..count]);
        rights.header.cmsg_level = libc::SOL_SOCKET;
        rights.header.cmsg_type = libc::SCM_RIGHTS;
        rights.header.cmsg_len = (std::mem::size_of::<libc::cmsghdr>() + 4 * count) as _;
        rights
    }
}

/// Sends `bytes` as one datagram on the socket `fd`, without blocking and without `SIGPIPE`.
pub(crate) fn send_datagram(fd: BorrowedFd<'_>, bytes: &[u8]) -> io::Result<()> {
    // SAFETY: send reads at most `bytes.len()` bytes of `bytes`.
    let sent = unsafe {
        libc::send(
            fd.as_raw_fd(),
            bytes.as_ptr().cast(),
            bytes.len(),
            libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
        )
    };
    cvt(sent).map(drop)
}

/// Receives the next datagram on the socket `fd` without blocking: `None` when there is none; an empty one at end
/// of file (the peer closed its end).
pub(crate) fn receive_datagram(fd: BorrowedFd<'_>) -> io::Result<Option<Vec<u8>>> {
    let flags = libc::MSG_DONTWAIT;
    // SAFETY: with MSG_PEEK | MSG_TRUNC and no buffer, recv writes nothing and says the datagram's length; then it
    // writes at most the length of the buffer it is given.
    unsafe {
        let len = match cvt(libc::recv(
            fd.as_raw_fd(),
            std::ptr::null_mut(),
            0,
            flags | libc::MSG_PEEK | libc::MSG_TRUNC,
        )) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
            len => usize::try_from(len?).unwrap_or(0),
        };
        let mut buf = vec![0u8; len.max(1)];
        let n = cvt(libc::recv(
            fd.as_raw_fd(),
            buf.as_mut_ptr().cast(),
            buf.len(),
            flags,
        ))?;
        buf.truncate(usize::try_from(n).unwrap_or(0));
        Ok(Some(buf))
    }
}

/// An `argv` for `execveat`: pointers to `args`, made before the exec (which then allocates nothing).
pub(crate) struct Argv<'a> {
    pointers: Vec<*const libc::c_char>,
    args: std::marker::PhantomData<&'a [CString]>,
}

impl<'a> Argv<'a> {
    pub(crate) fn new(args: &'a [CString]) -> Argv<'a> {
        let mut pointers: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
        pointers.push(std::ptr::null());
        Argv {
            pointers,
            args: std::marker::PhantomData,
        }
    }
}

/// In a child of `clone_vfork`: joins process group `group` (system calls only).
pub(crate) fn join_group(group: libc::pid_t) -> io::Result<()> {
    // SAFETY: setpgid with integers.
    cvt(unsafe { libc::setpgid(0, group) }).map(drop)
}

/// In `C`: execs the program in the memory file `program` with `argv` and an empty environment, the descriptor
/// `inherited` made inheritable first (in `C`'s own descriptor table). System calls only. Returns only if that
/// failed: why.
pub(crate) fn exec_program(
    program: BorrowedFd<'_>,
    inherited: Option<RawFd>,
    argv: &mut Argv<'_>,
) -> io::Error {
    let environment: [*const libc::c_char; 1] = [std::ptr::null()];
    // SAFETY: fcntl with integers; execveat with a descriptor, an empty NUL-terminated path, and NULL-terminated
    // arrays of NUL-terminated strings (`argv`'s point into strings it borrows), all alive across the call (it
    // returns only on failure).
    unsafe {
        if let Some(fd) = inherited {
            if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                return io::Error::last_os_error();
            }
        }
        libc::syscall(
            libc::SYS_execveat,
            program.as_raw_fd(),
            c"".as_ptr(),
            argv.pointers.as_ptr(),
            environment.as_ptr(),
            libc::AT_EMPTY_PATH,
        );
    }
    io::Error::last_os_error()
}
