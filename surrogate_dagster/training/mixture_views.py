"""`mixture_views`: each training mixture as the model sees it, through the base model's tokenizer.

For every mixture a stage file trains on (assets/stages/*.yaml ``datasets``), the asset renders the
rows with the base model's chat template as the stage's axolotl strategy does (mixture_view.py),
counts tokens per source and compares them with the stage's ``sequence_len`` on the profile's
executor (rows longer than it are dropped by axolotl). It stores, per mixture, under
``views/mixtures/<mixture>/<version>/``: ``view.md`` (table + first rendered row per source),
``lengths.png`` (box plot per source) and ``view.json`` (the numbers); the version hashes the
mixture's and the tokenizer's data versions, so an unchanged pair is read back, not re-tokenized.

Its blocking check ``rows_within_sequence_len`` fails when, in some mixture, the share of rows
longer than the sequence_len exceeds that mixture's ``max_over_sequence_len`` (assets/curation.yaml).
The check lives here because only this asset has the tokenizer. Each mixture's verdict is also
stored as its ``token_lengths`` gate (curation/mixtures.py), which the mixture's Hub push asset
requires, whether or not it runs in the same run as this asset.
"""

import base64
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

# No `from __future__ import annotations` here: Dagster checks the `context` annotation as a type.
from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetKey,
    DataVersion,
    MaterializeResult,
    MetadataValue,
    asset,
)

from ..catalog.keys import MIXTURE_VIEWS
from ..catalog.models import Profile
from ..resources import HubResource, ObjectStoreResource
from ..storage import ObjectStore
from ..storage.layout import mixture_view_folder
from .assets import BASE_MODEL
from .config import TrainingCatalog, load_training_catalog, training_profile
from .render import Resolution, apply_overrides, ref_name, stable_hash

VIEW_BUILDER_VERSION = "mixture-view-v1"  # bump when mixture_view.py changes what it renders or counts
# Weights are not needed to tokenize; every other file of the model dir is (config.json tells
# AutoTokenizer the model type, which decides the pre-tokenizer it rebuilds).
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf", ".h5", ".msgpack")
LENGTH_CHECK = "rows_within_sequence_len"


@dataclass(frozen=True)
class TrainedMixture:
    """A mixture asset a stage trains on, and the longest row that stage keeps."""

    asset: str
    stages: tuple[str, ...]
    sequence_len: int | None


def trained_mixtures(catalog: TrainingCatalog, executor: str) -> list[TrainedMixture]:
    """Every mixture referenced by a stage file's datasets, with the executor's sequence_len (the smallest)."""
    found: dict[str, tuple[list[str], list[int]]] = {}
    for stage in catalog.stages:
        cfg = apply_overrides(stage.load_config(), catalog.executor_overrides.get(executor, {}))
        for ds in cfg.get("datasets") or []:
            ref = ref_name(ds.get("path"))
            if ref:
                stages, lens = found.setdefault(ref.split("/", 1)[0], ([], []))
                stages.append(stage.name)
                if cfg.get("sequence_len"):
                    lens.append(int(cfg["sequence_len"]))
    return [TrainedMixture(a, tuple(s), min(lens) if lens else None) for a, (s, lens) in found.items()]


def load_base_tokenizer(store: ObjectStore, base: Resolution, token_env: str = "HF_TOKEN"):
    """The tokenizer the stages train with: the pinned Hub model's, or the local base model's files.

    ``base`` is refs.base_model_resolution's answer, which the stage rendering also uses.
    """
    from transformers import AutoTokenizer

    if base.kind == "hub":
        return AutoTokenizer.from_pretrained(base.value, revision=base.revision,
                                             token=os.environ.get(token_env) or None)
    prefix = base.value.rstrip("/") + "/"
    keys = [k for k in store.list(prefix) if not k.endswith(WEIGHT_SUFFIXES)]
    if not keys:
        raise FileNotFoundError(f"no tokenizer files under {prefix!r} in the object store")
    with tempfile.TemporaryDirectory(prefix="base-tokenizer-") as tmp:
        for key in keys:
            store.get_file(key, Path(tmp) / key[len(prefix):])
        return AutoTokenizer.from_pretrained(tmp)


def mixture_rows(store: ObjectStore, key: str):
    """The rows of a mixture's train.jsonl, read line by line from a local copy (production files are large)."""
    with tempfile.TemporaryDirectory(prefix="mixture-") as tmp:
        path = Path(tmp) / "train.jsonl"
        store.get_file(key, path)
        with path.open(encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    yield json.loads(line)


def png_markdown(png: bytes, alt: str) -> str:
    """The stored PNG as a Markdown image, after a bold caption that names it (metadata.png_markdown)."""
    return f"**{alt}**\n\n![{alt}](data:image/png;base64,{base64.b64encode(png).decode()})"


def build_mixture_views_asset(executor: str, base_source: str, catalog: TrainingCatalog | None = None):
    """The `mixture_views` asset for one executor (its sequence_len) and base model source (tiny or hub)."""
    catalog = catalog or load_training_catalog()
    mixtures = trained_mixtures(catalog, executor)

    @asset(name=MIXTURE_VIEWS, group_name="training", kinds={"huggingface"},
           deps=[BASE_MODEL, *(AssetKey(m.asset) for m in mixtures)],
           check_specs=[AssetCheckSpec(LENGTH_CHECK, asset=MIXTURE_VIEWS, blocking=True,
                                       description="In every mixture, at most its max_over_sequence_len "
                                                   "share of rows is longer than the stage's sequence_len.")],
           code_version=stable_hash({"builder": VIEW_BUILDER_VERSION, "executor": executor,
                                     "sequence_len": {m.asset: m.sequence_len for m in mixtures}}))
    def mixture_views(context: AssetExecutionContext, object_store: ObjectStoreResource,
                      hub: HubResource) -> MaterializeResult:
        """Each training mixture rendered with the base model's chat template: first row per source, token lengths."""
        from ..curation.checks import check_over_sequence_len
        from ..curation.config import MixtureChecksCfg, load_curation
        from ..curation.mixtures import record_gate
        from .mixture_view import (MixtureView, build_view, first_rows_markdown, lengths_plot_png,
                                   lengths_table, view_markdown)
        from .refs import base_model_resolution, mixture_resolution

        curation_cfg = load_curation()

        store = object_store.get_store()
        base = base_model_resolution(store, catalog, base_source)
        tokenizer = None
        summary = ["| mixture | stage | kind | rows | tokens | p50 | p95 | max | sequence_len | over |",
                   "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
        metadata: dict = {"tokenizer": f"base_model@{base.revision or base.data_version}"}
        versions: dict[str, str] = {}
        totals: dict[str, int] = {}
        lengths_gate: dict[str, dict] = {}
        for m in mixtures:
            res = mixture_resolution(store, m.asset)
            version = stable_hash({"builder": VIEW_BUILDER_VERSION, "mixture": res.data_version,
                                   "tokenizer": base.data_version, "sequence_len": m.sequence_len})
            versions[m.asset] = version
            prefix = mixture_view_folder(m.asset, version)
            if store.exists(f"{prefix}/view.json"):
                view = MixtureView.from_json(json.loads(store.get_bytes(f"{prefix}/view.json")))
                png = store.get_bytes(f"{prefix}/lengths.png")
                context.log.info(f"{m.asset}: view {version} already built; reusing {prefix}/")
            else:
                if tokenizer is None:
                    tokenizer = load_base_tokenizer(store, base, hub.token_env)
                view = build_view(m.asset, mixture_rows(store, res.value), tokenizer, m.sequence_len)
                png = lengths_plot_png(view)
                # view.json last: its presence marks a complete view.
                store.put_bytes(f"{prefix}/view.md", view_markdown(view).encode())
                store.put_bytes(f"{prefix}/lengths.png", png)
                store.put_bytes(f"{prefix}/view.json", json.dumps(view.to_json()).encode())
            a = view.overall()
            summary.append(f"| {m.asset} | {', '.join(m.stages)} | {view.kind} | {view.rows} | {view.total_tokens} | "
                           + (f"{a.p50} | {a.p95} | {a.max} | " if a else "- | - | - | ")
                           + f"{m.sequence_len or '-'} | {a.over_sequence_len if a else 0} |")
            totals[m.asset] = view.total_tokens
            name = m.asset.removesuffix("_mixture")
            bound = (curation_cfg.checks_for(name, executor) if name in curation_cfg.mixtures
                     else MixtureChecksCfg()).max_over_sequence_len
            outcome = check_over_sequence_len(a.over_sequence_len if a else 0, view.rows, m.sequence_len, bound)
            record_gate(store, name, res.data_version, "token_lengths",
                        {LENGTH_CHECK: {"passed": outcome.passed, "description": outcome.description}})
            lengths_gate[m.asset] = {"passed": outcome.passed, "description": outcome.description,
                                     "data_version": res.data_version, **outcome.metadata}
            metadata[f"{m.asset}/token_lengths"] = MetadataValue.md(lengths_table(view))
            metadata[f"{m.asset}/first_rows"] = MetadataValue.md(first_rows_markdown(view))
            metadata[f"{m.asset}/total_tokens"] = view.total_tokens
            if a:  # numbers, so the Plots tab trends each mixture's lengths across versions
                for stat in ("rows", "p50", "p95", "max", "over_sequence_len"):
                    metadata[f"{m.asset}/{'tokens_' + stat if stat in ('p50', 'p95', 'max') else stat}"] = \
                        MetadataValue.int(int(getattr(a, stat)))
            metadata[f"{m.asset}/lengths_plot"] = MetadataValue.md(
                png_markdown(png, f"{m.asset}: token lengths per source (whiskers p5-p95, sequence_len marked)"))
            metadata[f"{m.asset}/view_uri"] = store.uri(f"{prefix}/view.md")
        metadata["summary"] = MetadataValue.md("\n".join(summary))
        metadata["total_tokens"] = MetadataValue.json(totals)
        failed = [f"{k}: {v['description']}" for k, v in lengths_gate.items() if not v["passed"]]
        for line in failed:
            context.log.error(f"{LENGTH_CHECK} failed for {line}")
        check = AssetCheckResult(check_name=LENGTH_CHECK, passed=not failed, severity=AssetCheckSeverity.ERROR,
                                 description="; ".join(failed) or "every mixture within its bound",
                                 metadata={"mixtures": MetadataValue.json(lengths_gate)})
        return MaterializeResult(data_version=DataVersion(stable_hash(versions)), metadata=metadata,
                                 check_results=[check])

    return mixture_views


def mixture_views_asset(profile: Profile):
    """`mixture_views` for the profile's training executor and base model."""
    section = training_profile(profile)
    return build_mixture_views_asset(section.executor, section.base_model)
