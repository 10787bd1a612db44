"""Adapter registry: catalog `adapter:` names -> functions ``adapt(row, ctx) -> normalized row``."""

from __future__ import annotations

from typing import Callable

from .base import AdapterContext, Quarantine

Adapter = Callable[[dict, AdapterContext], dict]


def registry() -> dict[str, Adapter]:
    """All adapters by name (imported lazily so a broken family module names itself)."""
    from . import agent, code_sft, dpo, tools

    merged: dict[str, Adapter] = {}
    for module in (code_sft, tools, agent, dpo):
        for name, fn in module.ADAPTERS.items():
            if name in merged:
                raise RuntimeError(f"adapter {name!r} defined twice ({module.__name__})")
            merged[name] = fn
    return merged


__all__ = ["Adapter", "AdapterContext", "Quarantine", "registry"]
