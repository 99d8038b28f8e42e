#!/usr/bin/env python3
"""no_clone3.py ERRNO CMD [ARG...]: runs CMD under a seccomp filter that refuses clone3 (syscall 435) with ERRNO
(ENOSYS, EPERM or a number) and allows every other system call, as container runtimes' default profiles do
(Docker and Podman answer ENOSYS; older runtimes EPERM). The filter also checks the architecture (x86-64 or
aarch64, the calling convention its numbers are for): a call made through another convention is allowed, as a
real profile would refuse it. As root it is installed without PR_SET_NO_NEW_PRIVS (root may: CAP_SYS_ADMIN), so
that set-user-ID and set-group-ID programs below keep working (ssh-agent); otherwise no_new_privs is set first,
as the kernel requires. Every process below inherits the filter."""
import ctypes
import errno
import os
import platform
import struct
import sys

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
SECCOMP_RET_ERRNO = 0x00050000
SECCOMP_RET_ALLOW = 0x7FFF0000
BPF_LD_W_ABS = 0x20
BPF_JEQ_K = 0x15
BPF_RET_K = 0x06
SYS_CLONE3 = 435
ARCHES = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: no_clone3.py ERRNO CMD [ARG...]")
    code = sys.argv[1]
    code = int(code) if code.isdigit() else getattr(errno, code)
    arch = ARCHES.get(platform.machine())
    if arch is None:
        sys.exit(f"no_clone3.py: unknown architecture {platform.machine()}")
    # struct sock_filter { u16 code; u8 jt; u8 jf; u32 k; }; seccomp_data: nr at 0, arch at 4.
    program = [
        (BPF_LD_W_ABS, 0, 0, 4),
        (BPF_JEQ_K, 0, 3, arch),
        (BPF_LD_W_ABS, 0, 0, 0),
        (BPF_JEQ_K, 0, 1, SYS_CLONE3),
        (BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | code),
        (BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW),
    ]
    raw = b"".join(struct.pack("=HBBI", *insn) for insn in program)
    buf = ctypes.create_string_buffer(raw, len(raw))
    prog = SockFprog(len(program), ctypes.cast(buf, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
    if os.geteuid() != 0 and libc.prctl(PR_SET_NO_NEW_PRIVS, 1, None, 0, 0) != 0:
        sys.exit(f"no_clone3.py: PR_SET_NO_NEW_PRIVS: {os.strerror(ctypes.get_errno())}")
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        sys.exit(f"no_clone3.py: PR_SET_SECCOMP: {os.strerror(ctypes.get_errno())}")
    os.execvp(sys.argv[2], sys.argv[2:])


main()
