"""An OpenAI-compatible endpoint for a checkpoint, for the official harnesses that run out of process
(bfcl-eval, lm-evaluation-harness) and talk to a served model, as their leaderboards run them.

A client that already talks to a server (``VLLMServerInference``: the profile's ``vllm serve``)
is used as it is. An in-process client (the local profile's transformers backend) gets the
transformers stand-in for ``vllm serve`` (``inference/standin_server.py``) started for the same
checkpoint on a free local port, and stopped on leaving the block.

The harness process gets the key, when the server needs one, through an environment variable of
its own (:data:`KEY_ENV`), never on a command line or in a spec file.
"""

from __future__ import annotations

import socket
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

KEY_ENV = "SURROGATE_HARNESS_API_KEY"
TOKENIZER_FILES = ["*.json", "*.jinja", "*.txt", "*.model", "*.tiktoken"]


@dataclass(frozen=True)
class Endpoint:
    base_url: str          # without /v1
    served_name: str       # the name requests use (an adapter's --lora-modules name)
    tokenizer_dir: str     # a local directory with the checkpoint's tokenizer and config
    api_key: str | None    # hand to the harness through KEY_ENV only
    managed_here: bool     # the stand-in was started for this block

    def child_env(self) -> dict[str, str]:
        """The environment variables the harness process needs (the key, if any)."""
        return {KEY_ENV: self.api_key} if self.api_key else {}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tokenizer_dir(ref, work_dir: Path) -> str:
    """A local directory with the tokenizer and config: the model dir, or those files of a Hub base."""
    if Path(ref.model_dir).is_dir():
        return ref.model_dir
    from huggingface_hub import snapshot_download

    return snapshot_download(ref.model_dir, revision=ref.model_revision, allow_patterns=TOKENIZER_FILES,
                             local_dir=str(work_dir / "tokenizer" / ref.model_dir.replace("/", "__")))


@contextmanager
def openai_endpoint(client, *, work_dir: Path, log: Callable[[str], None] | None = None) -> Iterator[Endpoint]:
    """The endpoint serving ``client``'s checkpoint (see the module docstring)."""
    from ...inference import VLLMServerInference
    from ...inference.server import ManagedServer, ServerSpec

    ref = client.ref
    if isinstance(client, VLLMServerInference):
        auth = client._http.headers.get("Authorization", "")
        yield Endpoint(base_url=str(client._http.base_url).rstrip("/"), served_name=client.served_name,
                       tokenizer_dir=tokenizer_dir(ref, work_dir), api_key=auth.removeprefix("Bearer ") or None,
                       managed_here=False)
        return
    spec = ServerSpec(command=(sys.executable, "-m", "surrogate_dagster.inference.standin_server"),
                      port=free_port(), max_context=client.max_context, dtype="float32",
                      log_dir=str(work_dir / "serving"), startup_timeout_s=300.0)
    with ManagedServer(spec, ref, log=log or (lambda _m: None)) as srv:
        yield Endpoint(base_url=srv.base_url, served_name=srv.served_name, tokenizer_dir=tokenizer_dir(ref, work_dir),
                       api_key=None, managed_here=True)
