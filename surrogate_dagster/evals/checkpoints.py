"""A checkpoint asset's latest artifact as something inference can load (Dagster-free).

The training phase leaves each stage's checkpoint pointer in the object store, resolved by
storage/checkpoints.py: its run's ``output_prefix`` holds ``adapter/`` and, when stored,
``merged/``. What is loaded is what production serves (training/serving.py): the merged policy when
the run stored one (the trainer merges every adapter vLLM cannot load as a LoRA module, DoRA among
them); otherwise the adapter on top of its base, the stage file's ``base_model`` (the pinned Hub
model in production, the tiny base locally). ``revision`` is the run fingerprint: every report
records it.
"""

from __future__ import annotations

from pathlib import Path

from ..storage import ObjectStore
from ..storage.checkpoints import download_tree, read_checkpoint
from ..storage.layout import stage_pointer
from ..training.serving import ServingLimits, decide, read_adapter_config
from ..inference import ModelRef


def checkpoint_revision(store: ObjectStore, asset: str) -> str | None:
    """The run fingerprint of the checkpoint's latest materialization (None if never trained)."""
    from ..training.config import load_training_catalog

    ckpt = read_checkpoint(store, load_training_catalog().stage(asset).name)
    return ckpt.data_version if ckpt else None


def resolve_checkpoint(store: ObjectStore, asset: str, dest_root: Path, base_source: str = "tiny",
                       limits: ServingLimits = ServingLimits()) -> ModelRef:
    """Download (or reuse) the checkpoint's served form; FileNotFoundError if it was never trained,
    RuntimeError if only an adapter was stored and the server cannot load it (``limits``)."""
    from ..training.config import load_training_catalog
    from ..training.refs import base_model_resolution, stage_resolution
    from ..training.render import stage_refs

    catalog = load_training_catalog()
    stage = catalog.stage(asset)
    ckpt = read_checkpoint(store, stage.name)
    if ckpt is None:
        raise FileNotFoundError(f"{asset} has not been trained yet (no {stage_pointer(stage.name)} in the object store)")
    rev = ckpt.data_version
    if ckpt.merged:
        download_tree(store, ckpt.part_prefix("merged"), dest_root / asset / rev / "merged")
        return ModelRef(name=asset, model_dir=str(dest_root / asset / rev / "merged"), revision=rev)
    adapter = dest_root / asset / rev / "adapter"
    download_tree(store, ckpt.part_prefix("adapter"), adapter)
    serving = decide(read_adapter_config(adapter), limits)
    if serving.form == "merged":
        raise RuntimeError(f"{asset}@{rev}: the adapter must be served merged ({serving.reason}) but the run "
                           "stored no merged policy; re-materialize the stage")
    base_ref = stage_refs(stage.load_config())[0]  # the stage file's base_model
    if base_ref == "base_model":
        base = base_model_resolution(store, catalog, base_source)
        if base.kind == "hub":
            return ModelRef(name=asset, model_dir=base.value, adapter_dir=str(adapter), revision=rev,
                            model_revision=base.revision)
        base_dir = dest_root / "base_model" / base.data_version
        download_tree(store, base.value, base_dir)
    else:
        parent, _, part = base_ref.partition("/")
        base = stage_resolution(store, catalog, parent, part)
        base_dir = dest_root / parent / base.data_version / part
        download_tree(store, base.value, base_dir)
    return ModelRef(name=asset, model_dir=str(base_dir), adapter_dir=str(adapter), revision=rev)
