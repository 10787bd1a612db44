"""Model repos from the Hub into a local cache: one call, one local folder, clear errors.

``fetch_model(repo_id, revision, source)`` downloads a model repo at a revision with
``huggingface_hub.snapshot_download`` (only the files a loader reads: configs, tokenizer files,
weights) and returns the snapshot folder, which ``from_pretrained`` then loads with
``local_files_only=True``. ``ModelSource`` is what a profile says about where models come from:
the Hub's endpoint (``hub.endpoint``, else ``HF_ENDPOINT``, else huggingface.co), the NAME of the
variable holding the token (``hub.token_env``) and the cache folder. It is frozen, so the callers'
per-process memos can key on it.

An offline profile (``hub.mode: offline``) gives an offline source: nothing is fetched, and a
loader reads the local folder or HF cache it was given, as it would without this module.

The Hub's exceptions become ``ModelFetchError`` with a message that says what to do: a gated repo
whose terms the token's account has not accepted names the repo and the page to accept them on
(``https://huggingface.co/<repo>``), a missing or rejected token names the variable, an unknown
revision names the repo and the revision, an unreachable endpoint names the endpoint. The token's
value is never part of a message: it is read from the environment at the call and scrubbed from
any text the Hub sent back.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..paths import resolve_repo_path

HUB_URL = "https://huggingface.co"
# What transformers' from_pretrained reads of a model repo; README, images, other frameworks'
# weights (.bin next to .safetensors, ONNX, GGUF) stay on the Hub.
MODEL_FILES = ("*.json", "*.safetensors", "*.txt", "*.model", "*.jinja", "*.py", "*.tiktoken")
# The cache folder under a profile's work dir, when HF_HOME / HF_HUB_CACHE do not name one.
CACHE_SUBDIR = "hf-models"


class ModelFetchError(RuntimeError):
    """A model repo could not be fetched; the message says why and what to do."""


@dataclass(frozen=True)
class ModelSource:
    """Where model repos come from (see the module docstring).

    ``offline``: fetch nothing (the offline profile). ``endpoint``: the Hub's URL, None for
    ``HF_ENDPOINT`` or huggingface.co. ``token_env``: the environment variable holding the token
    (read at each fetch; unset means anonymous). ``cache_dir``: the huggingface_hub cache folder,
    None for huggingface_hub's own default (HF_HUB_CACHE / HF_HOME)."""

    offline: bool = False
    endpoint: str | None = None
    token_env: str = "HF_TOKEN"
    cache_dir: str | None = None

    @classmethod
    def from_hub(cls, hub: Any, work_dir: str | Path | None = None) -> "ModelSource":
        """The source a profile's ``hub`` section (``catalog.models.HubConfig`` or a mapping) and
        work dir give: the cache under ``<work_dir>/hf-models`` unless ``HF_HUB_CACHE`` or
        ``HF_HOME`` is set (an operator who set them chose the cache)."""
        get = hub.get if isinstance(hub, dict) else lambda k, d=None: getattr(hub, k, d)
        if get("mode") == "offline":
            return cls(offline=True)
        cache = None
        if work_dir is not None and not (os.environ.get("HF_HUB_CACHE") or os.environ.get("HF_HOME")):
            cache = str(resolve_repo_path(work_dir) / CACHE_SUBDIR)
        return cls(offline=False, endpoint=get("endpoint"), token_env=get("token_env") or "HF_TOKEN",
                   cache_dir=cache)

    def resolved_endpoint(self) -> str:
        """The endpoint requests go to: the profile's, else ``HF_ENDPOINT`` read now
        (huggingface_hub reads it once, at import), else huggingface.co."""
        return (self.endpoint or os.environ.get("HF_ENDPOINT") or HUB_URL).rstrip("/")


def fetch_model(repo_id: str, revision: str | None = None, source: ModelSource | None = None,
                allow_patterns: tuple[str, ...] | None = MODEL_FILES) -> Path:
    """The local folder of ``repo_id`` at ``revision`` (None: ``main``), downloaded through the
    Hub into the source's cache (files already there are not fetched again).

    Raises ``ModelFetchError`` (see the module docstring); ValueError for an offline source,
    which has nothing to fetch from."""
    source = source or ModelSource()
    if source.offline:
        raise ValueError(f"{repo_id}: an offline source fetches nothing; load a local folder instead")
    from huggingface_hub import snapshot_download

    token = os.environ.get(source.token_env) or None
    endpoint = source.resolved_endpoint()
    try:
        folder = snapshot_download(repo_id, repo_type="model", revision=revision, cache_dir=source.cache_dir,
                                   token=token if token else False, endpoint=endpoint,
                                   allow_patterns=list(allow_patterns) if allow_patterns else None)
    except Exception as e:  # noqa: BLE001 - every Hub failure is mapped, the rest re-raised as is
        mapped = explain_fetch_error(e, repo_id, revision, source, token_set=bool(token))
        if mapped is None:
            raise
        raise mapped from _scrubbed_cause(e, token)
    return Path(folder)


def model_folder(model: str, source: ModelSource | None = None, revision: str | None = None) -> str:
    """What ``from_pretrained(..., local_files_only=True)`` is given for ``model``: a local
    directory as it is; a model id fetched through the Hub into the source's cache when ``source``
    is online; else the id itself, which transformers then finds in the local HF cache or not at
    all (the offline profile: nothing is downloaded)."""
    if Path(model).is_dir() or source is None or source.offline:
        return model
    return str(fetch_model(model, revision, source))


def explain_fetch_error(error: BaseException, repo_id: str, revision: str | None, source: ModelSource,
                        token_set: bool) -> ModelFetchError | None:
    """The ``ModelFetchError`` for a huggingface_hub failure, None for an error that is not the Hub's."""
    from huggingface_hub.errors import (GatedRepoError, HfHubHTTPError, LocalEntryNotFoundError,
                                        OfflineModeIsEnabled, RepositoryNotFoundError, RevisionNotFoundError)

    at = f"{repo_id}@{revision or 'main'}"
    endpoint = source.resolved_endpoint()
    token_var = f"${source.token_env}"
    accept = f"{HUB_URL}/{repo_id}"
    if isinstance(error, GatedRepoError):
        if not token_set:
            return ModelFetchError(f"{repo_id} is a gated model: set {token_var} to a token of an account "
                                   f"that accepted its terms at {accept} ({token_var} is not set)")
        return ModelFetchError(f"{repo_id} is a gated model and the account of the token in {token_var} has not "
                               f"accepted its terms: accept them at {accept}, then run again")
    if isinstance(error, RevisionNotFoundError):
        return ModelFetchError(f"{repo_id} has no revision {revision!r} on {endpoint}: check the pin "
                               f"(a commit sha or branch of the repo)")
    if isinstance(error, RepositoryNotFoundError):
        hint = "it is private or gated and no token is set" if not token_set else \
            f"the token in {token_var} cannot read it"
        return ModelFetchError(f"{repo_id} was not found on {endpoint} (misspelt id, or {hint})")
    if isinstance(error, HfHubHTTPError):
        status = getattr(getattr(error, "response", None), "status_code", None)
        if status == 401:
            what = f"the token in {token_var} was rejected (invalid or expired)" if token_set else \
                f"{endpoint} asks for a token: set {token_var}"
            return ModelFetchError(f"fetching {at}: {what}")
        if status == 403:
            return ModelFetchError(f"fetching {at}: the token in {token_var} lacks the permission to read it")
        return ModelFetchError(f"fetching {at} from {endpoint} failed with HTTP {status}: the Hub may be down, "
                               f"try again later")
    if isinstance(error, (LocalEntryNotFoundError, OfflineModeIsEnabled)) or _is_connection_error(error):
        if isinstance(error, OfflineModeIsEnabled) or isinstance(error.__cause__, OfflineModeIsEnabled) \
                or os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
            return ModelFetchError(f"fetching {at}: HF_HUB_OFFLINE is set, so nothing is downloaded, and "
                                   f"the cache ({source.cache_dir or 'HF_HOME'}) does not hold it")
        return ModelFetchError(f"fetching {at}: cannot reach the Hub at {endpoint} (no connection or a "
                               f"timeout), and the cache does not hold it")
    return None


def _is_connection_error(error: BaseException) -> bool:
    """A failed connection or timeout, in the HTTP client huggingface_hub uses or the stdlib's terms."""
    try:
        import httpx2

        net = (httpx2.ConnectError, httpx2.TimeoutException)
    except ImportError:  # an older huggingface_hub on plain httpx / requests
        net = ()
    return isinstance(error, (ConnectionError, TimeoutError, *net))


def _scrubbed_cause(error: BaseException, token: str | None) -> BaseException:
    """The original error as the cause, with the token's value cut out of its text (a server
    message may echo a header; tracebacks print the cause)."""
    if token and token in str(error):
        return RuntimeError(f"{type(error).__name__}: {str(error).replace(token, '***')}")
    return error
