"""Attack probes: run known-hostile programs in a Sandbox and report whether each was contained.

Each probe returns a ``ProbeResult(name, contained, evidence)``; tests assert on them and a
preflight (e.g. before an eval run) can print them. Limits are small so all probes run in ~15 s.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from surrogate_dagster.sandbox.core import Sandbox, SandboxLimits, SandboxResult

FAST = SandboxLimits(wall_s=2.0, cpu_s=5, memory_mb=512, nproc=16, fsize_mb=4,
                     stdout_bytes=1 << 20, stderr_bytes=16 << 10, tmpfs_mb=32)


@dataclass
class ProbeResult:
    """One probe's verdict with the facts behind it."""

    name: str
    contained: bool
    evidence: str
    result: SandboxResult | None = None


def _nonce() -> str:
    return uuid.uuid4().hex[:12]


def procs_with(marker: str) -> list[int]:
    """Host pids whose command line (argv joined by NUL) contains ``marker`` (ours excluded)."""
    me, found, needle = os.getpid(), [], marker.encode()
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) != me:
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if needle in f.read():
                        found.append(int(pid))
            except (FileNotFoundError, ProcessLookupError, PermissionError):
                pass
    return found


def _gone_within(marker: str, seconds: float = 1.0) -> bool:
    deadline = time.monotonic() + seconds
    while procs_with(marker):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def probe_fork_bomb(sb: Sandbox) -> ProbeResult:
    """A Python fork bomb: the process count stays at nproc; the wall clock ends it; nothing left."""
    n = _nonce()
    name = f"bomb_{n}.py"
    code = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    peak, stop = [0], threading.Event()

    def watch() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], len(procs_with(n)))
            time.sleep(0.05)

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    try:
        r = sb.run([sb.python, name], files={name: code}, limits=FAST)
    finally:
        stop.set()
        t.join()
    left = _gone_within(n)
    # the outer bwrap carries the file name in its argv too: +1
    ok = r.timed_out and peak[0] <= FAST.nproc + 1 and left
    return ProbeResult("fork_bomb", ok, f"killed_reason={r.killed_reason} peak_procs={peak[0]} "
                       f"(nproc={FAST.nproc}+1 bwrap) leftovers={'none' if left else 'YES'}", r)


def probe_bash_fork_bomb(sb: Sandbox) -> ProbeResult:
    """The classic ``:(){ :|:& };:`` under bash."""
    n = _nonce()
    name = f"bomb_{n}.sh"
    # the script itself stays alive (it is the namespace's pid 1): only the wall clock ends it
    r = sb.run(["/bin/bash", name], files={name: ":(){ :|:& };:\nsleep 60\n"}, limits=FAST)
    left = _gone_within(n)
    ok = r.timed_out and left
    return ProbeResult("bash_fork_bomb", ok, f"killed_reason={r.killed_reason} hits={r.limit_hits} "
                       f"wall_ms={r.wall_ms:.0f} leftovers={'none' if left else 'YES'}", r)


def probe_kill_parent(sb: Sandbox) -> ProbeResult:
    """A child SIGKILLs its parent (the program, pid 1 of the namespace), pid 1, every pid it can
    (-1) and our host pid; then the program checks it is still alive."""
    code = (f"import json, os, signal\n"
            "if os.fork() == 0:\n    res = []\n"
            f"    for pid in (os.getppid(), 1, -1, {os.getpid()}):\n"
            "        try:\n            os.kill(pid, signal.SIGKILL)\n            res.append([pid, 'sent'])\n"
            "        except OSError as e:\n            res.append([pid, os.strerror(e.errno)])\n"
            "    open('kills.json', 'w').write(json.dumps(res))\n    os._exit(0)\n"
            "os.wait()\nprint('alive', open('kills.json').read())\n")
    r = sb.run(code, limits=FAST)
    # the program is the namespace's init: signals from inside without a handler do not reach it,
    # and nothing outside the namespace has a pid in it (our pid is not found there)
    ok = r.exit_code == 0 and r.stdout.startswith("alive") and r.killed_reason is None \
        and "No such process" in r.stdout
    return ProbeResult("kill_parent", ok, f"exit={r.exit_code} stdout={r.stdout.strip()[:200]!r} "
                       f"(host supervisor pid {os.getpid()} still running)", r)


def probe_supervisor_dies(sb: Sandbox) -> ProbeResult:
    """SIGKILL the process that launched the sandbox: everything inside must die with it."""
    n = _nonce()
    marker = f"{int(n[:6], 16) % 1000 + 300}.{int(n[6:], 16) % 10**6:06d}"  # a unique sleep length
    launcher = ("import sys\nfrom surrogate_dagster.sandbox import Sandbox, SandboxLimits\n"
                f"Sandbox(python={sb.python!r}).run(['/bin/sh', '-c', 'sleep {marker} & sleep {marker}; wait'], "
                "limits=SandboxLimits(wall_s=60))\n")
    p = subprocess.Popen([sys.executable, "-c", launcher], start_new_session=True)
    deadline = time.monotonic() + 20
    sleeper = f"sleep\0{marker}"  # argv of the sleep processes themselves, not bwrap's or sh's
    while len(procs_with(sleeper)) < 2 and time.monotonic() < deadline and p.poll() is None:
        time.sleep(0.02)
    seen = len(procs_with(sleeper))
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    left = _gone_within(sleeper, 2.0)
    for pid in procs_with(sleeper):  # don't leave a mess if the probe failed
        os.kill(pid, signal.SIGKILL)
    ok = seen >= 2 and left
    return ProbeResult("supervisor_dies", ok, f"sleepers seen before kill={seen}, "
                       f"after={'none' if left else 'ALIVE'}")


def probe_write_outside(sb: Sandbox) -> ProbeResult:
    """Write to a world-writable host dir, /usr, /etc, / and up the tree: nothing lands on the host."""
    with tempfile.TemporaryDirectory() as d:
        os.chmod(d, 0o777)  # so only isolation, not permissions, stands in the way
        targets = [f"{d}/escape.txt", "/usr/escape.txt", "/etc/escape.txt", "/escape.txt",
                   "../escape.txt", "../../escape.txt", "/proc/1/root/escape.txt"]
        code = ("import json\nres = {}\n"
                f"for t in {targets!r}:\n"
                "    try:\n        open(t, 'w').write('x')\n        res[t] = 'written'\n"
                "    except OSError as e:\n        res[t] = e.strerror\nprint(json.dumps(res))\n")
        r = sb.run(code, limits=FAST)
        landed = [p for p in (f"{d}/escape.txt", "/usr/escape.txt", "/etc/escape.txt", "/escape.txt")
                  if os.path.exists(p)]
        for p in landed:
            os.unlink(p)
    ok = not landed and r.exit_code == 0
    return ProbeResult("write_outside", ok, f"inside: {r.stdout.strip()[:400]}; on host: {landed or 'nothing'}", r)


def probe_read_env(sb: Sandbox) -> ProbeResult:
    """A secret in the host's environment is not visible: environ, /proc/*/environ, /proc/*/cmdline."""
    secret = f"sbxsecret{_nonce()}"
    code = ("import os\nout = [repr(dict(os.environ))]\n"
            "for pid in os.listdir('/proc'):\n    if pid.isdigit():\n"
            "        for f in ('environ', 'cmdline'):\n"
            "            try:\n                out.append(open(f'/proc/{pid}/{f}').read())\n"
            "            except OSError as e:\n                out.append(str(e))\nprint('\\n'.join(out))\n")
    old = os.environ.get("SURROGATE_PROBE_SECRET")
    os.environ["SURROGATE_PROBE_SECRET"] = secret
    try:
        r = sb.run(code, limits=FAST)
    finally:
        if old is None:
            os.environ.pop("SURROGATE_PROBE_SECRET", None)
        else:
            os.environ["SURROGATE_PROBE_SECRET"] = old
    leaked = secret in r.stdout or secret in r.stderr
    ok = r.exit_code == 0 and not leaked
    return ProbeResult("read_env", ok, f"secret {'LEAKED' if leaked else 'not seen'}; "
                       f"sandbox env keys: {sorted(sb.base_env())}", r)


def probe_read_aws(sb: Sandbox) -> ProbeResult:
    """~/.aws/credentials of the host (a fake one in a temp HOME, plus /root's) cannot be read."""
    secret = f"AKIA{_nonce().upper()}"
    with tempfile.TemporaryDirectory() as home:
        os.chmod(home, 0o755)
        Path(home, ".aws").mkdir(mode=0o755)
        Path(home, ".aws", "credentials").write_text(f"[default]\naws_access_key_id = {secret}\n")
        os.chmod(Path(home, ".aws", "credentials"), 0o644)  # readable: only isolation protects it
        paths = ["~/.aws/credentials", f"{home}/.aws/credentials", "/root/.aws/credentials"]
        code = ("import os, glob\nfor p in " + repr(paths) + " + glob.glob('/home/*/.aws/*'):\n"
                "    try:\n        print(p, open(os.path.expanduser(p)).read())\n"
                "    except OSError as e:\n        print(p, e.strerror)\n")
        old = os.environ.get("HOME")
        os.environ["HOME"] = home
        try:
            r = sb.run(code, limits=FAST)
        finally:
            if old is None:
                os.environ.pop("HOME", None)
            else:
                os.environ["HOME"] = old
    leaked = secret in r.stdout or secret in r.stderr
    return ProbeResult("read_aws", r.exit_code == 0 and not leaked,
                       f"credentials {'LEAKED' if leaked else 'unreadable'}: {r.stdout.strip()[:300]}", r)


def _host_ip() -> str:
    """A non-loopback address of this host (routing lookup only, nothing is sent)."""
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        u.connect(("10.255.255.255", 1))
        return u.getsockname()[0]
    except OSError:
        return "127.0.0.2"
    finally:
        u.close()


def probe_socket(sb: Sandbox) -> ProbeResult:
    """TCP to a host listener on 127.0.0.1, to the host's address, and out to the internet all fail."""
    srv = socket.socket()
    srv.bind(("0.0.0.0", 0))  # loopback and the host's own address
    srv.listen(8)
    srv.settimeout(0.1)
    port = srv.getsockname()[1]
    accepted: list[object] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, addr = srv.accept()
                accepted.append(addr)
                conn.close()
            except OSError:
                pass

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    host_ip = _host_ip()
    code = ("import socket\nres = {}\n"
            f"for target in [('127.0.0.1', {port}), ('{host_ip}', {port}), ('1.1.1.1', 53), ('8.8.8.8', 443)]:\n"
            "    s = socket.socket(); s.settimeout(1)\n"
            "    try:\n        s.connect(target); res[str(target)] = 'CONNECTED'\n"
            "    except OSError as e:\n        res[str(target)] = e.strerror or str(e)\n"
            "try:\n    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.sendto(b'x', ('1.1.1.1', 53))\n"
            "    res['udp'] = 'SENT'\nexcept OSError as e:\n    res['udp'] = e.strerror\nprint(res)\n")
    try:
        r = sb.run(code, limits=FAST)
    finally:
        stop.set()
        t.join()
        srv.close()
    ok = not accepted and "CONNECTED" not in r.stdout and "SENT" not in r.stdout and r.exit_code == 0
    return ProbeResult("socket", ok, f"host listener accepted {len(accepted)}; inside: {r.stdout.strip()[:300]}", r)


def probe_alloc_10g(sb: Sandbox) -> ProbeResult:
    """Allocating 10 GB at once, and growing 64 MB at a time, both stop at the memory limit."""
    code = ("import sys\ntry:\n    b = bytearray(10 * 1024**3)\n    print('GOT 10GB')\n"
            "except MemoryError:\n    print('refused 10GB', flush=True)\nkeep = []\n"
            "while True:\n    keep.append(bytearray(64 * 1024**2))\n")
    # touching ~0.5 GB of zeroed pages can take seconds on a busy host: a roomier wall clock
    r = sb.run(code, limits=replace(FAST, wall_s=15))
    ok = r.killed_reason == "memory" and "GOT 10GB" not in r.stdout and "refused 10GB" in r.stdout
    return ProbeResult("alloc_10g", ok, f"killed_reason={r.killed_reason} stdout={r.stdout.strip()!r} "
                       f"(RLIMIT_AS {FAST.memory_mb} MB)", r)


def probe_infinite_loop(sb: Sandbox) -> ProbeResult:
    """``while True: pass`` is killed by the wall clock; with a 1 s CPU limit, by SIGXCPU."""
    wall = sb.run("while True:\n    pass\n", limits=FAST)
    cpu = sb.run("while True:\n    pass\n", limits=SandboxLimits(wall_s=10, cpu_s=1, memory_mb=512, nproc=8))
    ok = wall.killed_reason == "timeout" and wall.wall_ms < FAST.wall_s * 1000 + 1500 \
        and cpu.killed_reason == "cpu"
    return ProbeResult("infinite_loop", ok, f"wall-limited: {wall.killed_reason} in {wall.wall_ms:.0f} ms; "
                       f"cpu-limited: {cpu.killed_reason} in {cpu.wall_ms:.0f} ms", wall)


def probe_stdout_flood(sb: Sandbox) -> ProbeResult:
    """1 GB on stdout: reading stops at the cap and the run is killed."""
    code = "import sys\nchunk = 'x' * (1 << 20)\nfor _ in range(1024):\n    sys.stdout.write(chunk)\n"
    r = sb.run(code, limits=FAST)
    ok = r.killed_reason == "output_limit" and r.stdout_truncated and len(r.stdout) == FAST.stdout_bytes
    return ProbeResult("stdout_1gb", ok, f"killed_reason={r.killed_reason} kept={len(r.stdout)} bytes "
                       f"in {r.wall_ms:.0f} ms", r)


def probe_grandchild(sb: Sandbox) -> ProbeResult:
    """A setsid()'d grandchild that ignores SIGHUP/SIGTERM must not outlive the timeout."""
    n = _nonce()
    name = f"gc_{n}.py"
    code = ("import os, signal, subprocess, time\n"
            "if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
            "        signal.signal(signal.SIGTERM, signal.SIG_IGN); signal.signal(signal.SIGHUP, signal.SIG_IGN)\n"
            "        time.sleep(120)\n    os._exit(0)\n"
            "time.sleep(120)\n")
    r = sb.run([sb.python, name], files={name: code}, limits=FAST)
    left = _gone_within(n)
    return ProbeResult("grandchild_outlives_timeout", r.timed_out and left,
                       f"killed_reason={r.killed_reason}; grandchild after: {'gone' if left else 'ALIVE'}", r)


def probe_file_size(sb: Sandbox) -> ProbeResult:
    """Writing a file larger than fsize_mb fails with EFBIG (or SIGXFSZ)."""
    code = "f = open('big', 'wb')\nfor _ in range(64):\n    f.write(b'x' * (1 << 20))\n    f.flush()\n"
    r = sb.run(code, limits=FAST)
    return ProbeResult("file_size", r.killed_reason == "fsize",
                       f"killed_reason={r.killed_reason} (RLIMIT_FSIZE {FAST.fsize_mb} MB)", r)


# One syscall class per probe: (name, number, args) tried inside with ctypes. Each call's arguments
# are ones the kernel itself would accept or reject with its own errno (EFAULT, EBADF, EINVAL,
# ENOSPC, ...) once the call reaches it, so EPERM (ENOSYS for clone3) means the filter stopped it at
# entry. ``params`` is a zeroed 120-byte buffer (struct io_uring_params).
_SYSCALL_CLASSES: dict[str, tuple[tuple[str, int, str], ...]] = {
    "io_uring": (("io_uring_setup", 425, "1, params"), ("io_uring_enter", 426, "-1, 0, 0, 0, 0, 0"),
                 ("io_uring_register", 427, "-1, 0, 0, 0")),
    "keyring": (("keyctl", 250, "0, -3, 0"),  # KEYCTL_GET_KEYRING_ID of the session keyring
                ("add_key", 248, "0, 0, 0, 0, 0"), ("request_key", 249, "0, 0, 0, 0")),
    "bpf": (("bpf", 321, "0, 1, 8"),),  # BPF_MAP_CREATE with a bad attr pointer
    "perf_event_open": (("perf_event_open", 298, "0, 0, -1, -1, 0"),),
    "userfaultfd": (("userfaultfd", 323, "1"),),  # UFFD_USER_MODE_ONLY: no privilege needed
    "namespaces": (("unshare(CLONE_NEWUSER)", 272, "0x10000000"), ("unshare(bad flag)", 272, "1"),
                   ("setns", 308, "-1, 0"), ("clone(CLONE_NEWUSER|SIGCHLD)", 56, "0x10000011, 0, 0, 0, 0"),
                   ("clone(CLONE_NEWNET|SIGCHLD)", 56, "0x40000011, 0, 0, 0, 0")),
    "clone3": (("clone3", 435, "0, 0"),),
}
_SYSCALL_PROBE = (
    "import ctypes, json, os\nlibc = ctypes.CDLL(None, use_errno=True)\nlibc.syscall.restype = ctypes.c_long\n"
    "buf = ctypes.create_string_buffer(120)\nparams = ctypes.addressof(buf)\nres = {}\n"
    "for name, nr, args in CALLS:\n"
    "    ctypes.set_errno(0)\n"
    "    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in eval('(' + args + ',)')])\n"
    "    res[name] = 'returned %d' % r if r >= 0 else os.strerror(ctypes.get_errno())\n"
    "    if r >= 0 and name.startswith('clone') and r == 0:\n        os._exit(0)\n"
    "print(json.dumps(res))\n")


def _probe_syscall_class(cls: str) -> Callable[[Sandbox], ProbeResult]:
    calls = _SYSCALL_CLASSES[cls]
    want = "Function not implemented" if cls == "clone3" else "Operation not permitted"

    def probe(sb: Sandbox) -> ProbeResult:
        r = sb.run(f"CALLS = {[(n, nr, a) for n, nr, a in calls]!r}\n" + _SYSCALL_PROBE, limits=FAST)
        try:
            res = json.loads(r.stdout.strip().splitlines()[-1])
        except (IndexError, json.JSONDecodeError):
            return ProbeResult(f"syscall_{cls}", False, f"no report: exit={r.exit_code} {r.stderr[-300:]!r}", r)
        reached = {k: v for k, v in res.items() if v != want}
        ok = r.exit_code == 0 and len(res) == len(calls) and not reached
        return ProbeResult(f"syscall_{cls}", ok, f"{'refused at entry' if ok else 'REACHED the kernel'}: "
                           f"{res} (want {want!r}; filter: {r.syscall_filter})", r)

    probe.__doc__ = f"The {cls} syscalls stop at the seccomp filter ({want})."
    return probe


def probe_proc_host_facts(sb: Sandbox) -> ProbeResult:
    """/proc shows the sandbox's own processes only, an idle load, the run's memory cap as total
    memory and no host boot line."""
    code = ("import json, os\nprint(json.dumps({'pids': [p for p in os.listdir('/proc') if p.isdigit()],\n"
            "    'loadavg': open('/proc/loadavg').read(), 'cmdline': open('/proc/cmdline').read(),\n"
            "    'memtotal_kb': int(open('/proc/meminfo').read().split('MemTotal:')[1].split()[0])}))\n")
    r = sb.run(code, limits=FAST)
    try:
        seen = json.loads(r.stdout)
    except json.JSONDecodeError:
        return ProbeResult("proc_host_facts", False, f"no report: {r.stderr[-300:]!r}", r)
    with open("/proc/meminfo") as f:
        host_kb = int(f.read().split("MemTotal:")[1].split()[0])
    ok = (seen["pids"] == ["1"] and seen["loadavg"].startswith("0.00 0.00 0.00") and seen["cmdline"] == ""
          and seen["memtotal_kb"] < host_kb)
    return ProbeResult("proc_host_facts", ok, f"inside: {seen} (host MemTotal {host_kb} kB)", r)


SYSCALL_PROBES: dict[str, Callable[[Sandbox], ProbeResult]] = {
    f"syscall_{cls}": _probe_syscall_class(cls) for cls in _SYSCALL_CLASSES}

PROBES: dict[str, Callable[[Sandbox], ProbeResult]] = {
    "fork_bomb": probe_fork_bomb, "bash_fork_bomb": probe_bash_fork_bomb,
    "kill_parent": probe_kill_parent, "supervisor_dies": probe_supervisor_dies,
    "write_outside": probe_write_outside, "read_env": probe_read_env, "read_aws": probe_read_aws,
    "socket": probe_socket, "alloc_10g": probe_alloc_10g, "infinite_loop": probe_infinite_loop,
    "stdout_1gb": probe_stdout_flood, "grandchild_outlives_timeout": probe_grandchild,
    "file_size": probe_file_size, **SYSCALL_PROBES, "proc_host_facts": probe_proc_host_facts,
}


def run_probes(sb: Sandbox | None = None) -> list[ProbeResult]:
    """Run every probe; a preflight passes when all are ``contained``."""
    sb = sb or Sandbox()
    return [probe(sb) for probe in PROBES.values()]


if __name__ == "__main__":
    results = run_probes()
    for p in results:
        print(f"{'CONTAINED' if p.contained else 'ESCAPED  '} {p.name:30s} {p.evidence}")
    sys.exit(0 if all(p.contained for p in results) else 1)
