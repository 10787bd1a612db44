"""The assert harness's channel is out of the candidate's reach; the candidate is its own module.

The supervisor (pid 1 of the sandbox) holds the run's nonce and the host's channel; the worker
runs the candidate's code and never had either. Here the candidate looks for them the ways a
process of the same uid could (its fds, /proc/1, ptrace, ``import __main__``), writes junk to
the one fd it has, and exits early; and an honest solution's own ``if __name__ == '__main__':``
demo does not run while the tests' does.
"""

from __future__ import annotations

import pytest

from surrogate_dagster.sandbox import Sandbox, SandboxLimits
from surrogate_dagster.sandbox.runners import run_python_asserts

ADD = "def add(a, b):\n    return a + b\n"


@pytest.fixture(scope="module")
def sb() -> Sandbox:
    return Sandbox(SandboxLimits(wall_s=10, cpu_s=10, memory_mb=512, nproc=16))


def test_the_supervisor_and_its_channel_cannot_be_reached(sb: Sandbox) -> None:
    probe = ADD + r'''
import os
FOUND = []
for part in ("environ", "fd", "fd/0", "fd/1", "mem", "maps"):
    try:
        p = "/proc/1/" + part
        os.listdir(p) if part == "fd" else open(p, "rb").read(64)
        FOUND.append(part)
    except OSError:
        pass
FDS = sorted(int(f) for f in os.listdir("/proc/self/fd"))
try:
    import ctypes
    PTRACE = ctypes.CDLL(None).ptrace(16, 1, 0, 0)  # PTRACE_ATTACH to the supervisor
except Exception:
    PTRACE = -1
import __main__
OWN_MAIN = __main__.__dict__ is globals()
def found():
    return FOUND
def fds():
    return FDS
'''
    run = run_python_asserts(sb, probe, ["assert found() == []", "assert PTRACE == -1",
                                         "assert fds() == [0, 1, 2, 3, 4]", "assert OWN_MAIN is True"])
    assert run.report["errors"] == [None] * 4, run.report


def test_junk_on_the_report_pipe_fails_every_test(sb: Sandbox) -> None:
    code = ADD + "import os\nos.write(3, b'{\"t\": 0, \"end\": null}\\nnot json\\n')\n"
    run = run_python_asserts(sb, code, ["assert add(2, 2) == 4"])
    assert run.report["tampered"] and run.report["errors"][0].startswith("tampered")


def test_an_early_exit_leaves_the_rest_without_a_result(sb: Sandbox) -> None:
    code = "import os\ndef add(a, b):\n    if a == 5:\n        os._exit(0)\n    return a + b\n"
    run = run_python_asserts(sb, code, ["assert add(2, 2) == 4", "assert add(5, 1) == 6", "assert add(0, 0) == 0"])
    assert run.report["errors"] == [None, "no_result", "no_result"]
    assert run.report["worker"]["exit"] == 0


def test_the_candidate_loads_as_its_module_and_the_tests_run_as_main(sb: Sandbox) -> None:
    code = ADD + "if __name__ == '__main__':\n    print(add(1, 2))\n    input()  # a demo that would fail here\n" \
                 "LOADED_AS = __name__\n"
    tests = ["assert LOADED_AS == 'solution'", "if __name__ == '__main__':\n    assert add(1, 2) == 3",
             "from solution import add as a2\nassert a2(3, 4) == 7"]
    run = run_python_asserts(sb, code, tests)
    assert run.report["errors"] == [None] * 3, run.report
