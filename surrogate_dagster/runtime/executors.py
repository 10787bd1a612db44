"""Run curation blocks at scale on datatrove's executors, chosen by the profile.

The profile's `phases.ops.datatrove_executor` names the executor and its settings; curation's
seam (`curation.executor.apply_blocks`) reads them. Besides datatrove's three executors, two
kinds run without datatrove: `in_process` (the default: the step's own process) and `pool`
(this machine's forked worker pool):

    datatrove_executor: {kind: in_process}
    datatrove_executor: {kind: pool, workers: 2, chunk_rows: 256}
    datatrove_executor: {kind: local, tasks: 4, workers: 2}                 # one machine, processes
    datatrove_executor: {kind: slurm, tasks: 64, partition: cpu, time: "02:00:00",
                         cpus_per_task: 2, mem_per_cpu_gb: 4, venv_path: /opt/venv/bin/activate}
    datatrove_executor: {kind: ray, tasks: 64, cpus_per_task: 1, address: "ray://head:10001",
                         io_root: "s3://bucket/curation-runs"}

`io_root` (datatrove kinds) is where a run's rows travel: a folder every node reaches. An
`s3://` io_root is read and written through pyarrow's S3 client wrapped as an fsspec filesystem
(:class:`ArrowS3FileSystem`, registered for `s3://`): s3fs cannot share a resolve with the pinned
boto3 (every aiobotocore release pins an older botocore). `io_storage` names the endpoint, region
and the VARIABLES holding the keys; `executor_settings` fills it from the profile's S3
`object_store`, and :func:`io_filesystems` turns it into fsspec options for the run (values read
at that moment, never stored in the settings):

    datatrove_executor: {kind: ray, address: auto, io_root: "s3://bucket/curation/block-runs"}
    # -> io_storage: {endpoint_url: ..., region: ..., access_key_env: WASABI_ACCESS_KEY, secret_key_env: WASABI_SECRET}

A curation block (a row -> None | drop-reason function, see curation/) becomes a datatrove
filter with `BlockFilter`; rows travel as JSON in the document text, so every field survives;
dropped rows go to an exclusion folder with their reason. `curation_pipeline` builds the
reader -> filters -> writer pipeline over any datatrove folder (local path, s3://...), and
`make_executor` returns the profile's executor for it. Completed ranks are skipped on re-run
(datatrove's `completions`): give each run its own `logging_dir` unless resuming on purpose.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlparse

from datatrove.data import Document
from datatrove.executor.base import PipelineExecutor
from datatrove.pipeline.filters.base_filter import BaseFilter
from datatrove.pipeline.readers import JsonlReader
from datatrove.pipeline.writers import JsonlWriter
from fsspec.implementations.arrow import ArrowFSWrapper

Block = Callable[[dict], str | None]

DATATROVE_KINDS = ("local", "slurm", "ray")
ALLOWED = {
    "in_process": set(),
    "pool": {"workers", "chunk_rows"},
    "local": {"tasks", "workers", "start_method", "skip_completed", "randomize_start_duration", "io_root",
              "io_storage"},
    "slurm": {"tasks", "workers", "time", "partition", "cpus_per_task", "mem_per_cpu_gb", "job_name", "qos",
              "env_command", "condaenv", "venv_path", "sbatch_args", "max_array_size", "slurm_logs_folder",
              "skip_completed", "requeue", "srun_args", "tasks_per_job", "io_root", "io_storage"},
    "ray": {"tasks", "workers", "cpus_per_task", "mem_per_cpu_gb", "skip_completed", "address", "tasks_per_job",
            "time", "ray_remote_kwargs", "randomize_start_duration", "io_root", "io_storage"},
}
REQUIRED = {"slurm": {"tasks", "time", "partition"}}
# how the settings reach an s3:// io_root: names only (the keys' values stay in the environment)
IO_STORAGE_KEYS = {"endpoint_url", "region", "access_key_env", "secret_key_env"}
NOT_EXECUTOR_ARGS = ("kind", "address", "io_root", "io_storage")


def executor_settings(profile) -> dict[str, Any]:
    """The profile's executor section for curation blocks (default: in_process), validated. An
    ``s3://`` io_root without its own ``io_storage`` gets the S3 object store's endpoint, region
    and key variable names (the store and the run folders live in the same bucket service)."""
    cfg = dict((profile.phases.get("ops") or {}).get("datatrove_executor") or {"kind": "in_process"})
    store = profile.object_store
    if str(cfg.get("io_root") or "").startswith("s3://") and "io_storage" not in cfg and store.kind == "s3":
        cfg["io_storage"] = {k: v for k, v in {"endpoint_url": store.endpoint_url, "region": store.region,
                                               "access_key_env": store.access_key_env,
                                               "secret_key_env": store.secret_key_env}.items() if v}
    validate_settings(cfg)
    return cfg


def validate_settings(cfg: dict[str, Any]) -> None:
    """Unknown kinds/keys and missing Slurm essentials are errors naming what was expected."""
    kind = cfg.get("kind")
    if kind not in ALLOWED:
        raise ValueError(f"datatrove_executor.kind must be one of {sorted(ALLOWED)}, got {kind!r}")
    extra = set(cfg) - ALLOWED[kind] - {"kind"}
    if extra:
        raise ValueError(f"datatrove_executor ({kind}): unknown keys {sorted(extra)}; allowed {sorted(ALLOWED[kind])}")
    missing = REQUIRED.get(kind, set()) - set(cfg)
    if missing:
        raise ValueError(f"datatrove_executor ({kind}): missing {sorted(missing)}")
    storage = cfg.get("io_storage")
    if storage is not None:
        if not isinstance(storage, dict) or set(storage) - IO_STORAGE_KEYS:
            raise ValueError(f"datatrove_executor ({kind}).io_storage: a mapping of {sorted(IO_STORAGE_KEYS)}, "
                             f"got {storage!r}")
        if cfg.get("io_root") and not str(cfg["io_root"]).startswith("s3://"):
            raise ValueError(f"datatrove_executor ({kind}).io_storage is for an s3:// io_root, got "
                             f"io_root {cfg.get('io_root')!r}")


class ArrowS3FileSystem(ArrowFSWrapper):
    """``s3://`` for fsspec (and so for datatrove's folders) over ``pyarrow.fs.S3FileSystem``.

    The constructor's keywords are fsspec's storage options: a pickled instance (a Ray task's
    pipeline) is rebuilt from them on the worker, endpoint and keys included. A forked process
    (datatrove's local executor) makes its own S3 client on first use rather than share the
    parent's connection pool. The AWS SDK under pyarrow is not fork-safe as a whole: ranks forked
    from a process that had loaded the whole code location were seen to hang on their first
    request, so an s3:// io_root belongs with Ray (the cluster profile) and the local kind with a
    local io_root (production)."""

    protocol = ("s3", "s3a")

    def __init__(self, endpoint_url: str | None = None, region: str | None = None, key: str | None = None,
                 secret: str | None = None, **kwargs: Any) -> None:
        opts: dict[str, Any] = {"region": region, "access_key": key, "secret_key": secret}
        if endpoint_url:
            url = urlparse(endpoint_url)
            opts.update(endpoint_override=url.netloc or url.path, scheme=url.scheme or "https")
        # S3-compatible services (Wasabi, moto) answer path-style requests everywhere
        self._arrow_opts = {**{k: v for k, v in opts.items() if v is not None}, "force_virtual_addressing": False,
                            "background_writes": False}
        super().__init__(self._new_client(), **kwargs)

    def _new_client(self):
        from pyarrow.fs import S3FileSystem

        self._client_pid = os.getpid()
        return S3FileSystem(**self._arrow_opts)

    @property
    def fs(self):
        if self._client_pid != os.getpid():
            self._fs = self._new_client()
        return self._fs

    @fs.setter
    def fs(self, value) -> None:
        self._fs = value

    @classmethod
    def _strip_protocol(cls, path):
        path = path[0] if isinstance(path, list) else path
        for proto in cls.protocol:
            if path.startswith(f"{proto}://"):
                path = path[len(proto) + 3:]
        return path.rstrip("/")


def io_storage_options(cfg: dict[str, Any]) -> dict[str, Any]:
    """fsspec options for the settings' ``io_storage`` (keys read from the variables it names now);
    ``{}`` without one (pyarrow's default credential chain: AWS_* variables, ~/.aws)."""
    storage = cfg.get("io_storage") or {}
    opts: dict[str, Any] = {k: storage[k] for k in ("endpoint_url", "region") if storage.get(k)}
    for field, var_key in (("key", "access_key_env"), ("secret", "secret_key_env")):
        name = storage.get(var_key)
        if name:
            value = os.environ.get(name)
            if not value:
                raise RuntimeError(f"datatrove_executor.io_storage.{var_key}: ${name} is not set (the key of "
                                   f"io_root {cfg.get('io_root')})")
            opts[field] = value
    return opts


@contextmanager
def io_filesystems(cfg: dict[str, Any]) -> Iterator[None]:
    """While open, ``s3://`` paths resolve to :class:`ArrowS3FileSystem` with the settings'
    storage options (fsspec's config for the protocol, restored afterwards). Folders made inside
    keep those options, so forked ranks and Ray workers reach the same endpoint with the same
    keys. A settings without an ``s3://`` io_root changes nothing."""
    if not str(cfg.get("io_root") or "").startswith("s3://"):
        yield
        return
    import fsspec
    from fsspec.config import conf

    fsspec.register_implementation("s3", ArrowS3FileSystem, clobber=True)
    fsspec.register_implementation("s3a", ArrowS3FileSystem, clobber=True)
    saved = conf.get("s3")
    conf["s3"] = io_storage_options(cfg)
    try:
        yield
    finally:
        if saved is None:
            conf.pop("s3", None)
        else:
            conf["s3"] = saved


def make_executor(pipeline: list, cfg: dict[str, Any], logging_dir: str) -> PipelineExecutor:
    """The executor the settings name, over `pipeline`, logging (and recording completions) in `logging_dir`."""
    validate_settings(cfg)
    kw = {k: v for k, v in cfg.items() if k not in NOT_EXECUTOR_ARGS}
    kind = cfg["kind"]
    if kind not in DATATROVE_KINDS:
        raise ValueError(f"datatrove_executor.kind {kind!r} runs without datatrove; expected one of {DATATROVE_KINDS}")
    if kind == "local":
        from datatrove.executor import LocalPipelineExecutor

        # fork, not datatrove's forkserver default: under Dagster's run worker a forkserver
        # re-imports the code location and re-spawns it.
        kw.setdefault("start_method", "fork")
        return LocalPipelineExecutor(pipeline, logging_dir=logging_dir, **kw)
    if kind == "slurm":
        from datatrove.executor import SlurmPipelineExecutor

        return SlurmPipelineExecutor(pipeline, logging_dir=logging_dir, **kw)
    from datatrove.executor.ray import RayPipelineExecutor

    import ray  # noqa: F401  (fail here, clearly, when ray is not installed)

    if not ray.is_initialized():
        # address None starts (or joins, via RAY_ADDRESS) a cluster; "ray://..." joins a remote one.
        ray.init(address=cfg.get("address"), ignore_reinit_error=True, log_to_driver=False)
    return RayPipelineExecutor(pipeline, logging_dir=logging_dir, **kw)


class BlockFilter(BaseFilter):
    """A curation block (row -> None or drop reason) as a datatrove filter over JSON-row documents."""

    name = "curation block"

    def __init__(self, block: Block, label: str | None = None, exclusion_writer=None) -> None:
        super().__init__(exclusion_writer=exclusion_writer)
        self.block = block
        self.name = label or getattr(block, "__name__", type(block).__name__)

    def filter(self, doc: Document) -> bool | tuple[bool, str]:
        reason = self.block(json.loads(doc.text))
        return True if reason is None else (False, reason)


def _row_in(self, data: dict, path: str, id_in_file: int | str) -> dict:
    return {"text": json.dumps(data, ensure_ascii=False), "id": str(data.get("id", f"{path}/{id_in_file}")),
            "metadata": {}}


def _row_out(self, doc: Document) -> dict:
    row = json.loads(doc.text)
    if "filter_reason" in doc.metadata:
        row["_drop_reason"] = doc.metadata["filter_reason"]
    return row


def curation_pipeline(input_folder: str, output_folder: str, blocks: list[Block],
                      excluded_folder: str | None = None) -> list:
    """Read JSONL rows, apply blocks in order, write kept rows (and dropped ones, with reasons)."""
    steps: list = [JsonlReader(input_folder, adapter=_row_in, glob_pattern="*.jsonl")]
    for i, block in enumerate(blocks):
        excl = JsonlWriter(f"{excluded_folder}/{i:02d}", adapter=_row_out, compression=None) if excluded_folder else None
        steps.append(BlockFilter(block, exclusion_writer=excl))
    steps.append(JsonlWriter(output_folder, adapter=_row_out, compression=None))
    return steps
