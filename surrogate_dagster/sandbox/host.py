"""Host-side helpers of the sandbox: the interpreter's layout inside, and process bookkeeping."""

from __future__ import annotations

import glob
import os
import signal
import subprocess
import sys
import time


class SandboxError(RuntimeError):
    """The sandbox itself cannot run here (bwrap missing, user namespaces disabled, ...)."""


def world_readable(path: str) -> bool:
    """True if any uid may read ``path`` (a directory) and traverse every ancestor."""
    p = os.path.abspath(path)
    try:
        if os.stat(p).st_mode & 0o005 != 0o005:
            return False
        while p != "/":
            p = os.path.dirname(p)
            if not os.stat(p).st_mode & 0o001:
                return False
    except FileNotFoundError:
        return False
    return True


def interpreter_layout(python: str) -> tuple[list[str], list[tuple[str, bytes]]]:
    """bwrap args (and data files) that make ``python`` runnable inside, at the same path.

    Plain case: bind the interpreter's prefixes (venv, base install) read-only where they are.
    The leased sandbox uids cannot traverse a 0700 /root, so a venv whose base is a pyenv under
    /root is rebuilt inside: its lib/ bound read-only, its bin/python3 a link to Debian's
    /usr/bin/python3.X (same minor version, so compiled wheels keep working) and a pyvenv.cfg
    whose home is /usr/bin.
    """
    same = os.path.abspath(python) == os.path.abspath(sys.executable)
    # editable installs' .pth hooks point into the host repo (not mounted) and cost ~40 ms of
    # imports per start: mask them with /dev/null
    masks = [a for pth in sorted(glob.glob(f"{sys.prefix}/lib/python*/site-packages/__editable__*.pth"))
             for a in ("--ro-bind", "/dev/null", pth)] if same else []
    if not same:
        prefix = os.path.dirname(os.path.dirname(os.path.abspath(python)))
        real = os.path.dirname(os.path.dirname(os.path.realpath(python)))
        binds = [p for p in dict.fromkeys([prefix, real]) if not p.startswith("/usr")]
        hidden = [p for p in binds if os.geteuid() == 0 and not world_readable(p)]
        if hidden:
            raise SandboxError(f"{hidden} not readable by the sandbox uids: use an interpreter "
                               "installed in a world-readable place")
        return [a for p in binds for a in ("--ro-bind", p, p)], []
    prefixes = [p for p in dict.fromkeys([sys.prefix, sys.base_prefix]) if not p.startswith("/usr")]
    if os.geteuid() != 0 or all(world_readable(p) for p in prefixes):
        return [a for p in prefixes for a in ("--ro-bind", p, p)] + masks, []
    ver = f"{sys.version_info.major}.{sys.version_info.minor}"
    system_py = f"/usr/bin/python{ver}"
    venv = sys.prefix
    if venv == sys.base_prefix or not os.path.exists(system_py) or not world_readable(venv):
        raise SandboxError(f"{sys.base_prefix} is not readable by the sandbox uids and there is no "
                           f"venv + {system_py} to rebuild it from: install python{ver} (Debian) or "
                           f"pass Sandbox(python=...) with an interpreter outside /root")
    args = ["--ro-bind", f"{venv}/lib", f"{venv}/lib", "--symlink", "lib", f"{venv}/lib64",
            "--dir", f"{venv}/bin"]
    for name in ("python", "python3", f"python{ver}"):
        args += ["--symlink", system_py, f"{venv}/bin/{name}"]
    cfg = f"home = /usr/bin\ninclude-system-site-packages = false\nversion = {ver}\n"
    return args + masks, [(f"{venv}/pyvenv.cfg", cfg.encode())]


def reap(proc: subprocess.Popen, timeout: float | None) -> bool:
    """Wait for bwrap with wait4() (its rusage includes the program it reaped); False on timeout."""
    if proc.returncode is not None:
        return True
    deadline = None if timeout is None else time.monotonic() + timeout
    delay = 0.0005
    while True:
        try:
            pid, status, ru = os.wait4(proc.pid, 0 if deadline is None else os.WNOHANG)
        except ChildProcessError:  # reaped elsewhere (SIGCHLD ignored): status unknown, say failed
            proc.returncode = 255
            return True
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            proc.sbx_cpu_s = ru.ru_utime + ru.ru_stime  # type: ignore[attr-defined]
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(delay)
        delay = min(delay * 2, 0.02)


def count_uid_processes(uid: int) -> int:
    n = 0
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if os.stat(f"/proc/{pid}").st_uid == uid:
                    n += 1
            except FileNotFoundError:
                pass
    return n


def kill_uid_processes(uid: int) -> tuple[int, ...]:
    """SIGKILL every host process whose owner is ``uid`` (root only; a leased uid is ours)."""
    killed = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if os.stat(f"/proc/{pid}").st_uid == uid:
                    os.kill(int(pid), signal.SIGKILL)
                    killed.append(int(pid))
            except (FileNotFoundError, ProcessLookupError):
                pass
    return tuple(killed)
