"""The sandbox's syscall filter: a classic-BPF seccomp program that bubblewrap installs (``--seccomp
FD``) in the sandboxed program right before it execs it, after its namespaces and mounts are set up.

The filter refuses, with EPERM, the kernel interfaces a graded program never needs and that have
been the way out of containers or the entry to kernel bugs:

- io_uring (setup/enter/register), the kernel keyrings (keyctl/add_key/request_key), bpf,
  perf_event_open, userfaultfd;
- new namespaces: unshare, setns, and clone with any CLONE_NEW* flag (a plain fork or thread has
  none); clone3 answers ENOSYS, as on a kernel without it, so libc falls back to clone, whose flags
  the filter can read (clone3 passes them behind a pointer a filter cannot follow);
- mounts (mount, umount2, pivot_root, chroot and the new mount API), kernel modules, kexec, reboot,
  swap, acct, syslog, quotactl, file handles (open_by_handle_at), fanotify and port I/O: all need
  capabilities the sandbox has dropped, so refusing them at entry only removes kernel code from
  reach.

Every other syscall passes. The program is for x86_64 (``AUDIT_ARCH_X86_64``): a call made
through another ABI on the same kernel (i386 ``int 0x80``, x32 numbers) is refused whole, since the
numbers above mean nothing there. On any other machine ``build_filter`` raises
``SeccompUnsupported`` and the sandbox runs without a filter and says so.
"""

from __future__ import annotations

import platform
import struct
from dataclasses import dataclass

# <linux/audit.h>, <linux/seccomp.h>, <linux/sched.h>
AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000
EPERM, ENOSYS = 1, 38
CLONE_NEW_FLAGS = {"CLONE_NEWNS": 0x00020000, "CLONE_NEWCGROUP": 0x02000000, "CLONE_NEWUTS": 0x04000000,
                   "CLONE_NEWIPC": 0x08000000, "CLONE_NEWUSER": 0x10000000, "CLONE_NEWPID": 0x20000000,
                   "CLONE_NEWNET": 0x40000000}
CLONE_NEW_MASK = sum(CLONE_NEW_FLAGS.values())

# x86_64 syscall numbers (asm/unistd_64.h), refused with EPERM, by class
DENIED_X86_64: dict[str, dict[str, int]] = {
    "io_uring": {"io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427},
    "keyring": {"add_key": 248, "request_key": 249, "keyctl": 250},
    "bpf": {"bpf": 321},
    "perf": {"perf_event_open": 298},
    "userfaultfd": {"userfaultfd": 323},
    "namespaces": {"unshare": 272, "setns": 308},
    "mount": {"pivot_root": 155, "chroot": 161, "mount": 165, "umount2": 166, "open_tree": 428,
              "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
              "mount_setattr": 442},
    "kernel_admin": {"syslog": 103, "acct": 163, "swapon": 167, "swapoff": 168, "reboot": 169,
                     "iopl": 172, "ioperm": 173, "init_module": 175, "delete_module": 176,
                     "quotactl": 179, "kexec_load": 246, "fanotify_init": 300, "name_to_handle_at": 303,
                     "open_by_handle_at": 304, "finit_module": 313, "kexec_file_load": 320},
}
NR_CLONE, NR_CLONE3 = 56, 435

# classic BPF opcodes (<linux/filter.h>) and struct seccomp_data offsets
_LD_W_ABS, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
_OFF_NR, _OFF_ARCH, _OFF_ARG0_LO = 0, 4, 16  # args are u64, little-endian: the low word first


class SeccompUnsupported(RuntimeError):
    """No filter for this machine's architecture."""


@dataclass(frozen=True)
class Insn:
    """One sock_filter instruction; ``jt``/``jf`` name labels until ``assemble`` resolves them."""

    code: int
    k: int = 0
    jt: str | int = 0
    jf: str | int = 0


def assemble(prog: list[Insn | str]) -> bytes:
    """Instructions (strings are labels of the next instruction) to struct sock_filter bytes."""
    labels: dict[str, int] = {}
    insns: list[Insn] = []
    for item in prog:
        if isinstance(item, str):
            if item in labels:
                raise ValueError(f"label {item!r} defined twice")
            labels[item] = len(insns)
        else:
            insns.append(item)
    out = bytearray()
    for pc, ins in enumerate(insns):
        offs = []
        for target in (ins.jt, ins.jf):
            if isinstance(target, str):
                if target not in labels:
                    raise ValueError(f"unknown label {target!r}")
                off = labels[target] - pc - 1
            else:
                off = target
            if not 0 <= off <= 255:
                raise ValueError(f"jump from {pc} to {target!r} out of range ({off})")
            offs.append(off)
        out += struct.pack("<HBBI", ins.code, offs[0], offs[1], ins.k & 0xFFFFFFFF)
    return bytes(out)


def denied_numbers() -> dict[int, str]:
    """{x86_64 syscall number: name} of every syscall refused outright."""
    return {nr: name for group in DENIED_X86_64.values() for name, nr in group.items()}


def build_filter(machine: str | None = None) -> bytes:
    """The BPF program for ``machine`` (default: this one), ready for bwrap's ``--seccomp``."""
    machine = machine or platform.machine()
    if machine != "x86_64":
        raise SeccompUnsupported(f"no seccomp filter for {machine!r} (the syscall table is x86_64's)")
    prog: list[Insn | str] = [
        Insn(_LD_W_ABS, _OFF_ARCH),
        Insn(_JEQ_K, AUDIT_ARCH_X86_64, 0, "eperm"),
        Insn(_LD_W_ABS, _OFF_NR),
        Insn(_JGE_K, X32_SYSCALL_BIT, "eperm", 0),
        Insn(_JEQ_K, NR_CLONE, "clone", 0),
        Insn(_JEQ_K, NR_CLONE3, "enosys", 0),
    ]
    prog += [Insn(_JEQ_K, nr, "eperm", 0) for nr in sorted(denied_numbers())]
    prog += [Insn(_RET_K, SECCOMP_RET_ALLOW),
             "clone", Insn(_LD_W_ABS, _OFF_ARG0_LO), Insn(_JSET_K, CLONE_NEW_MASK, "eperm", 0),
             Insn(_RET_K, SECCOMP_RET_ALLOW),
             "eperm", Insn(_RET_K, SECCOMP_RET_ERRNO | EPERM),
             "enosys", Insn(_RET_K, SECCOMP_RET_ERRNO | ENOSYS)]
    return assemble(prog)


def describe() -> str:
    """One line for reports: what the filter refuses."""
    classes = ", ".join(DENIED_X86_64)
    return f"seccomp (x86_64): EPERM for {classes}, clone with CLONE_NEW*; ENOSYS for clone3"
