"""One memory + pids cgroup per sandbox run: a cap on everything the run holds, not per process.

rlimits bound each process; a run's processes together (and what they leave in memfds, tmpfs
pages, dentries and inodes: kernel slab) can hold far more. A memory cgroup charges all of it
to the run. Used where the host offers it:

- cgroup v2 with the memory and pids controllers: ``memory.max``, ``memory.swap.max`` = 0,
  ``pids.max`` in ``<cgroup2 mount>/surrogate-sandbox/<run>``; peak from ``memory.peak``.
- cgroup v1 (separate ``memory`` and ``pids`` hierarchies): ``memory.limit_in_bytes`` (and
  ``memory.memsw.limit_in_bytes``, ``memory.kmem.limit_in_bytes`` where the kernel has them) under
  our own memory cgroup, ``pids.max`` under our own pids cgroup; peak from
  ``memory.max_usage_in_bytes``. Kernels since 5.x charge slab to the main counter whatever the
  kmem file says (writes to it are accepted and ignored), so the one limit covers inodes too.

The launcher joins the cgroup before it execs anything of the sandbox (``GATE_SCRIPT``), so no
allocation of the run happens outside it. Needs write access to the hierarchy (root here);
``probe()`` says why not otherwise, and the sandbox then falls back to per-process limits only.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from dataclasses import dataclass, field

# bash waits on the gate fd (its number is $0) until the supervisor has put it in the cgroup,
# closes it (nothing of the sandbox inherits it), then execs the real command; EOF without a
# newline means "do not run": exit 125.
GATE_SCRIPT = 'read _ <&"$0" || exit 125; eval "exec $0<&-"; exec "$@"'
_counter = itertools.count()
_lock = threading.Lock()
_probed: tuple["Hierarchy | None", str] | None = None


@dataclass(frozen=True)
class Hierarchy:
    """Where per-run cgroups are made: ``memory_parent`` and ``pids_parent`` (the same dir on v2)."""

    version: int
    memory_parent: str
    pids_parent: str


@dataclass
class RunCgroup:
    """The cgroup(s) of one run."""

    hierarchy: Hierarchy
    dirs: list[str] = field(default_factory=list)

    @property
    def memory_dir(self) -> str:
        return self.dirs[0]

    def join(self, pid: int) -> None:
        """Move ``pid`` (the gated launcher) into every cgroup of the run."""
        for d in self.dirs:
            _write(os.path.join(d, "cgroup.procs"), str(pid))

    def peak_bytes(self) -> int | None:
        """Highest memory use the run reached (None if the kernel does not tell)."""
        name = "memory.peak" if self.hierarchy.version == 2 else "memory.max_usage_in_bytes"
        try:
            return int(_read(os.path.join(self.memory_dir, name)))
        except (OSError, ValueError):
            return None

    def oom_kills(self) -> int:
        """How many processes the cgroup's OOM killer ended."""
        name = "memory.events" if self.hierarchy.version == 2 else "memory.oom_control"
        try:
            for line in _read(os.path.join(self.memory_dir, name)).splitlines():
                k, _, v = line.partition(" ")
                if k == "oom_kill":
                    return int(v)
        except (OSError, ValueError):
            pass
        return 0

    def remove(self) -> None:
        """Kill what is left in the cgroup and remove it (a few retries while the kernel lets go)."""
        for d in reversed(self.dirs):
            for attempt in range(50):
                try:
                    os.rmdir(d)
                    break
                except FileNotFoundError:
                    break
                except OSError:  # EBUSY: a task still exiting, or one left behind
                    for pid in _read(os.path.join(d, "cgroup.procs")).split():
                        try:
                            os.kill(int(pid), 9)
                        except (ProcessLookupError, ValueError):
                            pass
                    time.sleep(0.002 * (attempt + 1))


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


def _write(path: str, value: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def _mounts() -> list[tuple[str, str, set[str]]]:
    """(mount point, fs type, super options) of every cgroup mount."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, _, right = line.partition(" - ")
            fstype, _src, sopts = (right.split() + ["", "", ""])[:3]
            if fstype in ("cgroup", "cgroup2"):
                out.append((left.split()[4], fstype, set(sopts.split(","))))
    return out


def _own_path(controller: str | None) -> str:
    """Our cgroup path in the v1 hierarchy of ``controller`` (None: the v2 hierarchy)."""
    with open("/proc/self/cgroup") as f:
        for line in f:
            _id, ctrls, path = line.rstrip("\n").split(":", 2)
            if (controller is None and _id == "0") or (controller and controller in ctrls.split(",")):
                return path
    return "/"


def _probe_v2(mount: str) -> Hierarchy:
    ctrls = _read(os.path.join(mount, "cgroup.controllers")).split()
    if not {"memory", "pids"} <= set(ctrls):
        raise OSError(f"cgroup2 at {mount} lacks the memory/pids controllers ({' '.join(ctrls) or 'none'})")
    enabled = _read(os.path.join(mount, "cgroup.subtree_control")).split()
    for c in ("memory", "pids"):
        if c not in enabled:
            _write(os.path.join(mount, "cgroup.subtree_control"), f"+{c}")
    base = os.path.join(mount, "surrogate-sandbox")
    os.makedirs(base, exist_ok=True)
    _write(os.path.join(base, "cgroup.subtree_control"), "+memory +pids")
    return Hierarchy(2, base, base)


def _probe_v1(mounts: dict[str, str]) -> Hierarchy:
    if "memory" not in mounts or "pids" not in mounts:
        raise OSError("no cgroup v1 memory and pids hierarchies mounted")
    parents = [os.path.join(mounts[c], _own_path(c).lstrip("/")) for c in ("memory", "pids")]
    return Hierarchy(1, *parents)


def probe() -> tuple[Hierarchy | None, str]:
    """The hierarchy per-run cgroups go into, or (None, why not). Checked once per process by
    making and removing a test cgroup."""
    global _probed
    with _lock:
        if _probed is not None:
            return _probed
        reasons = []
        candidates = []
        mounts = _mounts()
        for mnt, fstype, _opts in mounts:
            if fstype == "cgroup2":
                candidates.append(lambda m=mnt: _probe_v2(m))
        v1 = {c: mnt for mnt, fstype, opts in mounts if fstype == "cgroup" for c in ("memory", "pids") if c in opts}
        candidates.append(lambda: _probe_v1(v1))
        for make in candidates:
            try:
                h = make()
                test = create(h, 64 << 20, 8)
                test.remove()
                _probed = (h, "")
                return _probed
            except OSError as e:
                reasons.append(str(e))
        _probed = (None, "; ".join(reasons) or "no cgroup hierarchy mounted")
        return _probed


def create(h: Hierarchy, memory_bytes: int, pids: int) -> RunCgroup:
    """A fresh cgroup (pair, on v1) with the caps set; raises OSError if it cannot be made."""
    name = f"sbx-{os.getpid()}-{next(_counter)}"
    cg = RunCgroup(h)
    try:
        if h.version == 2:
            d = os.path.join(h.memory_parent, name)
            os.mkdir(d)
            cg.dirs.append(d)
            _write(os.path.join(d, "memory.max"), str(memory_bytes))
            try:
                _write(os.path.join(d, "memory.swap.max"), "0")
            except FileNotFoundError:
                pass
            _write(os.path.join(d, "pids.max"), str(pids))
            return cg
        mem, pid = os.path.join(h.memory_parent, name), os.path.join(h.pids_parent, name)
        os.mkdir(mem)
        cg.dirs.append(mem)
        _write(os.path.join(mem, "memory.limit_in_bytes"), str(memory_bytes))
        for extra in ("memory.memsw.limit_in_bytes", "memory.kmem.limit_in_bytes"):
            try:
                _write(os.path.join(mem, extra), str(memory_bytes))
            except OSError:  # absent, or refused by this kernel: the main limit still holds
                pass
        os.mkdir(pid)
        cg.dirs.append(pid)
        _write(os.path.join(pid, "pids.max"), str(pids))
        return cg
    except OSError:
        cg.remove()
        raise
