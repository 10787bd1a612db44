"""A managed OpenAI-compatible inference server (``vllm serve``), Dagster-free.

:class:`ManagedServer` serves one checkpoint for the length of a ``with`` block: it builds the
``vllm serve`` command from :class:`ServerSpec` (the profile's ``phases.serving.vllm``) and the
checkpoint's :class:`~.client.ModelRef` (base model, plus the adapter as a LoRA module under the
checkpoint's name with ``--enable-lora --max-lora-rank``), starts it in its own process group,
copies its output to a log file and to a callback line by line, and waits until ``/health``
answers 200 and ``/v1/models`` lists the served name. On leaving the block (success, exception,
KeyboardInterrupt) the whole process group gets SIGTERM, then SIGKILL after a grace period:
vLLM forks engine workers, and killing only the parent leaves them holding the GPU.

A server that exits during start-up, or is not ready in time, raises :class:`ServerStartError`
with the exit status and the tail of its log, scrubbed of secrets. ``external_url`` reuses a
server someone else runs: it is checked the same way and never stopped.

``command`` is the prefix the arguments are appended to; the tests (and a CPU machine) put
``python -m surrogate_dagster.inference.standin_server`` there, which takes the same arguments.
"""

from __future__ import annotations

import atexit
import os
import signal
import socket
import subprocess
import threading
import time
import weakref
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from .client import ModelRef

DEFAULT_MAX_LORA_RANK = 64
LOG_TAIL_LINES = 40


class ServerStartError(RuntimeError):
    """The server did not become ready: it exited, timed out, or serves something else."""


@dataclass(frozen=True)
class ServerSpec:
    """How to run the server (the profile's ``phases.serving.vllm``)."""

    command: tuple[str, ...] = ("vllm", "serve")
    host: str = "127.0.0.1"
    port: int = 8000
    max_context: int = 32768
    gpu_memory_utilization: float = 0.9
    max_lora_rank: int = DEFAULT_MAX_LORA_RANK
    dtype: str = "bfloat16"
    extra_args: tuple[str, ...] = ()
    external_url: str | None = None
    # NAME of the variable holding the key the server requires; handed to it as VLLM_API_KEY (vLLM's
    # own variable for --api-key), so the value never appears on a command line
    api_key_env: str | None = None
    startup_timeout_s: float = 900.0
    stop_timeout_s: float = 30.0
    log_dir: str = "var/work/serving"
    # Environment variables whose values are scrubbed from every log line kept or raised.
    secret_envs: tuple[str, ...] = field(default=("HF_TOKEN", "WASABI_ACCESS_KEY", "WASABI_SECRET",
                                                  "ANTHROPIC_API_KEY"))

    @property
    def base_url(self) -> str:
        return (self.external_url or f"http://{self.host}:{self.port}").rstrip("/")


def served_name(ref: ModelRef) -> str:
    """The model name requests use: the checkpoint name for an adapter (its ``--lora-modules``
    name), else the base model's path or Hub id (what ``vllm serve`` calls a model by default)."""
    return ref.name if ref.adapter_dir else ref.model_dir


def serve_command(spec: ServerSpec, ref: ModelRef) -> list[str]:
    """The full argv: ``spec.command`` + model + serving flags (+ the adapter as a LoRA module)."""
    if not spec.command:
        raise ValueError("serving command is empty")
    cmd = [*spec.command, ref.model_dir, "--host", spec.host, "--port", str(spec.port),
           "--max-model-len", str(spec.max_context), "--gpu-memory-utilization", str(spec.gpu_memory_utilization),
           "--dtype", spec.dtype]
    if ref.model_revision:
        cmd += ["--revision", ref.model_revision]
    if ref.adapter_dir:
        cmd += ["--enable-lora", "--max-lora-rank", str(ref.max_lora_rank or spec.max_lora_rank),
                "--lora-modules", f"{ref.name}={ref.adapter_dir}"]
    return cmd + list(spec.extra_args)


def _secret_values(spec: ServerSpec) -> tuple[str, ...]:
    names = (*spec.secret_envs, *([spec.api_key_env] if spec.api_key_env else []))
    return tuple(v for v in (os.environ.get(n) for n in names) if v)


def scrub_line(text: str, secrets: Sequence[str]) -> str:
    """``text`` with every secret value (and any credential the LLM client's scrubber finds) replaced."""
    from ..llm.client import scrub

    return scrub(text, tuple(secrets))


def _port_open(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex((host, port)) == 0


# Servers still running when the interpreter exits (a step killed between start and the end of
# its `with` block by something other than an exception) are stopped here.
_LIVE: "weakref.WeakSet[ManagedServer]" = weakref.WeakSet()


@atexit.register
def _stop_leftovers() -> None:
    for srv in list(_LIVE):
        srv.stop()


class ManagedServer:
    """One server for one checkpoint; a context manager (see the module docstring)."""

    def __init__(self, spec: ServerSpec, ref: ModelRef, *, log: Callable[[str], None] = print,
                 log_file: str | Path | None = None, poll_s: float = 0.5) -> None:
        self.spec, self.ref, self._sink, self.poll_s = spec, ref, log, poll_s
        self.served_name = served_name(ref)
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in ref.name)
        self.log_file = Path(log_file) if log_file else Path(spec.log_dir) / f"{safe}-{spec.port}.log"
        self._proc: subprocess.Popen | None = None
        self._pump: threading.Thread | None = None
        self._tail: deque[str] = deque(maxlen=LOG_TAIL_LINES)
        self.last_pid: int | None = None  # the latest process started (also its process group id)
        self._secrets = _secret_values(spec)

    @property
    def base_url(self) -> str:
        return self.spec.base_url

    @property
    def managed(self) -> bool:
        return self.spec.external_url is None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def command(self) -> list[str]:
        return serve_command(self.spec, self.ref)

    # -------------------------------------------------------------- lifecycle
    def __enter__(self) -> "ManagedServer":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> str:
        """Start (or check the external server), wait until ready; the base URL."""
        if not self.managed:
            self._say(f"serving: reusing the external server at {self.base_url}")
            self._wait_ready(deadline=time.monotonic() + self.spec.startup_timeout_s)
            return self.base_url
        if self._proc is not None:
            return self.base_url
        if _port_open(self.spec.host, self.spec.port):
            raise ServerStartError(f"serving: {self.spec.host}:{self.spec.port} is already in use; stop that "
                                   "process, pick another port, or set external_url to reuse it")
        cmd = self.command()
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        self._say(f"serving: starting {' '.join(cmd)} (log: {self.log_file})")
        # Own session = own process group: stop() reaches the engine workers the server forks.
        env = dict(os.environ)
        if self.spec.api_key_env:
            if not os.environ.get(self.spec.api_key_env):
                raise ServerStartError(f"serving: api_key_env names {self.spec.api_key_env}, which is not set")
            env["VLLM_API_KEY"] = os.environ[self.spec.api_key_env]
        self._proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                      start_new_session=True, text=True, errors="replace", bufsize=1, env=env)
        self.last_pid = self._proc.pid
        _LIVE.add(self)
        self._pump = threading.Thread(target=self._copy_output, args=(self._proc,), daemon=True,
                                      name=f"serving-log-{self._proc.pid}")
        self._pump.start()
        t0 = time.monotonic()
        try:
            self._wait_ready(deadline=t0 + self.spec.startup_timeout_s)
        except BaseException:
            self.stop()
            raise
        self._say(f"serving: {self.served_name} ready at {self.base_url} after {time.monotonic() - t0:.1f}s "
                 f"(pid {self._proc.pid})")
        return self.base_url

    def stop(self) -> None:
        """SIGTERM to the server's process group, SIGKILL after ``stop_timeout_s``; idempotent."""
        proc, self._proc = self._proc, None
        _LIVE.discard(self)
        if proc is None:
            return
        if proc.poll() is None:
            self._signal_group(proc, signal.SIGTERM)
            try:
                proc.wait(timeout=self.spec.stop_timeout_s)
            except subprocess.TimeoutExpired:
                self._say(f"serving: pid {proc.pid} ignored SIGTERM for {self.spec.stop_timeout_s}s; SIGKILL")
                self._signal_group(proc, signal.SIGKILL)
                proc.wait()
        # Workers that outlived their parent still belong to the group.
        self._signal_group(proc, signal.SIGKILL)
        if self._pump is not None:
            self._pump.join(timeout=5)
        self._say(f"serving: stopped {self.served_name} (exit status {proc.returncode})")

    @staticmethod
    def _signal_group(proc: subprocess.Popen, sig: int) -> None:
        try:
            os.killpg(proc.pid, sig)  # pgid == pid: the process leads its own session
        except ProcessLookupError:
            pass

    # -------------------------------------------------------------- readiness and logs
    def _copy_output(self, proc: subprocess.Popen) -> None:
        assert proc.stdout is not None
        with open(self.log_file, "a", encoding="utf-8") as f:
            for raw in proc.stdout:
                line = scrub_line(raw.rstrip("\n"), self._secrets)
                self._tail.append(line)
                f.write(line + "\n")
                f.flush()
                self._sink(f"[server] {line}")  # already scrubbed

    def _say(self, msg: str) -> None:
        self._sink(scrub_line(msg, self._secrets))

    def log_tail(self) -> str:
        return "\n".join(self._tail)

    def _fail(self, why: str) -> ServerStartError:
        if self._pump is not None and self._proc is not None and self._proc.poll() is not None:
            self._pump.join(timeout=5)  # the last lines explain the exit
        tail = self.log_tail() or "(no output)"
        return ServerStartError(scrub_line(
            f"serving {self.served_name}: {why}\ncommand: {' '.join(self.command())}\nlog: {self.log_file}\n"
            f"last {LOG_TAIL_LINES} log lines:\n{tail}", self._secrets))

    def _wait_ready(self, deadline: float) -> None:
        import httpx

        key = os.environ.get(self.spec.api_key_env) if self.spec.api_key_env else None
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        last = "no answer yet"
        with httpx.Client(base_url=self.base_url, timeout=5.0, headers=headers) as http:
            while True:
                if self._proc is not None and self._proc.poll() is not None:
                    raise self._fail(f"the server exited with status {self._proc.returncode} during start-up")
                try:
                    health = http.get("/health")
                    if health.status_code == 200:
                        models = http.get("/v1/models")
                        if models.status_code != 200:
                            last = f"/v1/models: HTTP {models.status_code}"
                        else:
                            ids = [m.get("id") for m in models.json().get("data", [])]
                            if self.served_name in ids:
                                return
                            if not self.managed:
                                raise ServerStartError(scrub_line(
                                    f"serving: the external server at {self.base_url} does not serve "
                                    f"{self.served_name!r} (it serves {ids})", self._secrets))
                            last = f"/v1/models lists {ids}, not {self.served_name!r} yet"
                    else:
                        last = f"/health: HTTP {health.status_code}"
                except httpx.TransportError as e:
                    last = f"{type(e).__name__}: {e}"
                if time.monotonic() >= deadline:
                    if self.managed:
                        raise self._fail(f"not ready after {self.spec.startup_timeout_s:.0f}s ({last})")
                    raise ServerStartError(f"serving: the external server at {self.base_url} is not ready "
                                           f"after {self.spec.startup_timeout_s:.0f}s ({last})")
                time.sleep(self.poll_s)


class ServerSlot:
    """At most one managed server at a time (one GPU per step): :meth:`ensure` returns the running
    server when it serves the same checkpoint the same way, else stops it and starts the one asked for."""

    def __init__(self) -> None:
        self.server: ManagedServer | None = None

    def ensure(self, spec: ServerSpec, ref: ModelRef, *, log: Callable[[str], None] = print) -> ManagedServer:
        cur = self.server
        if cur is not None and cur.spec == spec and cur.ref == ref:
            return cur
        self.stop()
        srv = ManagedServer(spec, ref, log=log)
        srv.start()
        self.server = srv
        return srv

    def stop(self) -> None:
        srv, self.server = self.server, None
        if srv is not None:
            srv.stop()
