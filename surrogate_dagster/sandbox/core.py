"""Run untrusted (model-written) programs under bubblewrap + rlimits, with a hard wall clock.

What contains what:

- bubblewrap ``--unshare-all --unshare-user --disable-userns``: new network (only a private
  loopback), pid, ipc, uts, cgroup and user namespaces; nested user namespaces refused.
- filesystem: read-only binds of /usr (and the /bin, /lib* symlinks), a few public /etc files
  (CA certs, ld.so.cache, alternatives) and the Python interpreter's prefix; a fresh procfs and
  a minimal read-only /dev; size-capped private tmpfs at /sandbox (cwd, HOME), /tmp and
  /dev/shm; the root itself read-only. Nothing of the host's /root, /home, /work or /tmp shows.
- ``--clearenv``: the environment is rebuilt from a short allow-list; no host variable leaks.
- prlimit (util-linux) before bwrap: RLIMIT_AS (memory), CPU (soft+1 hard), NPROC, FSIZE, NOFILE,
  CORE=0. The program runs as pid 1 of its namespace, so it ignores SIGXCPU; the hard CPU limit
  then SIGKILLs it (reported as "cpu" from the measured CPU time). When run as root, every run
  leases its own unprivileged host uid (``uids.py``) so NPROC applies and counts only that
  sandbox's processes.
- wall clock: the parent SIGKILLs the program, which is pid 1 of its pid namespace
  (``--as-pid-1``); the kernel then kills everything else in the namespace, grandchildren that
  called setsid() included, and the outer bwrap reaps it. If our process dies,
  ``--die-with-parent`` does the same. When the program exits, the namespace goes with it.
- output: stdout/stderr are read up to a cap; past it the run is killed ("output_limit").
- total memory and process count (``cgroups.py``): each run gets its own memory + pids cgroup
  (``total_memory_mb``, ``nproc``), which charges everything the run holds: every process, memfds,
  tmpfs pages and the slab of its files' inodes/dentries. The cgroup's OOM killer ends a run past
  the cap ("memory"); its peak use is reported (``memory_peak_mb``). Where no cgroup can be made
  the sandbox warns and says ``memory_cap="per-process only"``: the bound is then rlimits only
  (``nproc x memory_mb`` plus what memfds and the tmpfs mounts hold).

- syscalls (``seccomp.py``): bwrap installs a seccomp filter in the program just before it execs it
  (``--seccomp``): io_uring, keyrings, bpf, perf_event_open, userfaultfd, new namespaces (unshare,
  setns, clone with CLONE_NEW*; clone3 answers ENOSYS so libc uses clone), mounts and kernel
  administration answer EPERM. x86_64 only: elsewhere the sandbox warns and runs without one
  (``syscall_filter`` in every result says which).
- /proc is the pid namespace's own (only the sandbox's processes show); host-wide figures that
  are cheap to hide are replaced: ``/proc/loadavg`` reads idle, ``/proc/meminfo`` gives the run's
  memory cap as total and free, ``/proc/cmdline`` (the host's boot line) is empty.

Not contained: the rest of the kernel's syscall surface, host facts that the kernel still tells
(kernel release through uname(2) and /proc/version; CPU model and host-wide CPU times in
/proc/cpuinfo and /proc/stat; uptime; sysinfo(2), which glibc's getloadavg() and
sysconf(_SC_PHYS_PAGES) read, gives the host's load, RAM and process count, and refusing it would
break those), and CPU time of a fork bomb beyond ``nproc x cpu_s`` until the wall clock fires. bubblewrap 0.8 sizes its tmpfs mounts (``--size``)
but has no inode-count option: the number of files is bounded by the cgroup's memory cap (each
empty file costs about 1 KB of slab), not per mount.
"""

from __future__ import annotations

import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Mapping, Sequence

from surrogate_dagster.sandbox import cgroups, seccomp
from surrogate_dagster.sandbox.host import (
    SandboxError,
    count_uid_processes,
    interpreter_layout,
    kill_uid_processes,
    reap,
)
from surrogate_dagster.sandbox.uids import DEFAULT_UID_BASE, DEFAULT_UID_COUNT, lease_uid

MAIN_SCRIPT = "__sbx_main__.py"
WORK = "/sandbox"  # cwd and HOME inside; not /work, which may hold the host repo and venv
# stderr markers that tell which rlimit a program ran into (it exits on its own, not killed)
_STDERR_HITS = (
    ("memory", ("MemoryError", "Cannot allocate memory", "std::bad_alloc", "out of memory")),
    ("nproc", ("fork: retry: Resource temporarily unavailable", "fork: Resource temporarily",
               "BlockingIOError: [Errno 11]", "can't start new thread")),
    ("fsize", ("File too large", "[Errno 27]")),
)


# Launch bwrap with this, never with the host's environment: with bwrap's own init as pid 1 (a
# fork of the launcher), /proc/1/environ inside showed the launcher's variables. --as-pid-1 and
# --clearenv close that; a clean launch environment keeps it closed if either ever changes.
_LAUNCH_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}


@dataclass(frozen=True)
class SandboxLimits:
    """Per-run limits. ``memory_mb``/``cpu_s``/``fsize_mb``/``nofile`` are per process."""

    wall_s: float = 10.0
    cpu_s: int = 10
    memory_mb: int | None = 1024  # RLIMIT_AS; None for runtimes that reserve huge address space
    nproc: int = 32
    fsize_mb: int = 16
    stdout_bytes: int = 1 << 20
    stderr_bytes: int = 64 << 10
    nofile: int = 256
    tmpfs_mb: int = 64  # size of each private tmpfs (/sandbox, /tmp, /dev/shm)
    # the whole run (cgroup): None = one process' memory_mb (4096 when unset) + the three tmpfs + 64
    total_memory_mb: int | None = None

    @property
    def total_mb(self) -> int:
        """The run's memory cap in MB (what the cgroup gets)."""
        if self.total_memory_mb is not None:
            return self.total_memory_mb
        return (self.memory_mb or 4096) + 3 * self.tmpfs_mb + 64


@dataclass
class SandboxResult:
    """What happened. ``exit_code`` is 128+N when the program died of signal N."""

    exit_code: int
    stdout: str
    stderr: str
    stdout_truncated: bool
    stderr_truncated: bool
    timed_out: bool
    killed_reason: str | None  # timeout | output_limit | cpu | fsize | memory | nproc | signal_N
    wall_ms: float
    limit_hits: tuple[str, ...] = ()  # every limit seen, e.g. ("timeout", "nproc")
    uid: int = -1
    leaked_pids: tuple[int, ...] = field(default=())  # processes found (and killed) after a kill
    cpu_ms: float = float("nan")  # user+system CPU of the program (and children it waited for)
    memory_cap: str = "per-process only"  # "cgroup v1" / "cgroup v2": the whole run was capped
    memory_peak_mb: float | None = None  # the run's peak memory (cgroup), all processes together
    syscall_filter: str = "none"  # what the seccomp filter refused, or "none (why)"

    @property
    def ok(self) -> bool:
        """Exited 0 without hitting a limit."""
        return self.exit_code == 0 and self.killed_reason is None


class Sandbox:
    """Runs programs in a fresh bubblewrap sandbox per call. Thread-safe; one uid lease per run."""

    def __init__(self, limits: SandboxLimits | None = None, *, python: str | None = None,
                 extra_ro_binds: Sequence[str] = (), uid_base: int = DEFAULT_UID_BASE,
                 uid_count: int = DEFAULT_UID_COUNT, cgroup: bool = True, syscall_filter: bool = True) -> None:
        self.limits = limits or SandboxLimits()
        self.python = python or sys.executable
        self.bwrap = shutil.which("bwrap")
        self.prlimit = shutil.which("prlimit")
        self.bash = shutil.which("bash") or "/bin/bash"  # the cgroup gate (dash only knows fds 0-9)
        if not self.bwrap or not self.prlimit:
            raise SandboxError("bubblewrap and prlimit are required: run scripts/install_system_deps.sh")
        self._py_args, self._py_data = interpreter_layout(self.python)
        self.ro_binds = [os.path.abspath(p) for p in extra_ro_binds]
        self.uid_base, self.uid_count = uid_base, uid_count
        self.as_root = os.geteuid() == 0
        self.cgroup_hierarchy, why = cgroups.probe() if cgroup else (None, "disabled by the caller")
        self.memory_cap = f"cgroup v{self.cgroup_hierarchy.version}" if self.cgroup_hierarchy else "per-process only"
        self.memory_cap_reason = why
        if self.cgroup_hierarchy is None:
            warnings.warn(f"sandbox: no cgroup ({why}); memory is capped per process only, not per run",
                          RuntimeWarning, stacklevel=2)
        self._seccomp_bpf: bytes | None = None
        if not syscall_filter:
            self.syscall_filter = "none (disabled by the caller)"
        else:
            try:
                self._seccomp_bpf = seccomp.build_filter()
                self.syscall_filter = seccomp.describe()
            except seccomp.SeccompUnsupported as e:
                self.syscall_filter = f"none ({e})"
                warnings.warn(f"sandbox: {e}; programs run without a syscall filter", RuntimeWarning,
                              stacklevel=2)
        self._root_links = []
        for p in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
            if os.path.islink(p):
                self._root_links += ["--symlink", os.readlink(p), p]
            elif os.path.isdir(p):
                self._root_links += ["--ro-bind", p, p]

    def base_env(self) -> dict[str, str]:
        """The whole environment a sandboxed program sees (host variables never pass)."""
        py_bin = os.path.dirname(os.path.abspath(self.python))
        return {"PATH": f"{py_bin}:/usr/local/bin:/usr/bin:/bin", "HOME": WORK, "TMPDIR": "/tmp",
                "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1",
                "PYTHONHASHSEED": "0"}

    def self_check(self) -> None:
        """Raise SandboxError with bwrap's message if a trivial program cannot run."""
        r = self.run(["/bin/true"], limits=SandboxLimits(wall_s=10))
        if r.exit_code != 0:
            raise SandboxError(f"sandbox unusable (exit {r.exit_code}): {r.stderr.strip()[:500]}")

    # -- building the command -------------------------------------------------------------------
    def _memfd(self, name: str, data: bytes, fds: list[int]) -> int:
        fd = os.memfd_create(name[-200:] or "f")
        fds.append(fd)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.lseek(fd, 0, os.SEEK_SET)
        return fd

    def _command(self, argv: Sequence[str], files: Mapping[str, str | bytes], lim: SandboxLimits,
                 uid: int, env: Mapping[str, str] | None, fds: list[int], info_w: int) -> list[str]:
        nproc = lim.nproc + 1  # the outer bwrap (the monitor) runs under the same uid
        if not self.as_root:  # own uid: the count includes the caller's other processes
            nproc += count_uid_processes(uid)
        cmd = [self.prlimit, f"--cpu={lim.cpu_s}:{lim.cpu_s + 1}", f"--nproc={nproc}",
               f"--fsize={lim.fsize_mb << 20}", f"--nofile={lim.nofile}", "--core=0"]
        if lim.memory_mb is not None:
            cmd.append(f"--as={lim.memory_mb << 20}")
        # --as-pid-1: the program is the namespace's init, so the outer bwrap waitpid()s it. With
        # bwrap's own init, the outer exits on an eventfd without reaping and every run leaves a
        # zombie with the host's pid 1 (which here reaps lazily; zombies count against NPROC).
        cmd += ["--", self.bwrap, "--unshare-all", "--unshare-user", "--disable-userns", "--as-pid-1",
                "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--clearenv",
                "--info-fd", str(info_w),
                "--ro-bind", "/usr", "/usr", *self._root_links]
        # public, non-secret host files some tools insist on (semgrep needs a CA bundle even offline)
        for p in ("/etc/alternatives", "/etc/ld.so.cache", "/etc/localtime", "/etc/ssl/certs"):
            cmd += ["--ro-bind-try", p, p]
        # tmpfs mounts first: binds listed after them land on top, so a venv under /tmp still shows
        cmd += ["--proc", "/proc", *self._proc_masks(lim, fds), "--dev", "/dev",
                "--size", str(lim.tmpfs_mb << 20), "--perms", "1777", "--tmpfs", "/dev/shm",
                "--size", str(lim.tmpfs_mb << 20), "--perms", "1777", "--tmpfs", "/tmp",
                "--size", str(lim.tmpfs_mb << 20), "--perms", "0700", "--tmpfs", WORK]
        passwd = f"root:x:0:0::/:/usr/sbin/nologin\nsandbox:x:{uid}:{uid}::{WORK}:/bin/sh\n"
        group = f"root:x:0:\nsandbox:x:{uid}:\n"
        cmd += ["--ro-bind-data", str(self._memfd("passwd", passwd.encode(), fds)), "/etc/passwd",
                "--ro-bind-data", str(self._memfd("group", group.encode(), fds)), "/etc/group"]
        cmd += self._py_args
        for path, data in self._py_data:
            cmd += ["--ro-bind-data", str(self._memfd(os.path.basename(path), data, fds)), path]
        for p in self.ro_binds:
            cmd += ["--ro-bind", p, p]
        made_dirs: set[str] = set()
        for name, content in files.items():
            rel = PurePosixPath(name)
            if rel.is_absolute() or ".." in rel.parts or not rel.parts:
                raise ValueError(f"sandbox file names must be relative, without '..': {name!r}")
            for parent in reversed(rel.parents[:-1]):
                if str(parent) not in made_dirs:
                    made_dirs.add(str(parent))
                    cmd += ["--dir", f"{WORK}/{parent}"]
            data = content.encode() if isinstance(content, str) else content
            cmd += ["--perms", "0644", "--file", str(self._memfd(rel.name, data, fds)), f"{WORK}/{rel}"]
        for k, v in {**self.base_env(), **(env or {})}.items():
            cmd += ["--setenv", k, v]
        # bwrap's root and /dev are unbounded tmpfs mounts: read-only, so only the sized mounts
        # (/sandbox, /tmp, /dev/shm) take writes
        cmd += ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", WORK]
        if self._seccomp_bpf is not None:  # loaded by bwrap after its own set-up, before exec
            cmd += ["--seccomp", str(self._memfd("seccomp", self._seccomp_bpf, fds))]
        return [*cmd, "--", *argv]

    def _proc_masks(self, lim: SandboxLimits, fds: list[int]) -> list[str]:
        """bwrap args laying files over host-wide /proc entries (see the module docstring)."""
        kb = (lim.total_mb if self.cgroup_hierarchy is not None else (lim.memory_mb or lim.total_mb)) << 10
        meminfo = "".join(f"{k + ':':16s}{v:>8d} kB\n" for k, v in (
            ("MemTotal", kb), ("MemFree", kb), ("MemAvailable", kb), ("Buffers", 0), ("Cached", 0),
            ("SwapCached", 0), ("Active", 0), ("Inactive", 0), ("SwapTotal", 0), ("SwapFree", 0),
            ("Shmem", 0), ("Slab", 0), ("SReclaimable", 0)))
        masks = {"loadavg": "0.00 0.00 0.00 1/1 1\n", "meminfo": meminfo, "cmdline": ""}
        return [a for name, text in masks.items()
                for a in ("--ro-bind-data", str(self._memfd(name, text.encode(), fds)), f"/proc/{name}")]

    # -- running --------------------------------------------------------------------------------
    def run(self, program: Sequence[str] | str, files: Mapping[str, str | bytes] | None = None,
            stdin: str | bytes | None = None, *, limits: SandboxLimits | None = None,
            env: Mapping[str, str] | None = None) -> SandboxResult:
        """Run ``program`` (an argv list, or a str of Python source) in /sandbox, where ``files``
        ({relative path: text or bytes}) are written first; ``env`` adds variables."""
        lim = limits or self.limits
        files = dict(files or {})
        if isinstance(program, str):
            files[MAIN_SCRIPT] = program
            argv: list[str] = [self.python, MAIN_SCRIPT]
        else:
            argv = list(program)
            if not argv:
                raise ValueError("empty argv")
        lease = lease_uid(self.uid_base, self.uid_count) if self.as_root else None
        uid = lease.uid if lease else os.getuid()
        fds: list[int] = []
        info_r, info_w = os.pipe2(os.O_CLOEXEC)  # bwrap reports the namespace init's host pid here
        fds.append(info_w)
        cg = gate_w = None
        try:
            cmd = self._command(argv, files, lim, uid, env, fds, info_w)
            if self.cgroup_hierarchy is not None:
                # pids: the program's nproc plus the outer bwrap, as for RLIMIT_NPROC
                cg = cgroups.create(self.cgroup_hierarchy, lim.total_mb << 20, lim.nproc + 2)
                gate_r, gate_w = os.pipe2(os.O_CLOEXEC)
                fds.append(gate_r)
                cmd = [self.bash, "-c", cgroups.GATE_SCRIPT, str(gate_r), *cmd]
            user_kw = {"user": uid, "group": uid, "extra_groups": []} if lease else {}
            t0 = time.monotonic()
            proc = subprocess.Popen(cmd, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, pass_fds=tuple(fds),
                                    start_new_session=True, env=_LAUNCH_ENV, **user_kw)
            for fd in fds:  # the child has its copies; ours would only pin memory
                os.close(fd)
            fds.clear()
            if cg is not None:
                try:
                    cg.join(proc.pid)
                    os.write(gate_w, b"\n")  # in the cgroup: let it exec bwrap
                finally:
                    os.close(gate_w)  # without the newline the launcher exits 125, running nothing
                    gate_w = None
            result = self._supervise(proc, stdin, lim, t0, uid, bool(lease), info_r)
            if cg is not None:
                self._cgroup_verdict(result, cg)
            return result
        finally:
            os.close(info_r)
            for fd in fds:
                os.close(fd)
            if gate_w is not None:
                os.close(gate_w)
            if cg is not None:
                cg.remove()
            if lease:
                lease.release()

    def _cgroup_verdict(self, result: SandboxResult, cg: cgroups.RunCgroup) -> None:
        """Peak memory and the cgroup OOM killer's doing, into the result."""
        result.memory_cap = self.memory_cap
        peak = cg.peak_bytes()
        result.memory_peak_mb = None if peak is None else round(peak / 2**20, 1)
        if cg.oom_kills() > 0:
            if "memory" not in result.limit_hits:
                result.limit_hits = ("memory", *result.limit_hits)
            if result.killed_reason is None or result.killed_reason.startswith("signal_"):
                result.killed_reason = "memory" if result.exit_code != 0 else result.killed_reason

    @staticmethod
    def _kill(proc: subprocess.Popen, info: bytes, uid: int) -> None:
        """Kill the namespace's init (the kernel then kills everything in the namespace) so the
        outer bwrap reaps it and exits; fall back to killing bwrap's process group."""
        try:
            child = int(json.loads(bytes(info) or b"{}").get("child-pid", 0))
        except (ValueError, json.JSONDecodeError):
            child = 0
        if child > 0:
            try:
                pidfd = os.pidfd_open(child)  # pins the process: a recycled pid cannot be hit
                try:
                    if os.stat(f"/proc/{child}").st_uid == uid and proc.poll() is None:
                        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
                finally:
                    os.close(pidfd)
                if reap(proc, 2.0):
                    return
            except (ProcessLookupError, FileNotFoundError):
                pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # bwrap; --die-with-parent takes the namespace down
        except ProcessLookupError:
            pass

    def _supervise(self, proc: subprocess.Popen, stdin: str | bytes | None, lim: SandboxLimits,
                   t0: float, uid: int, own_uid: bool, info_r: int) -> SandboxResult:
        deadline = t0 + lim.wall_s
        out, err = bytearray(), bytearray()
        caps = {"out": lim.stdout_bytes, "err": lim.stderr_bytes}
        bufs = {"out": out, "err": err}
        truncated = {"out": False, "err": False}
        killed: str | None = None
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ, "out")
        sel.register(proc.stderr, selectors.EVENT_READ, "err")
        sel.register(info_r, selectors.EVENT_READ, "info")
        info = bytearray()
        streams = {"out", "err"}
        pending = memoryview(stdin.encode() if isinstance(stdin, str) else stdin or b"")
        if stdin is not None:
            os.set_blocking(proc.stdin.fileno(), False)
            sel.register(proc.stdin, selectors.EVENT_WRITE, "in")
        try:
            while streams and killed is None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    killed = "timeout"
                    break
                for key, _ in sel.select(remaining):
                    if key.data == "in":
                        try:
                            pending = pending[os.write(key.fd, pending[:65536]):]
                        except BlockingIOError:
                            continue
                        except BrokenPipeError:
                            pending = pending[:0]
                        if not pending:
                            sel.unregister(key.fileobj)
                            key.fileobj.close()
                        continue
                    chunk = os.read(key.fd, 65536)
                    if key.data == "info":
                        info += chunk
                        if not chunk:
                            sel.unregister(key.fileobj)
                        continue
                    if not chunk:
                        sel.unregister(key.fileobj)
                        streams.discard(key.data)
                        continue
                    buf, cap = bufs[key.data], caps[key.data]
                    room = cap - len(buf)
                    buf += chunk[:max(room, 0)]
                    if len(chunk) > room:
                        truncated[key.data] = True
                        killed = "output_limit"
                        break
            if killed is None and not reap(proc, max(deadline - time.monotonic(), 0.001)):
                killed = "timeout"
        finally:
            sel.close()
        leaked: tuple[int, ...] = ()
        if killed is not None:
            self._kill(proc, info, uid)
        for f in (proc.stdin, proc.stdout, proc.stderr):
            if f is not None and not f.closed:
                f.close()
        reap(proc, None)
        rc = proc.returncode
        cpu_s = getattr(proc, "sbx_cpu_s", float("nan"))
        if killed is not None and own_uid:
            # belt and braces: the pid namespace should already be empty; anything left is a leak
            time.sleep(0.005)
            leaked = kill_uid_processes(uid)
        wall_ms = (time.monotonic() - t0) * 1000.0
        exit_code = 128 - rc if rc < 0 else rc
        stderr = err.decode("utf-8", "replace")
        hits = [killed] if killed else []
        if killed is None and exit_code > 128:
            sig = exit_code - 128
            # the program is pid 1, which ignores SIGXCPU: RLIMIT_CPU's hard limit then SIGKILLs it
            cpu_kill = sig == signal.SIGKILL and cpu_s >= lim.cpu_s
            hits.append("cpu" if cpu_kill else {signal.SIGXCPU: "cpu", signal.SIGXFSZ: "fsize"}.get(sig, f"signal_{sig}"))
        for name, markers in _STDERR_HITS:
            if name not in hits and any(m in stderr for m in markers):
                hits.append(name)
        reason = killed
        if reason is None and exit_code != 0 and hits:
            reason = hits[0]
        return SandboxResult(exit_code=exit_code, stdout=out.decode("utf-8", "replace"), stderr=stderr,
                             stdout_truncated=truncated["out"], stderr_truncated=truncated["err"],
                             timed_out=killed == "timeout", killed_reason=reason, wall_ms=wall_ms,
                             limit_hits=tuple(hits), uid=uid, leaked_pids=leaked,
                             cpu_ms=cpu_s * 1000.0, syscall_filter=self.syscall_filter)
