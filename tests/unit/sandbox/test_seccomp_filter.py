"""The seccomp program, run through a small classic-BPF interpreter written here from the kernel's
documented semantics (Documentation/networking/filter.rst, seccomp_filter.rst), on hand-written
struct seccomp_data cases with the verdict each must get."""

from __future__ import annotations

import struct

import pytest

from surrogate_dagster.sandbox import seccomp

ALLOW, EPERM, ENOSYS = 0x7FFF0000, 0x00050001, 0x00050026
X86_64, I386, AARCH64 = 0xC000003E, 0x40000003, 0xC00000B7


def run_bpf(prog: bytes, nr: int, arch: int = X86_64, args: tuple[int, ...] = ()) -> int:
    """Return value of the filter for one syscall (nr, arch, args) as the kernel would compute it."""
    data = struct.pack("<iIQ6Q", nr, arch, 0x401000, *(list(args) + [0] * (6 - len(args))))
    insns = [struct.unpack_from("<HBBI", prog, o) for o in range(0, len(prog), 8)]
    assert len(prog) % 8 == 0 and 0 < len(insns) <= 4096
    a, pc = 0, 0
    for _ in range(len(insns)):  # classic BPF only jumps forward: one pass at most
        code, jt, jf, k = insns[pc]
        if code == 0x20:  # BPF_LD | BPF_W | BPF_ABS: 32-bit load, host (little-endian) order
            assert k % 4 == 0 and k + 4 <= len(data)
            a = struct.unpack_from("<I", data, k)[0]
            pc += 1
        elif code in (0x15, 0x35, 0x45):  # JEQ, JGE, JSET with a constant
            hit = {0x15: a == k, 0x35: a >= k, 0x45: bool(a & k)}[code]
            pc += 1 + (jt if hit else jf)
        elif code == 0x06:  # BPF_RET | BPF_K
            return k
        else:
            raise AssertionError(f"unexpected opcode {code:#x} at {pc}")
    raise AssertionError("fell off the end of the program")


@pytest.fixture(scope="module")
def prog() -> bytes:
    return seccomp.build_filter("x86_64")


# (what, nr, args, verdict): numbers from asm/unistd_64.h, flags from linux/sched.h, checked by hand
CASES = [
    ("read", 0, (), ALLOW), ("write", 1, (), ALLOW), ("openat", 257, (), ALLOW), ("mmap", 9, (), ALLOW),
    ("execve", 59, (), ALLOW), ("wait4", 61, (), ALLOW), ("socket", 41, (), ALLOW), ("seccomp", 317, (), ALLOW),
    ("fork", 57, (), ALLOW), ("vfork", 58, (), ALLOW), ("ptrace", 101, (), ALLOW), ("sysinfo", 99, (), ALLOW),
    ("io_uring_setup", 425, (), EPERM), ("io_uring_enter", 426, (), EPERM), ("io_uring_register", 427, (), EPERM),
    ("keyctl", 250, (), EPERM), ("add_key", 248, (), EPERM), ("request_key", 249, (), EPERM),
    ("bpf", 321, (), EPERM), ("perf_event_open", 298, (), EPERM), ("userfaultfd", 323, (), EPERM),
    ("unshare", 272, (0x10000000,), EPERM), ("unshare no flags", 272, (0,), EPERM), ("setns", 308, (), EPERM),
    ("mount", 165, (), EPERM), ("umount2", 166, (), EPERM), ("pivot_root", 155, (), EPERM),
    ("chroot", 161, (), EPERM), ("fsopen", 430, (), EPERM), ("open_by_handle_at", 304, (), EPERM),
    ("init_module", 175, (), EPERM), ("finit_module", 313, (), EPERM), ("kexec_load", 246, (), EPERM),
    ("syslog", 103, (), EPERM),
    ("clone3", 435, (), ENOSYS),
    # glibc fork(): CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID | SIGCHLD
    ("clone as fork", 56, (0x01200011,), ALLOW),
    # pthread_create: VM|FS|FILES|SIGHAND|THREAD|SYSVSEM|SETTLS|PARENT_SETTID|CHILD_CLEARTID
    ("clone as thread", 56, (0x003D0F00,), ALLOW),
    ("clone as posix_spawn", 56, (0x00004111,), ALLOW),  # CLONE_VM | CLONE_VFORK | SIGCHLD
    ("clone NEWUSER", 56, (0x10000011,), EPERM), ("clone NEWNS", 56, (0x00020011,), EPERM),
    ("clone NEWPID", 56, (0x20000011,), EPERM), ("clone NEWNET", 56, (0x40000011,), EPERM),
    ("clone NEWIPC", 56, (0x08000011,), EPERM), ("clone NEWUTS", 56, (0x04000011,), EPERM),
    ("clone NEWCGROUP", 56, (0x02000011,), EPERM),
    # the kernel reads only the low 32 bits of clone's flags: high bits alone change nothing
    ("clone high word set", 56, (0xFFFFFFFF00000011,), ALLOW),
    ("x32 read", 0x40000000, (), EPERM), ("x32 io_uring_setup", 0x40000000 | 425, (), EPERM),
]


@pytest.mark.parametrize("what,nr,args,verdict", CASES, ids=[c[0] for c in CASES])
def test_verdicts(prog, what, nr, args, verdict):
    assert run_bpf(prog, nr, args=args) == verdict, what


@pytest.mark.parametrize("arch", [I386, AARCH64], ids=["i386", "aarch64"])
def test_other_abis_refused_whole(prog, arch):
    # i386 int 0x80 from an x86_64 process: its write is 4, its unshare 310
    for nr in (0, 4, 310, 425):
        assert run_bpf(prog, nr, arch=arch) == EPERM


def test_other_machines_get_no_filter():
    with pytest.raises(seccomp.SeccompUnsupported, match="aarch64"):
        seccomp.build_filter("aarch64")


def test_assembler_refuses_bad_programs():
    with pytest.raises(ValueError, match="unknown label"):
        seccomp.assemble([seccomp.Insn(0x15, 1, "nowhere", 0)])
    with pytest.raises(ValueError, match="twice"):
        seccomp.assemble(["a", seccomp.Insn(0x06), "a", seccomp.Insn(0x06)])
    far = [seccomp.Insn(0x15, 1, "end", 0)] + [seccomp.Insn(0x06)] * 300 + ["end", seccomp.Insn(0x06)]
    with pytest.raises(ValueError, match="out of range"):
        seccomp.assemble(far)
