"""Training phase: the five axolotl stages as checkpoint assets, run out of process via Dagster Pipes.

    from surrogate_dagster.training import TRAINING_ASSETS, training_resources

`TRAINING_ASSETS` is built for the active profile (SURROGATE_PROFILE): the local profile builds a
tiny base model and trains on CPU; production observes the pinned Hub model and trains on GPUs.
"""

from __future__ import annotations


def training_assets(profile):
    from .assets import training_assets as _build

    return _build(profile)


def training_resources(profile) -> dict:
    from .assets import training_resources as _build

    return _build(profile)


def __getattr__(name: str):
    if name == "TRAINING_ASSETS":
        from ..catalog import load_profile

        return training_assets(load_profile())
    raise AttributeError(name)


__all__ = ["TRAINING_ASSETS", "training_assets", "training_resources"]
