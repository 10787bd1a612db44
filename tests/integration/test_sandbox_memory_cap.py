"""The whole run is capped by its own cgroup: memfds and tmpfs inodes count, not only process memory.

Without a cgroup, three processes each holding 640 MB of memfds (under RLIMIT_AS 256 MB, which
memfd pages do not touch) kept about 1.9 GB of host memory; with one, the run dies at the cap.
Each test takes a few seconds.
"""

from __future__ import annotations

import os

import pytest

from surrogate_dagster.sandbox import Sandbox, SandboxLimits
from surrogate_dagster.sandbox import cgroups

MEMFD_BOMB = r'''
import os, sys, time
kids = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        fds = []
        for _ in range(10):  # 10 x 64 MB per process, each file under RLIMIT_FSIZE
            fd = os.memfd_create("m")
            for _ in range(64):
                os.write(fd, b"x" * (1 << 20))
            fds.append(fd)
        time.sleep(1)
        os._exit(0)
    kids.append(pid)
sys.exit(any(os.waitpid(p, 0)[1] for p in kids))
'''

INODE_FLOOD = r'''
import time
t, n = time.monotonic(), 0
while time.monotonic() - t < 60:  # ~85k files reach the cap: ~1 s idle, longer on a loaded box
    open("/tmp/f%d" % n, "w").close()
    n += 1
print("created", n)
'''


def _cgroup_or_skip() -> None:
    h, why = cgroups.probe()
    if h is None:
        pytest.skip(f"no cgroup for the sandbox here: {why}")


def test_memfd_bomb_stops_at_the_run_cap() -> None:
    _cgroup_or_skip()
    lim = SandboxLimits(wall_s=10, cpu_s=10, memory_mb=256, nproc=16, fsize_mb=64, tmpfs_mb=16,
                        total_memory_mb=256)
    r = Sandbox(lim).run(MEMFD_BOMB)
    assert not r.ok and r.killed_reason == "memory", (r.exit_code, r.limit_hits, r.stderr[-300:])
    assert r.memory_cap.startswith("cgroup") and r.memory_peak_mb is not None
    assert r.memory_peak_mb <= 256, r.memory_peak_mb


def test_inode_flood_stops_at_the_run_cap() -> None:
    _cgroup_or_skip()
    lim = SandboxLimits(wall_s=90, cpu_s=90, memory_mb=256, nproc=16, tmpfs_mb=16, total_memory_mb=96)
    r = Sandbox(lim).run(INODE_FLOOD)
    # empty files take no tmpfs blocks: only the inode/dentry slab, charged to the run's cgroup
    assert not r.ok and r.killed_reason == "memory", (r.exit_code, r.stdout, r.stderr[-300:])
    assert r.memory_peak_mb is not None and r.memory_peak_mb <= 96, r.memory_peak_mb


def test_cgroup_is_removed_after_the_run() -> None:
    _cgroup_or_skip()
    sb = Sandbox(SandboxLimits(wall_s=5, memory_mb=256, nproc=8))
    seen: list[str] = []
    real_create = cgroups.create

    def spy(*a, **k):
        cg = real_create(*a, **k)
        seen.extend(cg.dirs)
        return cg

    cgroups.create = spy
    try:
        r = sb.run("import os\nos.fork() or os._exit(0)\nprint('ok')\n")
    finally:
        cgroups.create = real_create
    assert r.exit_code == 0 and r.memory_cap.startswith("cgroup") and seen
    assert not any(os.path.exists(d) for d in seen)


def test_without_a_cgroup_the_sandbox_says_so() -> None:
    with pytest.warns(RuntimeWarning, match="per process only"):
        sb = Sandbox(SandboxLimits(wall_s=5, memory_mb=256, nproc=8), cgroup=False)
    r = sb.run("print('hi')")
    assert r.stdout == "hi\n" and r.memory_cap == "per-process only" and r.memory_peak_mb is None
